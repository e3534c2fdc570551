"""The last-resort rendering of a changed document (yaml.edit), used when ruamel.yaml's round
trip writes something that does not read back (issue 13): every untouched scalar keeps the text
it was written as (so its Kubernetes type), non-string keys are written back, and the comments
it could not keep are named, by line, in a warning."""

from __future__ import annotations

from typing import Any
from unittest import mock

import pytest

import kmultiarch
import kmultiarch.yaml.edit as yamledit
from kmultiarch.core.findings import COMMENTS_LOST
from kmultiarch.core.resolution import Resolution
from kmultiarch.errors import ManifestStreamError
from kmultiarch.yaml.stream import read_stream

POD = """\
apiVersion: v1
kind: Pod
metadata:
  name: p  # the pod
spec:
  # its containers
  containers:
  - name: a
    image: example.com/app:1
    env:
    - name: T
      value: 10:30
    - name: M
      value: 0o644
    - name: Q
      value: "a # inside a string"
    - name: B
      value: |
        # inside a block scalar
    resources: {limits: {cpu: 3e1}}
  nodeSelector: {1: x}
  overhead: {on: y}
"""
TOLERATION = {"key": "kubernetes.io/arch", "operator": "Equal", "value": "arm64"}


@pytest.fixture
def ruamel_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    """ruamel.yaml's round trip writes something that does not read back (it has bugs around
    comments that no fixed input reproduces on every version): the last resort runs."""

    def fail(*_: Any) -> str:
        raise ManifestStreamError("ruamel.yaml's output does not read back")

    monkeypatch.setattr(yamledit, "_ruamel_edit", fail)


@pytest.mark.usefixtures("ruamel_fails")
def test_the_last_resort_keeps_each_scalars_text_and_names_the_comments_it_lost() -> None:
    """It re-rendered from YAML 1.1 values: 10:30 became 630, 0o644 a quoted string, 3e1 a
    string, and the non-string keys made it fail; comments went without a word."""
    document = read_stream(POD, "pod.yaml")[0]
    lost: list[int] = []
    operation = {"op": "add", "path": "/spec/tolerations", "value": [TOLERATION]}
    result = yamledit.apply_operations_roundtrip(document, [operation], lost_comments=lost)
    for kept in ("value: 10:30", "value: 0o644", "cpu: 3e1", "1: x", "on: y", "# inside a"):
        assert kept in result, result
    assert "tolerations" in result
    assert read_stream(result, "pod.yaml")[0].value["spec"]["tolerations"] == [TOLERATION]
    assert lost == [4, 6]


@pytest.mark.usefixtures("ruamel_fails")
def test_a_run_that_loses_comments_says_so_in_a_finding() -> None:
    text = "# Source: chart/templates/pod.yaml\n" + POD.replace("  nodeSelector: {1: x}\n", "")
    amd64 = frozenset({kmultiarch.Platform.parse("linux/amd64")})

    def resolve(references: list[kmultiarch.ImageRef]) -> dict[kmultiarch.ImageRef, Resolution]:
        return {r: Resolution(r, amd64, "sha256:" + "0" * 64) for r in references}

    # Force the round trip: the fast path would keep every comment.
    original = yamledit._FastEditor.edit

    def not_exact(self: Any, operations: Any) -> str:
        raise yamledit._NotExact

    yamledit._FastEditor.edit = not_exact  # type: ignore[method-assign]
    try:
        with mock.patch.object(yamledit, "_anchored_edit", return_value=None):
            result = kmultiarch.mutate_text(text, resolve=resolve, source="pod.yaml")
    finally:
        yamledit._FastEditor.edit = original  # type: ignore[method-assign]
    assert "kubernetes.io/arch" in result.stream()
    assert "# Source: chart/templates/pod.yaml" in result.stream()
    [finding] = [f for f in result.findings if f.rule == COMMENTS_LOST]
    assert finding.severity == "warning" and finding.source == "pod.yaml"
    assert "lines 5, 7" in finding.message, finding.message
    assert finding.resource is not None and finding.resource.name == "p"
