"""Editing documents: exact text for the common cases, and a property test of both paths."""

from __future__ import annotations

import copy
import json
import os
import random
import re
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any
from unittest import mock

import jsonpatch
import pytest
import yaml
from hypothesis import assume, event, given, settings
from hypothesis import strategies as st

from kmultiarch.core.patch import apply_patch
from kmultiarch.errors import ManifestStreamError
from kmultiarch.yaml import edit as yamledit
from kmultiarch.yaml.edit import apply_operations, apply_operations_roundtrip
from kmultiarch.yaml.scalars import render_scalar
from kmultiarch.yaml.stream import SourceDocument, join_documents, read_stream

POD = "/spec/template/spec"
TOLERATION: dict[str, Any] = {
    "key": "kubernetes.io/arch",
    "operator": "Equal",
    "value": "arm64",
    "effect": "NoSchedule",
}
ARCH_TERM: dict[str, Any] = {
    "key": "kubernetes.io/arch",
    "operator": "In",
    "values": ["amd64", "arm64"],
}
AFFINITY: dict[str, Any] = {
    "nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchExpressions": [ARCH_TERM]}]
        }
    }
}
ADD_BOTH: list[dict[str, Any]] = [
    {"op": "add", "path": f"{POD}/tolerations", "value": [TOLERATION]},
    {"op": "add", "path": f"{POD}/affinity", "value": AFFINITY},
]
EXPRESSIONS = (
    f"{POD}/affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution"
    "/nodeSelectorTerms/0/matchExpressions"
)


def expected_value(value: object, operations: list[Any]) -> Any:
    """jsonpatch's result; it inserts the operations' values without copying them."""
    # Each operation copied on its own: a deep copy of the list would keep values shared.
    return jsonpatch.apply_patch(copy.deepcopy(value), [copy.deepcopy(op) for op in operations])


def only_document(text: str) -> SourceDocument:
    documents = read_stream(text, "test.yaml")
    assert len(documents) == 1
    return documents[0]


@contextmanager
def fast_path_only() -> Iterator[None]:
    def refuse(*args: object) -> str:
        raise AssertionError("the fast path fell back to the round trip")

    with mock.patch.object(yamledit, "_round_trip_edit", refuse):
        yield


def edit_fast(text: str, operations: list[Any]) -> str:
    document = only_document(text)
    with fast_path_only():
        result = apply_operations(document, operations)
    assert only_document(result).value == expected_value(document.value, operations)
    return result


# --------------------------------------------------------------------------------------------
# Exact text for the common cases

HELM_DEPLOYMENT = """\
---
# Source: app/templates/deployment.yaml
apiVersion: apps/v1
kind: Deployment
metadata:
  name: app
spec:
  template:
    spec:
      containers:
        - name: app
          image: "nginx:1.25" # pinned
      # no tolerations yet
"""


def test_adds_tolerations_and_affinity_helm_style() -> None:
    assert (
        edit_fast(HELM_DEPLOYMENT, ADD_BOTH)
        == """\
---
# Source: app/templates/deployment.yaml
apiVersion: apps/v1
kind: Deployment
metadata:
  name: app
spec:
  template:
    spec:
      containers:
        - name: app
          image: "nginx:1.25" # pinned
      tolerations:
        - key: kubernetes.io/arch
          operator: Equal
          value: arm64
          effect: NoSchedule
      affinity:
        nodeAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
            nodeSelectorTerms:
              - matchExpressions:
                  - key: kubernetes.io/arch
                    operator: In
                    values:
                      - amd64
                      - arm64
      # no tolerations yet
"""
    )


KUBECTL_DEPLOYMENT = """\
apiVersion: apps/v1
kind: Deployment
spec:
  template:
    spec:
      containers:
      - name: app
        image: nginx
      tolerations:
      - key: dedicated
        operator: Exists
"""


def test_appends_a_toleration_kubectl_style() -> None:
    operations = [{"op": "add", "path": f"{POD}/tolerations/-", "value": TOLERATION}]
    assert (
        edit_fast(KUBECTL_DEPLOYMENT, operations)
        == KUBECTL_DEPLOYMENT
        + """\
      - key: kubernetes.io/arch
        operator: Equal
        value: arm64
        effect: NoSchedule
"""
    )


def test_appends_a_toleration_helm_style_with_indent_four() -> None:
    text = """\
spec:
    template:
        spec:
            containers:
                -   name: app
            tolerations:
                - key: dedicated
                  operator: Exists
"""
    operations = [{"op": "add", "path": f"{POD}/tolerations/-", "value": TOLERATION}]
    assert (
        edit_fast(text, operations)
        == text
        + """\
                - key: kubernetes.io/arch
                  operator: Equal
                  value: arm64
                  effect: NoSchedule
"""
    )


def test_inserts_a_toleration_at_an_index() -> None:
    operations = [{"op": "add", "path": f"{POD}/tolerations/0", "value": {"operator": "Exists"}}]
    assert edit_fast(KUBECTL_DEPLOYMENT, operations) == KUBECTL_DEPLOYMENT.replace(
        "      - key: dedicated", "      - operator: Exists\n      - key: dedicated"
    )


AFFINITY_DEPLOYMENT = """\
spec:
  template:
    spec:
      affinity:
        nodeAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
            nodeSelectorTerms:
            - matchExpressions:
              - key: disktype
                operator: In
                values: [ssd]   # fast disks
              - key: kubernetes.io/arch
                operator: In
                values:
                - amd64
      containers:
      - name: app
"""


def test_appends_a_match_expression() -> None:
    operations = [
        {"op": "add", "path": f"{EXPRESSIONS}/-", "value": {"key": "zone", "operator": "Exists"}}
    ]
    assert edit_fast(AFFINITY_DEPLOYMENT, operations) == AFFINITY_DEPLOYMENT.replace(
        "                - amd64\n",
        "                - amd64\n              - key: zone\n                operator: Exists\n",
    )


def test_replaces_values_in_flow_and_block_style() -> None:
    operations = [
        {"op": "replace", "path": f"{EXPRESSIONS}/0/values", "value": ["ssd", "nvme"]},
        {"op": "replace", "path": f"{EXPRESSIONS}/1/values", "value": ["amd64", "arm64"]},
    ]
    assert edit_fast(AFFINITY_DEPLOYMENT, operations) == AFFINITY_DEPLOYMENT.replace(
        "values: [ssd]", "values: [ssd, nvme]"
    ).replace("                - amd64\n", "                - amd64\n                - arm64\n")


def test_replaces_a_scalar() -> None:
    text = "spec:\n  replicas: 1 # one\n  name: 'x'\n"
    operations = [
        {"op": "replace", "path": "/spec/replicas", "value": 3},
        {"op": "add", "path": "/spec/name", "value": "yes"},
    ]
    # the string keeps its quotes (a string replaced by a string is written as it was)
    assert edit_fast(text, operations) == "spec:\n  replicas: 3 # one\n  name: 'yes'\n"


def test_empty_flow_collections_become_block() -> None:
    text = "spec:\n  containers:\n  - name: a\n  tolerations: []\n  affinity: {}  # none\n"
    operations = [
        {"op": "add", "path": "/spec/tolerations/-", "value": TOLERATION},
        {"op": "add", "path": "/spec/affinity/nodeAffinity", "value": AFFINITY["nodeAffinity"]},
    ]
    assert (
        edit_fast(text, operations)
        == """\
spec:
  containers:
  - name: a
  tolerations:
  - key: kubernetes.io/arch
    operator: Equal
    value: arm64
    effect: NoSchedule
  affinity:  # none
    nodeAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
        nodeSelectorTerms:
        - matchExpressions:
          - key: kubernetes.io/arch
            operator: In
            values:
            - amd64
            - arm64
"""
    )


def test_adds_to_an_empty_value() -> None:
    text = "spec:\n  containers:\n  - name: a\n  tolerations:\n  nodeSelector:\n"
    operations = [
        {"op": "replace", "path": "/spec/tolerations", "value": [{"operator": "Exists"}]},
        {"op": "replace", "path": "/spec/nodeSelector", "value": {"a": "b"}},
    ]
    assert edit_fast(text, operations) == (
        "spec:\n  containers:\n  - name: a\n  tolerations:\n  - operator: Exists\n"
        "  nodeSelector:\n    a: b\n"
    )


def test_block_scalar_before_the_insertion_point() -> None:
    text = "spec:\n  containers:\n  - name: a\n    args:\n    - |\n      echo hi\n\n\n# end\n"
    operations = [{"op": "add", "path": "/spec/tolerations", "value": []}]
    assert edit_fast(text, operations) == text.replace("# end", "  tolerations: []\n# end")


def test_keep_block_scalar_keeps_its_blank_lines() -> None:
    text = "data:\n  script: |+\n    echo\n\n\nother: 1\n"
    result = edit_fast(text, [{"op": "add", "path": "/data/more", "value": "x"}])
    assert result == "data:\n  script: |+\n    echo\n\n\n  more: x\nother: 1\n"


def test_document_without_final_newline() -> None:
    text = "spec:\n  containers:\n  - name: a  # last"
    operations = [{"op": "add", "path": "/spec/tolerations", "value": [{"operator": "Exists"}]}]
    assert edit_fast(text, operations) == text + "\n  tolerations:\n  - operator: Exists"


def test_crlf_document_gets_crlf_lines() -> None:
    text = "spec:\r\n  containers:\r\n    - name: a\r\n"
    operations = [{"op": "add", "path": "/spec/tolerations", "value": [{"operator": "Exists"}]}]
    assert edit_fast(text, operations) == text + "  tolerations:\r\n    - operator: Exists\r\n"


def test_helm_stream_changes_only_the_edited_document() -> None:
    stream = (
        "---\n# Source: app/templates/sa.yaml\napiVersion: v1\nkind: ServiceAccount\n"
        "metadata: {name: 'app'}\n" + HELM_DEPLOYMENT + "---\n# Source: app/templates/empty.yaml\n"
    )
    documents = read_stream(stream, "helm")
    texts = [document.text for document in documents]
    texts[1] = apply_operations(documents[1], ADD_BOTH)
    output = join_documents(texts)
    assert output.startswith(texts[0]) and output.endswith(texts[2])
    assert texts[0] + texts[2] == stream.replace(HELM_DEPLOYMENT, "")
    assert [document.value for document in read_stream(output, "out")] == [
        documents[0].value,
        expected_value(documents[1].value, ADD_BOTH),
        None,
    ]


def test_new_keys_in_a_sequence_item_mapping() -> None:
    text = "items:\n- name: a\n  image: b\n- name: c\n"
    operations = [{"op": "add", "path": "/items/0/ports", "value": [{"containerPort": 80}]}]
    assert edit_fast(text, operations) == (
        "items:\n- name: a\n  image: b\n  ports:\n  - containerPort: 80\n- name: c\n"
    )


def test_later_operations_see_earlier_ones() -> None:
    text = "spec:\n  containers:\n  - name: a\n"
    operations = [
        {"op": "add", "path": "/spec/affinity", "value": {}},
        {"op": "add", "path": "/spec/affinity/nodeAffinity", "value": {"x": []}},
        {"op": "add", "path": "/spec/affinity/nodeAffinity/x/-", "value": 1},
        {"op": "add", "path": "/spec/containers/-", "value": {"name": "b"}},
        {"op": "replace", "path": "/spec/containers/1/name", "value": "c"},
    ]
    assert edit_fast(text, operations) == (
        "spec:\n  containers:\n  - name: a\n  - name: c\n  affinity:\n    nodeAffinity:\n"
        "      x:\n      - 1\n"
    )


def test_replace_then_edit_inside_the_replacement() -> None:
    text = "spec:\n  affinity:\n    old: [1]\n  x: 1\n"
    operations = [
        {"op": "add", "path": "/spec/affinity/old/-", "value": 2},
        {"op": "replace", "path": "/spec/affinity", "value": {"new": {}}},
        {"op": "add", "path": "/spec/affinity/new/k", "value": "v"},
    ]
    assert edit_fast(text, operations) == "spec:\n  affinity:\n    new:\n      k: v\n  x: 1\n"


def test_quoted_and_escaped_new_values() -> None:
    text = "a:\n  b: 1\n"
    value = {"true": "on", "k/with~": "a: b", "": "", "n": "line\nbreak\t\x01\u2028"}
    result = edit_fast(text, [{"op": "add", "path": "/a/c", "value": value}])
    assert result == (
        'a:\n  b: 1\n  c:\n    "true": "on"\n    "k/with~": "a: b"\n    "": ""\n'
        '    "n": "line\\nbreak\\t\\x01\\u2028"\n'
    )


def test_pointer_escapes() -> None:
    text = "metadata:\n  annotations:\n    a/b: x\n"
    operations = [
        {"op": "replace", "path": "/metadata/annotations/a~1b", "value": "w"},
        {"op": "add", "path": "/metadata/annotations/c~0d~1e", "value": "z"},
    ]
    assert edit_fast(text, operations) == (
        'metadata:\n  annotations:\n    a/b: w\n    "c~d/e": z\n'
    )


def test_no_operations_returns_the_text() -> None:
    document = only_document("a: [1]\n")
    assert apply_operations(document, []) is document.text


# --------------------------------------------------------------------------------------------
# The fallback


def test_aliases_fall_back_and_keep_comments() -> None:
    text = """\
# Source: x
base: &env
  - name: A   # kept
    value: "1"
spec:
  containers:
  - name: a
    env: *env
"""
    operations: list[dict[str, Any]] = [
        {"op": "add", "path": "/spec/containers/0/env/-", "value": {"name": "B"}},
        {"op": "add", "path": "/spec/tolerations", "value": [{"operator": "Exists"}]},
    ]
    document = only_document(text)
    result = apply_operations(document, operations)
    assert "# Source: x" in result and "# kept" in result and '"1"' in result
    new: Any = only_document(result).value
    assert new == expected_value(document.value, operations)
    assert new["base"] == [{"name": "A", "value": "1"}]  # the anchor's other user is unchanged


def test_merge_keys_fall_back() -> None:
    text = "defaults: &d\n  replicas: 1\nspec:\n  <<: *d\n  name: a\n"
    operations = [{"op": "replace", "path": "/spec/replicas", "value": 2}]
    document = only_document(text)
    new = only_document(apply_operations(document, operations)).value
    assert new == {"defaults": {"replicas": 1}, "spec": {"replicas": 2, "name": "a"}}


def test_json_document_stays_json() -> None:
    text = '{\n  "kind": "Pod",\n  "spec": {\n    "containers": []\n  }\n}\n'
    operations = [{"op": "add", "path": "/spec/tolerations", "value": [TOLERATION]}]
    result = apply_operations(only_document(text), operations)
    assert json.loads(result) == expected_value(json.loads(text), operations)
    assert result.startswith('{\n  "kind": "Pod",\n  "spec": {\n    "containers": [],\n')


def test_flow_root_that_is_not_json_falls_back_to_ruamel() -> None:
    text = "---\n# c\n{kind: Pod, spec: {containers: []}}\n"
    operations = [{"op": "add", "path": "/spec/nodeName", "value": "n"}]
    result = apply_operations(only_document(text), operations)
    assert result.startswith("---\n# c\n")
    assert only_document(result).value == {
        "kind": "Pod",
        "spec": {"containers": [], "nodeName": "n"},
    }


def test_roundtrip_keeps_crlf_comments_and_missing_final_newline() -> None:
    text = "# head\r\nspec:\r\n  containers:\r\n    - name: a # c\r\n  x: 'q'"
    operations = [{"op": "add", "path": "/spec/tolerations", "value": [{"operator": "Exists"}]}]
    result = apply_operations_roundtrip(only_document(text), operations)
    assert result == (
        "# head\r\nspec:\r\n  containers:\r\n    - name: a # c\r\n  x: 'q'\r\n  tolerations:\r\n"
        "    - operator: Exists"
    )


def test_replacing_a_block_scalar_falls_back() -> None:
    document = only_document("data:\n  script: |\n    echo hi\n  other: 1  # kept\n")
    operations = [{"op": "replace", "path": "/data/script", "value": "echo bye\n"}]
    result = apply_operations(document, operations)
    assert "# kept" in result
    assert only_document(result).value == {"data": {"script": "echo bye\n", "other": 1}}


def test_roundtrip_of_a_helm_deployment() -> None:
    result = apply_operations_roundtrip(only_document(HELM_DEPLOYMENT), ADD_BOTH)
    assert result == edit_fast(HELM_DEPLOYMENT, ADD_BOTH)


# --------------------------------------------------------------------------------------------
# Programming errors


@pytest.mark.parametrize(
    "operation",
    [
        {"op": "remove", "path": "/spec"},
        {"op": "add", "path": "spec", "value": 1},
        {"op": "add", "path": "/spec/missing/key", "value": 1},
        {"op": "replace", "path": "/spec/missing", "value": 1},
        {"op": "add", "path": "/spec/containers/5", "value": 1},
        {"op": "add", "path": "/spec/containers/01", "value": 1},
        {"op": "replace", "path": "/spec/containers/-", "value": 1},
        {"op": "replace", "path": "/spec/containers/1", "value": 1},
        {"op": "add", "path": "/spec/replicas/x", "value": 1},
        {"op": "add", "path": "/spec/containers/0/name/x", "value": 1},
        {"op": "add", "path": "/spec/containers"},
    ],
)
def test_operations_that_do_not_apply_raise_value_error(operation: dict[str, Any]) -> None:
    document = only_document("spec:\n  replicas: 1\n  containers:\n  - name: a\n")
    with pytest.raises(ValueError, match=r".") as caught:
        apply_operations(document, [operation])
    assert not isinstance(caught.value, ManifestStreamError)
    with pytest.raises(ValueError, match=r"."):
        apply_operations_roundtrip(document, [operation])


def test_patched_value_does_not_change_its_input() -> None:
    value = {"a": {"b": [1]}}
    operation_value: dict[str, Any] = {"c": []}
    operations: list[dict[str, Any]] = [
        {"op": "add", "path": "/a/b/-", "value": 2},
        {"op": "add", "path": "/a/x", "value": operation_value},
        {"op": "add", "path": "/a/x/c/-", "value": 3},
    ]
    assert apply_patch(value, operations) == {"a": {"b": [1, 2], "x": {"c": [3]}}}
    assert value == {"a": {"b": [1]}} and operation_value == {"c": []}


# --------------------------------------------------------------------------------------------
# Scalars


@pytest.mark.parametrize(
    ("value", "text"),
    [
        ("kubernetes.io/arch", "kubernetes.io/arch"),
        ("Equal", "Equal"),
        ("arm64", "arm64"),
        ("NoSchedule", "NoSchedule"),
        ("In", "In"),
        ("node-role.kubernetes.io/control-plane", "node-role.kubernetes.io/control-plane"),
        ("true", '"true"'),
        ("yes", '"yes"'),
        ("on", '"on"'),
        ("Off", '"Off"'),
        ("y", '"y"'),
        ("null", '"null"'),
        ("~", '"~"'),
        ("", '""'),
        ("1", '"1"'),
        ("1.5", '"1.5"'),
        ("1e3", '"1e3"'),
        ("0x1F", '"0x1F"'),
        ("2024-01-01", '"2024-01-01"'),
        ("a: b", '"a: b"'),
        ("a #b", '"a #b"'),
        ("-x", '"-x"'),
        ("*x", '"*x"'),
        ("nginx:1.25", '"nginx:1.25"'),
        ('say "hi"\\', '"say \\"hi\\"\\\\"'),
        ("é", '"é"'),
        (True, "true"),
        (False, "false"),
        (None, "null"),
        (0, "0"),
        (-12, "-12"),
        (1.5, "1.5"),
        (1e20, "1.0e+20"),
        (float("inf"), ".inf"),
    ],
)
def test_render_scalar(value: object, text: str) -> None:
    assert render_scalar(value) == text
    assert yaml.safe_load(f"k: {text}")["k"] == value


def test_render_scalar_refuses_other_types() -> None:
    with pytest.raises(ValueError, match="cannot write"):
        render_scalar(object())


# --------------------------------------------------------------------------------------------
# Property: generated documents and operations, both paths

_NAMES = st.from_regex(r"[a-z][a-z0-9-]{0,7}", fullmatch=True)
_TRICKY = st.sampled_from(
    [
        "true", "1", "null", "", "yes", "on", "~", "a: b", "a #b", "-x", "- x", "#x", "*x", "&x",
        "!x", "%x", "@x", "`x", "'q'", '"dq"', "[a]", "{a}", "a,b", "kubernetes.io/arch",
        "NoSchedule", "1.5", "1e3", "0755", "0x1F", "2024-01-01", " lead", "trail ", "é", "中文",
        "multi\nline\n", "multi\nline", "two\n\nparagraphs\n", "tab\there", "=", "<<", "---",
        "...", "y", "N", "a\\b", "x\x01y",
    ]
)  # fmt: skip
_STRINGS = _NAMES | _TRICKY
_SCALARS = (
    _STRINGS
    | st.integers(min_value=-1000, max_value=10**12)
    | st.booleans()
    | st.none()
    | st.sampled_from([1.5, -0.25, 1e20, 3.0])
)
_KEYS: st.SearchStrategy[str] = _NAMES | st.sampled_from(
    ["true", "1", "a b", "a/b", "a~b", "x:y", "-k", "on", "é"]
)
_VALUES: st.SearchStrategy[Any] = st.recursive(
    _SCALARS,
    lambda children: st.lists(children, max_size=3) | st.dictionaries(_KEYS, children, max_size=3),
    max_leaves=8,
)


@st.composite
def _deployments(draw: st.DrawFn) -> dict[str, Any]:
    containers = [
        {"name": draw(_NAMES), "image": draw(_STRINGS)}
        | draw(st.dictionaries(_KEYS, _VALUES, max_size=2))
        for _ in range(draw(st.integers(1, 2)))
    ]
    pod: dict[str, Any] = {"containers": containers}
    if draw(st.booleans()):
        pod["tolerations"] = [{"key": draw(_NAMES), "operator": "Exists"}]
    if draw(st.booleans()):
        expressions = [{"key": draw(_NAMES), "operator": "In", "values": [draw(_NAMES)]}]
        pod["affinity"] = {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [{"matchExpressions": expressions}]
                }
            }
        }
    pod |= draw(st.dictionaries(_KEYS, _VALUES, max_size=2))
    metadata = {"name": draw(_NAMES)} | draw(st.dictionaries(_KEYS, _VALUES, max_size=2))
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": metadata,
        "spec": {"template": {"spec": pod}} | draw(st.dictionaries(_KEYS, _VALUES, max_size=2)),
    }


_PLAIN = re.compile(r"[A-Za-z][A-Za-z0-9./-]*\Z")
_LITERAL = re.compile(r"[a-z0-9#:][a-z0-9 #:]*(\n[a-z0-9 #:]*)*\n?\Z")


class _Emitter:
    """Writes a value as block YAML in many of the layouts people and tools write."""

    def __init__(self, rng: random.Random, indent: int, sequence_offset: int) -> None:
        self.rng = rng
        self.indent = indent
        self.sequence_offset = sequence_offset
        self.flow_paths: set[tuple[str, ...]] = set()

    def scalar(self, value: object, *, key: bool = False) -> str:
        if isinstance(value, str):
            choice = self.rng.random()
            if (
                _PLAIN.match(value)
                and yaml.safe_load(f"k: {value}") == {"k": value}
                and choice < 0.6
            ):
                return value
            if choice < 0.8 and value.isprintable():
                return "'" + value.replace("'", "''") + "'"
            return json.dumps(value)
        if value is None:
            return self.rng.choice(["null", "~", "Null"])
        if isinstance(value, bool):
            return self.rng.choice(["true", "True"] if value else ["false", "FALSE"])
        return render_scalar(value)

    def comment(self, column: int) -> list[str]:
        roll = self.rng.random()
        if roll < 0.15:
            return [" " * column + "# comment " + str(self.rng.randint(0, 99))]
        if roll < 0.2:
            return ["# at column 0"]
        return []

    def trailing(self) -> str:
        return "  # trailing" if self.rng.random() < 0.15 else ""

    def is_leaf(self, value: object) -> bool:
        return not isinstance(value, dict | list) or not value

    def inline_value(self, value: object, path: tuple[str, ...], column: int) -> list[str]:
        """Text after ``key:`` or ``- ``: first element goes on the same line."""
        if isinstance(value, str) and "\n" in value and _LITERAL.match(value):
            chomp = "" if value.endswith("\n") else "-"
            body = value[:-1] if value.endswith("\n") else value
            return [f" |{chomp}"] + [
                (" " * (column + self.indent) + line) if line else "" for line in body.split("\n")
            ]
        if self.is_leaf(value):
            if value is None and self.rng.random() < 0.3:
                return [""]
            if isinstance(value, dict | list):
                self.flow_paths.add(path)
                return [" " + ("{}" if isinstance(value, dict) else "[]")]
            return [" " + self.scalar(value) + self.trailing()]
        if all(self.is_leaf(v) and not isinstance(v, str) for v in self.members(value)) and (
            self.rng.random() < 0.3
        ):
            self.flow_paths.add(path)
            return [" " + self.flow(value)]
        return [self.trailing()]

    def members(self, value: object) -> list[object]:
        if isinstance(value, dict):
            return list(value.values())
        assert isinstance(value, list)
        return list(value)

    def flow(self, value: object) -> str:
        if isinstance(value, dict):
            return (
                "{" + ", ".join(f"{json.dumps(k)}: {self.flow(v)}" for k, v in value.items()) + "}"
            )
        if isinstance(value, list):
            return "[" + ", ".join(self.flow(item) for item in value) + "]"
        return json.dumps(value) if isinstance(value, str) else self.scalar(value)

    def mapping(self, value: dict[str, Any], column: int, path: tuple[str, ...]) -> list[str]:
        lines: list[str] = []
        for position, (key, item) in enumerate(value.items()):
            if position:
                lines += self.comment(column)
            first = self.inline_value(item, (*path, key), column)
            lines.append(" " * column + self.scalar(key, key=True) + ":" + first[0])
            lines += first[1:]
            if (*path, key) not in self.flow_paths and not self.is_leaf(item):
                lines += self.nested(item, column, (*path, key))
        return lines

    def nested(self, value: object, column: int, path: tuple[str, ...]) -> list[str]:
        if isinstance(value, dict):
            return self.mapping(value, column + self.indent, path)
        assert isinstance(value, list)
        return self.sequence(value, column + self.sequence_offset, path)

    def sequence(self, value: list[Any], column: int, path: tuple[str, ...]) -> list[str]:
        lines: list[str] = []
        for index, item in enumerate(value):
            lines += self.comment(column)
            item_path = (*path, str(index))
            if self.is_leaf(item) or isinstance(item, str):
                first = self.inline_value(item, item_path, column)
                lines.append(" " * column + "-" + first[0])
                lines += first[1:]
            elif isinstance(item, dict):
                inner = self.mapping(item, column + 2, item_path)
                lines.append(" " * column + "- " + inner[0].lstrip(" "))
                lines += inner[1:]
            else:
                inner = self.sequence(item, column + 2, item_path)
                lines.append(" " * column + "- " + inner[0].lstrip(" "))
                lines += inner[1:]
        return lines


def _paths(value: object, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], object]]:
    yield path, value
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _paths(item, (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _paths(item, (*path, str(index)))


def _pointer(path: tuple[str, ...]) -> str:
    return "".join("/" + token.replace("~", "~0").replace("/", "~1") for token in path)


@st.composite
def _operations(draw: st.DrawFn, value: dict[str, Any]) -> list[dict[str, Any]]:
    model = copy.deepcopy(value)
    operations: list[dict[str, Any]] = []
    pod_path = ("spec", "template", "spec")
    for _ in range(draw(st.integers(1, 4))):
        every = list(_paths(model))
        mappings = [path for path, item in every if isinstance(item, dict)]
        sequences = [path for path, item in every if isinstance(item, list)]
        pod = dict(every).get(pod_path)
        kinds = ["key", "replace"] + (["append", "insert"] if sequences else [])
        kinds += ["tolerations", "affinity"] if isinstance(pod, dict) else []
        kind = draw(st.sampled_from(kinds))
        if kind == "key":
            parent = draw(st.sampled_from(mappings))
            key = draw(_KEYS)
            operation = {"op": "add", "path": _pointer((*parent, key)), "value": draw(_VALUES)}
        elif kind in ("append", "insert"):
            parent = draw(st.sampled_from(sequences))
            length = len(dict(every)[parent])  # type: ignore[arg-type]
            token = "-" if kind == "append" else str(draw(st.integers(0, length)))
            operation = {"op": "add", "path": _pointer((*parent, token)), "value": draw(_VALUES)}
        elif kind == "replace":
            target = draw(st.sampled_from([path for path, _ in every if path]))
            operation = {"op": "replace", "path": _pointer(target), "value": draw(_VALUES)}
        elif kind == "tolerations":
            assert isinstance(pod, dict)
            if isinstance(pod.get("tolerations"), list):
                path: tuple[str, ...] = (*pod_path, "tolerations", "-")
                item: object = TOLERATION
            else:
                path, item = (*pod_path, "tolerations"), [TOLERATION]
            operation = {"op": "add", "path": _pointer(path), "value": item}
        else:
            operation = {"op": "add", "path": _pointer((*pod_path, "affinity")), "value": AFFINITY}
        model = expected_value(model, [operation])
        operations.append(operation)
    return operations


def _is_subsequence(lines: list[str], of: list[str]) -> bool:
    remaining = iter(of)
    return all(any(line == candidate for candidate in remaining) for line in lines)


def _inserts_only(
    value: object, operations: list[dict[str, Any]], flow_paths: set[tuple[str, ...]]
) -> bool:
    """Whether every operation adds to a block collection of the original document."""
    original = {path for path, _ in _paths(value)}
    for operation in operations:
        path = tuple(
            token.replace("~1", "/").replace("~0", "~")
            for token in operation["path"][1:].split("/")
        )
        parent = path[:-1]
        if operation["op"] != "add" or parent not in original or path in original:
            return False
        if any(parent[:length] in flow_paths for length in range(len(parent) + 1)):
            return False
    return True


@settings(max_examples=int(os.environ.get("YAMLEDIT_EXAMPLES", "300")), deadline=None)
@given(
    data=st.data(),
    value=_deployments(),
    seed=st.integers(0, 2**32),
    indent=st.sampled_from([2, 4]),
    indented_sequences=st.booleans(),
    crlf=st.booleans(),
    final_newline=st.booleans(),
    header=st.booleans(),
)
def test_edits_read_back_as_the_apply_patch(
    data: st.DataObject,
    value: dict[str, Any],
    seed: int,
    indent: int,
    indented_sequences: bool,
    crlf: bool,
    final_newline: bool,
    header: bool,
) -> None:
    emitter = _Emitter(random.Random(seed), indent, indent if indented_sequences else 0)
    lines = emitter.mapping(value, 0, ())
    if header:
        lines = ["---", "# Source: chart/templates/deployment.yaml", *lines]
    newline = "\r\n" if crlf else "\n"
    text = newline.join(lines) + (newline if final_newline else "")
    document = only_document(text)
    # Without a final newline, a literal block scalar at the very end loses its last newline.
    assume(final_newline or document.value == value)
    assert document.value == value, text
    operations = data.draw(_operations(value))
    expected = expected_value(document.value, operations)

    with mock.patch.object(yamledit, "_round_trip_edit", wraps=yamledit._round_trip_edit) as spy:
        result = apply_operations(document, operations)
    assert only_document(result).value == expected
    if spy.called:
        event("fell back to the round trip")
    else:
        event("fast path")
        if _inserts_only(value, operations, emitter.flow_paths):
            event("fast path, inserts only")
            assert _is_subsequence(text.splitlines(), result.splitlines())
        if crlf:
            assert "\n" not in result.replace("\r\n", "")

    with mock.patch.object(yamledit, "_reads_back_as", wraps=yamledit._reads_back_as) as check:
        round_trip = apply_operations_roundtrip(document, operations)
    assert only_document(round_trip).value == expected
    if check.call_count > 1:
        event("ruamel.yaml's output did not read back: written anew")


@settings(max_examples=100, deadline=None)
@given(value=_deployments(), seed=st.integers(0, 2**32), indent=st.sampled_from([2, 4]))
def test_pod_spec_edits_take_the_fast_path(value: dict[str, Any], seed: int, indent: int) -> None:
    """Adding tolerations and affinity to a block pod spec never needs the round trip."""
    emitter = _Emitter(random.Random(seed), indent, indent)
    text = "\n".join(emitter.mapping(value, 0, ())) + "\n"
    pod = value["spec"]["template"]["spec"]
    if any(
        path[:3] == ("spec", "template", "spec") for path in emitter.flow_paths if len(path) <= 4
    ):
        return
    operations: list[dict[str, Any]] = []
    if "tolerations" in pod:
        operations.append({"op": "add", "path": f"{POD}/tolerations/-", "value": TOLERATION})
    else:
        operations.append({"op": "add", "path": f"{POD}/tolerations", "value": [TOLERATION]})
    if "affinity" not in pod:
        operations.append({"op": "add", "path": f"{POD}/affinity", "value": AFFINITY})
    else:
        operations.append({"op": "add", "path": f"{EXPRESSIONS}/-", "value": ARCH_TERM})
    edit_fast(text, operations)


def test_property_helpers_agree_with_jsonpatch() -> None:
    value: Mapping[str, Any] = {"a": [1, {"b": 2}]}
    assert list(_paths(value))[-1] == (("a", "1", "b"), 2)
    assert _is_subsequence(["a", "c"], ["a", "b", "c"])
    assert not _is_subsequence(["c", "a"], ["a", "b", "c"])


def test_an_edit_that_cannot_be_written_faithfully_is_kmultiarchs_limit_not_bad_input(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A read-back mismatch of the last resort was reported as bad input (exit 2)."""
    from kmultiarch.errors import InputError, UneditableDocumentError

    document = read_stream("a: {b: 1}\n", "doc.yaml")[0]
    monkeypatch.setattr(yamledit, "_reads_back_as", lambda *_: False)
    with pytest.raises(UneditableDocumentError) as caught:
        yamledit.apply_operations(document, [{"op": "add", "path": "/a/c", "value": 2}])
    assert not isinstance(caught.value, InputError)
    assert caught.value.exit_code == 1
    assert "limitation of kmultiarch" in str(caught.value) and "doc.yaml:1" in str(caught.value)


# --------------------------------------------------------------------------------------------
# JSON and YAML flow documents, and anchors (issue 21): edited in place, in their own layout

ARCH_TERMS = {
    "nodeSelectorTerms": [
        {"matchExpressions": [{"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]}]}
    ]
}
ARCH_AFFINITY = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": ARCH_TERMS}}
ARM64_TOLERATION = {
    "key": "kubernetes.io/arch",
    "operator": "Equal",
    "value": "arm64",
    "effect": "NoSchedule",
}


def test_a_compact_json_list_keeps_its_items_and_separators() -> None:
    """A compact JSON List was written anew as a whole (indentation, separators and the items
    that need no change); now the new members are spliced in with the document's ``,`` and
    ``:``, and everything else is byte for byte."""
    config_map = '{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"a"},"data":{"k":"v"}}'
    deployment = (
        '{"kind":"Deployment","apiVersion":"apps/v1","metadata":{"name":"web"},'
        '"spec":{"template":{"spec":{"containers":[{"name":"main","image":"nginx:1"}]}}}}'
    )
    text = f'{{"kind":"List","apiVersion":"v1","items":[{config_map},{deployment}]}}\n'
    result = edit_fast(
        text,
        [{"op": "add", "path": "/items/1/spec/template/spec/affinity", "value": ARCH_AFFINITY}],
    )
    assert result == text.replace(
        '"nginx:1"}]}',
        '"nginx:1"}],"affinity":{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution"'
        ':{"nodeSelectorTerms":[{"matchExpressions":[{"key":"kubernetes.io/arch","operator":"In",'
        '"values":["amd64"]}]}]}}}}',
    )
    assert config_map in result


def test_json_with_spaces_after_separators_keeps_them() -> None:
    text = (
        '{"kind": "Pod", "apiVersion": "v1", "metadata": {"name": "p"}, "spec": {"containers": '
        '[{"name": "main", "image": "nginx:1"}], "tolerations": [{"key": "x", "operator": '
        '"Exists"}]}}\n'
    )
    result = edit_fast(
        text, [{"op": "add", "path": "/spec/tolerations/-", "value": ARM64_TOLERATION}]
    )
    assert result == text.replace(
        '"Exists"}]',
        '"Exists"}, {"key": "kubernetes.io/arch", "operator": "Equal", "value": "arm64", '
        '"effect": "NoSchedule"}]',
    )


def test_indented_json_gets_new_lines_in_its_own_indentation() -> None:
    text = (
        "{\n"
        '   "kind":"Pod",\n'
        '   "apiVersion":"v1",\n'
        '   "spec":{\n'
        '      "containers":[{"name":"main","image":"nginx:1"}]\n'
        "   }\n"
        "}\n"
    )
    result = edit_fast(
        text, [{"op": "add", "path": "/spec/tolerations", "value": [ARM64_TOLERATION]}]
    )
    assert result == (
        "{\n"
        '   "kind":"Pod",\n'
        '   "apiVersion":"v1",\n'
        '   "spec":{\n'
        '      "containers":[{"name":"main","image":"nginx:1"}],\n'
        '      "tolerations":[\n'
        "         {\n"
        '            "key":"kubernetes.io/arch",\n'
        '            "operator":"Equal",\n'
        '            "value":"arm64",\n'
        '            "effect":"NoSchedule"\n'
        "         }\n"
        "      ]\n"
        "   }\n"
        "}\n"
    )


def test_a_yaml_flow_document_keeps_plain_keys_and_trailing_commas() -> None:
    text = (
        "{\n"
        '  apiVersion: "v1",\n'
        '  kind: "Pod",\n'
        "  spec: {\n"
        '    containers: [{name: "main", image: "nginx:1"}],\n'
        "  },\n"
        "}\n"
    )
    result = edit_fast(
        text, [{"op": "add", "path": "/spec/tolerations", "value": [ARM64_TOLERATION]}]
    )
    assert result == (
        "{\n"
        '  apiVersion: "v1",\n'
        '  kind: "Pod",\n'
        "  spec: {\n"
        '    containers: [{name: "main", image: "nginx:1"}],\n'
        "    tolerations: [\n"
        "      {\n"
        '        key: "kubernetes.io/arch",\n'
        '        operator: "Equal",\n'
        '        value: "arm64",\n'
        '        effect: "NoSchedule",\n'
        "      },\n"
        "    ],\n"
        "  },\n"
        "}\n"
    )


def test_an_anchor_far_from_the_edit_does_not_send_the_document_through_a_round_trip() -> None:
    """A DaemonSet with ``&cmd`` in an annotation and ``*cmd`` in an init container went through
    ruamel's round trip, which re-indented an unrelated ``command:`` list from 10 to 8 spaces."""
    text = """\
apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: installer
  annotations:
    command: &cmd apt-get install -y cifs-utils
spec:
  template:
    spec:
      initContainers:
      - name: install
        image: alpine:3
        command:
          - nsenter
          - --
          - *cmd
      containers:
      - name: sleep
        image: registry.k8s.io/pause:3.9
"""
    result = edit_fast(
        text, [{"op": "add", "path": "/spec/template/spec/affinity", "value": ARCH_AFFINITY}]
    )
    assert result.startswith(text)
    assert result[len(text) :].startswith("      affinity:\n        nodeAffinity:\n")


def test_an_edit_of_an_aliased_node_is_not_spliced_at_its_anchor() -> None:
    """Where the edit reaches a node that an alias shares, the splice would change the anchor
    (both places): it does not read back, and the round trip writes it."""
    text = """\
apiVersion: v1
kind: Pod
metadata:
  name: p
spec:
  tolerations: &shared
  - {key: a, operator: Exists}
  containers:
  - name: main
    image: nginx:1
  overhead: {}
x-copy: *shared
"""
    document = only_document(text)
    operations = [{"op": "add", "path": "/spec/tolerations/-", "value": ARM64_TOLERATION}]
    result = apply_operations(document, operations)
    assert only_document(result).value == expected_value(document.value, operations)


# --------------------------------------------------------------------------------------------
# The edit path once (issue 22): a changed pod spec is not composed again to be edited, nor
# read back whole


def test_a_pod_spec_that_lacks_its_fields_is_edited_from_the_one_composition() -> None:
    from kmultiarch.api import mutate_text
    from kmultiarch.core.images.platform import Platform
    from kmultiarch.core.policy.model import Policy
    from kmultiarch.core.resolution import Resolution

    amd64 = Platform("linux", "amd64")
    text = "".join(
        HELM_DEPLOYMENT.replace("name: app\n", f"name: app-{index}\n") for index in range(5)
    )

    def resolve(references: list[Any]) -> dict[Any, Resolution]:
        return {r: Resolution(r, frozenset({amd64}), "sha256:" + "0" * 64) for r in references}

    composed: list[str] = []
    real_compose = yamledit.SourceDocument.node.fget  # type: ignore[attr-defined]
    real_reads_back = yamledit._reads_back_as

    def counting_node(self: SourceDocument) -> object:
        composed.append(self.text)
        return real_compose(self)

    def counting_reads_back(*args: Any) -> bool:
        composed.append("read back")
        return real_reads_back(*args)

    with (
        mock.patch.object(yamledit.SourceDocument, "node", property(counting_node)),
        mock.patch.object(yamledit, "_reads_back_as", counting_reads_back),
    ):
        result = mutate_text(text, Policy(), resolve=resolve)
    assert [pod.status for pod in result.pods] == ["needs-change"] * 5
    assert composed == [], "neither composed again nor read back whole"
    for document in read_stream(result.stream(), "out"):
        spec = document.value["spec"]["template"]["spec"]  # type: ignore[index]
        assert spec["affinity"] == ARCH_AFFINITY


@pytest.mark.parametrize(
    "follows",
    [
        "      hostNetwork: true\n",  # a key of the pod spec after the containers
        "      motd: |\n        hello\n\n        world\n\n",  # a block scalar, blank lines
        "      motd: 'a\n\n        b'\n",  # a quoted scalar over lines
    ],
)
def test_the_one_composition_path_writes_what_the_general_path_reads(follows: str) -> None:
    """The block spliced at the anchor gives the document the general path would have
    written: the whole document read back is the patched value."""
    text = HELM_DEPLOYMENT.replace("      # no tolerations yet\n", follows)
    document = only_document(text)
    from kmultiarch.yaml.edit import edit_hint

    root = document.node
    assert root is not None
    hint = edit_hint(document.text, root, [("spec", "template", "spec")])
    operations = [{"op": "add", "path": "/spec/template/spec/affinity", "value": ARCH_AFFINITY}]
    result = apply_operations(document, operations, hint=hint)
    assert only_document(result).value == expected_value(document.value, operations)


@settings(max_examples=int(os.environ.get("YAMLEDIT_EXAMPLES", "300")), deadline=None)
@given(
    data=st.data(),
    value=_deployments(),
    seed=st.integers(0, 2**32),
    indent=st.sampled_from([2, 4]),
    indented_sequences=st.booleans(),
    crlf=st.booleans(),
    final_newline=st.booleans(),
)
def test_the_one_composition_path_writes_exactly_what_the_general_path_writes(
    data: st.DataObject,
    value: dict[str, Any],
    seed: int,
    indent: int,
    indented_sequences: bool,
    crlf: bool,
    final_newline: bool,
) -> None:
    from kmultiarch.yaml.edit import edit_hint

    emitter = _Emitter(random.Random(seed), indent, indent if indented_sequences else 0)
    newline = "\r\n" if crlf else "\n"
    text = newline.join(emitter.mapping(value, 0, ())) + (newline if final_newline else "")
    document = only_document(text)
    assume(document.value == value)
    pod = value["spec"]["template"]["spec"]
    if data.draw(st.booleans()):
        operations = data.draw(_operations(value))
    else:  # what the engine writes most: the fields a pod spec lacks
        operations = [
            {"op": "add", "path": f"{POD}/{key}", "value": new}
            for key, new in (("tolerations", [TOLERATION]), ("affinity", AFFINITY))
            if key not in pod
        ]
    root = document.node
    assert root is not None
    hint = edit_hint(text, root, [("spec", "template", "spec")])
    with mock.patch.object(yamledit, "_reads_back_as", wraps=yamledit._reads_back_as) as check:
        anchored = apply_operations(document, operations, hint=hint)
    general = apply_operations(document, operations)
    assert anchored == general
    assert only_document(anchored).value == expected_value(document.value, operations)
    event("anchored" if hint is not None and not check.called else "general")
