"""Reading YAML streams: exact segments, values as PyYAML reads them, and every input error."""

from __future__ import annotations

import gc
import json
import time
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from kmultiarch.errors import ManifestStreamError
from kmultiarch.yaml import stream as yamlstream
from kmultiarch.yaml.stream import decode_source, join_documents, read_stream

HELM = """\
---
# Source: chart/templates/serviceaccount.yaml
apiVersion: v1
kind: ServiceAccount
metadata:
  name: app
---
# Source: chart/templates/empty.yaml
---
# Source: chart/templates/deployment.yaml
apiVersion: apps/v1
kind: Deployment
metadata:
  name: app
spec:
  template:
    spec:
      containers:
        - name: app
          image: "nginx:1.25"
"""

# Streams whose segments must join back to the input, with the expected values.
STREAMS: list[tuple[str, list[object]]] = [
    ("", []),
    ("\n", [None]),
    ("# only a comment\n", [None]),
    ("a: 1\n", [{"a": 1}]),
    ("a: 1", [{"a": 1}]),
    ("---\na: 1\n---\nb: 2\n", [{"a": 1}, {"b": 2}]),
    ("# header\n\n---\na: 1\n", [{"a": 1}]),
    ("a: 1\n...\n---\nb: 2\n...\n# trailing\n", [{"a": 1}, {"b": 2}]),
    ("%YAML 1.1\n---\na: 1\n...\n%YAML 1.1\n---\nb: 2\n", [{"a": 1}, {"b": 2}]),
    ("--- {a: 1}\n--- [1, 2]\n--- text\n", [{"a": 1}, [1, 2], "text"]),
    ("---\n---\n", [None, None]),
    ("a: 1\r\n---\r\nb: [x]\r\n", [{"a": 1}, {"b": ["x"]}]),
    ("a: 1\r---\rb: 2\r", [{"a": 1}, {"b": 2}]),
    ("a: 1\u2028---\u2028b: 2\n", [{"a": 1}, {"b": 2}]),
    ('{"kind": "List", "items": [{"a": 1}]}\n', [{"kind": "List", "items": [{"a": 1}]}]),
    ('{"a": 1}\n---\n{"b": [true, null]}', [{"a": 1}, {"b": [True, None]}]),
    ("a: |\n  --- not a marker\n  ... nor this\n", [{"a": "--- not a marker\n... nor this\n"}]),
    ("a: '\n  ---x'\n", [{"a": " ---x"}]),
    ("---a: 1\n", [{"---a": 1}]),
    (
        HELM,
        [{"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "app"}}, None, ...],
    ),
]


@pytest.mark.parametrize(("text", "values"), STREAMS)
def test_segments_join_back_and_values_match(text: str, values: list[object]) -> None:
    documents = read_stream(text, "in.yaml")
    assert join_documents([document.text for document in documents]) == text
    assert [document.index for document in documents] == list(range(len(documents)))
    assert len(documents) == len(values)
    for document, value in zip(documents, values, strict=True):
        if value is not ...:
            assert document.value == value
        assert document.source == "in.yaml"
        assert (document.node is None) == (document.value is None)


def test_start_lines_count_in_the_source() -> None:
    documents = read_stream(HELM, "helm")
    assert [document.start_line for document in documents] == [1, 7, 9]
    assert documents[1].text == "---\n# Source: chart/templates/empty.yaml\n"
    assert documents[1].node is None


def test_marks_are_relative_to_the_document_text() -> None:
    document = read_stream(HELM, "helm")[2]
    assert document.node is not None
    kind_key = document.node.value[1][0]
    assert document.text[kind_key.start_mark.index : kind_key.end_mark.index] == "kind"
    image = document.node.value[3][1].value[0][1].value[0][1].value[0][1].value[0].value[1][1]
    assert document.text[image.start_mark.index : image.end_mark.index] == '"nginx:1.25"'


def test_node_is_composed_on_each_access() -> None:
    document = read_stream("a: [1]\n", "s")[0]
    first, second = document.node, document.node
    assert first is not None and second is not None and first is not second
    assert first.value[0][1].value[0].value == "1"


def test_marks_count_characters_not_bytes() -> None:
    document = read_stream("a: é€😀\nb: x\n", "s")[0]
    assert document.node is not None
    value = document.node.value[1][1]
    assert document.text[value.start_mark.index : value.end_mark.index] == "x"


def test_yaml_1_1_scalars_as_pyyaml_reads_them() -> None:
    text = (
        "octal: 0755\nhex: 0x1F\nsexagesimal: 1:30\nbool: yes\noff: off\nnull1: ~\nnull2:\n"
        "float: 1.5e+3\ninf: .inf\nstring: 1e3\nquoted: '1'\nunderscored: 1_000\n"
        "binary: !!binary aGVsbG8=\nexplicit: !!str 12\nvalue: =\n"
    )
    value: Any = read_stream(text, "s")[0].value
    expected = yaml.safe_load(text.replace("value: =\n", ""))
    expected["binary"] = "aGVsbG8="
    expected["value"] = "="
    assert value == expected
    assert value["octal"] == 493 and value["bool"] is True and value["string"] == "1e3"


def test_timestamps_stay_strings_as_in_kubernetes() -> None:
    value = read_stream("date: 2024-01-01\nstamp: 2024-01-01T10:00:00Z\n", "s")[0].value
    assert value == {"date": "2024-01-01", "stamp": "2024-01-01T10:00:00Z"}


def test_aliases_and_merge_keys_are_expanded_and_flagged() -> None:
    text = "base: &base {a: 1, b: 2}\ncopy: *base\nmerged:\n  <<: *base\n  b: 3\n"
    document = read_stream(text, "s")[0]
    assert document.value == {
        "base": {"a": 1, "b": 2},
        "copy": {"a": 1, "b": 2},
        "merged": {"a": 1, "b": 3},
    }
    assert document.has_aliases_or_merges
    assert not read_stream("a: '&x *y'\n", "s")[0].has_aliases_or_merges


def test_merge_of_a_list_of_mappings_earlier_wins() -> None:
    text = "a: &a {x: 1}\nb: &b {x: 2, y: 2}\nc:\n  <<: [*a, *b]\n  z: 3\n"
    assert read_stream(text, "s")[0].value["c"] == {"x": 1, "y": 2, "z": 3}  # type: ignore[index]


def test_byte_order_mark_is_dropped() -> None:
    assert decode_source(b"\xef\xbb\xbfa: 1\n", "f") == "a: 1\n"
    documents = read_stream("\ufeffa: 1\n", "f")
    assert documents[0].value == {"a": 1}
    assert documents[0].text == "a: 1\n"


def test_decode_keeps_crlf_and_unicode() -> None:
    assert decode_source("a: é\r\n".encode(), "f") == "a: é\r\n"


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"\xff\xfea\x00", "f.yaml:1: the file is UTF-16 encoded"),
        (b"\xfe\xff\x00a", "f.yaml:1: the file is UTF-16 encoded"),
        (b"\xff\xfe\x00\x00a\x00\x00\x00", "f.yaml:1: the file is UTF-32 encoded"),
        (b"a: 1\nb: \xc3\x28\n", "f.yaml:2: not valid UTF-8 (byte 0xc3 at offset 8)"),
        (b"a: 1\n\nb: \x00\n", "f.yaml:3: control character U+0000"),
        (b"\x7fELF\x02\x01", "f.yaml:1: control character U+007F"),
        (b"a: \x1b[31m\n", "f.yaml:1: control character U+001B"),
    ],
)
def test_decode_errors_name_file_and_line(data: bytes, message: str) -> None:
    with pytest.raises(ManifestStreamError) as caught:
        decode_source(data, "f.yaml")
    assert str(caught.value).startswith(message)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("a: 1\nb: 2\na: 3\n", "f.yaml:3: document 1: duplicate key 'a'"),
        ("---\nok: 1\n---\nx:\n  y: 1\n  y: 2\n", "f.yaml:6: document 2: duplicate key 'y'"),
        ("a: !!python/object/apply:os.system ['true']\n", "f.yaml:1: document 1: the tag "),
        ("a: !Ref foo\n", "f.yaml:1: document 1: the tag !Ref is not supported"),
        ("a: !!omap [b: 1]\n", "f.yaml:1: document 1: the tag !!omap is not supported"),
        ("a: !!set {b}\n", "f.yaml:1: document 1: the tag !!set is not supported"),
        ("a: !!int abc\n", "f.yaml:1: document 1: 'abc' is not a valid int"),
        ("? [a]\n: 1\n", "f.yaml:1: document 1: a mapping key is a collection"),
        ("---\na: 1\n---\nb: [1\nc: 2\n", "f.yaml:5: document 2: invalid YAML"),
        ("a: 1\n b: 2\n", "f.yaml:2: document 1: invalid YAML"),
        ("a: *nowhere\n", "f.yaml:1: document 1: invalid YAML"),
        ("\ta: 1\n", "f.yaml:1: document 1: invalid YAML"),
        ("a: 1\r\n---\r\nb: 2\r\nb: 3\r\n", "f.yaml:4: document 2: duplicate key 'b'"),
        ("c:\n  <<: 5\n", "f.yaml:2: document 1: a merge key (<<) needs a mapping"),
    ],
)
def test_stream_errors_name_file_line_and_document(text: str, message: str) -> None:
    with pytest.raises(ManifestStreamError) as caught:
        read_stream(text, "f.yaml")
    assert str(caught.value).startswith(message), str(caught.value)


@pytest.mark.parametrize("depth", [1001, 100_000])
def test_deep_flow_nesting_is_refused_before_composing(depth: int) -> None:
    started = time.perf_counter()
    with pytest.raises(ManifestStreamError, match="nesting deeper than 1000 levels"):
        read_stream("a: " + "[" * depth + "]" * depth + "\n", "deep.yaml")
    assert time.perf_counter() - started < 5


def test_deep_block_nesting_is_refused() -> None:
    text = "".join(" " * level + f"k{level}:\n" for level in range(1200)) + " " * 1200 + "v: 1\n"
    with pytest.raises(ManifestStreamError, match="nesting deeper than 1000 levels"):
        read_stream(text, "deep.yaml")


def test_deep_compact_sequences_are_refused() -> None:
    with pytest.raises(ManifestStreamError, match="nesting deeper than 1000 levels"):
        read_stream("- " * 1500 + "x\n", "deep.yaml")


def test_nesting_at_the_limit_is_read() -> None:
    value = read_stream("[" * 999 + "1" + "]" * 999, "s")[0].value
    for _ in range(998):
        assert isinstance(value, list)
        value = value[0]
    assert value == [1]


def test_many_brackets_without_depth_are_read() -> None:
    text = "items: [" + ", ".join("[1]" for _ in range(3000)) + "]\n"
    assert len(read_stream(text, "s")[0].value["items"]) == 3000  # type: ignore[index]


def test_billion_laughs_is_refused_quickly() -> None:
    lines = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for level in range(1, 10):
        previous = chr(ord("a") + level - 1)
        name = chr(ord("a") + level)
        lines.append(f"{name}: &{name} [" + ",".join([f"*{previous}"] * 9) + "]")
    started = time.perf_counter()
    with pytest.raises(ManifestStreamError, match="aliases expand to more than"):
        read_stream("\n".join(lines) + "\n", "bomb.yaml")
    assert time.perf_counter() - started < 10


def test_alias_budget_is_shared_by_the_stream(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(yamlstream, "MAX_ALIAS_VISITS", 10)
    document = "a: &a [1, 2, 3]\nb: *a\nc: *a\n"  # 8 visits again per document
    read_stream(document, "s")
    with pytest.raises(ManifestStreamError, match="aliases expand"):
        read_stream(document + "---\n" + document, "s")


@pytest.mark.parametrize("text", ["a: &a [*a]\n", "a: &a {b: [1, {c: *a}]}\n"])
def test_recursive_alias_is_refused_before_expanding(text: str) -> None:
    with pytest.raises(ManifestStreamError, match=r"s:1: document 1: an alias refers to a "):
        read_stream(text, "s")


def test_document_size_cap(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(yamlstream, "MAX_DOCUMENT_BYTES", 64)
    read_stream("a: " + "x" * 40 + "\n", "s")
    with pytest.raises(ManifestStreamError) as caught:
        read_stream("---\na: 1\n---\na: " + "é" * 40 + "\n", "big.yaml")
    assert str(caught.value).startswith("big.yaml:3: document 2: the document is 88 bytes")


def test_garbage_collector_state_is_restored() -> None:
    assert gc.isenabled()
    read_stream("a: 1\n", "s")
    assert gc.isenabled()
    gc.disable()
    try:
        read_stream("a: 1\n", "s")
        assert not gc.isenabled()
    finally:
        gc.enable()
    with pytest.raises(ManifestStreamError):
        read_stream("a: [\n", "s")
    assert gc.isenabled()


# Property: any stream PyYAML can dump reads back to the same values and text.

_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**63)
    | st.text(
        st.characters(codec="utf-8", exclude_categories=("Cs", "Cc", "Zl", "Zp")), max_size=12
    )
    | st.sampled_from(["yes", "on", "1e3", "0755", "~", "null", "", "- a", "a: b", "#", "'"])
)
_keys = st.text(st.characters(min_codepoint=32, max_codepoint=126), max_size=8)
_values = st.recursive(
    _scalars,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(_keys, children, max_size=4),
    max_leaves=20,
)


@settings(max_examples=150, deadline=None)
@given(
    documents=st.lists(_values, min_size=1, max_size=4),
    flow=st.sampled_from([False, None, True]),
    indent=st.sampled_from([2, 4]),
    crlf=st.booleans(),
    json_style=st.booleans(),
)
def test_dumped_streams_read_back(
    documents: list[Any], flow: bool | None, indent: int, crlf: bool, json_style: bool
) -> None:
    if json_style:
        # ensure_ascii=False: libyaml refuses the surrogate-pair escapes json.dumps writes
        # for characters beyond U+FFFF (a known gap; Go's encoding/json does not write them).
        text = "---\n".join(
            json.dumps(document, indent=indent, ensure_ascii=False) + "\n" for document in documents
        )
    else:
        text = yaml.safe_dump_all(
            documents, default_flow_style=flow, indent=indent, allow_unicode=True, width=60
        )
    if crlf:
        text = text.replace("\n", "\r\n")
    read = read_stream(text, "s")
    assert join_documents([document.text for document in read]) == text
    assert [document.value for document in read] == list(yaml.safe_load_all(text))


def test_a_stream_with_two_empty_documents_after_a_document_end_and_a_comment_is_read() -> None:
    """Issue 36: ``...``, a comment line, then ``---`` twice: libyaml reads two empty documents
    after the first; the cutter put them in one segment, which libyaml then refused."""
    text = "a: 1\n...\n# c\n---\n---\n"
    documents = read_stream(text, "in.yaml")
    assert [document.text for document in documents] == ["a: 1\n...\n", "# c\n---\n", "---\n"]
    assert [document.value for document in documents] == list(
        yaml.load_all(text, Loader=yaml.CSafeLoader)
    )


# Lines a stream is made of, for the comparison with libyaml: document markers (with content,
# comments, tabs, and look-alikes that are not markers), directives, comments, blank lines, a
# byte order mark, block and flow content, block scalars whose content could pose as markers.
# ``{n}`` is the line's number, so that no mapping repeats a key (kmultiarch refuses those).
_STREAM_LINES = [
    "---",
    "--- ",
    "---\t# c",
    "--- # c",
    "--- v{n}",
    "--- {{k{n}: 1}}",
    "--- |",
    "--- >-",
    "...",
    "... # c",
    "....",
    "----",
    "...x",
    "---x{n}: 1",
    "# c",
    "  # c",
    "",
    "  ",
    "%YAML 1.1",
    "%TAG !e! tag:example.com,2000:",
    "%FOO bar",
    "k{n}: 1",
    "k{n}:",
    "k{n}: |",
    "  - x",
    "- y{n}",
    "  c{n}: 2",
    "  text {n}",
    " --- indented",
    "bare{n}",
    "[1,",
    "2]",
    "\ufeffk{n}: 1",
    "\ufeff---",
    "'q{n}",
    "  ---'",
]


@settings(max_examples=3000, deadline=None)
@given(
    lines=st.lists(st.sampled_from(_STREAM_LINES), max_size=10),
    line_break=st.sampled_from(["\n", "\r\n", "\r", "\u2028"]),
    final_break=st.booleans(),
)
def test_the_cutter_reads_every_stream_libyaml_reads(
    lines: list[str], line_break: str, final_break: bool
) -> None:
    """Where libyaml (PyYAML's CSafeLoader, compose_all) reads a stream, the cutter reads it
    too, into the same documents, and its segments give the input back byte for byte. (Where
    libyaml refuses, the cutter may read more: kubectl's reader also cuts on marker lines.)"""
    text = line_break.join(line.format(n=number) for number, line in enumerate(lines))
    if final_break and text:
        text += line_break
    try:
        expected = list(yaml.load_all(text, Loader=yaml.CSafeLoader))
    except yaml.YAMLError:
        return
    documents = read_stream(text, "in.yaml")
    # A leading byte order mark is the one character not kept (read_stream drops it).
    assert join_documents([document.text for document in documents]) == text.removeprefix("\ufeff")
    values = [document.value for document in documents]
    if expected:
        assert values == expected
    else:  # nothing but comments, directives or blank lines: at most one empty document
        assert values in ([], [None])
