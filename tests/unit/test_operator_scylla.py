"""The Scylla operator's ScyllaCluster (issue 39, item 2), from the operator's own sample
(tests/fixtures/operators/scylla-cluster.yaml: scylladb/scylla-operator
examples/scylladb/scylla.scyllacluster.yaml, commit adefed4ef914e8b856a52bc638e2e61e9d3e15d6).
The kind was unknown: an unknown-pod-kind warning and nothing written."""

from __future__ import annotations

import yaml
from support.declared import declared_defaults, sample
from support.operators import ARCH_IN_AMD64_TERM, ARM64_TOLERATION, resolve

from kmultiarch.api import mutate_text
from kmultiarch.core.findings import IMAGE_CHOSEN_BY_OPERATOR
from kmultiarch.engine import EngineResult

SAMPLE = sample("scylla-cluster.yaml")
#: The operator's own image, as an air-gapped user declares it.
DECLARED = declared_defaults(
    "scylla.scylladb.com/v1", "ScyllaCluster", "registry.test/scylla-operator:1.18"
)
SAMPLE_TERM = {
    "key": "scylla.scylladb.com/node-type",
    "operator": "In",
    "values": ["scylla"],
}


def _run(text: str, declared: bool = True) -> tuple[dict[str, object], EngineResult]:
    result = mutate_text(text, DECLARED if declared else None, resolve=resolve)
    (cluster,) = yaml.safe_load_all(result.stream())
    return cluster["spec"]["datacenter"]["racks"][0]["placement"], result


def test_a_scylla_cluster_rack_is_placed_by_its_own_placement() -> None:
    """StatefulSetForRack: the rack's placement.tolerations are the pods' tolerations; the
    images are repository:version (the CRD's default repository) and the agent's."""
    placement, result = _run(SAMPLE)
    assert placement["tolerations"][-1] == ARM64_TOLERATION  # type: ignore[index]
    assert {str(reference) for reference in result.resolutions} == {
        "docker.io/scylladb/scylla:2026.2.4",
        "docker.io/scylladb/scylla-manager-agent:3.12.0@sha256:"
        "c06331ed0ba69e2ae128d39e97915643661e7a69991a5831ff6c24e4379a7e3d",
        "registry.test/scylla-operator:1.18",
    }
    assert result.findings == []


def test_an_amd64_only_scylla_joins_the_arch_term_to_the_racks_node_affinity() -> None:
    """The rack's bare placement.nodeAffinity is the pods' (no other term is added by the
    operator for a ScyllaCluster: migrate.go RackTemplate nil): the arch expression joins its
    own term."""
    text = SAMPLE.replace(
        "  version: 2026.2.4\n", "  version: 2026.2.4\n  repository: registry.test/scylla-amd64\n"
    )
    placement, _ = _run(text)
    node_affinity = placement["nodeAffinity"]  # type: ignore[index]
    (term,) = node_affinity["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    assert term["matchExpressions"] == [SAMPLE_TERM, *ARCH_IN_AMD64_TERM["matchExpressions"]]
    assert "affinity" not in placement  # a ScyllaCluster's placement has no affinity field


def test_the_operators_own_image_is_its_choice_until_declared() -> None:
    placement, result = _run(SAMPLE, declared=False)
    assert (
        placement
        == yaml.safe_load(SAMPLE.split("\n", 2)[2])["spec"]["datacenter"]["racks"][0]["placement"]
    )
    (finding,) = result.findings
    assert finding.rule == IMAGE_CHOSEN_BY_OPERATOR and "operator's own image" in finding.message
