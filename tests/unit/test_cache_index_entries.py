"""An index's entries in its platform record (issue 30: a platform pin answered warm): kept
beside the platforms, checked when read as every answer is, bounded on write as on read."""

from __future__ import annotations

from pathlib import Path

import pytest

from kmultiarch.core.images.answers import MAX_PLATFORMS
from kmultiarch.core.images.platform import Platform
from kmultiarch.resolve.cache import DiskCacheBackend, ResolutionCache

INDEX_DIGEST = "sha256:" + "a" * 64
INDEX = "application/vnd.oci.image.index.v1+json"
AMD64, ARM64 = Platform("linux", "amd64"), Platform("linux", "arm64")


def child(number: int) -> str:
    return f"sha256:{number:064x}"


@pytest.fixture
def cache(tmp_path: Path) -> ResolutionCache:
    return ResolutionCache(DiskCacheBackend(tmp_path / "cache"))


def test_the_entries_round_trip_in_order_with_unlabelled_ones(
    tmp_path: Path, cache: ResolutionCache
) -> None:
    entries = ((child(1), AMD64), (child(2), ARM64), (child(3), None))
    cache.put_platforms(INDEX_DIGEST, INDEX, frozenset({AMD64, ARM64}), entries)
    cache.close()
    warm = ResolutionCache(DiskCacheBackend(tmp_path / "cache"))
    record = warm.get_platforms(INDEX_DIGEST)
    assert record is not None and record.children == entries
    assert record.platforms == frozenset({AMD64, ARM64})
    assert warm.warnings == []


def test_a_record_without_entries_reads_as_before(cache: ResolutionCache) -> None:
    cache.put_platforms(INDEX_DIGEST, INDEX, frozenset({AMD64}))
    record = cache.get_platforms(INDEX_DIGEST)
    assert record is not None and record.children is None


@pytest.mark.parametrize(
    "children",
    [
        "sha256:x",
        [{"digest": "sha256:zz", "platform": "linux/amd64"}],
        [{"digest": child(1), "platform": "unknown/unknown"}],
        [{"digest": child(1), "platform": 7}],
        ["linux/amd64"],
        [{"digest": child(n), "platform": "linux/amd64"} for n in range(MAX_PLATFORMS + 1)],
    ],
)
def test_planted_entries_are_a_miss_with_a_warning(
    cache: ResolutionCache, children: object
) -> None:
    cache.backend.set(
        "platforms:" + INDEX_DIGEST,
        {"v": 1, "mediaType": INDEX, "platforms": ["linux/amd64"], "children": children},
    )
    assert cache.get_platforms(INDEX_DIGEST) is None
    assert any("corrupted" in warning for warning in cache.warnings)


def test_more_entries_than_a_record_holds_are_not_written(
    tmp_path: Path, cache: ResolutionCache
) -> None:
    """Bounded on write as on read: the platforms are kept, the entries left out (the tag is
    asked again), and no warm run reads the record as damage."""
    entries = tuple((child(n), AMD64) for n in range(MAX_PLATFORMS + 1))
    cache.put_platforms(INDEX_DIGEST, INDEX, frozenset({AMD64}), entries)
    cache.close()
    warm = ResolutionCache(DiskCacheBackend(tmp_path / "cache"))
    record = warm.get_platforms(INDEX_DIGEST)
    assert record is not None and record.children is None
    assert warm.warnings == []
