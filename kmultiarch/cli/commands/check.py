"""``kmultiarch check [PATH...]``: the CI gate. Exit 1 when ``mutate`` would change something,
when a pod has no platform where all its images run, or (``failurePolicy: Fail``) when an image
cannot be resolved; 0 otherwise."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from kmultiarch.assess.assessment import check
from kmultiarch.cli.pipeline import resolve_and_run, say_findings
from kmultiarch.io.manifestfiles import read_inputs
from kmultiarch.output import default_format
from kmultiarch.output.check import FORMATTERS
from kmultiarch.output.gitlab import format_gitlab
from kmultiarch.output.markdown import format_markdown

if TYPE_CHECKING:
    from kmultiarch.cli.session import RunOptions

#: The formats of output.check, and GitLab's code quality report and a Markdown job summary.
CHECK_FORMATTERS = {**FORMATTERS, "gitlab": format_gitlab, "markdown": format_markdown}


def check_manifests(
    options: RunOptions,
    paths: list[str],
    output: str | None,
    diff: bool,
    skip_non_manifests: bool,
) -> int:
    from kmultiarch.cli.pipeline import note_skipped

    policy = options.load_policy()
    sources, skipped = read_inputs(paths, skip_non_manifests=skip_non_manifests)
    note_skipped(skipped, options)
    result = resolve_and_run(options, sources, policy, edit=diff, checking=True)
    say_findings((f for f in result.findings if not f.source), options)
    checked = check(result, policy, with_diff=diff)
    sys.stdout.write(CHECK_FORMATTERS[output or default_format()](checked))
    sys.stdout.flush()
    return 1 if checked.failed else 0
