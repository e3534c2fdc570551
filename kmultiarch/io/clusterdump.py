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
  An element that the buffer does not hold whole is walked key by key in turn, so that a List
  in a List (dumps joined with ``jq -s``) is streamed as the top-level one is.
- YAML: libyaml's event parser (PyYAML's ``CSafeLoader``) reads the stream in chunks; each item
  of ``items`` is built from its events, scalars resolved as YAML 1.1 resolves them. The bytes
  libyaml reads for one object are counted as it reads them, so that a scalar larger than the
  limit is refused while it is scanned, before libyaml holds it whole. Aliases, which kubectl
  never prints, are refused (no alias bomb).

Keys may come in any order (``jq -S`` and ``yaml.safe_dump`` sort them: ``items`` before
``kind``): the items of the API server's typed lists (``PodList``), which have no apiVersion
and kind of their own, are held in a temporary file (in memory up to 256 KiB, then on disk)
until the list's ``kind`` is read, then handed on with their type.

Every problem is an :class:`ClusterDumpError` (exit 2) that names the file, the line when known,
and what was expected: not JSON or YAML, not a Kubernetes object or List, an item that is not an
object or is larger or deeper than the limits, Lists nested deeper than
:data:`MAX_LIST_NESTING`, a field of the wrong type (the caller's
:class:`~kmultiarch.core.triage.clusterstate.DumpShapeError`)."""

from __future__ import annotations

import codecs
import json
import os
import re
import stat
import sys
import tempfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import IO, Any, BinaryIO

from kmultiarch.core.triage.clusterstate import ClusterState, DumpShapeError
from kmultiarch.errors import InputError

STDIN = "-"
STDIN_NAME = "<stdin>"
_CHUNK = 1 << 16
_WHITESPACE = re.compile(r"[ \t\n\r]*")
#: How deep Lists may nest in Lists (``jq -s`` of dumps, of such joins...).
MAX_LIST_NESTING = 8
#: What the items of a typed list held until its kind is read may take in memory before they
#: go to a temporary file on disk.
_HELD_IN_MEMORY = 1 << 18
#: An element of ``items`` longer than this (in characters) is walked key by key rather than
#: decoded whole: a List in the List is streamed as the top one is.
_WALKED_BEYOND = 1 << 18


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
    --raw /api/v1/pods``: ``kind: PodList``, its items without apiVersion and kind)."""
    kind, api_version = fields.get("kind"), fields.get("apiVersion")
    if _typed_list(kind) and isinstance(kind, str) and isinstance(api_version, str):
        return api_version, kind.removesuffix("List")
    return None


def _typed_list(kind: object) -> bool:
    return isinstance(kind, str) and kind.endswith("List") and kind != "List"


def _is_list_kind(kind: object) -> bool:
    return isinstance(kind, str) and kind.endswith("List")


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


def _items_of(where: str, position: int, nesting: int) -> str:
    """How the ``position``-th item of the List ``where`` is named in messages."""
    return f"item {position} of items" + (f" of {where}" if nesting else "")


def _nesting_checked(nesting: int, at: str, where: str) -> None:
    if nesting >= MAX_LIST_NESTING:
        raise ClusterDumpError(
            f"{at}: {where} is a List in Lists {nesting} deep (at most {MAX_LIST_NESTING}); "
            "give each dump its own --cluster instead of joining them"
        )


class _ListItems:
    """The items of one List as they are read. An item with an apiVersion or a kind is handed
    on at once; one without (a typed list's item) is given the list's item type once the
    list's ``kind`` and ``apiVersion`` are read. The API server writes them first (k8s.io/api
    core/v1 ``PodList``: ``TypeMeta``, ``ListMeta``, then ``Items``), but kubectl prints a List
    with its keys sorted (cli-runtime ``printers.JSONPrinter``: ``json.MarshalIndent`` of a
    map: ``apiVersion``, ``items``, ``kind``), and so do ``jq -S`` and ``yaml.safe_dump``.
    While they are not read, such items are held, a JSON line each, in a temporary file that
    stays in memory up to :data:`_HELD_IN_MEMORY` and goes to disk beyond: what is held in
    memory stays bounded whatever the list's size. ``fields``: the list's other fields, filled
    by the reader as it reads them."""

    def __init__(self, name: str, limits: DumpLimits, fields: Mapping[str, object]) -> None:
        self._name = name
        self._limits = limits
        self._fields = fields
        self._held: IO[bytes] | None = None

    def _type_read(self) -> bool:
        """Whether what an item without a type gets is known: the list's kind, and its
        apiVersion for a typed list (an item of ``kind: List`` without a type is refused)."""
        fields = self._fields
        return "kind" in fields and ("apiVersion" in fields or not _typed_list(fields["kind"]))

    def add(self, item: object, where: str) -> Iterator[Mapping[str, Any]]:
        untyped = isinstance(item, dict) and "kind" not in item and "apiVersion" not in item
        if not untyped or self._type_read():
            yield _checked_item(item, self._name, where, self._limits, _item_type(self._fields))
            return
        if self._held is None:
            self._held = tempfile.SpooledTemporaryFile(max_size=_HELD_IN_MEMORY)  # noqa: SIM115
        line = json.dumps([where, item], ensure_ascii=False, separators=(",", ":"))
        self._held.write(line.encode("utf-8", "surrogatepass") + b"\n")

    def rest(self) -> Iterator[Mapping[str, Any]]:
        """The items held, typed now that the whole list was read (refused when it is not a
        typed list: an item of ``kind: List`` needs its own apiVersion and kind)."""
        held, self._held = self._held, None
        if held is None:
            return
        item_type = _item_type(self._fields)
        with held:
            held.seek(0)
            for line in held:
                where, item = json.loads(line.decode("utf-8", "surrogatepass"))
                yield _checked_item(item, self._name, where, self._limits, item_type)


def _list_checked(fields: Mapping[str, object], at: str, where: str) -> None:
    """An object with a list of ``items`` is a List (``kind: List``, ``PodList``...), whatever
    the order of its keys, or it is refused."""
    kind = fields.get("kind")
    if not _is_list_kind(kind):
        raise ClusterDumpError(
            f"{at}: {where} has items but is not a Kubernetes List (kind: {kind!r}); "
            "expected `kubectl get ... -o json` (or -o yaml)"
        )


def _read_whole(
    fields: dict[str, object],
    items: _ListItems | None,
    listed: _ListItems | None,
    name: str,
    limits: DumpLimits,
    at: str,
    where: str,
) -> Iterator[Mapping[str, Any]]:
    """What an object walked key by key gives once read whole: a List's items (those held
    until its kind was read), or the object itself, handed to ``listed``, the List it is an
    item of, if any."""
    _check_list(fields, items is not None, at, where)
    if items is not None:
        _list_checked(fields, at, where)
        yield from items.rest()
    elif listed is not None:
        yield from listed.add(fields, where)
    else:
        yield _checked_item(fields, name, where, limits)


def _expand(
    value: object,
    name: str,
    where: str,
    nesting: int,
    listed: _ListItems,
    limits: DumpLimits,
    at: str,
) -> Iterator[Mapping[str, Any]]:
    """The Kubernetes objects of an item decoded whole: itself, or the items of a List in the
    List (``jq -s`` of two dumps), each handed to the List it is an item of. As the walk of a
    large one, whatever the order of its keys: an object with a list of ``items`` is a List
    (``kind: List``, ``PodList``...) or wrong."""
    items = value.get("items") if isinstance(value, dict) else None
    if not isinstance(value, dict) or not isinstance(items, list):
        if isinstance(value, dict):
            _check_list(value, False, at, where)
        yield from listed.add(value, where)
        return
    _list_checked(value, at, where)
    _nesting_checked(nesting, at, where)
    inner = _ListItems(name, limits, value)
    for position, element in enumerate(items, 1):
        yield from _expand(
            element, name, _items_of(where, position, nesting), nesting + 1, inner, limits, at
        )
    yield from inner.rest()  # those without a type, refused when it has none


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
        # Line breaks counted so far in the buffer (up to _counted): lines are counted once
        # as the reading goes forward, not from the buffer's start for every value.
        self._counted = 0
        self._counted_lines = 0
        self._eof = False

    # The buffer -----------------------------------------------------------------------------

    def _fill(self, at_least: int = _CHUNK) -> bool:
        """Read ``at_least`` more characters (fewer at the end); False at the end."""
        if self._eof:
            return False
        if self._pos > _CHUNK:
            self._lines_before += self._newlines(self._pos)
            self._buffer = self._buffer[self._pos :]
            self._pos = 0
            self._counted = self._counted_lines = 0
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

    def _newlines(self, position: int) -> int:
        """The line breaks in the buffer before ``position``."""
        if position < self._counted:
            return self._buffer.count("\n", 0, position)  # an error's position, behind
        self._counted_lines += self._buffer.count("\n", self._counted, position)
        self._counted = position
        return self._counted_lines

    def _line(self, position: int) -> int:
        return self._lines_before + self._newlines(position) + 1

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

    def _too_deep(self, line: int, what: str) -> ClusterDumpError:
        return ClusterDumpError(
            f"{self._name}:{line}: {what} nests deeper than the JSON decoder goes: not an "
            f"object kubectl prints (limit {self._limits.max_depth} levels)"
        )

    def _value(self, what: str) -> object:
        """The next JSON value, decoded whole; the buffer grows only while it is incomplete."""
        self._peek()
        start_line = self._line(self._pos)
        while True:
            try:
                value, end = self._decoder.raw_decode(self._buffer, self._pos)
            except json.JSONDecodeError as exc:
                held = len(self._buffer) - self._pos
                if held > self._limits.max_object_bytes:
                    raise self._too_large(start_line, what) from None
                if self._eof:
                    raise self._error(f"{exc.msg} (in {what})", exc.pos) from None
                self._fill(max(_CHUNK, held))  # doubling: each retry reads as much again
                continue
            except RecursionError:
                raise self._too_deep(start_line, what) from None
            if end == len(self._buffer) and not self._eof and not isinstance(value, dict | list):
                self._fill()  # a number or literal may go on in the next chunk
                continue
            if end - self._pos > self._limits.max_object_bytes:
                raise self._too_large(start_line, what)
            self._pos = end
            return value

    def _whole(self, what: str) -> object | None:
        """The object that starts here, decoded whole (in C) when it takes at most
        :data:`_WALKED_BEYOND` characters (every real object but the largest), else None,
        nothing consumed: it is walked key by key instead (a List in the List, or an object
        the limit refuses), and the walk says what is wrong with one that does not decode."""
        while True:
            try:
                value, end = self._decoder.raw_decode(self._buffer, self._pos)
            except json.JSONDecodeError:
                held = len(self._buffer) - self._pos
                if self._eof or held > min(_WALKED_BEYOND, self._limits.max_object_bytes):
                    return None
                self._fill(max(_CHUNK, held))  # doubling, as _value does
                continue
            except RecursionError:
                raise self._too_deep(self._line(self._pos), what) from None
            # A List in the List is no object: its items are each held to the limit (_expand).
            is_list = (
                isinstance(value, dict)
                and _is_list_kind(value.get("kind"))
                and isinstance(value.get("items"), list)
            )
            if end - self._pos > self._limits.max_object_bytes and not is_list:
                raise self._too_large(self._line(self._pos), what)
            self._pos = end
            whole: object = value
            return whole

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
            yield from self._object("the object" if documents == 1 else f"object {documents}")

    def _object(
        self, where: str, nesting: int = 0, listed: _ListItems | None = None
    ) -> Iterator[Mapping[str, Any]]:
        """The Kubernetes objects of the object that starts here, walked key by key: itself
        (handed to ``listed``, the List it is an item of, if any), or a List's items."""
        start = self._line(self._pos)
        at = f"{self._name}:{start}"
        self._expect("{", "'{'")
        fields: dict[str, object] = {}
        held = 0
        items: _ListItems | None = None
        if self._peek() == "}":
            self._pos += 1
        else:
            while True:
                key = self._value("a key")
                if not isinstance(key, str):
                    raise self._error("an object key that is not a string")
                self._expect(":", "':'")
                if key == "items" and self._peek() == "[":
                    _nesting_checked(nesting, at, where)
                    items = items or _ListItems(self._name, self._limits, fields)
                    yield from self._elements(where, nesting, items)
                else:
                    before = self._pos
                    fields[key] = self._value(
                        where if listed is not None else f"the value of {key!r}"
                    )
                    held += self._pos - before
                    if held > self._limits.max_object_bytes:
                        raise self._too_large(start, where)
                if self._expect(",}", "',' or '}'") == "}":
                    break
        yield from _read_whole(fields, items, listed, self._name, self._limits, at, where)

    def _elements(self, where: str, nesting: int, items: _ListItems) -> Iterator[Mapping[str, Any]]:
        """The objects of the List's ``items``: each element decoded whole when the buffer
        holds it (the common case, in C), else walked."""
        self._expect("[", "'['")
        if self._peek() == "]":
            self._pos += 1
            return
        position = 0
        while True:
            position += 1
            what = _items_of(where, position, nesting)
            at = f"{self._name}:{self._line(self._pos)}"
            if self._peek() == "{":
                whole = self._whole(what)
                if whole is None:
                    yield from self._object(what, nesting + 1, items)
                else:
                    yield from _expand(
                        whole, self._name, what, nesting + 1, items, self._limits, at
                    )
            else:
                yield from items.add(self._value(what), what)
            if self._expect(",]", "',' or ']'") == "]":
                return


# --- YAML -----------------------------------------------------------------------------------


class _CountedStream:
    """The stream libyaml reads, with the bytes it read for the object being built counted:
    libyaml holds a scalar whole (and PyYAML copies it into a str) before the reader sees its
    event, so a scalar larger than the limit is refused here, while it is scanned, with some
    room for what libyaml reads ahead (16 KiB a read)."""

    def __init__(self, stream: _Prefixed, name: str, limits: DumpLimits) -> None:
        self._stream = stream
        self._name = name
        self._limit = limits.max_object_bytes + 2 * _CHUNK
        self._limits = limits
        self._read = 0
        self._since = 0
        self._what = "the document"
        self._line = 1

    def start(self, what: str, line: int) -> None:
        """An object starts about here (``line``): count its bytes from now."""
        self._since, self._what, self._line = self._read, what, line

    def read(self, size: int = -1) -> bytes:
        data = self._stream.read(size)
        self._read += len(data)
        if self._read - self._since > self._limit:
            raise ClusterDumpError(
                f"{self._name}:{self._line}: {self._what} is larger than "
                f"{self._limits.max_object_bytes} bytes (--max-object-size); no Kubernetes "
                "object is that large"
            )
        return data


def _yaml_items(stream: _Prefixed, name: str, limits: DumpLimits) -> Iterator[Mapping[str, Any]]:
    import yaml

    counted = _CountedStream(stream, name, limits)
    loader = yaml.CSafeLoader(counted)  # reads the stream a chunk at a time
    builder = _YamlBuilder(loader, counted, name, limits)
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

    def __init__(self, loader: Any, counted: _CountedStream, name: str, limits: DumpLimits) -> None:
        import yaml

        self._yaml = yaml
        self._loader = loader
        self._counted = counted
        self._name = name
        self._limits = limits
        self._size = 0
        self._line = 1  # about where the reading is: the line of the last event
        self._scalar: Callable[[Any], object] = self._make_scalar

    def _error(self, event: Any, message: str) -> ClusterDumpError:
        mark = getattr(event, "start_mark", None)
        line = f":{mark.line + 1}" if mark is not None else ""
        return ClusterDumpError(f"{self._name}{line}: {message}")

    def _seen(self, event: Any) -> Any:
        mark = getattr(event, "end_mark", None)
        if mark is not None:
            self._line = mark.line + 1
        return event

    def items(self) -> Iterator[Mapping[str, Any]]:
        yaml = self._yaml
        loader = self._loader
        loader.get_event()  # StreamStart
        document = 0
        while True:
            where = "the document" if document == 0 else f"document {document + 1}"
            self._counted.start(where, self._line)
            if loader.check_event(yaml.StreamEndEvent):
                break
            self._seen(loader.get_event())  # DocumentStart
            document += 1
            if loader.check_event(yaml.MappingStartEvent):
                yield from self._mapping(where)
            else:
                event = loader.peek_event()
                value = self._build(1)
                if value is not None:
                    raise self._error(
                        event,
                        f"{where} is {_type_name(value)}, not a Kubernetes object or List; "
                        "expected the output of `kubectl get ... -o yaml`",
                    )
            self._seen(loader.get_event())  # DocumentEnd
        loader.get_event()

    def _mapping(
        self, where: str, nesting: int = 0, listed: _ListItems | None = None
    ) -> Iterator[Mapping[str, Any]]:
        """The Kubernetes objects of the mapping that starts here, walked key by key: itself
        (handed to ``listed``, the List it is an item of, if any), or a List's items."""
        yaml = self._yaml
        loader = self._loader
        start = self._seen(loader.get_event())
        mark = getattr(start, "start_mark", None)
        at = f"{self._name}:{mark.line + 1 if mark else 1}"
        outer, self._size = self._size, 0
        fields: dict[str, object] = {}
        items: _ListItems | None = None
        while not loader.check_event(yaml.MappingEndEvent):
            key_event = loader.peek_event()
            key = self._build(2)
            if not isinstance(key, str):
                raise self._error(key_event, "a key that is not a string")
            if key == "items" and loader.check_event(yaml.SequenceStartEvent):
                _nesting_checked(nesting, at, where)
                items = items or _ListItems(self._name, self._limits, fields)
                yield from self._elements(where, nesting, items)
                self._counted.start(where, self._line)
            else:
                fields[key] = self._build(2)
        self._seen(loader.get_event())
        self._size = outer
        yield from _read_whole(fields, items, listed, self._name, self._limits, at, where)

    def _elements(self, where: str, nesting: int, items: _ListItems) -> Iterator[Mapping[str, Any]]:
        yaml = self._yaml
        loader = self._loader
        self._seen(loader.get_event())  # SequenceStart
        mine = self._size
        position = 0
        while True:
            what = _items_of(where, position + 1, nesting)
            self._counted.start(what, self._line)
            if loader.check_event(yaml.SequenceEndEvent):
                break
            position += 1
            if loader.check_event(yaml.MappingStartEvent):
                yield from self._mapping(what, nesting + 1, items)
            else:
                self._size = 0
                yield from items.add(self._build(1), what)
        self._seen(loader.get_event())
        self._size = mine

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
    "MAX_LIST_NESTING",
    "check_depth",
    "dump_items",
    "open_dump",
    "read_cluster",
]
