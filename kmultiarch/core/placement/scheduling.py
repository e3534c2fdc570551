"""Which tolerations and node affinity a pod needs, and how to merge them into what it has.

Pure functions over plain data. The outcome for a pod is a :class:`PodPlan`: RFC 6902
operations (``add``/``replace``, paths from the document root) -- exactly what an admission
webhook would return -- or the problems that keep the pod as it is.

The rule: after kmultiarch, the nodes a pod may be scheduled on are exactly the nodes its own
constraints allowed (nodeSelector AND one of its required terms; its tolerations, the policy's
taints aside) that are of a platform running every image of the pod. Where no such node can
exist, the pod is reported and left unchanged.

The scheduler's semantics (k8s.io/component-helpers ``scheduling/corev1``):
- a toleration tolerates a taint when effects match (or the toleration's is empty), keys match
  (or the key is empty with ``Exists``), and values match (or the operator is ``Exists``); for a
  NoExecute taint the first matching toleration's ``tolerationSeconds`` bounds the stay;
- ``nodeSelector`` AND any of the required ``nodeSelectorTerms``; expressions inside a term are
  ANDed; a term with no expressions and no fields matches nothing; ``In``/``NotIn`` need values.

Nodes of a platform are known by the labels the kubelet writes (``kubernetes.io/os``, ``/arch``,
their ``beta.`` twins, ``node.kubernetes.io/windows-build`` from the os.version) and by the
``nodeSelector`` the policy declares for the platform. The constraint for the platforms a pod
may run on is a set of terms: one per OS with its architectures (``In`` lists), refined by
those labels where platforms share an OS and architecture; a single term when the set is a
product of OSes and architectures (the common case: ``kubernetes.io/arch In [...]``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kmultiarch.core.findings import (
    INDISTINGUISHABLE_PLATFORMS,
    NO_COMMON_PLATFORM,
    PINNED_POD,
    SCHEDULING_CONFLICT,
    Finding,
)
from kmultiarch.core.images.platform import Platform, format_platforms
from kmultiarch.core.operators.workloads import Path
from kmultiarch.core.patch import Operation, apply_patch, deep_copy
from kmultiarch.core.placement.selectors import (
    ARCH_LABEL,
    BETA_LABELS,
    OS_LABEL,
    PREFERRED,
    REQUIRED,
    WINDOWS_BUILD_LABEL,
    _implications,
    _implied_rule,
    _list,
    _selector_allows,
    _term_platforms,
    node_labels,
)
from kmultiarch.core.policy.model import SchedulingPolicy, Toleration

if TYPE_CHECKING:
    from kmultiarch.core.placement.selectors import Term


PREFERRED_WEIGHT = 100

NO_EXECUTE = "NoExecute"


@dataclass(frozen=True)
class PodPlan:
    """What to do to one pod: operations, or a conflict (then no operation is applied).

    ``findings`` are made here, by the planner that knows why, without a location (the engine
    adds where): ``no-common-platform`` and ``scheduling-conflict`` (the pod is left as it is),
    ``pinned-pod`` and ``indistinguishable-platforms`` (warnings beside the operations)."""

    supported: frozenset[Platform]
    operations: tuple[Operation, ...] = ()
    findings: tuple[Finding, ...] = ()
    added_tolerations: tuple[Mapping[str, object], ...] = ()
    #: The node constraint the pod needs (terms ORed; empty when it may run anywhere it could).
    node_terms: tuple[Term, ...] = ()
    #: The platforms the pod may land on once planned: those of ``supported`` its own
    #: constraints reach (node labels that fix the architecture included); None: all of them.
    landing: frozenset[Platform] | None = None

    @property
    def reachable(self) -> frozenset[Platform]:
        return self.supported if self.landing is None else self.landing

    @property
    def changes(self) -> bool:
        return bool(self.operations)

    @property
    def conflicts(self) -> tuple[Finding, ...]:
        """Why the pod cannot be placed where its images run (empty: it can)."""
        return tuple(f for f in self.findings if f.rule in _CONFLICT_RULES)

    @property
    def required_labels(self) -> Mapping[str, tuple[str, ...]]:
        """The constraint when it is a single term (label -> allowed values), else empty."""
        return dict(self.node_terms[0]) if len(self.node_terms) == 1 else {}


def supported_platforms(
    image_platforms: Iterable[frozenset[Platform]], cluster: Sequence[Platform]
) -> frozenset[Platform]:
    """The cluster platforms on which every image of a pod runs (for a Windows platform
    without os.version: and the images share a build)."""
    images = list(image_platforms)
    builds = windows_builds(images, cluster)
    return frozenset(
        node
        for node in cluster
        if all(any(platform.runs_on(node) for platform in platforms) for platforms in images)
        and builds.get(node, ("any",)) != ()
    )


def windows_builds(
    image_platforms: Iterable[frozenset[Platform]], cluster: Sequence[Platform]
) -> dict[Platform, tuple[str, ...]]:
    """For each Windows cluster platform without os.version (its nodes' builds unknown): the
    builds (major.minor.build) every image runs on, when the images name any. Windows
    containers run only on a host of their build (process isolation)."""
    images = list(image_platforms)
    builds: dict[Platform, tuple[str, ...]] = {}
    for node in cluster:
        if node.os != "windows" or node.os_version:
            continue
        common: list[str] | None = None
        for platforms in images:
            matching = [p for p in sorted(platforms) if p.runs_on(node)]
            if not matching or any(not p.os_version for p in matching):
                continue  # runs on any build (or not at all: supported_platforms says so)
            own = _ordered_unique(p.build for p in matching)
            common = own if common is None else [b for b in common if b in own]
        if common is not None:
            builds[node] = tuple(common)
    return builds


def toleration_covers(existing: Mapping[str, object], wanted: Toleration) -> bool:
    """Whether ``existing`` (a toleration in the pod) already tolerates every taint that
    ``wanted`` tolerates, for as long: ToleratesTaint generalised from a taint to a toleration,
    and for NoExecute taints a ``tolerationSeconds`` no shorter than the wanted one's."""
    if not _tolerates_like(existing, wanted):
        return False
    seconds = _seconds(existing)
    if seconds is None or wanted.effect not in ("", NO_EXECUTE):
        return True
    return wanted.toleration_seconds is not None and seconds >= wanted.toleration_seconds


def _tolerates_like(existing: Mapping[str, object], wanted: Toleration) -> bool:
    effect = _text(existing.get("effect"))
    if effect and effect != wanted.effect:
        return False
    operator = _text(existing.get("operator")) or "Equal"
    key = _text(existing.get("key"))
    if not key:
        return operator == "Exists"
    if key != wanted.key:
        return False
    if operator == "Exists":
        return True
    return wanted.operator != "Exists" and _text(existing.get("value")) == wanted.value


def _seconds(toleration: Mapping[str, object]) -> int | None:
    """The stay a toleration grants on NoExecute taints (None: forever)."""
    seconds = toleration.get("tolerationSeconds")
    if isinstance(seconds, bool) or not isinstance(seconds, int):
        return None
    if _text(toleration.get("effect")) not in ("", NO_EXECUTE):
        return None  # only valid with NoExecute; ignored otherwise
    return max(seconds, 0)


def _tolerations_with_positions(
    existing: Sequence[object], supported: Iterable[Platform], policy: SchedulingPolicy
) -> list[tuple[Mapping[str, object], int | None]]:
    """The tolerations to add, each with the index of the existing toleration it must come
    before (None: appended). The taint manager bounds a pod's stay on a NoExecute taint by the
    first toleration matching it, so one that tolerates for a while only must come after."""
    supported_set = set(supported)
    present = [item for item in existing if isinstance(item, Mapping)]
    added: list[tuple[Mapping[str, object], int | None]] = []
    for platform in policy.platforms:
        if platform not in supported_set:
            continue
        for toleration in policy.tolerations.get(platform, ()):
            if any(toleration_covers(item, toleration) for item, _ in added):
                continue
            limit = _limiting_toleration(existing, toleration)
            if limit is None and any(_tolerates_like(item, toleration) for item in present):
                continue
            added.append((toleration.to_manifest(), limit))
    return added


def _limiting_toleration(existing: Sequence[object], wanted: Toleration) -> int | None:
    """The index of the first toleration that may match a NoExecute taint ``wanted``
    tolerates, when it bounds the stay there more than ``wanted`` does."""
    if wanted.effect not in ("", NO_EXECUTE):
        return None
    for index, item in enumerate(existing):
        if not isinstance(item, Mapping) or not _may_overlap(item, wanted):
            continue
        seconds = _seconds(item)
        if seconds is None or (
            wanted.toleration_seconds is not None and seconds >= wanted.toleration_seconds
        ):
            return None
        return index
    return None


def _may_overlap(existing: Mapping[str, object], wanted: Toleration) -> bool:
    """Whether some taint tolerated by ``wanted`` is tolerated by ``existing`` too."""
    effect = _text(existing.get("effect"))
    if effect and wanted.effect and effect != wanted.effect:
        return False
    key = _text(existing.get("key"))
    operator = _text(existing.get("operator")) or "Equal"
    if key and wanted.key and key != wanted.key:
        return False
    if operator == "Exists" or wanted.operator == "Exists":
        return True
    return _text(existing.get("value")) == wanted.value


def wanted_terms(
    targets: Sequence[Platform],
    universe: Sequence[Platform],
    policy: SchedulingPolicy,
    builds: Mapping[Platform, tuple[str, ...]] | None = None,
) -> tuple[list[Term], list[tuple[Platform, Platform]]]:
    """Terms (ORed) that nodes of the ``targets`` platforms match and nodes of the other
    platforms of ``universe`` do not; ``builds`` restricts Windows platforms to those builds.
    Also (target, other) pairs whose nodes no known label tells apart (the terms match both)."""
    targets = [p for p in universe if p in set(targets)]
    restricted = {p: builds[p] for p in targets if builds and p in builds}
    if set(targets) == set(universe) and not restricted:
        return [], []
    outside = [q for q in universe if q not in set(targets)]
    requirements: list[Term] = []
    indistinct: list[tuple[Platform, Platform]] = []
    for platform in targets:
        requirement: Term = {ARCH_LABEL: (platform.architecture,), OS_LABEL: (platform.os,)}
        siblings = [
            q for q in outside if (q.os, q.architecture) == (platform.os, platform.architecture)
        ]
        if siblings:
            own = _refining_labels(platform, policy)
            for sibling in siblings:
                theirs = node_labels(sibling, policy)
                if not any(theirs.get(label) != value for label, value in own.items()):
                    indistinct.append((platform, sibling))
            if own and all(
                any(node_labels(q, policy).get(k) != v for k, v in own.items()) for q in siblings
            ):
                requirement.update({label: (value,) for label, value in own.items()})
        if platform in restricted:
            requirement[WINDOWS_BUILD_LABEL] = restricted[platform]
        if requirement not in requirements:
            requirements.append(requirement)
    if all(set(r) <= {ARCH_LABEL, OS_LABEL} for r in requirements):
        single = _product_term(targets, universe)
        if single is not None:
            return ([single] if single else []), indistinct
    terms = _merged(requirements)
    for term in terms:
        for label in (ARCH_LABEL, OS_LABEL):
            every = {node_labels(q, policy)[label] for q in universe}
            if label in term and set(term[label]) >= every:
                del term[label]
    if any(not term for term in terms):
        return [], indistinct
    return terms, indistinct


def _refining_labels(platform: Platform, policy: SchedulingPolicy) -> dict[str, str]:
    """Labels beyond OS and architecture that the nodes of ``platform`` carry."""
    labels = node_labels(platform, policy)
    for label in (ARCH_LABEL, OS_LABEL, *BETA_LABELS.values()):
        labels.pop(label, None)
    return labels


def _product_term(targets: Sequence[Platform], universe: Sequence[Platform]) -> Term | None:
    """One term (architectures AND OSes) when the targets are exactly the universe's platforms
    of some OSes and some architectures; None when they are not."""
    architectures = _ordered_unique(p.architecture for p in targets)
    systems = _ordered_unique(p.os for p in targets)
    pairs = {(p.os, p.architecture) for p in targets}
    product = {
        (q.os, q.architecture)
        for q in universe
        if q.os in systems and q.architecture in architectures
    }
    if product != pairs:
        return None
    term: Term = {}
    if set(architectures) != {q.architecture for q in universe}:
        term[ARCH_LABEL] = tuple(architectures)
    if set(systems) != {q.os for q in universe}:
        term[OS_LABEL] = tuple(systems)
    return term


def _merged(requirements: list[Term]) -> list[Term]:
    """Merge terms that differ in the values of one label into one ``In`` list, architectures
    first (pairs sharing an OS), until no two can be merged: an exact rewrite."""
    terms = [dict(term) for term in requirements]
    changed = True
    while changed:
        changed = False
        labels = _ordered_unique(label for term in terms for label in term)
        labels.sort(key=lambda label: (label != ARCH_LABEL, label != OS_LABEL))
        for label in labels:
            merged: list[Term] = []
            for term in terms:
                partner = next(
                    (
                        other
                        for other in merged
                        if set(other) == set(term)
                        and label in term
                        and all(other[k] == term[k] for k in term if k != label)
                    ),
                    None,
                )
                if partner is None:
                    merged.append(dict(term))
                else:
                    partner[label] = tuple(_ordered_unique([*partner[label], *term[label]]))
            if len(merged) < len(terms):
                terms, changed = merged, True
                break
    return terms


def pod_os(spec: Mapping[str, object]) -> str | None:
    """The pod's ``spec.os.name`` (``linux``, ``windows``), or None."""
    pod_os_field = spec.get("os")
    name = pod_os_field.get("name") if isinstance(pod_os_field, Mapping) else None
    return name if isinstance(name, str) and name in ("linux", "windows") else None


def is_host_process(spec: Mapping[str, object]) -> bool:
    """Whether the pod's containers are Windows HostProcess containers
    (``securityContext.windowsOptions.hostProcess: true`` on the pod or a container; the API
    server requires all of a pod's containers to be HostProcess if one is). They run on the
    host, on any Windows build, so no image pins them to a build."""
    holders: list[object] = [spec]
    for field_name in ("containers", "initContainers", "ephemeralContainers"):
        holders.extend(_list(spec.get(field_name)))
    for holder in holders:
        context = holder.get("securityContext") if isinstance(holder, Mapping) else None
        options = context.get("windowsOptions") if isinstance(context, Mapping) else None
        if isinstance(options, Mapping) and options.get("hostProcess") is True:
            return True
    return False


def any_windows_build(image_platforms: Iterable[frozenset[Platform]]) -> list[frozenset[Platform]]:
    """The images' platforms with the Windows builds dropped (for HostProcess pods)."""
    return [
        frozenset(
            Platform(p.os, p.architecture, p.variant) if p.os == "windows" else p for p in platforms
        )
        for platforms in image_platforms
    ]


def plan_pod(
    spec: Mapping[str, object],
    path: Path,
    supported: frozenset[Platform],
    policy: SchedulingPolicy,
    builds: Mapping[Platform, tuple[str, ...]] | None = None,
) -> PodPlan:
    """Plan the changes for the pod spec (or Argo template) at ``path``. ``builds``: the
    Windows builds the images run on (:func:`windows_builds`)."""
    cluster = list(policy.platforms)
    os_name = pod_os(spec)
    if os_name is not None and supported:
        # The kubelet admits a pod only on a node of its spec.os.name (PodOSRejection): the
        # images' platforms of the other OS do not count.
        own = frozenset(p for p in supported if p.os == os_name)
        if not own:
            return PodPlan(
                supported,
                findings=_conflicts(
                    [
                        f"spec.os.name is {os_name}, but the images run only on "
                        f"{format_platforms(supported)} of the cluster's platforms"
                    ]
                ),
            )
        supported = own
    if not supported:
        return PodPlan(
            supported,
            findings=(
                Finding(
                    NO_COMMON_PLATFORM,
                    "error",
                    f"no platform in spec.platforms ({format_platforms(set(cluster))}) runs "
                    "every image of this pod",
                ),
            ),
        )
    node_name = spec.get("nodeName")
    if isinstance(node_name, str) and node_name:
        return _pinned(supported, node_name, cluster)
    selector = spec.get("nodeSelector")
    selector = selector if isinstance(selector, Mapping) else {}
    allowed = [p for p in cluster if _selector_allows(selector, p, policy)]
    reachable = [p for p in allowed if p in supported]
    if not reachable:
        problems = _node_selector_problems(selector, supported, policy) or [
            f"nodeSelector allows no node of platform {format_platforms(supported)}, the only "
            "ones that run every image"
            + _implications(((str(k), [str(v)]) for k, v in selector.items()), policy)
        ]
        return PodPlan(supported, findings=_conflicts(problems))
    builds = {p: b for p, b in (builds or {}).items() if p in set(reachable)}
    wanted, indistinct = wanted_terms(reachable, allowed, policy, builds)
    warnings = _indistinct_warnings(indistinct)
    required = _required_terms(spec)
    crossing = _cross_terms(required, path, supported, allowed, policy, builds, selector)
    if crossing.problems and policy.node_affinity != "none":
        return PodPlan(supported, findings=_conflicts(crossing.problems))
    landing = crossing.landing if crossing.landing is not None else set(reachable)
    operations: list[Operation] = []
    positioned = _tolerations_with_positions(_list(spec.get("tolerations")), landing, policy)
    if positioned:
        operations.extend(_toleration_operations(spec, path, positioned))
    if policy.node_affinity == "required" and wanted:
        if required is None:
            operations.extend(_new_required(spec, path, wanted))
        else:
            operations.extend(crossing.operations)
    elif (
        policy.node_affinity == "preferred" and wanted and (required is None or crossing.operations)
    ):
        operations.extend(_prefer_terms(spec, path, wanted))
    return PodPlan(
        supported,
        tuple(operations),
        tuple(warnings),
        tuple(item for item, _ in positioned),
        tuple(wanted),
        frozenset(landing),
    )


_CONFLICT_RULES = (NO_COMMON_PLATFORM, SCHEDULING_CONFLICT)


def _conflicts(problems: Sequence[str]) -> tuple[Finding, ...]:
    """The pod's own constraints exclude the platforms its images run on."""
    return tuple(Finding(SCHEDULING_CONFLICT, "error", problem) for problem in problems)


def _pinned(supported: frozenset[Platform], node_name: str, cluster: list[Platform]) -> PodPlan:
    """A pod with ``spec.nodeName`` is bound by whoever wrote it, not by the scheduler:
    tolerations and affinity would be noise. Whether its node runs its images is reported."""
    if set(cluster) <= supported:
        return PodPlan(supported)
    message = (
        f"spec.nodeName pins the pod to node {node_name}, bypassing the scheduler: no "
        f"toleration or affinity is added; its images run only on "
        f"{format_platforms(supported)}, so node {node_name} must be of one of them"
    )
    return PodPlan(supported, findings=(Finding(PINNED_POD, "warning", message),))


def _indistinct_warnings(pairs: list[tuple[Platform, Platform]]) -> list[Finding]:
    warnings = []
    for platform, other in pairs:
        warnings.append(
            Finding(
                INDISTINGUISHABLE_PLATFORMS,
                "warning",
                f"the images run on {platform} but not on {other}, and no node label tells "
                f"their nodes apart: the pod may land on {other} nodes; name a label that "
                f"does in the policy (platforms: [{{platform: {platform}, nodeSelector: "
                "{...}}])",
            )
        )
    return warnings


def _node_selector_problems(
    selector: Mapping[str, object], supported: frozenset[Platform], policy: SchedulingPolicy
) -> list[str]:
    problems = []
    runnable = [p for p in policy.platforms if p in supported]
    for key, value in selector.items():
        label = next(
            (name for name in (ARCH_LABEL, OS_LABEL) if key in (name, BETA_LABELS[name])),
            None,
        )
        if label is None:
            rule = _implied_rule(str(key), str(value), policy.node_labels)
            if rule is not None and not any(rule.covers(p) for p in runnable):
                note = f" ({rule.what})" if rule.what else ""
                problems.append(
                    f"nodeSelector {key}={value} means {rule.implies()} nodes{note}, but the "
                    f"images run only on {format_platforms(supported)}"
                )
            continue
        allowed = _ordered_unique(
            node_labels(p, policy)[label] for p in policy.platforms if p in supported
        )
        if str(value) not in allowed:
            problems.append(
                f"nodeSelector {key}={value} contradicts the images, which run only on "
                f"{label.rpartition('/')[2]} {', '.join(allowed)}"
            )
    return problems


@dataclass
class _Crossing:
    operations: list[Operation]
    problems: list[str]
    #: Supported platforms the pod may land on with its required terms narrowed (None: the
    #: pod has no required terms).
    landing: set[Platform] | None


def _required_terms(spec: Mapping[str, object]) -> list[object] | None:
    """The pod's required node selector terms; None when there are none to cross with."""
    affinity = spec.get("affinity")
    node_affinity = affinity.get("nodeAffinity") if isinstance(affinity, Mapping) else None
    required = node_affinity.get(REQUIRED) if isinstance(node_affinity, Mapping) else None
    terms = required.get("nodeSelectorTerms") if isinstance(required, Mapping) else None
    return terms if isinstance(terms, list) and terms else None


def _terms_path(path: Path) -> Path:
    return (*path, "affinity", "nodeAffinity", REQUIRED, "nodeSelectorTerms")


def _cross_terms(
    terms: list[object] | None,
    path: Path,
    supported: frozenset[Platform],
    allowed: list[Platform],
    policy: SchedulingPolicy,
    builds: Mapping[Platform, tuple[str, ...]],
    selector: Mapping[str, object] | None = None,
) -> _Crossing:
    """The pod's required terms ANDed with the wanted constraint: each term narrowed to the
    supported platforms it may match (split into one term per wanted term where needed); a
    term that may match only unsupported nodes is removed when others remain."""
    if terms is None:
        return _Crossing([], [], None)
    new_terms: list[object] = []
    in_place: list[Operation] = []
    #: (index, terms to insert after the term at index): a term narrowed into several.
    extra: list[tuple[int, list[dict[str, Any]]]] = []
    removed = False
    problems: list[str] = []
    landing: set[Platform] = set()
    for index, term in enumerate(terms):
        term_path = (*_terms_path(path), index)
        if not isinstance(term, Mapping):
            problems.append(f"nodeSelectorTerms[{index}] is not a mapping")
            continue
        matched = _term_platforms(term, allowed, policy, selector)
        if matched is None:
            new_terms.append(term)  # matches nothing, and must go on doing so
            continue
        targets = [p for p in matched if p in supported]
        if not targets:
            removed = True
            continue
        term_builds = {p: b for p, b in builds.items() if p in set(targets)}
        wanted, _ = wanted_terms(targets, matched, policy, term_builds)
        narrowed: list[tuple[list[Operation], dict[str, Any]]] = []
        for want in wanted or [{}]:
            result = _narrow_term(term, term_path, want, policy)
            if result is not None:
                narrowed.append(result)
        if not narrowed:
            removed = True
            continue
        landing.update(targets)
        in_place.extend(narrowed[0][0])
        new_terms.extend(value for _, value in narrowed)
        if len(narrowed) > 1:
            extra.append((index, [value for _, value in narrowed[1:]]))
    if problems:
        return _Crossing([], problems, None)
    if not landing:
        return _Crossing([], _term_problems(terms, supported, allowed, policy, selector), None)
    if removed:
        return _Crossing([Operation("replace", _terms_path(path), new_terms)], [], landing)
    # Each term narrowed in place; the copies a split adds go right after it (inserted from
    # the last term backwards, so that the indices of the earlier ones hold).
    inserts = [
        Operation("add", (*_terms_path(path), index + offset), value)
        for index, values in reversed(extra)
        for offset, value in enumerate(values, start=1)
    ]
    return _Crossing(in_place + inserts, [], landing)


def _term_problems(
    terms: list[object],
    supported: frozenset[Platform],
    allowed: list[Platform],
    policy: SchedulingPolicy,
    selector: Mapping[str, object] | None = None,
) -> list[str]:
    problems = []
    for index, term in enumerate(terms):
        matched = (
            _term_platforms(term, allowed, policy, selector) if isinstance(term, Mapping) else None
        )
        if matched is None:
            continue
        assert isinstance(term, Mapping)
        implied = _implications(
            (
                (str(e.get("key")), [str(v) for v in _list(e.get("values"))])
                for e in _list(term.get("matchExpressions"))
                if isinstance(e, Mapping) and e.get("operator") == "In"
            ),
            policy,
        )
        if not matched:
            problems.append(
                f"required node affinity term nodeSelectorTerms[{index}] allows no node "
                f"platform of the cluster{implied}"
            )
        else:
            problems.append(
                f"required node affinity term nodeSelectorTerms[{index}] allows only "
                f"{format_platforms(set(matched))}{implied}, but the images run only on "
                f"{format_platforms(supported)}"
            )
    return problems or ["every required node affinity term is empty and matches no node"]


def _narrow_term(
    term: Mapping[str, object], term_path: Path, want: Term, policy: SchedulingPolicy
) -> tuple[list[Operation], dict[str, Any]] | None:
    """Operations making ``term`` require ``want`` too (intersecting an ``In`` on the same
    label in place, else appending an expression), and the term they make; None when the
    intersection is empty."""
    expressions = _list(term.get("matchExpressions"))
    operations: list[Operation] = []
    appended: list[dict[str, object]] = []
    for label, values in want.items():
        keys = (label, BETA_LABELS[label]) if label in BETA_LABELS else (label,)
        on_label = [
            (position, expression)
            for position, expression in enumerate(expressions)
            if isinstance(expression, Mapping) and expression.get("key") in keys
        ]
        if _implied(on_label, label, values, policy):
            continue
        if (
            len(on_label) == 1
            and on_label[0][1].get("operator") == "In"
            and on_label[0][1].get("key") == label
        ):
            position, expression = on_label[0]
            kept = [v for v in _list(expression.get("values")) if str(v) in values]
            if not kept:
                return None
            operations.append(
                Operation("replace", (*term_path, "matchExpressions", position, "values"), kept)
            )
            continue
        appended.append(_expression(label, values))
    if appended and isinstance(term.get("matchExpressions"), list):
        operations.extend(
            Operation("add", (*term_path, "matchExpressions", "-"), expression)
            for expression in appended
        )
    elif appended:
        operations.append(_set(term, term_path, "matchExpressions", appended))
    relative = [operation.relative_to(term_path) for operation in operations]
    value = apply_patch(deep_copy(dict(term)), relative) if relative else deep_copy(dict(term))
    assert isinstance(value, dict)
    return operations, value


def _implied(
    on_label: list[tuple[int, Mapping[str, object]]],
    label: str,
    values: tuple[str, ...],
    policy: SchedulingPolicy,
) -> bool:
    """Whether the term's expressions on ``label`` already allow only ``values``."""
    if label in BETA_LABELS:
        allowed = {node_labels(p, policy)[label] for p in policy.platforms} | set(values)
        for _, expression in on_label:
            allowed &= _allowed_by(expression, allowed)
        return allowed <= set(values)
    return any(
        expression.get("operator") == "In"
        and {str(v) for v in _list(expression.get("values"))} <= set(values)
        for _, expression in on_label
    )


def _allowed_by(expression: Mapping[str, object], universe: set[str]) -> set[str]:
    operator = expression.get("operator")
    values = {str(v) for v in _list(expression.get("values"))}
    if operator == "In":
        return values
    if operator == "NotIn":
        return universe - values
    if operator == "DoesNotExist":
        return set()
    return set(universe)


def _new_required(spec: Mapping[str, object], path: Path, wanted: list[Term]) -> list[Operation]:
    new_terms = [{"matchExpressions": _expressions(term)} for term in wanted]
    new_required = {"nodeSelectorTerms": new_terms}
    affinity = spec.get("affinity")
    node_affinity = affinity.get("nodeAffinity") if isinstance(affinity, Mapping) else None
    required = node_affinity.get(REQUIRED) if isinstance(node_affinity, Mapping) else None
    if not isinstance(affinity, Mapping):
        return [_set(spec, path, "affinity", {"nodeAffinity": {REQUIRED: new_required}})]
    if not isinstance(node_affinity, Mapping):
        return [_set(affinity, (*path, "affinity"), "nodeAffinity", {REQUIRED: new_required})]
    node_affinity_path = (*path, "affinity", "nodeAffinity")
    if not isinstance(required, Mapping):
        return [_set(node_affinity, node_affinity_path, REQUIRED, new_required)]
    return [_set(required, (*node_affinity_path, REQUIRED), "nodeSelectorTerms", new_terms)]


def _prefer_terms(spec: Mapping[str, object], path: Path, wanted: list[Term]) -> list[Operation]:
    affinity = spec.get("affinity")
    node_affinity = affinity.get("nodeAffinity") if isinstance(affinity, Mapping) else None
    preferred = node_affinity.get(PREFERRED) if isinstance(node_affinity, Mapping) else None
    existing = preferred if isinstance(preferred, list) else []
    new = [
        {"weight": PREFERRED_WEIGHT, "preference": {"matchExpressions": _expressions(term)}}
        for term in wanted
        if not any(_same_preference(item, _expressions(term)) for item in existing)
    ]
    if not new:
        return []
    if not isinstance(affinity, Mapping):
        return [_set(spec, path, "affinity", {"nodeAffinity": {PREFERRED: new}})]
    if not isinstance(node_affinity, Mapping):
        return [_set(affinity, (*path, "affinity"), "nodeAffinity", {PREFERRED: new})]
    return list(_add_to_list(node_affinity, (*path, "affinity", "nodeAffinity"), PREFERRED, new))


def _same_preference(item: object, expressions: list[dict[str, object]]) -> bool:
    if not isinstance(item, Mapping):
        return False
    preference = item.get("preference")
    if not isinstance(preference, Mapping):
        return False
    existing = _list(preference.get("matchExpressions"))
    return all(expression in existing for expression in expressions)


def _expressions(term: Term) -> list[dict[str, object]]:
    return [_expression(label, values) for label, values in term.items()]


def _expression(label: str, values: tuple[str, ...]) -> dict[str, object]:
    return {"key": label, "operator": "In", "values": list(values)}


def describe_changes(
    plan: PodPlan, preferred: Sequence[Mapping[str, object]], policy: SchedulingPolicy
) -> tuple[str, ...]:
    """What the plan adds to the pod (``preferred``: the preference terms it adds), in words."""
    changes = [f"add toleration {_toleration_text(t)}" for t in plan.added_tolerations]
    touches_affinity = any(_touches_affinity(op.path, op.value) for op in plan.operations)
    for term in preferred:
        changes.append(f"prefer {_term_text(term)}")
    if preferred and not plan.node_terms:
        return tuple(changes)  # the affinity change is the preference
    if touches_affinity and len(plan.node_terms) > 1:
        verb = "require" if policy.node_affinity == "required" else "prefer"
        changes.append(f"{verb} node affinity {describe_terms(plan.node_terms)}")
    elif touches_affinity and plan.required_labels:
        verb = "require" if policy.node_affinity == "required" else "prefer"
        for label, values in plan.required_labels.items():
            changes.append(f"{verb} node affinity {label} In [{', '.join(values)}]")
    elif touches_affinity:
        changes.append("update node affinity")
    return tuple(changes)


_AFFINITY_KEYS = frozenset({"affinity", "nodeAffinity"})


def _touches_affinity(path: Sequence[str | int], value: object) -> bool:
    """Whether an operation writes node affinity: under it (Rook's bare ``nodeAffinity`` too),
    or as part of an object it creates (an operator's missing ``template.pod``)."""
    if any(token in _AFFINITY_KEYS for token in path):
        return True
    if isinstance(value, Mapping):
        return any(_touches_affinity((key,), child) for key, child in value.items())
    return False


def _term_text(term: Mapping[str, object]) -> str:
    """``kubernetes.io/arch In [arm64] (weight 80)``."""
    preference = term.get("preference")
    expressions = preference.get("matchExpressions") if isinstance(preference, Mapping) else None
    parts = [
        f"{e.get('key')} In [{', '.join(str(v) for v in _list(e.get('values')))}]"
        for e in (expressions if isinstance(expressions, list) else [])
        if isinstance(e, Mapping)
    ]
    return f"{' and '.join(parts)} (weight {term.get('weight')})"


def _toleration_text(toleration: Mapping[str, object]) -> str:
    key = str(toleration.get("key", "")) or "*"
    value = toleration.get("value")
    effect = toleration.get("effect")
    text = key if toleration.get("operator") == "Exists" else f"{key}={value}"
    return f"{text}:{effect}" if effect else text


def describe_terms(terms: Sequence[Term]) -> str:
    """``kubernetes.io/arch In [arm64]``, terms joined by ``or``: for messages."""
    texts = [
        " and ".join(f"{label} In [{', '.join(values)}]" for label, values in term.items())
        for term in terms
    ]
    if len(texts) == 1:
        return texts[0]
    return " or ".join(f"({text})" for text in texts)


def _toleration_operations(
    spec: Mapping[str, object],
    path: Path,
    positioned: list[tuple[Mapping[str, object], int | None]],
) -> list[Operation]:
    existing = spec.get("tolerations")
    if not isinstance(existing, list):
        return [_set(spec, path, "tolerations", [dict(item) for item, _ in positioned])]
    operations: list[Operation] = []
    inserted_before: list[int] = []
    for item, position in positioned:
        if position is None:
            where: str | int = "-"
        else:
            where = position + sum(1 for earlier in inserted_before if earlier <= position)
            inserted_before.append(position)
        operations.append(Operation("add", (*path, "tolerations", where), dict(item)))
    return operations


def plan_pod_with_inherited(
    spec: Mapping[str, object],
    inherited: Mapping[str, object],
    path: Path,
    supported: frozenset[Platform],
    policy: SchedulingPolicy,
    builds: Mapping[Platform, tuple[str, ...]] | None = None,
) -> PodPlan:
    """Plan a pod whose mapping inherits scheduling fields it leaves empty (an Argo Workflows
    template: the workflow's tolerations and nodeSelector where the template's are empty,
    its affinity where the template's is null). The decision is made on the merged view; a
    change to an inherited field is written to the pod's own mapping as the whole merged
    value, so what the workflow gave is kept."""
    if not inherited:
        return plan_pod(spec, path, supported, policy, builds)
    merged: dict[str, object] = {**spec}
    merged.update({key: deep_copy(value) for key, value in inherited.items()})
    plan = plan_pod(merged, (), supported, policy, builds)
    if not plan.operations:
        return plan
    patched = apply_patch(merged, plan.operations)
    assert isinstance(patched, dict)
    operations: list[Operation] = []
    rewritten: set[str] = set()
    for operation in plan.operations:
        field_name = str(operation.path[0])
        if field_name in inherited:
            if field_name not in rewritten:
                rewritten.add(field_name)
                operations.append(Operation("add", (*path, field_name), patched[field_name]))
        else:
            operations.append(operation.under(path))
    return PodPlan(
        plan.supported,
        tuple(operations),
        plan.findings,
        plan.added_tolerations,
        plan.node_terms,
        plan.landing,
    )


def _add_to_list(
    parent: Mapping[str, object], parent_path: Path, key: str, items: Sequence[Mapping[str, object]]
) -> list[Operation]:
    if isinstance(parent.get(key), list):
        return [Operation("add", (*parent_path, key, "-"), dict(item)) for item in items]
    return [_set(parent, parent_path, key, [dict(item) for item in items])]


def _set(parent: Mapping[str, object], parent_path: Path, key: str, value: object) -> Operation:
    """``add`` a missing key; ``replace`` one that is present but null or of the wrong type."""
    return Operation("replace" if key in parent else "add", (*parent_path, key), value)


def _text(value: object) -> str:
    return value if isinstance(value, str) else ""


def _ordered_unique(values: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(values))
