"""Scalars and nodes as every editing style writes and reads them: a value rendered as a YAML
scalar (plain when it reads back the same, else quoted), the small node predicates, and the
value-level edits (verbatim scalars, setting in a container) the styles share.
"""

from __future__ import annotations

import functools
import json
import math
import re
from dataclasses import dataclass

import yaml
from yaml.nodes import CollectionNode, MappingNode, Node, ScalarNode, SequenceNode
from yaml.resolver import Resolver

from kmultiarch.core.patch import OperationKind, json_pointer

__all__ = ["render_scalar"]


_ARRAY_INDEX = re.compile(r"(?:0|[1-9][0-9]*)\Z")

# Tabs in indentation, or right after a block indicator at the start of a line.
_TAB_IN_INDENTATION = re.compile(r"^[ \-?:]*\t", re.MULTILINE)

# Strings written plain: a conservative set that no YAML 1.1 or 1.2 reader takes for
# anything but a string once the implicit types below are ruled out.
_PLAIN_SAFE = re.compile(r"[A-Za-z_/][A-Za-z0-9_./\-]*\Z")

_YAML11_WORDS = frozenset(
    word
    for base in ("y", "n", "yes", "no", "on", "off", "true", "false", "null")
    for word in (base, base.capitalize(), base.upper())
)

_DOUBLE_QUOTED_ESCAPE = re.compile('[\\\\"\x00-\x1f\x7f-\x9f\u2028\u2029\ufeff\ufffe\uffff]')

_NAMED_ESCAPES = {
    "\\": "\\\\",
    '"': '\\"',
    "\n": "\\n",
    "\t": "\\t",
    "\r": "\\r",
    "\x00": "\\0",
    "\x08": "\\b",
    "\x0c": "\\f",
}


@dataclass(frozen=True)
class _Operation:
    kind: OperationKind
    path: tuple[str, ...]
    value: object


class _NotExact(Exception):
    """The fast path cannot make this edit exactly; use the round trip."""


@dataclass(frozen=True)
class _Verbatim:
    """A scalar of the original document, carried through a re-render as the text it was
    written as: ``10:30`` stays ``10:30`` (a string to Kubernetes, 630 to YAML 1.1), ``0o644``
    stays unquoted (a number to Kubernetes), a JSON ``3e1`` stays a number."""

    text: str
    value: object


def _with_verbatim_scalars(node: Node, value: object, text: str) -> object:
    """``value`` (what ``node`` means) with each single-line scalar as :class:`_Verbatim`."""
    if isinstance(node, MappingNode) and isinstance(value, dict):
        if len(node.value) != len(value):
            return value  # merge keys: leave it as data
        rebuilt: dict[object, object] = {}
        for (key_node, child), (key, item) in zip(node.value, value.items(), strict=True):
            written: object = key
            if not isinstance(key, str) and isinstance(key_node, ScalarNode):
                # A key YAML 1.1 reads as a number or a boolean ({1: x}, on:): written back
                # as it was, which is a string to Kubernetes.
                source = text[key_node.start_mark.index : key_node.end_mark.index]
                written = _Verbatim(source, key)
            rebuilt[written] = _with_verbatim_scalars(child, item, text)
        return rebuilt
    if isinstance(node, SequenceNode) and isinstance(value, list):
        if len(node.value) != len(value):
            return value
        return [
            _with_verbatim_scalars(child, item, text)
            for child, item in zip(node.value, value, strict=True)
        ]
    if isinstance(node, ScalarNode) and not isinstance(value, dict | list):
        source = text[node.start_mark.index : node.end_mark.index]
        if source and "\n" not in source and "\r" not in source and node.style not in ("|", ">"):
            return _Verbatim(source, value)
    return value


def render_scalar(value: object) -> str:
    """A scalar as YAML: plain when that reads back as the same value, else double-quoted."""
    if isinstance(value, _Verbatim):
        return value.text
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return ".nan"
        if math.isinf(value):
            return ".inf" if value > 0 else "-.inf"
        text = repr(value)
        if "e" in text and "." not in text:
            # YAML 1.1 needs a dot in the mantissa of a float.
            text = text.replace("e", ".0e", 1)
        return text
    if isinstance(value, str):
        if _is_plain_safe(value):
            return value
        return '"' + _DOUBLE_QUOTED_ESCAPE.sub(_escape_character, value) + '"'
    raise ValueError(f"cannot write {type(value).__name__} {value!r} as a YAML scalar")


def _list_index(token: str, length: int, *, allow_end: bool) -> int:
    if allow_end and token == "-":  # noqa: S105 (the JSON-pointer token for the end)
        return length
    if not _ARRAY_INDEX.match(token):
        raise ValueError(f"invalid array index {token!r} in a JSON pointer")
    index = int(token)
    if index > length or (index == length and not allow_end):
        raise ValueError(f"array index {index} out of range (length {length})")
    return index


def _set_in_container(container: object, token: str, operation: _Operation, value: object) -> None:
    if isinstance(container, dict):
        if operation.kind == "replace" and token not in container:
            raise ValueError(f"cannot replace {json_pointer(operation.path)}: no such key")
        container[token] = value
    elif isinstance(container, list):
        index = _list_index(token, len(container), allow_end=operation.kind == "add")
        if operation.kind == "add":
            container.insert(index, value)
        else:
            container[index] = value
    else:
        raise ValueError(
            f"cannot {operation.kind} {json_pointer(operation.path)}: parent is a scalar"
        )


def _is_plain_safe(text: str) -> bool:
    if not _PLAIN_SAFE.match(text) or text in _YAML11_WORDS:
        return False
    for _tag, pattern in Resolver.yaml_implicit_resolvers.get(text[0], ()):
        if pattern.match(text):
            return False
    return True


def _in_own_style(node: Node, source: str, value: object, *, flow: bool) -> str | None:
    """A string scalar replaced by another string, written as the old one was (plain, single
    or double quoted), so that a digest pinned again changes nothing else on its line; None
    when ``source`` is more than the scalar (a tag, an anchor), the old one was not a string,
    or the new one cannot be written that way (it is then rendered as new values are)."""
    if (
        not isinstance(node, ScalarNode)
        or node.tag != _STR_TAG
        or not isinstance(value, str)
        or "\n" in source
        or "\r" in source
    ):
        return None
    if not node.style:  # plain ('' from libyaml, None from the pure reader)
        return value if source == node.value and _reads_plain(value, flow=flow) else None
    if node.style == "'":
        if source != "'" + node.value.replace("'", "''") + "'" or not value.isprintable():
            return None
        return "'" + value.replace("'", "''") + "'"
    if node.style == '"' and len(source) >= 2 and source[0] == source[-1] == '"':
        if flow:  # JSON's escapes, which YAML reads too: a JSON document stays JSON
            return json.dumps(value, ensure_ascii=False)
        return '"' + _DOUBLE_QUOTED_ESCAPE.sub(_escape_character, value) + '"'
    return None


_STR_TAG = "tag:yaml.org,2002:str"


@functools.lru_cache(maxsize=256)
def _reads_plain(value: str, *, flow: bool) -> bool:
    """Whether ``value`` written plain reads back as that string, in a block or flow context
    (a number, a boolean, a comment or an indicator would not)."""
    if not value or not value.isprintable() or value != value.strip():
        return False
    probe = f"[{value}]" if flow else f"- {value}\n"
    try:
        node = yaml.compose(probe, Loader=yaml.SafeLoader)
    except yaml.YAMLError:
        return False
    if not isinstance(node, SequenceNode) or len(node.value) != 1:
        return False
    item = node.value[0]
    return (
        isinstance(item, ScalarNode)
        and not item.style
        and item.tag == _STR_TAG
        and item.value == value
    )


def _escape_character(match: re.Match[str]) -> str:
    character = match.group()
    named = _NAMED_ESCAPES.get(character)
    if named is not None:
        return named
    code = ord(character)
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def _is_leaf(value: object) -> bool:
    """Written on one line: scalars and empty collections."""
    return not isinstance(value, dict | list) or not value


def _is_flow(node: Node) -> bool:
    return isinstance(node, CollectionNode) and bool(node.flow_style)


def _is_flat(value: object) -> bool:
    """A collection whose members are all written on one line."""
    if isinstance(value, dict):
        return all(_is_leaf(member) for member in value.values())
    return isinstance(value, list) and all(_is_leaf(member) for member in value)


def _flow(value: object) -> str:
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_key(k)}: {_flow(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(_flow(item) for item in value) + "]"
    return render_scalar(value)


def _key(key: object) -> str:
    if isinstance(key, _Verbatim):
        return key.text
    if not isinstance(key, str):
        raise ValueError(f"mapping key {key!r} is not a string")
    return render_scalar(key)
