"""Reading a configuration document key by key: where a value is, and the checks keys share.

A policy (or any document read the same way) is validated by functions that take the value and
its :class:`Where`: the file it came from and the key path to it. A problem is
``where.error(message)``, a :class:`~kmultiarch.errors.PolicyError` carrying the source and the
path as fields; nothing glues them into strings before the error is shown. Pure but for
:meth:`Where.file`, which resolves a relative path as a policy file's paths are.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, replace
from pathlib import Path

from kmultiarch.errors import KeyPath, PolicyError, format_field_path


@dataclass(frozen=True)
class Where:
    """A place in a configuration document: its ``source`` (a file, ``functionConfig``), the key
    ``path`` to the value, and the directory relative paths in it start from (``base_dir``;
    None: the directory of the file ``source`` names)."""

    source: str
    path: KeyPath = ()
    base_dir: Path | None = None

    def __truediv__(self, key: str | int) -> Where:
        """The place of a key (a string) or a list position (an integer) under this one."""
        return replace(self, path=(*self.path, key))

    def __str__(self) -> str:
        """``policy.yaml: spec.lock``: how other messages name the place."""
        return ": ".join(part for part in (self.source, format_field_path(self.path)) if part)

    def error(self, message: str) -> PolicyError:
        """What is wrong here, with the source and the path as fields."""
        return PolicyError(message, source=self.source, path=self.path)

    def file(self, path: str) -> Path:
        """A path given here: relative to ``base_dir``, else to the directory of the policy
        file, as kustomize reads paths (a source that names no file, ``(defaults)``, leaves it
        as it is)."""
        candidate = Path(path).expanduser()
        if candidate.is_absolute():
            return candidate
        if self.base_dir is not None:
            return self.base_dir.resolve() / candidate
        if self.source.startswith("("):
            return candidate
        return Path(self.source).resolve().parent / candidate


def check_keys(mapping: Collection[object], known: Collection[str], where: Where) -> None:
    """Refuse a key of ``mapping`` that is not ``known``: a misspelt key must not silently do
    nothing."""
    for key in mapping:
        if key not in known:
            listed = ", ".join(sorted(known))
            raise (where / str(key)).error(f"unknown key (known keys: {listed})")
