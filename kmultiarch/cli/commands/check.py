"""``kmultiarch check [PATH...]``: the CI gate. Exit 1 when ``mutate`` would change something,
when a pod has no platform where all its images run, or (``failurePolicy: Fail``) when an image
cannot be resolved; 0 otherwise.

With ``--component DIR`` (Flux, docs/flux.md) what ``mutate`` would change is the committed
Component's to change: no ``needs-scheduling`` failure, and exit 1 when ``DIR`` differs from
what ``mutate --output kustomize`` would write now."""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from kmultiarch.assess.assessment import check
from kmultiarch.cli.commands.mutate import read_component
from kmultiarch.cli.hints import command_line
from kmultiarch.cli.pipeline import resolve_and_run, say_findings
from kmultiarch.core.findings import NEEDS_SCHEDULING
from kmultiarch.io.manifestfiles import read_inputs
from kmultiarch.output import default_format
from kmultiarch.output.check import FORMATTERS
from kmultiarch.output.gitlab import format_gitlab
from kmultiarch.output.markdown import format_markdown

if TYPE_CHECKING:
    from kmultiarch.assess.assessment import CheckResult
    from kmultiarch.cli.session import RunOptions
    from kmultiarch.core.findings import Finding
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
    checked = with_fix_commands(check(result, policy, with_diff=diff), options)
    stale = False
    if component is not None:
        # Computed (and a Component that cannot be written refused) before anything is said.
        from kmultiarch.output.flux import component_files, targeted_patches

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


#: What the engine's needs-scheduling message ends with; check names the command for the file.
GENERIC_FIX_HINT = "run `kmultiarch fix` to apply"


def with_fix_commands(checked: CheckResult, options: RunOptions) -> CheckResult:
    """Each needs-scheduling problem ends with the command that applies it: ``fix FILE`` for a
    file, ``mutate ... < MANIFESTS`` for manifests read from stdin (no file to fix); the result
    carries the ``fix`` command for all the files. With this check's options, so that pasted as
    printed it takes the same decisions."""
    files: list[str] = []
    problems: list[Finding] = []
    for found in checked.problems:
        if found.rule == NEEDS_SCHEDULING and GENERIC_FIX_HINT in found.message:
            from_stdin = found.source.startswith("<")
            if not from_stdin:
                files.append(found.source)
            command = (
                command_line(options, ["mutate"])
                if from_stdin
                else command_line(options, ["fix"], [found.source])
            )
            message = found.message.replace(GENERIC_FIX_HINT, f"run `{command}` to apply")
            found = replace(found, message=message, command=command)  # noqa: PLW2901
        problems.append(found)
    fix_command = command_line(options, ["fix"], list(dict.fromkeys(files))) if files else ""
    return replace(checked, problems=problems, fix_command=fix_command)


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
    from kmultiarch.output.flux import staleness

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
    return command_line(
        options,
        ["mutate"],
        paths,
        before_files=["--output", "kustomize", "--output-dir", directory],
    )
