"""Reading manifests from files, directories and stdin; writing files atomically."""

from __future__ import annotations

import contextlib
import os
import stat
import sys
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import BinaryIO

from kmultiarch.errors import InputError, WriteError
from kmultiarch.yaml.stream import InputSource, decode_source

STDIN = "-"
STDIN_NAME = "<stdin>"
MANIFEST_SUFFIXES = (".yaml", ".yml")
#: Largest input read, a file or stdin (a render of 20 000 resources is some 40 MB): beyond
#: it, the run stops before holding the whole input in memory (a few times its size).
MAX_INPUT_BYTES = 256 * 1024 * 1024


def manifest_files(paths: Iterable[str]) -> list[str]:
    """Expand directories into their ``*.yaml``/``*.yml`` files (sorted); keep files and ``-``."""
    expanded: list[str] = []
    for path in paths:
        if path == STDIN:
            expanded.append(path)
            continue
        candidate = Path(path)
        if candidate.is_dir():
            found = sorted(
                str(file)
                for file in candidate.rglob("*")
                if file.suffix in MANIFEST_SUFFIXES
                and file.is_file()
                and not any(part.startswith(".") for part in file.relative_to(candidate).parts)
            )
            expanded.extend(found)
        elif candidate.exists():
            expanded.append(path)
        else:
            raise InputError(f"{path}: no such file or directory")
    return expanded


def collect_inputs(paths: Iterable[str], stdin: BinaryIO | None = None) -> list[InputSource]:
    """Read every input. No path means stdin; ``-`` names stdin among files."""
    names = manifest_files(paths) if paths else [STDIN]
    sources: list[InputSource] = []
    for name in names:
        if name == STDIN:
            if any(source.name == STDIN_NAME for source in sources):
                continue
            data = read_limited(stdin or sys.stdin.buffer, STDIN_NAME)
            sources.append(InputSource(STDIN_NAME, decode_source(data, STDIN_NAME)))
        else:
            sources.append(InputSource(name, decode_source(read_bytes(name), name)))
    return sources


def read_bytes(name: str) -> bytes:
    """A manifest file's bytes: a regular file, or a pipe (``<(helm template ...)``); a device
    (``/dev/zero``, a disk) or a socket is refused before anything is read."""
    try:
        with open(name, "rb") as stream:
            mode = os.fstat(stream.fileno()).st_mode
            if not (stat.S_ISREG(mode) or stat.S_ISFIFO(mode)):
                raise InputError(
                    f"{name}: not a regular file ({_kind(mode)}); name a manifest file, a "
                    "directory of them, or - for stdin"
                )
            return read_limited(stream, name)
    except OSError as exc:
        raise InputError(f"{name}: cannot read: {exc.strerror or exc}") from exc


def _kind(mode: int) -> str:
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "a directory" if stat.S_ISDIR(mode) else "not a file"


def read_limited(stream: BinaryIO, name: str) -> bytes:
    """All of ``stream``, or an InputError once it is larger than MAX_INPUT_BYTES."""
    data = stream.read(MAX_INPUT_BYTES + 1)
    if len(data) > MAX_INPUT_BYTES:
        raise InputError(
            f"{name}:1: the input is larger than {MAX_INPUT_BYTES} bytes; this is not a "
            "rendered manifest stream, or split it"
        )
    return data


def write_atomically(name: str, text: str) -> None:
    """Replace one file's content all at once (see :func:`write_all_atomically`)."""
    write_all_atomically({name: text})


def write_all_atomically(files: Mapping[str, str]) -> None:
    """Replace the content of several files, each all at once, and all of them or (as far as
    a file system allows) none: every new content is first written beside its file, flushed
    to disk and given the old file's mode, owner and group; only then is each renamed over its
    file. A failure while preparing (a full disk, a read-only file system) leaves every file as
    it was; one while renaming names the files already rewritten. A symlink is followed: the
    file it points to is replaced and the link stays a link. A crash leaves old or new files,
    never half-written ones."""
    prepared: list[tuple[str, Path, str]] = []
    try:
        for name, text in files.items():
            target = Path(os.path.realpath(name))
            try:
                prepared.append((name, target, _prepare(target, text)))
            except OSError as exc:
                raise WriteError(
                    f"{name}: cannot write it: {exc.strerror or exc}; no file was changed"
                ) from exc
    except BaseException:
        for _, _, temporary in prepared:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
        raise
    done: list[str] = []
    for position, (name, target, temporary) in enumerate(prepared):
        try:
            os.replace(temporary, target)
        except OSError as exc:
            for _, _, left in prepared[position:]:
                with contextlib.suppress(OSError):
                    os.unlink(left)
            rewritten = ", ".join(done) if done else "none"
            raise WriteError(
                f"{name}: cannot replace it: {exc.strerror or exc}; it is unchanged, as are the "
                f"files after it; rewritten before it: {rewritten}"
            ) from exc
        done.append(name)
    for directory in {target.parent for _, target, _ in prepared}:
        with contextlib.suppress(OSError):
            descriptor = os.open(directory, os.O_RDONLY)
            try:
                os.fsync(descriptor)
            finally:
                os.close(descriptor)


def _prepare(target: Path, text: str) -> str:
    """The new content in a temporary file beside ``target``, with its mode, owner and group."""
    try:
        status: os.stat_result | None = target.stat()
    except FileNotFoundError:
        status = None
    handle, temporary = tempfile.mkstemp(
        prefix=f".{target.name}.", suffix=".kmultiarch.tmp", dir=target.parent
    )
    try:
        with os.fdopen(handle, "wb") as stream:
            stream.write(text.encode("utf-8"))
            stream.flush()
            os.fsync(stream.fileno())
        if status is None:
            os.chmod(temporary, 0o644)
        else:
            if (status.st_uid, status.st_gid) != (os.getuid(), os.getgid()):
                # As root (a hook in a container), keep the file its owner's; otherwise the
                # group if we may (chown to our own uid is allowed), never failing for it.
                with contextlib.suppress(PermissionError):
                    os.chown(temporary, status.st_uid, status.st_gid)
            os.chmod(temporary, stat.S_IMODE(status.st_mode))
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
    return temporary
