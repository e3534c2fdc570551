"""The platform cache on disk: round trip, TTL, corrupted and planted entries, permissions."""

from __future__ import annotations

import pathlib
import stat
from collections.abc import Iterator
from pathlib import Path

import diskcache
import pytest

from kmultiarch.core.images.platform import Platform
from kmultiarch.resolve.cache import (
    CACHE_DIR_ENV,
    DiskCacheBackend,
    MemoryCacheBackend,
    ResolutionCache,
    TagRecord,
    default_cache_dir,
    open_cache,
)

DIGEST = "sha256:" + "a" * 64
OTHER = "sha256:" + "b" * 64
INDEX = "application/vnd.oci.image.index.v1+json"
AMD64 = Platform("linux", "amd64")
ARM64 = Platform("linux", "arm64")
ARM_V7 = Platform("linux", "arm", "v7")
TAG = "docker.io/library/nginx:1.25"


@pytest.fixture
def cache_dir(tmp_path: Path) -> Path:
    return tmp_path / "cache"


@pytest.fixture
def cache(cache_dir: Path) -> Iterator[ResolutionCache]:
    resolution = ResolutionCache(DiskCacheBackend(cache_dir), tag_ttl=60)
    yield resolution
    resolution.close()


def plant(directory: Path, key: str, value: object) -> None:
    """Write with plain diskcache, as another program (or an attacker) would: it pickles."""
    raw = diskcache.Cache(str(directory))
    try:
        raw.set(key, value)
    finally:
        raw.close()


class TouchOnUnpickle:
    """A value whose unpickling creates a file: proof that a cache row ran code."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[object, tuple[object, ...]]:
        return (pathlib.Path.touch, (self.marker,))


# -- round trip -------------------------------------------------------------------------------


def test_platforms_round_trip_and_survive_reopening(cache_dir: Path) -> None:
    first = ResolutionCache(DiskCacheBackend(cache_dir))
    first.put_platforms(DIGEST, INDEX, frozenset({AMD64, ARM64, ARM_V7}))
    record = first.get_platforms(DIGEST)
    assert record is not None
    assert (record.media_type, record.platforms) == (INDEX, frozenset({AMD64, ARM64, ARM_V7}))
    assert first.hits == 1
    first.close()

    again = ResolutionCache(DiskCacheBackend(cache_dir))
    record = again.get_platforms(DIGEST)
    assert record is not None and record.platforms == {AMD64, ARM64, ARM_V7}
    assert again.get_platforms(OTHER) is None
    assert again.hits == 1
    assert again.warnings == []
    again.close()


def test_tags_round_trip(cache: ResolutionCache) -> None:
    assert cache.get_tag(TAG) is None
    cache.put_tag(TAG, DIGEST, now=1000.0)
    assert cache.get_tag(TAG) == TagRecord(DIGEST, 1000.0)
    cache.put_tag(TAG, OTHER, now=2000.0)
    assert cache.get_tag(TAG) == TagRecord(OTHER, 2000.0)


def test_a_tag_checked_at_the_epoch_keeps_its_time(cache: ResolutionCache) -> None:
    cache.put_tag(TAG, DIGEST, now=0.0)
    assert cache.get_tag(TAG) == TagRecord(DIGEST, 0.0)


def test_stored_values_are_json_text(cache_dir: Path, cache: ResolutionCache) -> None:
    cache.put_platforms(DIGEST, INDEX, frozenset({ARM64, AMD64}))
    cache.put_tag(TAG, DIGEST, now=5.0)
    cache.close()
    raw = diskcache.Cache(str(cache_dir))
    try:
        stored = raw.get(f"platforms:{DIGEST}")
        tag = raw.get(f"tag:{TAG}")
    finally:
        raw.close()
    assert isinstance(stored, str) and isinstance(tag, str)
    assert '"platforms": ["linux/amd64", "linux/arm64"]' in stored
    assert '"checkedAt": 5.0' in tag


# -- TTL --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("age", "fresh"),
    [(0.0, True), (59.9, True), (60.0, False), (3600.0, False), (-1.0, False)],
)
def test_tag_freshness(cache: ResolutionCache, age: float, fresh: bool) -> None:
    cache.put_tag(TAG, DIGEST, now=10_000.0)
    record = cache.get_tag(TAG)
    assert record is not None
    assert record.is_fresh(cache.tag_ttl, 10_000.0 + age) is fresh


def test_memory_backend_expires_entries(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = [1000.0]
    monkeypatch.setattr("kmultiarch.resolve.cache.time.time", lambda: clock[0])
    backend = MemoryCacheBackend()
    backend.set("k", {"a": 1}, expire=10)
    backend.set("forever", {"b": 2})
    assert backend.get("k") == {"a": 1}
    clock[0] += 11
    assert backend.get("k") is None
    assert backend.get("forever") == {"b": 2}
    assert backend.clear() == 2 and list(backend.keys()) == []


def test_open_cache_without_disk_is_in_memory(tmp_path: Path) -> None:
    cache = open_cache(tmp_path / "unused", enabled=False, tag_ttl=5)
    assert isinstance(cache.backend, MemoryCacheBackend)
    assert cache.tag_ttl == 5
    assert not (tmp_path / "unused").exists()


def test_default_cache_dir(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv(CACHE_DIR_ENV, str(tmp_path / "explicit"))
    assert default_cache_dir() == tmp_path / "explicit"
    monkeypatch.delenv(CACHE_DIR_ENV)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert default_cache_dir() == tmp_path / "xdg" / "kmultiarch"


# -- corrupted entries ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "stored",
    [
        "not json",
        "[1, 2]",
        '{"mediaType": "x"}',
        '{"mediaType": 5, "platforms": ["linux/amd64"]}',
        '{"mediaType": "x", "platforms": []}',
        '{"mediaType": "x", "platforms": ["linux"]}',
        '{"mediaType": "x", "platforms": 7}',
        b"bytes",
    ],
)
def test_corrupted_platform_entries_are_misses_with_a_warning(
    cache_dir: Path, stored: str | bytes
) -> None:
    DiskCacheBackend(cache_dir).close()
    plant(cache_dir, f"platforms:{DIGEST}", stored)
    cache = ResolutionCache(DiskCacheBackend(cache_dir))
    try:
        assert cache.get_platforms(DIGEST) is None
        assert len(cache.warnings) == 1
        assert f"platforms:{DIGEST}" in cache.warnings[0]
        assert f"platforms:{DIGEST}" not in list(cache.backend.keys())  # dropped
        assert cache.hits == 0
    finally:
        cache.close()


@pytest.mark.parametrize(
    "stored", ['{"digest": 5, "checkedAt": 1}', '{"checkedAt": 1}', '{"digest": "x"}']
)
def test_corrupted_tag_entries_are_misses(cache_dir: Path, stored: str) -> None:
    DiskCacheBackend(cache_dir).close()
    plant(cache_dir, f"tag:{TAG}", stored)
    cache = ResolutionCache(DiskCacheBackend(cache_dir))
    try:
        assert cache.get_tag(TAG) is None
        assert list(cache.backend.keys()) == []
    finally:
        cache.close()


# -- planted pickles --------------------------------------------------------------------------


def test_a_planted_pickled_value_is_refused(cache_dir: Path) -> None:
    DiskCacheBackend(cache_dir).close()
    plant(cache_dir, f"platforms:{DIGEST}", {"mediaType": INDEX, "platforms": ["linux/amd64"]})
    plant(cache_dir, f"tag:{TAG}", {"digest": DIGEST, "checkedAt": 1.0})
    cache = ResolutionCache(DiskCacheBackend(cache_dir))
    try:
        assert cache.get_platforms(DIGEST) is None
        assert cache.get_tag(TAG) is None
        assert len(cache.warnings) == 2
        assert all("unreadable" in warning for warning in cache.warnings)
    finally:
        cache.close()


def test_a_planted_pickle_is_never_unpickled(tmp_path: Path, cache_dir: Path) -> None:
    marker = tmp_path / "pwned"
    DiskCacheBackend(cache_dir).close()
    plant(cache_dir, f"platforms:{DIGEST}", TouchOnUnpickle(marker))
    plant(cache_dir, f"tag:{TAG}", TouchOnUnpickle(marker))
    cache = ResolutionCache(DiskCacheBackend(cache_dir))
    try:
        assert cache.get_platforms(DIGEST) is None
        assert cache.get_tag(TAG) is None
        assert len(cache.warnings) == 2
        assert list(cache.backend.keys()) == []  # the refused rows are dropped
    finally:
        cache.close()
    assert not marker.exists()

    # Control: the same row read by plain diskcache does run the payload.
    control_dir, control_marker = tmp_path / "control", tmp_path / "control-marker"
    plant(control_dir, "key", TouchOnUnpickle(control_marker))
    raw = diskcache.Cache(str(control_dir))
    try:
        raw.get("key")
    finally:
        raw.close()
    assert control_marker.exists()


def test_a_pickle_met_when_opening_moves_the_cache_aside(tmp_path: Path, cache_dir: Path) -> None:
    marker = tmp_path / "pwned-on-open"
    DiskCacheBackend(cache_dir).close()
    plant(cache_dir, "__probe__", TouchOnUnpickle(marker))
    backend = DiskCacheBackend(cache_dir)
    try:
        assert len(backend.warnings) == 1 and "moved it to" in backend.warnings[0]
        assert list(backend.keys()) == []
    finally:
        backend.close()
    assert not marker.exists()


def test_pickled_keys_are_skipped_when_listing(tmp_path: Path, cache_dir: Path) -> None:
    marker = tmp_path / "pwned-by-key"
    backend = DiskCacheBackend(cache_dir)
    backend.set(f"platforms:{DIGEST}", {"mediaType": INDEX, "platforms": ["linux/amd64"]})
    backend.close()
    plant(cache_dir, ("tuple", "key"), "x")  # type: ignore[arg-type]
    plant(cache_dir, TouchOnUnpickle(marker), "x")  # type: ignore[arg-type]
    backend = DiskCacheBackend(cache_dir)
    try:
        assert list(backend.keys()) == [f"platforms:{DIGEST}"]
        assert backend.clear() == 3
    finally:
        backend.close()
    assert not marker.exists()


def test_the_backend_refuses_to_store_anything_but_json_objects(cache_dir: Path) -> None:
    backend = DiskCacheBackend(cache_dir)
    try:
        backend.set("k", {"a": [1, "b"]})
        assert backend.get("k") == {"a": [1, "b"]}
        with pytest.raises(TypeError):
            backend.set("bad", {"a": object()})
    finally:
        backend.close()


# -- the directory ----------------------------------------------------------------------------


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_cache_dir_is_created_private(tmp_path: Path) -> None:
    directory = tmp_path / "deep" / "er" / "cache"
    DiskCacheBackend(directory).close()
    assert directory.is_dir()
    assert _mode(directory) == 0o700


def test_an_existing_cache_dir_keeps_its_mode(cache_dir: Path) -> None:
    """kmultiarch never changes the permissions of a directory it did not create (issue 13)."""
    cache_dir.mkdir(mode=0o755)
    cache_dir.chmod(0o755)
    DiskCacheBackend(cache_dir).close()
    assert _mode(cache_dir) == 0o755


def test_a_garbage_database_is_moved_aside_with_a_warning(cache_dir: Path) -> None:
    cache_dir.mkdir()
    (cache_dir / "cache.db").write_bytes(b"this is not an SQLite database\n" * 64)
    backend = DiskCacheBackend(cache_dir)
    try:
        assert len(backend.warnings) == 1
        assert "could not be read" in backend.warnings[0]
        moved = [p for p in cache_dir.parent.iterdir() if p.name.startswith("cache.corrupt-")]
        assert len(moved) == 1
        assert str(moved[0]) in backend.warnings[0]
        assert (moved[0] / "cache.db").read_bytes().startswith(b"this is not an SQLite")
        assert _mode(cache_dir) == 0o700
        cache = ResolutionCache(backend)
        cache.put_platforms(DIGEST, INDEX, frozenset({ARM64}))
        record = cache.get_platforms(DIGEST)
        assert record is not None and record.platforms == {ARM64}
    finally:
        backend.close()


@pytest.mark.parametrize("mode", [2, 3])
def test_a_row_that_names_no_file_is_ignored_with_a_warning(cache_dir: Path, mode: int) -> None:
    """A damaged row (file storage mode, no file name) crashed the run with a TypeError."""
    import sqlite3

    first = ResolutionCache(DiskCacheBackend(cache_dir))
    first.put_platforms(DIGEST, INDEX, frozenset({AMD64}))
    first.close()
    with sqlite3.connect(cache_dir / "cache.db") as connection:
        connection.execute("UPDATE Cache SET mode = ?, filename = NULL", (mode,))
    again = ResolutionCache(DiskCacheBackend(cache_dir))
    assert again.get_platforms(DIGEST) is None
    assert len(again.warnings) == 1 and "unreadable" in again.warnings[0]
    again.close()
