"""Version tags: which tags are newer candidates for an image, nearest first."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kmultiarch.core.images.platform import Platform
from kmultiarch.core.images.reference import ImageRef
from kmultiarch.core.images.upgrades import VersionTag, lacking_platforms, newer_tags

#: Characters of tags, and those a registry may send instead: other scripts' digits, white space,
#: line breaks.
_TAG_LIKE = st.sampled_from(list("0123456789v.-_aZ \n\u0661\uff11\u00b2\U0001d7d9\u2028"))
BASES = ["1", "1.0", "v1.0", "1.0-alpine", "0.0.0.0", "9" * 18]
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


def test_a_tag_of_5000_digits_is_no_version_and_no_crash() -> None:
    """int('9' * 5000) passes Python's int-string limit (4300 digits): the ValueError ended
    report --suggest-upgrades with exit 3."""
    huge = "9" * 5000
    assert VersionTag.parse(huge) is None
    assert VersionTag.parse(f"1.{huge}") is None
    assert newer_tags("1.0", [huge, f"1.{huge}", "1.1"]) == ["1.1"]
    assert newer_tags(huge, ["1.1"]) == []


@pytest.mark.parametrize(
    "tag",
    [
        "5.\u0661",  # ARABIC-INDIC DIGIT ONE
        "\u0665.1",
        "5.\uff11",  # FULLWIDTH DIGIT ONE
        "5.1\u0663",
        "\U0001d7d9.0",  # MATHEMATICAL DOUBLE-STRUCK DIGIT ONE
        "5.1-\u0661",
    ],
)
def test_non_ascii_digits_are_not_version_numbers(tag: str) -> None:
    """'5.' and an Arabic-Indic one was taken for 5.1 and suggested, a tag kmultiarch's own
    reference parser refuses."""
    assert VersionTag.parse(tag) is None
    assert newer_tags("5.0", [tag]) == []


@pytest.mark.parametrize(
    "tag",
    [
        "5." + "1" * 130,  # longer than the 128 characters a tag may have
        "5.1\n",
        "5.1 ",
        "5.1-a_b",  # '_' is a tag character but no suffix one: not a version
    ],
)
def test_only_tags_the_reference_grammar_takes_are_suggested(tag: str) -> None:
    assert newer_tags("5.0", [tag, "5.2"]) == ["5.2"]


@given(st.lists(st.text(alphabet=_TAG_LIKE, max_size=140), max_size=20), st.sampled_from(BASES))
def test_every_suggested_tag_parses_and_nothing_raises(tags: list[str], current: str) -> None:
    for tag in tags:
        VersionTag.parse(tag)
    for suggested in newer_tags(current, tags):
        assert ImageRef.parse(f"registry.test/app:{suggested}").tag == suggested
