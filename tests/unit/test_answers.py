"""The one grammar every answer meets (kmultiarch/core/images/answers.py): tables of good and bad
digests, platform lists and media types."""

from __future__ import annotations

import pytest

from kmultiarch.core.images.answers import (
    MAX_PLATFORMS,
    AnswerError,
    checked_digest,
    checked_media_type,
    checked_platforms,
)
from kmultiarch.core.images.platform import Platform

SHA256 = "sha256:" + "0" * 64
SHA512 = "sha512:" + "f" * 128


@pytest.mark.parametrize("digest", [SHA256, SHA512])
def test_digests_kmultiarch_can_verify_pass(digest: str) -> None:
    assert checked_digest(digest) == digest


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        ("sha256:zz", "64 lowercase hex digits"),
        ("sha256:" + "A" * 64, "64 lowercase hex digits"),
        ("sha256:" + "0" * 63, "64 lowercase hex digits"),
        ("md5:" + "0" * 32, "unsupported digest algorithm"),
        ("0" * 64, "is not a digest"),
        ("", "is not a digest"),
        (None, "missing"),
        (42, "expected a string, found int"),
    ],
)
def test_bad_digests_are_refused_saying_why(value: object, reason: str) -> None:
    with pytest.raises(AnswerError) as raised:
        checked_digest(value)
    assert raised.value.field == "digest"
    assert reason in raised.value.reason


def test_platforms_are_parsed_and_normalised() -> None:
    assert checked_platforms(["linux/amd64", "linux/arm64/v8", "linux/arm64"]) == frozenset(
        {Platform("linux", "amd64"), Platform("linux", "arm64")}
    )
    assert checked_platforms([Platform("linux", "arm", "v7")]) == {Platform("linux", "arm", "v7")}


@pytest.mark.parametrize(
    ("values", "field", "reason"),
    [
        ("linux/amd64", "platforms", "expected a list, found str"),
        (None, "platforms", "expected a list, found NoneType"),
        ([], "platforms", "empty"),
        ([1], "platforms[0]", "expected a string"),
        (["linux/amd64", "unknown/unknown"], "platforms[1]", "is not a platform an image runs"),
        (["linux/amd64\n::error::x"], "platforms[0]", "invalid platform"),
        (["linux"], "platforms[0]", "expected os/architecture"),
        (["linux/" + "a" * 200], "platforms[0]", "longer than 128"),
        (["linux/amd64"] * (MAX_PLATFORMS + 1), "platforms", f"more than {MAX_PLATFORMS}"),
        ([Platform("linux", "x86_64")], "platforms[0]", "is not a normalised platform"),
    ],
)
def test_bad_platform_lists_are_refused_naming_the_item(
    values: object, field: str, reason: str
) -> None:
    with pytest.raises(AnswerError) as raised:
        checked_platforms(values)
    assert raised.value.field == field
    assert reason in raised.value.reason


def test_an_empty_platform_list_is_an_image_without_platforms_only_when_said() -> None:
    assert checked_platforms([], metadata_only=True) == frozenset()


@pytest.mark.parametrize(
    "media_type",
    [
        None,
        "application/vnd.oci.image.index.v1+json",
        "application/vnd.docker.distribution.manifest.list.v2+json",
    ],
)
def test_media_types_pass(media_type: str | None) -> None:
    assert checked_media_type(media_type) == media_type


@pytest.mark.parametrize(
    "media_type", ["", "json", "a/b\n::error::x", "a/b c", "/b", 3, "a/" + "b" * 200]
)
def test_bad_media_types_are_refused(media_type: object) -> None:
    with pytest.raises(AnswerError) as raised:
        checked_media_type(media_type)
    assert raised.value.field == "mediaType"
