"""Cached manifest lists and platform sets are bounded on write as on read (issue 28, item 10).

An index of 300 manifests: its list was cached whole but read back capped at 256, so every
warm run warned "corrupted", deleted the entry and asked the registry again. What is over the
cap is now not stored at all: a cold and a warm run behave the same, without a warning."""

from __future__ import annotations

from pathlib import Path

from kmultiarch.core.images.answers import MAX_PLATFORMS
from kmultiarch.core.images.platform import Platform
from kmultiarch.resolve.cache import DiskCacheBackend, ResolutionCache
from kmultiarch.resolve.verifycache import IndexChild, VerificationCache

INDEX_DIGEST = "sha256:" + "a" * 64
INDEX = "application/vnd.oci.image.index.v1+json"


def platforms(count: int) -> list[Platform]:
    return [Platform("linux", "amd64", f"v{number + 2}") for number in range(count)]


def children(count: int) -> tuple[IndexChild, ...]:
    return tuple(
        IndexChild(platform, f"sha256:{number + 1:064x}")
        for number, platform in enumerate(platforms(count))
    )


def test_an_index_of_300_manifests_is_not_reported_corrupted_on_every_warm_run(
    tmp_path: Path,
) -> None:
    cold = ResolutionCache(DiskCacheBackend(tmp_path / "cache"))
    VerificationCache(cold).put_children(INDEX_DIGEST, children(300))
    cold.put_platforms(INDEX_DIGEST, INDEX, frozenset(platforms(300)))
    cold.close()
    warm = ResolutionCache(DiskCacheBackend(tmp_path / "cache"))
    assert VerificationCache(warm).children(INDEX_DIGEST) is None
    assert warm.get_platforms(INDEX_DIGEST) is None
    assert [w for w in warm.warnings if "corrupted" in w] == []
    warm.close()


def test_a_manifest_list_at_the_cap_is_cached_and_read_back_whole(tmp_path: Path) -> None:
    cold = ResolutionCache(DiskCacheBackend(tmp_path / "cache"))
    listed = children(MAX_PLATFORMS)
    VerificationCache(cold).put_children(INDEX_DIGEST, listed)
    cold.put_platforms(INDEX_DIGEST, INDEX, frozenset(platforms(MAX_PLATFORMS)))
    cold.close()
    warm = ResolutionCache(DiskCacheBackend(tmp_path / "cache"))
    assert VerificationCache(warm).children(INDEX_DIGEST) == listed
    record = warm.get_platforms(INDEX_DIGEST)
    assert record is not None and record.platforms == frozenset(platforms(MAX_PLATFORMS))
    assert warm.warnings == []
    warm.close()
