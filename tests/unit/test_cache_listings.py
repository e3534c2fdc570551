"""Which index lists a platform manifest, in the cache (issue 36, item 10): ``NAME@DIGEST``
without a tag is a platform pin when the cache knows an index of NAME listing DIGEST, as when
the lock does (issue 30 asked for both). A listing is written for each labelled entry of an
index kmultiarch read, read back checked as every answer is, and a planted one is a miss."""

from __future__ import annotations

from pathlib import Path

import pytest

from kmultiarch.core.images.platform import Platform
from kmultiarch.core.images.reference import ImageRef
from kmultiarch.core.resolution import DigestPin, Resolution
from kmultiarch.resolve.cache import (
    DiskCacheBackend,
    Listing,
    MemoryCacheBackend,
    ResolutionCache,
)
from kmultiarch.resolve.pins import listed_pins

INDEX = "sha256:" + "a" * 64
AMD64_CHILD = "sha256:" + "1" * 64
ARM64_CHILD = "sha256:" + "2" * 64
ATTESTATION = "sha256:" + "3" * 64
AMD64, ARM64 = Platform("linux", "amd64"), Platform("linux", "arm64")
NAME = "registry.example/team/app"
MANIFEST = "application/vnd.oci.image.manifest.v1+json"


@pytest.fixture
def cache(tmp_path: Path) -> ResolutionCache:
    return ResolutionCache(DiskCacheBackend(tmp_path / "cache"))


def _bare(digest: str, media_type: str = MANIFEST, name: str = NAME) -> Resolution:
    reference = ImageRef.parse(f"{name}@{digest}")
    return Resolution(reference, frozenset({AMD64}), digest, media_type, "cache")


def test_a_listing_round_trips_through_the_disk(tmp_path: Path, cache: ResolutionCache) -> None:
    entries = ((AMD64_CHILD, AMD64), (ARM64_CHILD, ARM64), (ATTESTATION, None))
    cache.put_listings(NAME, INDEX, entries, "1.4")
    cache.close()
    warm = ResolutionCache(DiskCacheBackend(tmp_path / "cache"))
    wanted = [(NAME, AMD64_CHILD), (NAME, ARM64_CHILD), (NAME, ATTESTATION)]
    assert warm.listings(wanted) == {
        (NAME, AMD64_CHILD): Listing(INDEX, AMD64, "1.4"),
        (NAME, ARM64_CHILD): Listing(INDEX, ARM64, "1.4"),
    }
    # another repository's digest is not this one's
    assert warm.listings([("registry.example/other", AMD64_CHILD)]) == {}


def test_a_bare_digest_of_a_listed_manifest_is_a_platform_pin_of_its_index(
    cache: ResolutionCache,
) -> None:
    cache.put_listings(NAME, INDEX, ((AMD64_CHILD, AMD64), (ARM64_CHILD, ARM64)), "1.4")
    pinned = _bare(AMD64_CHILD)
    assert listed_pins(cache, [pinned]) == {pinned.reference: DigestPin("1.4", INDEX, AMD64)}


def test_an_index_read_by_digest_names_itself_in_the_pin(cache: ResolutionCache) -> None:
    cache.put_listings(NAME, INDEX, ((AMD64_CHILD, AMD64),))
    pinned = _bare(AMD64_CHILD)
    assert listed_pins(cache, [pinned]) == {pinned.reference: DigestPin(INDEX, INDEX, AMD64)}


def test_what_is_not_a_bare_platform_manifest_is_not_looked_up(cache: ResolutionCache) -> None:
    cache.put_listings(NAME, INDEX, ((AMD64_CHILD, AMD64),), "1.4")
    index_type = "application/vnd.oci.image.index.v1+json"
    tagged = Resolution(ImageRef.parse(f"{NAME}:1.4@{AMD64_CHILD}"), digest=AMD64_CHILD)
    override = Resolution(ImageRef.parse(f"{NAME}@{AMD64_CHILD}"), source="override")
    assert listed_pins(cache, [_bare(AMD64_CHILD, index_type), tagged, override]) == {}


@pytest.mark.parametrize(
    "record",
    [
        {"v": 1, "index": "sha256:zz", "platform": "linux/amd64"},
        {"v": 1, "index": INDEX, "platform": "unknown/unknown"},
        {"v": 1, "index": INDEX, "platform": 7},
        {"v": 1, "index": INDEX, "platform": "linux/amd64", "tag": "\x1b[31m"},
        {"v": 1, "platform": "linux/amd64"},
    ],
)
def test_a_planted_listing_is_a_miss(record: dict[str, object]) -> None:
    backend = MemoryCacheBackend()
    backend.set(f"listed:{NAME}@{AMD64_CHILD}", record)
    assert ResolutionCache(backend).listings([(NAME, AMD64_CHILD)]) == {}


def test_attestations_and_the_index_itself_are_not_listed(cache: ResolutionCache) -> None:
    unknown = Platform("unknown", "unknown")
    cache.put_listings(NAME, INDEX, ((ATTESTATION, unknown), (INDEX, AMD64)), "1.4")
    assert list(cache.backend.keys()) == []
