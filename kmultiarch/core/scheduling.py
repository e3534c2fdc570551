"""Which tolerations and node affinity a pod needs, and how to merge them into what it has.

Pure functions over plain data. The outcome for a pod is a :class:`PodPlan`: RFC 6902
operations (``add``/``replace``, paths from the document root) -- exactly what an admission
webhook would return -- or the problems that keep the pod as it is.

Semantics (k8s.io/api, scheduler):
- a toleration covers a taint when effects match (or the toleration's is empty), keys match
  (or the key is empty with ``Exists``), and values match (or the operator is ``Exists``);
- required ``nodeSelectorTerms`` are ORed and expressions inside a term ANDed: an architecture
  is required by constraining every term; an existing constraint on the same label is
  intersected; an empty intersection is reported, never written;
- ``nodeSelector`` must hold as well: one that contradicts the images is reported.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kmultiarch.core.patch import apply_patch, json_pointer, pointer_tokens
from kmultiarch.core.platform import Platform, format_platforms
from kmultiarch.core.policy import Policy, Toleration
from kmultiarch.core.workloads import Path

ARCH_LABEL = "kubernetes.io/arch"
OS_LABEL = "kubernetes.io/os"
BETA_LABELS = {ARCH_LABEL: "beta.kubernetes.io/arch", OS_LABEL: "beta.kubernetes.io/os"}
REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"
PREFERRED = "preferredDuringSchedulingIgnoredDuringExecution"
PREFERRED_WEIGHT = 100

Operation = dict[str, Any]


@dataclass(frozen=True)
class PodPlan:
    """What to do to one pod: operations, or problems (then no operation is applied)."""

    supported: frozenset[Platform]
    operations: tuple[Operation, ...] = ()
    problems: tuple[str, ...] = ()
    added_tolerations: tuple[Mapping[str, object], ...] = ()
    required_labels: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    @property
    def changes(self) -> bool:
        return bool(self.operations)


def supported_platforms(
    image_platforms: Iterable[frozenset[Platform]], cluster: Sequence[Platform]
) -> frozenset[Platform]:
    """The cluster platforms on which every image of a pod runs."""
    images = list(image_platforms)
    return frozenset(
        node
        for node in cluster
        if all(any(platform.runs_on(node) for platform in platforms) for platforms in images)
    )


def toleration_covers(existing: Mapping[str, object], wanted: Toleration) -> bool:
    """Whether ``existing`` (a toleration in the pod) already tolerates every taint that
    ``wanted`` tolerates: ToleratesTaint, generalised from a taint to a toleration."""
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


def tolerations_to_add(
    existing: Sequence[object], supported: Iterable[Platform], policy: Policy
) -> list[Mapping[str, object]]:
    present = [item for item in existing if isinstance(item, Mapping)]
    added: list[Mapping[str, object]] = []
    for platform in policy.platforms:
        if platform not in supported:
            continue
        for toleration in policy.tolerations.get(platform, ()):
            manifest = toleration.to_manifest()
            if any(toleration_covers(item, toleration) for item in [*present, *added]):
                continue
            added.append(manifest)
    return added


def required_labels(supported: frozenset[Platform], policy: Policy) -> dict[str, tuple[str, ...]]:
    """Node label constraints that narrow the cluster to the supported platforms: an
    architecture (and OS) list when the pod runs on fewer than the cluster has."""
    constraints: dict[str, tuple[str, ...]] = {}
    for label, part in ((OS_LABEL, "os"), (ARCH_LABEL, "architecture")):
        cluster_values = _ordered_unique(getattr(p, part) for p in policy.platforms)
        allowed = _ordered_unique(getattr(p, part) for p in policy.platforms if p in supported)
        if set(allowed) != set(cluster_values):
            constraints[label] = tuple(allowed)
    return dict(sorted(constraints.items(), key=lambda item: item[0] != ARCH_LABEL))


def plan_pod(
    spec: Mapping[str, object], path: Path, supported: frozenset[Platform], policy: Policy
) -> PodPlan:
    """Plan the changes for the pod spec (or Argo template) at ``path``."""
    if not supported:
        return PodPlan(
            supported,
            problems=(
                f"no platform in spec.platforms ({format_platforms(set(policy.platforms))}) runs "
                "every image of this pod",
            ),
        )
    labels = required_labels(supported, policy)
    problems = _node_selector_conflicts(spec, labels)
    if problems:
        return PodPlan(supported, problems=tuple(problems))
    labels = _not_pinned_by_node_selector(spec, labels)
    operations: list[Operation] = []
    added = tolerations_to_add(_list(spec.get("tolerations")), supported, policy)
    if added:
        operations.extend(_add_to_list(spec, path, "tolerations", added))
    if labels and policy.node_affinity == "required":
        affinity_operations, affinity_problems = _require_labels(spec, path, labels, policy)
        if affinity_problems:
            return PodPlan(supported, problems=tuple(affinity_problems))
        operations.extend(affinity_operations)
    elif labels and policy.node_affinity == "preferred":
        operations.extend(_prefer_labels(spec, path, labels))
    return PodPlan(supported, tuple(operations), (), tuple(added), labels)


def plan_pod_with_inherited(
    spec: Mapping[str, object],
    inherited: Mapping[str, object],
    path: Path,
    supported: frozenset[Platform],
    policy: Policy,
) -> PodPlan:
    """Plan a pod whose mapping lacks scheduling fields it inherits (an Argo Workflows
    template: its own tolerations/affinity/nodeSelector replace the workflow's). The decision
    is made on the merged view; a change to an inherited field is written to the pod's own
    mapping as the whole merged value, so what the workflow gave is kept."""
    if not inherited:
        return plan_pod(spec, path, supported, policy)
    import copy

    merged = {**copy.deepcopy(dict(inherited)), **spec}
    plan = plan_pod(merged, (), supported, policy)
    if not plan.operations:
        return plan
    patched = apply_patch(merged, plan.operations)
    assert isinstance(patched, dict)
    operations: list[Operation] = []
    rewritten: set[str] = set()
    for operation in plan.operations:
        field_name = pointer_tokens(operation["path"])[0]
        if field_name in inherited:
            if field_name not in rewritten:
                rewritten.add(field_name)
                operations.append(
                    {
                        "op": "add",
                        "path": json_pointer((*path, field_name)),
                        "value": patched[field_name],
                    }
                )
        else:
            operations.append({**operation, "path": json_pointer(path) + operation["path"]})
    return PodPlan(
        plan.supported,
        tuple(operations),
        plan.problems,
        plan.added_tolerations,
        plan.required_labels,
    )


def _node_selector_conflicts(
    spec: Mapping[str, object], labels: Mapping[str, tuple[str, ...]]
) -> list[str]:
    selector = spec.get("nodeSelector")
    if not isinstance(selector, Mapping):
        return []
    problems = []
    for label, allowed in labels.items():
        for key in (label, BETA_LABELS[label]):
            value = selector.get(key)
            if value is not None and str(value) not in allowed:
                problems.append(
                    f"nodeSelector {key}={value} contradicts the images, which run only on "
                    f"{label.rpartition('/')[2]} {', '.join(allowed)}"
                )
    return problems


def _not_pinned_by_node_selector(
    spec: Mapping[str, object], labels: Mapping[str, tuple[str, ...]]
) -> dict[str, tuple[str, ...]]:
    """Labels a (consistent) nodeSelector already pins need no affinity as well."""
    selector = spec.get("nodeSelector")
    if not isinstance(selector, Mapping):
        return dict(labels)
    return {
        label: values
        for label, values in labels.items()
        if selector.get(label) is None and selector.get(BETA_LABELS[label]) is None
    }


def _require_labels(
    spec: Mapping[str, object], path: Path, labels: Mapping[str, tuple[str, ...]], policy: Policy
) -> tuple[list[Operation], list[str]]:
    new_expressions = [_expression(label, values) for label, values in labels.items()]
    affinity = spec.get("affinity")
    node_affinity = affinity.get("nodeAffinity") if isinstance(affinity, Mapping) else None
    required = node_affinity.get(REQUIRED) if isinstance(node_affinity, Mapping) else None
    terms = required.get("nodeSelectorTerms") if isinstance(required, Mapping) else None
    new_required = {"nodeSelectorTerms": [{"matchExpressions": new_expressions}]}
    if not isinstance(affinity, Mapping):
        return [_set(spec, path, "affinity", {"nodeAffinity": {REQUIRED: new_required}})], []
    if not isinstance(node_affinity, Mapping):
        return [_set(affinity, (*path, "affinity"), "nodeAffinity", {REQUIRED: new_required})], []
    node_affinity_path = (*path, "affinity", "nodeAffinity")
    if not isinstance(required, Mapping):
        return [_set(node_affinity, node_affinity_path, REQUIRED, new_required)], []
    required_path = (*node_affinity_path, REQUIRED)
    if not isinstance(terms, list) or not terms:
        return [
            _set(required, required_path, "nodeSelectorTerms", new_required["nodeSelectorTerms"])
        ], []
    operations: list[Operation] = []
    problems: list[str] = []
    universe = {
        ARCH_LABEL: {p.architecture for p in policy.platforms},
        OS_LABEL: {p.os for p in policy.platforms},
    }
    for index, term in enumerate(terms):
        term_path = (*required_path, "nodeSelectorTerms", index)
        if not isinstance(term, Mapping):
            problems.append(f"nodeSelectorTerms[{index}] is not a mapping")
            continue
        if not _list(term.get("matchExpressions")) and not _list(term.get("matchFields")):
            continue  # an empty term matches no node; constraining it would let it match some
        expressions = _list(term.get("matchExpressions"))
        appended: list[dict[str, object]] = []
        for label, values in labels.items():
            replacement, new_expression, problem = _constrain_term(
                term_path, expressions, label, values, universe[label], index
            )
            if replacement is not None:
                operations.append(replacement)
            if new_expression is not None:
                appended.append(new_expression)
            if problem:
                problems.append(problem)
        if appended and isinstance(term.get("matchExpressions"), list):
            operations.extend(
                {
                    "op": "add",
                    "path": json_pointer((*term_path, "matchExpressions", "-")),
                    "value": expression,
                }
                for expression in appended
            )
        elif appended:
            operations.append(_set(term, term_path, "matchExpressions", appended))
    return operations, problems


def _constrain_term(
    term_path: Path,
    expressions: list[object],
    label: str,
    values: tuple[str, ...],
    universe: set[str],
    index: int,
) -> tuple[Operation | None, dict[str, object] | None, str | None]:
    """Make one nodeSelectorTerm allow only ``values`` of ``label``: a replacement of an
    existing ``In`` list, or a new expression to append, or a problem."""
    on_label = [
        (position, expression)
        for position, expression in enumerate(expressions)
        if isinstance(expression, Mapping) and expression.get("key") in (label, BETA_LABELS[label])
    ]
    allowed = set(universe) | set(values)
    for _, expression in on_label:
        allowed &= _allowed_by(expression, allowed)
    if allowed <= set(values):
        if not allowed:
            return (
                None,
                None,
                (
                    f"required node affinity term nodeSelectorTerms[{index}] allows no "
                    f"{label.rpartition('/')[2]} of the cluster"
                ),
            )
        return None, None, None
    narrowed = [value for value in values if value in allowed]
    if not narrowed:
        return (
            None,
            None,
            (
                f"required node affinity term nodeSelectorTerms[{index}] allows "
                f"{label} {', '.join(sorted(allowed))}, but the images run only on "
                f"{', '.join(values)}"
            ),
        )
    if (
        len(on_label) == 1
        and on_label[0][1].get("operator") == "In"
        and on_label[0][1].get("key") == label
    ):
        position, expression = on_label[0]
        kept = [v for v in _list(expression.get("values")) if str(v) in narrowed]
        return (
            {
                "op": "replace",
                "path": json_pointer((*term_path, "matchExpressions", position, "values")),
                "value": kept,
            },
            None,
            None,
        )
    return None, _expression(label, tuple(narrowed)), None


def _allowed_by(expression: Mapping[str, object], universe: set[str]) -> set[str]:
    operator = expression.get("operator")
    values = {str(v) for v in _list(expression.get("values"))}
    if operator == "In":
        return values
    if operator == "NotIn":
        return universe - values
    if operator == "Exists":
        return set(universe)
    if operator == "DoesNotExist":
        return set()
    return set(universe)


def _prefer_labels(
    spec: Mapping[str, object], path: Path, labels: Mapping[str, tuple[str, ...]]
) -> list[Operation]:
    expressions = [_expression(label, values) for label, values in labels.items()]
    term = {"weight": PREFERRED_WEIGHT, "preference": {"matchExpressions": expressions}}
    affinity = spec.get("affinity")
    node_affinity = affinity.get("nodeAffinity") if isinstance(affinity, Mapping) else None
    preferred = node_affinity.get(PREFERRED) if isinstance(node_affinity, Mapping) else None
    if isinstance(preferred, list) and any(
        _same_preference(item, expressions) for item in preferred
    ):
        return []
    if not isinstance(affinity, Mapping):
        return [_set(spec, path, "affinity", {"nodeAffinity": {PREFERRED: [term]}})]
    if not isinstance(node_affinity, Mapping):
        return [_set(affinity, (*path, "affinity"), "nodeAffinity", {PREFERRED: [term]})]
    return list(_add_to_list(node_affinity, (*path, "affinity", "nodeAffinity"), PREFERRED, [term]))


def _same_preference(item: object, expressions: list[dict[str, object]]) -> bool:
    if not isinstance(item, Mapping):
        return False
    preference = item.get("preference")
    if not isinstance(preference, Mapping):
        return False
    existing = _list(preference.get("matchExpressions"))
    return all(expression in existing for expression in expressions)


def _expression(label: str, values: tuple[str, ...]) -> dict[str, object]:
    return {"key": label, "operator": "In", "values": list(values)}


def _add_to_list(
    parent: Mapping[str, object], parent_path: Path, key: str, items: list[Mapping[str, object]]
) -> list[Operation]:
    if isinstance(parent.get(key), list):
        return [
            {"op": "add", "path": json_pointer((*parent_path, key, "-")), "value": dict(item)}
            for item in items
        ]
    return [_set(parent, parent_path, key, [dict(item) for item in items])]


def _set(parent: Mapping[str, object], parent_path: Path, key: str, value: object) -> Operation:
    """``add`` a missing key; ``replace`` one that is present but null or of the wrong type."""
    op = "replace" if key in parent else "add"
    return {"op": op, "path": json_pointer((*parent_path, key)), "value": value}


def _list(value: object) -> list[object]:
    return value if isinstance(value, list) else []


def _text(value: object) -> str:
    return value if isinstance(value, str) else ""


def _ordered_unique(values: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(values))
