"""Which pods a run touches: namespace globs, a namespace label selector evaluated on the
Namespace documents of the stream, and the opt-in mode. Pure.

Kubernetes label selector semantics (``metav1.LabelSelector``): ``matchLabels`` and every
``matchExpressions`` entry must all hold; ``In``/``NotIn`` take values, ``Exists``/
``DoesNotExist`` none; an empty selector matches everything. Every Namespace carries the label
``kubernetes.io/metadata.name`` with its name (the API server sets it); it is assumed here too.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass

from kmultiarch.core.policy.reading import Where
from kmultiarch.core.resources import resources_in

ENABLED_ANNOTATION = "kmultiarch.dev/enabled"

NAME_LABEL = "kubernetes.io/metadata.name"

SELECTOR_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist")


@dataclass(frozen=True)
class Requirement:
    key: str
    operator: str
    values: frozenset[str] = frozenset()

    def matches(self, labels: Mapping[str, str]) -> bool:
        if self.operator == "In":
            return self.key in labels and labels[self.key] in self.values
        if self.operator == "NotIn":
            return self.key not in labels or labels[self.key] not in self.values
        if self.operator == "Exists":
            return self.key in labels
        return self.key not in labels  # DoesNotExist


@dataclass(frozen=True)
class LabelSelector:
    requirements: tuple[Requirement, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        return all(requirement.matches(labels) for requirement in self.requirements)


@dataclass(frozen=True)
class NamespaceInfo:
    """A Namespace document of the stream: its labels and annotations."""

    name: str
    labels: Mapping[str, str]
    annotations: Mapping[str, str]


def parse_label_selector(value: object, where: Where) -> LabelSelector:
    if not isinstance(value, Mapping):
        raise where.error("expected matchLabels and/or matchExpressions")
    unknown = set(value) - {"matchLabels", "matchExpressions"}
    if unknown:
        raise (where / str(sorted(unknown)[0])).error(
            "unknown key (known keys: matchExpressions, matchLabels)"
        )
    requirements: list[Requirement] = []
    labels = value.get("matchLabels") or {}
    if not isinstance(labels, Mapping):
        raise (where / "matchLabels").error("expected a mapping of label values")
    for key, label_value in labels.items():
        if not isinstance(label_value, str):
            raise (where / "matchLabels" / str(key)).error("expected a string")
        requirements.append(Requirement(str(key), "In", frozenset({label_value})))
    expressions = value.get("matchExpressions") or []
    if not isinstance(expressions, list):
        raise (where / "matchExpressions").error("expected a list")
    for position, item in enumerate(expressions):
        at = where / "matchExpressions" / position
        if not isinstance(item, Mapping) or not isinstance(item.get("key"), str):
            raise at.error("expected a mapping with key and operator")
        operator = item.get("operator")
        if operator not in SELECTOR_OPERATORS:
            raise (at / "operator").error(
                f"expected one of {', '.join(SELECTOR_OPERATORS)}, got {operator!r}"
            )
        values = item.get("values") or []
        if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
            raise (at / "values").error("expected a list of strings")
        if operator in ("In", "NotIn") and not values:
            raise (at / "values").error(f"{operator} needs at least one value")
        if operator in ("Exists", "DoesNotExist") and values:
            raise (at / "values").error(f"must be empty with {operator}")
        requirements.append(Requirement(item["key"], str(operator), frozenset(values)))
    return LabelSelector(tuple(requirements))


def namespace_excluded_by_glob(namespace: str, patterns: Iterable[str]) -> bool:
    """``kube-*`` excludes kube-system and kube-public (shell-style globs, case-sensitive)."""
    return bool(namespace) and any(fnmatch.fnmatchcase(namespace, p) for p in patterns)


def namespaces_in(document: object) -> Iterator[NamespaceInfo]:
    """The Namespace objects of a document (a resource or a ``kind: List``)."""
    for _, resource in resources_in(document):
        if resource.get("kind") != "Namespace" or resource.get("apiVersion") != "v1":
            continue
        metadata = resource.get("metadata")
        metadata = metadata if isinstance(metadata, Mapping) else {}
        name = metadata.get("name")
        if not isinstance(name, str) or not name:
            continue
        labels = {str(k): str(v) for k, v in _mapping(metadata.get("labels")).items()}
        labels.setdefault(NAME_LABEL, name)
        annotations = {str(k): str(v) for k, v in _mapping(metadata.get("annotations")).items()}
        yield NamespaceInfo(name, labels, annotations)


def is_enabled(*annotation_sets: Mapping[str, object]) -> bool:
    """The opt-in annotation (``kmultiarch.dev/enabled: "true"``) on any of them."""
    return any(
        str(annotations.get(ENABLED_ANNOTATION, "")).lower() == "true"
        for annotations in annotation_sets
    )


def _mapping(value: object) -> Mapping[object, object]:
    return value if isinstance(value, Mapping) else {}
