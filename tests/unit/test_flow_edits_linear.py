"""JSON and YAML flow documents are edited in one pass (issue 28, item 15).

A ``kubectl get -o json`` List of 500 Deployments took over 15 s to mutate, against 0.5 s as
block YAML: every operation composed the whole document again and spliced the whole text. The
operations of a document are now planned on one composition and the text is built once; an
operation that meets the work of an earlier one starts a new pass, so the result is the text
the operations give when spliced one at a time."""

from __future__ import annotations

import json
import re
from typing import Any
from unittest import mock

from hypothesis import assume, given, settings
from hypothesis import strategies as st

from kmultiarch.core.patch import PatchOperation, apply_patch
from kmultiarch.yaml import edit as yamledit
from kmultiarch.yaml import stream as yamlstream
from kmultiarch.yaml.stream import SourceDocument, read_stream

TOLERATION = {"key": "kubernetes.io/arch", "operator": "Equal", "value": "arm64"}
AFFINITY = {
    "nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [
                {"matchExpressions": [{"key": "kubernetes.io/arch", "operator": "In"}]}
            ]
        }
    }
}


def json_list(items: int, indent: int | None = 4) -> str:
    deployments = [
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": f"app-{number}"},
            "spec": {
                "template": {
                    "spec": {"containers": [{"name": "app", "image": f"example.com/a:{number}"}]}
                }
            },
        }
        for number in range(items)
    ]
    return json.dumps({"apiVersion": "v1", "kind": "List", "items": deployments}, indent=indent)


def operations_for(items: int) -> list[dict[str, Any]]:
    operations: list[dict[str, Any]] = []
    for number in range(items):
        pod = f"/items/{number}/spec/template/spec"
        operations.append({"op": "add", "path": f"{pod}/tolerations", "value": [TOLERATION]})
        operations.append({"op": "add", "path": f"{pod}/affinity", "value": AFFINITY})
    return operations


def only_document(text: str) -> SourceDocument:
    documents = read_stream(text, "test.json")
    assert len(documents) == 1
    return documents[0]


def test_a_json_list_of_many_deployments_is_composed_once_not_once_per_edit() -> None:
    """The symptom's cause: each of the 2 x 300 operations composed the 300-item List again."""
    document = only_document(json_list(300))
    operations = operations_for(300)
    composed = mock.Mock(wraps=yamlstream._compose_document)
    with mock.patch.object(yamlstream, "_compose_document", composed):
        text = yamledit.apply_operations(document, operations)
    assert only_document(text).value == apply_patch(document.value, operations)
    # The document's node, the one pass, and reading the result back.
    assert composed.call_count <= 4


def test_a_json_list_of_600_deployments_is_composed_as_often_as_one_of_300() -> None:
    """600 items took ~40 s (each of 1,200 edits composed and spliced 0.5 MB again). The work
    no longer grows with the edits: twice the items, the same number of compositions (the
    time itself is measured in benchmarks/run.py's JSON List case, not here)."""
    counts = []
    for items in (300, 600):
        document = only_document(json_list(items))
        operations = operations_for(items)
        composed = mock.Mock(wraps=yamlstream._compose_document)
        with mock.patch.object(yamlstream, "_compose_document", composed):
            text = yamledit.apply_operations(document, operations)
        assert only_document(text).value == apply_patch(document.value, operations)
        counts.append(composed.call_count)
    assert counts[1] == counts[0] <= 4


def test_a_yaml_flow_list_is_edited_in_one_pass_too() -> None:
    text = json_list(50, indent=None).replace('"', "")
    document = only_document(text)
    operations = operations_for(50)
    composed = mock.Mock(wraps=yamlstream._compose_document)
    with mock.patch.object(yamlstream, "_compose_document", composed):
        result = yamledit.apply_operations(document, operations)
    assert only_document(result).value == apply_patch(document.value, operations)
    assert composed.call_count <= 4


# --------------------------------------------------------------------------------------------
# One pass writes exactly what splicing one operation at a time writes


def one_at_a_time(document: SourceDocument, operations: list[yamledit._Operation]) -> str:
    """The earlier algorithm: compose, splice one operation, compose again."""
    text = document.text
    for operation in operations:
        current = SourceDocument(document.source, document.index, document.start_line, text)
        text = yamledit._flow_splice(current, [operation])
    return text


keys = st.sampled_from(["a", "b", "c", "spec", "items", "x-y"])
scalars = st.one_of(st.integers(-5, 5), st.sampled_from(["v", "w x", "", True, None]))
values = st.recursive(
    scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=3), st.dictionaries(keys, children, max_size=3)
    ),
    max_leaves=12,
)


def paths_in(value: object, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    found = [prefix]
    if isinstance(value, dict):
        for key, member in value.items():
            found += paths_in(member, (*prefix, key))
    elif isinstance(value, list):
        for index, member in enumerate(value):
            found += paths_in(member, (*prefix, str(index)))
    return found


@st.composite
def edits(draw: st.DrawFn) -> tuple[str, list[dict[str, Any]]]:
    root = draw(st.dictionaries(keys, values, min_size=1, max_size=4))
    style = draw(
        st.sampled_from(["indent-2", "indent-4", "compact", "spaced", "yaml-2", "yaml-spaced"])
    )
    if style.startswith("indent"):
        text = json.dumps(root, indent=int(style[-1]))
    elif style == "compact":
        text = json.dumps(root, separators=(",", ":"))
    elif style == "yaml-2":  # YAML flow: plain keys, one member a line
        text = re.sub(r'"([a-z-]+)":', r"\1:", json.dumps(root, indent=2))
    elif style == "yaml-spaced":
        text = re.sub(r'"([a-z-]+)":', r"\1:", json.dumps(root))
    else:
        text = json.dumps(root)
    value: object = root
    operations: list[dict[str, Any]] = []
    for _ in range(draw(st.integers(1, 6))):
        containers = [
            path for path in paths_in(value) if isinstance(_at(value, path), dict | list) and path
        ] + [()]
        path = draw(st.sampled_from(containers))
        container = _at(value, path)
        new = draw(values)
        if isinstance(container, dict):
            key = draw(keys)
            kind = "replace" if key in container and draw(st.booleans()) else "add"
            operation = {"op": kind, "path": _pointer((*path, key)), "value": new}
        else:
            assert isinstance(container, list)
            index = draw(st.integers(0, len(container)))
            token = "-" if index == len(container) and draw(st.booleans()) else str(index)
            kind = "replace" if index < len(container) and draw(st.booleans()) else "add"
            operation = {"op": kind, "path": _pointer((*path, token)), "value": new}
        operations.append(operation)
        value = apply_patch(value, [operation])
    return text + "\n", operations


def _at(value: object, path: tuple[str, ...]) -> object:
    for token in path:
        value = value[token] if isinstance(value, dict) else value[int(token)]  # type: ignore[index]
    return value


def _pointer(path: tuple[str, ...]) -> str:
    return "".join("/" + part.replace("~", "~0").replace("/", "~1") for part in path)


@settings(max_examples=300, deadline=None)
@given(edits())
def test_one_pass_writes_what_one_operation_at_a_time_writes(
    case: tuple[str, list[dict[str, Any]]],
) -> None:
    text, raw = case
    document = only_document(text)
    operations = [
        yamledit._Operation(typed.op, typed.tokens, typed.value)
        for typed in (PatchOperation.from_json(operation) for operation in raw)
    ]
    try:
        expected = one_at_a_time(document, operations)
    except yamledit._NotExact:
        assume(False)
        return
    assert yamledit._flow_splice(document, operations) == expected
    assert only_document(expected).value == apply_patch(document.value, raw)
