"""A directory read and written without ever following a symbolic link (issue 28, item 7).

``mutate --output kustomize --output-dir DIR`` writes into a directory that is usually part of
a repository, whose content may be anyone's: a link committed there (``DIR/web.yaml ->
/etc/…``, or ``DIR`` itself, or one of its parents, a link elsewhere) must not let a run write,
replace or remove a file outside ``DIR``. So every component of the path is opened with
``O_NOFOLLOW`` from the one before it (``openat``), directories are created the same way, and
the files inside are opened, replaced and removed relative to the directory's descriptor: the
check and the use are one system call, with no window between them. A link met on the way is a
:class:`~kmultiarch.errors.InputError` naming it, before anything is written.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Iterator, Mapping
from pathlib import Path
from types import TracebackType

from kmultiarch.errors import InputError, WriteError

__all__ = ["NoFollowDirectory"]

_DIRECTORY_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
_LINK_ERRNOS = (errno.ELOOP, errno.EMLINK, errno.ENOTDIR)


def _link_refused(shown: str, what: str) -> InputError:
    return InputError(
        f"{shown}: is a symbolic link; {what} never follows one (a link could send files "
        "outside the directory); nothing was written: name the real directory, or remove the link"
    )


class NoFollowDirectory:
    """An open directory: files listed, read, replaced and removed by name, no link followed.

    Use :meth:`open` (or :meth:`create`) as a context manager; ``what`` names the option in
    messages (``--output-dir``)."""

    def __init__(self, path: Path, descriptor: int, what: str) -> None:
        self.path = path
        self._descriptor = descriptor
        self._what = what

    @classmethod
    def open(cls, path: Path, what: str, *, create: bool = False) -> NoFollowDirectory | None:
        """The directory at ``path``, each component opened without following a link; None
        when it does not exist (created, with its missing parents, when ``create``).
        InputError for a link or a component that is not a directory."""
        parts = [part for part in path.parts if part not in ("", ".")]
        start = os.sep if path.is_absolute() else os.curdir
        if path.is_absolute():
            parts = parts[1:]
        descriptor = os.open(start, _DIRECTORY_FLAGS & ~os.O_NOFOLLOW)
        walked = Path(start) if path.is_absolute() else Path()
        try:
            for part in parts:
                walked = walked / part
                parent, descriptor = descriptor, -1
                descriptor = cls._step(parent, part, walked, what, create)
                if descriptor < 0:
                    return None
        except BaseException:
            if descriptor >= 0:
                os.close(descriptor)
            raise
        return cls(path, descriptor, what)

    @staticmethod
    def _step(parent: int, part: str, walked: Path, what: str, create: bool) -> int:
        """The descriptor of ``part`` in ``parent`` (which it closes); -1 when missing."""
        try:
            try:
                try:
                    return os.open(part, _DIRECTORY_FLAGS, dir_fd=parent)
                except FileNotFoundError:
                    if not create:
                        return -1
                    try:
                        os.mkdir(part, 0o777, dir_fd=parent)
                    except FileExistsError:
                        pass  # made meanwhile: opened below, without following it either
                    except OSError as exc:
                        raise WriteError(
                            f"{walked}: cannot create it: {exc.strerror or exc}"
                        ) from exc
                    return os.open(part, _DIRECTORY_FLAGS, dir_fd=parent)
            except OSError as exc:
                if exc.errno not in _LINK_ERRNOS:
                    raise InputError(f"{walked}: cannot open it: {exc.strerror or exc}") from exc
                mode = os.stat(part, dir_fd=parent, follow_symlinks=False).st_mode
                if stat.S_ISLNK(mode):
                    raise _link_refused(str(walked), what) from exc
                raise InputError(
                    f"{walked}: not a directory; name the Component's directory"
                ) from exc
        finally:
            os.close(parent)

    def __enter__(self) -> NoFollowDirectory:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        os.close(self._descriptor)

    # Reading ---------------------------------------------------------------------------------

    def entries(self) -> Iterator[tuple[str, int]]:
        """(name, mode of the entry itself, a link's mode for a link), sorted by name."""
        names = sorted(os.listdir(self._descriptor))
        for name in names:
            with contextlib.suppress(FileNotFoundError):
                yield name, os.stat(name, dir_fd=self._descriptor, follow_symlinks=False).st_mode

    def kind_of(self, name: str) -> int | None:
        """The mode of entry ``name`` itself (a link's for a link), None when absent."""
        try:
            return os.stat(name, dir_fd=self._descriptor, follow_symlinks=False).st_mode
        except FileNotFoundError:
            return None

    def read(self, name: str, limit: int) -> bytes:
        """Up to ``limit + 1`` bytes of file ``name``; InputError for a link."""
        try:
            descriptor = os.open(
                name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=self._descriptor
            )
        except OSError as exc:
            if exc.errno in _LINK_ERRNOS:
                raise _link_refused(str(self.path / name), self._what) from exc
            raise InputError(f"{self.path / name}: cannot read it: {exc.strerror or exc}") from exc
        with os.fdopen(descriptor, "rb") as stream:
            return stream.read(limit + 1)

    def refuse_links(self, names: Mapping[str, object] | list[str]) -> None:
        """InputError naming the first of ``names`` that is a link in the directory."""
        for name in names:
            mode = self.kind_of(name)
            if mode is not None and stat.S_ISLNK(mode):
                raise _link_refused(str(self.path / name), self._what)

    # Writing ---------------------------------------------------------------------------------

    def write_all_atomically(self, files: Mapping[str, str]) -> None:
        """Replace each file by name, all at once each, all prepared before any is replaced
        (as :func:`kmultiarch.io.inputs.write_all_atomically`): new content is written to a
        new file beside it (``O_EXCL | O_NOFOLLOW``) with the old file's mode, then renamed
        over it. A rename replaces a name, whatever it was; it never writes through a link."""
        self.refuse_links(files)
        prepared: list[tuple[str, str]] = []
        try:
            for name, text in files.items():
                try:
                    prepared.append((name, self._prepare(name, text)))
                except OSError as exc:
                    raise WriteError(
                        f"{self.path / name}: cannot write it: {exc.strerror or exc}; "
                        "no file was changed"
                    ) from exc
        except BaseException:
            for _, temporary in prepared:
                with contextlib.suppress(OSError):
                    os.unlink(temporary, dir_fd=self._descriptor)
            raise
        done: list[str] = []
        for position, (name, temporary) in enumerate(prepared):
            try:
                os.replace(
                    temporary, name, src_dir_fd=self._descriptor, dst_dir_fd=self._descriptor
                )
            except OSError as exc:
                for _, left in prepared[position:]:
                    with contextlib.suppress(OSError):
                        os.unlink(left, dir_fd=self._descriptor)
                rewritten = ", ".join(done) if done else "none"
                raise WriteError(
                    f"{self.path / name}: cannot replace it: {exc.strerror or exc}; it is "
                    f"unchanged, as are the files after it; rewritten before it: {rewritten}"
                ) from exc
            done.append(name)
        with contextlib.suppress(OSError):
            os.fsync(self._descriptor)

    def _prepare(self, name: str, text: str) -> str:
        mode = self.kind_of(name)
        temporary = f".{name}.{os.urandom(6).hex()}.kmultiarch.tmp"
        descriptor = os.open(
            temporary,
            os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW,
            0o600,
            dir_fd=self._descriptor,
        )
        try:
            with os.fdopen(descriptor, "wb") as stream:
                stream.write(text.encode("utf-8"))
                stream.flush()
                os.fsync(stream.fileno())
                os.fchmod(stream.fileno(), stat.S_IMODE(mode) if mode is not None else 0o644)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temporary, dir_fd=self._descriptor)
            raise
        return temporary

    def remove(self, name: str) -> None:
        """Remove entry ``name`` (a link would be removed, never what it points to)."""
        os.unlink(name, dir_fd=self._descriptor)
