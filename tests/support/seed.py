"""Images to seed into the test registries, and seeding through the registry HTTP API.

The content is built in memory from small deterministic pieces (config blobs, one tiny layer,
manifests, indexes, BuildKit attestations), so every digest is known before anything is pushed
and is the same in every registry of a session (and across sessions). ``SEEDED`` is the catalogue
tests import: each ``SeededImage`` says where the image lives, its digest and media type, and the
platforms kmultiarch must report for it, written out by hand (``os/arch[/variant][:os.version]``,
normalised: ``arm64/v8`` is ``arm64``, ``aarch64`` is ``arm64``) rather than derived from the
content, so the expectation is independent of the code that builds the image.

Seeding uses only the distribution API (monolithic blob upload: POST then PUT ``?digest=``;
manifest PUT by digest for children, by tag for the top), and ``RegistryAuth`` answers Basic or
Bearer challenges, so the same code seeds the plain, basic-auth, token and TLS registries.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import io
import json
import ssl
import tarfile
import threading
from collections.abc import Generator, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

import httpx
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature

from .registry import default_ssl_context
from .token_issuer import libtrust_key_id

__all__ = [
    "ACCEPT_MANIFESTS",
    "DOCKER_CONFIG",
    "DOCKER_LAYER",
    "DOCKER_MANIFEST",
    "DOCKER_MANIFEST_LIST",
    "DOCKER_SCHEMA1_SIGNED",
    "MODERN_MANIFEST_TYPES",
    "OCI_CONFIG",
    "OCI_INDEX",
    "OCI_LAYER",
    "OCI_MANIFEST",
    "SEEDED",
    "Blob",
    "IndexEntry",
    "Manifest",
    "PlatformSpec",
    "RegistryAuth",
    "SeededImage",
    "Seeder",
    "attestation_entry",
    "config_blob",
    "docker_image",
    "image_manifest",
    "index",
    "oci_image",
    "schema1_manifest",
    "schema1_payload",
    "seed_catalogue",
    "sha256_digest",
    "tiny_layer",
]

OCI_INDEX = "application/vnd.oci.image.index.v1+json"
DOCKER_MANIFEST_LIST = "application/vnd.docker.distribution.manifest.list.v2+json"
OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
DOCKER_MANIFEST = "application/vnd.docker.distribution.manifest.v2+json"
DOCKER_SCHEMA1_SIGNED = "application/vnd.docker.distribution.manifest.v1+prettyjws"
OCI_CONFIG = "application/vnd.oci.image.config.v1+json"
DOCKER_CONFIG = "application/vnd.docker.container.image.v1+json"
OCI_LAYER = "application/vnd.oci.image.layer.v1.tar+gzip"
DOCKER_LAYER = "application/vnd.docker.image.rootfs.diff.tar.gzip"
IN_TOTO = "application/vnd.in-toto+json"

MODERN_MANIFEST_TYPES = (OCI_INDEX, DOCKER_MANIFEST_LIST, OCI_MANIFEST, DOCKER_MANIFEST)
#: What a correct client sends: without the list types, distribution answers a multi-arch tag
#: with its linux/amd64 child, and an OCI index with MANIFEST_UNKNOWN.
ACCEPT_MANIFESTS = ", ".join(MODERN_MANIFEST_TYPES)

_INDEX_TYPES = frozenset({OCI_INDEX, DOCKER_MANIFEST_LIST})


def sha256_digest(data: bytes) -> str:
    return f"sha256:{hashlib.sha256(data).hexdigest()}"


def _json_bytes(document: Mapping[str, Any]) -> bytes:
    return json.dumps(document, indent=2).encode()


# -- content model -------------------------------------------------------------------------


@dataclass(frozen=True)
class PlatformSpec:
    """A platform as written into a config blob or an index entry (not normalised on purpose)."""

    os: str
    architecture: str
    variant: str | None = None
    os_version: str | None = None

    def as_json(self) -> dict[str, str]:
        document = {"architecture": self.architecture, "os": self.os}
        if self.os_version:
            document["os.version"] = self.os_version
        if self.variant:
            document["variant"] = self.variant
        return document


@dataclass(frozen=True)
class Blob:
    """A blob's bytes and how a descriptor names it."""

    media_type: str
    data: bytes = field(repr=False)
    annotations: Mapping[str, str] | None = field(default=None, hash=False, compare=False)

    @property
    def digest(self) -> str:
        return sha256_digest(self.data)

    def descriptor(self) -> dict[str, Any]:
        document: dict[str, Any] = {
            "mediaType": self.media_type,
            "digest": self.digest,
            "size": len(self.data),
        }
        if self.annotations:
            document["annotations"] = dict(self.annotations)
        return document


@dataclass(frozen=True)
class Manifest:
    """A manifest's exact bytes, with the blobs and child manifests it needs pushed first.

    ``signed_payload`` is set for schema 1 only: distribution names a signed manifest by the
    digest of its JWS payload (the document without ``signatures``), not of the bytes served,
    and re-signs it with its own key on every GET.
    """

    media_type: str
    data: bytes = field(repr=False)
    blobs: tuple[Blob, ...] = ()
    children: tuple[Manifest, ...] = ()
    signed_payload: bytes | None = field(default=None, repr=False)

    @property
    def digest(self) -> str:
        return sha256_digest(self.data if self.signed_payload is None else self.signed_payload)

    @property
    def document(self) -> dict[str, Any]:
        parsed: dict[str, Any] = json.loads(self.data)
        return parsed

    def descriptor(
        self,
        platform: PlatformSpec | None = None,
        annotations: Mapping[str, str] | None = None,
    ) -> dict[str, Any]:
        document: dict[str, Any] = {
            "mediaType": self.media_type,
            "digest": self.digest,
            "size": len(self.data),
        }
        if platform:
            document["platform"] = platform.as_json()
        if annotations:
            document["annotations"] = dict(annotations)
        return document

    def walk(self) -> Generator[Manifest]:
        """This manifest and every manifest below it, children first."""
        for child in self.children:
            yield from child.walk()
        yield self


@dataclass(frozen=True)
class IndexEntry:
    """One entry of an index or manifest list: a manifest, its platform and annotations."""

    manifest: Manifest
    platform: PlatformSpec | None = None
    annotations: Mapping[str, str] | None = field(default=None, hash=False, compare=False)


# -- builders ------------------------------------------------------------------------------


def tiny_layer(label: str = "kmultiarch", *, media_type: str = OCI_LAYER) -> tuple[Blob, str]:
    """A gzipped tar holding one small file, and its diff id (digest of the uncompressed tar).

    Every header field and the gzip mtime are fixed, so the bytes never change.
    """
    content = f"{label}\n".encode()
    info = tarfile.TarInfo(name="kmultiarch-test.txt")
    info.size, info.mtime, info.mode = len(content), 0, 0o644
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.USTAR_FORMAT) as archive:
        archive.addfile(info, io.BytesIO(content))
    tar = buffer.getvalue()
    return Blob(media_type, gzip.compress(tar, mtime=0)), sha256_digest(tar)


def config_blob(
    platform: PlatformSpec,
    diff_ids: Sequence[str],
    *,
    media_type: str = OCI_CONFIG,
    label: str = "",
) -> Blob:
    """An image config saying ``platform``; ``label`` makes otherwise equal images distinct."""
    document: dict[str, Any] = platform.as_json()
    document["config"] = {
        "Cmd": ["/kmultiarch-test.txt"],
        "Labels": {"org.kmultiarch.test.image": label},
    }
    document["rootfs"] = {"type": "layers", "diff_ids": list(diff_ids)}
    document["history"] = [{"created_by": "kmultiarch test harness"}]
    return Blob(media_type, _json_bytes(document))


def image_manifest(
    config: Blob,
    layers: Sequence[Blob],
    *,
    media_type: str = OCI_MANIFEST,
) -> Manifest:
    """An OCI image manifest or Docker schema 2 manifest over a config and layers."""
    document = {
        "schemaVersion": 2,
        "mediaType": media_type,
        "config": config.descriptor(),
        "layers": [layer.descriptor() for layer in layers],
    }
    return Manifest(media_type, _json_bytes(document), blobs=(config, *layers))


def oci_image(platform: PlatformSpec, label: str) -> Manifest:
    """A single-platform OCI image: OCI manifest, OCI config, one layer."""
    layer, diff_id = tiny_layer(media_type=OCI_LAYER)
    config = config_blob(platform, [diff_id], media_type=OCI_CONFIG, label=label)
    return image_manifest(config, [layer], media_type=OCI_MANIFEST)


def docker_image(platform: PlatformSpec, label: str) -> Manifest:
    """A single-platform Docker image: schema 2 manifest, Docker config, one layer."""
    layer, diff_id = tiny_layer(media_type=DOCKER_LAYER)
    config = config_blob(platform, [diff_id], media_type=DOCKER_CONFIG, label=label)
    return image_manifest(config, [layer], media_type=DOCKER_MANIFEST)


def index(entries: Iterable[IndexEntry], *, media_type: str = OCI_INDEX) -> Manifest:
    """An OCI image index or Docker manifest list over ``entries``."""
    entries = list(entries)
    document = {
        "schemaVersion": 2,
        "mediaType": media_type,
        "manifests": [
            entry.manifest.descriptor(entry.platform, entry.annotations) for entry in entries
        ],
    }
    return Manifest(
        media_type,
        _json_bytes(document),
        children=tuple(entry.manifest for entry in entries),
    )


def attestation_entry(subject: Manifest) -> IndexEntry:
    """A BuildKit attestation for ``subject``: an index entry that is not a platform.

    BuildKit writes it as an OCI manifest with an in-toto layer, listed with platform
    ``unknown/unknown`` and annotations pointing back at the image manifest it describes.
    """
    statement = {
        "_type": "https://in-toto.io/Statement/v0.1",
        "predicateType": "https://spdx.dev/Document",
        "subject": [{"name": "_", "digest": {"sha256": subject.digest.removeprefix("sha256:")}}],
        "predicate": {"spdxVersion": "SPDX-2.3"},
    }
    layer = Blob(
        IN_TOTO,
        _json_bytes(statement),
        annotations={"in-toto.io/predicate-type": "https://spdx.dev/Document"},
    )
    config = Blob(
        OCI_CONFIG,
        _json_bytes(
            {
                "architecture": "unknown",
                "os": "unknown",
                "config": {},
                "rootfs": {"type": "layers", "diff_ids": [layer.digest]},
            }
        ),
    )
    return IndexEntry(
        image_manifest(config, [layer], media_type=OCI_MANIFEST),
        PlatformSpec("unknown", "unknown"),
        {
            "vnd.docker.reference.digest": subject.digest,
            "vnd.docker.reference.type": "attestation-manifest",
        },
    )


#: The empty config of OCI artifacts (image-spec 1.1): the two bytes ``{}``.
OCI_EMPTY = "application/vnd.oci.empty.v1+json"


def olm_bundle_image(package: str) -> Manifest:
    """An OLM bundle image as operator-sdk builds it: ``FROM scratch``, a layer of manifests
    and metadata, a config labelled ``operators.operatorframework.io.bundle.*``. Its config
    says linux/amd64 (the builder's platform), but it holds no program: kmultiarch must not
    let it narrow the pod (OLM runs it with a copy binary of its own)."""
    layer, diff_id = tiny_layer(f"bundle {package}", media_type=OCI_LAYER)
    document = {
        "architecture": "amd64",
        "os": "linux",
        "config": {
            "Labels": {
                "operators.operatorframework.io.bundle.mediatype.v1": "registry+v1",
                "operators.operatorframework.io.bundle.manifests.v1": "manifests/",
                "operators.operatorframework.io.bundle.metadata.v1": "metadata/",
                "operators.operatorframework.io.bundle.package.v1": package,
                "operators.operatorframework.io.bundle.channels.v1": "stable",
            }
        },
        "rootfs": {"type": "layers", "diff_ids": [diff_id]},
        "history": [{"created_by": "COPY manifests /manifests/"}],
    }
    return image_manifest(Blob(OCI_CONFIG, _json_bytes(document)), [layer])


def oci_artifact(label: str) -> Manifest:
    """An OCI 1.1 artifact: ``artifactType`` set, the empty config, one SPDX layer."""
    config = Blob(OCI_EMPTY, b"{}")
    layer = Blob("application/spdx+json", _json_bytes({"spdxVersion": "SPDX-2.3", "name": label}))
    document = {
        "schemaVersion": 2,
        "mediaType": OCI_MANIFEST,
        "artifactType": "application/spdx+json",
        "config": config.descriptor(),
        "layers": [layer.descriptor()],
    }
    return Manifest(OCI_MANIFEST, _json_bytes(document), blobs=(config, layer))


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


#: Any key will do (distribution re-signs schema 1 with its own); the digest covers only the
#: JWS payload, so it is stable although ECDSA signatures are not.
_SCHEMA1_KEY = ec.derive_private_key(
    int.from_bytes(hashlib.sha256(b"kmultiarch").digest()), ec.SECP256R1()
)


def _libtrust_pretty_sign(payload: bytes) -> bytes:
    """Sign a schema 1 manifest the way docker/libtrust does (``JSONSignature.PrettySignature``).

    The JWS payload is the manifest without its closing brace and the whitespace before it;
    ``formatLength`` and ``formatTail`` in the protected header let a verifier rebuild it from
    the signed document, into which ``"signatures"`` is spliced just before the closing brace.
    """
    close = len(payload.rstrip()) - 1
    format_length = len(payload[:close].rstrip())
    format_tail = payload[format_length:]
    protected = _b64url(
        json.dumps(
            {
                "formatLength": format_length,
                "formatTail": _b64url(format_tail),
                "time": "2024-01-01T00:00:00Z",
            }
        ).encode()
    )
    signing_input = f"{protected}.{_b64url(payload)}".encode()
    der = _SCHEMA1_KEY.sign(signing_input, ec.ECDSA(hashes.SHA256()))
    r, s = decode_dss_signature(der)
    numbers = _SCHEMA1_KEY.public_key().public_numbers()
    jwk = {
        "crv": "P-256",
        "kid": libtrust_key_id(_SCHEMA1_KEY.public_key()),
        "kty": "EC",
        "x": _b64url(numbers.x.to_bytes(32, "big")),
        "y": _b64url(numbers.y.to_bytes(32, "big")),
    }
    signatures = [
        {
            "header": {"jwk": jwk, "alg": "ES256"},
            "signature": _b64url(r.to_bytes(32, "big") + s.to_bytes(32, "big")),
            "protected": protected,
        }
    ]
    indent = "   "
    rendered = json.dumps(signatures, indent=len(indent)).replace("\n", "\n" + indent)
    return payload[:format_length] + f',\n{indent}"signatures": {rendered}'.encode() + format_tail


def schema1_manifest(repository: str, tag: str, platform: PlatformSpec) -> Manifest:
    """A signed Docker schema 1 manifest (``v1+prettyjws``) with one tiny layer.

    Schema 1 has a top-level ``architecture``; the OS is only in the v1 history entry.
    """
    layer, _ = tiny_layer("schema1", media_type=DOCKER_LAYER)
    v1_compatibility = {
        "id": hashlib.sha256(f"{repository}:{tag}".encode()).hexdigest(),
        "created": "2024-01-01T00:00:00Z",
        "os": platform.os,
        "architecture": platform.architecture,
        "config": {"Cmd": ["/kmultiarch-test.txt"]},
    }
    document = {
        "schemaVersion": 1,
        "name": repository,
        "tag": tag,
        "architecture": platform.architecture,
        "fsLayers": [{"blobSum": layer.digest}],
        "history": [{"v1Compatibility": json.dumps(v1_compatibility)}],
    }
    payload = json.dumps(document, indent=3).encode()
    signed = _libtrust_pretty_sign(payload)
    return Manifest(DOCKER_SCHEMA1_SIGNED, signed, blobs=(layer,), signed_payload=payload)


def schema1_payload(signed: bytes) -> bytes:
    """The JWS payload of a signed schema 1 manifest, whose sha256 is its digest.

    Rebuilt as libtrust does: the first ``formatLength`` bytes, then ``formatTail``, both read
    from the first signature's protected header.
    """
    signatures = json.loads(signed)["signatures"]
    protected = signatures[0]["protected"]
    header = json.loads(base64.urlsafe_b64decode(protected + "=" * (-len(protected) % 4)))
    tail = header["formatTail"]
    return signed[: header["formatLength"]] + base64.urlsafe_b64decode(
        tail + "=" * (-len(tail) % 4)
    )


# -- the catalogue -------------------------------------------------------------------------


@dataclass(frozen=True)
class SeededImage:
    """One image every seeded registry holds, and what kmultiarch must say about it."""

    key: str
    repository: str
    tag: str
    shape: str
    platforms: tuple[str, ...]
    manifest: Manifest = field(repr=False, compare=False)

    @property
    def digest(self) -> str:
        """Digest of the tag's manifest or index (the ``Docker-Content-Digest`` of the tag)."""
        return self.manifest.digest

    @property
    def media_type(self) -> str:
        return self.manifest.media_type

    def reference(self, host: str) -> str:
        """``host/repository:tag``."""
        return f"{host}/{self.repository}:{self.tag}"

    def digest_reference(self, host: str) -> str:
        """``host/repository@sha256:...``."""
        return f"{host}/{self.repository}@{self.digest}"


AMD64 = PlatformSpec("linux", "amd64")
ARM64_V8 = PlatformSpec("linux", "arm64", "v8")
ARM_V7 = PlatformSpec("linux", "arm", "v7")
PPC64LE = PlatformSpec("linux", "ppc64le")
S390X = PlatformSpec("linux", "s390x")
WINDOWS_LTSC2019 = PlatformSpec("windows", "amd64", os_version="10.0.17763.6659")

#: The repository only alice may pull from the token registry.
PRIVATE_REPOSITORY = "private/app"
#: A repository with several version tags (tag lists, upgrade suggestions).
UPGRADES_REPOSITORY = "upgrades/app"


def _oci_index_with_attestations(label: str, platforms: Sequence[PlatformSpec]) -> Manifest:
    images = [(oci_image(platform, label), platform) for platform in platforms]
    entries = [IndexEntry(image, platform) for image, platform in images]
    entries += [attestation_entry(image) for image, _ in images]
    return index(entries)


def _docker_list(label: str, platforms: Sequence[PlatformSpec]) -> Manifest:
    entries = [IndexEntry(docker_image(platform, label), platform) for platform in platforms]
    return index(entries, media_type=DOCKER_MANIFEST_LIST)


def _build_catalogue() -> dict[str, SeededImage]:
    """Every seeded image. Platforms are the expected, normalised answers, sorted."""
    inner = index(
        [
            IndexEntry(oci_image(AMD64, "nested-index"), AMD64),
            IndexEntry(oci_image(ARM64_V8, "nested-index"), ARM64_V8),
        ]
    )
    amd64_only = oci_image(AMD64, "amd64-only-index")
    images = [
        SeededImage(
            "multiarch-oci",
            "multiarch-oci",
            "1.0",
            "OCI index: linux/amd64, linux/arm64 (entry says arm64/v8), two attestations",
            ("linux/amd64", "linux/arm64"),
            _oci_index_with_attestations("multiarch-oci", [AMD64, ARM64_V8]),
        ),
        SeededImage(
            "multiarch-docker",
            "multiarch-docker",
            "1.0",
            "Docker manifest list: linux/amd64, linux/arm64/v8, linux/arm/v7",
            ("linux/amd64", "linux/arm/v7", "linux/arm64"),
            _docker_list("multiarch-docker", [AMD64, ARM64_V8, ARM_V7]),
        ),
        SeededImage(
            "single-oci-arm64",
            "single-oci-arm64",
            "1.0",
            "single OCI manifest; config says arm64 variant v8",
            ("linux/arm64",),
            oci_image(ARM64_V8, "single-oci-arm64"),
        ),
        SeededImage(
            "single-docker-amd64",
            "single-docker-amd64",
            "1.0",
            "single Docker schema 2 manifest; config says amd64",
            ("linux/amd64",),
            docker_image(AMD64, "single-docker-amd64"),
        ),
        SeededImage(
            "armv7-only",
            "armv7-only",
            "1.0",
            "single OCI manifest; config says arm variant v7",
            ("linux/arm/v7",),
            oci_image(ARM_V7, "armv7-only"),
        ),
        SeededImage(
            "aarch64-config",
            "aarch64-config",
            "1.0",
            "single Docker schema 2 manifest; config says aarch64, no variant",
            ("linux/arm64",),
            docker_image(PlatformSpec("linux", "aarch64"), "aarch64-config"),
        ),
        SeededImage(
            "windows-linux",
            "windows-linux",
            "1.0",
            "Docker manifest list: windows/amd64 os.version 10.0.17763.6659, linux/amd64",
            ("linux/amd64", "windows/amd64:10.0.17763.6659"),
            _docker_list("windows-linux", [WINDOWS_LTSC2019, AMD64]),
        ),
        SeededImage(
            "nested-index",
            "nested-index",
            "1.0",
            "OCI index: an inner OCI index (amd64, arm64/v8; entry without platform), linux/s390x",
            ("linux/amd64", "linux/arm64", "linux/s390x"),
            index(
                [
                    IndexEntry(inner),
                    IndexEntry(oci_image(S390X, "nested-index"), S390X),
                ]
            ),
        ),
        SeededImage(
            "amd64-only-index",
            "amd64-only-index",
            "1.0",
            "OCI index: linux/amd64 and its attestation",
            ("linux/amd64",),
            index([IndexEntry(amd64_only, AMD64), attestation_entry(amd64_only)]),
        ),
        SeededImage(
            "two-tags-latest",
            "two-tags",
            "latest",
            "tag latest of a two-tag repository: OCI index linux/amd64, linux/arm64, linux/ppc64le",
            ("linux/amd64", "linux/arm64", "linux/ppc64le"),
            _oci_index_with_attestations("two-tags-latest", [AMD64, ARM64_V8, PPC64LE]),
        ),
        SeededImage(
            "two-tags-1.0",
            "two-tags",
            "1.0",
            "tag 1.0 of a two-tag repository: single Docker schema 2 manifest, amd64",
            ("linux/amd64",),
            docker_image(AMD64, "two-tags-1.0"),
        ),
        SeededImage(
            "team-app-api",
            "team/app/api",
            "2.1",
            "nested repository path: OCI index linux/amd64, linux/arm64",
            ("linux/amd64", "linux/arm64"),
            _oci_index_with_attestations("team-app-api", [AMD64, ARM64_V8]),
        ),
        SeededImage(
            "private-app",
            PRIVATE_REPOSITORY,
            "1.0",
            "OCI index linux/amd64, linux/arm64; private on the token registry (alice only)",
            ("linux/amd64", "linux/arm64"),
            _oci_index_with_attestations("private-app", [AMD64, ARM64_V8]),
        ),
        # A repository whose older tags are amd64-only: what `report --suggest-upgrades`
        # is for. 1.1 still lacks arm64; 1.2-alpine has it but is another variant; 1.3 is the
        # nearest newer tag that runs on arm64; 2.0 has it too.
        SeededImage(
            "upgrades-1.0",
            UPGRADES_REPOSITORY,
            "1.0",
            "tag 1.0 of a repository with newer tags: single Docker schema 2 manifest, amd64",
            ("linux/amd64",),
            docker_image(AMD64, "upgrades-1.0"),
        ),
        SeededImage(
            "upgrades-1.1",
            UPGRADES_REPOSITORY,
            "1.1",
            "tag 1.1: single OCI manifest, amd64",
            ("linux/amd64",),
            oci_image(AMD64, "upgrades-1.1"),
        ),
        SeededImage(
            "upgrades-1.2-alpine",
            UPGRADES_REPOSITORY,
            "1.2-alpine",
            "tag 1.2-alpine: OCI index linux/amd64, linux/arm64 (a variant: suffix -alpine)",
            ("linux/amd64", "linux/arm64"),
            _oci_index_with_attestations("upgrades-1.2-alpine", [AMD64, ARM64_V8]),
        ),
        SeededImage(
            "upgrades-1.3",
            UPGRADES_REPOSITORY,
            "1.3",
            "tag 1.3: OCI index linux/amd64, linux/arm64",
            ("linux/amd64", "linux/arm64"),
            _oci_index_with_attestations("upgrades-1.3", [AMD64, ARM64_V8]),
        ),
        SeededImage(
            "upgrades-2.0",
            UPGRADES_REPOSITORY,
            "2.0",
            "tag 2.0: OCI index linux/amd64, linux/arm64",
            ("linux/amd64", "linux/arm64"),
            _oci_index_with_attestations("upgrades-2.0", [AMD64, ARM64_V8]),
        ),
        SeededImage(
            "olm-bundle",
            "operators/demo-bundle",
            "v0.1.0",
            "OLM bundle image: scratch, config linux/amd64 labelled "
            "operators.operatorframework.io.bundle.*: metadata-only",
            (),
            olm_bundle_image("demo-operator"),
        ),
        SeededImage(
            "oci-artifact",
            "artifacts/sbom",
            "1.0",
            "OCI 1.1 artifact: artifactType application/spdx+json, empty config: metadata-only",
            (),
            oci_artifact("sbom"),
        ),
        SeededImage(
            "schema1",
            "legacy/schema1",
            "1.0",
            "signed Docker schema 1 manifest (v1+prettyjws), architecture arm64",
            ("linux/arm64",),
            schema1_manifest("legacy/schema1", "1.0", PlatformSpec("linux", "arm64")),
        ),
    ]
    return {image.key: image for image in images}


#: The seeded images by key; every fixture registry holds all of them.
SEEDED: Mapping[str, SeededImage] = MappingProxyType(_build_catalogue())

#: Repositories anonymous users may pull from the token registry.
PUBLIC_REPOSITORIES = frozenset(
    image.repository for image in SEEDED.values() if image.repository != PRIVATE_REPOSITORY
)


# -- pushing -------------------------------------------------------------------------------


def _parse_challenge(header: str) -> tuple[str, dict[str, str]]:
    """``Bearer realm="...",service="..."`` -> ("bearer", {"realm": ..., "service": ...})."""
    scheme, _, rest = header.strip().partition(" ")
    params: dict[str, str] = {}
    for part in _split_params(rest):
        key, _, value = part.partition("=")
        params[key.strip().lower()] = value.strip().strip('"')
    return scheme.lower(), params


def _split_params(text: str) -> Iterable[str]:
    """Split on commas outside quotes (scopes such as ``pull,push`` sit inside quotes)."""
    current, quoted = [], False
    for char in text:
        if char == '"':
            quoted = not quoted
        if char == "," and not quoted:
            yield "".join(current)
            current = []
        else:
            current.append(char)
    if current:
        yield "".join(current)


class RegistryAuth(httpx.Auth):
    """Answers a registry's Basic or Bearer challenge, for seeding and for harness tests.

    Bearer tokens are cached per repository (the registry's challenge names the scope the request
    needs, e.g. ``pull,push`` for an upload), so seeding a repository costs one 401 and one token.
    Not a model for kmultiarch's own auth: it knows nothing of expiry or other hosts.
    """

    requires_request_body = True

    def __init__(
        self,
        username: str | None = None,
        password: str | None = None,
        *,
        verify: ssl.SSLContext | None = None,
    ) -> None:
        self._credentials = (username, password) if username is not None else None
        self._verify = verify or default_ssl_context()
        self._tokens: dict[str, str] = {}
        self._basic_challenged = False
        self._lock = threading.Lock()

    @staticmethod
    def _repository(request: httpx.Request) -> str:
        path = request.url.path.removeprefix("/v2/")
        for marker in ("/blobs/", "/manifests/", "/tags/"):
            if marker in path:
                return path.split(marker, 1)[0]
        return ""

    def _basic_header(self) -> str | None:
        if self._credentials is None:
            return None
        username, password = self._credentials
        return "Basic " + base64.b64encode(f"{username}:{password or ''}".encode()).decode()

    def _fetch_token(self, params: Mapping[str, str]) -> str:
        query = {key: params[key] for key in ("service", "scope") if key in params}
        headers = {}
        if basic := self._basic_header():
            headers["Authorization"] = basic
        response = httpx.get(params["realm"], params=query, headers=headers, verify=self._verify)
        response.raise_for_status()
        body = response.json()
        return str(body.get("token") or body["access_token"])

    def auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response]:
        repository = self._repository(request)
        with self._lock:
            token = self._tokens.get(repository)
        basic = self._basic_header()
        if token:
            request.headers["Authorization"] = f"Bearer {token}"
        elif basic and self._basic_challenged:
            request.headers["Authorization"] = basic
        response = yield request
        if response.status_code != 401:
            return
        scheme, params = _parse_challenge(response.headers.get("WWW-Authenticate", ""))
        if scheme == "basic" and basic and request.headers.get("Authorization") != basic:
            self._basic_challenged = True
            request.headers["Authorization"] = basic
            yield request
        elif scheme == "bearer" and "realm" in params:
            token = self._fetch_token(params)
            with self._lock:
                self._tokens[repository] = token
            request.headers["Authorization"] = f"Bearer {token}"
            yield request


class Seeder:
    """Pushes blobs and manifests over the distribution API, each at most once per repository."""

    def __init__(self, client: httpx.Client) -> None:
        self._client = client
        self._pushed: set[tuple[str, str]] = set()
        self._lock = threading.Lock()

    def _claim(self, repository: str, digest: str) -> bool:
        """True the first time (repository, digest) is seen: the caller then pushes it."""
        with self._lock:
            if (repository, digest) in self._pushed:
                return False
            self._pushed.add((repository, digest))
            return True

    def push_blob(self, repository: str, blob: Blob) -> None:
        """Monolithic upload: start a session (POST), then PUT the bytes with ``?digest=``."""
        if not self._claim(repository, blob.digest):
            return
        started = self._client.post(f"/v2/{repository}/blobs/uploads/")
        _expect(started, 202, f"start upload to {repository}")
        # Keep the Location's own query (distribution's upload state) and add the digest.
        location = httpx.URL(started.headers["Location"]).copy_add_param("digest", blob.digest)
        finished = self._client.put(
            location,
            content=blob.data,
            headers={"Content-Type": "application/octet-stream"},
        )
        _expect(finished, 201, f"upload {blob.digest} to {repository}")

    def push_manifest(
        self, repository: str, manifest: Manifest, reference: str | None = None
    ) -> str:
        """Push blobs and children first (children by digest), then ``manifest`` by reference.

        Returns the registry's ``Docker-Content-Digest``; with no reference, pushes by digest.
        """
        for blob in manifest.blobs:
            self.push_blob(repository, blob)
        for child in manifest.children:
            self.push_manifest(repository, child)
        if reference is None and not self._claim(repository, manifest.digest):
            return manifest.digest
        response = self._client.put(
            f"/v2/{repository}/manifests/{reference or manifest.digest}",
            content=manifest.data,
            headers={"Content-Type": manifest.media_type},
        )
        _expect(response, 201, f"put manifest {reference or manifest.digest} in {repository}")
        return response.headers.get("Docker-Content-Digest", "")


def _expect(response: httpx.Response, status: int, action: str) -> None:
    if response.status_code != status:
        raise RuntimeError(
            f"{action}: HTTP {response.status_code} (expected {status}): {response.text[:500]}"
        )


def seed_catalogue(client: httpx.Client, images: Iterable[SeededImage] | None = None) -> None:
    """Push the catalogue (default: all of ``SEEDED``), one repository per thread.

    Fails if the registry reports a digest other than the one the catalogue computed, so
    ``SEEDED`` digests can be trusted by every test.
    """
    by_repository: dict[str, list[SeededImage]] = {}
    for image in images if images is not None else SEEDED.values():
        by_repository.setdefault(image.repository, []).append(image)
    seeder = Seeder(client)

    def push_repository(repository_images: list[SeededImage]) -> None:
        for image in repository_images:
            digest = seeder.push_manifest(image.repository, image.manifest, image.tag)
            if digest != image.digest:
                raise RuntimeError(f"{image.key}: registry says {digest}, expected {image.digest}")

    with ThreadPoolExecutor(max_workers=8) as pool:
        for future in [pool.submit(push_repository, group) for group in by_repository.values()]:
            future.result()
