"""Edits inside flow collections (``{a: 1}``, ``[x, y]``) spliced into the text as written, one
character range each.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from kmultiarch.core.patch import json_pointer
from kmultiarch.errors import ManifestStreamError
from kmultiarch.yaml.scalars import (
    _in_own_style,
    _is_flow,
    _is_leaf,
    _list_index,
    _NotExact,
    render_scalar,
)
from kmultiarch.yaml.stream import SourceDocument

if TYPE_CHECKING:
    from kmultiarch.yaml.scalars import _Operation


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
