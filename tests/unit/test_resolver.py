"""The resolver over a registry written as a plain function (``support.mock_registry``):
overrides, the lock, the cache (fresh, stale, staleIfError) and the remote lookup (indexes,
single-platform images, artifacts, mirrors, digests), counting what went over the wire."""

from __future__ import annotations

import time
from collections.abc import Callable

import httpx
import pytest
from support.mock_registry import OCI_INDEX, OCI_MANIFEST, MockRegistry, answer

from kmultiarch.core.images.platform import Platform
from kmultiarch.core.images.reference import ImageRef
from kmultiarch.core.policy.model import Override, RegistrySettings, ResolutionPolicy
from kmultiarch.core.resolution import tag_key
from kmultiarch.registry.client import RegistryClient
from kmultiarch.registry.credentials import CredentialStore
from kmultiarch.registry.settings import ClientSettings
from kmultiarch.resolve.cache import MemoryCacheBackend, ResolutionCache
from kmultiarch.resolve.resolver import Resolver

HOST = "registry.test"
AMD64, ARM64 = Platform("linux", "amd64"), Platform("linux", "arm64")
TTL = 600.0


class Harness:
    """A resolver whose client talks to ``registry`` (and ``others``, by host)."""

    def __init__(
        self,
        registry: MockRegistry,
        policy: ResolutionPolicy | None = None,
        others: dict[str, Callable[[httpx.Request], httpx.Response]] | None = None,
    ) -> None:
        self.registry = registry
        self.others = others or {}
        self.cache = ResolutionCache(MemoryCacheBackend(), tag_ttl=TTL)
        self.policy = policy or ResolutionPolicy()
        self.clients = 0

    def _route(self, request: httpx.Request) -> httpx.Response:
        handler = self.others.get(request.url.host)
        return handler(request) if handler else self.registry(request)

    def _client(self) -> RegistryClient:
        self.clients += 1
        return RegistryClient(
            self.policy.registries,
            ClientSettings(retries=0, backoff=0.0),
            CredentialStore(environ={}),
            transport=httpx.MockTransport(self._route),
        )

    def resolve(
        self, *references: str, policy: ResolutionPolicy | None = None
    ) -> dict[str, object]:
        resolver = Resolver(policy or self.policy, self.cache, client_factory=self._client)
        result = resolver.resolve([ImageRef.parse(r) for r in references])
        return {str(ref): r for ref, r in result.items()}

    def age_tags(self, seconds: float) -> None:
        """Make every cached tag record ``seconds`` old."""
        for key in list(self.cache.backend.keys()):
            record = self.cache.backend.get(key)
            if record is not None and "checkedAt" in record:
                record["checkedAt"] -= seconds
                self.cache.backend.set(key, record)


def _paths(registry: MockRegistry) -> list[str]:
    return [f"{r.method} {r.url.path}" for r in registry.requests]


def test_a_cold_index_then_a_warm_run_without_any_request() -> None:
    registry = MockRegistry()
    digest = registry.add_index("app", "1.0", ["linux/amd64", "linux/arm64"])
    harness = Harness(registry)
    (cold,) = harness.resolve(f"{HOST}/app:1.0").values()
    assert cold.platforms == {AMD64, ARM64} and cold.digest == digest  # type: ignore[attr-defined]
    assert cold.source == "registry"  # type: ignore[attr-defined]
    asked = len(registry.requests)
    (warm,) = harness.resolve(f"{HOST}/app:1.0").values()
    assert warm.platforms == {AMD64, ARM64} and warm.source == "cache"  # type: ignore[attr-defined]
    assert len(registry.requests) == asked and harness.clients == 1  # no client built


def test_a_single_platform_image_is_read_from_its_config() -> None:
    registry = MockRegistry()
    registry.add_image("tool", "2", "linux", "arm64")
    (resolution,) = Harness(registry).resolve(f"{HOST}/tool:2").values()
    assert resolution.platforms == {ARM64}  # type: ignore[attr-defined]
    assert any("/blobs/" in path for path in _paths(registry))


def test_a_stale_tag_that_did_not_move_costs_one_head() -> None:
    registry = MockRegistry()
    registry.add_index("app", "1.0", ["linux/amd64", "linux/arm64"])
    harness = Harness(registry)
    harness.resolve(f"{HOST}/app:1.0")
    harness.age_tags(TTL + 1)
    registry.requests.clear()
    (resolution,) = harness.resolve(f"{HOST}/app:1.0").values()
    assert resolution.platforms == {AMD64, ARM64}  # type: ignore[attr-defined]
    assert _paths(registry) == ["HEAD /v2/app/manifests/1.0"]


def test_a_stale_tag_that_moved_is_fetched_again() -> None:
    registry = MockRegistry()
    registry.add_index("app", "1.0", ["linux/amd64"])
    harness = Harness(registry)
    harness.resolve(f"{HOST}/app:1.0")
    harness.age_tags(TTL + 1)
    moved = registry.add_index("app", "1.0", ["linux/amd64", "linux/arm64"])
    (resolution,) = harness.resolve(f"{HOST}/app:1.0").values()
    assert resolution.platforms == {AMD64, ARM64} and resolution.digest == moved  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("stale_if_error", "age", "served"),
    [(86400.0, 3600.0, True), (86400.0, 2 * 86400.0, False), (0.0, 3600.0, False)],
)
def test_stale_if_error(stale_if_error: float, age: float, served: bool) -> None:
    registry = MockRegistry()
    registry.add_index("app", "1.0", ["linux/amd64", "linux/arm64"])
    harness = Harness(registry, ResolutionPolicy(stale_if_error=stale_if_error))
    harness.resolve(f"{HOST}/app:1.0")
    harness.age_tags(age)
    registry.fail("/v2/app/manifests/1.0", answer(503))
    (resolution,) = harness.resolve(f"{HOST}/app:1.0").values()
    assert resolution.ok is served  # type: ignore[attr-defined]
    if served:
        assert resolution.platforms == {AMD64, ARM64}  # type: ignore[attr-defined]
        (warning,) = harness.cache.warnings
        assert "503" in warning and "using the answer cached 1 h ago" in warning
    else:
        assert "503" in resolution.error.reason  # type: ignore[attr-defined]


def test_overrides_and_offline_make_no_request() -> None:
    registry = MockRegistry()
    policy = ResolutionPolicy(overrides=(Override(f"{HOST}/vendor/*", frozenset({ARM64})),))
    harness = Harness(registry, policy)
    (resolution,) = harness.resolve(f"{HOST}/vendor/tool:1").values()
    assert resolution.platforms == {ARM64} and resolution.source == "override"  # type: ignore[attr-defined]
    resolver = Resolver(
        ResolutionPolicy(), harness.cache, client_factory=harness._client, offline=True
    )
    (offline,) = resolver.resolve([ImageRef.parse(f"{HOST}/app:1.0")]).values()
    assert offline.error is not None and "--offline" in offline.error.reason
    assert registry.requests == [] and harness.clients == 0


def test_artifacts_in_an_index_are_not_platforms() -> None:
    """An SBOM with no platform, an attestation (unknown/unknown), an entry annotated only with
    ``vnd.docker.reference.digest``, an artifactType: containerd and skopeo skip them."""
    registry = MockRegistry()
    artifact = {"mediaType": OCI_MANIFEST, "size": 2}
    registry.add_index(
        "app",
        "1.0",
        ["linux/amd64", "linux/arm64"],
        extra=[
            {**artifact, "digest": "sha256:" + "1" * 64},
            {
                **artifact,
                "digest": "sha256:" + "2" * 64,
                "platform": {"os": "unknown", "architecture": "unknown"},
                "annotations": {"vnd.docker.reference.type": "attestation-manifest"},
            },
            {
                **artifact,
                "digest": "sha256:" + "3" * 64,
                "annotations": {"vnd.docker.reference.digest": "sha256:" + "4" * 64},
            },
            {**artifact, "digest": "sha256:" + "5" * 64, "artifactType": "application/spdx+json"},
            {
                **artifact,
                "digest": "sha256:" + "6" * 64,
                "artifactType": "application/vnd.dev.cosign.simplesigning.v1+json",
                "platform": {"os": "linux", "architecture": "s390x"},
            },
        ],
    )
    (resolution,) = Harness(registry).resolve(f"{HOST}/app:1.0").values()
    assert resolution.ok and resolution.platforms == {AMD64, ARM64}  # type: ignore[attr-defined]


def _nested(registry: MockRegistry, tag: str) -> tuple[str, str]:
    """An index whose one entry is another index (a child fetched by digest): (outer, inner)."""
    inner = registry.add_index("app", f"inner-{tag}", ["linux/amd64", "linux/arm64"])
    size = len(registry.manifests[("app", inner)][1])
    entry = {"mediaType": OCI_INDEX, "digest": inner, "size": size}
    return registry.add_index("app", tag, [], extra=[entry]), inner


def test_a_mirror_lacking_a_child_falls_back_to_the_registry() -> None:
    registry = MockRegistry()
    outer, inner = _nested(registry, "1.0")
    mirror = MockRegistry(host="mirror.test")
    mirror.manifests = {k: v for k, v in registry.manifests.items() if k[1] in ("1.0", outer)}
    policy = ResolutionPolicy(registries={HOST: RegistrySettings(mirror="https://mirror.test")})
    harness = Harness(registry, policy, others={"mirror.test": mirror})
    (resolution,) = harness.resolve(f"{HOST}/app:1.0").values()
    assert resolution.ok, resolution.error  # type: ignore[attr-defined]
    assert resolution.platforms == {AMD64, ARM64}  # type: ignore[attr-defined]
    assert f"GET /v2/app/manifests/{inner}" in _paths(mirror)
    assert f"GET /v2/app/manifests/{inner}" in _paths(registry)


def test_a_body_that_does_not_match_its_digest_is_refused() -> None:
    registry = MockRegistry()
    digest = registry.add_index("app", "1.0", ["linux/amd64"])
    media_type, body = registry.manifests[("app", digest)]
    registry.manifests[("app", digest)] = (media_type, body.replace(b"amd64", b"arm64"))
    (resolution,) = Harness(registry).resolve(f"{HOST}/app@{digest}").values()
    assert resolution.error is not None and "digest" in resolution.error.reason  # type: ignore[attr-defined]


def test_one_image_failing_leaves_the_others_resolved() -> None:
    registry = MockRegistry()
    registry.add_index("good", "1", ["linux/amd64", "linux/arm64"])
    registry.fail("/v2/broken/manifests/1", answer(200, b"{not json"))
    results = Harness(registry).resolve(f"{HOST}/good:1", f"{HOST}/missing:1", f"{HOST}/broken:1")
    good, missing, broken = results.values()
    assert good.ok  # type: ignore[attr-defined]
    assert "not found" in missing.error.reason  # type: ignore[attr-defined]
    assert broken.error is not None  # type: ignore[attr-defined]


def test_children_shared_by_several_tags_are_fetched_once() -> None:
    registry = MockRegistry()
    outer, inner = _nested(registry, "1.0")
    registry.manifests[("app", "latest")] = registry.manifests[("app", outer)]
    results = Harness(registry).resolve(f"{HOST}/app:1.0", f"{HOST}/app:latest")
    assert all(r.platforms == {AMD64, ARM64} for r in results.values())  # type: ignore[attr-defined]
    assert _paths(registry).count(f"GET /v2/app/manifests/{inner}") == 1


def test_the_cache_keeps_the_tag_for_the_next_run() -> None:
    registry = MockRegistry()
    digest = registry.add_index("app", "1.0", ["linux/amd64"])
    harness = Harness(registry)
    harness.resolve(f"{HOST}/app:1.0")
    tag = harness.cache.get_tag(tag_key(ImageRef.parse(f"{HOST}/app:1.0")))
    assert tag is not None and tag.digest == digest and abs(tag.checked_at - time.time()) < 60


def test_a_lookup_whose_requests_each_come_just_in_time_ends_at_its_deadline() -> None:
    """Every request answered within the attempt timeout, but slowly, one after another (tag,
    index, children, configs): the whole lookup of one image is bounded, not just each request
    (issue 21: every network read has a whole-operation deadline)."""
    import asyncio

    registry = MockRegistry()
    registry.add_image("slow", "1.0", "linux", "arm64")  # the manifest, then its config

    asked: list[str] = []

    async def slowly(request: httpx.Request) -> httpx.Response:
        asked.append(request.url.path)
        await asyncio.sleep(0.2)
        return registry(request)

    def client() -> RegistryClient:
        return RegistryClient(
            {},
            ClientSettings(retries=0, backoff=0.0, attempt_timeout=1.0, lookup_timeout=0.3),
            CredentialStore(environ={}),
            transport=httpx.MockTransport(slowly),
        )

    cache = ResolutionCache(MemoryCacheBackend(), tag_ttl=TTL)
    started = time.monotonic()
    result = Resolver(ResolutionPolicy(), cache, client_factory=client).resolve(
        [ImageRef.parse(f"{HOST}/slow:1.0")]
    )
    elapsed = time.monotonic() - started
    (resolution,) = result.values()
    assert resolution.error is not None
    assert "no complete answer within 0.3 s" in resolution.error.reason
    assert elapsed < 1.0, elapsed
    # The manifest came within its attempt's timeout; the config was asked for, and cut off.
    assert len(asked) == 2 and "/blobs/" in asked[1], asked
