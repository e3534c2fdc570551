"""Scylla operator's ScyllaDBCluster (issue 39, item 2), from the operator's own example
(tests/fixtures/operators/scylla-multi-dc-cluster.yaml: scylladb/scylla-operator
examples/multi-dc/namespaces/scylla/10_scylladbcluster.yaml, commit
cf302fd90bc3d6d6dc600dea46ade8807dc5b06e). The kind was unknown: an unknown-pod-kind warning
and nothing judged. Each datacenter's ScyllaDBDatacenter takes datacenterTemplate.placement
with its own appended (scylladbcluster/resource.go applyDatacenterTemplateOnDatacenter,
mergeScyllaV1Alpha1Placement)."""

from __future__ import annotations

import yaml
from support.declared import declared_defaults, sample
from support.operators import ARM64_TOLERATION, resolve

from kmultiarch.api import mutate_text
from kmultiarch.core.findings import IMAGE_CHOSEN_BY_OPERATOR, UNWRITABLE_CONSTRAINT
from kmultiarch.engine import EngineResult

SAMPLE = sample("scylla-multi-dc-cluster.yaml")
#: The operator's own image (its init container and sidecar), declared.
DECLARED = declared_defaults(
    "scylla.scylladb.com/v1alpha1", "ScyllaDBCluster", "registry.test/scylla-operator:1.16"
)
AMD64 = SAMPLE.replace("scylladb/scylla:6.2.0", "scylladb/scylla-amd64:6.2.0")
TOPOLOGY = "  - name: us-east-1\n    topologyLabelSelector: {topology.kubernetes.io/zone: a}\n"


def _run(text: str, declared: bool = True) -> tuple[dict[str, object], EngineResult]:
    result = mutate_text(text, DECLARED if declared else None, resolve=resolve)
    (cluster,) = yaml.safe_load_all(result.stream())
    return cluster["spec"], result


def _placements(spec: dict[str, object]) -> list[object]:
    return [datacenter.get("placement") for datacenter in spec["datacenters"]]  # type: ignore[attr-defined]


def test_a_scylladb_cluster_is_no_unknown_pod_kind() -> None:
    """Its pods run spec.scyllaDB.image, the agent's image and the operator's own: without a
    declaration the latter is said to be the operator's choice, and nothing is written."""
    spec, result = _run(SAMPLE, declared=False)
    assert spec == yaml.safe_load(SAMPLE)["spec"]
    assert {f.rule for f in result.findings} == {IMAGE_CHOSEN_BY_OPERATOR}
    assert len(result.pods) == 3


def test_each_datacenter_gets_the_toleration_appended_to_the_templates() -> None:
    """mergeScyllaV1Alpha1Placement appends every level's tolerations: the datacenter's
    placement (created) adds to the template's, which is left as it is."""
    spec, result = _run(SAMPLE)
    assert _placements(spec) == [{"tolerations": [ARM64_TOLERATION]}] * 3
    template = yaml.safe_load(SAMPLE)["spec"]["datacenterTemplate"]
    assert spec["datacenterTemplate"] == template
    assert result.findings == []


def test_an_amd64_only_scylla_is_an_unwritable_constraint() -> None:
    """Required node selector terms are appended level by level (the template's
    scylla.scylladb.com/node-type term here): ORed, an arch term beside them would not hold.
    Nothing is written, and each datacenter says so."""
    spec, result = _run(AMD64)
    assert _placements(spec) == [None] * 3
    assert [f.rule for f in result.findings] == [UNWRITABLE_CONSTRAINT] * 3


def test_a_topology_label_selector_is_not_dropped_by_a_created_placement() -> None:
    """A topologyLabelSelector becomes the datacenter's node affinity only while no placement
    exists at its level: none is created for it (the pods are judged all the same), the
    other datacenters get theirs."""
    spec, result = _run(SAMPLE.replace("  - name: us-east-1\n", TOPOLOGY))
    tolerated = {"tolerations": [ARM64_TOLERATION]}
    assert _placements(spec) == [None, tolerated, tolerated]
    assert result.findings == []
    spec, result = _run(AMD64.replace("  - name: us-east-1\n", TOPOLOGY))
    assert _placements(spec) == [None] * 3
    assert [f.rule for f in result.findings] == [UNWRITABLE_CONSTRAINT] * 3
