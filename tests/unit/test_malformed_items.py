"""A regression of round 4's ``malformed-field`` warning (issue 36, item 18): a wildcard
placement (``/spec/*/*/k``) that met a list of 50,000 numbers printed 50,000 warnings and
counted 50,000 pod specs, and read from stdin the run took 47 s, the warnings' locations each
searching the whole document for Helm's ``# Source:`` comment. One warning per placement and
resource; items that are not objects are no pod specs; locating findings on stdin reads each
document's head once."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from support.cli import clean_env, run_kmultiarch
from support.operators import resolve

from kmultiarch.api import mutate_text
from kmultiarch.core.findings import MALFORMED_FIELD, UNRESOLVED_IMAGE
from kmultiarch.core.resolution import Resolution
from kmultiarch.errors import ResolutionError
from kmultiarch.io.config import parse_policy_text
from kmultiarch.io.inputs import STDIN_NAME
from kmultiarch.output import locations

POLICY = """\
apiVersion: kmultiarch.dev/v1alpha1
kind: MultiArchPolicy
metadata: {name: p}
spec:
  podSpecs:
  - apiVersion: example.com/v1
    kind: Widget
    placements: [{path: PATH, images: [/spec/image]}]
"""


def _widget(spec: str) -> str:
    return f"apiVersion: example.com/v1\nkind: Widget\nmetadata: {{name: w}}\nspec:\n{spec}"


def test_a_wildcard_placement_meeting_50000_numbers_is_one_warning_and_no_pod_specs() -> None:
    numbers = ", ".join(str(number) for number in range(50_000))
    policy = parse_policy_text(POLICY.replace("PATH", "/spec/*/*/k"), "policy.yaml")
    result = mutate_text(_widget(f"  a: [{numbers}]\n"), policy, resolve=resolve)
    (warning,) = [f for f in result.findings if f.rule == MALFORMED_FIELD]
    assert result.pods == []
    assert warning.field_path == "spec.a[0]"
    assert warning.message.startswith(
        "spec.a[0] is a number where the operator reads an object (placement spec.*.*.k), "
        "and so are 49,999 more like it: they are no pod specs"
    )
    assert warning.line == 5


def test_fields_of_the_wrong_type_under_every_item_are_one_warning_for_their_pods() -> None:
    """Items that are objects are pods (not placed: their field is of the wrong type); the
    placement says so once."""
    items = "".join(f"  x{number}: {{k: oops}}\n" for number in range(300))
    policy = parse_policy_text(POLICY.replace("PATH", "/spec/*/k"), "policy.yaml")
    result = mutate_text(_widget(items), policy, resolve=resolve)
    (warning,) = [f for f in result.findings if f.rule == MALFORMED_FIELD]
    assert [pod.status for pod in result.pods] == ["malformed"] * 300
    assert warning.field_path == "spec.x0.k"
    assert "and so are 299 more like it: its pods are left as they are" in warning.message


def test_an_image_field_of_the_wrong_type_read_by_every_instance_is_said_once() -> None:
    items = "".join(f"  x{number}: {{}}\n" for number in range(300))
    policy = parse_policy_text(POLICY.replace("PATH", "/spec/*"), "policy.yaml")
    result = mutate_text(_widget(items + "  image: {repository: a}\n"), policy, resolve=resolve)
    warnings = [f for f in result.findings if f.rule == MALFORMED_FIELD]
    assert [warning.field_path for warning in warnings] == ["spec.image"]


class _CountingPattern:
    """A compiled pattern that counts the characters it is given to read."""

    def __init__(self, pattern: re.Pattern[str]) -> None:
        self.pattern = pattern
        self.read = 0

    def search(self, text: str, *args: int) -> re.Match[str] | None:
        self.read += len(text)
        return self.pattern.search(text, *args)

    def match(self, text: str, *args: int) -> re.Match[str] | None:
        self.read += len(text)
        return self.pattern.match(text, *args)


def test_locating_many_findings_of_one_stdin_document_reads_it_once_not_per_finding(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """2,000 warnings in one document read from stdin: each asked where Helm's template
    comment is, and the whole document (here 260 KB) was searched each time."""
    items = "".join(
        f"- {{apiVersion: apps/v1, kind: Deployment, metadata: {{name: d{number}}}, spec: "
        f"{{template: {{spec: {{containers: [{{name: c, image: registry.test/a{number}:1}}]"
        "}}}}\n"
        for number in range(2_000)
    )
    text = f"---\n# Source: chart/templates/all.yaml\napiVersion: v1\nkind: List\nitems:\n{items}"
    result = mutate_text(
        text,
        resolve=lambda references: {
            reference: Resolution(reference, error=ResolutionError(str(reference), "not found"))
            for reference in references
        },
        source=STDIN_NAME,
    )
    counting = _CountingPattern(locations._HELM_SOURCE_COMMENT)
    monkeypatch.setattr(locations, "_HELM_SOURCE_COMMENT", counting)
    if hasattr(locations, "_source_comment"):
        locations._source_comment.cache_clear()
    unresolved = [f for f in result.findings if f.rule == UNRESOLVED_IMAGE]
    assert len(unresolved) == 2_000
    where = {locations.finding_location(result, finding).split(":")[0] for finding in unresolved}
    assert where == {"chart/templates/all.yaml"}
    assert counting.read < len(text), counting.read


def test_mutate_on_stdin_says_the_50000_numbers_once(tmp_path: Path) -> None:
    numbers = "".join(f"  - {number}\n" for number in range(50_000))
    policy = tmp_path / "policy.yaml"
    policy.write_text(POLICY.replace("PATH", "/spec/*/*/k"))
    result = run_kmultiarch(
        ["mutate", "--offline", "--config", str(policy), "-"],
        env=clean_env(tmp_path),
        stdin=_widget(f"  a:\n{numbers}"),
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert result.stderr.count("malformed") + result.stderr.count("is a number") == 1
    assert "<stdin>:6: Widget w: spec.a[0] is a number" in result.stderr
    assert "0 pod specs" in result.stderr
