"""The tar reader against Go's archive/tar (src/archive/tar/reader.go: next, readHeader,
handleRegularFile, mergePAX), which containerd and CRI-O extract layers with (issue 28, item
3): hand-made archives mixing what tarfile will not write. Only the reader's original API is
used, so each test runs against the code before too."""

from __future__ import annotations

import pytest
from support.tarheaders import BLOCK, END, data, entries, header, long_name, pax

from kmultiarch.core.verification.layers import TarError, TarStream

# -- the reader, as Go's ---------------------------------------------------------------------


def test_a_gnu_long_name_wins_over_a_pax_path_whichever_comes_first() -> None:
    for meta in (
        pax({"path": "bin/app"}) + long_name("opt/decoy"),
        long_name("opt/decoy") + pax({"path": "bin/app"}),
    ):
        (entry,) = entries(meta + header("short", size=0) + END)
        assert entry.name == "opt/decoy"
    (link,) = entries(pax({"linkpath": "/pax"}) + long_name("/gnu", b"K") + header("l", b"2") + END)
    assert link.link == "/gnu"


def test_an_empty_pax_value_keeps_the_headers_field() -> None:
    (entry,) = entries(pax({"path": ""}) + header("bin/app") + END)
    assert entry.name == "bin/app"


def test_a_header_only_type_carries_no_data_whatever_its_size_says() -> None:
    # Go's isHeaderOnlyType: the 512 bytes after a symlink claiming 512 are the next header.
    archive = header("bin/sh", b"2", 512, link="busybox") + header("bin/app", size=0) + END
    assert [e.name for e in entries(archive)] == ["bin/sh", "bin/app"]


def test_the_prefix_field_joins_ustar_names_only() -> None:
    (ustar,) = entries(header("app", prefix="usr/bin") + END)
    assert ustar.name == "usr/bin/app"
    times = "00000000001\x0000000000002\x00usr/bin"  # a GNU atime and ctime, then text
    (gnu,) = entries(header("app", magic=b"ustar  \x00", prefix=times) + END)
    assert gnu.name == "app"


def test_type_nul_with_a_trailing_slash_is_a_directory_and_type_0_is_not() -> None:
    found = entries(header("etc/", b"\0") + header("opt/", b"0") + END)
    assert [(e.name, e.kind) for e in found] == [("etc/", "dir"), ("opt/", "file")]


def test_numbers_are_read_as_gos_parse_numeric() -> None:
    (entry,) = entries(
        header("f", size_field=b"\x00\x00\x00" + b"00000005\x00") + data(b"hello") + END
    )
    assert entry.size == 5
    with pytest.raises(TarError):
        entries(header("f", size_field=b"\xff" * 12) + END)


def test_a_zero_block_then_more_headers_is_damage_as_in_go() -> None:
    with pytest.raises(TarError):
        entries(header("a") + bytes(BLOCK) + header("b") + END)
    stream = TarStream(lambda _h: None)
    stream.feed(header("a") + bytes(BLOCK))  # one zero block, then the end: done
    assert stream.at_boundary


def test_a_global_header_is_an_entry_and_drops_pending_meta_headers() -> None:
    found = entries(long_name("bin/evil") + pax({"path": "bin/app"}, b"g") + header("bin/ok") + END)
    assert [(e.name, e.kind) for e in found] == [("bin/app", "global"), ("bin/ok", "file")]


def test_a_gnu_sparse_pax_name_wins() -> None:
    (entry,) = entries(
        pax({"GNU.sparse.major": "1", "GNU.sparse.minor": "0", "GNU.sparse.name": "bin/app"})
        + header("GNUSparseFile.0/app")
        + END
    )
    assert (entry.name, entry.readable) == ("bin/app", False)


def test_a_gnu_header_whose_times_do_not_parse_has_a_prefix_as_in_go() -> None:
    # Go's readHeader: a GNU header whose atime/ctime fields fail to parse was written by a
    # Go before 1.8, which put a USTAR prefix there.
    (entry,) = entries(header("app", magic=b"ustar  \x00", prefix="usr/bin") + END)
    assert entry.name == "usr/bin/app"


def test_a_pax_path_with_a_nul_is_damage_as_in_go() -> None:
    # Go's parsePAXRecord refuses it (validPAXRecord); cut at the NUL it would name bin/app.
    with pytest.raises(TarError):
        entries(pax({"path": "bin/app\x00.txt"}) + header("x") + END)
