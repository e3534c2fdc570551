#!/usr/bin/env python3
"""Prototype (issue 32, item 3): a scanner of a pod template's fields instead of composing.

    python3 benchmarks/podscan.py [--resources 2000] [--corpus DIR ...]

For a document whose type :func:`kmultiarch.yaml.stream.provable_type` proves to be a workload
with its pod template at ``spec.template`` (Deployment, StatefulSet, DaemonSet, ReplicaSet,
Job), :func:`scan` reads from the text alone what an edit of the common case needs: the images
of the pod's containers, the pod spec's keys (so whether it holds ``affinity``, ``tolerations``
or ``nodeSelector``), the column and position where new pod spec keys go, and the document's
layout (indentation of mappings and of sequences under a key). It refuses (None: compose) any
document it cannot read with certainty: every line must be of the block-YAML shape Helm and
kubectl write (``key: value``, ``- item``, ``key:`` opening a collection; scalars plain or
quoted on one line; comments; block scalars whose header is plain), and the indentation must
nest as libyaml would take it; tabs, CR, flow collections, anchors, aliases, tags, explicit keys
and multi-line flow or quoted scalars are refused.

The script measures the scan per document against what it would replace (libyaml's compose, the
node-to-value build, the engine's workloads and edit hint), on the benchmark stream and on the
corpora, and checks on every document it accepts that the full parse says the same (images,
pod spec keys, anchor, layout). It is not used by kmultiarch: docs/performance.md ("A scanner
of pod templates instead of composing") gives the figures and the decision.
"""

from __future__ import annotations

import argparse
import gc
import random
import re
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT))

from streams import mixed_stream  # noqa: E402
from yaml._yaml import CParser  # noqa: E402
from yaml.nodes import Node  # noqa: E402

from kmultiarch.core.operators.workloads import find_workloads  # noqa: E402
from kmultiarch.core.policy.model import ScopePolicy  # noqa: E402
from kmultiarch.errors import ManifestStreamError  # noqa: E402
from kmultiarch.yaml.blockstyle import _detect_style, _Style  # noqa: E402
from kmultiarch.yaml.edit import EditHint, edit_hint  # noqa: E402
from kmultiarch.yaml.stream import (  # noqa: E402
    _compose_document,
    _split_segments,
    _StreamReader,
    provable_type,
)

#: Kinds whose pod template is at spec.template (group/version, kind).
TEMPLATE_KINDS = frozenset(
    {
        ("apps/v1", "Deployment"),
        ("apps/v1", "StatefulSet"),
        ("apps/v1", "DaemonSet"),
        ("apps/v1", "ReplicaSet"),
        ("batch/v1", "Job"),
    }
)
POD_SPEC = ("spec", "template", "spec")
CONTAINER_GROUPS = ("containers", "initContainers")

# A plain scalar on one line, in block context: no indicator first, no ': ' or ' #' inside,
# nothing after it but spaces or a comment.
_PLAIN = r"(?:[^-?:,\[\]{}#&*!|>'\"%@`\s]|[-?:](?=[^\s,\[\]{}]))(?:[^:#\n]|:(?=[^\s])|(?<=[^ ])#)*?"
_DOUBLE = r"\"(?:[^\"\\\n]|\\[^\n])*\""
_SINGLE = r"'(?:[^'\n]|'')*'"
_VALUE = rf"(?:{_PLAIN}|{_DOUBLE}|{_SINGLE})"
_KEY = r"[A-Za-z0-9_][A-Za-z0-9_./-]*"
_END = r"[ ]*(?:[ ]#[^\n]*)?\n"
# One line: its indentation, the dashes of sequence items it opens, then a key (with a value,
# with a block scalar header, or opening a collection), a scalar item, or nothing (a dash
# alone opening a collection, or a blank/comment line).
_LINE = re.compile(
    rf"(?P<indent>[ ]*)(?P<dashes>(?:-[ ]+)*(?:-(?=\n))?)"
    rf"(?:(?P<key>{_KEY}):(?:[ ]+(?:(?P<value>{_VALUE})|(?P<block>[|>][-+]?)))?{_END}"
    rf"|(?P<item>{_VALUE}){_END}"
    rf"|(?:#[^\n]*)?\n)"
)
_BLANK_LINES = re.compile(r"(?:[ ]*\n)*")
_MARKER_LINE = re.compile(r"---[ ]*(?:#[^\n]*)?\n")
_DOUBLE_ESCAPES = re.compile(r"\\(.)")


@dataclass(frozen=True)
class PodScan:
    """What :func:`scan` reads of a pod template."""

    images: tuple[tuple[str, int, str], ...]  # (group, position, image)
    spec_keys: frozenset[str]
    spec_column: int
    insert_at: int  # where new pod spec keys go: the start of the line after its last line
    indent: int  # mapping indentation, as yaml.edit's _Style
    sequence_offset: int


class _Refused(Exception):
    pass


def _scalar(text: str) -> str | None:
    """The string a one-line scalar means, or None when it may not be a string (a plain
    scalar the resolver could take for a number, a boolean or null)."""
    if text.startswith('"'):
        inner = text[1:-1]
        if "\\" in inner:
            if _DOUBLE_ESCAPES.search(inner.replace("\\\\", "")) is not None:
                return None  # escapes other than \\ : leave them to the parser
            inner = inner.replace("\\\\", "\\")
        return inner
    if text.startswith("'"):
        return text[1:-1].replace("''", "'")
    # Image references and keys: refuse plain scalars that could resolve to non-strings.
    if text[0].isdigit() or text.lower() in _YAML11_WORDS or text[0] in "+.~":
        return None
    return text


_YAML11_WORDS = frozenset(
    ["y", "yes", "n", "no", "true", "false", "on", "off", "null", "~", ".inf", ".nan"]
)


def scan(text: str) -> PodScan | None:
    """The pod template's fields of ``text``, or None (compose to know)."""
    kind = provable_type(text)
    if kind is None or kind not in TEMPLATE_KINDS or "\t" in text or "\r" in text:
        return None
    original_length = len(text)
    if not text.endswith("\n"):
        text += "\n"
    try:
        return _scan(text, original_length)
    except _Refused:
        return None


def _scan(text: str, original_length: int) -> PodScan | None:
    # Open collections, outermost first: [column, is_sequence, items so far, keys so far,
    # order opened]; path[i] leads from frame i-1 into frame i (a key, or an item's position).
    frames: list[list[Any]] = [[0, False, 0, set(), 0]]
    path: list[str | int] = [""]
    opened = 1
    pending: tuple[int, str, tuple[int, int]] | None = None  # a key whose value is below it
    scalar_column = -1  # a scalar ended by its line at this column: nothing may nest under it
    images: list[tuple[str, int, str]] = []
    spec_keys: set[str] = set()
    spec_column = -1
    insert_at = -1
    # The layout as yaml.edit's _detect_style finds it: the first mapping (sequence) value on
    # the lines after its key, in the order of (the order its parent was opened, its key's
    # position in the parent).
    indent: tuple[tuple[int, int], int] | None = None
    sequence_offset: tuple[tuple[int, int], int] | None = None
    last_content_end = 0
    after_block = False
    position = 0
    length = len(text)
    marker = _MARKER_LINE.match(text)
    if marker is not None:
        position = marker.end()
    line_match = _LINE.match
    while position < length:
        line = line_match(text, position)
        if line is None:
            raise _Refused
        position = line.end()
        key, item, dashes = line.group("key", "item", "dashes")
        if key is None and item is None and not dashes:
            continue  # blank or comment
        if item is not None and not dashes:
            raise _Refused  # a scalar where a key belongs: a plain scalar going on, or worse
        if dashes and (dashes.count("-") > 1 or (key is None and item is None)):
            raise _Refused  # "- - x", or a dash alone: not the common shape
        column = len(line.group("indent"))
        content = column + len(dashes)
        if scalar_column >= 0 and column > scalar_column:
            raise _Refused  # a scalar going on over lines, or a parse error
        scalar_column = -1
        if pending is not None:
            key_column, name, order = pending
            pending = None
            if dashes and column >= key_column:
                frames.append([column, True, 0, None, opened])
                opened += 1
                path.append(name)
                if sequence_offset is None or order < sequence_offset[0]:
                    sequence_offset = (order, column - key_column)
            elif not dashes and column > key_column:
                frames.append([column, False, 0, set(), opened])
                opened += 1
                path.append(name)
                if indent is None or order < indent[0]:
                    indent = (order, column - key_column)
                if len(path) == 4 and path[1] == "spec" and tuple(path[1:]) == POD_SPEC:
                    spec_keys = frames[-1][3]
                    spec_column = column
        while frames[-1][0] > column or (frames[-1][0] == column and frames[-1][1] and not dashes):
            frames.pop()
            if len(path) == 4 and tuple(path[1:]) == POD_SPEC:
                if after_block:
                    raise _Refused  # where a block scalar ends: left to the full parse
                insert_at = last_content_end
            path.pop()
        top = frames[-1]
        if dashes:
            if not top[1] or top[0] != column:
                raise _Refused
            top[2] += 1
            if key is not None:
                frames.append([content, False, 0, set(), opened])
                opened += 1
                path.append(top[2] - 1)
                top = frames[-1]
        elif top[1] or top[0] != column:
            raise _Refused  # a key at a column no open mapping has
        after_block = False
        last_content_end = position
        if key is None:
            scalar_column = column
            continue
        keys = top[3]
        if key in keys or key[0].isdigit() or key.lower() in _YAML11_WORDS:
            raise _Refused  # a duplicate (refused by the reader), or a key not a string
        keys.add(key)
        top[2] += 1
        if line.group("block") is not None:
            position = _block_scalar_end(text, position, content)
            last_content_end = position
            scalar_column = content
            after_block = True
            continue
        value = line.group("value")
        if value is None:
            pending = (content, key, (top[4], top[2]))
            continue
        scalar_column = content
        if (
            key == "image"
            and len(path) == 6
            and path[4] in CONTAINER_GROUPS
            and tuple(path[1:4]) == POD_SPEC
        ):
            image = _scalar(value)
            if image is None:
                raise _Refused
            images.append((str(path[4]), int(path[5]), image))
    if pending is not None and len(path) == 3 and tuple(path[1:]) == POD_SPEC[:-1]:
        raise _Refused  # "spec:" with nothing under it
    while len(frames) > 1:
        frames.pop()
        if len(path) == 4 and tuple(path[1:]) == POD_SPEC:
            if after_block:
                raise _Refused
            insert_at = last_content_end
        path.pop()
    if spec_column < 0 or insert_at < 0:
        return None
    mapping_indent = indent[1] if indent is not None and indent[1] > 0 else 2
    return PodScan(
        tuple(images),
        frozenset(spec_keys),
        spec_column,
        min(insert_at, original_length),
        mapping_indent,
        mapping_indent if sequence_offset is None else sequence_offset[1],
    )


def _block_scalar_end(text: str, position: int, parent_column: int) -> int:
    """The end of a block scalar's content starting at ``position`` (the line after its
    header), for a header at ``parent_column``: its lines are blank or indented at least as
    its first, which is more indented than the key (as stream._plain_prefix takes them)."""
    blank = _BLANK_LINES.match(text, position)
    assert blank is not None
    widest_blank = max((len(line) for line in blank.group().split("\n")), default=0)
    first = blank.end()
    column = 0
    while first + column < len(text) and text[first + column] == " ":
        column += 1
    if first >= len(text) or column == 0:
        return first if column == 0 else len(text)  # an empty scalar
    if column <= parent_column or widest_blank > column:
        raise _Refused
    block = re.compile(rf"(?:[ ]{{{column}}}[^\n]*\n|[ ]*\n)*")
    end = block.match(text, first)
    assert end is not None
    return end.end()


# --------------------------------------------------------------------------------------------
# Checking against the full parse, and timing


def full_parse(text: str) -> tuple[object, EditHint | None, _Style | None]:
    """(value, edit hint's anchor and style) by the full reader, the engine's way."""
    reader = _StreamReader("check")
    document = reader.read_document(text, 0, 1)
    value = document.value
    node = _compose_document(text)
    hint = edit_hint(text, node, [POD_SPEC]) if node is not None else None
    return value, hint, _detect_style(node, text) if node is not None else None


def agrees(text: str, result: PodScan) -> str | None:
    """None when the full parse says what the scan said, else what differs."""
    try:
        value, hint, style = full_parse(text)
    except ManifestStreamError as exc:
        return f"the full parse refuses it: {exc}"
    spec = value
    for part in POD_SPEC:
        spec = spec.get(part) if isinstance(spec, dict) else None
    if not isinstance(spec, dict):
        return "no pod spec in the value"
    if frozenset(spec) != result.spec_keys:
        return f"keys {sorted(spec)} != {sorted(result.spec_keys)}"
    images = tuple(
        (group, position, container.get("image"))
        for group in CONTAINER_GROUPS
        for position, container in enumerate(spec.get(group) or [])
        # the engine takes string images only (a null image is no image)
        if isinstance(container, dict) and isinstance(container.get("image"), str)
    )
    if sorted(images) != sorted(result.images):
        return f"images {images} != {result.images}"
    anchor = hint.anchors.get(POD_SPEC) if hint is not None else None
    scanned_anchor = (result.spec_column, result.insert_at)
    if anchor is not None and (anchor.column, anchor.insert_at) != scanned_anchor:
        return f"anchor {(anchor.column, anchor.insert_at)} != {scanned_anchor}"
    scanned_style = (result.indent, result.sequence_offset)
    if style is not None and (style.indent, style.sequence_offset) != scanned_style:
        return f"style {(style.indent, style.sequence_offset)} != {scanned_style}"
    return None


def mutations(text: str, generator: random.Random, count: int) -> list[str]:
    """``count`` near misses of ``text``: one line re-indented, duplicated, dropped, or given an
    indicator (anchor, tag, quote, flow bracket, block scalar, comment) that changes how it
    reads."""
    lines = text.split("\n")
    found = []
    for _ in range(count):
        changed = list(lines)
        at = generator.randrange(1, max(len(lines) - 1, 2))
        line = changed[at]
        stripped = line.lstrip(" ")
        lead = line[: len(line) - len(stripped)]
        choice = generator.randrange(9)
        if choice == 0:
            changed[at] = " " * generator.choice([1, 2, 3]) + line
        elif choice == 1:
            changed[at] = line[generator.choice([1, 2]) :] if lead else line
        elif choice == 2:
            changed.insert(at, line)
        elif choice == 3:
            del changed[at]
        else:
            indicator = ["&a ", "*a ", "!x ", '"', "'", "[", "{", "|", "? ", "- ", "#"][
                generator.randrange(11)
            ]
            position = line.find(": ") + 2 if ": " in line else len(lead)
            changed[at] = line[:position] + indicator + line[position:]
        found.append("\n".join(changed))
    return found


def fuzz(texts: list[str], per_document: int, seed: int = 32) -> tuple[int, int, list[str]]:
    """(near misses made, accepted by the scan, those where the full parse disagrees)."""
    generator = random.Random(seed)
    made = accepted = 0
    wrong: list[str] = []
    for text in texts:
        for variant in mutations(text, generator, per_document):
            made += 1
            result = scan(variant)
            if result is None:
                continue
            accepted += 1
            why = agrees(variant, result)
            if why is not None:
                wrong.append(f"{why}\n{variant}")
    return made, accepted, wrong


def timed(function: Callable[[], object], repeat: int = 7) -> float:
    runs = []
    for _ in range(repeat):
        started = time.process_time()
        function()
        runs.append(time.process_time() - started)
    return statistics.median(runs)


def measure(label: str, segments: list[str], fuzz_count: int = 0) -> None:
    templates = [s for s in segments if provable_type(s) in TEMPLATE_KINDS]
    scanned = [(s, scan(s)) for s in templates]
    accepted = [(s, r) for s, r in scanned if r is not None]
    disagreements = [(s, why) for s, r in accepted if (why := agrees(s, r)) is not None]
    operators = ScopePolicy().operators
    reader = _StreamReader("bench")
    texts = [s for s, _ in accepted]

    def composed() -> None:
        for text in texts:
            _compose_document(text)

    def read() -> None:  # compose + build, as read_document does
        for text in texts:
            reader.read_document(text, 0, 1)

    def derive(text: str, root: Node, value: object) -> object:  # as engine.read_sources
        workloads = find_workloads(value, operators)
        paths = [target.path for workload in workloads for target in workload.targets]
        return edit_hint(text, root, paths) if paths else None

    def engine_read() -> None:  # + the engine's workloads and edit hint
        for text in texts:
            reader.read_document(text, 0, 1, derive)

    def syntax_only() -> None:  # libyaml's parse in C, no Python object per node
        for text in texts:
            parser = CParser(text)
            parser.raw_parse()
            parser.dispose()

    def lines_only() -> None:  # the floor of a scanner in Python: one match per line
        for text in texts:
            position, end = 0, len(text)
            while position < end:
                line = _LINE.match(text, position)
                if line is None:
                    break
                position = line.end()

    def scanned_all() -> None:
        for text in texts:
            scan(text)

    def type_scan() -> None:
        for text in texts:
            provable_type(text)

    gc.disable()
    try:
        times = {
            "type scan (provable_type)": timed(type_scan),
            "pod scan (includes the type scan)": timed(scanned_all),
            "its floor: one regular expression match per line": timed(lines_only),
            "libyaml's parse alone (CParser.raw_parse)": timed(syntax_only),
            "compose": timed(composed),
            "compose + build (read_document)": timed(read),
            "+ the engine's workloads and edit hint (what the scan replaces)": timed(engine_read),
        }
    finally:
        gc.enable()
    count = len(texts) or 1
    print(f"\n### {label}\n")
    print(
        f"{len(segments)} documents, {len(templates)} of the kinds scanned, "
        f"{len(accepted)} accepted by the scan ({len(accepted) / max(len(templates), 1):.0%}); "
        f"{len(disagreements)} disagreeing with the full parse\n"
    )
    for text, why in disagreements[:5]:
        print(f"DISAGREES: {why}\n{text[:300]}\n")
    if fuzz_count:
        made, fuzz_accepted, wrong = fuzz(texts[:200], fuzz_count)
        print(
            f"near misses of the first {min(len(texts), 200)}: {made} made, {fuzz_accepted} "
            f"accepted by the scan, {len(wrong)} of those read otherwise by the full parse\n"
        )
        for case in wrong[:3]:
            print(f"WRONG: {case[:400]}\n")
    print("| step, over the accepted documents | total | per document |")
    print("|---|---:|---:|")
    for name, seconds in times.items():
        print(f"| {name} | {seconds * 1000:.1f} ms | {seconds / count * 1e6:.0f} us |")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--resources", type=int, default=2000)
    parser.add_argument("--corpus", type=Path, action="append")
    parser.add_argument(
        "--fuzz", type=int, default=20, help="near misses per accepted document (first 200)"
    )
    args = parser.parse_args()
    images = [f"registry.test/bench/img-{n:02d}:1.0" for n in range(100)]
    measure(
        f"benchmark stream, {args.resources} resources",
        _split_segments(mixed_stream(args.resources, images)),
        args.fuzz,
    )
    corpora = args.corpus or [
        ROOT / "tests" / "corpus" / "corpus",
        ROOT / "tests" / "corpus" / "corpus2",
    ]
    for corpus in corpora:
        segments: list[str] = []
        for path in sorted(corpus.glob("*.yaml")):
            segments.extend(_split_segments(path.read_text(encoding="utf-8")))
        measure(f"corpus {corpus.name}", segments, args.fuzz)
    return 0


if __name__ == "__main__":
    sys.exit(main())
