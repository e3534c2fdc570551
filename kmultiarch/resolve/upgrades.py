"""``report --suggest-upgrades``: for each image lacking a cluster platform, the nearest newer
tag that has it, from the registry's tag list (``GET /v2/<name>/tags/list``) and lookups of
the candidates through the run's resolver (cache, lock and overrides apply as for any image).

Candidates are looked up nearest first in small rounds, so an image whose next tag fits costs
one lookup, not one per newer tag. A tag list that cannot be had whole (an error, or past
:class:`~kmultiarch.registry.client.TagListBounds`) leaves the image without a suggestion and
says why in ``problem``, for the adapter to warn.

Memory stays bounded whatever the registries send: a few tag lists are fetched at once
(:data:`TAG_LISTS_AT_ONCE`, each within its bounds), and each is reduced to its images' nearest
newer tags (at most :data:`~kmultiarch.core.images.upgrades.MAX_CANDIDATES` each) as it arrives, so
no list outlives its fetch.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from kmultiarch.core.images.platform import Platform
from kmultiarch.core.images.reference import ImageRef
from kmultiarch.core.images.upgrades import lacking_platforms, newer_tags
from kmultiarch.errors import KmultiarchError
from kmultiarch.resolve.resolver import Resolver

#: Candidates looked up per image and round.
ROUND = 4
#: Tag lists fetched at the same time: each may hold TagListBounds' bytes and tags at its peak.
TAG_LISTS_AT_ONCE = 4


@dataclass(frozen=True)
class Upgrade:
    """What was found for one image: ``tag`` (and its platforms), or a ``note`` saying why none."""

    reference: ImageRef
    lacking: tuple[Platform, ...]
    tag: str | None = None
    platforms: frozenset[Platform] = frozenset()
    checked: int = 0
    note: str = ""
    #: Why no tag was looked for at all (the tag list failed): worth a warning, not only a note.
    problem: str = ""


def suggest_upgrades(
    resolver: Resolver, lacking: Mapping[ImageRef, tuple[Platform, ...]]
) -> dict[ImageRef, Upgrade]:
    """For each reference (with the cluster platforms it lacks), the nearest newer tag that
    runs on all of them."""
    newer_by_reference = asyncio.run(
        _newer_tags(resolver, [r for r in lacking if r.tag is not None])
    )
    upgrades: dict[ImageRef, Upgrade] = {}
    queues: dict[ImageRef, list[str]] = {}
    for reference, missing in lacking.items():
        newer = newer_by_reference.get(reference, [])
        if reference.tag is None:
            upgrades[reference] = Upgrade(reference, missing, note="no tag to compare with")
        elif isinstance(newer, str):
            upgrades[reference] = Upgrade(
                reference, missing, note=f"tag list unavailable: {newer}", problem=newer
            )
        elif newer:
            queues[reference] = newer
        else:
            upgrades[reference] = Upgrade(reference, missing, note="no newer version tag")
    checked: dict[ImageRef, int] = dict.fromkeys(queues, 0)
    while queues:
        batch = {
            reference: [
                ImageRef(reference.registry, reference.repository, tag) for tag in queue[:ROUND]
            ]
            for reference, queue in queues.items()
        }
        resolved = resolver.resolve([ref for refs in batch.values() for ref in refs])
        for reference, candidates in batch.items():
            missing = lacking[reference]
            checked[reference] += len(candidates)
            fit = next(
                (
                    candidate
                    for candidate in candidates
                    if resolved[candidate].ok
                    and not lacking_platforms(resolved[candidate].platforms, missing)
                ),
                None,
            )
            del queues[reference][: len(candidates)]
            if fit is not None:
                upgrades[reference] = Upgrade(
                    reference, missing, fit.tag, resolved[fit].platforms, checked[reference]
                )
            elif not queues[reference]:
                upgrades[reference] = Upgrade(
                    reference,
                    missing,
                    checked=checked[reference],
                    note=f"none of the {checked[reference]} nearest newer tags has it",
                )
            else:
                continue
            del queues[reference]
    return {reference: upgrades[reference] for reference in lacking}


async def _newer_tags(
    resolver: Resolver, references: Sequence[ImageRef]
) -> dict[ImageRef, list[str] | str]:
    """Each (tagged) reference -> its newer tags nearest first, from its repository's tag list,
    or why that list could not be had. Each endpoint of the registry (its mirror first) is tried
    in turn; when none gives the list, every endpoint's reason is kept (the mirror's may be the
    one that matters)."""
    by_repository: dict[tuple[str, str], list[ImageRef]] = {}
    for reference in references:
        by_repository.setdefault((reference.registry, reference.repository), []).append(reference)
    client = resolver.client_factory()
    semaphore = asyncio.Semaphore(max(1, min(TAG_LISTS_AT_ONCE, resolver.settings.concurrency)))

    async def tag_list(registry: str, repository: str) -> list[str] | str:
        problems: list[str] = []
        async with semaphore:
            for endpoint in client.endpoints(registry):
                try:
                    return await client.list_tags(
                        endpoint, repository, source=f"{registry}/{repository}"
                    )
                except KmultiarchError as exc:
                    problems.append(str(exc))
        return "; ".join(problems) or "no endpoint"

    async def one(key: tuple[str, str]) -> dict[ImageRef, list[str] | str]:
        tags = await tag_list(*key)
        return {
            reference: tags if isinstance(tags, str) else newer_tags(reference.tag or "", tags)
            for reference in by_repository[key]
        }

    client.plan(by_repository)
    async with client:
        answers = await asyncio.gather(*(one(key) for key in by_repository))
    return {reference: newer for answer in answers for reference, newer in answer.items()}
