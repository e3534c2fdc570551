"""The MultiArchPolicy schema (core/policy/schema.SPEC) is the one declaration of each key: the
reader, the defaults, docs/policy.md's table and the KRM ConfigMap form all agree with it."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from pathlib import Path

import pytest

from kmultiarch.core.policy.model import Policy
from kmultiarch.core.policy.schema import SPEC, SPEC_KEYS, SpecKey, policy_from_spec
from kmultiarch.errors import PolicyError
from kmultiarch.krm.function import CONFIGMAP_KEYS, policy_from_function_config

POLICY_DOC = Path(__file__).resolve().parents[2] / "docs" / "policy.md"
TABLE_HEADER = "| key | default | what it says |"


def flow(value: object) -> str:
    """A default as a policy writes it, in YAML's flow style."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{key}: {flow(item)}" for key, item in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(flow(item) for item in value) + "]"
    return str(value)


def table_row(key: SpecKey) -> str:
    default = "none" if key.default is None else f"`{flow(key.default)}`"
    return f"| `{key.name}` | {default} | {key.doc} |"


def documented_rows() -> list[str]:
    lines = POLICY_DOC.read_text(encoding="utf-8").splitlines()
    start = lines.index(TABLE_HEADER) + 2  # the header, then |---|---|---|
    rows = []
    for line in lines[start:]:
        if not line.startswith("|"):
            break
        rows.append(line)
    return rows


def test_the_key_table_of_docs_policy_md_is_the_schemas() -> None:
    expected = [table_row(key) for key in SPEC]
    assert documented_rows() == expected, (
        "docs/policy.md's key table differs from core/policy/schema.SPEC; the table is:\n"
        + "\n".join([TABLE_HEADER, "|---|---|---|", *expected])
    )


@pytest.mark.parametrize("key", SPEC, ids=[key.name for key in SPEC])
def test_each_default_as_written_reads_to_the_policys_default(key: SpecKey) -> None:
    assert policy_from_spec({key.name: key.default}, "p.yaml") == Policy(source="p.yaml")


def test_every_policy_field_is_filled_by_one_key() -> None:
    filled = [(key.section, name) for key in SPEC for name in key.fields]
    assert len(filled) == len(set(filled))
    sections = {"scheduling", "scope", "resolution"}
    fields = {
        (section, field.name)
        for section in sections
        for field in dataclasses.fields(getattr(Policy(), section))
    }
    own = {field.name for field in dataclasses.fields(Policy)} - sections - {"source"}
    assert set(filled) == fields | {(None, name) for name in own}


def test_a_key_is_read_after_the_keys_it_needs() -> None:
    order = [key.name for key in SPEC]
    for key in SPEC:
        assert all(order.index(needed) < order.index(key.name) for needed in key.needs), key.name


def test_unknown_keys_are_refused_with_the_schemas_names() -> None:
    with pytest.raises(PolicyError) as caught:
        policy_from_spec({"tolerances": {}}, "p.yaml")
    assert caught.value.path == ("spec", "tolerances")
    assert caught.value.message == f"unknown key (known keys: {', '.join(sorted(SPEC_KEYS))})"


def test_a_configmap_gives_the_keys_the_schema_lets_it() -> None:
    from_schema = {key.name for key in SPEC if key.configmap is not None}
    exclusions = {"excludeNamespaces", "excludeKinds", "excludeNamespaceSelector"}
    assert set(CONFIGMAP_KEYS) == from_schema | exclusions
    # A comma list, a string and a YAML value, each as its key's form says.
    policy = policy_from_function_config(
        {
            "kind": "ConfigMap",
            "data": {
                "fallbackPlatforms": "linux/amd64, linux/arm64",
                "mode": " optIn ",
                "preferences": "{linux/arm64: 80}",
            },
        }
    )
    assert [str(p) for p in policy.resolution.fallback_platforms] == ["linux/amd64", "linux/arm64"]
    assert policy.scope.mode == "optIn"
    assert {str(p): w for p, w in policy.scheduling.preferences.items()} == {"linux/arm64": 80}
