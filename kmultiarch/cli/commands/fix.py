"""``kmultiarch fix FILE...``: rewrite manifests in place (atomically) and exit 1 when any file
changed, listing them: the contract of a pre-commit fixer."""

from __future__ import annotations

import sys
from collections import Counter
from dataclasses import replace as dataclass_replace
from typing import TYPE_CHECKING

from kmultiarch.cli.pipeline import note_skipped, report_findings, resolve_and_run
from kmultiarch.core.findings import PLATFORM_PINNED_DIGEST, count_of
from kmultiarch.engine import PinsLeft, pins_left
from kmultiarch.io.inputs import write_all_atomically
from kmultiarch.io.manifestfiles import read_inputs
from kmultiarch.output.safe import printable

if TYPE_CHECKING:
    from kmultiarch.cli.session import RunOptions


def fix_files(
    options: RunOptions, paths: list[str], skip_non_manifests: bool, *, repin: bool = False
) -> int:
    from kmultiarch.cli.session import fail

    policy = options.load_policy()
    if repin:
        # As spec.repinDigests: the image fields of the pods in scope written with the index
        # digest, and each pod decided on the index it then pulls (a pod pinned to the amd64
        # manifest of a multi-arch index gets the arm64 toleration, not an amd64 affinity).
        resolution = dataclass_replace(policy.resolution, repin_digests=True)
        policy = dataclass_replace(policy, resolution=resolution)
    sources, skipped = read_inputs(paths, skip_non_manifests=skip_non_manifests)
    note_skipped(skipped, options)
    result = resolve_and_run(options, sources, policy)
    repinned: Counter[str] = Counter()
    left: dict[str, list[PinsLeft]] = {}
    if repin:
        rewritten: set[tuple[str, int | None, tuple[str | int, ...]]] = set()
        for name, outcomes in result.documents.items():
            for index, outcome in enumerate(outcomes):
                repinned[name] += len(outcome.repins)
                rewritten.update((name, index, tuple(path)) for path, _, _ in outcome.repins)
        # A pin rewritten is fixed: said in the summary line, not as a problem of the file.
        result.findings[:] = [
            finding
            for finding in result.findings
            if finding.rule != PLATFORM_PINNED_DIGEST
            or (finding.source, finding.document_index, finding.path) not in rewritten
        ]
        for pins in pins_left(result.sources, result.documents):
            left.setdefault(pins.source, []).append(pins)
    report_findings(result, options)
    if result.failed:
        fail("no file was rewritten: fix the errors above or set failurePolicy: Ignore")
        return 1
    changed = result.changed_sources()
    pods = Counter(pod.source for pod in result.pods if pod.writes)
    write_all_atomically({name: result.output_of(name) for name in changed})
    for name in changed:
        done = []
        if pods[name] or not repinned[name]:
            done.append(f"added tolerations/affinity to {count_of(pods[name], 'pod spec')}")
        if repinned[name]:
            done.append(f"repinned {count_of(repinned[name], 'image')} to its index")
        done.extend(pins.message for pins in left.get(name, ()))
        sys.stdout.write(printable(f"fixed {name}: {'; '.join(done)}") + "\n")
    sys.stdout.flush()
    return 1 if changed else 0
