"""``kmultiarch report [PATH...]``: every image with its platforms and the workloads using it,
and how many workloads are multi-arch, arm64-only, amd64-only or unresolvable; with
``--suggest-upgrades``, the nearest newer tag of each image that lacks a cluster platform."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from kmultiarch.assess.assessment import Inventory, UpgradeSuggestion, inventory
from kmultiarch.cli.pipeline import resolve_and_run, say_findings
from kmultiarch.cli.session import warn
from kmultiarch.core.images.platform import Platform
from kmultiarch.core.images.reference import ImageRef
from kmultiarch.core.images.upgrades import lacking_platforms
from kmultiarch.io.inputs import collect_inputs
from kmultiarch.output.report import FORMATTERS
from kmultiarch.run.clock import generated_at
from kmultiarch.run.session import Session

if TYPE_CHECKING:
    from kmultiarch.cli.session import RunOptions
    from kmultiarch.core.policy.model import Policy


def report_images(
    options: RunOptions, paths: list[str], output: str, suggest_upgrades: bool = False
) -> int:
    policy = options.load_policy()
    sources = collect_inputs(paths)
    result = resolve_and_run(options, sources, policy, edit=False, checking=True)
    say_findings((f for f in result.findings if not f.source), options)
    found = inventory(result, policy)
    if suggest_upgrades:
        found.upgrades = _upgrades(options, policy, found)
    sys.stdout.write(FORMATTERS[output](found, generated_at()))
    sys.stdout.flush()
    return 0


def _upgrades(options: RunOptions, policy: Policy, found: Inventory) -> list[UpgradeSuggestion]:
    from kmultiarch.resolve.upgrades import suggest_upgrades

    lacking: dict[ImageRef, tuple[Platform, ...]] = {}
    for image in found.images:
        if image.platforms is None:
            continue
        missing = lacking_platforms(
            (Platform.parse(text) for text in image.platforms), policy.scheduling.platforms
        )
        if missing:
            lacking[ImageRef.parse(image.reference)] = missing
    if not lacking:
        return []
    with Session(options.configure(policy)) as session:
        upgrades = suggest_upgrades(session.resolver, lacking)
        say_findings(session.findings(), options)
    for reference, upgrade in upgrades.items():
        if upgrade.problem:
            warn(f"{reference}: no upgrade suggested: {upgrade.problem}")
    return [
        UpgradeSuggestion(
            str(reference),
            tuple(str(p) for p in upgrade.lacking),
            upgrade.tag,
            str(ImageRef(reference.registry, reference.repository, upgrade.tag))
            if upgrade.tag
            else None,
            tuple(sorted(str(p) for p in upgrade.platforms)),
            upgrade.note,
        )
        for reference, upgrade in upgrades.items()
    ]
