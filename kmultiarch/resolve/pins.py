"""Digests pinned to one platform's manifest (issue 30, item 5).

``app:1.4@sha256:D`` where ``D`` is a platform manifest listed in the index tag ``1.4`` names is
the most common multi-arch mistake of GitOps repositories (tektoncd/operator #3611,
envoyproxy/ratelimit #1131; Renovate keeps such a pin as it is, renovatebot/renovate #16554):
every node pulls that one platform. For each reference pinned with both a tag and a digest,
the tag's manifest is asked for once (a GET by tag, its body checked against the digest it is
served under) and its index entries read; the answer says which platform the pin fixes, or
that the tag moved (the digest is in its index no more).

The common case costs nothing: a pin to the tag's own digest is known from the cache's tag
record while it is fresh (as the resolver trusts it), else from a HEAD of the tag (Docker Hub
does not count HEADs against its pull limit), which is recorded in the cache. Only a pin that
is not the tag's digest is asked for the tag's manifest (a GET per run: the index entries are
not cached yet).
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

from kmultiarch.core.oci import compute_digest, parse_manifest
from kmultiarch.core.reference import ImageRef
from kmultiarch.core.resolution import DigestPin, Resolution, tag_key
from kmultiarch.errors import KmultiarchError

if TYPE_CHECKING:
    # The network stack is imported by the runs that ask a tag, not by every run (issue 32).
    from kmultiarch.core.lock import ImageLock
    from kmultiarch.registry.client import RegistryClient
    from kmultiarch.resolve.cache import ResolutionCache


def pinned(resolutions: Iterable[Resolution]) -> list[Resolution]:
    """The answers worth asking the tag about: resolved, from a registry, the cache or the
    lock, for a reference with a tag and a digest."""
    return [
        resolution
        for resolution in resolutions
        if resolution.ok
        and resolution.source != "override"
        and resolution.reference.tag is not None
        and resolution.reference.digest is not None
    ]


async def tag_pins(
    client: RegistryClient,
    resolutions: Iterable[Resolution],
    cache: ResolutionCache | None = None,
) -> dict[ImageRef, DigestPin]:
    """For each pinned reference whose digest is not its tag's: what the tag names now (a
    registry that cannot answer says nothing: the pin is not reported)."""
    wanted = [r for r in pinned(resolutions) if not _cached_as_pinned(r.reference, cache)]
    if not wanted:
        return {}
    client.plan((r.reference.registry, r.reference.repository) for r in wanted)

    async def one(resolution: Resolution) -> tuple[ImageRef, DigestPin | None]:
        reference = resolution.reference
        try:
            return reference, await _pin(client, reference, cache)
        except KmultiarchError:
            return reference, None

    async with client:
        import asyncio

        answers = await asyncio.gather(*(one(resolution) for resolution in wanted))
    return {reference: pin for reference, pin in answers if pin is not None}


def _cached_as_pinned(reference: ImageRef, cache: ResolutionCache | None) -> bool:
    """Whether the cache's fresh tag record says the tag names the pinned digest."""
    if cache is None:
        return False
    record = cache.get_tag(tag_key(reference))
    return (
        record is not None
        and record.digest == reference.digest
        and record.is_fresh(cache.tag_ttl, time.time())
    )


async def _pin(
    client: RegistryClient, reference: ImageRef, cache: ResolutionCache | None
) -> DigestPin | None:

    assert reference.tag is not None and reference.digest is not None
    source = f"{reference.name}:{reference.tag}"
    fetched = None
    failure: KmultiarchError | None = None
    for endpoint in client.endpoints(reference.registry):  # mirrors first, as containerd
        try:
            announced = await client.head_manifest(
                endpoint, reference.repository, reference.tag, source=source
            )
            if announced == reference.digest:
                if cache is not None:
                    cache.put_tag(tag_key(reference), announced)
                return None  # the tag's own digest: no request more
            fetched = await client.get_manifest(
                endpoint, reference.repository, reference.tag, source=source
            )
            break
        except KmultiarchError as exc:
            failure = exc
    if fetched is None:
        assert failure is not None
        raise failure
    algorithm = reference.digest.partition(":")[0]
    digest = compute_digest(fetched.body, algorithm)
    if cache is not None:
        cache.put_tag(tag_key(reference), digest)
    if digest == reference.digest:
        return None  # the pin is the tag's own manifest or index
    manifest = parse_manifest(fetched.body, fetched.content_type, source=source)
    if manifest.kind != "index":
        return DigestPin(reference.tag, digest, moved=True)
    children = {entry.digest: entry.platform for entry in manifest.entries}
    if reference.digest not in children:
        return DigestPin(reference.tag, digest, moved=True)
    return DigestPin(reference.tag, digest, children[reference.digest])


def lock_pins(lock: ImageLock, resolutions: Iterable[Resolution]) -> dict[ImageRef, DigestPin]:
    """``NAME@DIGEST`` without a tag: a pin of one platform when the lock records an index of
    the repository listing that digest (``lock --verify`` records each platform manifest's
    digest with its verdict). Nothing is asked: the lock is all there is to go on."""
    pins: dict[ImageRef, DigestPin] = {}
    for resolution in resolutions:
        reference = resolution.reference
        if not resolution.ok or reference.tag is not None or reference.digest is None:
            continue
        for entry in lock.entries.values():
            if entry.reference.name != reference.name or entry.digest == reference.digest:
                continue
            platform = next(
                (v.platform for v in entry.verified or () if v.digest == reference.digest), None
            )
            if platform is not None:
                tag = entry.reference.tag or entry.digest
                pins[reference] = DigestPin(tag, entry.digest, platform)
                break
    return pins


def with_pins(
    resolutions: Mapping[ImageRef, Resolution], pins: Mapping[ImageRef, DigestPin]
) -> dict[ImageRef, Resolution]:
    from dataclasses import replace

    return {
        reference: (replace(resolution, pin=pins[reference]) if reference in pins else resolution)
        for reference, resolution in resolutions.items()
    }
