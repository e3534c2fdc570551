"""Platforms: containerd-style normalisation, parse/format round trip, which image runs where."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kmultiarch.core.images.platform import Platform, format_platforms
from kmultiarch.errors import InvalidPlatformError, KmultiarchError

# text -> canonical form (REFERENCE.md section 1, containerd platforms normalisation)
GOOD = [
    ("linux/amd64", "linux/amd64"),
    ("linux/x86_64", "linux/amd64"),
    ("linux/x86-64", "linux/amd64"),
    ("linux/amd64/v1", "linux/amd64"),
    ("linux/amd64/v3", "linux/amd64/v3"),
    ("linux/aarch64", "linux/arm64"),
    ("linux/arm64/v8", "linux/arm64"),
    ("linux/arm64/8", "linux/arm64"),
    ("linux/aarch64/v8", "linux/arm64"),
    ("linux/arm64/v9", "linux/arm64/v9"),
    ("linux/arm", "linux/arm/v7"),
    ("linux/armhf", "linux/arm/v7"),
    ("linux/armel", "linux/arm/v6"),
    ("linux/arm/v6", "linux/arm/v6"),
    ("linux/arm/7", "linux/arm/v7"),
    ("linux/arm/v5", "linux/arm/v5"),
    ("linux/i386", "linux/386"),
    ("linux/i686", "linux/386"),
    ("linux/386", "linux/386"),
    ("Linux/AMD64", "linux/amd64"),
    (" linux/amd64 ", "linux/amd64"),
    ("linux/ppc64le", "linux/ppc64le"),
    ("linux/s390x", "linux/s390x"),
    ("linux/riscv64", "linux/riscv64"),
    ("darwin/arm64", "darwin/arm64"),
    ("macos/arm64", "darwin/arm64"),
    ("windows/amd64", "windows/amd64"),
    ("windows/amd64:10.0.17763.6659", "windows/amd64:10.0.17763.6659"),
    ("windows(10.0.17763)/amd64", "windows/amd64:10.0.17763"),
    ("unknown/unknown", "unknown/unknown"),
]

BAD = [
    "",
    "   ",
    "linux",
    "linux/",
    "/amd64",
    "linux//v7",
    "linux/amd64/v8/extra",
    "linux/amd 64",
    "lin ux/amd64",
    "linux/amd64/v@",
    "linux/amd64:abc",
    "windows/amd64:10..0",
    "windows/amd64:10.0.",
    "linux/amd64:10:0",
    "linux/amd64(1)",
    "linux/Ärm64",
]


@pytest.mark.parametrize(("text", "canonical"), GOOD)
def test_parse_normalises(text: str, canonical: str) -> None:
    platform = Platform.parse(text)
    assert str(platform) == canonical
    assert Platform.parse(canonical) == platform


@pytest.mark.parametrize("text", BAD)
def test_bad_platforms_are_refused_naming_the_text(text: str) -> None:
    with pytest.raises(InvalidPlatformError) as caught:
        Platform.parse(text)
    assert repr(text) in str(caught.value)
    assert isinstance(caught.value, KmultiarchError)


@pytest.mark.parametrize("value", [None, 3, b"linux/amd64"])
def test_non_strings_are_refused(value: object) -> None:
    with pytest.raises(InvalidPlatformError):
        Platform.parse(value)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("parts", "expected"),
    [
        (("linux", "amd64"), Platform("linux", "amd64")),
        (("linux", "x86_64", "", ""), Platform("linux", "amd64")),
        (("linux", "arm"), Platform("linux", "arm", "v7")),
        (("linux", "arm", "6"), Platform("linux", "arm", "v6")),
        (("linux", "armhf"), Platform("linux", "arm", "v7")),
        (("linux", "armel"), Platform("linux", "arm", "v6")),
        (("linux", "arm64", "v8"), Platform("linux", "arm64")),
        (("linux", "aarch64", "V8"), Platform("linux", "arm64")),
        (("LINUX ", " AMD64"), Platform("linux", "amd64")),
        (("windows", "amd64", "", "10.0.20348"), Platform("windows", "amd64", "", "10.0.20348")),
    ],
)
def test_create_normalises_parts(parts: tuple[str, ...], expected: Platform) -> None:
    assert Platform.create(*parts) == expected


@pytest.mark.parametrize(
    "parts",
    [("", "amd64"), ("linux", ""), ("linux", "amd64", "v 2"), ("windows", "amd64", "", "x")],
)
def test_create_refuses_bad_parts(parts: tuple[str, ...]) -> None:
    with pytest.raises(InvalidPlatformError):
        Platform.create(*parts)


@pytest.mark.parametrize(
    ("text", "unknown"),
    [("unknown/unknown", True), ("linux/unknown", True), ("linux/amd64", False)],
)
def test_is_unknown_marks_attestations(text: str, unknown: bool) -> None:
    assert Platform.parse(text).is_unknown is unknown


# (image platform, node platform, runs)
RUNS_ON = [
    ("linux/amd64", "linux/amd64", True),
    ("linux/amd64", "linux/arm64", False),
    ("linux/arm64", "linux/amd64", False),
    ("linux/amd64", "windows/amd64", False),
    ("linux/aarch64", "linux/arm64", True),
    # arm/v7 is not arm64 (REFERENCE.md)
    ("linux/arm/v7", "linux/arm64", False),
    ("linux/arm64", "linux/arm/v7", False),
    # a node without variant (labels carry none) takes every variant
    ("linux/arm/v6", "linux/arm", True),
    ("linux/amd64/v3", "linux/amd64", True),
    # with a variant, older variants of the architecture run
    ("linux/arm/v6", "linux/arm/v7", True),
    ("linux/arm/v7", "linux/arm/v6", False),
    ("linux/amd64/v2", "linux/amd64/v3", True),
    ("linux/amd64/v3", "linux/amd64/v2", False),
    # no variant on amd64/arm64 is the baseline (v1, v8): it runs on later variants
    ("linux/amd64", "linux/amd64/v3", True),
    ("linux/arm64", "linux/arm64/v9", True),
    # os.version: same major.minor.build
    ("windows/amd64:10.0.17763.6659", "windows/amd64:10.0.17763", True),
    ("windows/amd64:10.0.17763.6659", "windows/amd64:10.0.17763.1", True),
    ("windows/amd64:10.0.17763.6659", "windows/amd64:10.0.20348", False),
    ("windows/amd64:10.0.17763.6659", "windows/amd64", True),
    ("windows/amd64", "windows/amd64:10.0.20348", True),
]


@pytest.mark.parametrize(("image", "node", "runs"), RUNS_ON)
def test_runs_on(image: str, node: str, runs: bool) -> None:
    assert Platform.parse(image).runs_on(Platform.parse(node)) is runs


def test_format_platforms_is_sorted_and_names_the_empty_set() -> None:
    platforms = {Platform.parse("linux/arm64"), Platform.parse("linux/amd64")}
    assert format_platforms(platforms) == "linux/amd64, linux/arm64"
    assert format_platforms(frozenset()) == "(none)"


def test_platforms_are_hashable_values() -> None:
    assert len({Platform.parse("linux/aarch64"), Platform.parse("linux/arm64/v8")}) == 1


# -- properties ------------------------------------------------------------------------------

_token = st.text("abcdefghijklmnopqrstuvwxyz0123456789_.-", min_size=1, max_size=10)
_arch = st.one_of(
    st.sampled_from(["amd64", "x86_64", "arm64", "aarch64", "arm", "armhf", "armel", "i386"]),
    _token,
)
_variant = st.one_of(st.sampled_from(["", "v1", "v5", "v6", "v7", "v8", "8", "7"]), _token)
_os_version = st.one_of(
    st.just(""),
    st.lists(st.integers(0, 99999), min_size=1, max_size=4).map(
        lambda parts: ".".join(map(str, parts))
    ),
)


@given(
    st.sampled_from(["linux", "windows", "darwin", "freebsd"]) | _token,
    _arch,
    _variant,
    _os_version,
)
def test_parse_format_round_trip(os: str, arch: str, variant: str, os_version: str) -> None:
    try:
        platform = Platform.create(os, arch, variant, os_version)
    except InvalidPlatformError:
        return
    assert Platform.parse(str(platform)) == platform
    assert (
        Platform.create(platform.os, platform.architecture, platform.variant, platform.os_version)
        == platform
    )


@given(st.text(max_size=40))
def test_parse_raises_only_its_own_error_and_is_a_fixed_point(text: str) -> None:
    try:
        platform = Platform.parse(text)
    except InvalidPlatformError:
        return
    assert Platform.parse(str(platform)) == platform


@given(_arch, _variant)
def test_an_image_runs_on_its_own_platform(arch: str, variant: str) -> None:
    try:
        platform = Platform.create("linux", arch, variant)
    except InvalidPlatformError:
        return
    assert platform.runs_on(platform)
    assert platform.runs_on(Platform(platform.os, platform.architecture))
