"""Policy and lock files: reading them (and writing the lock), the edge around the pure models in
:mod:`kmultiarch.core.policy.model` and :mod:`kmultiarch.core.lock`."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable
from pathlib import Path

from kmultiarch.core.lock import ImageLock, LockFileError, format_lock, lock_from_object
from kmultiarch.core.policy.model import CONFIG_ENV, Policy
from kmultiarch.core.policy.schema import policy_from_object
from kmultiarch.errors import ManifestStreamError, PolicyError
from kmultiarch.io.inputs import write_atomically
from kmultiarch.yaml.stream import read_single_document


def load_policy(path: str | os.PathLike[str] | None) -> Policy:
    """Load the policy at ``path``, or ``$KMULTIARCH_CONFIG``, or return the defaults."""
    if path is None:
        path = os.environ.get(CONFIG_ENV) or None
    if path is None:
        return Policy()
    source = os.fspath(path)
    try:
        text = read_config_file(source, "policy file")
    except FileNotFoundError as exc:
        raise PolicyError("policy file not found", source=source) from exc
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise PolicyError(f"cannot read policy file: {_reason(exc)}", source=source) from exc
    return parse_policy_text(text, source)


#: Policy and lock files are small; a path that names something else (/dev/zero, a disk) is
#: refused rather than read until memory runs out. A lock of every image of a monorepo stays
#: far below this.
MAX_CONFIG_BYTES = 16 * 1024 * 1024


def read_config_file(source: str, what: str, *, allow_pipe: bool = True) -> str:
    """A policy or lock file's text: a regular file (or, when ``allow_pipe``, a pipe, as
    ``<(...)`` on a command line gives), at most MAX_CONFIG_BYTES, UTF-8. ValueError says what
    is wrong; OSError as the system says. Opened without blocking: a FIFO with no writer
    cannot hold the run before its type is checked."""
    descriptor = os.open(source, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    with os.fdopen(descriptor, "rb") as stream:
        mode = os.fstat(stream.fileno()).st_mode
        if not (stat.S_ISREG(mode) or (allow_pipe and stat.S_ISFIFO(mode))):
            raise ValueError(f"not a regular file; a {what} is a YAML file")
        if stat.S_ISFIFO(mode):
            os.set_blocking(stream.fileno(), True)
        data = stream.read(MAX_CONFIG_BYTES + 1)
    if len(data) > MAX_CONFIG_BYTES:
        raise ValueError(f"larger than {MAX_CONFIG_BYTES} bytes; this is not a {what}")
    return data.decode("utf-8")


def _reason(exc: BaseException) -> str:
    if isinstance(exc, OSError):
        return exc.strerror or str(exc)
    return str(exc)


def parse_policy_text(text: str, source: str) -> Policy:
    try:
        document = read_single_document(text, source)
    except ManifestStreamError as exc:
        # Located already, as the YAML reader says it: file:line: reason.
        raise PolicyError(f"{exc} (policy is not valid YAML)") from exc
    return policy_from_object(document, source)


def parse_lock(text: str, source: str) -> ImageLock:
    try:
        document = read_single_document(text, source)
    except ManifestStreamError as exc:
        raise LockFileError(
            f"{exc} (the lock file is not valid YAML; regenerate it with kmultiarch lock)"
        ) from exc
    return lock_from_object(document, source)


def load_lock(path: str | Path, *, allow_pipe: bool = True) -> ImageLock:
    """The lock at ``path``. ``allow_pipe=False`` for a path the repository chose (a policy's
    ``lock:``): only a regular file, never a pipe that a writer could hold open."""
    source = str(path)
    try:
        text = read_config_file(source, "lock file", allow_pipe=allow_pipe)
    except FileNotFoundError as exc:
        from kmultiarch.core.shellwords import shell_quote  # only to say what to run

        raise LockFileError(
            f"{source}: lock file not found; create it with "
            f"`kmultiarch lock PATH... -o {shell_quote(source)}`"
        ) from exc
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise LockFileError(f"{source}: cannot read the lock file: {_reason(exc)}") from exc
    return parse_lock(text, source)


def write_lock(path: str | Path, lock: ImageLock, header: Iterable[str] = ()) -> None:
    write_atomically(str(path), format_lock(lock, header))
