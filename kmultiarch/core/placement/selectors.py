"""What a pod's node selector and node affinity terms already allow: the platforms a term may
match, node labels that imply an architecture included (:mod:`kmultiarch.core.policy.nodelabels`).
Pure.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping, Sequence

from kmultiarch.core.images.platform import Platform
from kmultiarch.core.policy.model import SchedulingPolicy
from kmultiarch.core.policy.nodelabels import DOMAINS, NodeLabelRule, known_keys, rule_for

ARCH_LABEL = "kubernetes.io/arch"

OS_LABEL = "kubernetes.io/os"

WINDOWS_BUILD_LABEL = "node.kubernetes.io/windows-build"

BETA_LABELS = {ARCH_LABEL: "beta.kubernetes.io/arch", OS_LABEL: "beta.kubernetes.io/os"}

REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"

PREFERRED = "preferredDuringSchedulingIgnoredDuringExecution"

#: One node selector term as kmultiarch writes it: label -> the values of an ``In`` expression.
Term = dict[str, tuple[str, ...]]


def node_labels(platform: Platform, policy: SchedulingPolicy) -> dict[str, str]:
    """The labels kmultiarch knows the nodes of ``platform`` carry."""
    labels = {
        ARCH_LABEL: platform.architecture,
        OS_LABEL: platform.os,
        BETA_LABELS[ARCH_LABEL]: platform.architecture,
        BETA_LABELS[OS_LABEL]: platform.os,
    }
    if platform.os == "windows" and platform.os_version:
        labels[WINDOWS_BUILD_LABEL] = platform.build
    labels.update(policy.node_selectors.get(platform, {}))
    return labels


def _selector_allows(
    selector: Mapping[str, object], platform: Platform, policy: SchedulingPolicy
) -> bool:
    """Whether nodes of ``platform`` may carry every label of the nodeSelector: the kubelet's
    labels are known, and a label whose value fixes the architecture (core.nodelabels) is
    carried only by nodes of that architecture."""
    labels = node_labels(platform, policy)
    return all(
        str(value) == labels[key] if key in labels else _value_on(key, str(value), platform, policy)
        for key, value in selector.items()
    )


@functools.lru_cache(maxsize=4096)
def _implied_rule(key: str, value: str, rules: tuple[NodeLabelRule, ...]) -> NodeLabelRule | None:
    return rule_for(key, value, rules)


def _value_on(key: str, value: str, platform: Platform, policy: SchedulingPolicy) -> bool:
    """Whether nodes of ``platform`` may carry ``key=value`` (a value no entry of the node
    label table knows may be on any node)."""
    if key not in known_keys(policy.node_labels):
        return True  # most labels (app, team, zone): no entry to look through
    rule = _implied_rule(key, value, policy.node_labels)
    return rule is None or rule.covers(platform)


def _implied_allows(
    expressions: Sequence[object], platform: Platform, policy: SchedulingPolicy
) -> bool:
    """Whether nodes of ``platform`` may match the term's expressions on labels whose values
    fix the architecture: per label, the values a matching node may carry (the intersection of
    its ``In`` lists less its ``NotIn`` values; for a label of a closed domain made present by
    ``Exists``, the domain less ``NotIn``) must include one such nodes may carry. ``NotIn``,
    ``DoesNotExist`` alone narrow nothing: a node without the label matches them."""
    known = known_keys(policy.node_labels)
    kubelet = node_labels(platform, policy)
    by_key: dict[str, list[Mapping[str, object]]] = {}
    for expression in expressions:
        if not isinstance(expression, Mapping):
            continue
        key = expression.get("key")
        if isinstance(key, str) and key in known and key not in kubelet:
            by_key.setdefault(key, []).append(expression)
    for key, on_key in by_key.items():
        candidates = _candidate_values(key, on_key)
        if candidates is not None and not any(
            _value_on(key, value, platform, policy) for value in candidates
        ):
            return False
    return True


def _candidate_values(key: str, expressions: Sequence[Mapping[str, object]]) -> list[str] | None:
    """The values of ``key`` a node matching every expression may carry; None: any value."""
    in_lists = [
        [str(v) for v in _list(e.get("values"))] for e in expressions if e.get("operator") == "In"
    ]
    excluded = {
        str(v) for e in expressions if e.get("operator") == "NotIn" for v in _list(e.get("values"))
    }
    present = any(e.get("operator") in ("In", "Exists", "Gt", "Lt") for e in expressions)
    if present and any(e.get("operator") == "DoesNotExist" for e in expressions):
        return []  # the label both there and not: no node
    if in_lists:
        common = [v for v in in_lists[0] if all(v in other for other in in_lists[1:])]
        return [v for v in common if v not in excluded]
    if present and key in DOMAINS:
        return [v for v in DOMAINS[key] if v not in excluded]
    return None


def _implications(
    expressions: Iterable[tuple[str, Sequence[str]]], policy: SchedulingPolicy
) -> str:
    """`` (node.kubernetes.io/instance-type=m7g.large: arm64, an AWS Graviton instance
    type)``: what the labels of a selector or term imply, for messages; empty when nothing."""
    parts = []
    for key, values in expressions:
        for value in values:
            rule = _implied_rule(key, value, policy.node_labels)
            if rule is not None:
                note = f", {rule.what}" if rule.what else ""
                parts.append(f"{key}={value}: {rule.implies()}{note}")
    return f" ({'; '.join(parts)})" if parts else ""


def _expression_may_match(expression: object, platform: Platform, policy: SchedulingPolicy) -> bool:
    """Whether nodes of ``platform`` may match a node selector requirement (labels kmultiarch
    does not know for the platform may hold anything)."""
    if not isinstance(expression, Mapping):
        return False
    operator = expression.get("operator")
    raw_values = expression.get("values")
    values = [str(v) for v in raw_values] if isinstance(raw_values, list) else []
    if operator in ("In", "NotIn") and not values:
        return False  # invalid: the scheduler's selector fails to parse and matches nothing
    if operator in ("Gt", "Lt") and len(values) != 1:
        return False
    if operator not in ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"):
        return False
    labels = node_labels(platform, policy)
    key = expression.get("key")
    if not isinstance(key, str) or key not in labels:
        return True
    value = labels[key]
    if operator == "In":
        return value in values
    if operator == "NotIn":
        return value not in values
    if operator == "Exists":
        return True
    if operator == "DoesNotExist":
        return False
    try:
        number, bound = int(value), int(values[0])
    except ValueError:
        return False
    return number > bound if operator == "Gt" else number < bound


def _field_may_match(requirement: object) -> bool:
    if not isinstance(requirement, Mapping):
        return False
    values = requirement.get("values")
    return (
        requirement.get("key") == "metadata.name"
        and requirement.get("operator") in ("In", "NotIn")
        and isinstance(values, list)
        and len(values) == 1
    )


def _term_platforms(
    term: Mapping[str, object],
    universe: Sequence[Platform],
    policy: SchedulingPolicy,
    selector: Mapping[str, object] | None = None,
) -> list[Platform] | None:
    """The platforms of ``universe`` whose nodes may match ``term`` (and the pod's
    ``selector``, one more term every node must satisfy: its labels count with the term's own
    on the same keys); None for an empty term (no expressions, no fields), which matches no
    node."""
    expressions = _list(term.get("matchExpressions"))
    fields = _list(term.get("matchFields"))
    if not expressions and not fields:
        return None
    if not all(_field_may_match(requirement) for requirement in fields):
        return []
    return [
        platform
        for platform in universe
        if all(_expression_may_match(e, platform, policy) for e in expressions)
        and _implied_allows([*expressions, *_selector_expressions(selector)], platform, policy)
    ]


def _selector_expressions(selector: Mapping[str, object] | None) -> list[dict[str, object]]:
    return [
        {"key": key, "operator": "In", "values": [str(value)]}
        for key, value in (selector or {}).items()
    ]


def _list(value: object) -> list[object]:
    return value if isinstance(value, list) else []
