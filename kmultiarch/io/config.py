"""Policy and lock files: reading them (and writing the lock), the edge around the pure models in
:mod:`kmultiarch.core.policy` and :mod:`kmultiarch.core.lock`."""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from kmultiarch.core.lock import ImageLock, LockFileError, format_lock, lock_from_object
from kmultiarch.core.policy import CONFIG_ENV, Policy, policy_from_object
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
        text = Path(source).read_text(encoding="utf-8")
    except FileNotFoundError as exc:
        raise PolicyError(f"{source}: policy file not found") from exc
    except (OSError, UnicodeDecodeError) as exc:
        raise PolicyError(f"{source}: cannot read policy file: {exc}") from exc
    return parse_policy_text(text, source)


def parse_policy_text(text: str, source: str) -> Policy:
    try:
        document = read_single_document(text, source)
    except ManifestStreamError as exc:
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


def load_lock(path: str | Path) -> ImageLock:
    source = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError as exc:
        raise LockFileError(
            f"{source}: lock file not found; create it with `kmultiarch lock PATH... -o {source}`"
        ) from exc
    except (OSError, UnicodeDecodeError) as exc:
        raise LockFileError(f"{source}: cannot read the lock file: {exc}") from exc
    return parse_lock(text, source)


def write_lock(path: str | Path, lock: ImageLock, header: Iterable[str] = ()) -> None:
    write_atomically(str(path), format_lock(lock, header))
