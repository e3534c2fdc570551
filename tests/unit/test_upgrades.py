"""Version tags: which tags are newer candidates for an image, nearest first."""

from __future__ import annotations

import pytest

from kmultiarch.core.platform import Platform
from kmultiarch.core.upgrades import VersionTag, lacking_platforms, newer_tags

TAGS = ["latest", "1.0", "1.1", "1.2-alpine", "1.10", "1.9", "2.0", "v2.1", "1.3-alpine", "main"]


@pytest.mark.parametrize(
    ("current", "expected"),
    [
        ("1.0", ["1.1", "1.9", "1.10", "2.0"]),  # 1.10 after 1.9: numbers, not text
        ("1.9", ["1.10", "2.0"]),
        ("1.2-alpine", ["1.3-alpine"]),  # a variant keeps its suffix
        ("v2.0", ["v2.1"]),
        ("2.0", []),
        ("latest", []),  # not a version: nothing is "newer"
        ("1", ["1.1", "1.9", "1.10", "2.0"]),
    ],
)
def test_newer_tags_nearest_first(current: str, expected: list[str]) -> None:
    assert newer_tags(current, TAGS) == expected


def test_newer_tags_are_bounded() -> None:
    tags = [f"1.{minor}" for minor in range(100)]
    assert newer_tags("1.0", tags, limit=3) == ["1.1", "1.2", "1.3"]


@pytest.mark.parametrize("tag", ["", "v", "1.", "1..2", "1.2.3.4.5", "-1", "1.0-", "sha-abc"])
def test_not_version_tags(tag: str) -> None:
    assert VersionTag.parse(tag) is None


def test_lacking_platforms() -> None:
    amd64, arm64 = Platform("linux", "amd64"), Platform("linux", "arm64")
    assert lacking_platforms([amd64], [amd64, arm64]) == (arm64,)
    assert lacking_platforms([Platform("linux", "arm64", "v8"), amd64], [amd64, arm64]) == ()
