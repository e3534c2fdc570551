"""Image references: docker/distribution normalisation, parse/format round trip, bad input."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kmultiarch.core.images.reference import ImageRef
from kmultiarch.errors import InvalidReferenceError, KmultiarchError

SHA = "sha256:" + "0123456789abcdef" * 4
SHA512 = "sha512:" + "ab" * 64
HEX64 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

# text -> (registry, repository, tag, digest), per distribution's reference/normalize.go
GOOD = [
    ("nginx", ("docker.io", "library/nginx", "latest", None)),
    ("nginx:1.25", ("docker.io", "library/nginx", "1.25", None)),
    ("library/nginx", ("docker.io", "library/nginx", "latest", None)),
    ("docker.io/nginx", ("docker.io", "library/nginx", "latest", None)),
    ("index.docker.io/nginx", ("docker.io", "library/nginx", "latest", None)),
    ("index.docker.io/library/nginx:1", ("docker.io", "library/nginx", "1", None)),
    ("registry-1.docker.io/bitnami/redis:7", ("docker.io", "bitnami/redis", "7", None)),
    ("bitnami/redis", ("docker.io", "bitnami/redis", "latest", None)),
    # no '.', ':' and not localhost: a Docker Hub namespace, not a host
    ("my-registry/app", ("docker.io", "my-registry/app", "latest", None)),
    ("ghcr.io/org/app:v1.2.3", ("ghcr.io", "org/app", "v1.2.3", None)),
    ("quay.io/a/b/c:tag_1", ("quay.io", "a/b/c", "tag_1", None)),
    ("localhost/app", ("localhost", "app", "latest", None)),
    ("localhost:5000/app:dev", ("localhost:5000", "app", "dev", None)),
    ("127.0.0.1:5000/ns/app", ("127.0.0.1:5000", "ns/app", "latest", None)),
    ("[::1]:5000/app", ("[::1]:5000", "app", "latest", None)),
    ("example.com:443/x", ("example.com:443", "x", "latest", None)),
    # an upper-case first component is a host (distribution's rule); host names are
    # case-insensitive, so one that stays a host in lower case is written so (one cache and
    # lock entry for LOCALHOST:5000 and localhost:5000); Intranet, folded, would not be a host
    ("Registry.Example.com/app", ("registry.example.com", "app", "latest", None)),
    ("LOCALHOST:5000/app:1", ("localhost:5000", "app", "1", None)),
    ("LocalHost/app", ("localhost", "app", "latest", None)),
    ("Docker.IO/nginx", ("docker.io", "library/nginx", "latest", None)),
    ("Intranet/app", ("Intranet", "app", "latest", None)),
    # one component with a port-looking suffix is a tag, as docker reads it
    ("localhost:5000", ("docker.io", "library/localhost", "5000", None)),
    ("a.b/c__d/e-f--g.h_i", ("a.b", "c__d/e-f--g.h_i", "latest", None)),
    (f"nginx@{SHA}", ("docker.io", "library/nginx", None, SHA)),
    (f"nginx:1.25@{SHA}", ("docker.io", "library/nginx", "1.25", SHA)),
    (f"ghcr.io/o/a@{SHA512}", ("ghcr.io", "o/a", None, SHA512)),
    ("nginx:" + "A" * 128, ("docker.io", "library/nginx", "A" * 128, None)),
    ("nginx:_underscore", ("docker.io", "library/nginx", "_underscore", None)),
    (f"library/{HEX64}", ("docker.io", f"library/{HEX64}", "latest", None)),
]

BAD = [
    "",
    " nginx",
    "nginx ",
    "ngi nx",
    "nginx\t",
    "nginx:",
    "nginx@",
    "nginx:1@",
    "nginx@sha256:abc",
    "nginx@sha256:" + "0123456789ABCDEF" * 4,
    f"nginx@{SHA}@{SHA}",
    "nginx@notadigest",
    "Nginx",
    "org/App",
    "nginx:-tag",
    "nginx:.tag",
    "nginx:" + "a" * 129,
    "nginx:é",
    "nginx:v٣",
    "nginx:a/b",
    HEX64,
    "foo//bar",
    "foo/",
    "/foo",
    "example.com/",
    "exa_mple.com/app",
    "-bad.com/app",
    "bad-.com/app",
    "foo/bar_",
    "foo/-bar",
    "foo/bar___baz",
    "foo/.bar",
    "ghcr.io/" + "a" * 250,
]


@pytest.mark.parametrize(("text", "expected"), GOOD)
def test_parse_normalises(text: str, expected: tuple[str, str, str | None, str | None]) -> None:
    ref = ImageRef.parse(text)
    assert (ref.registry, ref.repository, ref.tag, ref.digest) == expected


@pytest.mark.parametrize(("text", "expected"), GOOD)
def test_format_is_canonical_and_round_trips(
    text: str, expected: tuple[str, str, str | None, str | None]
) -> None:
    registry, repository, tag, digest = expected
    canonical = f"{registry}/{repository}"
    canonical += f":{tag}" if tag else ""
    canonical += f"@{digest}" if digest else ""
    ref = ImageRef.parse(text)
    assert str(ref) == canonical
    assert ImageRef.parse(str(ref)) == ref


@pytest.mark.parametrize("text", BAD)
def test_bad_references_are_refused_naming_the_reference(text: str) -> None:
    with pytest.raises(InvalidReferenceError) as caught:
        ImageRef.parse(text)
    assert repr(text) in str(caught.value)
    assert isinstance(caught.value, KmultiarchError)
    assert isinstance(caught.value, ValueError)


@pytest.mark.parametrize("value", [None, 5, b"nginx"])
def test_non_strings_are_refused(value: object) -> None:
    with pytest.raises(InvalidReferenceError):
        ImageRef.parse(value)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("text", "api_reference", "pinned", "name"),
    [
        ("nginx", "latest", False, "docker.io/library/nginx"),
        ("nginx:1.25", "1.25", False, "docker.io/library/nginx"),
        (f"nginx@{SHA}", SHA, True, "docker.io/library/nginx"),
        # name:tag@digest: the digest wins
        (f"ghcr.io/o/a:1@{SHA}", SHA, True, "ghcr.io/o/a"),
    ],
)
def test_what_the_registry_is_asked_for(
    text: str, api_reference: str, pinned: bool, name: str
) -> None:
    ref = ImageRef.parse(text)
    assert ref.api_reference == api_reference
    assert ref.is_pinned is pinned
    assert ref.name == name


def test_with_digest_keeps_the_tag_and_pins() -> None:
    pinned = ImageRef.parse("ghcr.io/o/a:1").with_digest(SHA)
    assert pinned == ImageRef("ghcr.io", "o/a", "1", SHA)
    assert str(pinned) == f"ghcr.io/o/a:1@{SHA}"
    assert pinned.api_reference == SHA


def test_aliases_of_docker_hub_are_the_same_reference() -> None:
    spellings = [
        "nginx",
        "library/nginx",
        "docker.io/nginx",
        "docker.io/library/nginx:latest",
        "index.docker.io/library/nginx",
    ]
    assert len({ImageRef.parse(text) for text in spellings}) == 1


# -- properties ------------------------------------------------------------------------------

_alnum = st.text("abcdefghijklmnopqrstuvwxyz0123456789", min_size=1, max_size=6)
_separator = st.sampled_from([".", "_", "__", "-", "--"])


@st.composite
def _path_component(draw: st.DrawFn) -> str:
    parts = draw(st.lists(_alnum, min_size=1, max_size=3))
    text = parts[0]
    for part in parts[1:]:
        text += draw(_separator) + part
    return text


_LETTERS = "abcdefghijklmnopqrstuvwxyz"
_ALNUM = _LETTERS + _LETTERS.upper() + "0123456789"
_domain_label = st.builds(
    lambda first, middle, last: first + (middle + last if middle else ""),
    st.sampled_from(_ALNUM),
    st.text(_ALNUM + "-", max_size=6),
    st.sampled_from(_ALNUM),
)


@st.composite
def _registry(draw: st.DrawFn) -> str:
    kind = draw(st.sampled_from(["none", "dotted", "localhost", "ip", "hub"]))
    if kind == "none":
        return ""
    if kind == "hub":
        return draw(st.sampled_from(["docker.io", "index.docker.io", "registry-1.docker.io"]))
    if kind == "localhost":
        host = "localhost"
    elif kind == "ip":
        host = ".".join(str(draw(st.integers(0, 255))) for _ in range(4))
    else:
        host = ".".join(draw(st.lists(_domain_label, min_size=2, max_size=3)))
    if draw(st.booleans()):
        host += f":{draw(st.integers(1, 65535))}"
    return host


_tag = st.builds(str.__add__, st.sampled_from(_ALNUM + "_"), st.text(_ALNUM + "_.-", max_size=20))
_digest = st.builds(
    lambda hexes: "sha256:" + hexes, st.text("0123456789abcdef", min_size=64, max_size=64)
)


@st.composite
def _reference_text(draw: st.DrawFn) -> str:
    registry = draw(_registry())
    components = draw(st.lists(_path_component(), min_size=1, max_size=3))
    if not registry and len(components) > 1 and "." in components[0]:
        registry = "docker.io"  # else the first component is read as a host, rightly
    path = "/".join(components)
    text = f"{registry}/{path}" if registry else path
    if draw(st.booleans()):
        text += ":" + draw(_tag)
    if draw(st.booleans()):
        text += "@" + draw(_digest)
    return text


@given(_reference_text())
def test_parse_format_round_trip(text: str) -> None:
    ref = ImageRef.parse(text)
    assert ImageRef.parse(str(ref)) == ref
    assert str(ImageRef.parse(str(ref))) == str(ref)
    assert ref.tag is not None or ref.digest is not None
    assert ref.repository.endswith(text.partition("@")[0].rpartition("/")[2].partition(":")[0])
    if "@" in text:
        assert ref.digest == text.rpartition("@")[2]


@given(st.text(max_size=80))
def test_parse_raises_only_its_own_error(text: str) -> None:
    try:
        ref = ImageRef.parse(text)
    except InvalidReferenceError:
        return
    assert ImageRef.parse(str(ref)) == ref
