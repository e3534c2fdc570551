"""kmultiarch.resolve.verify, the streaming half, with ``httpx.MockTransport`` tables: layers
served by a fake registry whose bodies count the bytes pulled from them, so each row shows
what was read, and faults the real registry cannot be made to produce (a corrupt or cut
layer, a slow one, a proxy compressing it, a foreign layer it does not serve)."""

from __future__ import annotations

import asyncio
import gzip
import random
import tarfile
from collections.abc import Callable

import httpx
import pytest
from support.executables import (
    DOCKER_FOREIGN,
    EM_AARCH64,
    EM_X86_64,
    File,
    Layer,
    Symlink,
    compressed_layer,
    elf,
    image,
    layer,
    tar_bytes,
)
from support.mock_registry import MockRegistry, answer
from support.seed import Blob, IndexEntry, Manifest, PlatformSpec, index

from kmultiarch.core.images.platform import Platform
from kmultiarch.core.images.reference import ImageRef
from kmultiarch.core.resolution import Resolution
from kmultiarch.core.verification.verdicts import claim_key
from kmultiarch.errors import ResolutionError
from kmultiarch.registry.client import RegistryClient
from kmultiarch.registry.credentials import Credentials, CredentialStore
from kmultiarch.registry.settings import ClientSettings
from kmultiarch.resolve.cache import MemoryCacheBackend, ResolutionCache
from kmultiarch.resolve.verify import VerifyBounds, VerifyRun, verify_images

KiB, MiB = 1024, 1024 * 1024
ARM64 = PlatformSpec("linux", "arm64")
AMD64 = PlatformSpec("linux", "amd64")
ARM_BINARY = elf(EM_AARCH64, size=300 * KiB)
X86_BINARY = elf(EM_X86_64, size=300 * KiB)


class Counted(httpx.AsyncByteStream):
    """A body in 16 KiB chunks that counts what the client pulled; ``pause`` seconds before
    each chunk (a slow registry)."""

    def __init__(self, body: bytes, pulled: list[int], pause: float = 0.0) -> None:
        self._body, self._pulled, self._pause = body, pulled, pause

    async def __aiter__(self):  # type: ignore[no-untyped-def]
        for start in range(0, len(self._body), 16 * KiB):
            if self._pause:
                await asyncio.sleep(self._pause)
            chunk = self._body[start : start + 16 * KiB]
            self._pulled.append(len(chunk))
            yield chunk


class Registry(MockRegistry):
    """The mock registry, serving blobs as counted streams (``pulled`` per digest)."""

    def __init__(self, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.pulled: dict[str, list[int]] = {}
        self.pause = 0.0

    def push(self, repository: str, tag: str, manifest: Manifest) -> str:
        for item in manifest.walk():
            for blob in item.blobs:
                self.blobs[blob.digest] = blob.data
            self.manifests[(repository, item.digest)] = (item.media_type, item.data)
        self.manifests[(repository, tag)] = (manifest.media_type, manifest.data)
        return manifest.digest

    def __call__(self, request: httpx.Request) -> httpx.Response:
        response = super().__call__(request)
        digest = request.url.path.rpartition("/blobs/")[2]
        if digest and response.status_code == 200 and request.url.path.count("/blobs/"):
            pulled = self.pulled.setdefault(digest, [])
            body = self.blobs[digest]
            return httpx.Response(
                200, headers=response.headers, stream=Counted(body, pulled, self.pause)
            )
        return response

    def bytes_pulled(self, digest: str) -> int:
        return sum(self.pulled.get(digest, []))

    def gets(self, fragment: str) -> int:
        return sum(1 for r in self.requests if r.method == "GET" and fragment in r.url.path)


def resolution(registry: Registry, name: str, digest: str, tag: str = "1.0") -> Resolution:
    """As the resolver answers (its platforms are not what verification reads)."""
    platforms = frozenset({Platform.parse("linux/arm64")})
    return Resolution(ImageRef.parse(f"{registry.host}/{name}:{tag}"), platforms, digest, None)


def run(
    registry: Registry | Callable[[httpx.Request], httpx.Response],
    resolutions: list[Resolution],
    cache: ResolutionCache | None = None,
    *,
    credentials: Credentials | None = None,
    **bounds: float,
) -> VerifyRun:
    class Store(CredentialStore):
        def lookup(self, host: str) -> Credentials | None:
            return credentials

    settings = ClientSettings(retries=1, backoff=0.0)
    return verify_images(
        resolutions,
        cache or ResolutionCache(MemoryCacheBackend()),
        registries={},
        bounds=VerifyBounds(**bounds),  # type: ignore[arg-type]
        client_factory=lambda: RegistryClient(
            {}, settings, Store(environ={}), transport=httpx.MockTransport(registry)
        ),
    )


def only(verify_run: VerifyRun) -> tuple[str, str | None, str]:
    (result,) = verify_run.results.values()
    assert result.error is None, result.error
    (platform,) = result.platforms
    return platform.status, platform.code, platform.reason


def single(layers: list[Layer], platform: PlatformSpec = ARM64, **config: object) -> Manifest:
    config.setdefault("entrypoint", ["/app/server"])
    return image(platform, layers, **config)  # type: ignore[arg-type]


def noise(size: int) -> bytes:
    return random.Random(size).randbytes(size)


def test_a_layer_the_file_is_in_is_read_whole() -> None:
    # A later entry of the layer may replace the file (the runtime extracts every entry),
    # and only the whole layer can be checked against its digest: read to its end.
    registry = Registry()
    big = layer(File("app/server", ARM_BINARY), File("app/data", noise(4 * MiB), 0o644))
    digest = registry.push("app", "1.0", single([big]))
    outcome = run(registry, [resolution(registry, "app", digest)])
    assert only(outcome)[0] == "verified"
    assert registry.bytes_pulled(big.blob.digest) == len(big.blob.data)
    spent = outcome.stats.per_manifest[claim_key(digest, Platform.parse("linux/arm64"))]
    assert spent == registry.bytes_pulled(big.blob.digest)


def test_the_download_budget_leaves_it_unverified_with_bounded_bytes() -> None:
    registry = Registry()
    big = layer(File("app/data", noise(2 * MiB), 0o644), File("app/server", ARM_BINARY))
    digest = registry.push("app", "1.0", single([big]))
    cache = ResolutionCache(MemoryCacheBackend())
    outcome = run(registry, [resolution(registry, "app", digest)], cache, max_bytes=256 * KiB)
    status, code, reason = only(outcome)
    assert (status, code) == ("unverified", "budget")
    assert "256 KiB" in reason
    assert 256 * KiB < registry.bytes_pulled(big.blob.digest) <= 256 * KiB + 16 * KiB
    # Not cached: with room, the next run gets its verdict.
    assert only(run(registry, [resolution(registry, "app", digest)], cache))[0] == "verified"


def test_a_gzip_bomb_stops_at_the_decompressed_cap() -> None:
    registry = Registry()
    zeros = tarfile.TarInfo("zeros")
    zeros.size = 1 << 30
    bomb = gzip.compress(zeros.tobuf(format=tarfile.USTAR_FORMAT))
    bomb += gzip.compress(bytes(64 * MiB), compresslevel=9) * 8  # 512 MiB of zeros
    bomb_layer = Layer(
        Blob("application/vnd.oci.image.layer.v1.tar+gzip", bomb), "sha256:" + "0" * 64
    )
    digest = registry.push(
        "bomb", "1.0", single([layer(File("app/server", ARM_BINARY)), bomb_layer])
    )
    outcome = run(registry, [resolution(registry, "bomb", digest)], max_expanded=16 * MiB)
    assert only(outcome)[:2] == ("unverified", "expanded")
    assert outcome.stats.expanded <= 16 * MiB + 1 * MiB
    assert registry.bytes_pulled(bomb_layer.blob.digest) < 256 * KiB


@pytest.mark.parametrize(
    ("spoil", "code"),
    [
        (lambda data: data[:10] + b"\xff" * 20 + data[30:], "damaged"),  # corrupt gzip
        (lambda data: gzip.compress(gzip.decompress(data)[:700]), "digest"),  # cut in a header
        (lambda data: gzip.compress(b"not a tar archive".ljust(1024, b"!")), "damaged"),
    ],
)
def test_damaged_layers_are_unverified_and_not_cached(
    spoil: Callable[[bytes], bytes], code: str
) -> None:
    registry = Registry()
    good = layer(File("app/server", ARM_BINARY))
    digest = registry.push("app", "1.0", single([good]))
    registry.blobs[good.blob.digest] = spoil(good.blob.data)
    cache = ResolutionCache(MemoryCacheBackend())
    assert only(run(registry, [resolution(registry, "app", digest)], cache))[:2] == (
        "unverified",
        code,
    )
    assert not any("@" in key for key in list(cache.backend.keys()) if key.startswith("verify:"))


def test_a_layer_of_a_type_not_read_is_said_and_kept() -> None:
    registry = Registry()
    base = layer(File("app/server", ARM_BINARY))
    sealed = layer(
        File("etc/x", b"x", 0o644),
        media_type="application/vnd.oci.image.layer.v1.tar+gzip+encrypted",
    )
    digest = registry.push("app", "1.0", single([base, sealed]))
    cache = ResolutionCache(MemoryCacheBackend())
    status, code, reason = only(run(registry, [resolution(registry, "app", digest)], cache))
    assert (status, code) == ("unverified", "layer-media-type")
    assert "+encrypted" in reason
    assert any(key == f"verify:{digest}" for key in list(cache.backend.keys()))


def test_a_foreign_layer_the_registry_does_not_serve() -> None:
    """A Windows base layer (foreign): needed only when the file is not in the layers above."""
    registry = Registry()
    base = compressed_layer(tar_bytes([File("Windows/cmd.exe", b"MZ")], prefix="Files/"),
                            media_type=DOCKER_FOREIGN)  # fmt: skip
    app = layer(File("app/server.exe", b"MZ" + bytes(200)), windows=True)
    windows = PlatformSpec("windows", "amd64", os_version="10.0.17763.1")
    found = registry.push(
        "win", "1.0", single([base, app], windows, entrypoint=["C:\\app\\server.exe"])
    )
    lost = registry.push("win", "2.0", single([base, app], windows, entrypoint=["cmd"]))
    del registry.blobs[base.blob.digest]
    outcome = run(
        registry, [resolution(registry, "win", found), resolution(registry, "win", lost, "2.0")]
    )
    first, second = outcome.results.values()
    assert first.platforms[0].code == "not-executable"  # read from its own layer: MZ, no PE
    assert second.platforms[0].code == "foreign-layer"
    assert registry.gets(base.blob.digest) == 1


def test_a_proxy_that_compresses_the_layer_is_decoded() -> None:
    registry = Registry()
    plain = layer(File("app/server", ARM_BINARY))
    digest = registry.push("app", "1.0", single([plain]))

    def proxy(request: httpx.Request) -> httpx.Response:
        response = registry(request)
        if "/blobs/" in request.url.path and response.status_code == 200:
            body = gzip.compress(registry.blobs[request.url.path.rpartition("/")[2]])
            return answer(200, body, content_encoding="gzip")
        return response

    assert only(run(proxy, [resolution(registry, "app", digest)]))[0] == "verified"


def test_blob_streams_answer_challenges_and_are_retried() -> None:
    registry = Registry(auth="basic")
    plain = layer(File("app/server", ARM_BINARY))
    digest = registry.push("app", "1.0", single([plain]))
    registry.fail(f"/v2/app/blobs/{plain.blob.digest}", answer(503))
    outcome = run(
        registry, [resolution(registry, "app", digest)], credentials=Credentials("alice", "secret")
    )
    assert only(outcome)[0] == "verified"
    assert registry.gets(plain.blob.digest) >= 2


def test_a_slow_registry_meets_the_deadline() -> None:
    registry = Registry()
    big = layer(File("app/data", noise(1 * MiB), 0o644), File("app/server", ARM_BINARY))
    digest = registry.push("app", "1.0", single([big]))
    registry.pause = 0.05
    outcome = run(registry, [resolution(registry, "app", digest)], seconds=0.5)
    assert only(outcome)[:2] == ("unverified", "deadline")


def test_layers_shared_by_platforms_are_read_once_and_warm_runs_ask_nothing() -> None:
    registry = Registry()
    shared = layer(File("entrypoint.sh", b"#!/bin/sh\nexec true\n"))
    children = [
        (
            spec,
            single(
                [layer(File("bin/busybox", binary), Symlink("bin/sh", "busybox")), shared],
                spec,
                entrypoint=["/entrypoint.sh"],
            ),
        )
        for spec, binary in ((AMD64, X86_BINARY), (ARM64, ARM_BINARY))
    ]
    digest = registry.push("multi", "1.0", index([IndexEntry(m, p) for p, m in children]))
    cache = ResolutionCache(MemoryCacheBackend())
    cold = run(registry, [resolution(registry, "multi", digest)], cache)
    (result,) = cold.results.values()
    assert [p.status for p in result.platforms] == ["verified", "verified"]
    assert registry.gets(shared.blob.digest) == 1
    asked = len(registry.requests)

    def nothing(request: httpx.Request) -> httpx.Response:
        raise AssertionError(f"a warm run asked {request.url}")

    warm = run(nothing, [resolution(registry, "multi", digest)], cache)
    assert list(warm.results.values()) == [result]
    assert warm.requests == {} and len(registry.requests) == asked
    assert (warm.stats.platforms, warm.stats.cached) == (2, 2)


def test_zstd_frames_one_after_the_other() -> None:
    import zstandard

    registry = Registry()
    tar = tar_bytes([File("app/server", ARM_BINARY)])
    frames = b"".join(
        zstandard.ZstdCompressor().compress(tar[start : start + 50_000])
        for start in range(0, len(tar), 50_000)
    )
    zstd = Layer(Blob("application/vnd.oci.image.layer.v1.tar+zstd", frames), "sha256:" + "1" * 64)
    digest = registry.push("app", "1.0", single([zstd]))
    assert only(run(registry, [resolution(registry, "app", digest)]))[0] == "verified"


def test_images_that_were_not_resolved_or_hold_no_platform() -> None:
    registry = Registry()
    failed = Resolution(
        ImageRef.parse("registry.test/gone:1.0"),
        error=ResolutionError("registry.test/gone:1.0", "not found"),
    )
    bundle = Resolution(
        ImageRef.parse("registry.test/bundle:1.0"), frozenset(), "sha256:" + "2" * 64
    )
    override = Resolution(ImageRef.parse("registry.test/o:1.0"), source="override")
    outcome = run(registry, [failed, bundle, override])
    gone, metadata, declared = outcome.results.values()
    assert gone.error == "registry.test/gone:1.0: not found"
    assert metadata.error is None and metadata.platforms == ()
    assert declared.error is not None and "override" in declared.error
    assert registry.requests == []


def test_a_zstd_bomb_stops_at_the_decompressed_cap_in_bounded_steps() -> None:
    import zstandard

    registry = Registry()
    zeros = tarfile.TarInfo("zeros")
    zeros.size = 512 * MiB
    tar_head = zeros.tobuf(format=tarfile.USTAR_FORMAT)
    compressor = zstandard.ZstdCompressor(level=19)
    bomb = compressor.compress(tar_head) + compressor.compress(bytes(512 * MiB))
    bomb_layer = Layer(
        Blob("application/vnd.oci.image.layer.v1.tar+zstd", bomb), "sha256:" + "3" * 64
    )
    base = layer(File("app/server", ARM_BINARY))
    digest = registry.push("bomb", "1.0", single([base, bomb_layer]))
    outcome = run(registry, [resolution(registry, "bomb", digest)], max_expanded=16 * MiB)
    assert only(outcome)[:2] == ("unverified", "expanded")
    assert outcome.stats.expanded <= 16 * MiB + 4 * MiB  # one step past the cap at most


@pytest.mark.parametrize(
    ("compression", "label"),
    [
        ("none", "application/vnd.oci.image.layer.v1.tar+gzip"),
        ("gzip", "application/vnd.oci.image.layer.v1.tar"),
        ("zstd", "application/vnd.docker.image.rootfs.diff.tar.gzip"),
    ],
)
def test_a_mislabelled_layer_is_read_by_its_first_bytes(compression: str, label: str) -> None:
    registry = Registry()
    mislabelled = layer(File("app/server", ARM_BINARY), compression=compression, media_type=label)
    digest = registry.push("app", "1.0", single([mislabelled]))
    assert only(run(registry, [resolution(registry, "app", digest)]))[0] == "verified"


@pytest.mark.parametrize(
    "forge",
    [
        lambda good, other: other,  # another layer's bytes under this digest
        lambda good, other: good + b"\0" * 1024,  # the right bytes, and more
    ],
)
def test_a_layer_whose_bytes_are_not_its_digests_is_never_verified_nor_cached(
    forge: Callable[[bytes, bytes], bytes],
) -> None:
    """A mirror serving an arm64 program under the layer of an x86-64 one (the manifest
    claims arm64): without the digest check it was verified, cached and shared."""
    registry = Registry()
    truth = layer(File("app/server", X86_BINARY))
    forged = layer(File("app/server", ARM_BINARY))
    digest = registry.push("app", "1.0", single([truth]))
    registry.blobs[truth.blob.digest] = forge(truth.blob.data, forged.blob.data)
    cache = ResolutionCache(MemoryCacheBackend())
    status, code, reason = only(run(registry, [resolution(registry, "app", digest)], cache))
    assert (status, code) == ("unverified", "digest"), reason
    assert not any("@" in key for key in list(cache.backend.keys()))
    registry.blobs[truth.blob.digest] = truth.blob.data  # the registry itself, next run
    assert only(run(registry, [resolution(registry, "app", digest)], cache))[0] == "mismatch"


@pytest.mark.parametrize(
    "annotation",
    [
        "containerd.io/snapshot/stargz/toc.digest",
        "io.github.containers.zstd-chunked.manifest-checksum",
    ],
)
def test_a_layer_a_runtime_may_pull_lazily_is_never_the_source_of_a_verdict(
    annotation: str,
) -> None:
    """eStargz and zstd:chunked layers: the stargz snapshotter and CRI-O's partial pulls
    build the files from the table of contents, which may differ from the tar stream."""
    import dataclasses
    import json

    registry = Registry()
    plain = single([layer(File("app/server", ARM_BINARY))])
    document = json.loads(plain.data)
    document["layers"][0]["annotations"] = {annotation: "sha256:" + "1" * 64}
    lazy = dataclasses.replace(plain, data=json.dumps(document).encode())
    digest = registry.push("app", "1.0", lazy)
    status, code, reason = only(run(registry, [resolution(registry, "app", digest)]))
    assert (status, code) == ("unverified", "ambiguous")
    assert annotation in reason
