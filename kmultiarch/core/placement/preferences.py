"""``spec.preferences``: steer pods that run on several platforms toward the cheaper ones.

For each preferred platform (``{linux/arm64: 80}``), a pod whose images run on it *and* on
another platform of the cluster gets a preferred node affinity term: ``kubernetes.io/arch In
[arm64]`` (and ``kubernetes.io/os`` when the cluster has several), weight 80. Never for a pod
that runs on that platform only (its required affinity says it all), nor when the pod already
prefers that architecture, nor when its nodeSelector pins the architecture.

Pure. The operations are computed on the pod spec as the scheduling plan leaves it, and folded
into the plan's own operations where the plan creates the mapping they write into.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from kmultiarch.core.images.platform import Platform
from kmultiarch.core.patch import Operation, apply_patch, deep_copy
from kmultiarch.core.policy.model import SchedulingPolicy

ARCH_LABEL = "kubernetes.io/arch"
OS_LABEL = "kubernetes.io/os"
BETA_ARCH_LABEL = "beta.kubernetes.io/arch"
PREFERRED = "preferredDuringSchedulingIgnoredDuringExecution"

Path = tuple[str | int, ...]


def preference_terms(
    spec: Mapping[str, object], supported: frozenset[Platform], policy: SchedulingPolicy
) -> list[dict[str, object]]:
    """The preferred scheduling terms the pod should get (none already there)."""
    if not policy.preferences:
        return []
    selector = spec.get("nodeSelector")
    if isinstance(selector, Mapping) and (
        selector.get(ARCH_LABEL) is not None or selector.get(BETA_ARCH_LABEL) is not None
    ):
        return []
    supported_architectures = {p.architecture for p in policy.platforms if p in supported}
    several_systems = len({p.os for p in policy.platforms}) > 1
    existing = _preferred_terms(spec)
    terms: list[dict[str, object]] = []
    for platform, weight in policy.preferences.items():
        if platform not in supported or supported_architectures <= {platform.architecture}:
            continue  # runs elsewhere only, or there only: nothing to prefer
        if _already_prefers(existing, platform.architecture):
            continue
        expressions: list[dict[str, object]] = [
            {"key": ARCH_LABEL, "operator": "In", "values": [platform.architecture]}
        ]
        if several_systems:
            expressions.append({"key": OS_LABEL, "operator": "In", "values": [platform.os]})
        terms.append({"weight": weight, "preference": {"matchExpressions": expressions}})
    return terms


def planned_view(
    spec: Mapping[str, object],
    inherited: Mapping[str, object],
    path: Path,
    operations: Sequence[Operation],
) -> Mapping[str, object]:
    """The pod's scheduling view once the plan's ``operations`` (document paths) are applied."""
    own = [operation.relative_to(path) for operation in operations if operation.is_under(path)]
    merged = {**spec, **inherited}  # inherited: the fields the pod's own leave empty
    patched = apply_patch(merged, own) if own else merged
    assert isinstance(patched, Mapping)
    return patched


def with_preferences(
    spec: Mapping[str, object],
    inherited: Mapping[str, object],
    path: Path,
    operations: Sequence[Operation],
    supported: frozenset[Platform],
    policy: SchedulingPolicy,
) -> list[Operation]:
    """The plan's ``operations`` (paths from the document root; the pod at ``path``) with the
    preference terms added: folded into an operation that creates the mapping they go in, else
    as operations of their own."""
    patched = planned_view(spec, inherited, path, operations)
    terms = preference_terms(patched, supported, policy)
    return apply_terms(patched, inherited, spec, path, operations, terms)


def apply_terms(
    patched: Mapping[str, object],
    inherited: Mapping[str, object],
    spec: Mapping[str, object],
    path: Path,
    operations: Sequence[Operation],
    terms: list[dict[str, object]],
) -> list[Operation]:
    """``operations`` with ``terms`` written (see :func:`with_preferences`)."""
    if not terms:
        return list(operations)
    result: list[Operation] = [
        operation.with_value(deep_copy(operation.value)) for operation in operations
    ]
    if "affinity" in inherited:
        # An Argo template inheriting the workflow's affinity: its own replaces the workflow's,
        # so write the whole of it (as the plan does for inherited fields).
        affinity = deep_copy(patched.get("affinity"))
        assert isinstance(affinity, dict)
        node_affinity = affinity.setdefault("nodeAffinity", {})
        node_affinity.setdefault(PREFERRED, []).extend(terms)
        result = [op for op in result if not op.is_under((*path, "affinity"))]
        result.append(Operation("add", (*path, "affinity"), affinity))
        return result
    for new in _term_operations(patched, path, terms):
        if not _fold(result, new):
            result.append(new)
    return result


def _term_operations(
    spec: Mapping[str, object], path: Path, terms: list[dict[str, object]]
) -> list[Operation]:
    affinity = spec.get("affinity")
    if not isinstance(affinity, Mapping):
        value: object = {"nodeAffinity": {PREFERRED: terms}}
        return [_set(spec, (*path, "affinity"), "affinity", value)]
    node_affinity = affinity.get("nodeAffinity")
    if not isinstance(node_affinity, Mapping):
        return [
            _set(affinity, (*path, "affinity", "nodeAffinity"), "nodeAffinity", {PREFERRED: terms})
        ]
    preferred = node_affinity.get(PREFERRED)
    if not isinstance(preferred, list):
        target = (*path, "affinity", "nodeAffinity", PREFERRED)
        return [_set(node_affinity, target, PREFERRED, terms)]
    return [
        Operation("add", (*path, "affinity", "nodeAffinity", PREFERRED, "-"), term)
        for term in terms
    ]


def _fold(operations: list[Operation], new: Operation) -> bool:
    """Put ``new`` inside an earlier ``add``/``replace`` whose value holds its path."""
    new_tokens = new.tokens
    for operation in operations:
        tokens = operation.tokens
        if new_tokens[: len(tokens)] != tokens or len(new_tokens) == len(tokens):
            continue
        container: object = operation.value
        rest = new_tokens[len(tokens) :]
        for token in rest[:-1]:
            if not isinstance(container, dict) or token not in container:
                return False
            container = container[token]
        last = rest[-1]
        if isinstance(container, list) and last == "-":
            container.append(deep_copy(new.value))
            return True
        if isinstance(container, dict) and last not in container:
            container[last] = deep_copy(new.value)
            return True
        return False
    return False


def _set(parent: Mapping[str, object], target: Path, key: str, value: object) -> Operation:
    return Operation("replace" if key in parent else "add", target, value)


def _preferred_terms(spec: Mapping[str, object]) -> list[object]:
    affinity = spec.get("affinity")
    node_affinity = affinity.get("nodeAffinity") if isinstance(affinity, Mapping) else None
    preferred = node_affinity.get(PREFERRED) if isinstance(node_affinity, Mapping) else None
    return preferred if isinstance(preferred, list) else []


def _already_prefers(terms: list[object], architecture: str) -> bool:
    for term in terms:
        preference = term.get("preference") if isinstance(term, Mapping) else None
        expressions = (
            preference.get("matchExpressions") if isinstance(preference, Mapping) else None
        )
        for expression in expressions if isinstance(expressions, list) else []:
            if (
                isinstance(expression, Mapping)
                and expression.get("key") in (ARCH_LABEL, BETA_ARCH_LABEL)
                and expression.get("operator") == "In"
                and isinstance(expression.get("values"), list)
                and architecture in [str(v) for v in expression["values"]]
            ):
                return True
    return False
