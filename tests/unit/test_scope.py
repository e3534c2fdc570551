"""Scope: namespace globs, label selectors on Namespace documents, the opt-in annotation."""

from __future__ import annotations

import pytest

from kmultiarch.core.policy.reading import Where
from kmultiarch.core.policy.scope import (
    is_enabled,
    namespace_excluded_by_glob,
    namespaces_in,
    parse_label_selector,
)
from kmultiarch.errors import PolicyError


@pytest.mark.parametrize(
    ("namespace", "excluded"),
    [
        ("kube-system", True),
        ("kube-public", True),
        ("kubernetes", False),
        ("", False),
        ("team-a", True),
        ("team-b", False),
        ("Kube-system", False),
    ],
)
def test_namespace_globs(namespace: str, excluded: bool) -> None:
    assert namespace_excluded_by_glob(namespace, ["kube-*", "team-a"]) is excluded


@pytest.mark.parametrize(
    ("selector", "labels", "matches"),
    [
        ({"matchLabels": {"tier": "system"}}, {"tier": "system"}, True),
        ({"matchLabels": {"tier": "system"}}, {"tier": "apps"}, False),
        (
            {"matchExpressions": [{"key": "tier", "operator": "In", "values": ["a", "b"]}]},
            {"tier": "b"},
            True,
        ),
        ({"matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["a"]}]}, {}, True),
        ({"matchExpressions": [{"key": "tier", "operator": "Exists"}]}, {"tier": ""}, True),
        ({"matchExpressions": [{"key": "tier", "operator": "DoesNotExist"}]}, {"tier": "x"}, False),
        (
            {"matchLabels": {"a": "1"}, "matchExpressions": [{"key": "b", "operator": "Exists"}]},
            {"a": "1"},
            False,
        ),
        ({}, {"anything": "x"}, True),
    ],
)
def test_label_selectors(
    selector: dict[str, object], labels: dict[str, str], matches: bool
) -> None:
    assert parse_label_selector(selector, Where("p.yaml", ("sel",))).matches(labels) is matches


@pytest.mark.parametrize(
    ("selector", "message"),
    [
        ({"matchExpressions": [{"key": "a", "operator": "Equals"}]}, "operator: expected one of"),
        ({"matchExpressions": [{"key": "a", "operator": "In"}]}, "In needs at least one value"),
        (
            {"matchExpressions": [{"key": "a", "operator": "Exists", "values": ["x"]}]},
            "must be empty with Exists",
        ),
        ({"matchLabel": {}}, "sel.matchLabel: unknown key"),
        ("tier=system", "expected matchLabels and/or matchExpressions"),
    ],
)
def test_bad_selectors(selector: object, message: str) -> None:
    with pytest.raises(PolicyError, match=message):
        parse_label_selector(selector, Where("p.yaml", ("sel",)))


def test_namespaces_carry_their_name_label_and_lists_are_read() -> None:
    document = {
        "apiVersion": "v1",
        "kind": "List",
        "items": [
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "a"}},
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "b"}},
        ],
    }
    (namespace,) = namespaces_in(document)
    assert namespace.labels == {"kubernetes.io/metadata.name": "a"}


def test_opt_in_annotation() -> None:
    assert is_enabled({}, {"kmultiarch.dev/enabled": "True"})
    assert not is_enabled({"kmultiarch.dev/enabled": "false"}, {})
