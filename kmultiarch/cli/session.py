"""What every command shares: how it speaks (warnings, errors, notes on stderr and in
``$KMULTIARCH_WARNINGS_FILE``) and the options of a run as the command line gave them."""

from __future__ import annotations

import errno
import os
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

import click

from kmultiarch.output.safe import printable
from kmultiarch.run.config import RunRequest

if TYPE_CHECKING:
    from kmultiarch.core.policy.model import Policy
    from kmultiarch.io.progress import ProgressLine
    from kmultiarch.run.config import RunConfig


#: The key that signs the shared cache level's entries, itself (``--cache-key-file`` names a
#: file holding it).
CACHE_KEY_ENV = "KMULTIARCH_CACHE_KEY"

#: Every warning, error and summary line is also appended to the file this names: for tools
#: that hide a plugin's stderr (Helm 4 post-renderers; kustomize plugins when they succeed).
WARNINGS_FILE_ENV = "KMULTIARCH_WARNINGS_FILE"
_warnings_file_broken = False


def warn(message: str) -> None:
    _report(f"kmultiarch: warning: {printable(message)}")


def fail(message: str) -> None:
    _report(f"kmultiarch: error: {printable(message)}")


def note(message: str) -> None:
    _report(f"kmultiarch: {printable(message)}")


def _report(line: str) -> None:
    click.echo(line, err=True)
    append_to_warnings_file(line)


def append_to_warnings_file(line: str) -> None:
    """Append ``line`` to ``$KMULTIARCH_WARNINGS_FILE`` when it is set. A file that cannot be
    written is said once on stderr; it never fails the run."""
    global _warnings_file_broken  # noqa: PLW0603 - one process, one file, one complaint
    path = os.environ.get(WARNINGS_FILE_ENV)
    if not path or _warnings_file_broken:
        return
    data = (line.rstrip("\n") + "\n").encode("utf-8", "backslashreplace")
    try:
        # Non-blocking: a FIFO no one reads (or whose reader stopped reading) is refused at
        # once (ENXIO, EAGAIN) instead of holding the run for ever. backslashreplace: a line may
        # carry a file name that is not UTF-8.
        descriptor = os.open(
            path,
            os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC,
            0o644,
        )
        try:
            if os.write(descriptor, data) != len(data):
                raise OSError(errno.EAGAIN, "the reader takes no more")
        finally:
            os.close(descriptor)
    except OSError as exc:
        _warnings_file_broken = True
        click.echo(
            f"kmultiarch: warning: cannot append to ${WARNINGS_FILE_ENV} ({path}): "
            f"{exc.strerror or exc}",
            err=True,
        )


@dataclass(frozen=True)
class RunOptions:
    """What the command line said for a run: the policy file, the run's request (cache, lock,
    registry bounds; :class:`~kmultiarch.run.config.RunRequest`) and how to speak. The run is
    assembled from it by :mod:`kmultiarch.run`, nowhere here."""

    config: str | None
    request: RunRequest = field(default_factory=RunRequest)
    verbose: int = 0
    quiet: bool = False

    def load_policy(self) -> Policy:
        from kmultiarch.io.config import load_policy

        return load_policy(self.config)

    def configure(self, policy: Policy, *, fresh: bool = False) -> RunConfig:
        """The run's configuration from these options and ``policy``. ``fresh``: every tag
        asked of its registry again (no lock, not offline, the tag TTL at 0), as ``lock``
        does."""
        from kmultiarch.run.config import configure

        request = self.request
        if fresh:
            request = replace(request, cache_ttl=0.0, lock=None, offline=False)
        return configure(policy, request, use_lock=not fresh)

    def progress(self, from_cache: Callable[[], int]) -> ProgressLine | None:
        """A progress line on stderr while images are looked up (a terminal only)."""
        from kmultiarch.io.progress import progress_line

        return progress_line(self.quiet, from_cache)
