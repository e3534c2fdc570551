"""Edits in a document's block style, written into its text line by line (the fast path): the
indentation and quoting detected from the document (:class:`_Style`), new keys and list items
placed where a person would put them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from yaml.nodes import CollectionNode, MappingNode, Node, ScalarNode, SequenceNode

from kmultiarch.core.patch import deep_copy, json_pointer
from kmultiarch.yaml.scalars import (
    _TAB_IN_INDENTATION,
    _flow,
    _in_own_style,
    _is_flat,
    _is_flow,
    _is_leaf,
    _key,
    _list_index,
    _NotExact,
    _set_in_container,
    _with_verbatim_scalars,
)
from kmultiarch.yaml.stream import SourceDocument, has_exotic_line_breaks

if TYPE_CHECKING:
    from kmultiarch.yaml.scalars import _Operation


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
