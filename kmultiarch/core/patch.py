"""RFC 6902 patches and RFC 6901 JSON pointers: the one place that writes, reads and applies them.

The scheduling decision is a list of ``add``/``replace`` operations, the form an admission
webhook returns; the YAML editor turns them into text edits (:mod:`kmultiarch.yaml.edit`) and
checks its result against :func:`apply_patch`. Applying is delegated to the ``jsonpatch``
library (pure Python, no I/O: the one third-party import the core allows); only the containers
on each operation's path are copied first, so patching a large document stays cheap.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

Operation = dict[str, object]


def json_pointer(path: Sequence[str | int]) -> str:
    """The JSON pointer of ``path`` (``("spec", "containers", 0)`` -> ``/spec/containers/0``)."""
    return "".join("/" + str(part).replace("~", "~0").replace("/", "~1") for part in path)


def pointer_tokens(pointer: str) -> tuple[str, ...]:
    """The reference tokens of a JSON pointer; ValueError when it is not one."""
    if pointer == "":
        return ()
    if not pointer.startswith("/"):
        raise ValueError(f"invalid JSON pointer {pointer!r}: it must start with '/'")
    return tuple(token.replace("~1", "/").replace("~0", "~") for token in pointer[1:].split("/"))


def apply_patch(value: object, operations: Sequence[Mapping[str, object]]) -> object:
    """``value`` with the operations applied; ``value`` itself is not changed (the containers on
    each path are copied, the rest is shared). ValueError when an operation does not apply."""
    import jsonpatch
    import jsonpointer

    for operation in operations:
        path = operation.get("path")
        if not isinstance(path, str):
            raise ValueError(f"JSON-patch operation without a string path: {operation!r}")
        tokens = pointer_tokens(path)
        value = _copied_along(value, tokens[:-1])
        copied = {**operation}
        if "value" in copied:
            copied["value"] = deep_copy(copied["value"])
        try:
            value = jsonpatch.apply_patch(value, [copied], in_place=True)
        except (jsonpatch.JsonPatchException, jsonpointer.JsonPointerException) as exc:
            raise ValueError(f"cannot {operation.get('op')} {path}: {exc}") from exc
    return value


def _copied_along(root: object, tokens: tuple[str, ...]) -> object:
    """``root`` with every container from it down to ``tokens`` copied (shallowly)."""
    root = _shallow_copy(root)
    parent = root
    for token in tokens:
        if isinstance(parent, dict) and token in parent:
            child = parent[token] = _shallow_copy(parent[token])
        elif isinstance(parent, list) and token.isdigit() and int(token) < len(parent):
            child = parent[int(token)] = _shallow_copy(parent[int(token)])
        else:
            return root  # jsonpatch reports the missing path
        parent = child
    return root


def _shallow_copy(value: object) -> object:
    if isinstance(value, dict):
        return dict(value)
    if isinstance(value, list):
        return list(value)
    return value


def deep_copy(value: object) -> object:
    """A deep copy of plain data (dicts, lists, scalars), faster than copy.deepcopy."""
    if isinstance(value, dict):
        return {key: deep_copy(item) for key, item in value.items()}
    if isinstance(value, list):
        return [deep_copy(item) for item in value]
    return value
