"""Typed edits (issue 22): an operation's path is a tuple of steps; re-basing it is a method,
and the JSON pointer is written and read in one place (kmultiarch/core/patch.py)."""

from __future__ import annotations

import pytest

from kmultiarch.core.patch import PatchOperation, apply_patch, json_pointer, pointer_tokens

POD = ("spec", "template", "spec")


def test_an_operation_is_rebased_under_a_prefix_and_back() -> None:
    relative = PatchOperation("add", ("tolerations", "-"), [1])
    rooted = relative.under(POD)
    assert rooted.path == ("spec", "template", "spec", "tolerations", "-")
    assert rooted.pointer == "/spec/template/spec/tolerations/-"
    assert rooted.relative_to(POD) == relative
    assert rooted.is_under(POD) and not rooted.is_under(("spec", "templates"))


def test_indices_and_their_digits_are_the_same_step() -> None:
    operation = PatchOperation("replace", ("spec", "templates", 0, "affinity"), {})
    assert operation.is_under(("spec", "templates", "0"))
    assert operation.relative_to(("spec", "templates", "0")).path == ("affinity",)


@pytest.mark.parametrize("prefix", [("spec", "template", "spec", "tolerations"), ("metadata",)])
def test_relative_to_a_path_it_is_not_under_is_an_error(prefix: tuple[str, ...]) -> None:
    with pytest.raises(ValueError, match="is not under"):
        PatchOperation("add", (*POD, "tolerations"), []).relative_to(prefix)


@pytest.mark.parametrize("path", [(), ("a",), ("a/b", "c~d"), ("items", 3, "-"), ("", "x")])
def test_the_json_form_round_trips(path: tuple[str | int, ...]) -> None:
    operation = PatchOperation("add", path, {"k": [1, None]})
    read = PatchOperation.from_json(operation.as_json())
    assert read.tokens == operation.tokens and read.value == operation.value
    assert pointer_tokens(json_pointer(path)) == tuple(str(part) for part in path)


@pytest.mark.parametrize(
    ("operation", "message"),
    [
        ({"op": "remove", "path": "/a"}, "only add and replace"),
        ({"op": "add", "path": 3, "value": 1}, "without a string path"),
        ({"op": "add", "path": "/a"}, "without a value"),
        ({"op": "add", "path": "a", "value": 1}, "must start with '/'"),
    ],
)
def test_what_is_not_an_operation_kmultiarch_writes_is_refused(
    operation: dict[str, object], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        PatchOperation.from_json(operation)


def test_apply_patch_takes_typed_operations_and_leaves_its_input_alone() -> None:
    document = {"spec": {"template": {"spec": {"containers": []}}}}
    patched = apply_patch(document, [PatchOperation("add", (*POD, "tolerations"), [{"k": 1}])])
    assert patched == {
        "spec": {"template": {"spec": {"containers": [], "tolerations": [{"k": 1}]}}}
    }
    assert document == {"spec": {"template": {"spec": {"containers": []}}}}
