"""``kmultiarch fix FILE...``: rewrite manifests in place (atomically) and exit 1 when any file
changed, listing them: the contract of a pre-commit fixer."""

from __future__ import annotations

import sys
from collections import Counter
from typing import TYPE_CHECKING

from kmultiarch.cli.pipeline import note_skipped, report_findings, resolve_and_run
from kmultiarch.core.findings import count_of
from kmultiarch.io.inputs import write_all_atomically
from kmultiarch.io.manifestfiles import read_inputs
from kmultiarch.output.safe import printable

if TYPE_CHECKING:
    from kmultiarch.cli.session import RunOptions


def fix_files(options: RunOptions, paths: list[str], skip_non_manifests: bool) -> int:
    from kmultiarch.cli.session import fail

    policy = options.load_policy()
    sources, skipped = read_inputs(paths, skip_non_manifests=skip_non_manifests)
    note_skipped(skipped, options)
    result = resolve_and_run(options, sources, policy)
    report_findings(result, options)
    if result.failed:
        fail("no file was rewritten: fix the errors above or set failurePolicy: Ignore")
        return 1
    changed = result.changed_sources()
    pods = Counter(pod.source for pod in result.pods if pod.status == "needs-change")
    write_all_atomically({name: result.output_of(name) for name in changed})
    for name in changed:
        count = pods[name]
        sys.stdout.write(
            f"fixed {printable(name)}: added tolerations/affinity to "
            f"{count_of(count, 'pod spec')}\n"
        )
    sys.stdout.flush()
    return 1 if changed else 0
