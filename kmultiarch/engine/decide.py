"""The engine's decision: a pod's plan from the platforms its images run on, partial knowledge
narrowed one way, and the findings about the pod.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace as dataclass_replace
from typing import TYPE_CHECKING, Any

from kmultiarch.core.findings import (
    CONFLICTS,
    FALLBACK_PLATFORMS,
    IMAGE_CHOSEN_BY_OPERATOR,
    INJECTED_SIDECAR,
    MALFORMED_FIELD,
    NEEDS_SCHEDULING,
    UNRESOLVED_IMAGE,
    UNWRITABLE_CONSTRAINT,
    Finding,
    PodStatus,
    Severity,
    unresolved_image_message,
)
from kmultiarch.core.images.platform import Platform, format_platforms
from kmultiarch.core.images.reference import ImageRef
from kmultiarch.core.operators.shapes import in_shape, materialized, scheduling_view, written_field
from kmultiarch.core.operators.workloads import RUN_TIME_IMAGE, PodTarget
from kmultiarch.core.patch import Operation
from kmultiarch.core.placement.preferences import apply_terms, planned_view, preference_terms
from kmultiarch.core.placement.scheduling import (
    PodPlan,
    any_windows_build,
    is_host_process,
    plan_pod_with_inherited,
    supported_platforms,
    windows_builds,
)
from kmultiarch.core.policy.model import Policy, SchedulingPolicy
from kmultiarch.core.resolution import Resolution
from kmultiarch.engine.edit import ImageOutcome
from kmultiarch.engine.locate import _mismatch_findings, _pin_findings

if TYPE_CHECKING:
    from kmultiarch.engine.edit import PodOutcome


def _decide(
    pod: PodOutcome, policy: Policy, resolutions: Mapping[ImageRef, Resolution]
) -> PodOutcome:
    images = tuple(
        ImageOutcome(
            image.container,
            image.reference,
            resolutions.get(image.reference) if image.reference else None,
            image.problem,
        )
        for image in pod.images
    )
    if pod.status in ("excluded", "skipped", "malformed"):
        return dataclass_replace(pod, images=images)
    if pod.status == "chosen-by-operator":
        return _partially_decided(dataclass_replace(pod, images=images), policy, None)
    if not images:
        return dataclass_replace(pod, images=images, status="ok")
    unresolved = [
        image
        for image in images
        if image.problem or image.resolution is None or not image.resolution.ok
    ]
    # spec.fallbackPlatforms stands in for images the registry could not answer for, never for
    # references that do not parse, and never under failurePolicy: Fail.
    fallback = (
        frozenset(policy.resolution.fallback_platforms)
        if policy.failure_policy == "Ignore"
        else None
    )
    if unresolved and (
        not fallback or any(image.problem or image.resolution is None for image in unresolved)
    ):
        unresolved_pod = dataclass_replace(pod, images=images, status="unresolved")
        if policy.failure_policy == "Fail":
            return unresolved_pod  # undecidable: the run fails
        return _partially_decided(unresolved_pod, policy, fallback)
    known = _known_platforms(images, fallback)
    scheduling = policy.scheduling
    supported = _supported(tuple(known), scheduling.platforms)
    narrowed_by = _narrowing_injections(images, supported, scheduling, fallback)
    plan, preferred = _plan(pod, known, scheduling)
    status: PodStatus = (
        plan.conflicts[0].rule  # type: ignore[assignment]
        if plan.conflicts
        else ("needs-change" if plan.changes else "ok")
    )
    return dataclass_replace(
        pod, images=images, status=status, plan=plan, preferred=preferred, narrowed_by=narrowed_by
    )


def _known_platforms(
    images: Sequence[ImageOutcome], fallback: frozenset[Platform] | None
) -> list[frozenset[Platform]]:
    """The platforms of each image of a pod whose platforms are known (the registry's answer,
    else spec.fallbackPlatforms for an image the registry could not answer for). Metadata-only
    images (OLM bundles, artifacts) run wherever the pod runs, and images with no answer are
    left out: the caller knows whether any is."""
    known = [
        _platforms(image) if image.resolution.ok else (fallback or None)
        for image in images
        if image.problem is None
        and image.resolution is not None
        and not image.resolution.metadata_only
    ]
    return [platforms for platforms in known if platforms is not None]


def _partially_decided(
    pod: PodOutcome, policy: Policy, fallback: frozenset[Platform] | None
) -> PodOutcome:
    """A pod some of whose images are unknown (unresolvable, chosen by the operator, named by
    a run-time parameter), decided on the images that are known: a required node affinity to
    the platforms every known image runs on never keeps the pod off a node it could run on, so
    it is written; a toleration (or a preference) could send it where an unknown image does not
    run, so none is. The pod keeps its status, and the warning about the unknown images stays
    (docs/scheduling.md, "Partial knowledge")."""
    known = _known_platforms(pod.images, fallback)
    if not known:
        return pod
    narrowing = dataclass_replace(policy.scheduling, tolerations={}, preferences={})
    plan, _ = _plan(pod, known, narrowing)
    return dataclass_replace(pod, plan=plan, partial=True)


@functools.lru_cache(maxsize=1024)
def _supported(
    known: tuple[frozenset[Platform], ...], cluster: tuple[Platform, ...]
) -> frozenset[Platform]:
    """:func:`supported_platforms`, computed once per set of image platforms: a stream's pods
    mostly share a few (a 2,000-resource stream asks twice for each of its 1,000 pods)."""
    return supported_platforms(known, cluster)


def _plan(
    pod: PodOutcome, known: list[frozenset[Platform]], scheduling: SchedulingPolicy
) -> tuple[PodPlan, tuple[dict[str, object], ...]]:
    """The plan for a pod whose images run on ``known`` (one set per image), and the preferred
    terms spec.preferences adds to it."""
    if is_host_process(pod.target.spec):
        known = any_windows_build(known)  # HostProcess containers run on any Windows build
    supported = _supported(tuple(known), scheduling.platforms)
    target = pod.target
    shape = target.placement.shape if target.placement is not None else "affinity"
    spec = scheduling_view(target.spec, shape)
    plan = plan_pod_with_inherited(
        spec,
        target.inherited,
        target.path,
        supported,
        scheduling,
        windows_builds(known, scheduling.platforms),
    )
    preferred: tuple[dict[str, object], ...] = ()
    if scheduling.preferences and not plan.conflicts:
        view = planned_view(spec, target.inherited, target.path, plan.operations)
        preferred = tuple(preference_terms(view, plan.reachable, scheduling))
        operations = apply_terms(
            view, target.inherited, spec, target.path, plan.operations, list(preferred)
        )
        plan = dataclass_replace(plan, operations=tuple(operations))
    if target.placement is not None:
        # Written in the placement's own shape, creating what it lacks.
        operations = in_shape(
            plan.operations,
            target.path,
            shape,
            target.read_only,
            target.affinity_defaults,
            target.spec,
        )
        withheld = _withheld_finding(plan, target, shape, operations)
        plan = dataclass_replace(
            plan,
            operations=tuple(materialized(operations, target.path, target.missing)),
            findings=(*plan.findings, *withheld),
        )
    return plan, preferred


def _withheld_finding(
    plan: PodPlan, target: PodTarget, shape: str, written: Sequence[Operation]
) -> tuple[Finding, ...]:
    """An ``unwritable-constraint`` warning when a constraint the pods need goes into a field
    the operator fills in itself (:attr:`PodTarget.withheld`): left out, it must be said."""
    if not target.withheld:
        return ()
    wanted = in_shape(
        plan.operations,
        target.path,
        shape,
        target.read_only - target.withheld,
        target.affinity_defaults,
        target.spec,
    )
    # A toleration left out keeps pods off nodes they could run on; an affinity left out lets
    # them onto nodes they cannot: that one is said.
    dropped = {
        written_field(str(operation.relative_to(target.path).path[0]), shape)
        for operation in wanted
        if operation not in written
        and operation.is_under(target.path)
        and operation.relative_to(target.path).path[:1]
    }
    withheld = sorted(dropped & {"affinity", "nodeAffinity"} & target.withheld)
    if not withheld:
        return ()
    fields = ", ".join(str(field) for field in withheld)
    where = target.field_path
    placement = target.placement
    if placement is not None and not placement.writes_affinity:
        return (
            Finding(
                UNWRITABLE_CONSTRAINT,
                "warning",
                f"its images run on {format_platforms(plan.supported)} only, but {where} has no "
                "field the operator copies into these pods' node affinity (it gives them its "
                "own): the constraint cannot be written. Keep the pods off the other "
                f"architectures with taints, or pin them with {where}.nodeSelector",
            ),
        )
    if placement is not None and placement.added_terms_when and not placement.default_affinity_when:
        return (
            Finding(
                UNWRITABLE_CONSTRAINT,
                "warning",
                f"its images run on {format_platforms(plan.supported)} only, but the operator "
                f"adds required node selector terms of its own beside those of {where}, and "
                "terms are ORed: an architecture term written there would not hold, so the "
                "constraint is not written. Keep the pods off the other architectures with "
                "taints, or drop the fields that add those terms",
            ),
        )
    return (
        Finding(
            UNWRITABLE_CONSTRAINT,
            "warning",
            f"its images run on {format_platforms(plan.supported)} only, but the operator gives "
            f"these pods an {fields} of its own when {where} has none, and one written there "
            f"would replace it: the constraint is not written. Give {where} an {fields} of its "
            "own (kmultiarch then writes the constraint into it), or keep the pods off the "
            "other architectures with taints",
        ),
    )


def _narrowing_injections(
    images: Sequence[ImageOutcome],
    supported: frozenset[Platform],
    policy: SchedulingPolicy,
    fallback: frozenset[Platform] | None,
) -> tuple[str, ...]:
    """The injections whose sidecars keep the pod off platforms its own images run on."""
    injected = [image for image in images if image.container.injection]
    if not injected:
        return ()
    own = _known_platforms([image for image in images if not image.container.injection], fallback)
    own_supported = _supported(tuple(own), policy.platforms)
    if own_supported <= supported:
        return ()
    return tuple(
        dict.fromkeys(
            image.container.injection
            for image in injected
            if image.resolution is not None
            and image.resolution.ok
            and not own_supported <= _supported((_platforms(image),), policy.platforms)
        )
    )


def _kept_to(pod: PodOutcome) -> str | None:
    """The platforms a partially decided pod is kept to, when its plan writes that."""
    if not (pod.partial and pod.writes):
        return None
    assert pod.plan is not None  # writes: a plan with changes
    return format_platforms(pod.plan.reachable)


def _platforms_text(image: ImageOutcome, fallback: Sequence[Platform]) -> str:
    resolution = image.resolution
    if resolution is None or (not resolution.ok and not fallback):
        return "unknown"
    if resolution.metadata_only:
        return "metadata-only"
    if not resolution.ok:
        return f"{format_platforms(set(fallback))} (fallback)"
    return format_platforms(_platforms(image))


def _platforms(image: ImageOutcome) -> frozenset[Platform]:
    assert image.resolution is not None
    verification = image.resolution.verification
    if image.container.volume and verification is not None:
        # Nothing is started from an image volume: spec.verify's verdicts on the program a
        # platform would start do not narrow it.
        return image.resolution.platforms | verification.mismatched
    return image.resolution.platforms


def _findings_for(
    pod: PodOutcome,
    severity: Severity,
    fallback: Sequence[Platform] = (),
    *,
    conflicts: Severity = "error",
    needs_scheduling: bool = False,
    describe: Callable[[PodOutcome], Sequence[str]] | None = None,
    mismatch: Severity = "warning",
) -> list[Finding]:
    """The findings of one decided pod: each rule's message is made here or by the planner
    (its conflicts and warnings), and given where the pod is."""
    base: dict[str, Any] = {
        "source": pod.source,
        "document_index": pod.document_index,
        "line": pod.line,
        "resource": pod.resource,
    }
    findings: list[Finding] = []
    if pod.status not in ("excluded", "skipped"):
        findings.extend(
            Finding(MALFORMED_FIELD, "warning", message, path=field_path, **base)
            for field_path, message in pod.target.malformed
        )
        findings.extend(
            Finding(UNWRITABLE_CONSTRAINT, "warning", message, path=pod.target.path, **base)
            for message in pod.target.unwritable
        )
    kept_to = _kept_to(pod)
    if pod.status == "chosen-by-operator":
        fields = ", ".join(pod.target.chosen_by_operator)
        # A run-time variable's field says why itself; the others name no image.
        why = "" if RUN_TIME_IMAGE in fields else " (the resource names none)"
        left = (
            f"the pods it makes are kept to {kept_to}, where their other images run, and "
            "given no toleration"
            if kept_to
            else "the pods it makes are left as they are"
        )
        findings.append(
            Finding(
                IMAGE_CHOSEN_BY_OPERATOR,
                "warning",
                f"the operator chooses the image of {fields}{why}: {left}; name the image, "
                "or declare it as defaultImages of the kind in spec.podSpecs",
                path=pod.target.path,
                **base,
            )
        )
    if pod.status == "unresolved":
        for image in pod.images:
            reason = image.failure_reason
            if reason is None:
                continue
            if severity != "warning":
                consequence = "cannot be decided (failurePolicy: Fail)"
            elif kept_to:
                consequence = (
                    f"is kept to {kept_to}, where its other images run, and given no toleration"
                )
            else:
                consequence = "is left unchanged"
            findings.append(
                Finding(
                    UNRESOLVED_IMAGE,
                    severity,
                    unresolved_image_message(image.container.image, image.container.name, reason)
                    + f"; the pod {consequence}",
                    path=image.container.image_path,
                    image=image.container.image,
                    **base,
                )
            )
    if pod.status in ("needs-change", "ok", *CONFLICTS):
        for image in pod.images:
            if image.resolution is None or image.resolution.ok:
                continue
            findings.append(
                Finding(
                    FALLBACK_PLATFORMS,
                    "warning",
                    unresolved_image_message(
                        image.container.image, image.container.name, image.failure_reason or ""
                    )
                    + "; taken to run on "
                    + ", ".join(str(p) for p in fallback)
                    + " (spec.fallbackPlatforms)",
                    path=image.container.image_path,
                    image=image.container.image,
                    **base,
                )
            )
    if pod.status not in ("excluded", "skipped"):
        findings.extend(_mismatch_findings(pod, mismatch, base))
        findings.extend(_pin_findings(pod, conflicts, base))
    if pod.plan is None:
        return findings
    if pod.status in ("needs-change", "ok") or pod.writes:
        findings.extend(
            dataclass_replace(warning, path=pod.target.path, **base)
            for warning in pod.plan.findings
        )
    if pod.narrowed_by and pod.plan.changes:
        sidecars = [image for image in pod.images if image.container.injection in pod.narrowed_by]
        findings.append(
            Finding(
                INJECTED_SIDECAR,
                "warning",
                f"the pod is kept to {format_platforms(pod.plan.supported)} because of what "
                f"{', '.join(pod.narrowed_by)} inject{'s' if len(pod.narrowed_by) == 1 else ''}: "
                + "; ".join(
                    f"{image.container.image} ({_platforms_text(image, fallback)})"
                    for image in sidecars
                ),
                path=pod.target.path,
                **base,
            )
        )
    if (pod.status == "needs-change" or pod.writes) and needs_scheduling:
        runs_on = ", ".join(str(p) for p in sorted(pod.plan.supported)) or "no platform"
        changes = "; ".join(describe(pod) if describe is not None else ())
        findings.append(
            Finding(
                NEEDS_SCHEDULING,
                "error",
                f"{changes} (its images run on {runs_on}); run `kmultiarch fix` to apply",
                path=pod.target.path,
                **base,
            )
        )
    if pod.status in CONFLICTS or (pod.partial and pod.plan.conflicts):
        # A conflict of the known images is one whatever the unknown ones are.
        detail = "; ".join(
            f"{image.container.image}: {_platforms_text(image, fallback)}" for image in pod.images
        )
        findings.extend(
            dataclass_replace(
                conflict,
                severity=conflicts,
                message=f"{conflict.message} ({detail}); the pod is left unchanged",
                path=pod.target.path,
                **base,
            )
            for conflict in pod.plan.conflicts
        )
    return findings
