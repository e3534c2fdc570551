"""``kmultiarch lock [PATH...] -o FILE``: resolve every image of the manifests and write the lock
file; ``--check``: report entries whose tag now points to another digest (and, given PATHs,
images missing from the lock), exit 1 when there is any."""

from __future__ import annotations

import dataclasses
import sys
from collections import Counter
from collections.abc import Mapping
from typing import TYPE_CHECKING

from kmultiarch.cli.hints import command_line
from kmultiarch.cli.pipeline import resolve_and_run, say_findings
from kmultiarch.core.findings import count_of
from kmultiarch.core.images.reference import ImageRef
from kmultiarch.core.lock import ImageLock, LockEntry
from kmultiarch.engine import EngineResult, read_sources, run
from kmultiarch.io.config import load_lock, write_lock
from kmultiarch.io.inputs import collect_inputs
from kmultiarch.output.safe import printable
from kmultiarch.run.clock import generated_at
from kmultiarch.run.runs import pull_secrets_of
from kmultiarch.run.session import Session
from kmultiarch.version import __version__
from kmultiarch.yaml.stream import InputSource

#: Where the lock goes without -o and without a lock: key in the policy.
DEFAULT_LOCK_FILE = "kmultiarch.lock"

if TYPE_CHECKING:
    from collections.abc import Sequence

    from kmultiarch.cli.session import RunOptions
    from kmultiarch.core.operators.pullsecrets import DockerConfig
    from kmultiarch.core.policy.model import Policy
    from kmultiarch.core.resolution import Resolution
    from kmultiarch.core.verification.verdicts import PlatformVerification


def lock_images(
    options: RunOptions, paths: list[str], lock_file: str | None, check_only: bool
) -> int:
    policy = options.load_policy()
    if lock_file is None:
        locked = policy.resolution.lock
        lock_file = str(locked) if locked is not None else DEFAULT_LOCK_FILE
    if check_only:
        return check_lock(options, policy, paths, lock_file)
    command = lock_command(options, paths, lock_file)
    if (options.request.verify or policy.resolution.verify.mode) == "enforce":
        # The lock records what the registry claims and every verdict; dropping a platform
        # is the decision of each render that reads it (under its own mode).
        options = dataclasses.replace(
            options, request=dataclasses.replace(options.request, verify="warn")
        )
    result = resolve_and_run(options, collect_inputs(paths), policy, fresh=True)
    say_findings((f for f in result.findings if not f.source), options)
    failures = _failures(result)
    failed = bool(failures) and policy.failure_policy == "Fail"
    _report_failures(failures, options, failed)
    if failed:
        from kmultiarch.cli.session import fail

        fail(f"{lock_file} was not written: fix the errors above or set failurePolicy: Ignore")
        return 1
    entries = [
        LockEntry(
            reference,
            resolution.digest,
            resolution.platforms,
            resolution.media_type,
            _verdicts(resolution),
        )
        for reference, resolution in result.resolutions.items()
        if resolution.ok and resolution.digest and resolution.source != "override"
    ]
    check_command = command_line(
        options, ["lock", "--check"], paths, with_lock=False, after_files=["-o", lock_file]
    )
    write_lock(lock_file, ImageLock.of(entries), lock_header(command, check_command))
    if not options.quiet:
        from kmultiarch.cli.session import note

        overridden = sum(1 for r in result.resolutions.values() if r.source == "override")
        note(
            f"wrote {lock_file}: {count_of(len(entries), 'image')} locked"
            + (f"; {len(failures)} could not be resolved" if failures else "")
            + _verdict_counts(entries)
        )
        if overridden:
            note(
                f"{count_of(overridden, 'image')} not in the lock: the policy's spec.overrides "
                "declares their platforms, and overrides are policy, read from it by every run"
            )
    return 0


def lock_command(options: RunOptions, paths: Sequence[str], lock_file: str) -> str:
    """The command that makes this lock again: the options that decide what it holds (the
    policy, the verification, the namespace), the paths and the file. Never ``--lock`` or
    ``--offline``: a lock asks every registry afresh."""
    return command_line(options, ["lock"], paths, with_lock=False, after_files=["-o", lock_file])


def _verdicts(resolution: Resolution) -> tuple[PlatformVerification, ...] | None:
    """What ``--verify`` found, to record; None when nothing was verified (``off``, or the
    image could not be read: a render then verifies it itself)."""
    verification = resolution.verification
    if verification is None or verification.error is not None:
        return None
    return verification.platforms


def _verdict_counts(entries: Sequence[LockEntry]) -> str:
    verdicts = [v for entry in entries for v in entry.verified or ()]
    if not any(entry.verified is not None for entry in entries):
        return ""
    counts = Counter(verdict.status for verdict in verdicts)
    lying = [
        f"{entry.reference} {verdict.platform}"
        for entry in entries
        for verdict in entry.verified or ()
        if verdict.status == "mismatch"
    ]
    return (
        f"; platforms verified: {counts['verified']}, mismatch: {counts['mismatch']}"
        + (f" ({', '.join(lying)})" if lying else "")
        + f", unverified: {counts['unverified']}"
    )


def lock_header(command: str, check_command: str) -> list[str]:
    return [
        "kmultiarch lock file: the digest and platforms of every image the manifests reference.",
        # The command names the user's paths: one comment line whatever they hold.
        f"Made by `{printable(command)}` (kmultiarch {__version__}) at {generated_at()}.",
        "mutate, check, fn and report given --lock (or the policy's lock:) never look these up;",
        "with --offline they look up nothing at all. Refresh by running the same command again;",
        f"`{printable(check_command)}` lists entries whose tag now points to another digest.",
    ]


def check_lock(options: RunOptions, policy: Policy, paths: list[str], lock_file: str) -> int:
    from kmultiarch.cli.session import note

    lock = load_lock(lock_file)
    findings: list[str] = []
    pull_secrets: list[DockerConfig] = []
    if paths:
        sources = collect_inputs(paths)
        findings.extend(_missing_from_lock(lock, policy, sources))
        pull_secrets = pull_secrets_of(read_sources(sources, policy.scope), policy.scope)
    tagged = [entry.reference for entry in lock.entries.values() if entry.reference.digest is None]
    current = _resolve_fresh(options, policy, tagged, pull_secrets) if tagged else {}
    stale = 0
    for reference in tagged:
        entry = lock.entries[str(reference)]
        now = current[reference]
        if not now.ok:
            findings.append(f"unverified: {reference}: {_without_reference(now)}")
        elif now.digest != entry.digest:
            stale += 1
            findings.append(
                f"stale: {reference}: locked {entry.digest}, the registry now has {now.digest}"
                + _platform_change(entry, now)
            )
    for line in findings:
        sys.stdout.write(printable(line) + "\n")
    sys.stdout.flush()
    if not options.quiet:
        if findings:
            note(
                f"{lock_file}: {stale} stale of {len(tagged)} tags checked, "
                f"{len(findings) - stale} other problems; refresh it with "
                f"`{lock_command(options, paths, lock_file)}`"
            )
        else:
            note(f"{lock_file}: up to date ({len(tagged)} tags checked, {len(lock)} entries)")
    return 1 if findings else 0


def _missing_from_lock(lock: ImageLock, policy: Policy, sources: list[InputSource]) -> list[str]:
    seen: dict[ImageRef, Resolution] = {}

    def record(references: list[ImageRef]) -> Mapping[ImageRef, Resolution]:
        from kmultiarch.core.resolution import Resolution
        from kmultiarch.errors import ResolutionError

        for reference in references:
            seen[reference] = Resolution(
                reference, error=ResolutionError(str(reference), "not resolved by lock --check")
            )
        return seen

    result = run(sources, policy, record)
    missing = []
    for reference in dict.fromkeys(seen):
        if policy.resolution.override_of(reference) is not None:
            continue
        if lock.lookup(reference) is None:
            users = sorted(
                {
                    pod.workload.display_name
                    for pod in result.pods
                    if any(image.reference == reference for image in pod.images)
                }
            )
            missing.append(f"missing: {reference} (used by {', '.join(users)})")
    return missing


def _platform_change(entry: LockEntry, now: Resolution) -> str:
    if now.platforms == entry.platforms:
        return ""
    before = ", ".join(sorted(str(p) for p in entry.platforms))
    after = ", ".join(sorted(str(p) for p in now.platforms))
    return f"; platforms changed from [{before}] to [{after}]"


def _resolve_fresh(
    options: RunOptions,
    policy: Policy,
    references: list[ImageRef],
    pull_secrets: Sequence[DockerConfig],
) -> dict[ImageRef, Resolution]:
    """What the registries say of ``references`` now. Overrides do not apply: the question is
    what the registry says."""
    resolution = dataclasses.replace(policy.resolution, overrides=())
    config = options.configure(dataclasses.replace(policy, resolution=resolution), fresh=True)
    with Session(config, pull_secrets=pull_secrets) as session:
        resolved = session.resolver.resolve(references)
        say_findings(session.findings(), options)
    return dict(resolved)


def _failures(result: EngineResult) -> list[str]:
    failures = []
    for pod in result.pods:
        for image in pod.images:
            if image.problem:
                failures.append(f"{pod.source}: {pod.workload.display_name}: {image.problem}")
    for resolution in result.resolutions.values():
        if not resolution.ok:
            failures.append(str(resolution.error or f"{resolution.reference}: not resolved"))
    return list(dict.fromkeys(failures))


def _report_failures(failures: list[str], options: RunOptions, as_errors: bool) -> None:
    from kmultiarch.cli.session import fail, warn

    for message in failures:
        if as_errors:
            fail(message)
        elif not options.quiet:
            warn(f"{message}; not locked")


def _without_reference(resolution: Resolution) -> str:
    return resolution.error.reason if resolution.error else "not resolved"
