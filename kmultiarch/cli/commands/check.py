"""``kmultiarch check [PATH...]``: the CI gate. Exit 1 when ``mutate`` would change something,
when a pod has no platform where all its images run, or (``failurePolicy: Fail``) when an image
cannot be resolved; 0 otherwise.

With ``--component DIR`` (Flux, docs/flux.md) what ``mutate`` would change is the committed
Component's to change: no ``needs-scheduling`` failure, and exit 1 when ``DIR`` differs from
what ``mutate --output kustomize`` would write now."""

from __future__ import annotations

import shlex
import sys
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from kmultiarch.assess.assessment import check
from kmultiarch.cli.commands.mutate import read_component
from kmultiarch.cli.pipeline import resolve_and_run, say_findings
from kmultiarch.core.findings import NEEDS_SCHEDULING
from kmultiarch.io.manifestfiles import read_inputs
from kmultiarch.output import default_format
from kmultiarch.output.check import FORMATTERS
from kmultiarch.output.flux import component_files, staleness, targeted_patches
from kmultiarch.output.gitlab import format_gitlab
from kmultiarch.output.markdown import format_markdown

if TYPE_CHECKING:
    from kmultiarch.cli.session import RunOptions
    from kmultiarch.io.manifestfiles import Skipped
    from kmultiarch.yaml.stream import InputSource

#: The formats of output.check, and GitLab's code quality report and a Markdown job summary.
CHECK_FORMATTERS = {**FORMATTERS, "gitlab": format_gitlab, "markdown": format_markdown}


def check_manifests(
    options: RunOptions,
    paths: list[str],
    output: str | None,
    diff: bool,
    skip_non_manifests: bool,
    *,
    component: str | None = None,
) -> int:
    from kmultiarch.cli.pipeline import note_skipped

    policy = options.load_policy()
    sources, skipped = read_inputs(paths, skip_non_manifests=skip_non_manifests)
    note_skipped(skipped, options)
    result = resolve_and_run(options, sources, policy, edit=diff, checking=True)
    say_findings((f for f in result.findings if not f.source), options)
    checked = check(result, policy, with_diff=diff)
    stale = False
    if component is not None:
        # Computed (and a Component that cannot be written refused) before anything is said.
        wanted = component_files(targeted_patches(result))
        stale = _component_is_stale(Path(component), wanted, options, paths, sources, skipped)
        # What mutate would change is the Component's to change, not a failure of the
        # manifests: it is stale or not, and that is said on its own.
        checked = replace(
            checked, problems=[p for p in checked.problems if p.rule != NEEDS_SCHEDULING]
        )
    sys.stdout.write(CHECK_FORMATTERS[output or default_format()](checked))
    sys.stdout.flush()
    return 1 if checked.failed or stale else 0


def _component_is_stale(
    directory: Path,
    wanted: dict[str, str],
    options: RunOptions,
    paths: list[str],
    sources: list[InputSource],
    skipped: list[Skipped],
) -> bool:
    """Whether the Component in ``directory`` differs from what ``mutate --output kustomize``
    would write; when it does, say which files and the command that rewrites them."""
    from kmultiarch.cli.session import fail, note

    differences = staleness(wanted, read_component(directory, list(wanted)))
    if not differences:
        if not options.quiet:
            patches = len(wanted) - 1
            note(
                f"{directory}: the Component is up to date "
                f"({patches} patch{'' if patches == 1 else 'es'})"
            )
        return False
    # With skipped files, mutate must be given the files check read: it has no option to skip.
    inputs = [source.name for source in sources] if skipped else paths
    fail(
        f"{directory}: the Component is stale: {differences.describe()}; refresh it with: "
        f"{refresh_command(options, str(directory), inputs)}"
    )
    return True


def refresh_command(options: RunOptions, directory: str, paths: list[str]) -> str:
    """The ``mutate`` command line that writes the Component from the same inputs and
    options (manifests on stdin: ``... < MANIFESTS``)."""
    request = options.request
    words = ["kmultiarch", "mutate"]
    if options.config:
        words += ["--config", options.config]
    if request.lock:
        words += ["--lock", str(request.lock)]
    if request.offline:
        words.append("--offline")
    if request.namespace and request.namespace != "default":
        words += ["--namespace", request.namespace]
    if request.verify:
        words += ["--verify", request.verify]
    words += ["--output", "kustomize", "--output-dir", directory]
    stdin = not paths or all(path == "-" for path in paths)
    words += [path for path in paths if path != "-"]
    command = shlex.join(words)
    return f"{command} < MANIFESTS" if stdin else command
