"""Two placements creating the same missing parent each keep what they add (issue 29, seen in
the Tigera Installation: its Typha and kube-controllers overrides both live under `spec`, and an
Installation without one got only the second's)."""

from __future__ import annotations

import yaml
from support.operators import ARCH_IN_AMD64, resolve

from kmultiarch.api import mutate_text
from kmultiarch.core.patch import PatchOperation, apply_patch, joined
from kmultiarch.io.config import parse_policy_text


def test_an_add_of_an_object_where_one_was_added_merges_into_it() -> None:
    first = PatchOperation("add", ("spec",), {"a": {"template": {"x": 1}}})
    second = PatchOperation("add", ("spec",), {"b": {"template": {"y": 2}}, "a": {"z": 3}})
    operations = joined([first], [second])
    assert apply_patch({}, operations) == {
        "spec": {"a": {"template": {"x": 1}, "z": 3}, "b": {"template": {"y": 2}}}
    }
    # Other operations are kept in order, untouched.
    other = PatchOperation("add", ("metadata",), {"n": 1})
    assert joined([first], [other]) == [first, other]


def test_two_placements_creating_one_missing_parent_both_land() -> None:
    policy = parse_policy_text(
        "apiVersion: kmultiarch.dev/v1alpha1\nkind: MultiArchPolicy\nmetadata: {name: p}\n"
        "spec:\n  podSpecs:\n  - apiVersion: example.com/v1\n    kind: Pair\n"
        "    placements:\n"
        "    - {path: /spec/left/template, creates: 3, images: [/metadata/annotations/image]}\n"
        "    - {path: /spec/right/template, creates: 3, images: [/metadata/annotations/image]}\n",
        "policy.yaml",
    )
    text = (
        "apiVersion: example.com/v1\nkind: Pair\nmetadata:\n  name: p\n"
        "  annotations: {image: registry.test/pair-amd64:1}\n"
    )
    result = mutate_text(text, policy, resolve=resolve)
    (pair,) = yaml.safe_load_all(result.stream())
    assert pair["spec"] == {
        "left": {"template": {"affinity": ARCH_IN_AMD64}},
        "right": {"template": {"affinity": ARCH_IN_AMD64}},
    }


def test_items_appended_to_a_list_stay_items_of_their_own() -> None:
    """Two expressions appended to one term (a pod's arch and OS): never merged."""
    arch = PatchOperation("add", ("terms", "-"), {"key": "kubernetes.io/arch"})
    os = PatchOperation("add", ("terms", "-"), {"key": "kubernetes.io/os"})
    assert joined([arch], [os]) == [arch, os]
    assert joined([], [arch, os]) == [arch, os]
