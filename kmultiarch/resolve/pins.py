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
does not count HEADs against its pull limit), which is recorded in the cache. A pin that is
not the tag's digest is asked for the tag's manifest once: the index's entries (each child's
digest and platform) are kept in the cache's platform record of the index digest, beside its
platforms, so that a warm run answers from the tag record and that record without a request
(a stale tag costs a HEAD, whose digest finds the record). The record is written whole when the
index lists labelled image manifests only (its platforms are then those labels, as the resolver
computes them); otherwise the entries are added to the resolver's record of the index when
there is one, and else not kept (the GET is asked again).
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

from kmultiarch.core.images.answers import AnswerError, checked_digest, checked_platforms
from kmultiarch.core.images.oci import (
    IMAGE_TYPES,
    INDEX_TYPES,
    ParsedManifest,
    compute_digest,
    parse_manifest,
)
from kmultiarch.core.images.reference import ImageRef
from kmultiarch.core.resolution import DigestPin, Resolution, tag_key
from kmultiarch.errors import KmultiarchError

if TYPE_CHECKING:
    # The network stack is imported by the runs that ask a tag, not by every run (issue 32).
    from kmultiarch.core.lock import ImageLock
    from kmultiarch.registry.client import RegistryClient
    from kmultiarch.resolve.cache import IndexChildren, ResolutionCache


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
    wanted = [r for r in pinned(resolutions) if cached_pin(r.reference, cache) is None]
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


#: What the cache says of a pin: known (with the pin, None for a pin that is right), or not.
_Known = tuple[DigestPin | None] | None


def cached_pins(
    resolutions: Iterable[Resolution], cache: ResolutionCache
) -> tuple[dict[ImageRef, DigestPin], bool]:
    """The pins the cache answers alone (the tag's fresh record, and the index's entries in
    the platform record of the digest it names), and whether every pinned reference was
    answered (nothing left to ask)."""
    pins: dict[ImageRef, DigestPin] = {}
    complete = True
    for resolution in pinned(resolutions):
        known = cached_pin(resolution.reference, cache)
        if known is None:
            complete = False
        elif known[0] is not None:
            pins[resolution.reference] = known[0]
    return pins, complete


def cached_pin(reference: ImageRef, cache: ResolutionCache | None) -> _Known:
    """What the cache's fresh tag record (and the record of the digest it names) says of the
    pin; None: not known without asking."""
    if cache is None:
        return None
    record = cache.get_tag(tag_key(reference))
    if record is None or not record.is_fresh(cache.tag_ttl, time.time()):
        return None
    if record.digest == reference.digest:
        return (None,)
    return _known_from_index(reference, record.digest, cache)


def _known_from_index(reference: ImageRef, digest: str, cache: ResolutionCache) -> _Known:
    """The pin as the recorded entries of ``digest`` (what the tag names) tell it."""
    record = cache.get_platforms(digest)
    if record is None or record.children is None:
        return None
    assert reference.tag is not None
    children = dict(record.children)  # none for an image manifest: the tag moved
    if reference.digest not in children:
        return (DigestPin(reference.tag, digest, moved=True),)
    return (DigestPin(reference.tag, digest, children[reference.digest]),)


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
            known = _announced(reference, announced, cache)
            if known is not None:
                return known[0]  # the index's entries are recorded: no GET
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
    if cache is not None:
        _record_entries(cache, reference, digest, manifest)
    if manifest.kind != "index":
        return DigestPin(reference.tag, digest, moved=True)
    children = {entry.digest: entry.platform for entry in manifest.entries}
    if reference.digest not in children:
        return DigestPin(reference.tag, digest, moved=True)
    return DigestPin(reference.tag, digest, children[reference.digest])


def _announced(reference: ImageRef, announced: str | None, cache: ResolutionCache | None) -> _Known:
    """The pin as the recorded entries of the digest a HEAD announced tell it (the tag's
    record renewed); None: not recorded, the tag's manifest is to be read."""
    if cache is None or announced is None:
        return None
    try:
        digest = checked_digest(announced)
    except AnswerError:
        return None
    known = _known_from_index(reference, digest, cache)
    if known is not None:
        cache.put_tag(tag_key(reference), digest)
    return known


def _record_entries(
    cache: ResolutionCache, reference: ImageRef, digest: str, manifest: ParsedManifest
) -> None:
    """Keep the entries of what the tag names in the platform record of its digest: the
    whole record when its platforms are the labels of its entries (an index of labelled image
    manifests, as the resolver reads it), else added to the resolver's record when there is
    one (an image manifest has no entry); and each labelled image entry as listed by it."""
    children = tuple((entry.digest, entry.platform) for entry in manifest.entries)
    cache.put_listings(reference.name, digest, labelled_entries(manifest), reference.tag)
    labelled = manifest.kind == "index" and all(
        entry.platform is not None and entry.media_type in IMAGE_TYPES for entry in manifest.entries
    )
    if labelled and children:
        try:
            platforms = checked_platforms({platform for _, platform in children})
        except AnswerError:
            return
        cache.put_platforms(digest, manifest.media_type, platforms, children)
        return
    record = cache.get_platforms(digest)
    if record is not None:
        cache.put_platforms(digest, record.media_type, record.platforms, children)


def labelled_entries(manifest: ParsedManifest) -> IndexChildren:
    """An index's image manifests listed under a platform: what a pin can name."""
    return tuple(
        (entry.digest, entry.platform)
        for entry in manifest.entries
        if entry.platform is not None and entry.media_type in IMAGE_TYPES
    )


def bare_pins(resolutions: Iterable[Resolution]) -> list[Resolution]:
    """The answers for ``NAME@DIGEST`` without a tag whose digest is an image manifest (one
    platform's, perhaps of an index): resolved, from a registry, the cache or the lock."""
    return [
        resolution
        for resolution in resolutions
        if resolution.ok
        and resolution.source != "override"
        and resolution.reference.tag is None
        and resolution.reference.digest is not None
        and resolution.media_type not in INDEX_TYPES
    ]


def listed_pins(
    cache: ResolutionCache, resolutions: Iterable[Resolution]
) -> dict[ImageRef, DigestPin]:
    """``NAME@DIGEST`` without a tag: a pin of one platform when the cache (the disk, then
    the shared level) records an index of the repository listing that digest, as it does for
    every index kmultiarch read (resolving its tag, or asking the tag of a pin). Nothing is
    asked of a registry."""
    wanted = {
        (resolution.reference.name, resolution.reference.digest): resolution.reference
        for resolution in bare_pins(resolutions)
        if resolution.reference.digest is not None
    }
    if not wanted:
        return {}
    return {
        wanted[pair]: DigestPin(listing.tag or listing.index, listing.index, listing.platform)
        for pair, listing in cache.listings(wanted).items()
        if listing.index != pair[1]
    }


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
