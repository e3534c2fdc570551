"""Cut a YAML stream into document segments, each holding exactly one of the documents libyaml
reads, whose concatenation is the stream again.

The cut is made on marker lines (``---`` and ``...`` at column 0, which YAML forbids inside any
scalar, so a line-based cut is exact); a directive line (``%`` at column 0) after content, which
libyaml reads as the end of a document unless a scalar goes on over it, is placed by libyaml's
own scanner. tests/unit/test_yamlstream.py compares the segments with libyaml's documents over
generated streams.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable

import yaml

__all__ = ["LINE_BREAK", "has_exotic_line_breaks", "split_segments"]

# A document marker: ``---`` or ``...`` at the start of a line, then white space or the end.
_MARKER_FOLLOWERS = frozenset(" \t\r\n\x85\u2028\u2029")
# Lines with no content: blank, comments, directives, document markers without content.
# (libyaml's line breaks: LF, CR, CRLF, NEL, LS, PS; a comment ends at any of them.)
_LINE_BREAKS_CLASS = "\r\n\x85\u2028\u2029"
_NO_CONTENT = re.compile(
    rf"(?:[ \t]*(?:#[^{_LINE_BREAKS_CLASS}]*)?(?:\r\n|[{_LINE_BREAKS_CLASS}]|\Z)"
    rf"|%[^{_LINE_BREAKS_CLASS}]*(?:\r\n|[{_LINE_BREAKS_CLASS}]|\Z)"
    rf"|(?:---|\.\.\.)[ \t]*(?:#[^{_LINE_BREAKS_CLASS}]*)?(?:\r\n|[{_LINE_BREAKS_CLASS}]|\Z))*\Z"
)
#: One line break, as libyaml reads them.
LINE_BREAK = re.compile(r"\r\n|[\r\n\x85\u2028\u2029]")


def has_exotic_line_breaks(text: str) -> bool:
    """Whether ``text`` has line breaks other than LF and CRLF (CR alone, NEL, LS, PS)."""
    if "\x85" in text or "\u2028" in text or "\u2029" in text:
        return True
    return "\r" in text and text.count("\r") != text.count("\r\n")


def _markers(text: str, exotic_breaks: bool) -> list[tuple[int, str]]:
    """Positions of document markers, in order (substring search: a regular expression takes
    twenty times longer on a large stream)."""
    breaks = _EXOTIC_BREAKS if exotic_breaks else ("\n",)
    found: list[tuple[int, str]] = []
    for marker in ("---", "..."):
        candidates = [0] if text.startswith(marker) else []
        for line_break in breaks:
            needle = line_break + marker
            position = text.find(needle)
            while position >= 0:
                candidates.append(position + 1)
                position = text.find(needle, position + 1)
        for start in candidates:
            after = text[start + 3 : start + 4]
            if after == "" or after in _MARKER_FOLLOWERS:
                found.append((start, marker))
    found.sort()
    return found


def split_segments(text: str, exotic_breaks: bool | None = None) -> list[str]:
    """Cut the stream before each ``---`` line and after each ``...`` line, so that each
    segment holds exactly one of the documents libyaml reads (tests/unit/test_yamlstream.py
    compares the two over generated streams).

    A piece that starts with ``---`` is a document of its own, empty or not, whatever comes
    before it (``...``, a comment, ``---``, ``---``: libyaml reads two empty documents after
    the first). A piece with no content that does not start with ``---`` (comments or
    directives before the first ``---``, or between ``...`` and ``---``) goes with the document
    that follows it (directives must), or with the one before it at the end of the stream; one
    that ends with another ``...`` goes with the document before it, whose end it repeats
    (libyaml skips a repeated ``...`` after a document, but refuses one that opens a stream).
    """
    if exotic_breaks is None:
        exotic_breaks = has_exotic_line_breaks(text)
    cuts = [0]
    after_document_end: set[int] = set()
    for start, marker in _markers(text, exotic_breaks):
        if marker == "---":
            cut = start
        else:
            next_break = LINE_BREAK.search(text, start + 3)
            cut = len(text) if next_break is None else next_break.end()
            after_document_end.add(cut)
        if cut != cuts[-1]:
            cuts.append(cut)
    if cuts[-1] != len(text):
        cuts.append(len(text))
    pieces: Iterable[tuple[int, int]] = itertools.pairwise(cuts)
    if _has_directive_line(text, exotic_breaks):
        pieces = [part for start, end in pieces for part in _cut_at_directives(text, start, end)]
    segments: list[str] = []
    pending = ""
    for start, end in pieces:
        # Whether the piece opens a document is read before the pending comments are put in
        # front of it: "# c\n---\n" is a document (an empty one), not more comments.
        if text.startswith("---", start) or not _NO_CONTENT.match(text, start, end):
            segments.append(pending + text[start:end])
            pending = ""
        elif end in after_document_end and segments:
            segments[-1] += pending + text[start:end]
            pending = ""
        else:
            pending += text[start:end]
    if pending:
        if segments:
            segments[-1] += pending
        else:
            segments.append(pending)
    return segments


_EXOTIC_BREAKS = ("\n", "\r", "\x85", "\u2028", "\u2029")
# A line that starts with '%': a directive, unless it continues a multi-line scalar.
_DIRECTIVE_LINE = re.compile(f"[{_LINE_BREAKS_CLASS}]%")
# Blank lines, comments and directives: what may come before a document's '---'.
_DIRECTIVES_PROLOGUE = re.compile(
    rf"(?:[ \t]*(?:#[^{_LINE_BREAKS_CLASS}]*)?(?:\r\n|[{_LINE_BREAKS_CLASS}]|\Z)"
    rf"|%[^{_LINE_BREAKS_CLASS}]*(?:\r\n|[{_LINE_BREAKS_CLASS}]|\Z))*\Z"
)


def _has_directive_line(text: str, exotic_breaks: bool) -> bool:
    """Whether a line of ``text`` but its first starts with ``%`` (substring searches: the
    regular expression takes a hundred times longer on a large stream)."""
    breaks = _EXOTIC_BREAKS if exotic_breaks else ("\n",)
    return any(line_break + "%" in text for line_break in breaks)


def _cut_at_directives(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """``text[start:end]`` cut before each run of directives that follows content.

    libyaml takes a line starting with ``%`` for a directive wherever it is not inside a
    scalar, and a directive ends the document before it without ``...`` (``---``,
    ``%YAML 1.1``, ``---`` is two documents). Lines cannot tell a directive from a scalar's
    continuation (``a: 'x`` then ``%y'``), so libyaml's own scanner says which lines are
    directives. A piece it cannot scan is left whole, for the reader to refuse with the reason.
    """
    directive_lines = [line.start() + 1 for line in _DIRECTIVE_LINE.finditer(text, start, end)]
    if not directive_lines or _DIRECTIVES_PROLOGUE.match(text, start, directive_lines[-1]):
        return [(start, end)]  # directives only before the document: they belong to it
    cuts = [start]
    after_content = False
    try:
        for token in yaml.scan(text[start:end], Loader=yaml.CSafeLoader):
            if isinstance(token, yaml.DirectiveToken):
                if after_content:
                    cuts.append(start + token.start_mark.index)
                after_content = False
            elif not isinstance(token, (yaml.StreamStartToken, yaml.StreamEndToken)):
                after_content = True
    except yaml.YAMLError:
        return [(start, end)]
    cuts.append(end)
    return list(itertools.pairwise(cuts))
