"""An image's file system as the runtime builds it from its layers' tar archives.

Pure: bytes in, plain values out. :class:`TarStream` reads a tar archive a chunk at a time
and hands each entry over exactly as Go's ``archive/tar`` reader (the one containerd and
CRI-O extract layers with) returns it: ``src/archive/tar/reader.go``, ``Reader.next``,
``readHeader`` and ``handleRegularFile``. In particular:

- a GNU long name (``L``) or long link (``K``) wins over a PAX ``path``/``linkpath``
  record (``mergePAX`` runs first, then ``if gnuLongName != "" { hdr.Name = gnuLongName }``);
  a PAX record with an empty value keeps the header's own field (``mergePAX``); a recognised
  GNU sparse PAX header's ``GNU.sparse.name`` wins over both (``readGNUSparsePAXHeaders``);
- meta headers apply to the next entry only; a PAX global header (``g``) is returned as an
  entry of its own, named by its own records, and drops pending meta headers;
- the USTAR prefix joins the name for USTAR/PAX headers (155 bytes) and star headers (131),
  never for GNU ones (whose prefix field holds times);
- a header-only type (hard and symbolic links, devices, directories, FIFOs) carries no data,
  whatever its size field says (``isHeaderOnlyType``); numbers are parsed as
  ``parseNumeric`` does (base-256, or octal with NULs and spaces trimmed at both ends);
- type ``\\0`` with a trailing slash is a directory (after the long names are applied);
- the archive ends at two zero blocks, or at one followed by the end of the stream; a zero
  block followed by anything else is an error.

:class:`LayerIndex` records one layer as containerd's ``applyNaive`` (``pkg/archive/tar.go``)
extracts it, every entry in order, the last one at a path winning (the path is removed and
created again, ``os.RemoveAll`` then ``createTarFile``):

- names are cleaned as ``filepath.Clean`` then ``fs.RootPath`` clean them: ``..`` never
  climbs above the root, so ``../bin/app`` is ``/bin/app``; a name that is the root is
  skipped;
- an entry replacing a directory with something else deletes what the layer put under it
  before; a hard link shares the file its target names at that moment (``os.Link``; a later
  entry at the target's path is a new file), and its mode becomes the shared file's
  (``lchmod`` after ``link``);
- ``.wh.NAME`` deletes ``NAME`` from the layers below and ``.wh..wh..opq`` hides what they
  hold in a directory (OCI image-spec ``layer.md``).

Where the runtimes' result is not one thing, or not a thing kmultiarch follows, the layer
records it as :attr:`LayerIndex.ambiguous` (a path) or :attr:`LayerIndex.refused` (the whole
layer), and any lookup that meets it answers :class:`Ambiguous`: a whiteout and an entry of
the same path in one layer (containerd's naive applier removes the entry, its overlay
applier, ``OverlayConvertWhiteout``'s ``mknod``, fails or keeps it); an entry under a path
the layer made a symbolic link or a file (``fs.RootPath`` follows the link, elsewhere); a
directory that replaced a non-directory in the same layer (merged with the layers below or
not, by applier); an entry under a directory that is a symbolic link in the layers below
(followed by the naive applier on the merged mount, not by the overlay one on the upper
directory); a hard link to a file of another layer, or to a link; a PAX global header (its
name is removed, ``os.RemoveAll``, before it is ignored); a type containerd refuses
(``unhandled tar header type``).

:func:`lookup` and :func:`resolve` answer over the layers top first, the way the merged file
system of a container answers, with symbolic links followed inside the image. A layer not
read whole answers nothing (a later entry may replace any it showed): the caller reads it
(:class:`Pending`).

Windows layers keep the file system under ``Files/`` (``C:\\app\\app.exe`` is
``Files/app/app.exe``), and their names are compared without regard to case.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Literal, Protocol

from kmultiarch.core.verification.binaries import FileHead

__all__ = [
    "LINK_LIMIT",
    "OPAQUE",
    "WHITEOUT_PREFIX",
    "Absent",
    "Ambiguous",
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

#: ``global``: a PAX global header, returned by Go's reader as an entry of its own;
#: ``refused``: a type containerd's ``createTarFile`` refuses (the layer cannot be applied).
EntryKind = Literal["file", "dir", "symlink", "hardlink", "other", "global", "refused"]

_KINDS: dict[bytes, EntryKind] = {
    b"0": "file",
    b"\0": "file",
    b"S": "file",
    b"1": "hardlink",
    b"2": "symlink",
    b"5": "dir",
    b"3": "other",
    b"4": "other",
    b"6": "other",
}
#: Go's isHeaderOnlyType: these carry no data whatever their size field says.
_HEADER_ONLY = frozenset({b"1", b"2", b"3", b"4", b"5", b"6"})
_META = frozenset({b"L", b"K", b"x", b"g"})
_SPARSE_VERSIONS = frozenset({("0", "0"), ("0", "1"), ("1", "0")})
_PAX_TEXTS = frozenset({b"path", b"linkpath", b"uname", b"gname"})


class TarError(ValueError):
    """Bytes that are not a tar archive, or one that is damaged."""


@dataclass(frozen=True)
class TarHeader:
    """One archive entry as Go's reader returns it: the name and link target (GNU and PAX
    long forms applied), the mode bits, and the size of the data that follows.
    ``readable``: the data is the file's bytes (not so for GNU sparse files)."""

    name: str
    kind: EntryKind
    mode: int
    size: int
    link: str = ""
    readable: bool = True
    typeflag: str = ""


class DataSink(Protocol):
    """Where an entry's data goes when the caller wants it."""

    def feed(self, chunk: bytes) -> None: ...


class TarStream:
    """A tar archive read a chunk at a time. ``on_entry`` is called with each entry's header
    and returns where its data goes (None: skipped). :attr:`finished` turns True at the
    archive's end (two zero blocks)."""

    def __init__(self, on_entry: Callable[[TarHeader], DataSink | None]) -> None:
        self._on_entry = on_entry
        self._buffer = bytearray()
        self._remaining = 0  # data bytes of the current entry still to come
        self._padding = 0  # padding bytes after them
        self._sink: DataSink | None = None
        self._meta: bytearray | None = None  # collecting a GNU long name or PAX header
        self._meta_kind = b""
        self._meta_block = b""
        self._long_name = ""
        self._long_link = ""
        self._pax: dict[str, str] = {}
        self._zero_block = False
        self.finished = False
        self.entries = 0

    @property
    def at_boundary(self) -> bool:
        """Whether the bytes fed so far end between entries (not inside a header, an entry's
        data or its padding): where Go's reader may meet the end of the stream."""
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
        # Go's readHeader: two zero blocks end the archive; one and then more is an error.
        if block.count(0) == BLOCK:
            if self._zero_block:
                self.finished = True
            self._zero_block = True
            return
        if self._zero_block:
            raise TarError("a damaged tar archive (a zero block, then more headers)")
        _check_sum(block)
        typeflag = block[156:157]
        size = _number(block[124:136])
        if typeflag in _META:
            self._start_data(size)
            self._meta, self._meta_kind, self._meta_block = bytearray(), typeflag, block
            if not size:
                self._end_meta()
            return
        header = self._entry(block, typeflag, size)
        self.entries += 1
        self._sink = self._on_entry(header)

    def _start_data(self, size: int) -> None:
        if size < 0:
            raise TarError("a negative size in a tar header")
        self._remaining, self._padding = size, -size % BLOCK

    def _entry(self, block: bytes, typeflag: bytes, size: int) -> TarHeader:
        name = _header_name(block)
        link = _field(block[157:257])
        pax, self._pax = self._pax, {}
        long_name, long_link = self._long_name, self._long_link
        self._long_name = self._long_link = ""
        # mergePAX: a record with an empty value keeps the header's field.
        name = pax.get("path") or name
        link = pax.get("linkpath") or link
        if pax.get("size"):
            size = _pax_number(pax["size"])
        # then the GNU long names, over the PAX records
        name = long_name or name
        link = long_link or link
        sparse = typeflag == b"S"
        major, minor = pax.get("GNU.sparse.major", ""), pax.get("GNU.sparse.minor", "")
        if (major, minor) in _SPARSE_VERSIONS or (
            not major and not minor and pax.get("GNU.sparse.map")
        ):
            sparse = True
            name = pax.get("GNU.sparse.name") or name
        if typeflag == b"\0":
            typeflag = b"5" if name.endswith("/") else b"0"
        self._start_data(0 if typeflag in _HEADER_ONLY else size)
        if typeflag == b"S" and block[482]:
            # The old GNU sparse map continues in extension blocks this reader does not
            # parse: reading on would not see the entries Go's reader sees.
            raise TarError(f"{name}: a GNU sparse file with an extended map, not read")
        kind = _KINDS.get(typeflag, "refused")
        mode = _number(block[100:108]) & 0o7777
        flag = typeflag.decode("latin-1")
        return TarHeader(name, kind, mode, size, link, readable=not sparse, typeflag=flag)

    def _end_meta(self) -> None:
        assert self._meta is not None
        raw, kind, block = bytes(self._meta), self._meta_kind, self._meta_block
        self._meta = None
        if kind == b"L":
            self._long_name = _text(raw.split(b"\0", 1)[0])
        elif kind == b"K":
            self._long_link = _text(raw.split(b"\0", 1)[0])
        elif kind == b"x":
            self._pax = _pax_records(raw)
        else:
            # A global header is an entry of its own (named by its own records, mergePAX),
            # and what meta headers came before it apply to nothing (Go's next() returns).
            records = _pax_records(raw)
            name = records.get("path") or _header_name(block)
            self._pax, self._long_name, self._long_link = {}, "", ""
            self.entries += 1
            self._on_entry(TarHeader(name, "global", 0, 0, typeflag="g"))


def _header_name(block: bytes) -> str:
    """The name field, joined to the prefix as Go's readHeader joins it: USTAR/PAX (magic
    ``ustar\\0``) 155 bytes of prefix, star (and trailer ``tar\\0``) 131; GNU none, unless
    its access or change time does not parse (a file of Go before 1.8: the field is then
    read as a prefix, when ASCII)."""
    name = _field(block[0:100])
    prefix = ""
    if block[257:263] == b"ustar\0":
        prefix = _field(block[345 : 476 if block[508:512] == b"tar\0" else 500])
    elif block[257:265] == b"ustar  \0":
        try:
            for field_ in (block[345:357], block[357:369]):
                if field_[0]:
                    _number(field_)
        except TarError:
            text = _field(block[345:500])
            prefix = text if text.isascii() else ""
    return f"{prefix}/{name}" if prefix else name


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
    """A numeric header field as Go's parseNumeric reads it: base-256 (first byte's high bit
    set; a negative one refused), else octal with NULs and spaces trimmed at both ends, up to
    the first NUL left."""
    if raw and raw[0] & 0x80:
        if raw[0] & 0x40:
            raise TarError("a negative number in a tar header")
        return int.from_bytes(bytes([raw[0] & 0x7F]) + raw[1:], "big")
    text = raw.strip(b" \0").split(b"\0", 1)[0]
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
    """``"%d %s=%s\\n"`` records, each length counting the whole record (Go's
    parsePAXRecord); a later record of a key replaces an earlier one."""
    records: dict[str, str] = {}
    position = 0
    while position < len(raw):
        space = raw.find(b" ", position, position + 21)
        if space < 0:
            raise TarError("a damaged PAX header")
        length_text = raw[position:space]
        if not length_text.isdigit() or int(length_text) < 5:
            raise TarError("a damaged PAX header")
        end = position + int(length_text)
        record = raw[space + 1 : end]
        if end > len(raw) or not record.endswith(b"\n") or b"=" not in record:
            raise TarError("a damaged PAX header")
        key, _, value = record[:-1].partition(b"=")
        # Go's validPAXRecord: a key; no NUL in a path, link path or name, nor in a key.
        if not key or b"\0" in (value if key in _PAX_TEXTS else key):
            raise TarError("a damaged PAX header (an invalid record)")
        records[_text(key)] = _text(value)
        position = end
    return records


# -- one layer ------------------------------------------------------------------------------


@dataclass(frozen=True)
class IndexedEntry:
    """An entry of a layer: its path in the image (``usr/bin/env``, no leading slash; for
    Windows without ``Files/``), kind, mode, size, and link target as written.

    ``ordinal``: its place in the layer (0 first). ``data``: the ordinal of the file whose
    bytes it has: its own for a file, its target's (at the time of the link) for a hard
    link, -1 when that is not known (a hard link to another layer)."""

    path: str
    kind: EntryKind
    mode: int
    size: int = 0
    link: str = ""
    readable: bool = True
    ordinal: int = 0
    data: int = -1


def path_key(path: str, windows: bool) -> str:
    """How a layer keys ``path``: as written, or for Windows without regard to case."""
    return path.casefold() if windows else path


def _normalised(name: str) -> str | None:
    """An archive name as a path from the root, cleaned as containerd cleans it
    (``filepath.Clean``, then ``fs.RootPath``: ``..`` never above the root, so
    ``../bin/app`` is ``bin/app``); None for the root itself."""
    parts: list[str] = []
    for part in name.split("/"):
        if part in ("", "."):
            continue
        if part == "..":
            if parts:
                parts.pop()
            continue
        parts.append(part)
    return "/".join(parts) or None


#: Longest name a runtime can create (Linux's PATH_MAX, less room for its own root
#: directory), and longest component (NAME_MAX): a longer one fails to extract.
MAX_NAME_BYTES = 3840
PATH_MAX = 4096
MAX_COMPONENT_BYTES = 255


@dataclass(frozen=True)
class _Summary:
    """What a layer says of a directory and every directory above it (memoised per layer:
    a search walks paths component by component, so each step costs one lookup, not the
    path's depth). ``nondir``/``whiteout``: one of them is a non-directory entry, or
    whited out; ``hidden``: one hides the layers below (whiteout, opaque, non-directory);
    ``reason``: one is ambiguous; ``cleared``: the last ordinal that replaced one."""

    nondir: bool = False
    whiteout: bool = False
    hidden: bool = False
    reason: str | None = None
    cleared: int = -1


_NOTHING = _Summary()


def _too_long(path: str) -> bool:
    encoded = path.encode("utf-8", "surrogateescape")
    return len(encoded) > MAX_NAME_BYTES or any(
        len(part) > MAX_COMPONENT_BYTES for part in encoded.split(b"/")
    )


def _ancestors(key: str) -> list[str]:
    """``a/b/c`` -> ``["a/b", "a"]``."""
    found = []
    while "/" in key:
        key = key.rpartition("/")[0]
        found.append(key)
    return found


def windows_path(path: str) -> str:
    """A Windows path as kmultiarch's views hold it: ``C:\\app\\app.exe`` -> ``/app/app.exe``
    (the drive letter dropped, backslashes as slashes)."""
    text = path.replace("\\", "/")
    if len(text) >= 2 and text[1] == ":" and text[0].isalpha():
        text = text[2:]
    return text


@dataclass
class LayerIndex:
    """What one layer holds, as far as it has been read (:attr:`complete` once wholly, its
    bytes matching its digest). ``heads`` keeps the first bytes of the files whose data was
    watched, by the file's ordinal (:attr:`IndexedEntry.data`)."""

    digest: str
    windows: bool = False
    entries: dict[str, IndexedEntry] = field(default_factory=dict)
    whiteouts: dict[str, int] = field(default_factory=dict)
    opaque: set[str] = field(default_factory=set)
    #: Directories this layer holds entries under, whether or not it names them itself
    #: (key -> the path as written).
    parents: dict[str, str] = field(default_factory=dict)
    heads: dict[int, FileHead] = field(default_factory=dict)
    #: The files whose heads were read deep (a whole ELF section table: ARM's attributes).
    deep: set[int] = field(default_factory=set)
    #: The last ordinal at which an entry that is not a directory replaced a path (what the
    #: layer put under it before is gone: ``os.RemoveAll``).
    cleared: dict[str, int] = field(default_factory=dict)
    #: The mode of each file (by its ordinal): a hard link's mode is its file's (lchmod).
    modes: dict[int, int] = field(default_factory=dict)
    #: Paths whose content the runtimes do not agree on (or kmultiarch does not follow).
    ambiguous: dict[str, str] = field(default_factory=dict)
    #: Why the whole layer is not followed (an entry containerd refuses or places elsewhere).
    refused: str | None = None
    complete: bool = False
    count: int = 0
    _memo: dict[str, _Summary] = field(default_factory=dict, repr=False)

    def add(self, header: TarHeader) -> IndexedEntry | None:
        """Record ``header``; the entry (its path cleaned), or None for a whiteout, an
        opaque marker, a global header or a name outside the image's file system."""
        ordinal, self.count = self.count, self.count + 1
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
        key = path_key(path, self.windows)
        directory, _, base = path.rpartition("/")
        if header.kind == "global":
            # applyNaive makes its parent (mkparent), removes the path, then ignores it.
            self._ambiguous(key, f"/{path} is named by a PAX global header (containerd removes it)")
            self._note_parents(directory)
            return None
        if header.kind == "refused":
            self.refused = self.refused or (
                f"/{path} has tar type {header.typeflag!r}, which containerd does not extract"
            )
            return None
        if _too_long(path) or (header.kind == "symlink" and _too_long(header.link)):
            # ENAMETOOLONG: containerd cannot create it, and the layer fails to apply.
            self.refused = self.refused or f"/{path[:80]}...: a name longer than Linux allows"
            return None
        if key in self._memo:
            self._memo.clear()  # what is said of a directory above entries changes
        self._check_parents(key, path)
        if base.startswith(WHITEOUT_PREFIX):
            if base == OPAQUE:
                self.opaque.add(path_key(directory, self.windows))
                if path_key(directory, self.windows) in self._memo:
                    self._memo.clear()
            else:
                hidden = f"{directory}/{base[len(WHITEOUT_PREFIX) :]}".lstrip("/")
                hidden_key = path_key(hidden, self.windows)
                if hidden_key in self.entries or hidden_key in self.parents:
                    self._ambiguous(hidden_key, f"/{hidden} is both deleted and added by a layer")
                self.whiteouts[hidden_key] = ordinal
                if hidden_key in self._memo:
                    self._memo.clear()
            self._note_parents(directory)
            return None
        if key in self.whiteouts or self._summary(path_key(directory, self.windows)).whiteout:
            for above in (key, *_ancestors(key)):
                if above in self.whiteouts:
                    self._ambiguous(above, f"/{path} is both deleted and added by a layer")
        if header.kind == "dir":
            if key in self.cleared:
                self._ambiguous(key, f"/{path}: a directory replaces a file in one layer")
        else:
            self.cleared[key] = ordinal
        link, data, mode = header.link, ordinal, header.mode
        if header.kind == "hardlink":
            link, data = self._link_target(path, header.link)
            if data >= 0:
                if (self.modes.get(data, mode) ^ mode) & 0o111:
                    # containerd chmods the shared file to the link's mode (lchmod after
                    # link); Docker's and containers/storage's handleLChmod only when
                    # os.Lstat(hdr.Linkname) succeeds, relative to their working directory.
                    self._ambiguous(
                        key, f"/{path} is a hard link whose execute bits differ from its file's"
                    )
                self.modes[data] = mode
        elif header.kind == "file":
            self.modes[ordinal] = mode
        entry = IndexedEntry(
            path, header.kind, mode, header.size, link, header.readable, ordinal, data
        )
        self.entries[key] = entry
        self._note_parents(directory)
        return entry

    def _check_parents(self, key: str, path: str) -> None:
        """An entry under a path this layer made a symbolic link (``fs.RootPath`` follows
        it: the entry lands elsewhere) or a file (``mkparent`` fails): not followed."""
        if not self._summary(key.rpartition("/")[0]).nondir:
            return
        for above in _ancestors(key):
            entry = self.entries.get(above)
            if entry is not None and entry.kind != "dir":
                self.refused = self.refused or (
                    f"/{path} is under /{entry.path}, which the same layer made a {entry.kind}"
                )
                return

    def _link_target(self, path: str, written: str) -> tuple[str, int]:
        """A hard link's target (cleaned as ``hardlinkRootPath`` cleans it) and the ordinal
        of the file it names now; -1 when that is not a file of this layer."""
        text = written.replace("\\", "/") if self.windows else written
        if self.windows:
            text = text.lstrip("./").partition("/")[2]
        target = _normalised(text) or ""
        key = path_key(target, self.windows)
        entry = self.entries.get(key)
        if key == path_key(path, self.windows):
            entry = None  # removed before it is linked: os.Link fails
        if entry is None or entry.kind not in ("file", "hardlink") or entry.data < 0:
            self._ambiguous(
                path_key(path, self.windows),
                f"/{path} is a hard link to /{target}, not a file of its own layer",
            )
            return target, -1
        if self._deleted(key, entry) or self._summary(key.rpartition("/")[0]).reason:
            self._ambiguous(path_key(path, self.windows), f"/{path} links to a deleted file")
            return target, -1
        return target, entry.data

    def _ambiguous(self, key: str, reason: str) -> None:
        if key not in self.ambiguous:
            self.ambiguous[key] = reason
            if key in self._memo:
                self._memo.clear()

    def _deleted(self, key: str, entry: IndexedEntry) -> bool:
        """Whether a later entry of the layer replaced a directory above ``entry``."""
        return self._summary(key.rpartition("/")[0]).cleared > entry.ordinal

    def _summary(self, directory: str) -> _Summary:
        """What the layer says of ``directory`` (a key) and every directory above it."""
        if not directory:
            return _NOTHING
        found = self._memo.get(directory)
        if found is not None:
            return found
        chain = [directory]
        summary = _NOTHING
        current = directory
        while "/" in current:
            current = current.rpartition("/")[0]
            cached = self._memo.get(current)
            if cached is not None:
                summary = cached
                break
            chain.append(current)
        for key in reversed(chain):
            entry = self.entries.get(key)
            nondir = entry is not None and entry.kind != "dir"
            whiteout = key in self.whiteouts
            summary = _Summary(
                summary.nondir or nondir,
                summary.whiteout or whiteout,
                summary.hidden or whiteout or nondir or key in self.opaque,
                summary.reason or self.ambiguous.get(key),
                max(summary.cleared, self.cleared.get(key, -1)),
            )
            self._memo[key] = summary
        return summary

    def _note_parents(self, directory: str) -> None:
        while directory:
            key = path_key(directory, self.windows)
            if key in self.parents:
                return
            self.parents[key] = directory
            directory = directory.rpartition("/")[0]

    def mode_of(self, entry: IndexedEntry) -> int:
        """The mode the file has once the layer is applied (a later hard link's)."""
        return self.modes.get(entry.data, entry.mode)

    def ambiguity(self, key: str) -> str | None:
        """Why what this layer puts at ``key`` (or above it) is not one known thing."""
        if self.refused is not None:
            return self.refused
        return self.ambiguous.get(key) or self._summary(key.rpartition("/")[0]).reason

    def hides(self, key: str) -> bool:
        """Whether this layer hides ``key`` of the layers below: a whiteout of it or of a
        directory above it, an opaque directory above it, or something not a directory
        above it."""
        return key in self.whiteouts or self._summary(key.rpartition("/")[0]).hidden

    def live(self, key: str) -> IndexedEntry | None:
        """The entry this layer leaves at ``key`` once applied."""
        entry = self.entries.get(key)
        if entry is None or self._deleted(key, entry):
            return None
        return entry


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
    """The answer depends on a layer not read (whole): read ``layer`` (watching ``path``,
    as the image's key for it, and the file of ordinal ``ordinal`` when not -1)."""

    layer: int
    path: str
    ordinal: int = -1


@dataclass(frozen=True)
class Absent:
    """Nothing at ``path`` in the merged view."""

    path: str


@dataclass(frozen=True)
class Ambiguous:
    """The runtimes do not build one known thing at a path: ``reason`` says why."""

    reason: str


Lookup = Located | Pending | Absent | Ambiguous


def lookup(layers: Sequence[LayerIndex], key: str) -> Lookup:
    """What the layers (top first) show at ``key``: the topmost layer leaving an entry there
    wins; a layer hides the ones below by a whiteout, an opaque directory or a non-directory
    above the path; a layer not read whole answers nothing."""
    implicit: int | None = None
    for position, layer in enumerate(layers):
        if not layer.complete:
            return Pending(position, key)
        reason = layer.ambiguity(key)
        if reason is not None:
            return Ambiguous(reason)
        entry = layer.live(key)
        if entry is not None:
            if implicit is not None and entry.kind != "dir":
                # A layer above holds entries under a path that is a link (or a file) here:
                # the naive applier follows the link, the overlay one does not.
                return Ambiguous(
                    f"/{entry.path} is a {entry.kind} in one layer and holds entries of "
                    "a layer above"
                )
            return Located(position, entry)
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
    layers: Sequence[LayerIndex],
    path: str,
    *,
    windows: bool = False,
    check: Callable[[], None] | None = None,
) -> Resolved | Pending | Unresolvable | Ambiguous:
    """Resolve ``path`` (absolute in the image) as the kernel would inside the container:
    each component looked up in the merged view, symbolic links followed (an absolute
    target from the image's root; at most :data:`LINK_LIMIT`), ``..`` never above the root;
    a path longer than PATH_MAX names nothing (``ENAMETOOLONG``). Hard links are files
    (their data is :attr:`IndexedEntry.data`). ``check`` is called every 256 components
    (the run's deadline)."""
    if len(path.encode("utf-8", "surrogateescape")) >= PATH_MAX:
        return Unresolvable(f"{path[:80]}... is longer than Linux allows a path")
    queue = deque(path.split("/"))
    steps = 0
    resolved: list[str] = []
    links: list[str] = []
    located = Located(0, None)  # the root
    while queue:
        part = queue.popleft()
        steps += 1
        if check is not None and not steps % 256:
            check()
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
        if isinstance(found, (Pending, Ambiguous)):
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
