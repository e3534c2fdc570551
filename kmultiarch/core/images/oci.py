"""Registry JSON -> platforms: manifest and config parsing, digests. Pure: no network.

The resolver fetches bodies; this module says what they mean. Every function takes the bytes
as served and a ``source`` naming the image, used in error messages.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from kmultiarch.core.images import digest
from kmultiarch.core.images.platform import Platform
from kmultiarch.errors import InvalidPlatformError, ManifestError

OCI_INDEX = "application/vnd.oci.image.index.v1+json"
DOCKER_MANIFEST_LIST = "application/vnd.docker.distribution.manifest.list.v2+json"
OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
DOCKER_MANIFEST = "application/vnd.docker.distribution.manifest.v2+json"
DOCKER_SCHEMA1 = "application/vnd.docker.distribution.manifest.v1+json"
DOCKER_SCHEMA1_SIGNED = "application/vnd.docker.distribution.manifest.v1+prettyjws"
OCI_CONFIG = "application/vnd.oci.image.config.v1+json"
DOCKER_CONFIG = "application/vnd.docker.container.image.v1+json"

OCI_EMPTY = "application/vnd.oci.empty.v1+json"
IMAGE_CONFIG_TYPES = frozenset({OCI_CONFIG, DOCKER_CONFIG})
#: Labels operator-sdk and opm put on OLM bundle images: ``FROM scratch`` images of manifests
#: and metadata that OLM unpacks with a binary of its own; they run on any node.
OLM_BUNDLE_LABEL_PREFIX = "operators.operatorframework.io.bundle."
INDEX_TYPES = frozenset({OCI_INDEX, DOCKER_MANIFEST_LIST})
IMAGE_TYPES = frozenset({OCI_MANIFEST, DOCKER_MANIFEST})
SCHEMA1_TYPES = frozenset({DOCKER_SCHEMA1, DOCKER_SCHEMA1_SIGNED})

#: Sent on every manifest request, HEAD and GET. Without the list types, distribution answers
#: with the linux/amd64 child and a multi-arch image looks amd64-only. Schema 1 comes last, with
#: a low weight, so that such images get a clear "unsupported" instead of MANIFEST_UNKNOWN.
MANIFEST_ACCEPT = ", ".join(
    [OCI_INDEX, DOCKER_MANIFEST_LIST, OCI_MANIFEST, DOCKER_MANIFEST]
    + [f"{t};q=0.1" for t in (DOCKER_SCHEMA1_SIGNED, DOCKER_SCHEMA1)]
)

ATTESTATION_ANNOTATION = "vnd.docker.reference.type"
ATTESTATION_MANIFEST = "attestation-manifest"
#: Docker's attestation entries name the image they describe with this annotation.
REFERENCE_DIGEST_ANNOTATION = "vnd.docker.reference.digest"

#: distribution refuses manifests over 4 MiB; configs of real images are far below 8 MiB.
MAX_MANIFEST_BYTES = 4 * 1024 * 1024
MAX_CONFIG_BYTES = 8 * 1024 * 1024
#: How deep indexes may nest (an index entry that is itself an index).
MAX_INDEX_DEPTH = 4


@dataclass(frozen=True)
class IndexEntry:
    """One child of an index. ``platform`` is None when the entry does not declare one."""

    digest: str
    media_type: str
    platform: Platform | None

    @property
    def is_index(self) -> bool:
        return self.media_type in INDEX_TYPES


@dataclass(frozen=True)
class ParsedManifest:
    """What a manifest body says: an index of children, or one image with a config blob."""

    kind: Literal["index", "image"]
    media_type: str
    entries: tuple[IndexEntry, ...] = ()
    config_digest: str = ""
    #: An OCI artifact, not a runnable image: it declares an ``artifactType``, or its config
    #: is not an image config (the empty config ``application/vnd.oci.empty.v1+json``, a Helm
    #: chart's, an SBOM's...). It has no platform and runs nowhere by itself.
    artifact: bool = False


def compute_digest(body: bytes, algorithm: str = "sha256") -> str:
    try:
        return digest.compute_digest(body, algorithm)
    except ValueError as exc:
        raise ManifestError(str(exc)) from exc


def verify_digest(body: bytes, expected: str, *, source: str) -> None:
    """Raise unless ``body`` hashes to ``expected``: a registry or proxy served other bytes."""
    algorithm, _, _ = expected.partition(":")
    actual = compute_digest(body, algorithm)
    if actual != expected:
        raise ManifestError(
            f"{source}: content does not match its digest (expected {expected}, got {actual}); "
            "the registry or a proxy served corrupted or forged data"
        )


def parse_manifest(body: bytes, content_type: str | None, *, source: str) -> ParsedManifest:
    """Parse a manifest or index body. The body's own ``mediaType`` wins over the header,
    which some registries and proxies get wrong; without either, the shape decides."""
    document = _load_json_object(body, source=source, what="manifest")
    media_type = _media_type(document, content_type)
    if media_type in SCHEMA1_TYPES or document.get("schemaVersion") == 1:
        raise ManifestError(
            f"{source}: uses the Docker schema 1 manifest format, which is deprecated and not "
            "supported; push the image again with a current docker/buildx or skopeo"
        )
    if media_type in INDEX_TYPES:
        return ParsedManifest("index", media_type, _index_entries(document, source=source))
    if media_type in IMAGE_TYPES:
        config = document.get("config")
        if not isinstance(config, Mapping) or not isinstance(config.get("digest"), str):
            raise ManifestError(f"{source}: image manifest has no config digest")
        config_type = config.get("mediaType")
        artifact = bool(document.get("artifactType")) or (
            isinstance(config_type, str) and config_type not in IMAGE_CONFIG_TYPES
        )
        return ParsedManifest(
            "image",
            media_type,
            config_digest=_checked_digest(config["digest"], source),
            artifact=artifact,
        )
    raise ManifestError(
        f"{source}: unsupported manifest media type {media_type or '(none)'!r}; expected an OCI "
        "index or image manifest, or a Docker manifest list or schema 2 manifest"
    )


def parse_config_platform(body: bytes, *, source: str) -> Platform:
    """The platform an image config declares (os, architecture, variant, os.version)."""
    document = _load_json_object(body, source=source, what="image config")
    try:
        return Platform.create(
            _string_field(document, "os", source),
            _string_field(document, "architecture", source),
            _optional_string(document.get("variant")),
            _optional_string(document.get("os.version")),
        )
    except InvalidPlatformError as exc:
        raise ManifestError(f"{source}: image config declares an invalid platform: {exc}") from exc


def is_metadata_only_config(body: bytes, *, source: str) -> bool:
    """Whether an image config is that of an OLM bundle image (labelled
    ``operators.operatorframework.io.bundle.*``): metadata, not a program."""
    document = _load_json_object(body, source=source, what="image config")
    config = document.get("config")
    labels = config.get("Labels") if isinstance(config, Mapping) else None
    return isinstance(labels, Mapping) and any(
        isinstance(key, str) and key.startswith(OLM_BUNDLE_LABEL_PREFIX) for key in labels
    )


def _index_entries(document: Mapping[str, object], *, source: str) -> tuple[IndexEntry, ...]:
    manifests = document.get("manifests")
    if not isinstance(manifests, list):
        raise ManifestError(f"{source}: index has no 'manifests' list")
    entries: list[IndexEntry] = []
    for position, item in enumerate(manifests):
        if not isinstance(item, Mapping) or not isinstance(item.get("digest"), str):
            raise ManifestError(f"{source}: index entry {position} has no digest")
        annotations = item.get("annotations")
        if isinstance(annotations, Mapping) and (
            annotations.get(ATTESTATION_ANNOTATION) == ATTESTATION_MANIFEST
            or REFERENCE_DIGEST_ANNOTATION in annotations
        ):
            continue  # an attestation, or another artifact that refers to an image of the index
        if isinstance(item.get("artifactType"), str):
            continue  # an OCI artifact (SBOM, signature...): not a platform, as containerd skips
        platform = _entry_platform(item.get("platform"), source=source, position=position)
        if platform is not None and platform.is_unknown:
            continue  # attestations and other non-runnable artifacts
        media_type = item.get("mediaType")
        entries.append(
            IndexEntry(
                _checked_digest(item["digest"], source),
                media_type if isinstance(media_type, str) else OCI_MANIFEST,
                platform,
            )
        )
    return tuple(entries)


def _entry_platform(raw: object, *, source: str, position: int) -> Platform | None:
    if raw is None:
        return None
    if not isinstance(raw, Mapping):
        raise ManifestError(f"{source}: index entry {position} has a malformed platform")
    os_name, architecture = raw.get("os"), raw.get("architecture")
    if not isinstance(os_name, str) or not isinstance(architecture, str):
        raise ManifestError(f"{source}: index entry {position} platform lacks os or architecture")
    try:
        return Platform.create(
            os_name,
            architecture,
            _optional_string(raw.get("variant")),
            _optional_string(raw.get("os.version")),
        )
    except InvalidPlatformError as exc:
        raise ManifestError(f"{source}: index entry {position}: {exc}") from exc


def _media_type(document: Mapping[str, object], content_type: str | None) -> str:
    declared = document.get("mediaType")
    if isinstance(declared, str) and declared:
        return declared
    header = (content_type or "").split(";")[0].strip().lower()
    if header in INDEX_TYPES | IMAGE_TYPES | SCHEMA1_TYPES:
        return header
    if "manifests" in document:
        return OCI_INDEX
    if "config" in document and "layers" in document:
        return OCI_MANIFEST
    return header


def _load_json_object(body: bytes, *, source: str, what: str) -> dict[str, object]:
    try:
        document = json.loads(body)
    except (ValueError, UnicodeDecodeError) as exc:
        raise ManifestError(f"{source}: {what} is not valid JSON ({exc})") from exc
    except RecursionError as exc:  # deeply nested arrays: a hostile or broken registry
        raise ManifestError(f"{source}: {what} is nested too deeply to be a manifest") from exc
    if not isinstance(document, dict):
        raise ManifestError(f"{source}: {what} is not a JSON object")
    return document


def _checked_digest(value: str, source: str) -> str:
    if not digest.is_digest(value):
        raise ManifestError(f"{source}: {value!r} is not a supported digest")
    return value


def _string_field(document: Mapping[str, object], key: str, source: str) -> str:
    value = document.get(key)
    if not isinstance(value, str) or not value:
        raise ManifestError(f"{source}: image config has no {key!r}")
    return value


def _optional_string(value: object) -> str:
    return value if isinstance(value, str) else ""
