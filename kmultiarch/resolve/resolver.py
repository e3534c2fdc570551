"""Images -> platforms: overrides, then the cache, then the registry, concurrently.

A warm run (every tag checked within the TTL) makes no request at all and never builds an HTTP
client. A stale tag is revalidated with HEAD; its manifest is fetched again only if the tag
moved. Cold lookups run concurrently within a bound, one lookup per distinct image; children of
an index that several images share are fetched once.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kmultiarch.core.images.reference import ImageRef
from kmultiarch.core.lock import ImageLock
from kmultiarch.core.policy.model import ResolutionPolicy
from kmultiarch.core.resolution import ProgressCallback, Resolution, tag_key
from kmultiarch.errors import ResolutionError
from kmultiarch.registry.settings import ClientSettings
from kmultiarch.resolve.cache import ResolutionCache

if TYPE_CHECKING:
    from kmultiarch.registry.client import RegistryClient
    from kmultiarch.registry.credentials import CredentialStore


@dataclass
class ResolverStats:
    images: int = 0
    cache_hits: int = 0
    overrides: int = 0
    locked: int = 0
    lookups: int = 0
    failures: int = 0


class Resolver:
    def __init__(
        self,
        policy: ResolutionPolicy,
        cache: ResolutionCache,
        settings: ClientSettings | None = None,
        client_factory: Callable[[], RegistryClient] | None = None,
        *,
        lock: ImageLock | None = None,
        offline: bool = False,
        credentials: CredentialStore | None = None,
    ) -> None:
        self.policy = policy
        self.cache = cache
        self.lock = lock
        self.offline = offline
        self.settings = settings or ClientSettings()
        self.credentials = credentials
        self.client_factory = client_factory or self._default_client
        self.stats = ResolverStats()
        self.requests: dict[str, int] = {}

    def _default_client(self) -> RegistryClient:
        from kmultiarch.registry.client import RegistryClient

        return RegistryClient(self.policy.registries, self.settings, self.credentials)

    def resolve(
        self, references: Iterable[ImageRef], progress: ProgressCallback | None = None
    ) -> dict[ImageRef, Resolution]:
        """Resolve every distinct reference. Synchronous: runs its own event loop once, and only
        when something must be looked up (a warm run never imports asyncio's networking)."""
        unique, results, pending, stale = self._known(references, progress)
        if pending:
            import asyncio

            results.update(
                asyncio.run(
                    self._resolve_remote(pending, stale, progress, len(results), len(unique))
                )
            )
        return self._finish(unique, results)

    async def resolve_async(
        self, references: Iterable[ImageRef], progress: ProgressCallback | None = None
    ) -> dict[ImageRef, Resolution]:
        """:meth:`resolve` for callers that already run an event loop."""
        unique, results, pending, stale = self._known(references, progress)
        if pending:
            results.update(
                await self._resolve_remote(pending, stale, progress, len(results), len(unique))
            )
        return self._finish(unique, results)

    def _known(
        self, references: Iterable[ImageRef], progress: ProgressCallback | None
    ) -> tuple[list[ImageRef], dict[ImageRef, Resolution], list[ImageRef], dict[ImageRef, str]]:
        """What overrides, the lock and the cache answer; the rest is pending (``stale``: tags
        whose cached digest must be revalidated)."""
        unique = list(dict.fromkeys(references))
        self.stats.images = len(unique)
        results: dict[ImageRef, Resolution] = {}
        pending: list[ImageRef] = []
        stale: dict[ImageRef, str] = {}
        answered = {reference: self._without_cache(reference) for reference in unique}
        rest = [reference for reference, known in answered.items() if known is None]
        # A shared cache level is asked for all of them at once (one round trip, not one each).
        self.cache.prefetch(
            (tag_key(reference) for reference in rest if reference.digest is None),
            (reference.digest for reference in rest if reference.digest is not None),
        )
        for reference in unique:
            known = answered[reference] or self._from_cache(reference, stale)
            if known is not None:
                results[reference] = known
            else:
                pending.append(reference)
        if progress is not None:
            progress(len(results), len(unique))
        return unique, results, pending, stale

    def _finish(
        self, unique: list[ImageRef], results: dict[ImageRef, Resolution]
    ) -> dict[ImageRef, Resolution]:
        self.stats.failures = sum(1 for r in results.values() if not r.ok)
        return {reference: results[reference] for reference in unique}

    def _without_cache(self, reference: ImageRef) -> Resolution | None:
        """What an override or the lock says (or ``--offline``'s error), before any cache."""
        override = self.policy.override_of(reference)
        if override is not None:
            self.stats.overrides += 1
            return Resolution(reference, override.platforms, reference.digest, None, "override")
        locked = self.lock.lookup(reference) if self.lock is not None else None
        if locked is not None:
            self.stats.locked += 1
            # The verdicts it records (lock --verify) answer spec.verify offline too.
            verification = locked.verification if self.policy.verify.mode != "off" else None
            return Resolution(
                reference,
                locked.platforms,
                locked.digest,
                locked.media_type,
                "lock",
                verification=verification,
            )
        if self.offline:
            # Offline renders depend on the lock alone, not on what a cache happens to hold.
            # Answered by the lock's silence: nothing was looked up.
            return Resolution(reference, source="lock", error=self._offline_error(reference))
        return None

    def _from_cache(self, reference: ImageRef, stale: dict[ImageRef, str]) -> Resolution | None:
        if reference.digest is not None:
            digest = reference.digest
        else:
            tag = self.cache.get_tag(tag_key(reference))
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

    def _offline_error(self, reference: ImageRef) -> ResolutionError:
        if self.lock is None:
            return ResolutionError(
                str(reference),
                "not looked up (--offline) and no lock file was given; pass "
                "--lock FILE or set the policy's lock:",
            )
        return ResolutionError(
            str(reference),
            f"not in the lock file {self.lock.source} and --offline forbids a lookup; "
            "add it with `kmultiarch lock`",
        )

    async def _resolve_remote(
        self,
        pending: list[ImageRef],
        stale: dict[ImageRef, str],
        progress: ProgressCallback | None,
        done: int,
        total: int,
    ) -> dict[ImageRef, Resolution]:
        # The network half lives in its own module: a warm run never imports it (nor httpx).
        from kmultiarch.resolve.remote import resolve_remote

        client = self.client_factory()
        self.stats.lookups += len(pending)
        try:
            resolved = await resolve_remote(
                client,
                self.cache,
                self.settings.concurrency,
                pending,
                set(stale),
                progress,
                done,
                total,
            )
        finally:
            self.requests = dict(client.requests)
        for reference in stale:
            resolution = resolved.get(reference)
            if resolution is not None and resolution.error is not None:
                resolved[reference] = self._stale_if_error(reference, resolution)
        return resolved

    def _stale_if_error(self, reference: ImageRef, failed: Resolution) -> Resolution:
        """HTTP's stale-if-error, for tags: when revalidating a cached tag fails, its cached
        answer still serves for ``staleIfError`` seconds past its TTL, with a warning."""
        allowed = self.policy.stale_if_error
        tag = self.cache.get_tag(tag_key(reference))
        if allowed <= 0 or tag is None or failed.error is None:
            return failed
        age = time.time() - tag.checked_at
        if age - self.cache.tag_ttl > allowed:
            return failed
        record = self.cache.get_platforms(tag.digest)
        if record is None:
            return failed
        self.cache.warnings.append(
            f"{reference}: {failed.error.reason}; using the answer cached {_duration(age)} ago "
            f"(staleIfError: {_duration(allowed)})"
        )
        return Resolution(reference, record.platforms, tag.digest, record.media_type, "cache")


def _duration(seconds: float) -> str:
    """``2 h 5 min``, ``3 min``, ``40 s``: an age as people read it."""
    seconds = max(0, int(seconds))
    if seconds >= 3600:
        hours, rest = divmod(seconds, 3600)
        return f"{hours} h {rest // 60} min" if rest >= 60 else f"{hours} h"
    if seconds >= 60:
        return f"{seconds // 60} min"
    return f"{seconds} s"
