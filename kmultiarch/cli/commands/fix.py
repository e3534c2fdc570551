"""``kmultiarch fix FILE...``: rewrite manifests in place (atomically) and exit 1 when any file
changed, listing them: the contract of a pre-commit fixer."""

from __future__ import annotations

import sys
from collections import Counter
from typing import TYPE_CHECKING

from kmultiarch.cli.pipeline import note_skipped, report_findings, resolve_and_run
from kmultiarch.core.findings import PLATFORM_PINNED_DIGEST, count_of
from kmultiarch.core.resolution import repin_text
from kmultiarch.io.inputs import write_all_atomically
from kmultiarch.io.manifestfiles import read_inputs
from kmultiarch.output.safe import printable
from kmultiarch.yaml.stream import InputSource

if TYPE_CHECKING:
    from kmultiarch.cli.session import RunOptions


def fix_files(
    options: RunOptions, paths: list[str], skip_non_manifests: bool, *, repin: bool = False
) -> int:
    from kmultiarch.cli.session import fail

    policy = options.load_policy()
    sources, skipped = read_inputs(paths, skip_non_manifests=skip_non_manifests)
    note_skipped(skipped, options)
    result = resolve_and_run(options, sources, policy)
    repinned: Counter[str] = Counter()
    if repin:
        # The index digest first, then the decision on what the file will say: a pod pinned to
        # the amd64 manifest of a multi-arch index is decided as the multi-arch pod it becomes.
        texts = {source.name: source.text for source in sources}
        for finding in result.findings:
            if finding.rule != PLATFORM_PINNED_DIGEST or not finding.suggestion:
                continue
            if not finding.image or finding.source not in texts:
                continue
            texts[finding.source], count = repin_text(
                texts[finding.source], finding.image, finding.suggestion
            )
            repinned[finding.source] += count
        if repinned:
            sources = [InputSource(source.name, texts[source.name]) for source in sources]
            result = resolve_and_run(options, sources, policy)
    report_findings(result, options)
    if result.failed:
        fail("no file was rewritten: fix the errors above or set failurePolicy: Ignore")
        return 1
    changed = result.changed_sources()
    pods = Counter(pod.source for pod in result.pods if pod.writes)
    written = [*changed, *(name for name in repinned if name not in changed)]
    write_all_atomically({name: result.output_of(name) for name in written})
    for name in written:
        done = []
        if name in changed:
            done.append(f"added tolerations/affinity to {count_of(pods[name], 'pod spec')}")
        if repinned[name]:
            done.append(f"repinned {count_of(repinned[name], 'image')} to its index")
        sys.stdout.write(f"fixed {printable(name)}: {'; '.join(done)}\n")
    sys.stdout.flush()
    return 1 if written else 0
