"""RFC 6902 patches and RFC 6901 JSON pointers: the one place that writes, reads and applies them.

The scheduling decision is a list of ``add``/``replace`` operations, the form an admission
webhook returns; the YAML editor turns them into text edits (:mod:`kmultiarch.yaml.edit`) and
checks its result against :func:`apply_patch`. Applying is delegated to the ``jsonpatch``
library (pure Python, no I/O: the one third-party import the core allows); only the containers
on each operation's path are copied first, so patching a large document stays cheap.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

#: A step of a path: a mapping key, a list index, or ``"-"`` (after a list's last item).
PathPart = str | int
OperationKind = Literal["add", "replace"]


@dataclass(frozen=True)
class PatchOperation:
    """One RFC 6902 ``add`` or ``replace``, its path a tuple of steps (never a pointer string
    cut and glued: :meth:`under` and :meth:`relative_to` re-base it, :attr:`pointer` writes it).
    ``value`` is plain data (dicts, lists, scalars) and is not copied."""

    op: OperationKind
    path: tuple[PathPart, ...]
    value: object

    @classmethod
    def from_json(cls, operation: Mapping[str, object]) -> PatchOperation:
        """The operation an RFC 6902 object describes; ValueError when it is not one kmultiarch
        writes (``add`` or ``replace`` with a pointer path and a value)."""
        kind, path = operation.get("op"), operation.get("path")
        if kind not in ("add", "replace"):
            raise ValueError(f"unsupported JSON-patch operation {kind!r}: only add and replace")
        if not isinstance(path, str):
            raise ValueError(f"JSON-patch operation without a string path: {dict(operation)!r}")
        if "value" not in operation:
            raise ValueError(f"JSON-patch {kind} without a value: {dict(operation)!r}")
        return cls(kind, pointer_tokens(path), operation["value"])

    @property
    def pointer(self) -> str:
        return json_pointer(self.path)

    @property
    def tokens(self) -> tuple[str, ...]:
        """The path's steps as JSON pointer tokens (indices as their digits)."""
        return tuple(str(part) for part in self.path)

    def under(self, prefix: Sequence[PathPart]) -> PatchOperation:
        """This operation with its path below ``prefix`` (from a pod spec to the document)."""
        return PatchOperation(self.op, (*prefix, *self.path), self.value)

    def is_under(self, prefix: Sequence[PathPart]) -> bool:
        """Whether the path goes through ``prefix`` and further."""
        tokens = self.tokens
        return len(tokens) > len(prefix) and tokens[: len(prefix)] == tuple(map(str, prefix))

    def relative_to(self, prefix: Sequence[PathPart]) -> PatchOperation:
        """This operation with ``prefix`` taken off its path; ValueError when it is not under
        it."""
        if not self.is_under(prefix):
            raise ValueError(f"{self.pointer} is not under {json_pointer(prefix)}")
        return PatchOperation(self.op, self.path[len(prefix) :], self.value)

    def with_value(self, value: object) -> PatchOperation:
        return PatchOperation(self.op, self.path, value)

    def as_json(self) -> dict[str, object]:
        """The RFC 6902 object (``op``, ``path`` as a JSON pointer, ``value``)."""
        return {"op": self.op, "path": self.pointer, "value": self.value}


#: What producers return and consumers take.
Operation = PatchOperation


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


def apply_patch(
    value: object, operations: Sequence[PatchOperation | Mapping[str, object]]
) -> object:
    """``value`` with the operations applied; ``value`` itself is not changed (the containers on
    each path are copied, the rest is shared). ValueError when an operation does not apply."""
    import jsonpatch
    import jsonpointer

    for operation in operations:
        typed = (
            operation
            if isinstance(operation, PatchOperation)
            else PatchOperation.from_json(operation)
        )
        value = _copied_along(value, typed.tokens[:-1])
        copied = {"op": typed.op, "path": typed.pointer, "value": deep_copy(typed.value)}
        try:
            value = jsonpatch.apply_patch(value, [copied], in_place=True)
        except (jsonpatch.JsonPatchException, jsonpointer.JsonPointerException) as exc:
            raise ValueError(f"cannot {typed.op} {typed.pointer}: {exc}") from exc
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


def joined(
    earlier: Sequence[PatchOperation], later: Sequence[PatchOperation]
) -> list[PatchOperation]:
    """``earlier`` then ``later``, where an ``add`` of ``later`` putting an object at a key an
    ``add`` of ``earlier`` created is merged into it instead of replacing it: two placements
    creating the same missing parent (a ``spec`` holding both of their templates) each keep
    what they add. Items appended to a list (``-``) stay items of their own."""
    result = list(earlier)
    for operation in later:
        last = operation.path[-1] if operation.path else None
        if (
            operation.op == "add"
            and isinstance(operation.value, Mapping)
            and isinstance(last, str)
            and last != "-"  # an item appended to a list is an item of its own
        ):
            created = next(
                (
                    (position, known.value)
                    for position, known in enumerate(result[: len(earlier)])
                    if known.op == "add"
                    and known.path == operation.path
                    and isinstance(known.value, Mapping)
                ),
                None,
            )
            if created is not None:
                position, value = created
                result[position] = PatchOperation(
                    "add", operation.path, _merged(value, operation.value)
                )
                continue
        result.append(operation)
    return result


def _merged(base: Mapping[str, object], extra: Mapping[str, object]) -> dict[str, object]:
    merged = {key: deep_copy(value) for key, value in base.items()}
    for key, value in extra.items():
        known = merged.get(key)
        if isinstance(known, Mapping) and isinstance(value, Mapping):
            merged[key] = _merged(known, value)
        else:
            merged[key] = deep_copy(value)
    return merged
