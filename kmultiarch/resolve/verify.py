"""Honest platforms, the I/O half: for each platform manifest of an image, find the file its
container starts and read that file's first bytes from the registry, within bounds.

The search itself is pure (:func:`kmultiarch.core.verification.verdicts.search_start_file`): it
says which layer to read, watching which path, until it has a verdict. This module reads:
manifests and configs (digests checked), and layers streamed from the registry, top layer
first, decompressed as they arrive (:mod:`kmultiarch.resolve.layerstream`) into a tar reader
that indexes every entry's header and keeps only the first bytes of the files that matter.
Each layer is read to its end (the runtime applies every entry, the last at a path winning)
and hashed as it arrives: it answers only once its bytes match its digest. Per platform
claim a :class:`VerifyBounds` caps the bytes downloaded, the bytes decompressed and the
time (checked at every chunk read and at every step of the search). A layer read for one platform is
not read again for another (or another image) that shares it: its index is kept for the run.
Verdicts answer one claim each, "manifest D runs on platform P", and are cached for good by
claim (:mod:`kmultiarch.resolve.verifycache`).

:func:`verify_resolutions` (async) and :func:`verify_images` (sync) take images' resolutions,
as the resolver gives them, and return an :class:`ImageVerification` for each.
"""

from __future__ import annotations

import asyncio
import hashlib
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from kmultiarch.core.images.oci import (
    IMAGE_TYPES,
    MAX_CONFIG_BYTES,
    MAX_INDEX_DEPTH,
    is_metadata_only_config,
    parse_config_platform,
    parse_manifest,
    verify_digest,
)
from kmultiarch.core.images.platform import Platform
from kmultiarch.core.images.reference import ImageRef
from kmultiarch.core.resolution import Resolution
from kmultiarch.core.verification.binaries import ExecutableProbe
from kmultiarch.core.verification.layers import (
    IndexedEntry,
    LayerIndex,
    TarError,
    TarHeader,
    TarStream,
    path_key,
)
from kmultiarch.core.verification.verdicts import (
    ImageVerification,
    LayerRef,
    NeedLayer,
    PlatformVerification,
    StartConfig,
    UnverifiedCode,
    claim_key,
    layer_compression,
    parse_layers,
    search_start_file,
)
from kmultiarch.errors import KmultiarchError, RegistryError
from kmultiarch.registry.decoding import CappedDecoder
from kmultiarch.resolve.layerstream import Budget, Expander, OutOfBudget, expander, sniffed
from kmultiarch.resolve.verifycache import IndexChild, VerificationCache

if TYPE_CHECKING:
    from kmultiarch.core.policy.model import RegistrySettings
    from kmultiarch.registry.client import Endpoint, RegistryClient
    from kmultiarch.registry.credentials import CredentialStore
    from kmultiarch.registry.settings import ClientSettings
    from kmultiarch.resolve.cache import ResolutionCache

__all__ = [
    "VerifyBounds",
    "VerifyRun",
    "VerifyStats",
    "first_per_platform",
    "verify_images",
    "verify_resolutions",
]

MiB = 1024 * 1024
#: Entries one layer may list before kmultiarch stops indexing it (memory stays bounded).
MAX_LAYER_ENTRIES = 500_000
#: Files whose first bytes are kept in passing, per layer, in case a link leads back to one.
MAX_PASSING_HEADS = 20_000


@dataclass(frozen=True)
class VerifyBounds:
    """What verifying one platform manifest may cost: bytes downloaded (layers; manifests
    and the config are bounded by their own caps), bytes decompressed, seconds."""

    max_bytes: int = 64 * MiB
    max_expanded: int = 1024 * MiB
    seconds: float = 30.0


@dataclass
class VerifyStats:
    """What a run cost: platforms answered, from the cache or read; layer bytes downloaded
    and decompressed, layers opened; and per platform claim (:func:`claim_key`), the bytes
    downloaded."""

    platforms: int = 0
    cached: int = 0
    downloaded: int = 0
    expanded: int = 0
    layers_opened: int = 0
    per_manifest: dict[str, int] = field(default_factory=dict)


@dataclass
class VerifyRun:
    """:func:`verify_images`' answer: a verification per reference, the cost, the registry
    requests by kind."""

    results: dict[ImageRef, ImageVerification]
    stats: VerifyStats
    requests: dict[str, int]


def verify_images(
    resolutions: Sequence[Resolution],
    cache: ResolutionCache,
    *,
    registries: Mapping[str, RegistrySettings],
    settings: ClientSettings | None = None,
    credentials: CredentialStore | None = None,
    bounds: VerifyBounds = VerifyBounds(),
    client_factory: Callable[[], RegistryClient] | None = None,
) -> VerifyRun:
    """Verify every image of ``resolutions``. Synchronous: answers from the cache first,
    and only when something is left builds a client and runs an event loop (a warm run
    makes no request)."""
    stats = VerifyStats()
    verifications = VerificationCache(cache)
    results: dict[ImageRef, ImageVerification] = {}
    pending: list[Resolution] = []
    for resolution in resolutions:
        known = _answer_without_registry(resolution, verifications, stats)
        if known is not None:
            results[resolution.reference] = known
        else:
            pending.append(resolution)
    requests: dict[str, int] = {}
    if pending:
        if client_factory is None:
            from kmultiarch.registry.client import RegistryClient

            def client_factory() -> RegistryClient:
                return RegistryClient(registries, settings, credentials)

        client = client_factory()

        async def run() -> dict[ImageRef, ImageVerification]:
            async with client:
                return await verify_resolutions(client, cache, pending, bounds, stats=stats)

        try:
            results.update(asyncio.run(run()))
        finally:
            requests = dict(client.requests)
    ordered = {r.reference: results[r.reference] for r in resolutions}
    return VerifyRun(ordered, stats, requests)


async def verify_resolutions(
    client: RegistryClient,
    cache: ResolutionCache,
    resolutions: Sequence[Resolution],
    bounds: VerifyBounds = VerifyBounds(),
    *,
    concurrency: int = 4,
    stats: VerifyStats | None = None,
) -> dict[ImageRef, ImageVerification]:
    """Verify each image (``client`` entered by the caller), at most ``concurrency`` at once;
    the platforms of one image one after the other, so a layer they share is read once."""
    run = _Run(client, VerificationCache(cache), bounds, stats or VerifyStats())
    semaphore = asyncio.Semaphore(max(1, concurrency))

    async def one(resolution: Resolution) -> ImageVerification:
        async with semaphore:
            return await run.image(resolution)

    verified = await asyncio.gather(*(one(resolution) for resolution in resolutions))
    return {result.reference: result for result in verified}


def _answer_without_registry(
    resolution: Resolution, verifications: VerificationCache, stats: VerifyStats
) -> ImageVerification | None:
    """What needs no registry: an image that was not resolved, has no digest or no
    platform, or whose verdicts are all cached."""
    reference = resolution.reference
    if resolution.error is not None:
        return ImageVerification(reference, None, error=str(resolution.error))
    digest = resolution.digest
    if digest is None:
        return ImageVerification(
            reference,
            None,
            error=f"{reference}: no digest is known (its platforms come from an override), "
            "so there is nothing to read",
        )
    if resolution.metadata_only:
        return ImageVerification(reference, digest)
    children = verifications.children(digest)
    if children is None:
        return None
    verdicts = [verifications.verdict(child.digest, child.platform) for child in children]
    if any(v is None for v in verdicts):
        return None
    stats.platforms += len(verdicts)
    stats.cached += len(verdicts)
    return ImageVerification(reference, digest, tuple(v for v in verdicts if v is not None))


class _Run:
    """One verification run: the client, the cache, and the layers read so far."""

    def __init__(
        self,
        client: RegistryClient,
        verifications: VerificationCache,
        bounds: VerifyBounds,
        stats: VerifyStats,
    ) -> None:
        self.client = client
        self.verifications = verifications
        self.bounds = bounds
        self.stats = stats
        self.layers: dict[tuple[str, bool], LayerIndex] = {}
        self._layer_locks: dict[tuple[str, bool], asyncio.Lock] = {}
        #: Manifest and config bodies fetched while listing an index, reused to verify.
        self._manifests: dict[str, bytes] = {}
        self._configs: dict[str, bytes] = {}

    async def image(self, resolution: Resolution) -> ImageVerification:
        known = _answer_without_registry(resolution, self.verifications, self.stats)
        if known is not None:
            return known
        reference = resolution.reference
        digest = resolution.digest
        assert digest is not None
        failures: list[str] = []
        for endpoint in self.client.endpoints(reference.registry):
            try:
                children = await self._children(endpoint, reference, digest)
            except KmultiarchError as exc:
                failures.append(str(exc))
                if endpoint.is_mirror:
                    continue
                return ImageVerification(reference, digest, error="; ".join(failures))
            verdicts = []
            for child in children:
                verdicts.append(await self._platform(endpoint, reference, child))
            return ImageVerification(reference, digest, tuple(verdicts))
        return ImageVerification(reference, digest, error="; ".join(failures))

    # -- which manifests -----------------------------------------------------------------

    async def _children(
        self, endpoint: Endpoint, reference: ImageRef, digest: str
    ) -> tuple[IndexChild, ...]:
        """The platform manifests under ``digest``: itself for an image manifest, the
        runnable children (nested indexes followed) for an index."""
        cached = self.verifications.children(digest)
        if cached is not None:
            return cached
        children = first_per_platform(await self._list(endpoint, reference, digest, None, depth=0))
        self.verifications.put_children(digest, children)
        return children

    async def _list(
        self,
        endpoint: Endpoint,
        reference: ImageRef,
        digest: str,
        platform: Platform | None,
        *,
        depth: int,
    ) -> tuple[IndexChild, ...]:
        source = str(reference) if depth == 0 else f"{reference} (child {digest[:19]})"
        body = await self._manifest(endpoint, reference, digest, source)
        manifest = parse_manifest(body, None, source=source)
        if manifest.kind == "image":
            if manifest.artifact:
                return ()
            if platform is None:
                config = await self._config(endpoint, reference, manifest.config_digest, source)
                if is_metadata_only_config(config, source=source):
                    return ()
                platform = parse_config_platform(config, source=source)
            return (IndexChild(platform, digest),)
        if depth >= MAX_INDEX_DEPTH:
            raise RegistryError(f"{source}: indexes nest deeper than {MAX_INDEX_DEPTH} levels")
        children: list[IndexChild] = []
        for entry in manifest.entries:
            if entry.platform is not None and entry.media_type in IMAGE_TYPES:
                children.append(IndexChild(entry.platform, entry.digest))
                continue
            try:
                found = await self._list(
                    endpoint, reference, entry.digest, entry.platform, depth=depth + 1
                )
            except KmultiarchError:
                if entry.platform is None:
                    continue  # an artifact without platform (a signature...), as resolving
                raise
            children.extend(found)
        return tuple(dict.fromkeys(children))

    async def _manifest(
        self, endpoint: Endpoint, reference: ImageRef, digest: str, source: str
    ) -> bytes:
        body = self._manifests.get(digest)
        if body is None:
            fetched = await self.client.get_manifest(
                endpoint, reference.repository, digest, source=source
            )
            verify_digest(fetched.body, digest, source=source)
            body = self._manifests[digest] = fetched.body
        return body

    async def _config(
        self, endpoint: Endpoint, reference: ImageRef, digest: str, source: str
    ) -> bytes:
        body = self._configs.get(digest)
        if body is None:
            body = await self.client.get_blob(
                endpoint, reference.repository, digest, cap=MAX_CONFIG_BYTES, source=source
            )
            verify_digest(body, digest, source=f"{source} config")
            self._configs[digest] = body
        return body

    # -- one platform --------------------------------------------------------------------

    async def _platform(
        self, endpoint: Endpoint, reference: ImageRef, child: IndexChild
    ) -> PlatformVerification:
        self.stats.platforms += 1
        cached = self.verifications.verdict(child.digest, child.platform)
        if cached is not None:
            self.stats.cached += 1
            return cached
        bounds = self.bounds
        budget = Budget(bounds.max_bytes, bounds.max_expanded, time.monotonic() + bounds.seconds)
        source = f"{reference} ({child.platform})"
        try:
            async with asyncio.timeout(bounds.seconds):
                result = await self._search(endpoint, reference, child, budget, source)
        except OutOfBudget as exc:
            result = _unverified(child, exc.code, exc.reason)
        except TimeoutError:
            result = _unverified(
                child,
                "deadline",
                f"the deadline of {bounds.seconds:g} s passed before the file was found",
            )
        except RegistryError as exc:
            result = _unverified(child, "registry", str(exc))
        except (ValueError, TarError) as exc:
            result = _unverified(child, "damaged", f"{source}: {exc}")
        finally:
            self.stats.per_manifest[claim_key(child.digest, child.platform)] = budget.downloaded
        self.verifications.put_verdict(result)
        return result

    async def _search(
        self,
        endpoint: Endpoint,
        reference: ImageRef,
        child: IndexChild,
        budget: Budget,
        source: str,
    ) -> PlatformVerification:
        body = await self._manifest(endpoint, reference, child.digest, source)
        manifest = parse_manifest(body, None, source=source)
        if manifest.kind != "image":
            raise ValueError("an index where an image manifest was expected")
        config = await self._config(endpoint, reference, manifest.config_digest, source)
        start = StartConfig.parse(config)
        layers = parse_layers(body)[::-1]  # top first
        windows = child.platform.os == "windows"
        reads: Counter[tuple[int, str, int]] = Counter()

        def step_now() -> NeedLayer | PlatformVerification:
            view = [self._index(layer, windows) for layer in layers]
            return search_start_file(
                view, start, child.platform, child.digest, check=budget.check_time
            )

        while True:
            budget.check_time()
            step = step_now()
            if isinstance(step, PlatformVerification):
                return self._lazily_pulled(step, layers, windows)
            reads[step.layer, step.path, step.ordinal] += 1
            if reads[step.layer, step.path, step.ordinal] > 2:
                return _unverified(
                    child, "damaged", f"/{step.path} could not be read from its layer"
                )
            layer = layers[step.layer]
            if layer_compression(layer.media_type) is None:
                return _unverified(
                    child,
                    "layer-media-type",
                    f"the file search needs layer {layer.digest[:19]}, of media type "
                    f"{layer.media_type or '(none)'}, which kmultiarch does not read",
                )
            key = (layer.digest, windows)
            lock = self._layer_locks.setdefault(key, asyncio.Lock())
            async with lock:
                if step_now() != step:
                    continue  # another platform or image read this layer meanwhile
                previous = self.layers.get(key)
                read = _LayerRead(self, endpoint, reference, layer, windows, step, previous)
                self.layers[key] = await read.run(budget)

    def _lazily_pulled(
        self, verdict: PlatformVerification, layers: Sequence[LayerRef], windows: bool
    ) -> PlatformVerification:
        """A verdict from a layer a runtime may build from its table of contents (eStargz,
        zstd:chunked) rather than the tar stream read here: never verified (nor mismatch)."""
        if verdict.status == "unverified":
            return verdict
        for layer in layers:
            index = self.layers.get((layer.digest, windows))
            if layer.lazy and index is not None and index.complete:
                return PlatformVerification(
                    verdict.platform,
                    verdict.digest,
                    "unverified",
                    verdict.file,
                    verdict.machine,
                    f"layer {layer.digest[:19]} may be pulled lazily ({layer.lazy}): the "
                    "runtime then builds its files from its table of contents, not from the "
                    "tar stream read",
                    "ambiguous",
                    verdict.via,
                )
        return verdict

    def _index(self, layer: LayerRef, windows: bool) -> LayerIndex:
        return self.layers.get((layer.digest, windows)) or LayerIndex(layer.digest, windows=windows)


def first_per_platform(children: Sequence[IndexChild]) -> tuple[IndexChild, ...]:
    """One manifest per platform claim: the first the index lists for it, the one a runtime
    pulls (containerd's ``images.Manifest`` sorts the matches stably and takes the first;
    containers/image's ``ChooseInstance`` returns the first match). The same manifest under
    two platforms stays twice: each claim is judged."""
    chosen: dict[Platform, IndexChild] = {}
    for child in children:
        chosen.setdefault(child.platform, child)
    return tuple(chosen.values())


def _unverified(child: IndexChild, code: UnverifiedCode, reason: str) -> PlatformVerification:
    return PlatformVerification(
        child.platform, child.digest, "unverified", reason=reason, code=code
    )


class _LayerRead:
    """One pass over one layer, whole: every entry indexed as the runtime applies it, the
    first bytes of the files that may be started (and of the one the search watches) kept,
    and the bytes checked against the layer's digest and size. Only then is the index
    installed (complete): a layer read in part, or whose bytes are not its own, answers
    nothing, so it is never the source of a verdict."""

    def __init__(
        self,
        run: _Run,
        endpoint: Endpoint,
        reference: ImageRef,
        layer: LayerRef,
        windows: bool,
        step: NeedLayer,
        previous: LayerIndex | None,
    ) -> None:
        self.owner = run
        self.endpoint = endpoint
        self.reference = reference
        self.layer = layer
        self.index = LayerIndex(layer.digest, windows=windows)
        if previous is not None:
            self.index.heads.update(previous.heads)  # the same bytes: the same ordinals
            self.index.deep.update(previous.deep)
        self.watching = step.path
        self.watching_ordinal = step.ordinal
        self.passing_heads = 0
        self.budget: Budget | None = None

    async def run(self, budget: Budget) -> LayerIndex:
        """Read the whole layer, charging ``budget``; the index, complete, when its bytes
        are the digest's (else :class:`OutOfBudget`, code ``digest``)."""
        declared = layer_compression(self.layer.media_type)
        assert declared is not None
        import httpx

        self.budget = budget
        digest = _Digest(self.layer.digest)
        stream = TarStream(self._entry)
        expand: Expander | None = None
        stats = self.owner.stats
        stats.layers_opened += 1
        source = f"{self.reference} (layer {self.layer.digest[:19]})"
        try:
            async with self.owner.client.stream_blob(
                self.endpoint, self.reference.repository, self.layer.digest, source=source
            ) as response:
                decoder = _transfer_decoder(response.headers.get("content-encoding"))
                async for raw in response.aiter_raw():
                    budget.download(len(raw))
                    stats.downloaded += len(raw)
                    data = decoder.feed(raw, budget.room + 1) if decoder else raw
                    if not data:
                        continue
                    digest.update(data)
                    if stream.finished:
                        continue  # after the archive's end: only the digest reads on
                    if expand is None:
                        expand = expander(sniffed(data, declared))
                    for piece in expand.expand(data):
                        budget.expand(len(piece))
                        stats.expanded += len(piece)
                        stream.feed(piece)
                        if stream.entries > MAX_LAYER_ENTRIES:
                            raise OutOfBudget(
                                "expanded", f"a layer lists more than {MAX_LAYER_ENTRIES} entries"
                            )
                        if stream.finished:
                            break
                    budget.check_time()
        except RegistryError as exc:
            if self.layer.foreign:
                raise OutOfBudget(
                    "foreign-layer",
                    f"layer {self.layer.digest[:19]} is a foreign layer its registry does not "
                    f"serve ({exc})",
                ) from None
            raise
        except (httpx.HTTPError, OSError) as exc:
            raise OutOfBudget(
                "registry", f"{source}: the download broke ({type(exc).__name__}: {exc})"
            ) from None
        digest.check(self.layer, source)
        if not stream.finished and not stream.at_boundary:
            raise TarError("the layer ends in the middle of an entry")
        self.index.complete = True
        return self.index

    def _entry(self, header: TarHeader) -> _ProbeSink | None:
        if self.budget is not None and not self.index.count % 512:
            self.budget.check_time()  # between entries too: a chunk may expand to many
        entry = self.index.add(header)
        if entry is None or entry.kind != "file" or not entry.readable:
            return None
        key = path_key(entry.path, self.index.windows)
        deep = key == self.watching or entry.ordinal == self.watching_ordinal
        if entry.ordinal in self.index.heads and (not deep or entry.ordinal in self.index.deep):
            return None
        if not deep:
            if self.passing_heads >= MAX_PASSING_HEADS or not self._may_be_started(entry):
                return None
            self.passing_heads += 1
        return _ProbeSink(self.index, entry.ordinal, ExecutableProbe(entry.size, deep=deep), deep)

    def _may_be_started(self, entry: IndexedEntry) -> bool:
        if self.index.windows:
            return entry.path.lower().endswith((".exe", ".com"))
        return bool(entry.mode & 0o111)


class _Digest:
    """The layer's bytes hashed as they arrive, to compare with its digest (and the size
    the manifest gives), as containerd checks a blob it fetches."""

    def __init__(self, digest: str) -> None:
        algorithm, _, self.expected = digest.partition(":")
        self.algorithm = algorithm
        self.size = 0
        try:
            self._hash: hashlib._Hash | None = hashlib.new(algorithm)
        except ValueError:
            self._hash = None

    def update(self, data: bytes) -> None:
        self.size += len(data)
        if self._hash is not None:
            self._hash.update(data)

    def check(self, layer: LayerRef, source: str) -> None:
        if self._hash is None:
            raise OutOfBudget(
                "digest", f"{source}: digest algorithm {self.algorithm!r} cannot be checked"
            )
        if self._hash.hexdigest() != self.expected:
            raise OutOfBudget(
                "digest",
                f"{source}: the bytes served are not the layer's (their digest is "
                f"{self.algorithm}:{self._hash.hexdigest()[:12]}...)",
            )
        if layer.size >= 0 and self.size != layer.size:
            raise OutOfBudget(
                "digest",
                f"{source}: {self.size} bytes served, the manifest says {layer.size}",
            )


class _ProbeSink:
    """Feeds a file's data to its probe; keeps the result in the layer's index when done."""

    def __init__(self, index: LayerIndex, ordinal: int, probe: ExecutableProbe, deep: bool) -> None:
        self.index = index
        self.ordinal = ordinal
        self.probe = probe
        self.deep = deep
        if probe.satisfied:
            self._done()

    def feed(self, chunk: bytes) -> None:
        if self.probe.satisfied:
            return
        self.probe.feed(chunk)
        if self.probe.satisfied:
            self._done()

    def _done(self) -> None:
        self.index.heads[self.ordinal] = self.probe.result()
        if self.deep:
            self.index.deep.add(self.ordinal)


def _transfer_decoder(encoding: str | None) -> CappedDecoder | None:
    """A decoder for a body a proxy compressed although identity was asked for (its output
    counts against the decompressed bytes)."""
    name = (encoding or "identity").strip().lower()
    if name in ("", "identity"):
        return None
    try:
        return CappedDecoder(name, 0)
    except ValueError as exc:
        raise OutOfBudget("registry", f"the layer was sent with {exc}") from None
