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
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from kmultiarch.core.patch import PatchOperation, apply_patch, deep_copy, json_pointer
from kmultiarch.errors import ManifestStreamError, UneditableDocumentError
from kmultiarch.yaml.blockstyle import _detect_style, _FastEditor, _line_after
from kmultiarch.yaml.flowstyle import _flow_splice
from kmultiarch.yaml.jsonstyle import _is_json, _json_edit
from kmultiarch.yaml.scalars import (
    _TAB_IN_INDENTATION,
    _is_flow,
    _is_plain_safe,
    _list_index,
    _NotExact,
    _Operation,
    _set_in_container,
    _with_verbatim_scalars,
    render_scalar,
)
from kmultiarch.yaml.stream import (
    MAX_DOCUMENT_BYTES,
    SourceDocument,
    cyclic_gc_paused,
    has_exotic_line_breaks,
    read_stream,
)

if TYPE_CHECKING:
    from kmultiarch.yaml.blockstyle import _Style


__all__ = ["EditHint", "apply_operations", "apply_operations_roundtrip", "edit_hint"]


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


def _reads_back_as(text: str, document: SourceDocument, expected: object) -> bool:
    try:
        # The original passed its reader's size cap; the edited text is read back whatever size.
        documents = read_stream(
            text, document.source, max_document_bytes=max(MAX_DOCUMENT_BYTES, 4 * len(text))
        )
    except ManifestStreamError:
        return False
    return len(documents) == 1 and documents[0].value == expected


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
