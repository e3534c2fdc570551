"""Reading manifests from files, directories and stdin; writing files atomically."""

from __future__ import annotations

import contextlib
import os
import stat
import sys
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import BinaryIO

from kmultiarch.errors import InputError
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
    try:
        with open(name, "rb") as stream:
            return read_limited(stream, name)
    except OSError as exc:
        raise InputError(f"{name}: cannot read: {exc.strerror or exc}") from exc


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
    """Replace a file's content all at once: a temporary file in the same directory, flushed to
    disk, given the old file's mode, then renamed over it. A symlink is followed: the file it
    points to is replaced and the link stays a link. A crash leaves the old or the new file."""
    target = Path(os.path.realpath(name))
    try:
        mode = stat.S_IMODE(target.stat().st_mode)
    except FileNotFoundError:
        mode = 0o644
    handle, temporary = tempfile.mkstemp(
        prefix=f".{target.name}.", suffix=".kmultiarch.tmp", dir=target.parent
    )
    try:
        with os.fdopen(handle, "wb") as stream:
            stream.write(text.encode("utf-8"))
            stream.flush()
            os.fsync(stream.fileno())
        os.chmod(temporary, mode)
        os.replace(temporary, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
    with contextlib.suppress(OSError):
        directory = os.open(target.parent, os.O_RDONLY)
        try:
            os.fsync(directory)
        finally:
            os.close(directory)
