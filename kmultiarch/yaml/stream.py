"""Read multi-document YAML streams fast, keeping each document's exact text.

The stream is cut into document segments, one for each document libyaml reads
(:mod:`kmultiarch.yaml.segments`: on marker lines, ``---`` and ``...`` at column 0, which YAML
forbids inside any scalar, and on directives libyaml's scanner finds). Each segment is composed by
libyaml (PyYAML's ``CParser``), which gives nodes with character positions into the segment;
one Python pass over the nodes then builds the plain value and checks what Kubernetes would
refuse or what could hurt us (duplicate keys, non-standard tags, alias bombs). Concatenating the
segments gives the input back, so documents that are not edited are written out byte for byte.

Every input problem is a :class:`~kmultiarch.errors.ManifestStreamError` whose message starts
with ``FILE:LINE:`` (the line counted in the source, 1-based).
"""

from __future__ import annotations

import contextlib
import gc
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, ClassVar, NoReturn

import yaml
from yaml._yaml import CParser
from yaml.constructor import SafeConstructor
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode
from yaml.resolver import Resolver

from kmultiarch.errors import ManifestStreamError
from kmultiarch.yaml.segments import LINE_BREAK, has_exotic_line_breaks, split_segments

__all__ = [
    "MAX_DEPTH",
    "MAX_DOCUMENT_BYTES",
    "MAX_ALIAS_VISITS",
    "SourceDocument",
    "cyclic_gc_paused",
    "decode_source",
    "has_exotic_line_breaks",
    "join_documents",
    "read_stream",
]

#: Largest document accepted, in bytes (etcd stores objects of at most 1.5 MB).
MAX_DOCUMENT_BYTES = 8 * 1024 * 1024
#: Deepest nesting accepted. libyaml's composer recurses in C and crashes on very deep input.
MAX_DEPTH = 1000
#: Nodes that may be visited again through aliases, over a whole stream ("billion laughs").
MAX_ALIAS_VISITS = 1_000_000

_TAG_PREFIX = "tag:yaml.org,2002:"
_STR = _TAG_PREFIX + "str"
_INT = _TAG_PREFIX + "int"
_FLOAT = _TAG_PREFIX + "float"
_BOOL = _TAG_PREFIX + "bool"
_NULL = _TAG_PREFIX + "null"
_MAP = _TAG_PREFIX + "map"
_SEQ = _TAG_PREFIX + "seq"
_MERGE = _TAG_PREFIX + "merge"
# Read as the string they are written as: Kubernetes (go-yaml) does the same for timestamps,
# and binary only ever appears as base64 text in a manifest.
_STRING_LIKE_TAGS = frozenset(
    {
        _STR,
        _TAG_PREFIX + "timestamp",
        _TAG_PREFIX + "binary",
        _TAG_PREFIX + "value",
        _TAG_PREFIX + "yaml",
    }
)

# Characters YAML does not allow in a stream (C0 and C1 controls but tab and line breaks).
_NOT_PRINTABLE = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x84\x86-\x9f\ufffe\uffff]")
_DEEP_INDENT = " " * 256
_DEEP_INDENT_ALLOWANCE = 256 + 2

_SAFE_CONSTRUCTOR = SafeConstructor()
# Tags of plain scalars already resolved (the resolver's regular expressions are the costly part).
_PLAIN_SCALAR_TAGS: dict[str, str] = {}
_PLAIN_SCALAR_TAGS_KEPT = 50_000


#: Called with a document's text, its composed root node and its value, once, when it is read.
OnComposed = Callable[[str, Node, object], object]


@dataclass(frozen=True)
class InputSource:
    """One input: a file's text, or stdin's."""

    name: str
    text: str


_UNREAD: Any = object()


class SourceDocument:
    """One document of a stream, with its exact text and what it means.

    ``value`` is None when the document is empty: comments only, or an explicit ``---`` with
    nothing after it. ``has_aliases_or_merges`` is true when a node is reached twice (aliases)
    or a mapping uses a merge key: the node tree then does not map one-to-one onto the text;
    ``has_merges`` only for the latter.

    ``resource_type`` is the document's top-level (``apiVersion``, ``kind``) when its value or a
    scan of its text (:func:`provable_type`) tells, else None. A document whose type the scan
    proved may be composed only when its ``value`` is first asked for: readers that need just
    some kinds (the engine: kinds that hold pod templates) never pay for the rest, mostly
    CustomResourceDefinitions of hundreds of KB. Problems in such a document's YAML surface
    when its value is read.
    """

    __slots__ = (
        "_aliases",
        "_merges",
        "_on_composed",
        "_value",
        "derived",
        "index",
        "resource_type",
        "source",
        "start_line",
        "text",
    )

    def __init__(
        self,
        source: str,
        index: int,
        start_line: int,
        text: str,
        value: object = _UNREAD,
        has_aliases_or_merges: bool = False,
        resource_type: tuple[str, str] | None = None,
        has_merges: bool = False,
        on_composed: OnComposed | None = None,
        derived: object = None,
    ) -> None:
        self.source = source
        self.index = index
        self.start_line = start_line
        self.text = text
        self.resource_type = resource_type
        self._value = value
        self._aliases = has_aliases_or_merges
        self._merges = has_merges
        self._on_composed = on_composed
        #: What ``on_composed`` derived from the document's one composition (for the engine:
        #: its workloads, and the positions an editor needs so as not to compose it again).
        self.derived = derived

    def _read(self) -> None:
        read = _StreamReader(self.source).read_document(
            self.text, self.index, self.start_line, self._on_composed
        )
        self._value = read._value
        self._aliases = read._aliases
        self._merges = read._merges
        self.derived = read.derived
        self._on_composed = None

    @property
    def value(self) -> object:
        if self._value is _UNREAD:
            if gc.isenabled():
                with cyclic_gc_paused():
                    self._read()
            else:
                self._read()  # a caller paused the collector for all it reads
        return self._value

    @property
    def has_aliases_or_merges(self) -> bool:
        if self._value is _UNREAD:
            self._read()
        return self._aliases

    @property
    def has_merges(self) -> bool:
        """Whether a mapping uses a merge key (``<<``): its entries then do not map one-to-one
        onto its value's keys."""
        if self._value is _UNREAD:
            self._read()
        return self._merges

    @property
    def node(self) -> Node | None:
        """The composed root node, marks relative to ``text``; None if the document is empty.

        Composed anew on each access, not kept: the nodes of a stream take about 30 bytes of
        memory per byte of YAML, and millions of live objects slow every garbage collection.
        """
        with cyclic_gc_paused():
            return _StreamReader(self.source).compose(self.text, self.index, self.start_line)

    def __repr__(self) -> str:
        return f"SourceDocument({self.source!r}, index={self.index}, line={self.start_line})"


# A line at column 0 that a scan cannot read: anything but a blank line, a comment, a bare
# document marker, a block sequence entry (kubectl and Helm write a mapping's sequences at its
# key's indentation), or a plain simple key (a letter or digit first) followed by ':' and a
# space, a tab or the line's end.
_READABLE_TOP_LINE = (
    r"(?:[ \r\n]|#|-(?: |\r?$)|(?:---|\.\.\.)[ \t]*(?:#.*)?\r?$"
    r"|[A-Za-z0-9_][A-Za-z0-9_./-]*:(?:[ \t]|\r?$))"
)
# Led by a literal line break, which the regular expression engine finds fast: 6x the speed
# of a '^' that is tried at every character.
_UNREADABLE_LATER_LINE = re.compile(rf"\n(?!{_READABLE_TOP_LINE}).", re.MULTILINE)
# Lines before the root's first key: blank, comments (at any indentation) and a bare '---'.
_LEADING_NOTHING = re.compile(r"(?:[ ]*(?:#[^\n]*)?\r?\n|---[ ]*(?:#[^\n]*)?\r?\n)*")
# The root's first key: a plain simple key at column 0, so the root is a block mapping whose
# keys all sit at column 0 (libyaml's block indentation; an indented root let a quoted
# scalar's continuation lines at column 0 pose as root keys).
_ROOT_FIRST_KEY = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_./-]*:(?:[ ]|\r?\n|\Z)")
# Lines that cannot open anything that spans lines: no quote (a quoted scalar may go on over
# lines at any column, libyaml does not check their indentation), no flow bracket, anchor,
# alias, tag, block scalar or explicit key; a '#' only where it opens a comment (at the line's
# start or after a space). ('%', '@' and '`' open nothing: at a scalar's start they are errors.)
# Multi-line plain scalars and block scalars never reach column 0 under a root at column 0, so
# after such lines every line at column 0 is a key of the root.
_PLAIN_LINES = re.compile(r"(?:[^\n\"'\[\]{}&*!|>?\t#]*(?:(?<![^ \n])#[^\n]*)?\n)*")
# A block scalar's header: a plain line whose value is '|' or '>' (with a chomping indicator,
# no indentation indicator). Group 1 runs to the column of the key, or of the last dash when
# the scalar is a sequence item: its content is more indented than that.
_BLOCK_SCALAR_HEADER = re.compile(
    r"((?:[ ]*- +)*[ ]*)([A-Za-z0-9_][A-Za-z0-9_./-]*:[ ]+)?[|>][-+]?(?:[ ]+#[^\n]*)?\r?\n"
)
# A line whose value is a quoted scalar closed on the same line (``key: "true"``, ``- 'a'``);
# a double-quoted one may not end in a backslash (an escaped line break goes on).
_QUOTED_VALUE_LINE = re.compile(
    r"[ ]*(?:- +)*(?:[A-Za-z0-9_][A-Za-z0-9_./-]*:[ ]+)?"
    r"(?:\"(?:[^\"\\\r\n]|\\[^\r\n])*\"|'(?:[^'\r\n]|'')*')"
    r"(?:[ ]+#[^\n]*|[ ]*)\r?\n"
)
_BLANK_LINES = re.compile(r"(?:[ ]*\r?\n)*")
_BLOCK_CONTENTS: dict[int, re.Pattern[str]] = {}
_TYPE_VALUES = {
    "apiVersion": re.compile(r"[ \t]+([A-Za-z0-9][A-Za-z0-9./-]*)[ \t]*(?:#.*)?\r?"),
    "kind": re.compile(r"[ \t]+([A-Za-z][A-Za-z0-9]*)[ \t]*(?:#.*)?\r?"),
}


def _resource_type(value: object) -> tuple[str, str] | None:
    if not isinstance(value, dict):
        return None
    api_version, kind = value.get("apiVersion"), value.get("kind")
    if isinstance(api_version, str) and isinstance(kind, str):
        return api_version, kind
    return None


def provable_type(text: str) -> tuple[str, str] | None:
    """The top-level ``apiVersion`` and ``kind`` of the document ``text``, when its text alone
    proves them; else None.

    Sound by construction, so that a reader may skip composing documents of kinds it does not
    need; it proves a type only when the YAML grammar leaves no other reading:

    - the root is a block mapping at column 0: its first content line (after blank lines,
      comments and a bare ``---``) is a plain simple key at column 0;
    - every line before the ``apiVersion:`` and ``kind:`` lines is plain (:data:`_PLAIN_LINES`):
      nothing that could span lines is open when they come, so they are keys of the root;
    - each is the only such line at column 0, with a plain value that ends on its line;
    - every later line at column 0 is one a scan can read (no quoted or explicit key that could
      be a second ``kind``), and nothing looks like a tag, which the reader must refuse.

    Tabs, exotic line breaks, flow or JSON documents, directives: None (compose to know).
    Tested against the full parse with hypothesis (tests/unit/test_provable_type.py).
    """
    if "\t" in text or has_exotic_line_breaks(text):
        return None
    first_key = _LEADING_NOTHING.match(text).end()  # type: ignore[union-attr]
    if not _ROOT_FIRST_KEY.match(text, first_key):
        return None
    if _UNREADABLE_LATER_LINE.search(text, first_key) or _may_have_tag(text):
        return None
    found: list[str] = []
    last_line = 0
    for key, pattern in _TYPE_VALUES.items():
        located = _top_level_value(text, key, pattern)
        if located is None:
            return None
        found.append(located[0])
        last_line = max(last_line, located[1])
    if not _plain_prefix(text, first_key, last_line):
        return None
    return found[0], found[1]


def _plain_prefix(text: str, start: int, end: int) -> bool:
    """Whether the lines of ``text[start:end]`` (whole lines) leave nothing open that spans
    lines: plain lines (:data:`_PLAIN_LINES`), values quoted and closed on their line, and
    block scalars whose header is plain and
    whose content (every line indented at least as its first, blank lines too) is skipped.

    A block scalar's content is more indented than the collection that holds it (libyaml
    takes the larger of the first line's indentation and that of leading blank lines), so it
    ends before any line at column 0; only a header of the simplest form is taken (no
    indentation indicator), and content more indented than its key or dash.
    """
    position = start
    while True:
        position = _PLAIN_LINES.match(text, position, end).end()  # type: ignore[union-attr]
        if position == end:
            return True
        quoted = _QUOTED_VALUE_LINE.match(text, position, end)
        if quoted is not None:
            position = quoted.end()
            continue
        header = _BLOCK_SCALAR_HEADER.match(text, position, end)
        if header is None:
            return False
        lead = header.group(1)
        if not header.group(2) and "-" not in lead:
            return False  # a header alone on its line: its collection's indentation is unknown
        parent_column = len(lead) if header.group(2) else len(lead.rstrip(" ")) - 1
        blank = _BLANK_LINES.match(text, header.end(), end)
        assert blank is not None  # matches the empty string
        widest_blank = max(
            (len(line.rstrip("\r")) for line in blank.group().split("\n")), default=0
        )
        content = header.end() + len(blank.group())
        column = _indentation(text, content, end)
        if column == 0:
            position = content  # an empty scalar: a line at column 0 follows
            continue
        if column <= parent_column or widest_blank > column:
            return False
        position = _block_content(column).match(text, content, end).end()  # type: ignore[union-attr]


def _may_have_tag(text: str) -> bool:
    """Whether ``text`` may hold a tag (``!!python/object``, ``!!set``, ``key: !Ref``,
    ``- !Sub``, a ``!`` opening a line): such documents are composed even when their type is
    proven, so that the tags kmultiarch refuses are refused in every document. A ``!`` after a
    comma or a ``?`` is taken for CEL's "not" (CRD validation rules are full of them); a tag
    there goes through, in a document kmultiarch does not touch."""
    position = text.find("!")
    while position >= 0:
        if text.startswith("!!", position):
            return True
        before = text[text.rfind("\n", 0, position) + 1 : position]
        stripped = before.rstrip(" \t")
        if not stripped or (stripped[-1] in ":-" and len(stripped) < len(before)):
            return True
        position = text.find("!", position + 1)
    return False


def _indentation(text: str, position: int, end: int) -> int:
    """The number of spaces at ``position`` (a line's start), within ``text[:end]``."""
    column = position
    while column < end and text[column] == " ":
        column += 1
    return column - position


def _block_content(column: int) -> re.Pattern[str]:
    """Lines indented by ``column`` spaces or more, and blank lines."""
    pattern = _BLOCK_CONTENTS.get(column)
    if pattern is None:
        pattern = re.compile(rf"(?:[ ]{{{column}}}[^\n]*\n|[ ]*\r?\n)*")
        _BLOCK_CONTENTS[column] = pattern
    return pattern


def _top_level_value(text: str, key: str, pattern: re.Pattern[str]) -> tuple[str, int] | None:
    """The value of the one column-0 line ``key: value`` and where that line starts, if there
    is exactly one and its value is a plain scalar ``pattern`` matches that ends on its line."""
    needle = f"\n{key}:"
    if text.startswith(needle[1:]):
        start = 0
    else:
        start = text.find(needle) + 1
        if start == 0:
            return None
    if text.find(needle, start) >= 0:
        return None  # twice: the full parse says which (or that it is a duplicate key)
    end = text.find("\n", start)
    line_end = len(text) if end < 0 else end
    value = pattern.fullmatch(text, start + len(key) + 1, line_end)
    if value is None:
        return None
    following = text[line_end + 1 :].lstrip("\r\n")
    if following[:1] == " ":
        return None  # the value might go on (a multi-line plain scalar)
    return value.group(1), start


def decode_source(data: bytes, source: str) -> str:
    """Decode a YAML file's bytes as strict UTF-8; refuse UTF-16/32 and binary data."""
    if data.startswith((b"\x00\x00\xfe\xff", b"\xff\xfe\x00\x00")):
        raise ManifestStreamError(
            f"{source}:1: the file is UTF-32 encoded; convert it to UTF-8 "
            "(e.g. iconv -f UTF-32 -t UTF-8)"
        )
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise ManifestStreamError(
            f"{source}:1: the file is UTF-16 encoded; convert it to UTF-8 "
            "(e.g. iconv -f UTF-16 -t UTF-8)"
        )
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise ManifestStreamError(
            f"{source}:{line}: not valid UTF-8 (byte 0x{data[exc.start]:02x} at offset "
            f"{exc.start}); kmultiarch reads UTF-8 YAML: is this a text file?"
        ) from exc
    bad = _NOT_PRINTABLE.search(text) if _may_hold_unprintable(data) else None
    if bad is not None:
        line = text.count("\n", 0, bad.start()) + 1
        raise ManifestStreamError(
            f"{source}:{line}: control character U+{ord(bad.group()):04X} is not allowed in "
            "YAML: is this a binary file?"
        )
    return text


def _may_hold_unprintable(data: bytes) -> bool:
    """Whether the UTF-8 ``data`` may hold a character :data:`_NOT_PRINTABLE` refuses, told
    from its bytes at C speed (the regular expression takes 2.6 ms a MB). Its ASCII characters
    are exactly the ASCII bytes other than printable ones, tab, LF and CR; its others are C1
    controls (U+0080 to U+009F: 0xC2 then a continuation byte, and 0xC2 is only ever that lead
    byte in valid UTF-8) and U+FFFE, U+FFFF (EF BF BE, EF BF BF)."""
    rest = data.translate(None, _PRINTABLE_ASCII)
    if not rest:
        return False
    return (
        bool(rest.translate(None, _NON_ASCII))
        or b"\xc2" in rest
        or b"\xef\xbf\xbe" in data
        or b"\xef\xbf\xbf" in data
    )


_PRINTABLE_ASCII = bytes(range(0x20, 0x7F)) + b"\t\n\r"
_NON_ASCII = bytes(range(0x80, 0x100))


def join_documents(texts: list[str]) -> str:
    """Reassemble a stream from document texts: the input again when nothing was changed."""
    return "".join(texts)


def read_stream(
    text: str,
    source: str,
    *,
    lazy_types: Callable[[str, str], bool] | None = None,
    max_document_bytes: int | None = None,
    on_composed: OnComposed | None = None,
) -> list[SourceDocument]:
    """Cut ``text`` into documents, compose and check each one.

    With ``lazy_types``, a document whose apiVersion and kind :func:`provable_type` proves and
    for which ``lazy_types(api_version, kind)`` is true is not composed until its value is asked
    for. ``on_composed(text, root, value)``, called once per document composed without aliases
    or merge keys, returns what is kept as its ``derived`` (the node tree itself is not kept:
    about 35 bytes of memory per byte of YAML).
    A leading byte order mark is dropped (it is the only text not kept in a segment).
    """
    if text.startswith("\ufeff"):
        text = text[1:]
    exotic_breaks = has_exotic_line_breaks(text)
    reader = _StreamReader(source, max_document_bytes)
    documents: list[SourceDocument] = []
    line = 1
    with cyclic_gc_paused():
        for index, segment in enumerate(split_segments(text, exotic_breaks)):
            proven = provable_type(segment) if lazy_types is not None else None
            if proven is not None and lazy_types is not None and lazy_types(*proven):
                reader.check_size(segment, index, line)
                documents.append(
                    SourceDocument(
                        source,
                        index,
                        line,
                        segment,
                        resource_type=proven,
                        on_composed=on_composed,
                    )
                )
            else:
                documents.append(reader.read_document(segment, index, line, on_composed))
            line += _count_line_breaks(segment, exotic_breaks)
    return documents


def read_single_document(text: str, source: str) -> object:
    """The one document of a configuration file (a policy, a lock file), read with the same
    checks as manifests: duplicate keys, unknown tags, aliases and depth. Empty gives None."""
    values = [
        document.value for document in read_stream(text, source) if document.value is not None
    ]
    if len(values) > 1:
        raise ManifestStreamError(
            f"{source}: holds {len(values)} YAML documents; expected exactly one"
        )
    return values[0] if values else None


@contextlib.contextmanager
def cyclic_gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector (reference counting still frees everything).

    Composing allocates millions of small objects without reference cycles; the collector
    would scan them, and every object alive, again and again: it triples the time of a large
    stream. Nested uses are fine; the collector's state is restored on the way out.
    """
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.enable()


def _count_line_breaks(text: str, exotic_breaks: bool) -> int:
    if exotic_breaks:
        return sum(1 for _ in LINE_BREAK.finditer(text))
    return text.count("\n")


class _ComposingLoader(CParser):
    """libyaml's parser and composer with a lean resolver (YAML 1.1 rules, as PyYAML)."""

    _resolvers_by_first_char: ClassVar[dict[str, list[tuple[str, re.Pattern[str]]]]] = {
        first: list(resolvers) for first, resolvers in Resolver.yaml_implicit_resolvers.items()
    }

    def resolve(self, kind: type[Node], value: str, implicit: tuple[bool, bool]) -> str:
        if kind is ScalarNode:
            if implicit[0]:
                # Manifests repeat their plain scalars (keys above all): remember their tags.
                tag = _PLAIN_SCALAR_TAGS.get(value)
                if tag is None:
                    tag = _STR
                    for candidate, pattern in self._resolvers_by_first_char.get(value[:1], ()):
                        if pattern.match(value):
                            tag = candidate
                            break
                    if len(_PLAIN_SCALAR_TAGS) < _PLAIN_SCALAR_TAGS_KEPT and len(value) < 64:
                        _PLAIN_SCALAR_TAGS[value] = tag
                return tag
            return _STR
        return _SEQ if kind is SequenceNode else _MAP

    # The composer calls these for every node; path resolvers are not used, and a builtin
    # that ignores its arguments costs less than a Python method.
    descend_resolver: ClassVar[object] = {}.get
    ascend_resolver: ClassVar[object] = tuple


def _compose_document(text: str) -> Node | None:
    """Compose the single document in ``text`` with libyaml (no depth guard: see read_stream)."""
    loader = _ComposingLoader(text)
    try:
        node: Node | None = loader.get_single_node()
    finally:
        loader.dispose()
    return node


class _StreamReader:
    """Reads the documents of one stream; holds what is shared between them (alias budget)."""

    def __init__(self, source: str, max_document_bytes: int | None = None) -> None:
        self.source = source
        self.alias_visits_left = MAX_ALIAS_VISITS
        self.max_document_bytes = max_document_bytes or MAX_DOCUMENT_BYTES

    def fail(self, index: int, start_line: int, line_in_document: int, reason: str) -> NoReturn:
        raise ManifestStreamError(
            f"{self.source}:{start_line + line_in_document}: document {index + 1}: {reason}"
        )

    def read_document(
        self, text: str, index: int, start_line: int, on_composed: OnComposed | None = None
    ) -> SourceDocument:
        self.check_size(text, index, start_line)
        node = self.compose(text, index, start_line)
        if node is None:
            return SourceDocument(self.source, index, start_line, text, None)
        builder = _ValueBuilder(
            self,
            index,
            start_line,
            track_aliases="&" in text and "*" in text,
            may_merge="<<" in text,
        )
        value = builder.build(node)
        resource_type = _resource_type(value)
        hint = None
        if on_composed is not None and not (builder.saw_alias or builder.saw_merge):
            hint = on_composed(text, node, value)
        return SourceDocument(
            self.source,
            index,
            start_line,
            text,
            value,
            builder.saw_alias or builder.saw_merge,
            resource_type,
            builder.saw_merge,
            derived=hint,
        )

    def check_size(self, text: str, index: int, start_line: int) -> None:
        limit = self.max_document_bytes
        if len(text) * 4 > limit and len(text.encode("utf-8")) > limit:
            self.fail(
                index,
                start_line,
                0,
                f"the document is {len(text.encode('utf-8'))} bytes, more than the "
                f"{limit} accepted (Kubernetes stores objects of at most 1.5 MB); "
                "split it",
            )

    def compose(self, text: str, index: int, start_line: int) -> Node | None:
        """The document's root node (None if it is empty), or a ManifestStreamError."""
        self.check_depth(text, index, start_line)
        try:
            node = _compose_document(text)
        except yaml.MarkedYAMLError as exc:
            mark = exc.problem_mark or exc.context_mark
            problem = " ".join(part for part in (exc.context, exc.problem) if part)
            self.fail(
                index,
                start_line,
                0 if mark is None else mark.line,
                f"invalid YAML: {problem or exc}; fix the YAML syntax",
            )
        except yaml.YAMLError as exc:
            self.fail(index, start_line, 0, f"invalid YAML: {exc}; fix the YAML syntax")
        if node is None or (
            isinstance(node, ScalarNode)
            and node.tag == _NULL
            and node.value == ""
            and node.start_mark.index == node.end_mark.index
        ):
            return None
        return node

    def check_depth(self, text: str, index: int, start_line: int) -> None:
        """Refuse nesting deeper than MAX_DEPTH before libyaml's recursive composer sees it.

        Each level of nesting needs a flow bracket, a block indicator (``- ``, ``?``) or more
        indentation, so counting them bounds the depth; only when that bound is too high are
        the parser's events (which libyaml produces without recursion) counted.
        """
        bound = (
            text.count("[")
            + text.count("{")
            + text.count("?")
            + text.count("- ")
            + text.count("-\n")
            + text.count("-\r")
            + text.count("-\t")
            + 1
        )
        if bound + _DEEP_INDENT_ALLOWANCE <= MAX_DEPTH and not _has_deep_indentation(text):
            return
        depth = 0
        try:
            for event in _parse_events(text):
                if isinstance(event, yaml.CollectionStartEvent):
                    depth += 1
                    if depth > MAX_DEPTH:
                        self.fail(
                            index,
                            start_line,
                            0 if event.start_mark is None else event.start_mark.line,
                            f"nesting deeper than {MAX_DEPTH} levels; this is not a manifest",
                        )
                elif isinstance(event, yaml.CollectionEndEvent):
                    depth -= 1
        except yaml.MarkedYAMLError as exc:
            # libyaml 0.2.6 (PyYAML 6.0.3's wheels) stops at its own nesting limit, also 1000
            # levels, before the events above reach it: the same refusal, in the same words.
            if exc.problem and "maximum nesting depth" in exc.problem:
                mark = exc.problem_mark
                self.fail(
                    index,
                    start_line,
                    0 if mark is None else mark.line,
                    f"nesting deeper than {MAX_DEPTH} levels; this is not a manifest",
                )
            # Other syntax errors are reported, with their position, by the composer.
            return


def _has_deep_indentation(text: str) -> bool:
    """Whether a line starts with 256 spaces (a line break may be CR, LF or CRLF)."""
    return (
        text.startswith(_DEEP_INDENT)
        or "\n" + _DEEP_INDENT in text
        or ("\r" in text and "\r" + _DEEP_INDENT in text)
    )


def _parse_events(text: str) -> Iterator[yaml.Event]:
    loader = _ComposingLoader(text)
    try:
        while loader.check_event():
            event = loader.get_event()
            if event is not None:
                yield event
    finally:
        loader.dispose()


class _ValueBuilder:
    """Builds the plain value of a node tree in one pass, without recursion, and checks it."""

    def __init__(
        self,
        reader: _StreamReader,
        index: int,
        start_line: int,
        *,
        track_aliases: bool,
        may_merge: bool,
    ) -> None:
        self.reader = reader
        self.index = index
        self.start_line = start_line
        self.track_aliases = track_aliases
        self.may_merge = may_merge
        self.seen: set[int] = set()
        self.saw_alias = False
        self.saw_merge = False

    def fail(self, node: Node, reason: str) -> NoReturn:
        self.reader.fail(self.index, self.start_line, node.start_mark.line, reason)

    def visit(self, node: Node) -> None:
        """Count a second visit of a node (through an alias) against the stream's budget."""
        key = id(node)
        if key in self.seen:
            self.saw_alias = True
            self.reader.alias_visits_left -= 1
            if self.reader.alias_visits_left < 0:
                self.fail(
                    node,
                    f"aliases expand to more than {MAX_ALIAS_VISITS} nodes (or refer to "
                    "themselves); expand the anchors into plain YAML",
                )
        else:
            self.seen.add(key)

    def build(self, root: Node) -> object:
        track = self.track_aliases
        if track:
            self.refuse_cycles(root)
            self.visit(root)
        if isinstance(root, ScalarNode):
            return self.scalar(root)
        result = self.empty_collection(root)
        stack: list[tuple[Node, Any]] = [(root, result)]
        scalar_node = ScalarNode
        str_tag = _STR
        while stack:
            node, container = stack.pop()
            if isinstance(container, list):
                for item in node.value:
                    if track:
                        self.visit(item)
                    if isinstance(item, scalar_node):
                        container.append(item.value if item.tag == str_tag else self.scalar(item))
                    else:
                        child = self.empty_collection(item)
                        container.append(child)
                        stack.append((item, child))
                continue
            entries = node.value
            if self.may_merge and any(key.tag == _MERGE for key, _ in entries):
                self.saw_merge = True
                assert isinstance(node, MappingNode)
                container.update(self.merged_entries(node))
                entries = [(key, value) for key, value in entries if key.tag != _MERGE]
                own_keys: set[object] = set()
            else:
                own_keys = container  # an empty dict: its keys are the keys seen so far
            for key_node, value_node in entries:
                if track:
                    self.visit(key_node)
                    self.visit(value_node)
                if not isinstance(key_node, scalar_node):
                    self.fail(
                        key_node, "a mapping key is a collection; Kubernetes needs string keys"
                    )
                key = key_node.value if key_node.tag == str_tag else self.scalar(key_node)
                if key in own_keys:
                    self.fail(
                        key_node,
                        f"duplicate key {key!r} in a mapping (Kubernetes rejects it); "
                        "remove one of them",
                    )
                if own_keys is not container:
                    own_keys.add(key)
                if isinstance(value_node, scalar_node):
                    container[key] = (
                        value_node.value if value_node.tag == str_tag else self.scalar(value_node)
                    )
                else:
                    child = self.empty_collection(value_node)
                    container[key] = child
                    stack.append((value_node, child))
        return result

    def refuse_cycles(self, root: Node) -> None:
        """An alias inside the collection its anchor names (``a: &a [*a]``) expands for ever:
        refused at once, rather than after the alias budget was spent building copies (1 s and
        150 MB). Each node is walked once; collections still open are the current path."""
        finished: set[int] = set()
        open_nodes: set[int] = set()
        stack: list[tuple[Node, bool]] = [(root, False)]
        while stack:
            node, leaving = stack.pop()
            key = id(node)
            if leaving:
                open_nodes.discard(key)
                finished.add(key)
                continue
            if key in finished or isinstance(node, ScalarNode):
                continue
            if key in open_nodes:
                self.fail(
                    node,
                    "an alias refers to a collection that contains it (a cycle); "
                    "expand the anchors into plain YAML",
                )
            open_nodes.add(key)
            stack.append((node, True))
            if isinstance(node, MappingNode):
                stack.extend((child, False) for pair in node.value for child in pair)
            else:
                stack.extend((child, False) for child in node.value)

    def merged_entries(self, node: MappingNode) -> dict[Any, Any]:
        """The entries a mapping takes from its merge keys (``<<: *base``), earlier first."""
        merged: dict[Any, Any] = {}
        for key_node, value_node in node.value:
            if key_node.tag != _MERGE:
                continue
            if isinstance(value_node, MappingNode):
                sources = [value_node]
            elif isinstance(value_node, SequenceNode) and all(
                isinstance(item, MappingNode) for item in value_node.value
            ):
                if self.track_aliases:
                    self.visit(value_node)
                sources = list(value_node.value)
            else:
                self.fail(value_node, "a merge key (<<) needs a mapping or a list of mappings")
            # The first mapping named wins, as in PyYAML and go-yaml.
            for source_node in reversed(sources):
                source_value = self.build(source_node)
                assert isinstance(source_value, dict)
                merged.update(source_value)
        return merged

    def empty_collection(self, node: Node) -> dict[Any, Any] | list[Any]:
        if isinstance(node, MappingNode):
            if node.tag != _MAP:
                self.fail(node, _unsupported_tag(node.tag))
            return {}
        if isinstance(node, SequenceNode):
            if node.tag != _SEQ:
                self.fail(node, _unsupported_tag(node.tag))
            return []
        self.fail(node, f"unexpected node {type(node).__name__}")

    def scalar(self, node: ScalarNode) -> object:
        tag = node.tag
        if tag in _STRING_LIKE_TAGS:
            return node.value
        try:
            if tag == _INT:
                return _SAFE_CONSTRUCTOR.construct_yaml_int(node)
            if tag == _FLOAT:
                return _SAFE_CONSTRUCTOR.construct_yaml_float(node)
            if tag == _BOOL:
                return _SAFE_CONSTRUCTOR.bool_values[node.value.lower()]
            if tag == _NULL:
                return None
        except (ValueError, KeyError) as exc:
            self.fail(node, f"{node.value!r} is not a valid {tag.rsplit(':', 1)[-1]}")
            raise AssertionError from exc  # pragma: no cover (fail raises)
        if tag == _MERGE:
            return node.value
        self.fail(node, _unsupported_tag(tag))


def _unsupported_tag(tag: str) -> str:
    shown = "!!" + tag[len(_TAG_PREFIX) :] if tag.startswith(_TAG_PREFIX) else tag
    return (
        f"the tag {shown} is not supported: kmultiarch reads plain Kubernetes YAML "
        "(strings, numbers, booleans, null, mappings, sequences); remove the tag"
    )
