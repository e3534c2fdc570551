"""An image's file system as its layers' tar headers tell it, read incrementally.

Pure: bytes in, plain values out. :class:`TarStream` reads a tar archive a chunk at a time
(ustar, GNU long names and links, PAX extended headers; POSIX.1-2001), calling back for each
entry so the caller chooses which entries' data it keeps; nothing but headers is buffered.
:class:`LayerIndex` records one layer's entries, whiteouts (``.wh.NAME`` deletes ``NAME`` from
the layers below) and opaque directories (``.wh..wh..opq``: the layers below contribute nothing
to the directory), as OCI image-spec ``layer.md`` defines them. :func:`lookup` and
:func:`resolve` answer over the layers top first, the way the merged file system of a
container answers, with symbolic links (absolute and relative, chains, loops bounded as Linux
bounds them) followed inside the image; a layer not yet read whole answers only for what it
has shown, so the caller knows which layer to read next (:class:`Pending`).

Windows layers keep the file system under ``Files/`` (``C:\\app\\app.exe`` is
``Files/app/app.exe``), and their names are compared without regard to case.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Literal, Protocol

from kmultiarch.core.binaries import FileHead

__all__ = [
    "LINK_LIMIT",
    "OPAQUE",
    "WHITEOUT_PREFIX",
    "Absent",
    "DataSink",
    "EntryKind",
    "IndexedEntry",
    "LayerIndex",
    "Located",
    "Lookup",
    "Pending",
    "Resolved",
    "TarError",
    "TarHeader",
    "TarStream",
    "Unresolvable",
    "lookup",
    "path_key",
    "resolve",
    "windows_path",
]

BLOCK = 512
WHITEOUT_PREFIX = ".wh."
OPAQUE = ".wh..wh..opq"
#: Symbolic links followed in one path resolution before it is a loop (Linux's MAXSYMLINKS).
LINK_LIMIT = 40
#: Bytes of a GNU long name or PAX header kept: far more than any real path (PATH_MAX 4096).
MAX_META_BYTES = 1024 * 1024
WINDOWS_ROOT = "Files"

EntryKind = Literal["file", "dir", "symlink", "hardlink", "other"]

_KINDS: dict[bytes, EntryKind] = {
    b"0": "file",
    b"\0": "file",
    b"7": "file",
    b"S": "file",
    b"1": "hardlink",
    b"2": "symlink",
    b"5": "dir",
    b"3": "other",
    b"4": "other",
    b"6": "other",
}
_META = frozenset({b"L", b"K", b"x", b"g"})


class TarError(ValueError):
    """Bytes that are not a tar archive, or one that is damaged."""


@dataclass(frozen=True)
class TarHeader:
    """One archive entry as its headers say it: the name and link target as written (GNU
    and PAX long forms applied), the mode bits, and the size of the data that follows.
    ``readable``: the data is the file's bytes (not so for GNU sparse files)."""

    name: str
    kind: EntryKind
    mode: int
    size: int
    link: str = ""
    readable: bool = True


class DataSink(Protocol):
    """Where an entry's data goes when the caller wants it."""

    def feed(self, chunk: bytes) -> None: ...


class TarStream:
    """A tar archive read a chunk at a time. ``on_entry`` is called with each entry's header
    and returns where its data goes (None: skipped). :attr:`finished` turns True at the
    archive's end (its first zero block)."""

    def __init__(self, on_entry: Callable[[TarHeader], DataSink | None]) -> None:
        self._on_entry = on_entry
        self._buffer = bytearray()
        self._remaining = 0  # data bytes of the current entry still to come
        self._padding = 0  # padding bytes after them
        self._sink: DataSink | None = None
        self._meta: bytearray | None = None  # collecting a GNU long name or PAX header
        self._meta_kind = b""
        self._long_name: str | None = None
        self._long_link: str | None = None
        self._pax: dict[str, str] = {}
        self.finished = False
        self.entries = 0

    @property
    def at_boundary(self) -> bool:
        """Whether the bytes fed so far end between entries (not inside a header, an entry's
        data or its padding)."""
        return not (self._buffer or self._remaining or self._padding or self._meta is not None)

    def feed(self, data: bytes) -> None:
        view = memoryview(data)
        while view and not self.finished:
            if self._remaining:
                taken = view[: self._remaining]
                self._remaining -= len(taken)
                view = view[len(taken) :]
                self._data(bytes(taken))
                continue
            if self._padding:
                skipped = min(self._padding, len(view))
                self._padding -= skipped
                view = view[skipped:]
                continue
            wanted = BLOCK - len(self._buffer)
            self._buffer += view[:wanted]
            view = view[wanted:]
            if len(self._buffer) == BLOCK:
                block, self._buffer = bytes(self._buffer), bytearray()
                self._header(block)

    def _data(self, chunk: bytes) -> None:
        if self._meta is not None:
            if len(self._meta) + len(chunk) > MAX_META_BYTES:
                raise TarError(f"an extended header longer than {MAX_META_BYTES} bytes")
            self._meta += chunk
            if not self._remaining:
                self._end_meta()
        elif self._sink is not None:
            self._sink.feed(chunk)

    def _header(self, block: bytes) -> None:
        if block.count(0) == BLOCK:
            self.finished = True
            return
        _check_sum(block)
        typeflag = block[156:157]
        size = _number(block[124:136])
        self._padding = -size % BLOCK
        self._remaining = size
        if typeflag in _META:
            self._meta, self._meta_kind = bytearray(), typeflag
            if not size:
                self._end_meta()
            return
        header = self._entry(block, typeflag, size)
        self.entries += 1
        self._sink = self._on_entry(header)

    def _entry(self, block: bytes, typeflag: bytes, size: int) -> TarHeader:
        name = _field(block[0:100])
        if block[257:263] == b"ustar\0" and block[345:500].strip(b"\0"):
            name = f"{_field(block[345:500])}/{name}"
        link = _field(block[157:257])
        pax, self._pax = self._pax, {}
        if self._long_name is not None:
            name, self._long_name = self._long_name, None
        if self._long_link is not None:
            link, self._long_link = self._long_link, None
        name = pax.get("path", name)
        link = pax.get("linkpath", link)
        if "size" in pax:
            size = _pax_number(pax["size"])
            self._remaining, self._padding = size, -size % BLOCK
        kind = _KINDS.get(typeflag, "other")
        if kind == "file" and typeflag != b"7" and name.endswith("/"):
            kind = "dir"  # old archives mark directories with a trailing slash only
        sparse = typeflag == b"S" or any(key.startswith("GNU.sparse.") for key in pax)
        mode = _number(block[100:108]) & 0o7777
        return TarHeader(name, kind, mode, size, link, readable=not sparse)

    def _end_meta(self) -> None:
        assert self._meta is not None
        raw, kind = bytes(self._meta), self._meta_kind
        self._meta = None
        if kind == b"L":
            self._long_name = _text(raw.split(b"\0", 1)[0])
        elif kind == b"K":
            self._long_link = _text(raw.split(b"\0", 1)[0])
        elif kind == b"x":
            self._pax = _pax_records(raw)
        # b"g": global PAX headers hold no path or size of any one entry; they are skipped.


def _check_sum(block: bytes) -> None:
    try:
        stored = _number(block[148:156])
    except TarError:
        raise TarError("not a tar archive (a header without a checksum)") from None
    unsigned = sum(block[:148]) + 8 * 32 + sum(block[156:])
    signed = unsigned - sum(b for b in block[:148] + block[156:] if b > 127) * 2
    if stored not in (unsigned, signed):
        raise TarError("not a tar archive, or a damaged one (a header checksum does not match)")


def _number(raw: bytes) -> int:
    """A numeric header field: octal text, or GNU base-256 (first byte's high bit set)."""
    if raw and raw[0] & 0x80:
        if raw[0] == 0xFF:
            raise TarError("a negative number in a tar header")
        return int.from_bytes(bytes([raw[0] & 0x7F]) + raw[1:], "big")
    text = raw.split(b"\0", 1)[0].strip(b" ")
    if not text:
        return 0
    try:
        return int(text, 8)
    except ValueError:
        raise TarError(f"a tar header field that is not a number ({raw!r})") from None


def _pax_number(text: str) -> int:
    if not text.isdigit() or len(text) > 20:
        raise TarError(f"a PAX size that is not a number ({text[:30]!r})")
    return int(text)


def _field(raw: bytes) -> str:
    return _text(raw.split(b"\0", 1)[0])


def _text(raw: bytes) -> str:
    return raw.decode("utf-8", "surrogateescape")


def _pax_records(raw: bytes) -> dict[str, str]:
    """``"%d %s=%s\\n"`` records, each length counting the whole record."""
    records: dict[str, str] = {}
    position = 0
    while position < len(raw):
        space = raw.find(b" ", position, position + 21)
        if space < 0:
            if not raw[position:].strip(b"\0"):
                break
            raise TarError("a damaged PAX header")
        length_text = raw[position:space]
        if not length_text.isdigit() or int(length_text) <= space - position:
            raise TarError("a damaged PAX header")
        end = position + int(length_text)
        record = raw[space + 1 : end]
        if end > len(raw) or not record.endswith(b"\n") or b"=" not in record:
            raise TarError("a damaged PAX header")
        key, _, value = record[:-1].partition(b"=")
        records[_text(key)] = _text(value)
        position = end
    return records


# -- one layer ------------------------------------------------------------------------------


@dataclass(frozen=True)
class IndexedEntry:
    """An entry of a layer: its path in the image (``usr/bin/env``, no leading slash; for
    Windows without ``Files/``), kind, mode, size, and link target as written."""

    path: str
    kind: EntryKind
    mode: int
    size: int = 0
    link: str = ""
    readable: bool = True


def path_key(path: str, windows: bool) -> str:
    """How a layer keys ``path``: as written, or for Windows without regard to case."""
    return path.casefold() if windows else path


def _normalised(name: str) -> str | None:
    """An archive name as a path from the root (``./usr/bin/`` -> ``usr/bin``); None for the
    root itself or a name that climbs out of it."""
    parts: list[str] = []
    for part in name.split("/"):
        if part in ("", "."):
            continue
        if part == "..":
            return None
        parts.append(part)
    return "/".join(parts) or None


def windows_path(path: str) -> str:
    """A Windows path as kmultiarch's views hold it: ``C:\\app\\app.exe`` -> ``/app/app.exe``
    (the drive letter dropped, backslashes as slashes)."""
    text = path.replace("\\", "/")
    if len(text) >= 2 and text[1] == ":" and text[0].isalpha():
        text = text[2:]
    return text


@dataclass
class LayerIndex:
    """What one layer holds, as far as it has been read (:attr:`complete` once wholly).
    ``heads`` keeps the first bytes of the files whose data was watched."""

    digest: str
    windows: bool = False
    entries: dict[str, IndexedEntry] = field(default_factory=dict)
    whiteouts: set[str] = field(default_factory=set)
    opaque: set[str] = field(default_factory=set)
    #: Directories this layer holds entries under, whether or not it names them itself
    #: (key -> the path as written).
    parents: dict[str, str] = field(default_factory=dict)
    heads: dict[str, FileHead] = field(default_factory=dict)
    complete: bool = False

    def add(self, header: TarHeader) -> IndexedEntry | None:
        """Record ``header``; the entry (its path normalised), or None for a whiteout, an
        opaque marker or a name outside the image's file system."""
        name = header.name
        if self.windows:
            name = name.replace("\\", "/")
            root, _, rest = name.lstrip("./").partition("/")
            if root.casefold() != WINDOWS_ROOT.casefold():
                return None  # Hives/, UtilityVM/: not the container's file system
            name = rest
        path = _normalised(name)
        if path is None:
            return None
        directory, _, base = path.rpartition("/")
        if base.startswith(WHITEOUT_PREFIX):
            if base == OPAQUE:
                self.opaque.add(path_key(directory, self.windows))
            else:
                hidden = f"{directory}/{base[len(WHITEOUT_PREFIX) :]}".lstrip("/")
                if hidden:
                    self.whiteouts.add(path_key(hidden, self.windows))
            self._note_parents(directory)
            return None
        link = header.link
        if header.kind == "hardlink":
            link = _normalised(link.replace("\\", "/") if self.windows else link) or ""
            if self.windows:
                link = link.partition("/")[2]
        entry = IndexedEntry(path, header.kind, header.mode, header.size, link, header.readable)
        self.entries[path_key(path, self.windows)] = entry
        self._note_parents(directory)
        return entry

    def _note_parents(self, directory: str) -> None:
        while directory:
            key = path_key(directory, self.windows)
            if key in self.parents:
                return
            self.parents[key] = directory
            directory = directory.rpartition("/")[0]

    def hides(self, key: str) -> bool:
        """Whether this layer hides ``key`` of the layers below: a whiteout of it or of a
        directory above it, or an opaque directory above it."""
        if key in self.whiteouts:
            return True
        directory = key
        while directory:
            directory = directory.rpartition("/")[0]
            if directory in self.whiteouts or directory in self.opaque:
                return True
        return False


# -- the merged view ------------------------------------------------------------------------


@dataclass(frozen=True)
class Located:
    """What the merged view has at a path: the entry and the layer it comes from (top is 0);
    ``entry`` None is a directory that layers hold entries under without naming it."""

    layer: int
    entry: IndexedEntry | None

    @property
    def is_dir(self) -> bool:
        return self.entry is None or self.entry.kind == "dir"


@dataclass(frozen=True)
class Pending:
    """The answer depends on a layer not read far enough: read ``layer`` (watching ``path``,
    as the image's key for it)."""

    layer: int
    path: str


@dataclass(frozen=True)
class Absent:
    """Nothing at ``path`` in the merged view."""

    path: str


Lookup = Located | Pending | Absent


def lookup(layers: Sequence[LayerIndex], key: str) -> Lookup:
    """What the layers (top first) show at ``key``: the topmost layer naming it wins; a
    layer hides the ones below by a whiteout or an opaque directory; a layer not read whole
    answers only when it names the path."""
    implicit: int | None = None
    for position, layer in enumerate(layers):
        entry = layer.entries.get(key)
        if entry is not None:
            return Located(position, entry)
        if not layer.complete:
            return Pending(position, key)
        if implicit is None and key in layer.parents:
            implicit = position
        if layer.hides(key):
            break
    if implicit is not None:
        return Located(implicit, None)
    return Absent(key)


@dataclass(frozen=True)
class Resolved:
    """A path resolved to what it names: the final entry (links followed), where it comes
    from, the path as resolved (``/usr/bin/busybox``), and the links passed on the way."""

    located: Located
    path: str
    links: tuple[str, ...] = ()


@dataclass(frozen=True)
class Unresolvable:
    """A path that names nothing: ``reason`` says why (missing, not a directory, a loop)."""

    reason: str


def resolve(
    layers: Sequence[LayerIndex], path: str, *, windows: bool = False
) -> Resolved | Pending | Unresolvable:
    """Resolve ``path`` (absolute in the image) as the kernel would inside the container:
    each component looked up in the merged view, symbolic links followed (an absolute
    target from the image's root; at most :data:`LINK_LIMIT`), ``..`` never above the root.
    Hard links are not followed here (they name the same file: see :func:`hardlink_target`)."""
    queue = deque(path.split("/"))
    resolved: list[str] = []
    links: list[str] = []
    located = Located(0, None)  # the root
    while queue:
        part = queue.popleft()
        if part in ("", "."):
            continue
        if part == "..":
            if resolved:
                resolved.pop()
            located = Located(0, None)
            continue
        current = "/".join([*resolved, part])
        found_key = path_key(current, windows)
        found = lookup(layers, found_key)
        if isinstance(found, Pending):
            return found
        if isinstance(found, Absent):
            return Unresolvable(f"/{current} does not exist in the image")
        entry = found.entry
        if entry is not None and entry.kind == "symlink":
            links.append(f"/{current}")
            if len(links) > LINK_LIMIT:
                return Unresolvable(f"more than {LINK_LIMIT} symbolic links from {path} (a loop?)")
            target = windows_path(entry.link) if windows else entry.link
            if target.startswith("/"):
                resolved = []
            queue.extendleft(reversed(target.split("/")))
            continue
        if queue and any(p not in ("", ".") for p in queue) and not found.is_dir:
            return Unresolvable(f"/{current} is not a directory")
        written = entry.path if entry is not None else layers[found.layer].parents[found_key]
        resolved.append(written.rpartition("/")[2])
        located = found
    return Resolved(located, "/" + "/".join(resolved), tuple(links))


def hardlink_target(layer: LayerIndex, entry: IndexedEntry) -> IndexedEntry | None:
    """The file a hard link names: an earlier entry of the same layer (a tar archive stores
    a hard link's data once, under the first name)."""
    seen = 0
    while entry.kind == "hardlink" and seen < LINK_LIMIT:
        target = layer.entries.get(path_key(entry.link, layer.windows))
        if target is None:
            return None
        entry, seen = target, seen + 1
    return entry if entry.kind == "file" else None
