"""Registry JSON -> platforms: media types, indexes, attestations, configs, digests."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kmultiarch.core.images import oci as manifest
from kmultiarch.core.images.oci import (
    ParsedManifest,
    compute_digest,
    parse_config_platform,
    parse_manifest,
    verify_digest,
)
from kmultiarch.core.images.platform import Platform
from kmultiarch.errors import KmultiarchError, ManifestError

D1 = "sha256:" + "1" * 64
D2 = "sha256:" + "2" * 64
D3 = "sha256:" + "3" * 64
D4 = "sha256:" + "4" * 64
SOURCE = "ghcr.io/o/app:1"

OCI_INDEX = "application/vnd.oci.image.index.v1+json"
DOCKER_LIST = "application/vnd.docker.distribution.manifest.list.v2+json"
OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
DOCKER_V2 = "application/vnd.docker.distribution.manifest.v2+json"
DOCKER_V1 = "application/vnd.docker.distribution.manifest.v1+json"
DOCKER_V1_SIGNED = "application/vnd.docker.distribution.manifest.v1+prettyjws"


@pytest.mark.parametrize(
    ("constant", "media_type"),
    [
        ("OCI_INDEX", OCI_INDEX),
        ("DOCKER_MANIFEST_LIST", DOCKER_LIST),
        ("OCI_MANIFEST", OCI_MANIFEST),
        ("DOCKER_MANIFEST", DOCKER_V2),
        ("DOCKER_SCHEMA1", DOCKER_V1),
        ("DOCKER_SCHEMA1_SIGNED", DOCKER_V1_SIGNED),
        ("OCI_CONFIG", "application/vnd.oci.image.config.v1+json"),
        ("DOCKER_CONFIG", "application/vnd.docker.container.image.v1+json"),
    ],
)
def test_media_types_are_spelt_as_the_specs(constant: str, media_type: str) -> None:
    assert getattr(manifest, constant) == media_type


def test_accept_header_names_every_modern_manifest_type_at_full_weight() -> None:
    offered = {}
    for item in manifest.MANIFEST_ACCEPT.split(","):
        media_type, _, params = item.strip().partition(";")
        offered[media_type] = float(params.partition("=")[2]) if params else 1.0
    for media_type in (OCI_INDEX, DOCKER_LIST, OCI_MANIFEST, DOCKER_V2):
        assert offered[media_type] == 1.0
    assert offered[DOCKER_V1] < 1.0


def _entry(digest: str, platform: dict[str, Any] | None, **extra: Any) -> dict[str, Any]:
    entry: dict[str, Any] = {"mediaType": OCI_MANIFEST, "digest": digest, "size": 500}
    if platform is not None:
        entry["platform"] = platform
    entry.update(extra)
    return entry


def _body(document: object) -> bytes:
    return json.dumps(document).encode()


BUILDX_INDEX = {
    "schemaVersion": 2,
    "mediaType": OCI_INDEX,
    "manifests": [
        _entry(D1, {"architecture": "amd64", "os": "linux"}),
        _entry(D2, {"architecture": "aarch64", "os": "linux", "variant": "v8"}),
        _entry(D3, {"architecture": "arm", "os": "linux"}),
        # BuildKit provenance: unknown/unknown with the attestation annotation
        _entry(
            D4,
            {"architecture": "unknown", "os": "unknown"},
            annotations={
                "vnd.docker.reference.digest": D1,
                "vnd.docker.reference.type": "attestation-manifest",
            },
        ),
    ],
}


def _platforms(parsed: ParsedManifest) -> list[str | None]:
    return [str(e.platform) if e.platform else None for e in parsed.entries]


def test_index_entries_are_normalised_and_attestations_dropped() -> None:
    parsed = parse_manifest(_body(BUILDX_INDEX), OCI_INDEX, source=SOURCE)
    assert parsed.kind == "index"
    assert parsed.media_type == OCI_INDEX
    assert _platforms(parsed) == ["linux/amd64", "linux/arm64", "linux/arm/v7"]
    assert [e.digest for e in parsed.entries] == [D1, D2, D3]


def test_docker_manifest_list() -> None:
    document = {
        "schemaVersion": 2,
        "mediaType": DOCKER_LIST,
        "manifests": [
            _entry(D1, {"architecture": "amd64", "os": "linux"}, mediaType=DOCKER_V2),
            _entry(D2, {"architecture": "s390x", "os": "linux"}, mediaType=DOCKER_V2),
            _entry(
                D3,
                {"architecture": "amd64", "os": "windows", "os.version": "10.0.17763.6659"},
                mediaType=DOCKER_V2,
            ),
        ],
    }
    parsed = parse_manifest(_body(document), DOCKER_LIST, source=SOURCE)
    assert parsed.kind == "index"
    assert _platforms(parsed) == ["linux/amd64", "linux/s390x", "windows/amd64:10.0.17763.6659"]
    assert {e.media_type for e in parsed.entries} == {DOCKER_V2}


@pytest.mark.parametrize(
    "entry",
    [
        # annotated as an attestation: dropped whatever platform it claims
        _entry(
            D2,
            {"architecture": "amd64", "os": "linux"},
            annotations={"vnd.docker.reference.type": "attestation-manifest"},
        ),
        # unknown/unknown without annotation: not runnable either
        _entry(D2, {"architecture": "unknown", "os": "unknown"}),
    ],
)
def test_non_runnable_entries_are_not_platforms(entry: dict[str, Any]) -> None:
    document = {
        "mediaType": OCI_INDEX,
        "manifests": [_entry(D1, {"architecture": "arm64", "os": "linux"}), entry],
    }
    parsed = parse_manifest(_body(document), None, source=SOURCE)
    assert _platforms(parsed) == ["linux/arm64"]


def test_index_entry_details() -> None:
    document = {
        "mediaType": OCI_INDEX,
        "manifests": [
            _entry(D1, None, mediaType=OCI_INDEX),  # a nested index
            {"digest": D2},  # no mediaType, no platform
            _entry(
                D3,
                {"architecture": "arm64", "os": "linux"},
                annotations={"vnd.docker.reference.type": "something-else"},
            ),
        ],
    }
    parsed = parse_manifest(_body(document), None, source=SOURCE)
    nested, bare, annotated = parsed.entries
    assert nested.is_index and nested.platform is None
    assert not bare.is_index and bare.media_type == OCI_MANIFEST and bare.platform is None
    assert annotated.platform == Platform("linux", "arm64")


def test_image_manifest_names_its_config() -> None:
    document = {
        "schemaVersion": 2,
        "mediaType": DOCKER_V2,
        "config": {"mediaType": "application/vnd.docker.container.image.v1+json", "digest": D1},
        "layers": [],
    }
    parsed = parse_manifest(_body(document), DOCKER_V2, source=SOURCE)
    assert (parsed.kind, parsed.media_type, parsed.config_digest, parsed.entries) == (
        "image",
        DOCKER_V2,
        D1,
        (),
    )


INDEX_WITHOUT_TYPE = {
    "schemaVersion": 2,
    "manifests": [_entry(D1, {"os": "linux", "architecture": "amd64"})],
}
IMAGE_WITHOUT_TYPE = {"schemaVersion": 2, "config": {"digest": D1}, "layers": []}


@pytest.mark.parametrize(
    ("document", "content_type", "kind", "media_type"),
    [
        # the body's mediaType wins over a wrong header
        ({**INDEX_WITHOUT_TYPE, "mediaType": DOCKER_LIST}, OCI_MANIFEST, "index", DOCKER_LIST),
        ({**IMAGE_WITHOUT_TYPE, "mediaType": OCI_MANIFEST}, OCI_INDEX, "image", OCI_MANIFEST),
        # without one in the body, the header decides (parameters and case ignored)
        (INDEX_WITHOUT_TYPE, f"{DOCKER_LIST}; charset=utf-8", "index", DOCKER_LIST),
        (IMAGE_WITHOUT_TYPE, DOCKER_V2.upper(), "image", DOCKER_V2),
        # without either, the shape decides
        (INDEX_WITHOUT_TYPE, None, "index", OCI_INDEX),
        (IMAGE_WITHOUT_TYPE, "application/json", "image", OCI_MANIFEST),
    ],
)
def test_media_type_resolution(
    document: dict[str, Any], content_type: str | None, kind: str, media_type: str
) -> None:
    parsed = parse_manifest(_body(document), content_type, source=SOURCE)
    assert (parsed.kind, parsed.media_type) == (kind, media_type)


BAD_MANIFESTS = [
    (b"not json", "not valid JSON"),
    (b"\xff\xfe\xfa", "not valid JSON"),
    (b"", "not valid JSON"),
    (b"[]", "not a JSON object"),
    (b'"text"', "not a JSON object"),
    (b"[" * 100_000 + b"]" * 100_000, "nested too deeply"),
    (_body({"schemaVersion": 1, "name": "x", "fsLayers": []}), "schema 1"),
    (_body({"mediaType": DOCKER_V1_SIGNED, "config": {"digest": D1}}), "schema 1"),
    (_body({"mediaType": "application/vnd.example+json"}), "unsupported manifest media type"),
    (_body({"schemaVersion": 2}), "unsupported manifest media type"),
    (_body({"mediaType": OCI_MANIFEST, "layers": []}), "no config digest"),
    (_body({"mediaType": OCI_MANIFEST, "config": {"digest": 7}}), "no config digest"),
    (_body({"mediaType": OCI_MANIFEST, "config": "sha256:x"}), "no config digest"),
    (
        _body({"mediaType": OCI_MANIFEST, "config": {"digest": "sha256:ab"}}),
        "not a supported digest",
    ),
    (_body({"mediaType": OCI_INDEX}), "no 'manifests' list"),
    (_body({"mediaType": OCI_INDEX, "manifests": {}}), "no 'manifests' list"),
    (_body({"mediaType": OCI_INDEX, "manifests": ["x"]}), "entry 0 has no digest"),
    (_body({"mediaType": OCI_INDEX, "manifests": [{"digest": D1}, {}]}), "entry 1 has no digest"),
    (
        _body({"mediaType": OCI_INDEX, "manifests": [{"digest": "md5:" + "a" * 32}]}),
        "not a supported digest",
    ),
    (
        _body({"mediaType": OCI_INDEX, "manifests": [{"digest": "sha256:" + "A" * 64}]}),
        "not a supported digest",
    ),
    (
        _body({"mediaType": OCI_INDEX, "manifests": [{"digest": "sha256:" + "a" * 63}]}),
        "not a supported digest",
    ),
    (
        _body({"mediaType": OCI_INDEX, "manifests": [{"digest": "sha512:" + "a" * 64}]}),
        "not a supported digest",
    ),
    (
        _body({"mediaType": OCI_INDEX, "manifests": [{"digest": "sha256"}]}),
        "not a supported digest",
    ),
    (
        _body({"mediaType": OCI_INDEX, "manifests": [{"digest": D1, "platform": "linux/amd64"}]}),
        "malformed platform",
    ),
    (
        _body({"mediaType": OCI_INDEX, "manifests": [{"digest": D1, "platform": {"os": "linux"}}]}),
        "lacks os or architecture",
    ),
    (
        _body(
            {
                "mediaType": OCI_INDEX,
                "manifests": [{"digest": D1, "platform": {"os": "linux", "architecture": "a b"}}],
            }
        ),
        "entry 0",
    ),
]


@pytest.mark.parametrize(("body", "reason"), BAD_MANIFESTS)
def test_bad_manifests_are_manifest_errors_naming_the_image(body: bytes, reason: str) -> None:
    with pytest.raises(ManifestError) as caught:
        parse_manifest(body, None, source=SOURCE)
    message = str(caught.value)
    assert message.startswith(f"{SOURCE}: ")
    assert reason in message


def test_sha512_digests_are_accepted() -> None:
    digest = "sha512:" + "ab" * 64
    document = {"mediaType": OCI_INDEX, "manifests": [_entry(digest, None)]}
    assert parse_manifest(_body(document), None, source=SOURCE).entries[0].digest == digest


# -- image configs ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("config", "expected"),
    [
        ({"architecture": "amd64", "os": "linux", "rootfs": {}}, "linux/amd64"),
        ({"architecture": "arm64", "os": "linux", "variant": "v8"}, "linux/arm64"),
        ({"architecture": "arm", "os": "linux", "variant": "v6"}, "linux/arm/v6"),
        ({"architecture": "arm", "os": "linux"}, "linux/arm/v7"),
        ({"architecture": "x86_64", "os": "linux", "variant": None}, "linux/amd64"),
        (
            {"architecture": "amd64", "os": "windows", "os.version": "10.0.17763.6659"},
            "windows/amd64:10.0.17763.6659",
        ),
    ],
)
def test_config_platform(config: dict[str, Any], expected: str) -> None:
    assert str(parse_config_platform(_body(config), source=SOURCE)) == expected


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        (b"{", "not valid JSON"),
        (b"[1]", "not a JSON object"),
        (_body({"architecture": "amd64"}), "no 'os'"),
        (_body({"os": "linux", "architecture": ""}), "no 'architecture'"),
        (_body({"os": "linux", "architecture": 64}), "no 'architecture'"),
        (_body({"os": "linux", "architecture": "amd 64"}), "invalid platform"),
        (
            _body({"os": "windows", "architecture": "amd64", "os.version": "ten"}),
            "invalid platform",
        ),
    ],
)
def test_bad_configs_are_manifest_errors(body: bytes, reason: str) -> None:
    with pytest.raises(ManifestError) as caught:
        parse_config_platform(body, source=SOURCE)
    assert str(caught.value).startswith(f"{SOURCE}: ")
    assert reason in str(caught.value)


# -- digests ----------------------------------------------------------------------------------

EMPTY_SHA256 = "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"


def test_compute_digest() -> None:
    assert compute_digest(b"") == EMPTY_SHA256
    assert compute_digest(b"{}", "sha512") == "sha512:" + hashlib.sha512(b"{}").hexdigest()
    with pytest.raises(ManifestError, match="unsupported digest algorithm"):
        compute_digest(b"", "md5")


def test_verify_digest_accepts_the_right_body_and_refuses_any_other() -> None:
    body = _body(BUILDX_INDEX)
    verify_digest(body, compute_digest(body), source=SOURCE)
    with pytest.raises(ManifestError) as caught:
        verify_digest(body + b" ", compute_digest(body), source=SOURCE)
    assert str(caught.value).startswith(f"{SOURCE}: ")
    assert "does not match its digest" in str(caught.value)
    with pytest.raises(ManifestError):
        verify_digest(body, "md5:" + "0" * 32, source=SOURCE)


# -- properties: only kmultiarch's own errors, whatever the registry sends ---------------------

_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=20,
)
_words = st.sampled_from(
    ["linux", "amd64", "arm", "v7", "unknown", "", "a b", "10.0.1", D1, "sha256:x", 3, None]
)
_platform = st.dictionaries(
    st.sampled_from(["os", "architecture", "variant", "os.version", "features"]),
    _words | _json,
    max_size=5,
)
_entries = st.lists(
    st.dictionaries(
        st.sampled_from(["digest", "mediaType", "platform", "annotations", "size"]),
        st.sampled_from([D1, OCI_INDEX, OCI_MANIFEST, "x"]) | _platform | _json,
    ),
    max_size=4,
)
_manifest_like = st.fixed_dictionaries(
    {},
    optional={
        "schemaVersion": st.sampled_from([1, 2, True, "2"]),
        "mediaType": st.sampled_from([OCI_INDEX, DOCKER_LIST, OCI_MANIFEST, DOCKER_V2, "x"])
        | _json,
        "manifests": _entries | _json,
        "config": st.fixed_dictionaries({}, optional={"digest": _words | _json}) | _json,
        "layers": _json,
    },
)
_content_type = st.sampled_from([None, "", OCI_INDEX, DOCKER_V2, DOCKER_V1, "text/plain"])


def _parses_or_raises_own_error(body: bytes, content_type: str | None) -> None:
    try:
        parsed = parse_manifest(body, content_type, source=SOURCE)
    except KmultiarchError:
        return
    assert parsed.kind in ("index", "image")
    for entry in parsed.entries:
        assert entry.platform is None or not entry.platform.is_unknown


@given(st.binary(max_size=200), _content_type)
def test_arbitrary_bytes(body: bytes, content_type: str | None) -> None:
    _parses_or_raises_own_error(body, content_type)


@given(_json, _content_type)
def test_arbitrary_json(document: object, content_type: str | None) -> None:
    _parses_or_raises_own_error(_body(document), content_type)


@given(_manifest_like, _content_type)
def test_manifest_shaped_json(document: dict[str, Any], content_type: str | None) -> None:
    _parses_or_raises_own_error(_body(document), content_type)


@given(st.one_of(st.binary(max_size=100), _json.map(_body), _platform.map(_body)))
def test_config_platform_raises_only_its_own_errors(body: bytes) -> None:
    try:
        platform = parse_config_platform(body, source=SOURCE)
    except KmultiarchError:
        return
    assert Platform.parse(str(platform)) == platform


def test_artifacts_and_olm_bundles_are_metadata_only() -> None:
    import json as _json

    from kmultiarch.core.images.oci import is_metadata_only_config, parse_manifest

    config = {
        "mediaType": "application/vnd.oci.empty.v1+json",
        "digest": "sha256:" + "4" * 64,
        "size": 2,
    }
    empty = {
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": config,
        "layers": [],
    }
    assert parse_manifest(_json.dumps(empty).encode(), None, source="x").artifact
    typed = {
        **empty,
        "artifactType": "application/spdx+json",
        "config": {**config, "mediaType": "application/vnd.oci.image.config.v1+json"},
    }
    assert parse_manifest(_json.dumps(typed).encode(), None, source="x").artifact
    image = {**empty, "config": {**config, "mediaType": "application/vnd.oci.image.config.v1+json"}}
    assert not parse_manifest(_json.dumps(image).encode(), None, source="x").artifact
    bundle = {
        "os": "linux",
        "architecture": "amd64",
        "config": {"Labels": {"operators.operatorframework.io.bundle.package.v1": "p"}},
    }
    assert is_metadata_only_config(_json.dumps(bundle).encode(), source="x")
    plain = {"os": "linux", "architecture": "amd64", "config": {"Labels": {"a": "b"}}}
    assert not is_metadata_only_config(_json.dumps(plain).encode(), source="x")
