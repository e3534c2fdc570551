"""kmultiarch.yaml.outline: a document's plain data from parser events (scalars as strings),
for reading CRD schemas without composing them."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from kmultiarch.yaml.outline import outline

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "unknown-kinds"


def _strings(value: object) -> object:
    """``value`` with every scalar as the string YAML wrote (what an outline gives)."""
    if isinstance(value, dict):
        return {str(k): _strings(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_strings(v) for v in value]
    return str(value).lower() if isinstance(value, bool) else str(value)


def test_a_crd_outlines_as_it_loads_with_scalars_as_strings() -> None:
    text = (FIXTURES / "rabbitmq-crd.yaml").read_text()
    assert outline(text) == _strings(yaml.safe_load(text))


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", None),
        ("# only a comment\n", None),
        ("plain", "plain"),
        ("a: [1, {b: c}]\nd: ~\n", {"a": ["1", {"b": "c"}], "d": "~"}),
        ("a: &x {b: c}\nd: *x\n", {"a": {"b": "c"}, "d": None}),  # an alias is never expanded
        ("first: 1\n---\nsecond: 2\n", {"first": "1"}),
        ("a: [unclosed\n", None),
        ("? [complex]\n: value\nb: c\n", {None: "value", "b": "c"}),
        ("[" * 50 + "]" * 50, None),  # deeper than asked (max_depth=20 below)
    ],
)
def test_outlines(text: str, expected: object) -> None:
    assert outline(text, max_depth=20) == expected
