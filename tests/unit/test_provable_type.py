"""The scan that lets readers skip composing documents without pod templates is conservative:
whenever it names a document's apiVersion and kind, the full parse agrees (or finds no such
pair, no mapping, or no valid YAML: a document without a pod template in every case)."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.corpus import corpus_files

from kmultiarch.errors import ManifestStreamError
from kmultiarch.yaml.segments import split_segments
from kmultiarch.yaml.stream import provable_type, read_stream

CORPUS_FILES = corpus_files()


def _parsed_kind(text: str) -> tuple[bool, object]:
    """(parsed, top-level (apiVersion, kind)) by the full reader; (False, None) when the YAML
    is refused; (True, None) when it has no such pair."""
    try:
        documents = read_stream(text, "scan-test")
    except ManifestStreamError:
        return False, None
    values = [document.value for document in documents]
    if len(values) != 1:
        return True, None
    value = values[0]
    if not isinstance(value, dict):
        return True, None
    api_version, kind = value.get("apiVersion"), value.get("kind")
    if not isinstance(api_version, str) or not isinstance(kind, str):
        return True, None  # no type: not a resource a reader would look into
    return True, (api_version, kind)


def _agrees(text: str) -> None:
    claimed = provable_type(text)
    if claimed is None:
        return
    parsed, kind = _parsed_kind(text)
    assert not parsed or kind is None or kind == claimed, (claimed, kind, text)


def _segments() -> list[str]:
    segments: list[str] = []
    for path in CORPUS_FILES:
        segments.extend(split_segments(path.read_text(encoding="utf-8")))
    return segments


SEGMENTS = _segments()


def test_the_corpus_is_there() -> None:
    assert len(SEGMENTS) > 2000


def test_on_the_corpus_the_scan_agrees_with_the_parse_and_proves_most_kinds() -> None:
    proven = 0
    for segment in SEGMENTS:
        claimed = provable_type(segment)
        if claimed is None:
            continue
        proven += 1
        parsed, kind = _parsed_kind(segment)
        # Parsed, unless it is one of the corpus' documents with duplicate keys.
        assert kind == claimed or not parsed, (claimed, kind, segment[:200])
    assert proven > 0.9 * len(SEGMENTS)


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n", ("v1", "ConfigMap")),
        ("---\n# c\napiVersion: v1\nkind: Service # trailing\n", ("v1", "Service")),
        ("apiVersion: v1\r\nkind: Secret\r\n", ("v1", "Secret")),
        (
            "kind: Role\napiVersion: rbac.authorization.k8s.io/v1\nrules:\n- verbs: []\n",
            ("rbac.authorization.k8s.io/v1", "Role"),
        ),
        ("kind: ConfigMap\n", None),  # no apiVersion
        ('{"apiVersion": "v1", "kind": "ConfigMap"}\n', None),
        ("apiVersion: v1\nkind: Config\n  Map\n", None),  # a multi-line plain scalar
        ("apiVersion: v1\nkind: Config\n\n  Map\n", None),
        ("apiVersion: v1\nkind: &k ConfigMap\n", None),
        ("apiVersion: v1\nkind: !!str ConfigMap\n", None),
        ('apiVersion: v1\n"kind": ConfigMap\n', None),
        ("apiVersion: v1\nkind : ConfigMap\n", None),
        ("apiVersion: v1\nkind: ConfigMap\nkind: Deployment\n", None),
        ("apiVersion: v1\napiVersion: apps/v1\nkind: Deployment\n", None),
        ('apiVersion: v1\na: "x\nkind: ConfigMap\n"\n', None),
        ("%YAML 1.1\n---\napiVersion: v1\nkind: ConfigMap\n", None),
        ("--- !!map\napiVersion: v1\nkind: ConfigMap\n", None),
        ("apiVersion: v1\nkind:\tConfigMap\n", None),
        ("  apiVersion: v1\n  kind: ConfigMap\n", None),
        ("apiVersion: v1\na: [\nkind: ConfigMap\n]\n", None),
        ("apiVersion: v1\n? kind\n: ConfigMap\n", None),
    ],
)
def test_scan_table(text: str, kind: tuple[str, str] | None) -> None:
    assert provable_type(text) == kind
    _agrees(text)


_LINES = [
    "apiVersion: v1",
    "apiVersion: apps/v1",
    "apiVersion: &v v1",
    'apiVersion: "v1"',
    "  apps/v1",
    "kind: Deployment",
    "kind: ConfigMap",
    "kind: Pod # c",
    'kind: "Pod"',
    "kind: 'Pod'",
    "kind: &a Pod",
    "kind: *a",
    "kind:",
    "  Pod",
    "  ConfigMap",
    "kind: Config",
    "  Map",
    "kind : Pod",
    '"kind": Pod',
    "? kind",
    ": Pod",
    "a: |",
    "a: >-",
    "  text",
    "kind: Secret",
    'a: "x',
    'y"',
    "a: 'x",
    "kind: ConfigMap'",
    'kind: ConfigMap"',
    "a: [",
    "a: {",
    "]",
    "}",
    "kind: ConfigMap,",
    "- item",
    "#c",
    "",
    "   ",
    "%YAML 1.1",
    "---",
    "--- |",
    "...",
    "metadata:",
    "  name: x",
    "spec:",
    "  containers: []",
    "<<: *a",
    "b: &a {kind: Pod}",
    "a: b",
    "a: \\",
    'a: "x\\',
    "kind: !!str Pod",
    "{kind: Pod}",
    "\tkind: Pod",
]


@settings(max_examples=600, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(_LINES), min_size=1, max_size=12), st.sampled_from(["\n", "\r\n"]))
def test_generated_documents(lines: list[str], line_break: str) -> None:
    _agrees(line_break.join(lines) + line_break)


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_corpus_documents_damaged(data: st.DataObject) -> None:
    segment = data.draw(st.sampled_from([s for s in SEGMENTS if len(s) < 4000]))
    lines = segment.split("\n")
    for _ in range(data.draw(st.integers(1, 4))):
        position = data.draw(st.integers(0, len(lines)))
        action = data.draw(st.sampled_from(["insert", "delete", "indent", "dedent"]))
        if action == "insert":
            lines.insert(position, data.draw(st.sampled_from(_LINES)))
        elif lines and position < len(lines):
            if action == "delete":
                del lines[position]
            elif action == "indent":
                lines[position] = "  " + lines[position]
            else:
                lines[position] = lines[position].lstrip(" ")
    _agrees("\n".join(lines))


# Documents built from YAML's constructs (issue 21): the root at column 0 or indented, values
# that span lines (plain, single- and double-quoted, block scalars, flow collections) whose
# continuation lines, at any column, read like root keys, comments, anchors, aliases and tags,
# and three kinds of line end. Whatever the scan proves, the full parse must read the same
# type, or refuse the YAML.

_POSING = [
    "apiVersion: v1",
    "kind: ConfigMap",
    "apiVersion: apps/v1",
    "kind: Deployment",
    "end: y",
    "z",
    "- q",
    "# c",
    "",
]


@st.composite
def _continuation(draw: st.DrawFn) -> list[str]:
    lines = draw(st.lists(st.sampled_from(_POSING), min_size=1, max_size=4))
    return [" " * draw(st.sampled_from([0, 0, 1, 2, 4])) + line for line in lines]


@st.composite
def _value(draw: st.DrawFn, indent: int, depth: int) -> list[str]:
    """The lines of a value: its first is appended to ``key:``, the rest are whole lines."""
    pad = " " * indent
    style = draw(
        st.sampled_from(
            [
                "plain",
                "plain-multi",
                "single",
                "double",
                "double-escaped-break",
                "block",
                "flow-seq",
                "flow-map",
                "anchor",
                "alias",
                "tag",
                "nested",
                "sequence",
                "quoted-one-line",
            ]
        )
    )
    if style == "plain":
        return [" " + draw(st.sampled_from(["a", "b c", "x#y", "1", "true", "a: b"]))]
    if style == "plain-multi":
        return [" a", *(pad + "  " + line.lstrip() for line in draw(_continuation()))]
    if style in ("single", "double", "double-escaped-break"):
        quote = "'" if style == "single" else '"'
        first = " " + quote + "x" + ("\\" if style == "double-escaped-break" else "")
        closing = draw(st.sampled_from([pad + " end", "z: end", "end", ""])) + quote
        return [first, *draw(_continuation()), closing]
    if style == "quoted-one-line":
        return [draw(st.sampled_from([' "true"', " 'a''b'", ' "a\\"b"', ' "#x" # c']))]
    if style == "block":
        header = " " + draw(st.sampled_from(["|", ">", "|-", ">+", "|2", "| # c"]))
        content = [pad + " " * draw(st.sampled_from([1, 2, 4])) + "text"]
        content += draw(_continuation())
        return [header, *content]
    if style == "flow-seq":
        return [" [", *draw(_continuation()), draw(st.sampled_from(["]", " ]", "a]", "z: y]"]))]
    if style == "flow-map":
        return [" {", *draw(_continuation()), draw(st.sampled_from(["}", " }", "a: b}", "z: y}"]))]
    if style == "anchor":
        return [" &a " + draw(st.sampled_from(["x", "{kind: Pod}", "[a]"]))]
    if style == "alias":
        return [" *a"]
    if style == "tag":
        return [" !!str x"]
    if style == "sequence" or depth > 1:
        items = [pad + "- " + draw(st.sampled_from(["a", '"q', "kind: Pod", "'x'"])) for _ in "ab"]
        return ["", *items]
    nested = draw(_mapping(indent + 2, depth + 1, with_type=False))
    return ["", *nested]


@st.composite
def _mapping(draw: st.DrawFn, indent: int, depth: int, *, with_type: bool) -> list[str]:
    pad = " " * indent
    keys = draw(st.lists(st.sampled_from(["metadata", "data", "spec", "a", "b"]), max_size=4))
    entries: list[list[str]] = []
    for key in dict.fromkeys(keys):
        value = draw(_value(indent, depth))
        entries.append([pad + key + ":" + value[0], *value[1:]])
    if with_type:
        for line in ("apiVersion: apps/v1", "kind: Deployment"):
            if draw(st.booleans()) or draw(st.booleans()):
                position = draw(st.integers(0, len(entries)))
                entries.insert(position, [pad + line])
    if draw(st.booleans()):
        entries.insert(draw(st.integers(0, len(entries))), [" " * draw(st.integers(0, 3)) + "# c"])
    return [line for entry in entries for line in entry]


@st.composite
def _document(draw: st.DrawFn) -> str:
    lead = draw(st.sampled_from([[], ["---"], ["# Source: x"], ["---", "# c", ""], ["--- # c"]]))
    root = draw(_mapping(draw(st.sampled_from([0, 0, 1, 2])), 0, with_type=True))
    line_break = draw(st.sampled_from(["\n", "\n", "\r\n", "\r"]))
    return line_break.join([*lead, *root]) + line_break


def _agrees_exactly(text: str) -> None:
    """What the scan proves, the parse reads exactly, or the YAML is refused."""
    claimed = provable_type(text)
    if claimed is None:
        return
    try:
        documents = read_stream(text, "scan-test")
    except ManifestStreamError:
        return
    values = [document.value for document in documents if document.value is not None]
    assert len(values) == 1, (claimed, text)
    value = values[0]
    assert isinstance(value, dict), (claimed, value, text)
    assert (value.get("apiVersion"), value.get("kind")) == claimed, (claimed, value, text)


@settings(max_examples=3000, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(_document())
def test_the_scan_never_disagrees_with_the_parse_on_documents_built_from_yaml_constructs(
    text: str,
) -> None:
    _agrees_exactly(text)


@pytest.mark.parametrize(
    "text",
    [
        # The attack: an indented root, a quoted scalar's lines at column 0.
        ' apiVersion: apps/v1\n kind: Deployment\n metadata:\n  annotations:\n   a: "x\n'
        'apiVersion: v1\nkind: ConfigMap\nz: end"\n spec: {}\n',
        " apiVersion: batch/v1\n kind: CronJob\n metadata:\n  annotations:\n   a: 'x\n"
        "apiVersion: v1\nkind: ConfigMap\nz: end'\n",
        # The root at column 0 does not prove it alone: lines posing as keys before the real
        # ones would be the keys a scan sees first.
        'metadata:\n  a: "x\napiVersion: v1\nkind: ConfigMap\nz: y"\n',
        "metadata:\n  a: [\napiVersion: v1\nkind: ConfigMap,\nz: y]\n",
        "metadata:\n  a: {\napiVersion: v1\nkind: ConfigMap\nz: y}\n",
        # A block scalar whose leading blank line is wider than its first text line.
        "data:\n  a: |\n        \n    text\napiVersion: v1\nkind: ConfigMap\n",
        # An indentation indicator: not taken.
        "data:\n  a: |2\n   text\napiVersion: v1\nkind: ConfigMap\n",
        # A comment, then an indented root.
        "# c\n apiVersion: v1\n kind: ConfigMap\n",
        "---\n\n apiVersion: v1\n kind: ConfigMap\n",
    ],
)
def test_the_scan_refuses_what_only_a_parse_can_read(text: str) -> None:
    assert provable_type(text) is None


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        # kubectl's sorted keys: data (a block scalar, quotes inside) before kind.
        (
            'apiVersion: v1\ndata:\n  a.sh: |\n    X="$(cat f)" [a]\n\n    {b}\nkind: ConfigMap\n',
            ("v1", "ConfigMap"),
        ),
        ("apiVersion: v1\ndata:\n  A: \"1\"\n  B: '*'\nkind: ConfigMap\n", ("v1", "ConfigMap")),
        ("apiVersion: v1\ndata:\n  image: a.io/b@sha256:0\nkind: ConfigMap\n", ("v1", "ConfigMap")),
        ("apiVersion: v1\nitems:\n- |\n  x\nkind: List\n", ("v1", "List")),
    ],
)
def test_the_scan_still_proves_what_kubectl_writes(text: str, kind: tuple[str, str]) -> None:
    assert provable_type(text) == kind
    _agrees_exactly(text)
