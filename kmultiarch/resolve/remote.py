"""The network half of resolving: registry lookups for the images the cache could not answer.

Imported only when a run has something to look up, so a warm run loads neither asyncio's
networking nor httpx.
"""

from __future__ import annotations

import asyncio

from kmultiarch.core.images.answers import AnswerError, checked_digest, checked_platforms
from kmultiarch.core.images.oci import (
    IMAGE_TYPES,
    MAX_CONFIG_BYTES,
    MAX_INDEX_DEPTH,
    ParsedManifest,
    compute_digest,
    is_metadata_only_config,
    parse_config_platform,
    parse_manifest,
    verify_digest,
)
from kmultiarch.core.images.platform import Platform
from kmultiarch.core.images.reference import ImageRef
from kmultiarch.core.resolution import ProgressCallback, Resolution, tag_key
from kmultiarch.errors import KmultiarchError, ManifestError, RegistryError, ResolutionError
from kmultiarch.registry.client import Endpoint, RegistryClient
from kmultiarch.resolve.cache import ResolutionCache
from kmultiarch.resolve.pins import labelled_entries

#: How long a process waits for another one's answer to a tag, and how often it looks.
COALESCE_WAIT = 3.0
COALESCE_POLL = 0.05


async def resolve_remote(
    client: RegistryClient,
    cache: ResolutionCache,
    concurrency: int,
    pending: list[ImageRef],
    stale: set[ImageRef],
    progress: ProgressCallback | None,
    done: int,
    total: int,
) -> dict[ImageRef, Resolution]:
    """Look up ``pending`` concurrently, at most ``concurrency`` at once, one lookup per image;
    ``client`` is entered and closed here."""
    semaphore = asyncio.Semaphore(max(1, concurrency))
    client.plan((ref.registry, ref.repository) for ref in pending)
    lookup = _Lookup(client, cache)
    finished = done

    async def one(reference: ImageRef) -> Resolution:
        nonlocal finished
        async with semaphore:
            deadline = client.settings.lookup_timeout
            try:
                async with asyncio.timeout(deadline):
                    resolution = await lookup.resolve(reference, reference in stale)
            except KmultiarchError as exc:
                resolution = Resolution(
                    reference, error=ResolutionError.from_exception(str(reference), exc)
                )
            except TimeoutError:
                resolution = Resolution(
                    reference,
                    error=ResolutionError(
                        str(reference),
                        f"no complete answer within {deadline:g} s (the whole lookup, all its "
                        "requests and retries); the registry is too slow",
                    ),
                )
        finished += 1
        if progress is not None:
            progress(finished, total)
        return resolution

    async with client:
        resolved = await asyncio.gather(*(one(reference) for reference in pending))
    return {resolution.reference: resolution for resolution in resolved}


class _Lookup:
    """The network half of resolving, for one run."""

    def __init__(self, client: RegistryClient, cache: ResolutionCache) -> None:
        self.client = client
        self.cache = cache
        #: Children being fetched, per endpoint and digest: a mirror that lacks a child must not
        #: answer for the registry when the lookup falls back to it.
        self._children: dict[tuple[str, str], asyncio.Future[frozenset[Platform]]] = {}

    async def resolve(self, reference: ImageRef, tag_is_stale: bool) -> Resolution:
        if reference.digest is None and not tag_is_stale and self.cache.shared is not None:
            # A fleet sharing a cache asks the registry once per tag: the first process to
            # claim the tag looks it up; the others wait a little for its answer.
            claimed, answered = await self._answer_of_the_fleet(reference)
            if answered is not None:
                return answered
            if claimed:
                try:
                    return await self._resolve_from_endpoints(reference, tag_is_stale)
                except BaseException:
                    # Failures are never cached: the processes waiting ask for themselves now.
                    self.cache.release_tag(tag_key(reference))
                    raise
        return await self._resolve_from_endpoints(reference, tag_is_stale)

    async def _answer_of_the_fleet(self, reference: ImageRef) -> tuple[bool, Resolution | None]:
        """Whether this process claimed the tag, and the answer another process stored."""
        key = tag_key(reference)
        claimed, tag = self.cache.claim_tag(key)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + COALESCE_WAIT
        while True:
            record = self.cache.shared_platforms(tag.digest) if tag is not None else None
            if tag is not None and record is not None:
                resolution = Resolution(
                    reference, record.platforms, tag.digest, record.media_type, "cache"
                )
                return claimed, resolution
            if claimed or loop.time() >= deadline:
                return claimed, None  # ours to look up, or the other process is slow
            await asyncio.sleep(COALESCE_POLL)
            tag, held = self.cache.fleet_answer(key)
            if tag is None and not held:
                return False, None  # its lookup failed (or the level is off): ask ourselves

    async def _resolve_from_endpoints(self, reference: ImageRef, tag_is_stale: bool) -> Resolution:
        mirror_failures: list[str] = []
        for endpoint in self.client.endpoints(reference.registry):
            try:
                return await self._resolve_at(endpoint, reference, tag_is_stale)
            except RegistryError as exc:
                if endpoint.is_mirror:
                    # containerd's rule: a mirror that fails hands over to the registry itself.
                    mirror_failures.append(
                        ResolutionError.from_exception(str(reference), exc).reason
                    )
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
            announced = await self.client.head_manifest(
                endpoint, repository, reference.tag, source=source
            )
            # A digest header that is not a digest is as good as none: the GET below verifies.
            digest = _valid_digest(announced)
            if digest is not None:
                record = self.cache.get_platforms(digest)
                if record is not None:
                    self.cache.put_tag(tag_key(reference), digest)
                    return Resolution(
                        reference, record.platforms, digest, record.media_type, "registry"
                    )
        fetched = await self.client.get_manifest(
            endpoint, repository, reference.api_reference, source=source
        )
        # Parsed before the digest check: schema 1 is reported as unsupported rather than as a
        # digest mismatch (its digest covers the payload without signatures, not the body).
        manifest = parse_manifest(fetched.body, fetched.content_type, source=source)
        digest = _verified_digest(
            fetched.body, reference.digest, _valid_digest(fetched.digest), source
        )
        platforms = _checked_platforms(
            await self._platforms(endpoint, repository, manifest, source, depth=0), source
        )
        self.cache.put_platforms(digest, manifest.media_type, platforms)
        if manifest.kind == "index":
            # What tells a later NAME@DIGEST of one of its platform manifests (resolve.pins).
            entries = labelled_entries(manifest)
            self.cache.put_listings(reference.name, digest, entries, reference.tag)
        if reference.digest is None:
            self.cache.put_tag(tag_key(reference), digest)
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
            if manifest.artifact:
                return frozenset()  # metadata-only: an artifact has no platform
            body = await self.client.get_blob(
                endpoint, repository, manifest.config_digest, cap=MAX_CONFIG_BYTES, source=source
            )
            verify_digest(body, manifest.config_digest, source=f"{source} config")
            if is_metadata_only_config(body, source=source):
                return frozenset()  # metadata-only: an OLM bundle image
            return frozenset({parse_config_platform(body, source=source)})
        found: set[Platform] = set()
        metadata_only = False
        children = []
        unlabelled = []  # entries without a platform: looked at, but never fatal
        for entry in manifest.entries:
            if entry.platform is not None and entry.media_type in IMAGE_TYPES:
                found.add(entry.platform)
            else:
                if depth + 1 > MAX_INDEX_DEPTH:
                    raise ManifestError(
                        f"{source}: indexes nest deeper than {MAX_INDEX_DEPTH} levels"
                    )
                fetch = self._child(endpoint, repository, entry.digest, source, depth + 1)
                if entry.platform is None and entry.media_type in IMAGE_TYPES:
                    unlabelled.append(fetch)
                else:
                    children.append(fetch)
        for platforms in await asyncio.gather(*children):
            found.update(platforms)
            metadata_only = metadata_only or not platforms
        for outcome in await asyncio.gather(*unlabelled, return_exceptions=True):
            # An image entry without a platform is often an artifact (an SBOM, a signature)
            # whose config is no image config: skipped when it does not resolve, as skopeo does.
            if isinstance(outcome, KmultiarchError):
                continue
            if isinstance(outcome, BaseException):
                raise outcome
            found.update(outcome)
            metadata_only = metadata_only or not outcome
        if not found and metadata_only:
            return frozenset()
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
        key = (endpoint.base_url, digest)
        if key not in self._children:
            self._children[key] = asyncio.ensure_future(
                self._fetch_child(endpoint, repository, digest, source, depth)
            )
        return await self._children[key]

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


def _valid_digest(announced: str | None) -> str | None:
    try:
        return None if announced is None else checked_digest(announced)
    except AnswerError:
        return None


def _checked_platforms(platforms: frozenset[Platform], source: str) -> frozenset[Platform]:
    """The registry's answer, by the grammar the lock's and the caches' answers meet."""
    try:
        return checked_platforms(platforms, metadata_only=True)
    except AnswerError as exc:
        raise ManifestError(f"{source}: {exc}") from exc


def _verified_digest(body: bytes, pinned: str | None, announced: str | None, source: str) -> str:
    """The digest of what was fetched, checked against what was asked for or announced."""
    if pinned is not None:
        verify_digest(body, pinned, source=source)
        return pinned
    if announced:
        verify_digest(body, announced, source=source)
        return announced
    return compute_digest(body)
