"""cass-operator's CassandraDatacenter (issue 39, item 2), from the operator's own sample
(tests/fixtures/operators/cass-operator-three-nodes.yaml: k8ssandra/cass-operator
config/samples/example-cassdc-three-nodes-single-rack.yaml, commit
d56972905e8b67502578bdbd832a09e653fa8e16). The kind was unknown: an unknown-pod-kind warning
and nothing written."""

from __future__ import annotations

import yaml
from support.declared import declared_defaults, policy, sample
from support.operators import ARCH_IN_AMD64, ARM64_TOLERATION, resolve

from kmultiarch.api import mutate_text
from kmultiarch.core.findings import (
    IMAGE_CHOSEN_BY_OPERATOR,
    SCHEDULING_CONFLICT,
    UNWRITABLE_CONSTRAINT,
)
from kmultiarch.engine import EngineResult

SAMPLE = sample("cass-operator-three-nodes.yaml")
#: The image the operator's image config gives a Cassandra 4.1 datacenter's config init.
DECLARED = declared_defaults(
    "cassandra.datastax.com/v1beta1", "CassandraDatacenter", "registry.test/k8ssandra-client:v0.6.4"
)
AMD64_SERVER = "registry.test/cass-management-api-amd64:4.1.2"


def _run(text: str, declared: bool = True) -> tuple[dict[str, object], EngineResult]:
    result = mutate_text(text, DECLARED if declared else None, resolve=resolve)
    (datacenter,) = yaml.safe_load_all(result.stream())
    return datacenter["spec"], result


def _named(server: str = "registry.test/cass-management-api:4.1.2", text: str = SAMPLE) -> str:
    return text.replace(
        '  serverVersion: "4.1.2"\n',
        f'  serverVersion: "4.1.2"\n  serverImage: {server}\n'
        "  systemLoggerImage: registry.test/system-logger:v1.27.0\n",
    )


def test_a_datacenters_tolerations_go_where_the_operator_reads_them() -> None:
    """buildPodTemplateSpec: Tolerations = spec.tolerations, whatever the template says."""
    spec, result = _run(_named())
    assert spec["tolerations"] == [ARM64_TOLERATION]
    assert "tolerations" not in spec["podTemplateSpec"]["spec"]  # type: ignore[index]
    assert result.findings == []


def test_an_amd64_only_server_gets_the_arch_term_in_the_pod_template() -> None:
    """calculateNodeAffinity: with no nodeAffinityLabels and no rack affinity, the pods'
    required terms are the template's alone: the arch term goes there and holds."""
    spec, result = _run(_named(AMD64_SERVER))
    assert spec["podTemplateSpec"]["spec"]["affinity"] == ARCH_IN_AMD64  # type: ignore[index]
    assert "tolerations" not in spec and "affinity" not in spec
    assert result.findings == []


def test_node_affinity_labels_would_or_an_arch_term_so_none_is_written() -> None:
    """calculateNodeAffinity makes the nodeAffinityLabels one required term and appends the
    template's beside it: nodeSelectorTerms are ORed, so an arch term in the template would
    admit arm64 nodes through the labels' term. Nothing is written, and it is said."""
    text = _named(AMD64_SERVER).replace(
        "  racks:\n    - name: rack1\n",
        "  racks:\n    - name: rack1\n      nodeAffinityLabels: {topology.kubernetes.io/zone: a}\n",
    )
    spec, result = _run(text)
    assert "affinity" not in spec["podTemplateSpec"]["spec"]  # type: ignore[index]
    (finding,) = result.findings
    assert finding.rule == UNWRITABLE_CONSTRAINT and "ORed" in finding.message


def test_a_racks_own_node_affinity_terms_are_ored_with_the_templates() -> None:
    rack_terms = (
        "      affinity:\n        nodeAffinity:\n"
        "          requiredDuringSchedulingIgnoredDuringExecution:\n"
        "            nodeSelectorTerms:\n            - matchExpressions:\n"
        "              - {key: pool, operator: In, values: [cassandra]}\n"
    )
    text = _named(AMD64_SERVER).replace("    - name: rack2\n", "    - name: rack2\n" + rack_terms)
    spec, result = _run(text)
    assert "affinity" not in spec["podTemplateSpec"]["spec"]  # type: ignore[index]
    assert [f.rule for f in result.findings] == [UNWRITABLE_CONSTRAINT]


def test_a_template_is_created_for_the_arch_term_when_the_datacenter_has_none() -> None:
    document = yaml.safe_load(_named(AMD64_SERVER).split("\n", 2)[2])
    del document["spec"]["podTemplateSpec"]
    spec, _ = _run(yaml.safe_dump(document, sort_keys=False))
    assert spec["podTemplateSpec"] == {"spec": {"affinity": ARCH_IN_AMD64}}


def test_the_published_sample_leaves_the_server_image_to_the_operator() -> None:
    """makeImage: no spec.serverImage: the operator's image config chooses it by serverType
    and serverVersion; the pods are said, not constrained."""
    spec, result = _run(SAMPLE, declared=False)
    assert spec == yaml.safe_load(SAMPLE)["spec"]
    assert {f.rule for f in result.findings} == {IMAGE_CHOSEN_BY_OPERATOR}


def test_a_policy_writes_an_affinity_into_a_pod_template_spec() -> None:
    """spec.podSpecs shape: pod-template-affinity, as the catalogue's CassandraDatacenter: the
    tolerations beside the object's other fields, the affinity in its podTemplateSpec.spec."""
    entry = (
        "  podSpecs:\n  - apiVersion: example.com/v1\n    kind: Ring\n    placements:\n"
        "    - {path: /spec, shape: pod-template-affinity, images: [[/spec/image]]}\n"
    )
    ring = "apiVersion: example.com/v1\nkind: Ring\nmetadata: {name: r}\nspec:\n  image: %s\n"
    result = mutate_text(ring % "registry.test/ring-amd64:1", policy(entry), resolve=resolve)
    (document,) = yaml.safe_load_all(result.stream())
    assert document["spec"]["podTemplateSpec"] == {"spec": {"affinity": ARCH_IN_AMD64}}
    result = mutate_text(ring % "registry.test/ring:1", policy(entry), resolve=resolve)
    (document,) = yaml.safe_load_all(result.stream())
    assert document["spec"]["tolerations"] == [ARM64_TOLERATION]


def test_a_templates_node_selector_holds_when_the_datacenter_names_none() -> None:
    """construct_statefulset.go newStatefulSetForCassandraDatacenter: spec.nodeSelector is
    copied into the pod template only when set; otherwise the template's own holds, and an
    arm64 one there with an amd64-only server is a conflict, left as it is."""
    text = _named(AMD64_SERVER).replace(
        "      securityContext: {}\n",
        "      securityContext: {}\n      nodeSelector: {kubernetes.io/arch: arm64}\n",
    )
    spec, result = _run(text)
    assert "affinity" not in spec["podTemplateSpec"]["spec"]  # type: ignore[index]
    assert [f.rule for f in result.findings] == [SCHEDULING_CONFLICT]
    spec, result = _run(text.replace("  size: 3\n", "  size: 3\n  nodeSelector: {pool: db}\n"))
    assert spec["podTemplateSpec"]["spec"]["affinity"] == ARCH_IN_AMD64  # type: ignore[index]
    assert result.findings == []
