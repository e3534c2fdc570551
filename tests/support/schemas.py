"""Validation against the published schemas vendored in ``tests/fixtures/schemas`` (see its
README.md for where each came from): SARIF 2.1.0 and GitLab's Code Quality report."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

from jsonschema import Draft4Validator, Draft7Validator

SCHEMAS = Path(__file__).resolve().parents[1] / "fixtures" / "schemas"

#: What GitLab's documentation ("Code Quality report format") requires of every entry, beyond
#: the lenient schema its parser applies.
GITLAB_DOCUMENTED_ENTRY: dict[str, Any] = {
    "type": "object",
    "required": ["description", "check_name", "fingerprint", "severity", "location"],
    "properties": {
        "description": {"type": "string", "minLength": 1},
        "check_name": {"type": "string", "minLength": 1},
        "fingerprint": {"type": "string", "minLength": 1},
        "severity": {"enum": ["info", "minor", "major", "critical", "blocker"]},
        "location": {
            "type": "object",
            "required": ["path", "lines"],
            "properties": {
                "path": {"type": "string", "minLength": 1},
                "lines": {
                    "type": "object",
                    "required": ["begin"],
                    "properties": {"begin": {"type": "integer", "minimum": 1}},
                },
            },
        },
    },
}


@cache
def _schema(name: str) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((SCHEMAS / name).read_text())
    return loaded


def validate_sarif(log: Any) -> None:
    """Raise ``jsonschema.ValidationError`` unless ``log`` is a valid SARIF 2.1.0 log."""
    schema = _schema("sarif-schema-2.1.0.json")
    Draft4Validator.check_schema(schema)
    Draft4Validator(schema).validate(log)


def validate_gitlab_report(text: str) -> list[dict[str, Any]]:
    """The report's entries; raises unless ``text`` is one JSON array (no byte order mark) whose
    entries pass GitLab's schema and what its documentation asks."""
    assert not text.startswith("\ufeff"), "GitLab's parser refuses a byte order mark"
    report = json.loads(text)
    entry = _schema("gitlab-codeclimate.json")
    Draft7Validator.check_schema(entry)
    schema = {"type": "array", "items": {"allOf": [entry, GITLAB_DOCUMENTED_ENTRY]}}
    Draft7Validator(schema).validate(report)
    entries: list[dict[str, Any]] = report
    return entries
