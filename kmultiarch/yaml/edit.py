"""Apply JSON-patch ``add``/``replace`` operations to one document, changing only what they change.

The fast path splices text at positions taken from libyaml's node marks: new keys go after the
last line of a block mapping, new items after the last item of a block sequence, replaced values
over the span of the old one. Inserted YAML follows the document's conventions (indent step,
whether sequences are indented under their key, line breaks). Whenever a splice could not be
exact (flow collections around the insertion point, aliases or merge keys, tabs, unusual
layouts), the document is edited with ruamel.yaml's round trip instead, which keeps comments,
key order and quoting but may re-space a few lines.

Every result is read back and compared with the patched value before it is returned: a fast
edit that does not read back right falls back to the round trip, and a round trip that does not
is refused with a :class:`~kmultiarch.errors.ManifestStreamError`.

Operations that do not apply (missing path, parent not a collection, bad index) are programming
errors upstream and raise :class:`ValueError`.
"""

from __future__ import annotations

import contextlib
import copy
import functools
import io
import itertools
import json
import math
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import yaml
from yaml.nodes import CollectionNode, MappingNode, Node, ScalarNode, SequenceNode
from yaml.resolver import Resolver

from kmultiarch.core.patch import (
    OperationKind,
    PatchOperation,
    apply_patch,
    deep_copy,
    json_pointer,
)
from kmultiarch.errors import ManifestStreamError, UneditableDocumentError
from kmultiarch.yaml.stream import (
    MAX_DOCUMENT_BYTES,
    SourceDocument,
    cyclic_gc_paused,
    has_exotic_line_breaks,
    read_stream,
)

__all__ = [
    "EditHint",
    "apply_operations",
    "apply_operations_roundtrip",
    "edit_hint",
    "render_scalar",
]

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


# --------------------------------------------------------------------------------------------
# Public API


def apply_operations(
    document: SourceDocument,
    operations: Sequence[PatchOperation | Mapping[str, object]],
    *,
    lost_comments: list[int] | None = None,
    hint: EditHint | None = None,
) -> str:
    """Return the document's text with ``operations`` applied, other lines left as they are.
    When the document had to be written anew, the lines (in its source) of the comments that
    could not be kept are appended to ``lost_comments``. With the ``hint`` taken when the
    document was read (:func:`edit_hint`), keys a pod spec lacks are added without composing
    the document again."""
    parsed = _parse_operations(operations)
    if not parsed:
        return document.text
    if hint is not None:
        anchored = _anchored_edit(document.text, hint, parsed)
        if anchored is not None:
            return anchored
    with cyclic_gc_paused():
        expected = apply_patch(document.value, operations)
        root = document.node
        with contextlib.suppress(_NotExact):
            text = _FastEditor(document, root).edit(parsed)
            if _reads_back_as(text, document, expected):
                return text
        if root is not None and _is_flow(root):
            with contextlib.suppress(_NotExact):
                text = _flow_splice(document, parsed, root)
                if _reads_back_as(text, document, expected):
                    return text
        return _round_trip_edit(document, root, parsed, expected, lost_comments)


@dataclass(frozen=True)
class _Anchor:
    """Where new keys of one block mapping go: whole lines at ``insert_at`` (the start of the
    line after its last line), at ``column``; ``keys`` are those it has."""

    column: int
    insert_at: int
    keys: frozenset[str]


@dataclass(frozen=True)
class EditHint:
    """What an edit of a document needs from its one composition, kept instead of the node
    tree: the document's layout and, for each pod spec (by path), where new keys go."""

    style: _Style
    anchors: Mapping[tuple[str, ...], _Anchor]


def edit_hint(text: str, root: Node, paths: Sequence[Sequence[str | int]]) -> EditHint | None:
    """The hint for adding keys to the block mappings at ``paths`` of a document (its text and
    root node), taken when it is read; None when such a splice could not be exact."""
    if (
        not isinstance(root, MappingNode)
        or _is_flow(root)
        or has_exotic_line_breaks(text)
        or ("\t" in text and _TAB_IN_INDENTATION.search(text))
    ):
        return None
    anchors: dict[tuple[str, ...], _Anchor] = {}
    for path in paths:
        node: Node | None = root
        for part in path:
            node = _child_node(node, part)
        if not isinstance(node, MappingNode) or _is_flow(node) or not node.value:
            continue
        with contextlib.suppress(_NotExact):
            anchors[tuple(str(part) for part in path)] = _anchor(text, node)
    if not anchors:
        return None
    return EditHint(_detect_style(root, text), anchors)


def _child_node(node: Node | None, part: str | int) -> Node | None:
    if isinstance(node, MappingNode) and isinstance(part, str):
        for key, value in node.value:
            if isinstance(key, ScalarNode) and key.value == part:
                return value  # type: ignore[no-any-return]
        return None
    if isinstance(node, SequenceNode) and isinstance(part, int) and part < len(node.value):
        return node.value[part]  # type: ignore[no-any-return]
    return None


def _anchor(text: str, mapping: MappingNode) -> _Anchor:
    """The anchor of a block mapping: its keys start lines (after indentation or a dash), and
    the first line with content after it is less indented (what follows is not its own)."""
    first_key = mapping.value[0][0]
    if first_key.start_mark.index != mapping.start_mark.index:
        raise _NotExact  # a tag or an anchor before the first key
    column = first_key.start_mark.column
    prefix = text[text.rfind("\n", 0, first_key.start_mark.index) + 1 : first_key.start_mark.index]
    if prefix.strip(" -") or (prefix.strip(" ") and not prefix.rstrip(" ").endswith("-")):
        raise _NotExact
    insert_at = _line_after(text, mapping)
    following = _NEXT_CONTENT_LINE.match(text, insert_at)
    if following is not None and following.end() < len(text):
        indentation = len(following.group(1))
        if indentation >= column:
            raise _NotExact
    keys = frozenset(key.value for key, _ in mapping.value if isinstance(key, ScalarNode))
    return _Anchor(column, insert_at, keys)


# Blank and comment lines, then the indentation of the next line with content.
_NEXT_CONTENT_LINE = re.compile(r"(?:[ ]*(?:#[^\n]*)?\r?\n)*([ ]*)")


def _anchored_edit(text: str, hint: EditHint, operations: list[_Operation]) -> str | None:
    """The document with ``operations`` spliced in at the hint's anchors, when every one adds
    a key a pod spec lacks; None otherwise (the general path composes the document).

    Instead of reading the whole document back, each inserted block is read alone and must
    give exactly the entries intended: the anchor guarantees where it goes (whole lines after
    the mapping's last line, at its keys' column, before a less indented line)."""
    groups: dict[tuple[str, ...], dict[str, object]] = {}
    for operation in operations:
        anchor = hint.anchors.get(operation.path[:-1]) if operation.path else None
        key = operation.path[-1] if operation.path else ""
        entries = groups.setdefault(operation.path[:-1], {})
        if operation.kind != "add" or anchor is None or key in anchor.keys or key in entries:
            return None
        entries[key] = deep_copy(operation.value)
    splices: list[tuple[int, str]] = []
    newline = hint.style.newline
    for path, entries in groups.items():
        anchor = hint.anchors[path]
        block = _checked_block(hint.style, anchor.column, entries)
        if block is None:
            return None
        if anchor.insert_at == len(text) and not text.endswith("\n"):
            block = newline + block.removesuffix(newline)
        splices.append((anchor.insert_at, block))
    splices.sort(key=lambda splice: splice[0])
    if len({position for position, _ in splices}) != len(splices):
        return None
    pieces: list[str] = []
    cursor = 0
    for position, block in splices:
        pieces.append(text[cursor:position])
        pieces.append(block)
        cursor = position
    pieces.append(text[cursor:])
    return "".join(pieces)


#: Blocks already rendered and read back, by layout and entries: a stream's pods mostly get the
#: same few blocks (the same toleration, the same affinity), each checked once.
_CHECKED_BLOCKS: dict[tuple[_Style, int, str], str | None] = {}
_CHECKED_BLOCKS_KEPT = 1024


def _checked_block(style: _Style, column: int, entries: dict[str, object]) -> str | None:
    """The lines of ``entries`` as a block mapping at ``column`` in ``style``, once they read
    back as exactly ``entries``; None when they do not."""
    try:
        memo_key = (style, column, json.dumps(entries))
    except (TypeError, ValueError):
        memo_key = None
    if memo_key is not None and memo_key in _CHECKED_BLOCKS:
        return _CHECKED_BLOCKS[memo_key]
    lines = [line for key, value in entries.items() for line in style.entry(key, value, column)]
    block = (
        "".join(line + style.newline for line in lines)
        if _block_reads_as(lines, column, entries)
        else None
    )
    if memo_key is not None and len(_CHECKED_BLOCKS) < _CHECKED_BLOCKS_KEPT:
        _CHECKED_BLOCKS[memo_key] = block
    return block


def _block_reads_as(lines: list[str], column: int, entries: Mapping[str, object]) -> bool:
    """Whether ``lines`` (a block mapping at ``column``) read alone give exactly ``entries``."""
    if any(line[:column].strip(" ") for line in lines):
        return False
    fragment = "".join(line[column:] + "\n" for line in lines)
    try:
        documents = read_stream(fragment, "(inserted lines)")
    except ManifestStreamError:
        return False
    return len(documents) == 1 and documents[0].value == entries


def apply_operations_roundtrip(
    document: SourceDocument,
    operations: Sequence[PatchOperation | Mapping[str, object]],
    *,
    lost_comments: list[int] | None = None,
) -> str:
    """Like :func:`apply_operations`, always through ruamel.yaml's round trip (the fallback)."""
    parsed = _parse_operations(operations)
    if not parsed:
        return document.text
    return _round_trip_edit(
        document, document.node, parsed, apply_patch(document.value, operations), lost_comments
    )


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


# --------------------------------------------------------------------------------------------
# Operations and the patched value


def _parse_operations(
    operations: Sequence[PatchOperation | Mapping[str, object]],
) -> list[_Operation]:
    """The operations with their paths as JSON pointer tokens (RFC 6902 objects are read by
    :meth:`PatchOperation.from_json`)."""
    parsed: list[_Operation] = []
    for operation in operations:
        typed = (
            operation
            if isinstance(operation, PatchOperation)
            else PatchOperation.from_json(operation)
        )
        parsed.append(_Operation(typed.op, typed.tokens, typed.value))
    return parsed


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


def _reads_back_as(text: str, document: SourceDocument, expected: object) -> bool:
    try:
        # The original passed its reader's size cap; the edited text is read back whatever size.
        documents = read_stream(
            text, document.source, max_document_bytes=max(MAX_DOCUMENT_BYTES, 4 * len(text))
        )
    except ManifestStreamError:
        return False
    return len(documents) == 1 and documents[0].value == expected


# --------------------------------------------------------------------------------------------
# Rendering new YAML


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


@dataclass(frozen=True)
class _Style:
    """How a document lays out block collections."""

    indent: int  # columns from a key to the keys of its mapping value
    sequence_offset: int  # columns from a key to the dashes of its sequence value
    newline: str

    def entry(self, key: object, value: object, column: int) -> list[str]:
        head = " " * column + _key(key) + ":"
        if _is_leaf(value):
            return [head + " " + _flow(value)]
        if isinstance(value, dict):
            return [head, *self.mapping(value, column + self.indent)]
        assert isinstance(value, list)
        return [head, *self.sequence(value, column + self.sequence_offset)]

    def mapping(self, value: dict[Any, Any], column: int) -> list[str]:
        return [line for key, item in value.items() for line in self.entry(key, item, column)]

    def sequence(self, value: list[Any], column: int) -> list[str]:
        return [line for item in value for line in self.item(item, column)]

    def item(self, value: object, dash_column: int) -> list[str]:
        inline = self.inline(value, dash_column + 2)
        return [" " * dash_column + "- " + inline[0], *inline[1:]]

    def inline(self, value: object, column: int) -> list[str]:
        """Lines of a node whose first line starts at ``column`` after text already there."""
        if _is_leaf(value):
            return [_flow(value)]
        if isinstance(value, dict):
            lines = self.mapping(value, column)
        else:
            assert isinstance(value, list)
            lines = self.sequence(value, column)
        return [lines[0][column:], *lines[1:]]

    def block(self, value: object, column: int) -> list[str]:
        """Lines of a collection value under a key at ``column`` (a key line precedes them)."""
        if isinstance(value, dict):
            return self.mapping(value, column + self.indent)
        assert isinstance(value, list)
        return self.sequence(value, column + self.sequence_offset)


def _detect_style(root: Node, text: str) -> _Style:
    newline_at = text.find("\n")
    newline = "\r\n" if newline_at > 0 and text[newline_at - 1] == "\r" else "\n"
    indent: int | None = None
    sequence_offset: int | None = None
    # Depth first, in document order, over the block collections only: scalars (most of the
    # nodes) and flow collections hold no layout, so they never go on the stack.
    stack: list[CollectionNode] = (
        [root] if isinstance(root, CollectionNode) and not root.flow_style else []
    )
    while stack and (indent is None or sequence_offset is None):
        node = stack.pop()
        if isinstance(node, MappingNode):
            children: list[CollectionNode] = []
            for key_node, value_node in node.value:
                if not _is_block(value_node):
                    continue
                children.append(value_node)
                key_mark = key_node.start_mark
                value_mark = value_node.start_mark
                if value_mark.line <= key_mark.line:
                    continue
                offset = value_mark.column - key_mark.column
                if isinstance(value_node, MappingNode):
                    if indent is None and offset > 0:
                        indent = offset
                elif sequence_offset is None and offset >= 0:
                    sequence_offset = offset
            children.reverse()
            stack.extend(children)
        else:
            stack.extend([item for item in reversed(node.value) if _is_block(item)])
    indent = indent or 2
    return _Style(indent, indent if sequence_offset is None else sequence_offset, newline)


def _is_block(node: Node) -> bool:
    return isinstance(node, CollectionNode) and not node.flow_style


# --------------------------------------------------------------------------------------------
# The fast path


@dataclass
class _NewItem:
    """An item added to a block sequence."""

    value: object


@dataclass
class _Place:
    """Where a node of the original document sits: its parent and the key that leads to it."""

    parent: Node | None
    key: ScalarNode | None
    depth: int


class _FastEditor:
    """Records operations against the original node tree, then splices the text once."""

    def __init__(self, document: SourceDocument, root: Node | None) -> None:
        text = document.text
        if (
            root is None
            or isinstance(root, ScalarNode)
            or _is_flow(root)
            # Aliases are fine: an edit that reaches an aliased node (whose marks are those of
            # its anchor) does not read back as the patched value, and falls back.
            or document.has_merges
            or has_exotic_line_breaks(text)
            or ("\t" in text and _TAB_IN_INDENTATION.search(text))
        ):
            raise _NotExact
        self.text = text
        self.root = root
        self.values: dict[int, object] = {id(root): document.value}
        self.places: dict[int, _Place] = {id(root): _Place(None, None, 0)}
        self.new_entries: dict[int, dict[str, object]] = {}
        self.items: dict[int, list[Node | _NewItem]] = {}
        self.replacements: dict[int, object] = {}
        self.nodes: dict[int, Node] = {id(root): root}

    # Recording ----------------------------------------------------------------------------

    def edit(self, operations: list[_Operation]) -> str:
        for operation in operations:
            if not operation.path:
                raise _NotExact
            self.record(operation)
        return self.splice()

    def record(self, operation: _Operation) -> None:
        value = deep_copy(operation.value)
        container: Node | object = self.root
        for token in operation.path[:-1]:
            container = self.child(container, token, operation)
        if isinstance(container, Node) and id(container) in self.replacements:
            container = self.replacements[id(container)]
        last = operation.path[-1]
        if not isinstance(container, Node):
            _set_in_container(container, last, operation, value)
            return
        if isinstance(container, ScalarNode):
            raise ValueError(
                f"cannot {operation.kind} {json_pointer(operation.path)}: parent is a scalar"
            )
        if _is_flow(container):
            narrowed = self.narrowed_child(container, last, operation, value)
            if narrowed is not None:
                self.replace(narrowed, value)
                return
            container = self.replace_with_value(container)
            _set_in_container(container, last, operation, value)
            return
        if isinstance(container, MappingNode):
            entries = self.new_entries.setdefault(id(container), {})
            existing = self.mapping_child(container, last)
            if existing is not None:
                self.replace(existing, value)
            elif last in entries or operation.kind == "add":
                entries[last] = value
            else:
                raise ValueError(f"cannot replace {json_pointer(operation.path)}: no such key")
            return
        assert isinstance(container, SequenceNode)
        items = self.sequence_items(container)
        index = _list_index(last, len(items), allow_end=operation.kind == "add")
        if operation.kind == "add":
            items.insert(index, _NewItem(value))
            return
        target = items[index]
        if isinstance(target, _NewItem):
            target.value = value
        else:
            self.replace(target, value)

    def child(self, container: Node | object, token: str, operation: _Operation) -> Node | object:
        """The node or (new) value under ``container`` at ``token``."""
        if not isinstance(container, Node):
            if isinstance(container, dict):
                if token not in container:
                    raise ValueError(f"path {json_pointer(operation.path)} does not exist")
                found_value: object = container[token]
                return found_value
            if isinstance(container, list):
                item_value: object = container[_list_index(token, len(container), allow_end=False)]
                return item_value
            raise ValueError(f"path {json_pointer(operation.path)} goes through a scalar")
        if id(container) in self.replacements:
            return self.child(self.replacements[id(container)], token, operation)
        if isinstance(container, ScalarNode):
            raise ValueError(f"path {json_pointer(operation.path)} goes through a scalar")
        if _is_flow(container):
            return self.child(self.replace_with_value(container), token, operation)
        if isinstance(container, MappingNode):
            found = self.mapping_child(container, token)
            if found is not None:
                return found
            entries = self.new_entries.get(id(container), {})
            if token in entries:
                return entries[token]
            raise ValueError(f"path {json_pointer(operation.path)} does not exist: no {token!r}")
        assert isinstance(container, SequenceNode)
        items = self.sequence_items(container)
        item = items[_list_index(token, len(items), allow_end=False)]
        return item.value if isinstance(item, _NewItem) else item

    def mapping_child(self, mapping: MappingNode, token: str) -> Node | None:
        value = self.values[id(mapping)]
        assert isinstance(value, dict)
        if token not in value:
            return None
        position = list(value).index(token)
        key_node, child = mapping.value[position]
        self.adopt(child, mapping, key_node, value[token])
        return child  # type: ignore[no-any-return]

    def sequence_items(self, sequence: SequenceNode) -> list[Node | _NewItem]:
        items = self.items.get(id(sequence))
        if items is None:
            value = self.values[id(sequence)]
            assert isinstance(value, list)
            for child, child_value in zip(sequence.value, value, strict=True):
                self.adopt(child, sequence, None, child_value)
            items = self.items[id(sequence)] = list(sequence.value)
        return items

    def adopt(self, child: Node, parent: Node, key: ScalarNode | None, value: object) -> None:
        if id(child) not in self.places:
            self.places[id(child)] = _Place(parent, key, self.places[id(parent)].depth + 1)
            self.values[id(child)] = value
            self.nodes[id(child)] = child

    def replace_with_value(self, node: Node) -> object:
        """Turn an original flow collection into a new value, edited as plain data."""
        if id(node) not in self.replacements:
            original = deep_copy(self.values[id(node)])
            self.replace(node, _with_verbatim_scalars(node, original, self.text))
        return self.replacements[id(node)]

    def replace(self, node: Node, value: object) -> None:
        if node is self.root:
            raise _NotExact
        self.replacements[id(node)] = value
        stack = [node]
        while stack:
            current = stack.pop()
            if current is not node:
                self.replacements.pop(id(current), None)
            self.new_entries.pop(id(current), None)
            self.items.pop(id(current), None)
            if isinstance(current, MappingNode):
                stack.extend(child for pair in current.value for child in pair)
            elif isinstance(current, SequenceNode):
                stack.extend(current.value)

    # Splicing -------------------------------------------------------------------------------

    def splice(self) -> str:
        self.style = _detect_style(self.root, self.text)
        splices: list[tuple[int, int, int, str]] = []  # start, end, -depth, new text
        for mapping_id, entries in self.new_entries.items():
            if entries:
                splices.append(self.mapping_append(self.nodes[mapping_id], entries))
        for sequence_id, items in self.items.items():
            splices.extend(self.sequence_inserts(self.nodes[sequence_id], items))
        for node_id, value in self.replacements.items():
            splices.extend(self.replacement(self.nodes[node_id], value))
        splices.sort()
        pieces: list[str] = []
        cursor = 0
        for start, end, _, new_text in splices:
            if start < cursor:
                raise _NotExact
            pieces.append(self.text[cursor:start])
            pieces.append(new_text)
            cursor = end
        pieces.append(self.text[cursor:])
        return "".join(pieces)

    def lines_at(self, position: int, lines: list[str]) -> str:
        """Whole lines inserted at a line start (or at the very end of the text)."""
        newline = self.style.newline
        if position == len(self.text) and not self.text.endswith("\n"):
            return newline + newline.join(lines)
        return "".join(line + newline for line in lines)

    def lines_over(self, end: int, lines: list[str]) -> str:
        """Lines replacing text up to ``end`` (a line start, or the very end of the text)."""
        newline = self.style.newline
        if end == len(self.text) and not self.text.endswith("\n"):
            return newline.join(lines)
        return "".join(line + newline for line in lines)

    def mapping_append(
        self, mapping: Node, entries: dict[str, object]
    ) -> tuple[int, int, int, str]:
        first_key = mapping.value[0][0]
        if first_key.start_mark.index != mapping.start_mark.index:
            raise _NotExact
        column = first_key.start_mark.column
        prefix = self.line_prefix(first_key.start_mark.index)
        if prefix.strip(" -") or (prefix.strip(" ") and not prefix.rstrip(" ").endswith("-")):
            raise _NotExact
        position = _line_after(self.text, mapping)
        lines = [
            line for key, value in entries.items() for line in self.style.entry(key, value, column)
        ]
        return (position, position, -self.places[id(mapping)].depth, self.lines_at(position, lines))

    def sequence_inserts(
        self, sequence: Node, items: list[Node | _NewItem]
    ) -> list[tuple[int, int, int, str]]:
        new_before: dict[int, list[object]] = {}  # original item position -> new values
        original_position = 0
        for item in items:
            if isinstance(item, _NewItem):
                new_before.setdefault(original_position, []).append(item.value)
            else:
                original_position += 1
        if not new_before:
            return []
        dash = sequence.start_mark.index
        if self.text[dash] != "-":
            raise _NotExact
        column = sequence.start_mark.column
        depth = -self.places[id(sequence)].depth
        splices = []
        for position, values in new_before.items():
            lines = [line for value in values for line in self.style.item(value, column)]
            if position == len(sequence.value):
                at = _line_after(self.text, sequence)
            else:
                at = self.dash_line_start(sequence.value[position], column)
            splices.append((at, at, depth, self.lines_at(at, lines)))
        return splices

    def replacement(self, node: Node, value: object) -> list[tuple[int, int, int, str]]:
        place = self.places[id(node)]
        parent = place.parent
        depth = -place.depth
        narrowed = self.narrowed_sequence(node, value, depth)
        if narrowed is not None:
            return narrowed
        if isinstance(node, ScalarNode) and node.style in ("|", ">"):
            raise _NotExact
        start = node.start_mark.index
        end = node.end_mark.index
        in_flow = parent is not None and _is_flow(parent)
        kept = _in_own_style(node, self.text[start:end], value, flow=in_flow)
        if kept is not None:
            return [(start, end, depth, kept)]
        block_collection = not isinstance(node, ScalarNode) and not _is_flow(node)
        if block_collection and not self.content_starts_at_node(node):
            raise _NotExact
        begins_line = not self.line_prefix(start).strip(" ")
        # Flow where the value fits on the line: scalars, empty collections, and a flat
        # collection where a non-empty flow collection was (``values: [amd64]``).
        as_flow = _is_leaf(value) or (_is_flow(node) and bool(node.value) and _is_flat(value))
        if isinstance(parent, MappingNode):
            assert place.key is not None
            key_column = place.key.start_mark.column
            if block_collection:
                after = _line_after(self.text, node)
                if as_flow:
                    colon = self.colon_after(place.key)
                    return [(colon, after, depth, " " + self.lines_over(after, [_flow(value)]))]
                if not begins_line:
                    raise _NotExact
                lines = self.block_under_key(node, value, key_column)
                line_start = start - node.start_mark.column
                return [(line_start, after, depth, self.lines_over(after, lines))]
            if as_flow:
                return [(start, end, depth, self.flow_over(start, end, value))]
            lines = self.style.block(value, key_column)
            after = _line_after(self.text, node)
            if begins_line:
                line_start = start - node.start_mark.column
                return [(line_start, after, depth, self.lines_over(after, lines))]
            colon = self.colon_after(place.key)
            return [(colon, end, depth, ""), (after, after, depth, self.lines_at(after, lines))]
        # An item of a block sequence: it must start on its dash's line.
        assert isinstance(parent, SequenceNode)
        prefix = self.line_prefix(start)
        dash_column = parent.start_mark.column
        if (
            len(prefix) <= dash_column
            or prefix[dash_column] != "-"
            or prefix[dash_column + 1 :].strip(" ")
        ):
            raise _NotExact
        if as_flow and not block_collection:
            return [(start, end, depth, self.flow_over(start, end, value))]
        after = _line_after(self.text, node)
        if as_flow:
            return [(start, after, depth, self.lines_over(after, [_flow(value)]))]
        lead = " " if start == end else ""
        column = node.start_mark.column + len(lead)
        lines = self.style.inline(value, column)
        lines[0] = lead + lines[0]
        return [(start, after, depth, self.lines_over(after, lines))]

    def narrowed_child(
        self, container: Node, token: str, operation: _Operation, value: object
    ) -> Node | None:
        """The sequence under a flow mapping that ``operation`` narrows (``{key: ...,
        values: ['amd64', 'arm64']}``), or the string it replaces by another written the same
        way (``{reference: app@sha256:...}``): edited alone, so that the mapping keeps its
        text."""
        if operation.kind != "replace" or not isinstance(container, MappingNode):
            return None
        child = self.mapping_child(container, token)
        if child is None:
            return None
        if isinstance(child, ScalarNode):
            source = self.text[child.start_mark.index : child.end_mark.index]
            kept = _in_own_style(child, source, value, flow=True)
            return child if kept is not None else None
        if self.narrowed_sequence(child, value, 0) is None:
            return None
        return child

    def narrowed_sequence(
        self, node: Node, value: object, depth: int
    ) -> list[tuple[int, int, int, str]] | None:
        """A sequence of scalars replaced by some of its items, in order (an ``In`` list
        narrowed): the kept items keep their text (quotes, style), the others are cut out.
        None when the new value is not such a subsequence."""
        if not isinstance(node, SequenceNode) or not isinstance(value, list) or not value:
            return None
        if not all(isinstance(item, ScalarNode) for item in node.value):
            return None
        original = self.values[id(node)]
        assert isinstance(original, list)
        kept: list[ScalarNode] = []
        cursor = 0
        for wanted in value:
            while cursor < len(original) and original[cursor] != wanted:
                cursor += 1
            if cursor == len(original):
                return None
            kept.append(node.value[cursor])
            cursor += 1
        if len(kept) == len(node.value):
            return None
        if _is_flow(node):
            items = ", ".join(self.text[i.start_mark.index : i.end_mark.index] for i in kept)
            start, end = node.start_mark.index, node.end_mark.index
            return [(start, end, depth, f"[{items}]")]
        if any(item.style in ("|", ">") for item in node.value):
            return None
        column = node.start_mark.column
        kept_ids = {id(item) for item in kept}
        return [
            (self.dash_line_start(item, column), _line_after(self.text, item), depth, "")
            for item in node.value
            if id(item) not in kept_ids
        ]

    def block_under_key(self, node: Node, value: object, key_column: int) -> list[str]:
        """Block lines for a new collection value where a block collection was."""
        column = node.start_mark.column
        if isinstance(value, dict) and isinstance(node, MappingNode):
            return self.style.mapping(value, column)
        if isinstance(value, list) and isinstance(node, SequenceNode):
            return self.style.sequence(value, column)
        return self.style.block(value, key_column)

    def flow_over(self, start: int, end: int, value: object) -> str:
        text = _flow(value)
        if start == end and self.text[start - 1 : start] not in (" ", "\t"):
            text = " " + text
        return text

    # Positions ------------------------------------------------------------------------------

    def line_prefix(self, index: int) -> str:
        return self.text[self.text.rfind("\n", 0, index) + 1 : index]

    def content_starts_at_node(self, node: Node) -> bool:
        """No tag or anchor before a block collection's first key or dash."""
        if isinstance(node, MappingNode):
            return bool(node.value[0][0].start_mark.index == node.start_mark.index)
        return self.text[node.start_mark.index] == "-"

    def colon_after(self, key: ScalarNode) -> int:
        index = key.end_mark.index
        while self.text[index : index + 1] == " ":
            index += 1
        if self.text[index : index + 1] != ":":
            raise _NotExact
        return index + 1

    def dash_line_start(self, item: Node, column: int) -> int:
        """The start of the line of an item's dash, which must be the first thing on it."""
        index = item.start_mark.index
        line_start = self.text.rfind("\n", 0, index) + 1
        prefix = self.text[line_start:index]
        if (
            len(prefix) <= column
            or prefix[:column].strip(" ")
            or prefix[column] != "-"
            or prefix[column + 1 :].strip(" ")
        ):
            raise _NotExact
        return line_start


def _line_after(text: str, node: Node) -> int:
    """The start of the line after a node's last line (or the end of the text).

    End marks of block collections point at the next token, possibly lines later, so the
    last leaf decides: a scalar's end is exact, and so is a flow collection's.
    """
    leaf = node
    while not isinstance(leaf, ScalarNode) and not _is_flow(leaf):
        last = leaf.value[-1]
        leaf = last[1] if isinstance(leaf, MappingNode) else last
    end = leaf.end_mark.index
    if isinstance(leaf, ScalarNode) and leaf.style in ("|", ">"):
        # The end of a block scalar is the start of the line after its (blank) lines.
        if end == 0 or text[end - 1] != "\n":
            raise _NotExact
        return int(end)
    if end < node.start_mark.index:
        raise _NotExact  # an alias: its marks are those of its anchor, earlier in the text
    if leaf.start_mark.index == end and text[end - 1 : end] not in (":", "-"):
        # An empty value whose position is not right after its indicator.
        raise _NotExact
    newline = text.find("\n", end)
    return len(text) if newline < 0 else newline + 1


# --------------------------------------------------------------------------------------------
# JSON documents (and YAML flow documents), spliced in their own layout


def _flow_splice(
    document: SourceDocument, operations: list[_Operation], root: Node | None = None
) -> str:
    """A JSON (or YAML flow) document with ``operations`` spliced in, in its own separators
    (``,`` or ``, ``, ``:`` or ``: ``), key quoting, trailing commas, line breaks and
    indentation: what they do not touch (the other items of a List, the other keys) stays byte
    for byte.

    The operations are planned against one composition of the text and the text is built once
    from all their splices, so an edit of every item of a 5,000-item ``kubectl get -o json``
    List costs time in proportion to its size (issue 28: splicing and composing again per
    operation was quadratic). An operation that meets what an earlier one of the same pass
    changed (a key it added, a value it replaced, an item index it shifted) ends the pass: the
    text is composed again and planning goes on from that operation, so it sees the earlier
    ones as if each had been spliced alone."""
    text = document.text
    if root is None:
        root = document.node  # composed anew on each access: the caller's, when it has it
    pending = operations
    while pending:
        flow = _FlowText(text, root)
        planned = flow.plan(pending)
        text = flow.spliced()
        pending = pending[planned:]
        if pending:
            try:
                root = SourceDocument(
                    document.source, document.index, document.start_line, text
                ).node
            except ManifestStreamError as exc:
                raise _NotExact from exc
    return text


class _Meets(Exception):
    """An operation meets what an earlier one of the same pass changed: plan it anew."""


@dataclass(frozen=True)
class _Splice:
    """``text[start:end]`` becomes ``new``; splices at one position keep their order."""

    start: int
    end: int
    order: int
    new: str


class _FlowText:
    """Positions and layout of one flow document's nodes, and the splices planned on them."""

    def __init__(self, text: str, root: Node | None) -> None:
        if root is None or not _is_flow(root):
            raise _NotExact
        self.text = text
        self.root = root
        self.newline = "\r\n" if "\r\n" in text else "\n"
        self.key_separator = self._key_separator()
        self.item_separator = self._item_separator()
        self.step = self._indent_step()
        self.quoted_keys, self.trailing_comma = self._conventions()
        self.splices: list[_Splice] = []
        # Nodes (by id) this pass replaced, those with a splice somewhere inside them, the keys
        # it added to each mapping and the sequences whose items it moved.
        self.replaced: set[int] = set()
        self.touched: set[int] = set()
        self.added_keys: dict[int, set[str]] = {}
        self.grown: set[int] = set()

    def plan(self, operations: Sequence[_Operation]) -> int:
        """Plan splices for the operations in order, up to the first that meets the work of an
        earlier one (at least one is planned); how many were planned."""
        for count, operation in enumerate(operations):
            try:
                self._plan(operation)
            except (_Meets, _NotExact, ValueError):
                if count == 0:
                    raise  # on a text no other operation touched: a real error
                return count
        return len(operations)

    def spliced(self) -> str:
        """The text with every planned splice, built once."""
        splices = sorted(self.splices, key=lambda splice: (splice.start, splice.order))
        parts: list[str] = []
        position = 0
        for splice in splices:
            if splice.start < position:
                raise _NotExact  # overlapping splices: not expected, never written
            parts.append(self.text[position : splice.start])
            parts.append(splice.new)
            position = splice.end
        parts.append(self.text[position:])
        return "".join(parts)

    def _plan(self, operation: _Operation) -> None:
        if not operation.path:
            raise _NotExact
        parent: Node = self.root
        visited = [parent]
        for token in operation.path[:-1]:
            if self._changed(parent) or token in self.added_keys.get(id(parent), ()):
                raise _Meets
            parent = self._child(parent, token, operation)
            visited.append(parent)
        if id(parent) in self.replaced:
            raise _Meets
        last = operation.path[-1]
        if isinstance(parent, MappingNode) and _is_flow(parent):
            if last in self.added_keys.get(id(parent), ()):
                raise _Meets
            for key_node, value_node in parent.value:
                if isinstance(key_node, ScalarNode) and key_node.value == last:
                    self._replace(value_node, operation.value)
                    break
            else:
                if operation.kind == "replace":
                    raise ValueError(f"cannot replace {json_pointer(operation.path)}: no such key")
                self._append_entry(parent, last, operation.value)
                self.added_keys.setdefault(id(parent), set()).add(last)
        elif isinstance(parent, SequenceNode) and _is_flow(parent):
            if id(parent) in self.grown and not (operation.kind == "add" and last == "-"):
                raise _Meets
            index = _list_index(last, len(parent.value), allow_end=operation.kind == "add")
            if operation.kind == "replace":
                self._replace(parent.value[index], operation.value)
            else:
                self._insert_item(parent, index, operation.value)
                self.grown.add(id(parent))
        else:
            raise _NotExact
        self.touched.update(id(node) for node in visited)

    def _changed(self, node: Node) -> bool:
        """Whether this pass replaced ``node`` or moved its items (so its positions or its
        children in the composition are no longer those of the text being built)."""
        return id(node) in self.replaced or id(node) in self.grown

    def _add(self, start: int, end: int, new: str) -> None:
        self.splices.append(_Splice(start, end, len(self.splices), new))

    def _child(self, node: Node, token: str, operation: _Operation) -> Node:
        if isinstance(node, MappingNode) and _is_flow(node):
            for key_node, value_node in node.value:
                if isinstance(key_node, ScalarNode) and key_node.value == token:
                    return value_node  # type: ignore[no-any-return]
            raise ValueError(f"path {json_pointer(operation.path)} does not exist: no {token!r}")
        if isinstance(node, SequenceNode) and _is_flow(node):
            item: Node = node.value[_list_index(token, len(node.value), allow_end=False)]
            return item
        raise _NotExact

    # The document's conventions ----------------------------------------------------------------

    def _members(self, node: Node) -> list[tuple[Node, Node]]:
        """(first node, last node) of each member: key and value, or the item twice."""
        if isinstance(node, MappingNode):
            return [(key, value) for key, value in node.value]
        if isinstance(node, SequenceNode):
            return [(item, item) for item in node.value]
        return []

    def _collections(self) -> Iterator[Node]:
        """The document's collections, outermost first."""
        stack: list[Node] = [self.root]
        while stack:
            node = stack.pop()
            if isinstance(node, MappingNode | SequenceNode):
                yield node
                stack.extend(reversed([last for _, last in self._members(node)]))

    def _key_separator(self) -> str:
        """What the document writes between a key and its value (``:`` or ``: ``)."""
        for node in self._collections():
            if isinstance(node, MappingNode) and node.value:
                key_node, value_node = node.value[0]
                between = self.text[key_node.end_mark.index : value_node.start_mark.index]
                if between.strip(" ") != ":":
                    raise _NotExact
                return between
        return ": "

    def _item_separator(self) -> str:
        """What the document writes between two members on one line (``,`` or ``, ``)."""
        for node in self._collections():
            for (_, before), (after, _) in itertools.pairwise(self._members(node)):
                between = self.text[before.end_mark.index : after.start_mark.index]
                if "\n" not in between and between.strip() == ",":
                    return between
        return ", "

    def _conventions(self) -> tuple[bool, bool]:
        """Whether keys are quoted (JSON), and whether the last member of a collection is
        followed by a comma (YAML flow allows it; Kubernetes' website examples do it)."""
        for node in self._collections():
            if isinstance(node, MappingNode) and node.value:
                quoted = node.value[0][0].style == '"'
                after_last = self.text[node.value[-1][1].end_mark.index : node.end_mark.index - 1]
                return quoted, after_last.strip() == ","
        return True, False

    def _indent_step(self) -> int:
        """Columns from a line to the keys of a mapping opened on it, as the document does."""
        for node in self._collections():
            if isinstance(node, MappingNode) and node.value:
                key = node.value[0][0]
                if key.start_mark.line > node.start_mark.line:
                    step = key.start_mark.column - self._indentation(node.start_mark.index)
                    if step > 0:
                        return int(step)
        return 2

    def _indentation(self, index: int) -> int:
        line_start = self.text.rfind("\n", 0, index) + 1
        line = self.text[line_start:index]
        return len(line) - len(line.lstrip(" "))

    def _layout(self, container: Node, spans: list[tuple[int, int]]) -> tuple[str, int, bool]:
        """(separator before a new member, column of its first line, whether it spans lines)."""
        if len(spans) >= 2:
            separator = self.text[spans[-2][1] : spans[-1][0]]
        else:
            lead = self.text[container.start_mark.index + 1 : spans[0][0]]
            separator = "," + lead if "\n" in lead else self.item_separator
        if separator.strip() != "," or separator.lstrip(" ")[:1] != ",":
            raise _NotExact  # a comment, or a line break before the comma
        if "\n" in separator:
            return separator, len(separator) - separator.rfind("\n") - 1, True
        last_start, last_end = spans[-1]
        if "\n" in self.text[last_start:last_end]:
            # Members written ``[{`` ... ``}, {`` ... ``}]``: a new one is laid out the same.
            return separator, self._indentation(last_end), True
        return separator, 0, False

    def _rendered(self, value: object, column: int, multi_line: bool) -> str:
        """``value`` in the document's flow style, its first line at ``column`` (multi-line:
        one member a line, indented by the document's step)."""
        if isinstance(value, dict):
            members = [(self._key(key) + self.key_separator, item) for key, item in value.items()]
            opening, closing = "{", "}"
        elif isinstance(value, list):
            members = [("", item) for item in value]
            opening, closing = "[", "]"
        else:
            return json.dumps(value, ensure_ascii=False)
        if not members:
            return opening + closing
        if not multi_line:
            inner = [head + self._rendered(item, 0, False) for head, item in members]
            return opening + self.item_separator.join(inner) + closing
        indented = column + self.step
        lines = [
            " " * indented + head + self._rendered(item, indented, True) for head, item in members
        ]
        newline = self.newline
        last = "," if self.trailing_comma else ""
        body = ("," + newline).join(lines)
        return f"{opening}{newline}{body}{last}{newline}{' ' * column}{closing}"

    def _key(self, key: object) -> str:
        if not isinstance(key, str):
            raise _NotExact
        return json.dumps(key, ensure_ascii=False) if self.quoted_keys else render_scalar(key)

    # Splices ----------------------------------------------------------------------------------

    def _replace(self, node: Node, value: object) -> None:
        if id(node) in self.replaced or id(node) in self.touched:
            raise _Meets
        start, end = node.start_mark.index, node.end_mark.index
        kept = _in_own_style(node, self.text[start:end], value, flow=True)
        if kept is not None:
            self._add(start, end, kept)
            self.replaced.add(id(node))
            return
        multi_line = self.text.find("\n", start, end) >= 0 or (
            not _is_leaf(value) and self.text.find("\n", self.root.start_mark.index, start) >= 0
        )
        new = self._rendered(value, self._indentation(start), multi_line)
        self._add(start, end, new)
        self.replaced.add(id(node))

    def _append(self, container: Node, spans: list[tuple[int, int]], new: str) -> None:
        """``new`` as the container's last member, after its separator (and after the last
        member's trailing comma, which it then carries itself)."""
        separator, _, _ = self._layout(container, spans)
        end = spans[-1][1]
        after = self.text[end : container.end_mark.index - 1]
        if after.strip() == ",":
            comma = end + after.index(",") + 1
            self._add(comma, comma, separator[1:] + new + ",")
        else:
            self._add(end, end, separator + new)

    def _appended_before(self, container: Node, spans: list[tuple[int, int]]) -> None:
        """Refuse a second member appended to a container laid out ``[{`` ... ``}, {`` ...
        ``}]``: the first one appended (on one line, or not) decides how the next is laid out."""
        if id(container) not in self.grown and not self.added_keys.get(id(container)):
            return
        separator = self._layout(container, spans)[0]
        if "\n" not in separator and self.text.find("\n", *spans[-1]) >= 0:
            raise _Meets

    def _append_entry(self, mapping: MappingNode, key: str, value: object) -> None:
        spans = [(k.start_mark.index, v.end_mark.index) for k, v in mapping.value]
        if not spans:
            self._replace(mapping, {key: value})
            return
        self._appended_before(mapping, spans)
        if id(mapping.value[-1][1]) in self.replaced:
            raise _Meets
        _, column, multi_line = self._layout(mapping, spans)
        new = self._key(key) + self.key_separator + self._rendered(value, column, multi_line)
        self._append(mapping, spans, new)

    def _insert_item(self, sequence: SequenceNode, index: int, value: object) -> None:
        spans = [(item.start_mark.index, item.end_mark.index) for item in sequence.value]
        if not spans:
            self._replace(sequence, [value])
            return
        self._appended_before(sequence, spans)
        if id(sequence.value[min(index, len(spans) - 1)]) in self.replaced:
            raise _Meets  # its splice and this one would start at one position
        separator, column, multi_line = self._layout(sequence, spans)
        new = self._rendered(value, column, multi_line)
        if index == len(spans):
            self._append(sequence, spans, new)
            return
        start = spans[index][0]
        self._add(start, start, new + separator)


# --------------------------------------------------------------------------------------------
# The fallback: ruamel.yaml's round trip


def _round_trip_edit(
    document: SourceDocument,
    root: Node | None,
    operations: list[_Operation],
    expected: object,
    lost_comments: list[int] | None = None,
) -> str:
    if root is None:
        raise ValueError(f"document {document.index + 1} of {document.source} is empty")
    text = document.text
    style = _detect_style(root, text)
    body_start = text.rfind("\n", 0, root.start_mark.index) + 1
    body_end = len(text)
    if not document.has_aliases_or_merges:
        # Trailing comments and a ``...`` line stay as they are. (With aliases, the last leaf
        # may be an alias whose marks are those of its anchor, earlier in the text.)
        with contextlib.suppress(_NotExact):
            body_end = _line_after(text, root)
    prefix, body, suffix = text[:body_start], text[body_start:body_end], text[body_end:]

    def edited_with_ruamel() -> str:
        return _ruamel_edit(document, body, style, operations)

    def rendered_anew() -> str:
        # The last resort, when ruamel.yaml writes something that does not read back (it has
        # bugs around comments): the whole body written from the patched value, each scalar
        # it did not change as the text it was written as; comments are lost (and named).
        assert root is not None
        marker = "---\n" if body.startswith("---") else ""
        value = _patched_verbatim(document, root, operations)
        return marker + "".join(line + "\n" for line in style.inline(value, 0))

    def edited_as_json() -> str:
        return _json_edit(body, operations)

    attempts = [edited_as_json] if _is_json(body) else [edited_with_ruamel, rendered_anew]
    for attempt in attempts:
        try:
            new_body = attempt()
        except ManifestStreamError:
            continue
        if style.newline == "\r\n":
            new_body = new_body.replace("\r\n", "\n").replace("\n", "\r\n")
        if not body.endswith("\n"):
            new_body = new_body.rstrip("\r\n")
        result = prefix + new_body + suffix
        if _reads_back_as(result, document, expected):
            if attempt is rendered_anew and lost_comments is not None:
                first_line = document.start_line + text.count("\n", 0, body_start)
                kept = set(_comments(new_body).values())
                lost_comments.extend(
                    first_line + line
                    for line, comment in _comments(body).items()
                    if comment not in kept
                )
            return result
    raise UneditableDocumentError(
        f"{document.source}:{document.start_line}: document {document.index + 1}: kmultiarch "
        "cannot write this document's change without altering something else (a limitation of "
        "kmultiarch, not an error in the YAML): nothing was written; writing the pod spec in "
        "block style without anchors avoids it; please report the document"
    )


def _patched_verbatim(document: SourceDocument, root: Node, operations: list[_Operation]) -> object:
    """The patched value, with each scalar the operations did not write as :class:`_Verbatim`:
    written back as it was, it keeps its Kubernetes type (``10:30``, ``0o644``, ``3e1``) and a
    key that is not a string (``1``, ``on``) can be written at all."""
    data: Any = copy.deepcopy(_with_verbatim_scalars(root, document.value, document.text))
    for operation in operations:
        value = deep_copy(operation.value)
        if not operation.path:
            data = value
            continue
        parent = data
        for token in operation.path[:-1]:
            if isinstance(parent, dict):
                parent = parent[token]
            elif isinstance(parent, list):
                parent = parent[_list_index(token, len(parent), allow_end=False)]
            else:
                raise ValueError(f"path {json_pointer(operation.path)} goes through a scalar")
        _set_in_container(parent, operation.path[-1], operation, value)
    return data


def _comments(text: str) -> dict[int, str]:
    """The comments of ``text``, by line (0-based): a ``#`` at the start of a line or after
    white space, outside every scalar (quoted, plain or block)."""
    import yaml

    inside: list[tuple[int, int]] = []
    with contextlib.suppress(yaml.YAMLError):
        for token in yaml.scan(text, Loader=yaml.CSafeLoader):
            if isinstance(token, yaml.ScalarToken):
                inside.append((token.start_mark.index, token.end_mark.index))
    found: dict[int, str] = {}
    span = 0
    for match in re.finditer(r"(?:^|(?<=[ \t]))#[^\r\n]*", text, re.MULTILINE):
        start = match.start()
        while span < len(inside) and inside[span][1] <= start:
            span += 1
        if span < len(inside) and inside[span][0] <= start:
            continue
        found[text.count("\n", 0, start)] = match.group().rstrip()
    return found


def _is_json(body: str) -> bool:
    stripped = body.strip()
    if not stripped.startswith(("{", "[")):
        return False
    try:
        json.loads(stripped)
    except ValueError:
        return False
    return True


def _json_edit(body: str, operations: list[_Operation]) -> str:
    """A JSON document with the operations applied, written as JSON again; its numbers keep
    the text they were written as (a ``3e1`` stays the number ``3e1``, not the string YAML
    1.1 reads it as)."""
    lines = body.strip("\r\n").splitlines()
    indent = None
    if len(lines) > 1:
        second = lines[1]
        indent = len(second) - len(second.lstrip(" ")) or None
    trailing = body[len(body.rstrip("\r\n")) :]
    numbers: list[str] = []

    def keep(text: str) -> str:
        numbers.append(text)
        return f"\x00{len(numbers) - 1}\x00"

    value = json.loads(body, parse_int=keep, parse_float=keep, parse_constant=keep)
    patched = apply_patch(
        value,
        [
            {"op": operation.kind, "path": json_pointer(operation.path), "value": operation.value}
            for operation in operations
        ],
    )
    text = json.dumps(patched, indent=indent, ensure_ascii=False)
    text = re.sub(r'"\\u0000(\d+)\\u0000"', lambda match: numbers[int(match.group(1))], text)
    return text + (trailing or "")


def _ruamel_edit(
    document: SourceDocument, body: str, style: _Style, operations: list[_Operation]
) -> str:
    from ruamel.yaml import YAML
    from ruamel.yaml.error import YAMLError as RuamelError

    yaml = YAML(typ="rt")
    yaml.Representer = _round_trip_representer()
    yaml.preserve_quotes = True
    yaml.width = 1 << 30
    yaml.indent(
        mapping=style.indent,
        sequence=style.sequence_offset + 2,
        offset=style.sequence_offset,
    )
    yaml.explicit_start = body.startswith("---")
    try:
        data = yaml.load(body)
        shared = _shared_containers(data)
        for operation in operations:
            data = _apply_round_trip(data, operation, shared)
        out = io.StringIO()
        yaml.dump(data, out)
    except (RuamelError, KeyError, IndexError, TypeError, ValueError) as exc:
        raise ManifestStreamError(
            f"{document.source}:{document.start_line}: document {document.index + 1}: cannot "
            f"edit it with ruamel.yaml ({exc}); simplify the YAML"
        ) from exc
    return out.getvalue()


@functools.cache
def _round_trip_representer() -> type[Any]:
    """ruamel.yaml's representer, writing new floats so that YAML 1.1 reads them as floats."""
    from ruamel.yaml.representer import RoundTripRepresenter

    class Representer(RoundTripRepresenter):
        def represent_new_float(self, value: float) -> Any:
            return self.represent_scalar("tag:yaml.org,2002:float", render_scalar(value))

    Representer.add_representer(float, Representer.represent_new_float)
    return Representer


def _shared_containers(data: object) -> set[int]:
    """Ids of containers reached more than once (aliases), which must be copied before edits."""
    seen: set[int] = set()
    shared: set[int] = set()
    stack = [data]
    while stack:
        current = stack.pop()
        if not isinstance(current, dict | list):
            continue
        if id(current) in seen:
            shared.add(id(current))
            continue
        seen.add(id(current))
        stack.extend(current.values() if isinstance(current, dict) else current)
    return shared


def _apply_round_trip(data: Any, operation: _Operation, shared: set[int]) -> Any:
    if not operation.path:
        return _to_round_trip(deep_copy(operation.value))
    parent = data
    for token in operation.path[:-1]:
        if isinstance(parent, dict):
            child = parent[token]
            own_keys = getattr(parent, "_ok", None)
            if id(child) in shared or (own_keys is not None and token not in own_keys):
                child = parent[token] = copy.deepcopy(child)
        elif isinstance(parent, list):
            index = _list_index(token, len(parent), allow_end=False)
            child = parent[index]
            if id(child) in shared:
                child = parent[index] = copy.deepcopy(child)
        else:
            raise ValueError(f"path {json_pointer(operation.path)} goes through a scalar")
        parent = child
    last = operation.path[-1]
    key = _to_round_trip(last) if isinstance(parent, dict) else last
    _set_in_container(parent, key, operation, _to_round_trip(operation.value))  # type: ignore[arg-type]
    return data


def _to_round_trip(value: object) -> object:
    """A new value for ruamel.yaml, with strings quoted where our reader needs it (YAML 1.1)."""
    from ruamel.yaml.comments import CommentedMap, CommentedSeq
    from ruamel.yaml.scalarstring import DoubleQuotedScalarString

    if isinstance(value, dict):
        mapping = CommentedMap()
        for key, item in value.items():
            mapping[_to_round_trip(key)] = _to_round_trip(item)
        return mapping
    if isinstance(value, list):
        return CommentedSeq(_to_round_trip(item) for item in value)
    if isinstance(value, str) and not _is_plain_safe(value):
        return DoubleQuotedScalarString(value)
    return value
