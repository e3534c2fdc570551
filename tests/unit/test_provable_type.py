"""The scan that lets readers skip composing documents without pod templates is conservative:
whenever it names a document's apiVersion and kind, the full parse agrees (or finds no such
pair, no mapping, or no valid YAML: a document without a pod template in every case)."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.corpus import corpus_files, require_corpus

from kmultiarch.errors import ManifestStreamError
from kmultiarch.yaml.stream import _split_segments, provable_type, read_stream

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
        segments.extend(_split_segments(path.read_text(encoding="utf-8")))
    return segments


SEGMENTS = _segments()


def test_the_corpus_is_there() -> None:
    require_corpus()
    assert len(SEGMENTS) > 2000


def test_on_the_corpus_the_scan_agrees_with_the_parse_and_proves_most_kinds() -> None:
    require_corpus()
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
    require_corpus()
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
