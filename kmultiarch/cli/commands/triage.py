"""``kmultiarch triage [PATH...] --cluster FILE...``: from failing pods back to the manifests.

Reads the cluster's state as ``kubectl get -o json`` (or ``-o yaml``) prints it, streaming
(:mod:`kmultiarch.io.clusterdump`); recognises the pods' architecture failures
(:mod:`kmultiarch.core.triage.diagnosis`); runs the engine once over the manifests in PATHs and over
the failing pods themselves (their images resolved as the other commands resolve them: the lock,
the cache, the registry); traces each pod to its workload and says a cause and a next step
(:mod:`kmultiarch.assess.triage`). Exit 1 when an architecture failure is found, 0 when none,
2 on bad input."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from kmultiarch.assess.triage import cluster_source, pinned_tags, triage
from kmultiarch.cli.hints import command_for
from kmultiarch.cli.pipeline import resolve_and_run, say_findings
from kmultiarch.core.triage.clusterstate import ARCH_LABEL
from kmultiarch.core.triage.diagnosis import failures
from kmultiarch.io.clusterdump import DumpLimits, read_cluster
from kmultiarch.io.inputs import collect_inputs
from kmultiarch.output import default_format
from kmultiarch.output.triage import FORMATTERS

if TYPE_CHECKING:
    from collections.abc import Mapping

    from kmultiarch.cli.session import RunOptions
    from kmultiarch.core.images.reference import ImageRef
    from kmultiarch.core.policy.model import Policy
    from kmultiarch.core.resolution import Resolution


def triage_cluster(
    options: RunOptions,
    paths: list[str],
    clusters: list[str],
    output: str | None,
    limits: DumpLimits,
) -> int:
    policy = options.load_policy()
    # The manifests are read first: a bad file fails before a large dump is read.
    sources = collect_inputs(paths) if paths else []
    state = read_cluster(clusters, limits)
    taint_keys = {
        toleration.key
        for tolerations in policy.scheduling.tolerations.values()
        for toleration in tolerations
        if toleration.key
    } | {ARCH_LABEL}
    failing = failures(state, taint_keys)
    result = None
    if failing:
        result = resolve_and_run(
            options, [*sources, cluster_source(failing)], policy, edit=False, checking=True
        )
        say_findings((f for f in result.findings if not f.source), options)
    triaged = triage(
        state,
        failing,
        result,
        policy,
        manifests_given=bool(paths),
        namespace=options.request.namespace,
        cluster_files=["<stdin>" if name == "-" else name for name in clusters],
        tags=_tag_answers(options, policy, pinned_tags(failing)),
        command=command_for(options),
    )
    sys.stdout.write(FORMATTERS[output or default_format()](triaged))
    sys.stdout.flush()
    return 1 if triaged.failed else 0


def _tag_answers(
    options: RunOptions, policy: Policy, tags: Mapping[str, ImageRef]
) -> dict[str, Resolution]:
    """What the tags of digest-pinned images point to now (the lock, the cache, the
    registry): the index to pin instead of one platform's manifest."""
    if not tags:
        return {}
    from kmultiarch.run.session import Session

    with Session(options.configure(policy)) as session:
        answers = session.resolver.resolve(list(dict.fromkeys(tags.values())))
    return {image: answers[reference] for image, reference in tags.items() if reference in answers}
