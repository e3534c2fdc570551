"""What the resolving commands do alike: run the manifests through the composition root
(:mod:`kmultiarch.run`) with the options the command line gave, and say the run's findings."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kmultiarch.core.findings import Finding
from kmultiarch.engine import EngineResult
from kmultiarch.output.locations import finding_location
from kmultiarch.run.runs import run_manifests

if TYPE_CHECKING:
    from collections.abc import Iterable

    from kmultiarch.cli.session import RunOptions
    from kmultiarch.core.policy.model import Policy
    from kmultiarch.io.manifestfiles import Skipped
    from kmultiarch.yaml.stream import InputSource


def resolve_and_run(
    options: RunOptions,
    sources: list[InputSource],
    policy: Policy,
    *,
    edit: bool = True,
    checking: bool = False,
    fresh: bool = False,
) -> EngineResult:
    """The engine over ``sources``, assembled from the options and ``policy``. With
    ``edit=False`` the changes are decided but no document is edited (check, report);
    ``fresh``: every tag asked of its registry again (lock)."""
    return run_manifests(
        options.configure(policy, fresh=fresh),
        sources,
        edit=edit,
        checking=checking,
        progress=options.progress,
    )


def report_findings(
    result: EngineResult, options: RunOptions, findings: Iterable[Finding] | None = None
) -> None:
    """Each finding (of the run, by default) on stderr: errors always, warnings unless
    ``--quiet``."""
    from kmultiarch.cli.session import fail, warn

    for finding in result.findings if findings is None else findings:
        where = finding_location(result, finding)
        line = f"{where}: {finding.message}" if where else finding.message
        if finding.severity == "error":
            fail(line)
        elif finding.severity == "warning" and not options.quiet:
            warn(line)


def say_findings(findings: Iterable[Finding], options: RunOptions) -> None:
    """Findings about no manifest (a cache that could not be used) on stderr."""
    from kmultiarch.cli.session import fail, warn

    for finding in findings:
        if finding.severity == "error":
            fail(finding.message)
        elif finding.severity == "warning" and not options.quiet:
            warn(finding.message)


def note_skipped(skipped: list[Skipped], options: RunOptions) -> None:
    """Skipped files are named only with ``-v``: in a hook they are the normal case."""
    from kmultiarch.cli.session import note

    if options.verbose and not options.quiet:
        for item in skipped:
            note(f"{item.name}: skipped: {item.reason}")
