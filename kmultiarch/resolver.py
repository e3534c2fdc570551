"""Images -> platforms: overrides, then the cache, then the registry, concurrently.

A warm run (every tag checked within the TTL) makes no request at all and never builds an HTTP
client. A stale tag is revalidated with HEAD; its manifest is fetched again only if the tag
moved. Cold lookups run concurrently within a bound, one lookup per distinct image; children of
an index that several images share are fetched once.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Literal

from kmultiarch.cache import ResolutionCache
from kmultiarch.errors import KmultiarchError, ManifestError, RegistryError
from kmultiarch.lockfile import ImageLock
from kmultiarch.manifest import (
    IMAGE_TYPES,
    MAX_CONFIG_BYTES,
    MAX_INDEX_DEPTH,
    ParsedManifest,
    compute_digest,
    parse_config_platform,
    parse_manifest,
    verify_digest,
)
from kmultiarch.platform import Platform
from kmultiarch.policy import Policy
from kmultiarch.reference import ImageRef
from kmultiarch.registry.client import ClientSettings, Endpoint, RegistryClient

ResolutionSource = Literal["registry", "cache", "override", "lock"]


@dataclass(frozen=True)
class Resolution:
    """What is known of one image: its platforms, or why they could not be resolved."""

    reference: ImageRef
    platforms: frozenset[Platform] = frozenset()
    digest: str | None = None
    media_type: str | None = None
    source: ResolutionSource = "registry"
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None


@dataclass
class ResolverStats:
    images: int = 0
    cache_hits: int = 0
    overrides: int = 0
    locked: int = 0
    lookups: int = 0
    failures: int = 0


ProgressCallback = Callable[[int, int], None]


class Resolver:
    def __init__(
        self,
        policy: Policy,
        cache: ResolutionCache,
        settings: ClientSettings | None = None,
        client_factory: Callable[[], RegistryClient] | None = None,
        *,
        lock: ImageLock | None = None,
        offline: bool = False,
    ) -> None:
        self.policy = policy
        self.cache = cache
        self.lock = lock
        self.offline = offline
        self.settings = settings or ClientSettings()
        self._client_factory = client_factory or (
            lambda: RegistryClient(policy.registries, self.settings)
        )
        self.stats = ResolverStats()
        self.requests: dict[str, int] = {}

    def resolve(
        self, references: Iterable[ImageRef], progress: ProgressCallback | None = None
    ) -> dict[ImageRef, Resolution]:
        """Resolve every distinct reference. Synchronous: runs its own event loop once."""
        unique = list(dict.fromkeys(references))
        self.stats.images = len(unique)
        results: dict[ImageRef, Resolution] = {}
        pending: list[ImageRef] = []
        stale: dict[ImageRef, str] = {}
        for reference in unique:
            known = self._without_network(reference, stale)
            if known is not None:
                results[reference] = known
            else:
                pending.append(reference)
        if progress is not None:
            progress(len(results), len(unique))
        if pending:
            results.update(
                asyncio.run(
                    self._resolve_remote(pending, stale, progress, len(results), len(unique))
                )
            )
        self.stats.failures = sum(1 for r in results.values() if not r.ok)
        return {reference: results[reference] for reference in unique}

    def _without_network(
        self, reference: ImageRef, stale: dict[ImageRef, str]
    ) -> Resolution | None:
        override = self.policy.override_for(str(reference))
        if override is None and reference.digest is not None:
            override = self.policy.override_for(
                str(ImageRef(reference.registry, reference.repository, reference.tag))
            )
        if override is not None:
            self.stats.overrides += 1
            return Resolution(reference, override.platforms, reference.digest, None, "override")
        locked = self.lock.lookup(reference) if self.lock is not None else None
        if locked is not None:
            self.stats.locked += 1
            return Resolution(reference, locked.platforms, locked.digest, locked.media_type, "lock")
        if self.offline:
            # Offline renders depend on the lock alone, not on what a cache happens to hold.
            return Resolution(reference, error=self._offline_error(reference))
        if reference.digest is not None:
            digest = reference.digest
        else:
            tag = self.cache.get_tag(_tag_key(reference))
            if tag is None:
                return None
            if not tag.is_fresh(self.cache.tag_ttl, time.time()):
                stale[reference] = tag.digest
                return None
            digest = tag.digest
        record = self.cache.get_platforms(digest)
        if record is None:
            return None
        self.stats.cache_hits += 1
        return Resolution(reference, record.platforms, digest, record.media_type, "cache")

    def _offline_error(self, reference: ImageRef) -> str:
        if self.lock is None:
            return (
                f"{reference}: not looked up (--offline) and no lock file was given; pass "
                "--lock FILE or set the policy's lock:"
            )
        return (
            f"{reference}: not in the lock file {self.lock.source} and --offline forbids a lookup; "
            "add it with `kmultiarch lock`"
        )

    async def _resolve_remote(
        self,
        pending: list[ImageRef],
        stale: dict[ImageRef, str],
        progress: ProgressCallback | None,
        done: int,
        total: int,
    ) -> dict[ImageRef, Resolution]:
        semaphore = asyncio.Semaphore(max(1, self.settings.concurrency))
        client = self._client_factory()
        client.plan((ref.registry, ref.repository) for ref in pending)
        lookup = _Lookup(client, self.cache)
        finished = done

        async def one(reference: ImageRef) -> Resolution:
            nonlocal finished
            async with semaphore:
                self.stats.lookups += 1
                try:
                    resolution = await lookup.resolve(reference, reference in stale)
                except KmultiarchError as exc:
                    resolution = Resolution(reference, error=str(exc))
            finished += 1
            if progress is not None:
                progress(finished, total)
            return resolution

        async with client:
            resolved = await asyncio.gather(*(one(reference) for reference in pending))
        self.requests = dict(client.requests)
        return {resolution.reference: resolution for resolution in resolved}


class _Lookup:
    """The network half of resolving, for one run."""

    def __init__(self, client: RegistryClient, cache: ResolutionCache) -> None:
        self.client = client
        self.cache = cache
        self._children: dict[str, asyncio.Future[frozenset[Platform]]] = {}

    async def resolve(self, reference: ImageRef, tag_is_stale: bool) -> Resolution:
        mirror_failures: list[str] = []
        for endpoint in self.client.endpoints(reference.registry):
            try:
                return await self._resolve_at(endpoint, reference, tag_is_stale)
            except RegistryError as exc:
                if endpoint.is_mirror:
                    # containerd's rule: a mirror that fails hands over to the registry itself.
                    mirror_failures.append(_without_source(str(exc), reference))
                    continue
                if not mirror_failures:
                    raise
                raise type(exc)(
                    f"{exc}; before that, the mirror failed: {'; '.join(mirror_failures)}"
                ) from exc
        raise AssertionError("endpoints_for always lists the registry itself")

    async def _resolve_at(
        self, endpoint: Endpoint, reference: ImageRef, tag_is_stale: bool
    ) -> Resolution:
        source = str(reference)
        repository = reference.repository
        if tag_is_stale and reference.digest is None:
            assert reference.tag is not None
            digest = await self.client.head_manifest(
                endpoint, repository, reference.tag, source=source
            )
            if digest is not None:
                record = self.cache.get_platforms(digest)
                if record is not None:
                    self.cache.put_tag(_tag_key(reference), digest)
                    return Resolution(
                        reference, record.platforms, digest, record.media_type, "registry"
                    )
        fetched = await self.client.get_manifest(
            endpoint, repository, reference.api_reference, source=source
        )
        # Parsed before the digest check: schema 1 is reported as unsupported rather than as a
        # digest mismatch (its digest covers the payload without signatures, not the body).
        manifest = parse_manifest(fetched.body, fetched.content_type, source=source)
        digest = _verified_digest(fetched.body, reference.digest, fetched.digest, source)
        platforms = await self._platforms(endpoint, repository, manifest, source, depth=0)
        self.cache.put_platforms(digest, manifest.media_type, platforms)
        if reference.digest is None:
            self.cache.put_tag(_tag_key(reference), digest)
        return Resolution(reference, platforms, digest, manifest.media_type, "registry")

    async def _platforms(
        self,
        endpoint: Endpoint,
        repository: str,
        manifest: ParsedManifest,
        source: str,
        *,
        depth: int,
    ) -> frozenset[Platform]:
        if manifest.kind == "image":
            body = await self.client.get_blob(
                endpoint, repository, manifest.config_digest, cap=MAX_CONFIG_BYTES, source=source
            )
            verify_digest(body, manifest.config_digest, source=f"{source} config")
            return frozenset({parse_config_platform(body, source=source)})
        found: set[Platform] = set()
        children = []
        for entry in manifest.entries:
            if entry.platform is not None and entry.media_type in IMAGE_TYPES:
                found.add(entry.platform)
            else:
                if depth + 1 > MAX_INDEX_DEPTH:
                    raise ManifestError(
                        f"{source}: indexes nest deeper than {MAX_INDEX_DEPTH} levels"
                    )
                children.append(self._child(endpoint, repository, entry.digest, source, depth + 1))
        for platforms in await asyncio.gather(*children):
            found.update(platforms)
        if not found:
            raise ManifestError(
                f"{source}: the index lists no runnable platform (only attestations or unknown "
                "entries)"
            )
        return frozenset(found)

    async def _child(
        self, endpoint: Endpoint, repository: str, digest: str, source: str, depth: int
    ) -> frozenset[Platform]:
        record = self.cache.get_platforms(digest)
        if record is not None:
            return record.platforms
        if digest not in self._children:
            self._children[digest] = asyncio.ensure_future(
                self._fetch_child(endpoint, repository, digest, source, depth)
            )
        return await self._children[digest]

    async def _fetch_child(
        self, endpoint: Endpoint, repository: str, digest: str, source: str, depth: int
    ) -> frozenset[Platform]:
        child_source = f"{source} (child {digest[:19]})"
        fetched = await self.client.get_manifest(endpoint, repository, digest, source=child_source)
        verify_digest(fetched.body, digest, source=child_source)
        manifest = parse_manifest(fetched.body, fetched.content_type, source=child_source)
        platforms = await self._platforms(endpoint, repository, manifest, child_source, depth=depth)
        self.cache.put_platforms(digest, manifest.media_type, platforms)
        return platforms


def _verified_digest(body: bytes, pinned: str | None, announced: str | None, source: str) -> str:
    """The digest of what was fetched, checked against what was asked for or announced."""
    if pinned is not None:
        verify_digest(body, pinned, source=source)
        return pinned
    if announced:
        verify_digest(body, announced, source=source)
        return announced
    return compute_digest(body)


def _without_source(message: str, reference: ImageRef) -> str:
    prefix = f"{reference}: "
    return message[len(prefix) :] if message.startswith(prefix) else message


def _tag_key(reference: ImageRef) -> str:
    return f"{reference.name}:{reference.tag}"
