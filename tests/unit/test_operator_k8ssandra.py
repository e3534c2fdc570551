"""k8ssandra-operator's K8ssandraCluster (issue 39, item 2), from the operator's own test
fixture (tests/fixtures/operators/k8ssandra-single-dc.yaml: k8ssandra/k8ssandra-operator
test/testdata/fixtures/single-dc/k8ssandra.yaml, commit
109c42e5d2366048da003425fde1f38a4d1aadca). The kind was unknown: an unknown-pod-kind warning
and nothing judged. Each datacenter becomes a CassandraDatacenter from its options coalesced
over spec.cassandra's (pkg/cassandra/datacenter.go Coalesce)."""

from __future__ import annotations

import yaml
from support.declared import declared_defaults, sample
from support.operators import ARM64_TOLERATION, resolve

from kmultiarch.api import mutate_text
from kmultiarch.core.findings import IMAGE_CHOSEN_BY_OPERATOR, UNWRITABLE_CONSTRAINT
from kmultiarch.engine import EngineResult

SAMPLE = sample("k8ssandra-single-dc.yaml")
#: The images the operators choose themselves (server-config-init...), declared.
DECLARED = declared_defaults(
    "k8ssandra.io/v1alpha1", "K8ssandraCluster", "registry.test/k8ssandra-client:v0.6.4"
)
SERVER = "registry.test/cass-management-api:3.11.10"
AMD64_SERVER = "registry.test/cass-management-api-amd64:3.11.10"
POOL = {"key": "pool", "operator": "Exists"}


def _run(text: str, declared: bool = True) -> tuple[dict[str, object], EngineResult]:
    result = mutate_text(text, DECLARED if declared else None, resolve=resolve)
    (cluster,) = yaml.safe_load_all(result.stream())
    return cluster["spec"]["cassandra"], result


def _with(text: str, cluster: str = "", datacenter: str = "") -> str:
    """The sample with lines added to spec.cassandra and to its datacenter."""
    text = text.replace("    cluster: test\n", "    cluster: test\n" + cluster)
    context = "        k8sContext: kind-k8ssandra-0\n"
    return text.replace(context, context + datacenter)


def _datacenter(cassandra: dict[str, object]) -> dict[str, object]:
    (datacenter,) = cassandra["datacenters"]  # type: ignore[misc]
    return datacenter  # type: ignore[no-any-return]


def test_a_k8ssandra_cluster_is_no_unknown_pod_kind() -> None:
    """The published fixture names no serverImage: cass-operator picks the server by
    serverVersion, so the pods are said to run the operator's choice, and nothing changes."""
    cassandra, result = _run(SAMPLE, declared=False)
    assert cassandra == yaml.safe_load(SAMPLE)["spec"]["cassandra"]
    assert {f.rule for f in result.findings} == {IMAGE_CHOSEN_BY_OPERATOR}


def test_a_datacenters_tolerations_are_written_where_coalesce_reads_them() -> None:
    """Coalesce: the datacenter's tolerations when it has any (appended to), and when neither
    it nor spec.cassandra has any, the datacenter's are the pods'."""
    cassandra, result = _run(_with(SAMPLE, datacenter=f"        serverImage: {SERVER}\n"))
    assert _datacenter(cassandra)["tolerations"] == [ARM64_TOLERATION]
    assert result.findings == []
    own = f"        serverImage: {SERVER}\n        tolerations: [{{key: pool, operator: Exists}}]\n"
    cassandra, _ = _run(_with(SAMPLE, datacenter=own))
    assert _datacenter(cassandra)["tolerations"] == [POOL, ARM64_TOLERATION]


def test_the_clusters_tolerations_are_not_replaced_by_a_datacenters() -> None:
    """A datacenter without tolerations takes spec.cassandra's; one written into it would
    replace them, so none is (a toleration left out only keeps pods off nodes)."""
    text = _with(
        SAMPLE,
        cluster="    tolerations: [{key: pool, operator: Exists}]\n",
        datacenter=f"        serverImage: {SERVER}\n",
    )
    cassandra, result = _run(text)
    assert "tolerations" not in _datacenter(cassandra)
    assert cassandra["tolerations"] == [POOL]
    assert [pod.target.path for pod in result.pods] == [("spec", "cassandra", "datacenters", 0)]
    assert result.findings == []


def test_an_amd64_only_server_is_an_unwritable_constraint() -> None:
    """No K8ssandraCluster field reaches the pods' node affinity but the racks' terms, which
    calculateNodeAffinity ORs with their nodeAffinityLabels: said, never dropped in silence.
    The cluster's serverImage counts when the datacenter names none (Coalesce)."""
    for text in (
        _with(SAMPLE, datacenter=f"        serverImage: {AMD64_SERVER}\n"),
        _with(SAMPLE, cluster=f"    serverImage: {AMD64_SERVER}\n"),
    ):
        cassandra, result = _run(text)
        assert "affinity" not in _datacenter(cassandra)
        (finding,) = result.findings
        assert finding.rule == UNWRITABLE_CONSTRAINT
        assert "spec.cassandra.datacenters[0]" in finding.message


def test_a_datacenters_containers_replace_the_clusters() -> None:
    """Coalesce: the datacenter's extra containers when it has any, else the cluster's."""
    cluster = "    containers: [{name: probe, image: registry.test/probe-amd64:1}]\n"
    datacenter = f"        serverImage: {SERVER}\n"
    cassandra, result = _run(_with(SAMPLE, cluster=cluster, datacenter=datacenter))
    assert [f.rule for f in result.findings] == [UNWRITABLE_CONSTRAINT]
    datacenter += "        containers: [{name: probe, image: registry.test/probe:1}]\n"
    cassandra, result = _run(_with(SAMPLE, cluster=cluster, datacenter=datacenter))
    assert _datacenter(cassandra)["tolerations"] == [ARM64_TOLERATION]
    assert result.findings == []
