"""Reading a cluster's state as ``kubectl get -o json`` (or ``-o yaml``) prints it, a Kubernetes
object at a time, for ``kmultiarch triage``.

A real cluster's dump is one document far larger than any manifest (``kubectl get
pods,events,nodes -A -o json`` of a 5,000-pod cluster is some 100 MB), so it is never read
whole: the items of the top-level ``List`` are decoded one by one and each is handed to the
caller, which keeps only what it needs. What is held at any time is one item's text and what
the caller kept, both bounded by :class:`DumpLimits`, whatever the file's size:

- JSON: the top-level object is walked key by key; each value, and each element of ``items``,
  is decoded with :meth:`json.JSONDecoder.raw_decode` (the standard library's C decoder) from a
  sliding buffer, which grows (doubling) only while the value is incomplete and is cut after it.
  No third-party streaming parser is needed for this shape: kubectl prints one object per item.
- YAML: libyaml's event parser (PyYAML's ``CSafeLoader``) reads the stream in chunks; each item
  of ``items`` is built from its events, scalars resolved as YAML 1.1 resolves them. Aliases,
  which kubectl never prints, are refused (no alias bomb).

Every problem is an :class:`ClusterDumpError` (exit 2) that names the file, the line when known,
and what was expected: not JSON or YAML, not a Kubernetes object or List, an item that is not an
object or is larger or deeper than the limits, a field of the wrong type (the caller's
:class:`~kmultiarch.core.triage.DumpShapeError`)."""

from __future__ import annotations

import codecs
import json
import os
import re
import stat
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, BinaryIO

from kmultiarch.core.triage import ClusterState, DumpShapeError
from kmultiarch.errors import InputError

STDIN = "-"
STDIN_NAME = "<stdin>"
_CHUNK = 1 << 16
_WHITESPACE = re.compile(r"[ \t\n\r]*")


class ClusterDumpError(InputError):
    """A cluster dump that cannot be read: not kubectl's JSON or YAML, not Kubernetes objects,
    or beyond the limits. The message names the file (and the line or item)."""


@dataclass(frozen=True)
class DumpLimits:
    """The bounds on what reading a dump may hold, independent of the dump's size.

    ``max_object_bytes``: the text of one object (an item of ``items``, or a top-level
    object); etcd refuses objects over 1.5 MiB, so the default leaves room for any real one.
    ``max_depth``: how deeply an object may nest (a Pod nests some 12 levels, a CRD's schema
    some 40). ``max_kept``: how many objects the caller may keep over all the dumps of a run
    (failing pods, the events about them, nodes, owners): ``--max-objects``."""

    max_object_bytes: int = 8 * 1024 * 1024
    max_depth: int = 100
    max_kept: int = 200_000


def open_dump(name: str, stdin: BinaryIO | None = None) -> BinaryIO:
    """The dump ``name`` opened for reading (``-``: stdin). A directory, a device or a
    socket is refused before anything is read."""
    if name == STDIN:
        return stdin or sys.stdin.buffer
    try:
        stream = open(name, "rb")  # noqa: SIM115 - closed by the caller
    except OSError as exc:
        raise ClusterDumpError(f"{name}: cannot read: {exc.strerror or exc}") from exc
    mode = os.fstat(stream.fileno()).st_mode
    if not (stat.S_ISREG(mode) or stat.S_ISFIFO(mode)):
        stream.close()
        raise ClusterDumpError(
            f"{name}: not a regular file; name the output of `kubectl get -o json` (or -o "
            "yaml), or - for stdin"
        )
    return stream


def read_cluster(
    names: Sequence[str], limits: DumpLimits | None = None, stdin: BinaryIO | None = None
) -> ClusterState:
    """What triage keeps of every dump ``names`` (``-``: stdin, once), read streaming: one
    object at a time, and at most ``limits.max_kept`` objects kept over all of them."""
    limits = limits or DumpLimits()
    state = ClusterState()
    for name in names:
        shown = STDIN_NAME if name == STDIN else name
        stream = open_dump(name, stdin)
        try:
            for position, item in enumerate(dump_items(stream, shown, limits), 1):
                try:
                    state.add(item, shown)
                except DumpShapeError as exc:
                    raise ClusterDumpError(
                        f"{shown}: object {position}: {exc}; expected the output of "
                        "`kubectl get ... -o json` (or -o yaml)"
                    ) from None
                if state.kept > limits.max_kept:
                    raise ClusterDumpError(
                        f"{shown}: object {position}: more than {limits.max_kept} objects to "
                        "keep (failing pods, their events and owners, nodes); raise "
                        "--max-objects, or dump fewer namespaces or kinds"
                    )
        except OSError as exc:
            raise ClusterDumpError(f"{shown}: cannot read: {exc.strerror or exc}") from exc
        finally:
            if name != STDIN:
                stream.close()
    return state


def dump_items(
    stream: BinaryIO, name: str, limits: DumpLimits | None = None
) -> Iterator[Mapping[str, Any]]:
    """Each Kubernetes object of the dump, one at a time: the items of a ``List`` (``kind:
    List``, ``PodList``...), or a top-level object itself. JSON or YAML, told apart by the
    first character that is not white space."""
    limits = limits or DumpLimits()
    head = stream.read(_CHUNK)
    if head.startswith(codecs.BOM_UTF8):
        head = head[len(codecs.BOM_UTF8) :]
    first = head.lstrip(b" \t\r\n")[:1]
    while not first and head:
        more = stream.read(_CHUNK)
        if not more:
            break
        head += more
        first = head.lstrip(b" \t\r\n")[:1]
    if not first:
        raise ClusterDumpError(
            f"{name}: empty; expected the output of `kubectl get ... -o json` (or -o yaml)"
        )
    prefixed = _Prefixed(head, stream)
    if first in (b"{", b"["):
        yield from _JsonItems(prefixed, name, limits).items()
    else:
        yield from _yaml_items(prefixed, name, limits)


class _Prefixed:
    """A binary stream with bytes already read put back in front."""

    def __init__(self, head: bytes, stream: BinaryIO) -> None:
        self._head = head
        self._stream = stream

    def read(self, size: int = -1) -> bytes:
        if self._head:
            if size < 0 or size >= len(self._head):
                data, self._head = self._head, b""
                return data
            data, self._head = self._head[:size], self._head[size:]
            return data
        return self._stream.read(size if size >= 0 else -1)


def check_depth(value: object, limit: int) -> int | None:
    """None when ``value`` nests at most ``limit`` deep, else the depth at which it went past."""
    stack: list[tuple[object, int]] = [(value, 1)]
    while stack:
        current, depth = stack.pop()
        if depth > limit:
            return depth
        if isinstance(current, dict):
            stack.extend((child, depth + 1) for child in current.values())
        elif isinstance(current, list):
            stack.extend((child, depth + 1) for child in current)
    return None


def _type_name(value: object) -> str:
    if value is None:
        return "null"
    return {dict: "an object", list: "an array", str: "a string", bool: "a boolean"}.get(
        type(value), "a number"
    )


def _item_type(fields: Mapping[str, object]) -> tuple[str, str] | None:
    """The (apiVersion, kind) of the items of a typed list the API server sends (``kubectl get
    --raw /api/v1/pods``: ``kind: PodList`` first, its items without apiVersion and kind)."""
    kind, api_version = fields.get("kind"), fields.get("apiVersion")
    typed = isinstance(kind, str) and kind.endswith("List") and kind != "List"
    if typed and isinstance(kind, str) and isinstance(api_version, str):
        return api_version, kind.removesuffix("List")
    return None


def _check_list(fields: Mapping[str, object], has_items: bool, at: str, where: str) -> None:
    """A List whose ``items`` is not a list is refused (a list-less List says nothing)."""
    kind, items = fields.get("kind"), fields.get("items")
    if not has_items and isinstance(kind, str) and kind.endswith("List") and items is not None:
        raise ClusterDumpError(
            f"{at}: {where} is a {kind} whose items are {_type_name(items)}, not a list"
        )


def _checked_item(
    item: object,
    name: str,
    where: str,
    limits: DumpLimits,
    item_type: tuple[str, str] | None = None,
) -> Mapping[str, Any]:
    if not isinstance(item, dict):
        raise ClusterDumpError(
            f"{name}: {where} is {_type_name(item)}, not a Kubernetes object; expected the "
            "output of `kubectl get ... -o json` (or -o yaml)"
        )
    if item_type is not None and "kind" not in item and "apiVersion" not in item:
        item["apiVersion"], item["kind"] = item_type
    if not isinstance(item.get("apiVersion"), str) or not isinstance(item.get("kind"), str):
        raise ClusterDumpError(
            f"{name}: {where} has no apiVersion and kind (strings): not a Kubernetes object"
        )
    if check_depth(item, limits.max_depth) is not None:
        raise ClusterDumpError(
            f"{name}: {where} ({item['kind']}) nests deeper than {limits.max_depth} levels: "
            "not an object kubectl prints"
        )
    return item


# --- JSON -----------------------------------------------------------------------------------


class _JsonItems:
    """The objects of a JSON dump, decoded a value at a time from a sliding buffer."""

    def __init__(self, stream: _Prefixed, name: str, limits: DumpLimits) -> None:
        self._stream = stream
        self._name = name
        self._limits = limits
        self._decoder = json.JSONDecoder()
        self._text_decoder = codecs.getincrementaldecoder("utf-8")()
        self._buffer = ""
        self._pos = 0
        self._lines_before = 0  # line breaks in the text already cut from the buffer
        self._eof = False

    # The buffer -----------------------------------------------------------------------------

    def _fill(self, at_least: int = _CHUNK) -> bool:
        """Read ``at_least`` more characters (fewer at the end); False at the end."""
        if self._eof:
            return False
        if self._pos > _CHUNK:
            self._lines_before += self._buffer.count("\n", 0, self._pos)
            self._buffer = self._buffer[self._pos :]
            self._pos = 0
        wanted = len(self._buffer) + at_least
        while len(self._buffer) < wanted:
            data = self._stream.read(max(_CHUNK, wanted - len(self._buffer)))
            try:
                self._buffer += self._text_decoder.decode(data, final=not data)
            except UnicodeDecodeError as exc:
                before = data[: max(exc.start, 0)].count(b"\n")
                line = self._line(len(self._buffer)) + before
                raise ClusterDumpError(
                    f"{self._name}:{line}: not UTF-8 ({exc.reason}): kubectl prints UTF-8 JSON"
                ) from exc
            if not data:
                self._eof = True
                return True
        return True

    def _line(self, position: int) -> int:
        return self._lines_before + self._buffer.count("\n", 0, position) + 1

    def _peek(self) -> str:
        """The next character that is not white space ('' at the end)."""
        while True:
            match = _WHITESPACE.match(self._buffer, self._pos)
            self._pos = match.end() if match else self._pos
            if self._pos < len(self._buffer):
                return self._buffer[self._pos]
            if not self._fill():
                return ""

    def _expect(self, characters: str, what: str) -> str:
        found = self._peek()
        if found == "" or found not in characters:
            shown = repr(found) if found else "the end of the input"
            raise self._error(f"expected {what}, found {shown}")
        self._pos += 1
        return found

    def _error(self, message: str, position: int | None = None) -> ClusterDumpError:
        line = self._line(self._pos if position is None else position)
        return ClusterDumpError(f"{self._name}:{line}: not a kubectl JSON dump: {message}")

    def _too_large(self, line: int, what: str) -> ClusterDumpError:
        return ClusterDumpError(
            f"{self._name}:{line}: {what} is larger than {self._limits.max_object_bytes} "
            "bytes (--max-object-size); no Kubernetes object is that large"
        )

    def _value(self, what: str) -> object:
        """The next JSON value, decoded whole; the buffer grows only while it is incomplete."""
        self._peek()
        start_line = self._line(self._pos)
        while True:
            try:
                value, end = self._decoder.raw_decode(self._buffer, self._pos)
            except json.JSONDecodeError as exc:
                if self._eof:
                    raise self._error(f"{exc.msg} (in {what})", exc.pos) from None
                held = len(self._buffer) - self._pos
                if held > self._limits.max_object_bytes:
                    raise self._too_large(start_line, what) from None
                self._fill(max(_CHUNK, held))  # doubling: each retry reads as much again
                continue
            except RecursionError:
                raise ClusterDumpError(
                    f"{self._name}:{start_line}: {what} nests deeper than the JSON decoder "
                    f"goes: not an object kubectl prints (limit {self._limits.max_depth} levels)"
                ) from None
            if end == len(self._buffer) and not self._eof and not isinstance(value, dict | list):
                self._fill()  # a number or literal may go on in the next chunk
                continue
            if end - self._pos > self._limits.max_object_bytes:
                raise self._too_large(start_line, what)
            self._pos = end
            return value

    # The structure --------------------------------------------------------------------------

    def items(self) -> Iterator[Mapping[str, Any]]:
        documents = 0
        while True:
            first = self._peek()
            if first == "":
                return
            documents += 1
            if first == "[":
                raise self._error(
                    "a JSON array; expected a Kubernetes object or List (`kubectl get ... -o json`)"
                )
            if first != "{":
                raise self._error(f"expected a JSON object, found {first!r}")
            yield from self._top_object(documents)

    def _top_object(self, document: int) -> Iterator[Mapping[str, Any]]:
        start = self._line(self._pos)
        self._expect("{", "'{'")
        fields: dict[str, object] = {}
        items = 0
        held = 0
        has_items = False
        if self._peek() == "}":
            self._pos += 1
        else:
            while True:
                key = self._value("a key")
                if not isinstance(key, str):
                    raise self._error("an object key that is not a string")
                self._expect(":", "':'")
                if key == "items" and self._peek() == "[":
                    has_items = True
                    for item in self._array_items():
                        items += 1
                        yield _checked_item(
                            item,
                            self._name,
                            f"item {items} of items",
                            self._limits,
                            _item_type(fields),
                        )
                else:
                    before = self._pos
                    fields[key] = self._value(f"the value of {key!r}")
                    held += self._pos - before
                    if held > self._limits.max_object_bytes:
                        raise ClusterDumpError(
                            f"{self._name}:{start}: the object is larger than "
                            f"{self._limits.max_object_bytes} bytes (--max-object-size)"
                        )
                if self._expect(",}", "',' or '}'") == "}":
                    break
        where = "the object" if document == 1 else f"object {document}"
        kind = fields.get("kind")
        _check_list(fields, has_items, f"{self._name}:{start}", where)
        if has_items:
            if not isinstance(kind, str) or not kind.endswith("List"):
                raise ClusterDumpError(
                    f"{self._name}:{start}: {where} has items but is not a Kubernetes List "
                    f"(kind: {kind!r}); expected `kubectl get ... -o json`"
                )
            return
        yield _checked_item(fields, self._name, where, self._limits)

    def _array_items(self) -> Iterator[object]:
        self._expect("[", "'['")
        if self._peek() == "]":
            self._pos += 1
            return
        while True:
            yield self._value("an item of items")
            if self._expect(",]", "',' or ']'") == "]":
                return


# --- YAML -----------------------------------------------------------------------------------


def _yaml_items(stream: _Prefixed, name: str, limits: DumpLimits) -> Iterator[Mapping[str, Any]]:
    import yaml

    loader = yaml.CSafeLoader(stream)  # reads the stream a chunk at a time
    builder = _YamlBuilder(loader, name, limits)
    try:
        yield from builder.items()
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = f":{mark.line + 1}" if mark is not None else ""
        raise ClusterDumpError(
            f"{name}{line}: not JSON or YAML: {exc.problem or exc.context}"
        ) from None
    except yaml.YAMLError as exc:
        raise ClusterDumpError(f"{name}: not JSON or YAML: {exc}") from None
    except UnicodeDecodeError as exc:
        raise ClusterDumpError(f"{name}: not UTF-8 ({exc.reason})") from None
    finally:
        loader.dispose()


class _YamlBuilder:
    """Plain values built from libyaml's events, an item at a time."""

    def __init__(self, loader: Any, name: str, limits: DumpLimits) -> None:
        import yaml

        self._yaml = yaml
        self._loader = loader
        self._name = name
        self._limits = limits
        self._size = 0
        self._scalar: Callable[[Any], object] = self._make_scalar

    def _error(self, event: Any, message: str) -> ClusterDumpError:
        mark = getattr(event, "start_mark", None)
        line = f":{mark.line + 1}" if mark is not None else ""
        return ClusterDumpError(f"{self._name}{line}: {message}")

    def items(self) -> Iterator[Mapping[str, Any]]:
        yaml = self._yaml
        loader = self._loader
        loader.get_event()  # StreamStart
        document = 0
        while not loader.check_event(yaml.StreamEndEvent):
            loader.get_event()  # DocumentStart
            document += 1
            where = "the document" if document == 1 else f"document {document}"
            if loader.check_event(yaml.MappingStartEvent):
                yield from self._top_mapping(where)
            else:
                event = loader.peek_event()
                value = self._build(1)
                if value is not None:
                    raise self._error(
                        event,
                        f"{where} is {_type_name(value)}, not a Kubernetes object or List; "
                        "expected the output of `kubectl get ... -o yaml`",
                    )
            loader.get_event()  # DocumentEnd
        loader.get_event()

    def _top_mapping(self, where: str) -> Iterator[Mapping[str, Any]]:
        yaml = self._yaml
        loader = self._loader
        start = loader.get_event()
        self._size = 0
        fields: dict[str, object] = {}
        has_items = False
        count = 0
        while not loader.check_event(yaml.MappingEndEvent):
            key_event = loader.peek_event()
            key = self._build(2)
            if not isinstance(key, str):
                raise self._error(key_event, "a key that is not a string")
            if key == "items" and loader.check_event(yaml.SequenceStartEvent):
                has_items = True
                loader.get_event()
                while not loader.check_event(yaml.SequenceEndEvent):
                    count += 1
                    self._size = 0
                    item = self._build(1)
                    yield _checked_item(
                        item, self._name, f"item {count} of items", self._limits, _item_type(fields)
                    )
                loader.get_event()
                self._size = 0
            else:
                fields[key] = self._build(2)
        loader.get_event()
        kind = fields.get("kind")
        mark = getattr(start, "start_mark", None)
        _check_list(fields, has_items, f"{self._name}:{mark.line + 1 if mark else 1}", where)
        if has_items:
            if not isinstance(kind, str) or not kind.endswith("List"):
                raise self._error(
                    start,
                    f"{where} has items but is not a Kubernetes List (kind: {kind!r}); "
                    "expected `kubectl get ... -o yaml`",
                )
            return
        yield _checked_item(fields, self._name, where, self._limits)

    def _build(self, depth: int) -> object:
        yaml = self._yaml
        event = self._loader.get_event()
        if depth > self._limits.max_depth:
            raise self._error(
                event,
                f"nests deeper than {self._limits.max_depth} levels: not an object kubectl prints",
            )
        if isinstance(event, yaml.ScalarEvent):
            self._grow(event, len(event.value))
            return self._scalar(event)
        if isinstance(event, yaml.MappingStartEvent):
            mapping: dict[object, object] = {}
            while not self._loader.check_event(yaml.MappingEndEvent):
                key = self._build(depth + 1)
                value = self._build(depth + 1)
                try:
                    mapping[key] = value
                except TypeError:
                    raise self._error(event, "a mapping key that is not a scalar") from None
                self._grow(event, 2)
            self._loader.get_event()
            return mapping
        if isinstance(event, yaml.SequenceStartEvent):
            sequence: list[object] = []
            while not self._loader.check_event(yaml.SequenceEndEvent):
                sequence.append(self._build(depth + 1))
                self._grow(event, 2)
            self._loader.get_event()
            return sequence
        if isinstance(event, yaml.AliasEvent):
            raise self._error(event, "a YAML alias: kubectl never prints one, and it is refused")
        raise self._error(event, f"unexpected {type(event).__name__}")

    def _grow(self, event: Any, size: int) -> None:
        self._size += size
        if self._size > self._limits.max_object_bytes:
            raise self._error(
                event,
                f"an object larger than {self._limits.max_object_bytes} bytes "
                "(--max-object-size); no Kubernetes object is that large",
            )

    def _make_scalar(self, event: Any) -> object:
        yaml = self._yaml
        tag = event.tag
        if tag is None or tag == "!":
            tag = self._loader.resolve(yaml.ScalarNode, event.value, event.implicit)
        node = yaml.ScalarNode(tag, event.value, event.start_mark, event.end_mark, event.style)
        if tag == "tag:yaml.org,2002:str":
            return event.value
        if tag == "tag:yaml.org,2002:null":
            return None
        if tag == "tag:yaml.org,2002:bool":
            return self._loader.construct_yaml_bool(node)
        if tag == "tag:yaml.org,2002:int":
            return self._loader.construct_yaml_int(node)
        if tag == "tag:yaml.org,2002:float":
            return self._loader.construct_yaml_float(node)
        return event.value  # timestamps, binary...: their text is all triage reads


__all__ = [
    "STDIN",
    "STDIN_NAME",
    "ClusterDumpError",
    "DumpLimits",
    "check_depth",
    "dump_items",
    "open_dump",
    "read_cluster",
]
