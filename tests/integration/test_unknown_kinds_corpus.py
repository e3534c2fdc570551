"""``unknown-pod-kind`` on the real corpora (tests/support/corpus.py): exactly the kinds below
are warned, each one whose operator makes pods and that the catalogue lacks; a warning changes
no byte of mutate's output; and every entry suggested, pasted into a policy, is read by the
policy reader and gets its resources decided on (and silences the warning)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from support.corpus import CLUSTERS, CORPORA, corpus_files

import kmultiarch.engine
from kmultiarch.api import mutate_text
from kmultiarch.core.findings import UNKNOWN_POD_KIND, Finding
from kmultiarch.core.operators.catalogue import CATALOGUE
from kmultiarch.core.operators.model import api_group, catalogue_by_kind
from kmultiarch.core.policy.model import Policy
from kmultiarch.errors import ManifestStreamError
from kmultiarch.io.config import parse_policy_text

#: The corpora's kinds that are warned: (API group, kind) -> the pods its operator makes.
#: ClusterPolicy stays warned: its DaemonSets' pods have no affinity or nodeSelector field in
#: it, and spec.daemonsets.tolerations, when set, replaces every DaemonSet's own tolerations
#: (NVIDIA/gpu-operator controllers/object_controls.go applyCommonDaemonsetConfig), so none
#: could be created; which DaemonSets run follows per-component and per-node rules, and the
#: driver's image tag is suffixed with each node's OS.
EXPECTED = {
    ("nvidia.com", "ClusterPolicy"): "the GPU operator's DaemonSets (driver, toolkit, plugins)",
}

FILES = [(name, path) for name in CORPORA for path in corpus_files(name)]


def _mutate(text: str, source: str, policy: Policy | None = None) -> kmultiarch.engine.EngineResult:
    return mutate_text(text, policy or Policy(), resolve=CLUSTERS["mixed"], source=source)


def _warnings(result: kmultiarch.engine.EngineResult) -> list[Finding]:
    return [finding for finding in result.findings if finding.rule == UNKNOWN_POD_KIND]


@pytest.fixture(scope="module")
def warned() -> dict[str, list[Finding]]:
    """The unknown-pod-kind warnings of each corpus file (the readable ones)."""
    if not FILES:
        pytest.skip("the corpora are not beside this checkout")
    found: dict[str, list[Finding]] = {}
    for _, path in FILES:
        try:
            result = _mutate(path.read_text(encoding="utf-8"), path.name)
        except ManifestStreamError:
            continue  # the files with duplicate keys, refused
        found[str(path)] = _warnings(result)
    return found


def test_the_warned_kinds_are_pod_makers_the_catalogue_lacks(
    warned: dict[str, list[Finding]],
) -> None:
    kinds = {
        (api_group(finding.resource.api_version), finding.resource.kind)
        for findings in warned.values()
        for finding in findings
        if finding.resource is not None
    }
    catalogued = set(catalogue_by_kind(CATALOGUE))
    assert kinds <= set(EXPECTED), kinds - set(EXPECTED)
    assert set(EXPECTED) - catalogued <= kinds
    assert not kinds & catalogued
    for findings in warned.values():
        for finding in findings:
            assert finding.severity == "warning" and finding.suggestion


@pytest.mark.parametrize(("corpus", "path"), FILES, ids=[f"{c}/{p.name}" for c, p in FILES])
def test_a_warning_changes_no_byte(
    corpus: str, path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    text = path.read_text(encoding="utf-8")
    try:
        warned = _mutate(text, path.name)
    except ManifestStreamError:
        return
    monkeypatch.setattr(kmultiarch.engine.pipeline, "unknown_kind_findings", lambda *_, **__: [])
    silent = _mutate(text, path.name)
    assert warned.stream() == silent.stream()
    assert [f for f in warned.findings if f.rule != UNKNOWN_POD_KIND] == silent.findings


def test_every_suggested_entry_is_read_and_gets_its_resources_decided(
    warned: dict[str, list[Finding]],
) -> None:
    for name, findings in warned.items():
        if not findings:
            continue
        entries: dict[tuple[str, str], str] = {}
        for finding in findings:
            assert finding.resource is not None and finding.suggestion is not None
            kind = (api_group(finding.resource.api_version), finding.resource.kind)
            entries.setdefault(kind, finding.suggestion)
        spec = "  podSpecs:\n" + "".join(
            f"  {line}\n" for entry in entries.values() for line in entry.splitlines()
        )
        policy = parse_policy_text(
            "apiVersion: kmultiarch.dev/v1alpha1\nkind: MultiArchPolicy\nmetadata: {name: t}\n"
            f"spec:\n{spec}",
            "policy.yaml",
        )
        result = _mutate(Path(name).read_text(encoding="utf-8"), Path(name).name, policy)
        assert not _warnings(result), name
        decided = {(api_group(pod.workload.api_version), pod.workload.kind) for pod in result.pods}
        assert set(entries) <= decided, (name, set(entries) - decided)
        output = list(yaml.safe_load_all(result.stream()))
        assert len(output) >= 1
