"""``report --suggest-upgrades``: for each image lacking a cluster platform, the nearest newer
tag that has it, from the registry's tag list (``GET /v2/<name>/tags/list``) and lookups of
the candidates through the run's resolver (cache, lock and overrides apply as for any image).

Candidates are looked up nearest first in small rounds, so an image whose next tag fits costs
one lookup, not one per newer tag. A tag list that cannot be had whole (an error, or past
:class:`~kmultiarch.registry.client.TagListBounds`) leaves the image without a suggestion and
says why in ``problem``, for the adapter to warn.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from kmultiarch.core.platform import Platform
from kmultiarch.core.reference import ImageRef
from kmultiarch.core.upgrades import lacking_platforms, newer_tags
from kmultiarch.errors import KmultiarchError
from kmultiarch.resolve.resolver import Resolver

#: Candidates looked up per image and round.
ROUND = 4


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
    tag_lists = asyncio.run(_tag_lists(resolver, list(lacking)))
    upgrades: dict[ImageRef, Upgrade] = {}
    queues: dict[ImageRef, list[str]] = {}
    for reference, missing in lacking.items():
        tags = tag_lists.get((reference.registry, reference.repository))
        if reference.tag is None:
            upgrades[reference] = Upgrade(reference, missing, note="no tag to compare with")
        elif isinstance(tags, str):
            upgrades[reference] = Upgrade(
                reference, missing, note=f"tag list unavailable: {tags}", problem=tags
            )
        else:
            newer = newer_tags(reference.tag, tags or [])
            if newer:
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


async def _tag_lists(
    resolver: Resolver, references: Sequence[ImageRef]
) -> dict[tuple[str, str], list[str] | str]:
    """(registry, repository) -> its tags, or why they could not be listed. Each endpoint of the
    registry (its mirror first) is tried in turn; when none gives the list, every endpoint's
    reason is kept (the mirror's may be the one that matters)."""
    repositories = list(dict.fromkeys((r.registry, r.repository) for r in references))
    client = resolver.client_factory()
    semaphore = asyncio.Semaphore(max(1, resolver.settings.concurrency))

    async def one(registry: str, repository: str) -> list[str] | str:
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

    client.plan(repositories)
    async with client:
        answers = await asyncio.gather(*(one(*key) for key in repositories))
    return dict(zip(repositories, answers, strict=True))
