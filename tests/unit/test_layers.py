"""kmultiarch.core.verification.layers: the incremental tar reader (against Python's tarfile, with
hypothesis), one layer's index (whiteouts, opaque directories, Windows' Files/), and the
merged view's lookups and path resolution (tables of hand-made layers)."""

from __future__ import annotations

import io
import tarfile

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kmultiarch.core.verification.layers import (
    LINK_LIMIT,
    Absent,
    LayerIndex,
    Located,
    Pending,
    Resolved,
    TarError,
    TarHeader,
    TarStream,
    Unresolvable,
    lookup,
    resolve,
    windows_path,
)


class Collect:
    """Every entry and all its data, as TarStream hands them over."""

    def __init__(self) -> None:
        self.entries: list[tuple[TarHeader, bytearray]] = []

    def __call__(self, header: TarHeader) -> Collect:
        self.entries.append((header, bytearray()))
        return self

    def feed(self, chunk: bytes) -> None:
        self.entries[-1][1].extend(chunk)


def read_all(archive: bytes, chunks: list[int]) -> Collect:
    collect = Collect()
    stream = TarStream(collect)
    position, index = 0, 0
    while position < len(archive) and not stream.finished:
        size = chunks[index % len(chunks)]
        stream.feed(archive[position : position + size])
        position, index = position + size, index + 1
    assert stream.finished
    return collect


_NAME_PART = st.text(
    alphabet=st.characters(blacklist_categories=("Cs", "Cc"), blacklist_characters="/\0"),
    min_size=1,
    max_size=40,
).filter(lambda part: part not in (".", ".."))
_PATH = st.lists(_NAME_PART, min_size=1, max_size=6).map("/".join)


@st.composite
def archives(draw: st.DrawFn) -> tuple[bytes, list[tuple[str, str, int, str, bytes]]]:
    """A tar archive tarfile writes (ustar, GNU or PAX), and what it holds."""
    tar_format = draw(st.sampled_from([tarfile.GNU_FORMAT, tarfile.PAX_FORMAT]))
    expected = []
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tar_format) as archive:
        for _ in range(draw(st.integers(0, 8))):
            name = draw(_PATH)
            kind = draw(st.sampled_from(["file", "dir", "symlink", "hardlink"]))
            info = tarfile.TarInfo(name)
            info.mode = draw(st.integers(0, 0o7777))
            data = b""
            link = ""
            if kind == "file":
                data = draw(st.binary(max_size=3000))
                info.size = len(data)
            elif kind == "dir":
                info.type = tarfile.DIRTYPE
            else:
                link = draw(_PATH)
                info.type = tarfile.SYMTYPE if kind == "symlink" else tarfile.LNKTYPE
                info.linkname = link
            archive.addfile(info, io.BytesIO(data) if data else None)
            expected.append((name, kind, info.mode, link, data))
    return buffer.getvalue(), expected


@settings(max_examples=150, deadline=None)
@given(archive=archives(), chunks=st.lists(st.integers(1, 2000), min_size=1, max_size=10))
def test_the_reader_reads_what_tarfile_writes(
    archive: tuple[bytes, list[tuple[str, str, int, str, bytes]]], chunks: list[int]
) -> None:
    raw, expected = archive
    found = read_all(raw, chunks)
    assert [
        (h.name.rstrip("/") if h.kind == "dir" else h.name, h.kind, h.mode, h.link, bytes(d))
        for h, d in found.entries
    ] == expected


def test_the_reader_refuses_what_is_not_tar() -> None:
    with pytest.raises(TarError, match="not a tar archive"):
        TarStream(Collect()).feed(b"\x1f\x8b" + bytes(510))
    with pytest.raises(TarError):
        TarStream(Collect()).feed(b"hello world".ljust(512, b"x"))


def test_the_reader_knows_where_an_archive_was_cut() -> None:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        info = tarfile.TarInfo("big")
        info.size = 5000
        archive.addfile(info, io.BytesIO(bytes(5000)))
    stream = TarStream(Collect())
    stream.feed(buffer.getvalue()[:2000])
    assert not stream.at_boundary and not stream.finished
    stream.feed(buffer.getvalue()[2000:])
    assert stream.finished


def test_base_256_sizes_and_sparse_files() -> None:
    block = bytearray(tarfile.TarInfo("huge").tobuf(format=tarfile.GNU_FORMAT))
    block[124:136] = b"\x80" + (9 << 30).to_bytes(11, "big")
    block[148:156] = b" " * 8
    block[148:156] = f"{sum(block):06o}\0 ".encode()
    collect = Collect()
    TarStream(lambda header: collect(header) and None).feed(bytes(block))
    assert collect.entries[0][0].size == 9 << 30
    sparse = bytearray(block)
    sparse[124:136] = b"00000000000\0"
    sparse[156:157] = b"S"
    sparse[148:156] = b" " * 8
    sparse[148:156] = f"{sum(sparse):06o}\0 ".encode()
    collect = Collect()
    TarStream(collect).feed(bytes(sparse) + bytes(1024))
    assert not collect.entries[0][0].readable


# -- layers and the merged view -------------------------------------------------------------


def file(name: str, mode: int = 0o755) -> TarHeader:
    return TarHeader(name, "file", mode, 10)


def directory(name: str) -> TarHeader:
    return TarHeader(name, "dir", 0o755, 0)


def symlink(name: str, target: str) -> TarHeader:
    return TarHeader(name, "symlink", 0o777, 0, target)


def built(*headers: TarHeader, complete: bool = True, windows: bool = False) -> LayerIndex:
    layer = LayerIndex(f"sha256:{len(headers):064x}", windows=windows)
    for header in headers:
        layer.add(header)
    layer.complete = complete
    return layer


def test_whiteouts_and_opaque_markers_are_kept_apart() -> None:
    layer = built(
        file("./app/.wh.server"),
        file("etc/.wh..wh..opq"),
        file("/usr/bin/tool"),
        file(".wh.root-file"),
    )
    assert set(layer.entries) == {"usr/bin/tool"}
    assert set(layer.whiteouts) == {"app/server", "root-file"}
    assert layer.opaque == {"etc"}
    assert layer.hides("app/server") and layer.hides("etc/passwd")
    assert layer.hides("root-file")
    assert not layer.hides("etc") and not layer.hides("app") and not layer.hides("usr/bin/tool")
    assert {"usr", "usr/bin", "app", "etc"} <= set(layer.parents)


def test_a_windows_layer_keeps_files_and_folds_case() -> None:
    layer = built(
        file("Files/App/Server.EXE"),
        file("Hives/Software_Delta"),
        file("UtilityVM/Files/x.exe"),
        file("Files/App/.wh.Old.exe"),
        windows=True,
    )
    assert set(layer.entries) == {"app/server.exe"}
    assert layer.entries["app/server.exe"].path == "App/Server.EXE"
    assert set(layer.whiteouts) == {"app/old.exe"}
    assert windows_path("C:\\App\\server.exe") == "/App/server.exe"
    assert windows_path("server.exe") == "server.exe"


TOP = built(file("app/server"), file("etc/.wh..wh..opq"), file(".wh.opt"), file("bin/extra"))
BOTTOM = built(
    file("app/server"),
    file("app/helper"),
    file("etc/passwd", 0o644),
    file("opt/tool"),
    directory("bin"),
    file("bin/busybox"),
)


@pytest.mark.parametrize(
    ("path", "layer", "kind"),
    [
        ("app/server", 0, "file"),  # the upper layer's wins
        ("app/helper", 1, "file"),
        ("etc/passwd", None, None),  # hidden by the opaque directory above
        ("opt/tool", None, None),  # its directory deleted above
        ("opt", None, None),
        ("bin", 1, "dir"),  # named below, holding entries above too
        ("app", 0, "implicit"),
        ("nothing", None, None),
    ],
)
def test_lookup_in_the_merged_view(path: str, layer: int | None, kind: str | None) -> None:
    found = lookup([TOP, BOTTOM], path)
    if layer is None:
        assert found == Absent(path)
        return
    assert isinstance(found, Located) and found.layer == layer
    assert (found.entry.kind if found.entry else "implicit") == kind


def test_a_layer_not_read_whole_answers_nothing() -> None:
    # A later entry of the layer may replace any it showed: it must be read to its end.
    partial = built(file("app/server"), complete=False)
    assert lookup([partial, BOTTOM], "app/server") == Pending(0, "app/server")
    assert lookup([partial, BOTTOM], "app/helper") == Pending(0, "app/helper")
    assert lookup([TOP, partial], "app/helper") == Pending(1, "app/helper")


LINKS = built(
    directory("bin"),
    file("bin/busybox"),
    symlink("bin/sh", "busybox"),
    symlink("usr/bin/env", "/bin/busybox"),
    symlink("usr/local/bin/tool", "../../bin/env"),
    symlink("lib", "usr/lib"),
    file("usr/lib/ld.so"),
    symlink("loop/a", "b"),
    symlink("loop/b", "a"),
    symlink("escape", "../../../../bin/busybox"),
    symlink("dangling", "/nowhere"),
    file("etc/hosts", 0o644),
)


@pytest.mark.parametrize(
    ("path", "resolved", "links"),
    [
        ("/bin/sh", "/bin/busybox", ("/bin/sh",)),
        ("/usr/local/bin/tool", "/bin/busybox", ("/usr/local/bin/tool", "/usr/bin/env")),
        ("/lib/ld.so", "/usr/lib/ld.so", ("/lib",)),
        ("/bin/../bin/./sh", "/bin/busybox", ("/bin/sh",)),
        ("/escape", "/bin/busybox", ("/escape",)),  # .. stops at the image's root
        ("/../../bin/busybox", "/bin/busybox", ()),
    ],
)
def test_resolve_follows_links_inside_the_image(
    path: str, resolved: str, links: tuple[str, ...]
) -> None:
    found = resolve([LINKS], path)
    assert isinstance(found, Resolved)
    assert (found.path, found.links) == (resolved, links)


@pytest.mark.parametrize(
    ("path", "reason"),
    [
        ("/loop/a", f"more than {LINK_LIMIT} symbolic links"),
        ("/dangling", "/nowhere does not exist"),
        ("/etc/hosts/x", "/etc/hosts is not a directory"),
        ("/missing/x", "/missing does not exist"),
    ],
)
def test_resolve_says_why_a_path_names_nothing(path: str, reason: str) -> None:
    found = resolve([LINKS], path)
    assert isinstance(found, Unresolvable)
    assert reason in found.reason


def test_links_resolve_across_layers_top_first() -> None:
    top = built(symlink("usr/local/bin/tool", "/opt/current"))
    middle = built(symlink("opt/current", "../bin/busybox"))
    bottom = built(file("bin/busybox"))
    found = resolve([top, middle, bottom], "/usr/local/bin/tool")
    assert isinstance(found, Resolved) and found.located.layer == 2
    assert found.links == ("/usr/local/bin/tool", "/opt/current")
    waiting = resolve([top, built(complete=False), bottom], "/usr/local/bin/tool")
    assert waiting == Pending(1, "usr")  # the top layer does not name /usr: the next may


def test_hard_links_name_an_earlier_entry_of_the_same_layer() -> None:
    layer = built(
        file("bin/busybox"),
        TarHeader("bin/server", "hardlink", 0o755, 0, "./bin/busybox"),
        TarHeader("bin/broken", "hardlink", 0o755, 0, "bin/none"),
    )
    assert layer.entries["bin/server"].data == layer.entries["bin/busybox"].ordinal
    assert layer.entries["bin/broken"].data == -1
    assert "bin/broken" in layer.ambiguous


def test_windows_paths_resolve_without_regard_to_case() -> None:
    layer = built(file("Files/App/Server.EXE"), windows=True)
    found = resolve([layer], "/app/SERVER.exe", windows=True)
    assert isinstance(found, Resolved) and found.path == "/App/Server.EXE"  # as written
