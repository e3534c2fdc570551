"""The one builder of a run's parts: the cache (the disk or memory, and the shared level), the
lock, the credentials (the user's, then the manifests' pull secrets), the client settings and
the resolver. Nothing else in kmultiarch constructs them, as httpx's client alone builds its
transport from its configuration.

A :class:`Session` is opened for a run and closed after it (a context manager). What its parts
had to say (a cache that could not be used, a key that could not be read) comes out as
:class:`~kmultiarch.core.findings.Finding` objects, with the engine's: adapters print one list.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Protocol

from kmultiarch.core.findings import (
    CACHE_PROBLEM,
    UNUSED_OVERRIDE,
    UNVERIFIED_IMAGE,
    Finding,
    count_of,
)
from kmultiarch.core.images.reference import ImageRef
from kmultiarch.core.resolution import ProgressCallback, References, Resolution
from kmultiarch.run.config import RunConfig

if TYPE_CHECKING:
    from kmultiarch.core.lock import ImageLock
    from kmultiarch.core.operators.pullsecrets import DockerConfig
    from kmultiarch.core.verification.verdicts import ImageVerification
    from kmultiarch.registry.credentials import CredentialStore
    from kmultiarch.resolve.cache import ResolutionCache
    from kmultiarch.resolve.resolver import Resolver
    from kmultiarch.resolve.signing import CacheKey

__all__ = ["Progress", "Session", "cache_key_from_file", "load_lock", "shared_cache_key"]

#: Why ``spec.verify`` reads nothing of an image only image volumes use (``report`` says it).
VOLUME_NOT_VERIFIED = "skipped: an image volume starts no program"


class Progress(Protocol):
    """What a front shows while images are looked up (the CLI's progress line): called with
    (done, total) as lookups finish, finished when they are over."""

    def __call__(self, done: int, total: int) -> None: ...

    def finish(self) -> None: ...


#: Given how many answers came without a lookup so far, a Progress (or None: nothing shown).
ProgressFactory = Callable[[Callable[[], int]], Progress | None]


class Session:
    """A run's assembled parts. The lock is read when the session opens; the cache and the
    resolver are built when the first images are resolved (a run with none opens no cache);
    close the session when the run is over."""

    def __init__(
        self,
        config: RunConfig,
        *,
        pull_secrets: Sequence[DockerConfig] = (),
        progress: ProgressFactory | None = None,
        cache: ResolutionCache | None = None,
    ) -> None:
        """``cache``: one the caller opened and keeps (the Python API's callers may pass
        theirs); it is not closed with the session."""
        self.config = config
        self.pull_secrets = tuple(pull_secrets)
        self.progress = progress
        self._cache: ResolutionCache | None = cache
        self._owns_cache = cache is None
        #: Read at once: a lock that cannot be used fails the run before anything else, even
        #: a run with nothing to look up.
        self.lock = load_lock(config)
        self._resolver: Resolver | None = None
        self._findings: list[Finding] = []
        #: Every reference the run resolved, for the overrides that matched none of them.
        self._resolved: set[ImageRef] = set()
        self._overrides_said = False

    def __enter__(self) -> Session:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    # The parts ------------------------------------------------------------------------------

    @property
    def cache(self) -> ResolutionCache:
        if self._cache is None:
            self._cache = self._open_cache()
        return self._cache

    @property
    def resolver(self) -> Resolver:
        if self._resolver is None:
            from kmultiarch.resolve.resolver import Resolver

            config = self.config
            self._resolver = Resolver(
                config.policy.resolution,
                self.cache,
                config.client,
                lock=self.lock,
                offline=config.offline,
                credentials=self.credentials(),
            )
        return self._resolver

    def credentials(self) -> CredentialStore | None:
        """The user's docker/podman credentials, then the manifests' pull secrets; None (the
        default store) when the manifests carry none."""
        if not self.pull_secrets:
            return None
        from kmultiarch.registry.credentials import CredentialStore, DockerConfigSource

        source = DockerConfigSource([(c.label, c.config) for c in self.pull_secrets])
        return CredentialStore(extra=[source])

    def with_pull_secrets(self, pull_secrets: Sequence[DockerConfig]) -> None:
        """Add the pull secrets of the manifests (before the first lookup)."""
        if self._resolver is not None:
            raise RuntimeError("pull secrets must be known before the resolver is built")
        self.pull_secrets = tuple(pull_secrets)

    # What a run does with them -------------------------------------------------------------

    def resolve(self, references: list[ImageRef]) -> Mapping[ImageRef, Resolution]:
        """The engine's ``resolve``: every reference's answer, with the front's progress, and
        with ``spec.verify`` each image's verification (a warm run makes no request; an image
        the engine says only image volumes use is skipped before any request: it starts no
        program)."""
        self._resolved.update(references)
        resolver = self.resolver
        shown = (
            self.progress(lambda: resolver.stats.cache_hits + resolver.stats.locked)
            if self.progress is not None
            else None
        )
        callback: ProgressCallback | None = shown
        try:
            resolved = resolver.resolve(references, callback)
        finally:
            if shown is not None:
                shown.finish()
        resolved = self._with_pins(resolved)
        if self.config.policy.resolution.verify.mode == "off":
            return resolved
        volumes = references.volumes if isinstance(references, References) else frozenset()
        return self._verified(resolved, volumes)

    def _with_pins(self, resolved: dict[ImageRef, Resolution]) -> dict[ImageRef, Resolution]:
        """References pinned to one platform's manifest: ``NAME:TAG@DIGEST`` against what the
        tag names now (a platform manifest of its index, or a tag that moved; offline,
        nothing), ``NAME@DIGEST`` against the indexes the lock records, then (not offline)
        those the cache records."""
        from kmultiarch.resolve.pins import cached_pins, listed_pins, lock_pins, pinned, with_pins

        pins = lock_pins(self.lock, resolved.values()) if self.lock is not None else {}
        if not self.config.offline:
            # Offline renders depend on the lock alone, as the resolver's answers do.
            rest = [r for r in resolved.values() if r.reference not in pins]
            pins.update(listed_pins(self.cache, rest))
        if not self.config.offline and pinned(resolved.values()):
            # The cache answers a warm run (the tags' records, the indexes' entries): the
            # network stack is loaded only when a tag is to be asked.
            cached, complete = cached_pins(resolved.values(), self.cache)
            pins.update(cached)
            if not complete:
                import asyncio

                from kmultiarch.resolve.pins import tag_pins

                client = self.resolver.client_factory()
                pins.update(asyncio.run(tag_pins(client, resolved.values(), self.cache)))
        return with_pins(resolved, pins) if pins else resolved

    def _verified(
        self, resolved: Mapping[ImageRef, Resolution], volumes: frozenset[ImageRef] = frozenset()
    ) -> dict[ImageRef, Resolution]:
        """``spec.verify``: every resolved image with the verdict on the program each of its
        platforms starts (the lock's, else the cache's, else read from the registry); under
        ``enforce``, without the platforms whose verdict is ``mismatch``. Overrides name no
        manifest: nothing to read. ``volumes``: images only image volumes use, skipped with
        the reason (nothing is read, and nothing is said of them offline)."""
        from kmultiarch.core.verification.verdicts import ImageVerification

        resolution_policy = self.config.policy.resolution
        wanted: list[Resolution] = []
        found: dict[ImageRef, ImageVerification] = {}
        for resolution in resolved.values():
            if (
                not resolution.ok
                or resolution.digest is None
                or resolution.source == "override"
                or resolution.verification is not None
            ):
                continue
            if resolution.reference in volumes:
                found[resolution.reference] = ImageVerification(
                    resolution.reference, resolution.digest, error=VOLUME_NOT_VERIFIED
                )
            else:
                wanted.append(resolution)
        if wanted and self.config.offline:
            found.update(self._not_verified_offline(wanted))
        elif wanted:
            from kmultiarch.resolve.verify import VerifyBounds, verify_images

            bounds = resolution_policy.verify
            run = verify_images(
                wanted,
                self.cache,
                registries=resolution_policy.registries,
                settings=self.config.client,
                credentials=self.credentials(),
                bounds=VerifyBounds(bounds.max_bytes, bounds.max_expanded_bytes, bounds.deadline),
            )
            found.update(run.results)
            for reference, result in run.results.items():
                if result.error is not None:
                    reason = result.error.removeprefix(f"{reference}: ")
                    self._findings.append(
                        Finding(UNVERIFIED_IMAGE, "warning", f"{reference} not verified: {reason}")
                    )
        enforce = resolution_policy.verify.mode == "enforce"
        answers: dict[ImageRef, Resolution] = {}
        for reference, resolution in resolved.items():
            verification = resolution.verification or found.get(reference)
            answers[reference] = (
                resolution.verified(verification, enforce=enforce)
                if verification is not None
                else resolution
            )
        return answers

    def _not_verified_offline(
        self, resolutions: Sequence[Resolution]
    ) -> dict[ImageRef, ImageVerification]:
        """Offline, only the lock's verdicts answer: the others are said once, and not read."""
        from kmultiarch.core.verification.verdicts import ImageVerification

        reason = "not verified: the lock records no verdict and --offline reads no layer"
        names = sorted(str(resolution.reference) for resolution in resolutions)
        shown = ", ".join(names[:5]) + (f" and {len(names) - 5} more" if len(names) > 5 else "")
        self._findings.append(
            Finding(
                UNVERIFIED_IMAGE,
                "warning",
                f"{count_of(len(names), 'image')} not verified ({shown}): "
                "the lock records no verdict for them and --offline reads no layer; record "
                "them with `kmultiarch lock --verify warn`",
            )
        )
        return {
            resolution.reference: ImageVerification(
                resolution.reference, resolution.digest, error=reason
            )
            for resolution in resolutions
        }

    def findings(self) -> list[Finding]:
        """What the parts had to say since the last call (the cache's warnings), as findings."""
        if self._cache is not None:
            self._findings.extend(
                Finding(CACHE_PROBLEM, "warning", message) for message in self._cache.warnings
            )
            self._cache.warnings.clear()
        found, self._findings = self._findings, []
        return found

    def unused_overrides(self) -> list[Finding]:
        """For a run over manifests, once: a warning per override of the policy that answered
        no image of the run (a glob mistyped, or written as no reference is normalised, which
        otherwise only shows as "could not be resolved"). Nothing when the run resolved no
        image, nor for runs about images named on the command line (inspect, verify)."""
        if not self._resolved or self._overrides_said:
            return []
        self._overrides_said = True
        policy = self.config.policy
        return [
            Finding(
                UNUSED_OVERRIDE,
                "warning",
                f"the override spec.overrides[{position}] {{image: "
                f"{override.written or override.image!r}}} of the policy {policy.source} "
                f"matched no image of this run (its glob reads {override.image!r} against "
                "normalised references such as docker.io/library/nginx:1.27): the platforms it "
                "declares were used for nothing",
            )
            for position, override in policy.resolution.unused_overrides(self._resolved)
        ]

    def close(self) -> None:
        if self._cache is not None and self._owns_cache:
            self._cache.close()

    # Building -------------------------------------------------------------------------------

    def _open_cache(self) -> ResolutionCache:
        from kmultiarch.resolve.cache import open_cache
        from kmultiarch.resolve.signing import CacheKeyError

        settings = self.config.cache
        url, key = settings.url, None
        if url:
            try:
                key = shared_cache_key(settings.key_file, settings.key, settings.key_origin)
            except CacheKeyError as exc:
                # Without its key the level could not tell which entries to trust: not used.
                self._findings.append(
                    Finding(CACHE_PROBLEM, "warning", f"shared cache not used: {exc}")
                )
                url = None
        return open_cache(
            settings.directory,
            enabled=settings.enabled,
            tag_ttl=settings.tag_ttl,
            shared_url=url,
            shared_ca=settings.ca,
            shared_key=key,
            shared_budget=settings.budget,
        )


def load_lock(config: RunConfig) -> ImageLock | None:
    """``--lock FILE``, else the policy's ``lock:`` (a file, or a lock written out in the
    policy), else none."""
    from kmultiarch.io.config import load_lock as read_lock_file

    if not config.use_lock:
        return None
    if config.lock_file is not None:
        return read_lock_file(config.lock_file)
    resolution = config.policy.resolution
    # The policy's lock: is the repository's choice: a regular file only.
    if resolution.lock is not None:
        return read_lock_file(resolution.lock, allow_pipe=False)
    return resolution.embedded_lock


def shared_cache_key(key_file: str | None, key: str | None, origin: str = "") -> CacheKey | None:
    """The key that signs the shared level's entries: the file ``key_file`` names, else ``key``
    itself; None: entries are neither signed nor checked. :class:`~kmultiarch.resolve.signing.
    CacheKeyError` says why a key given cannot be used (never quoting it); ``origin`` says
    where it was given."""
    from kmultiarch.resolve.signing import CacheKey, CacheKeyError

    if key_file is not None:
        secret = cache_key_from_file(key_file)
    elif key:
        secret = key.encode()
    else:
        return None
    try:
        return CacheKey(secret)
    except CacheKeyError as exc:
        raise CacheKeyError(f"{exc} (in {origin})" if origin else str(exc)) from None


def cache_key_from_file(key_file: str | Path) -> bytes:
    """The bytes of a cache key file; :class:`~kmultiarch.resolve.signing.CacheKeyError`
    says why it cannot be read (never quoting what it holds)."""
    from kmultiarch.resolve.signing import MAX_KEY_BYTES, CacheKeyError

    try:
        if not stat.S_ISREG(os.stat(key_file).st_mode):
            raise CacheKeyError(f"the cache key file {key_file} is not a regular file")
        with open(key_file, "rb") as stream:
            return stream.read(MAX_KEY_BYTES + 1)
    except OSError as exc:
        raise CacheKeyError(
            f"cannot read the cache key file {key_file} ({exc.strerror or exc})"
        ) from None
