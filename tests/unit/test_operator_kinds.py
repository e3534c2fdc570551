"""New kinds of the catalogue (issue 29, item 4), from the operators' own samples
(tests/fixtures/unknown-kinds: each file names its repository and commit): CloudNativePG's
Cluster and Pooler, RabbitmqCluster, JobSet, Argo Events' Sensor and EventSource, KubeVirt's
VirtualMachine. Each used to pass in silence ("check passed")."""

from __future__ import annotations

from pathlib import Path

import yaml
from support.operators import ARCH_IN_AMD64, ARM64_TOLERATION, resolve

from kmultiarch.api import mutate_text
from kmultiarch.core.findings import IMAGE_CHOSEN_BY_OPERATOR, SCHEDULING_CONFLICT
from kmultiarch.core.operators.catalogue import CATALOGUE
from kmultiarch.core.operators.model import catalogue_by_kind
from kmultiarch.engine import EngineResult
from kmultiarch.io.config import parse_policy_text

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "unknown-kinds"


def _run(text: str, policy: str = "") -> tuple[list[dict[str, object]], EngineResult]:
    chosen = (
        parse_policy_text(
            "apiVersion: kmultiarch.dev/v1alpha1\nkind: MultiArchPolicy\nmetadata: {name: p}\n"
            f"spec:\n{policy}",
            "policy.yaml",
        )
        if policy
        else None
    )
    result = mutate_text(text, chosen, resolve=resolve)
    return list(yaml.safe_load_all(result.stream())), result


def test_every_new_kind_is_known_to_catalogue_by_kind() -> None:
    known = catalogue_by_kind(CATALOGUE)
    for group_kind in (
        ("postgresql.cnpg.io", "Cluster"),
        ("postgresql.cnpg.io", "Pooler"),
        ("rabbitmq.com", "RabbitmqCluster"),
        ("jobset.x-k8s.io", "JobSet"),
        ("argoproj.io", "Sensor"),
        ("argoproj.io", "EventSource"),
        ("kubevirt.io", "VirtualMachine"),
        ("kubevirt.io", "VirtualMachineInstance"),
    ):
        assert group_kind in known


def test_a_cnpg_cluster_sample_gets_the_toleration_in_its_affinity_configuration() -> None:
    """pods.go createPodSpec: spec.affinity.tolerations and nodeSelector are the pod's."""
    text = (FIXTURES / "cloudnative-pg-cluster.yaml").read_text(encoding="utf-8")
    (cluster, _backup), result = _run(text)
    affinity = cluster["spec"]["affinity"]  # type: ignore[index]
    assert affinity["tolerations"][-1] == ARM64_TOLERATION
    assert affinity["nodeSelector"] == {"node-role.kubernetes.io/postgres": ""}
    assert [str(r) for r in result.resolutions] == ["ghcr.io/cloudnative-pg/postgresql:16"]


def test_a_cnpg_cluster_of_an_amd64_image_gets_a_bare_node_affinity() -> None:
    """CreateAffinitySection: spec.affinity.nodeAffinity is the pod's nodeAffinity."""
    (cluster,), _ = _run(
        "apiVersion: postgresql.cnpg.io/v1\nkind: Cluster\nmetadata: {name: pg}\n"
        "spec: {instances: 1, imageName: registry.test/postgres-amd64:16}\n"
    )
    assert cluster["spec"]["affinity"] == ARCH_IN_AMD64  # type: ignore[index]


def test_a_cnpg_cluster_selecting_arm64_nodes_for_an_amd64_image_is_a_conflict() -> None:
    text = (
        "apiVersion: postgresql.cnpg.io/v1\nkind: Cluster\nmetadata: {name: pg}\n"
        "spec:\n  imageName: registry.test/postgres-amd64:16\n"
        "  affinity: {nodeSelector: {kubernetes.io/arch: arm64}}\n"
    )
    (cluster,), result = _run(text)
    assert cluster == yaml.safe_load(text)
    assert [f.rule for f in result.findings] == [SCHEDULING_CONFLICT]


def test_a_cnpg_pooler_is_placed_by_its_pod_template() -> None:
    (pooler,), _ = _run(
        "apiVersion: postgresql.cnpg.io/v1\nkind: Pooler\nmetadata: {name: pooler}\n"
        "spec:\n  cluster: {name: pg}\n  template:\n    spec:\n      containers:\n"
        "      - {name: pgbouncer, image: registry.test/pgbouncer-amd64:1}\n"
    )
    assert pooler["spec"]["template"]["spec"]["affinity"] == ARCH_IN_AMD64  # type: ignore[index]


def test_rabbitmq_samples_are_placed_by_spec_affinity_and_tolerations() -> None:
    """statefulset.go: Affinity: spec.affinity, Tolerations: spec.tolerations."""
    text = (FIXTURES / "rabbitmq-cluster.yaml").read_text(encoding="utf-8")
    clusters, result = _run(text)
    assert all(cluster["kind"] == "RabbitmqCluster" for cluster in clusters)
    # No spec.image: the operator's default image; a warning per cluster, nothing written.
    assert {f.rule for f in result.findings} == {IMAGE_CHOSEN_BY_OPERATOR}
    (cluster,), _ = _run(
        "apiVersion: rabbitmq.com/v1beta1\nkind: RabbitmqCluster\nmetadata: {name: r}\n"
        "spec: {image: registry.test/rabbitmq-amd64:4.1}\n"
    )
    assert cluster["spec"]["affinity"] == ARCH_IN_AMD64  # type: ignore[index]


def test_a_jobsets_replicated_job_templates_are_pod_specs() -> None:
    (jobset,), _ = _run(
        "apiVersion: jobset.x-k8s.io/v1alpha2\nkind: JobSet\nmetadata: {name: js}\nspec:\n"
        "  replicatedJobs:\n  - name: workers\n    template:\n      spec:\n        template:\n"
        "          spec:\n            containers:\n"
        "            - {name: w, image: registry.test/worker-amd64:1}\n"
    )
    pod = jobset["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]  # type: ignore[index]
    assert pod["affinity"] == ARCH_IN_AMD64


def test_a_sensor_runs_the_controllers_image_until_a_policy_declares_it() -> None:
    text = (
        "apiVersion: argoproj.io/v1alpha1\nkind: Sensor\nmetadata: {name: s}\n"
        "spec:\n  dependencies: []\n"
    )
    (sensor,), result = _run(text)
    assert sensor == yaml.safe_load(text)
    (finding,) = result.findings
    assert finding.rule == IMAGE_CHOSEN_BY_OPERATOR and "Sensor" in finding.message
    (sensor,), _ = _run(
        text,
        "  podSpecs:\n  - apiVersion: argoproj.io/v1alpha1\n    kind: Sensor\n"
        "    defaultImages: [quay.io/argoproj/argo-events-amd64:v1.9.6]\n",
    )
    assert sensor["spec"]["template"] == {"affinity": ARCH_IN_AMD64}  # type: ignore[index]


def test_a_kubevirt_vm_sample_names_virt_launcher_and_judges_its_container_disk() -> None:
    text = (FIXTURES / "kubevirt-virtualmachine.yaml").read_text(encoding="utf-8")
    (vm,), result = _run(text)
    (finding,) = result.findings
    assert finding.rule == IMAGE_CHOSEN_BY_OPERATOR and "virt-launcher" in finding.message
    (vm,), result = _run(
        text,
        "  podSpecs:\n  - apiVersion: kubevirt.io/v1\n    kind: VirtualMachine\n"
        "    defaultImages: [quay.io/kubevirt/virt-launcher:v1.5.0]\n",
    )
    assert {str(r) for r in result.resolutions} == {
        "quay.io/kubevirt/virt-launcher:v1.5.0",
        "docker.io/kubevirt/cirros-container-disk-demo:mybuild",  # index.docker.io, normalised
    }
    assert vm["spec"]["template"]["spec"]["tolerations"] == [ARM64_TOLERATION]  # type: ignore[index]


def test_a_minio_tenants_init_containers_are_judged_for_every_pool() -> None:
    """minio-statefulset.go NewPool: spec.initContainers run in every pool's pods."""
    (tenant,), _ = _run(
        "apiVersion: minio.min.io/v2\nkind: Tenant\nmetadata: {name: t}\nspec:\n"
        "  image: registry.test/minio:1\n"
        "  initContainers: [{name: init, image: registry.test/init-amd64:1}]\n"
        "  pools: [{name: a, servers: 4}, {name: b, servers: 4}]\n"
    )
    assert [pool["affinity"] for pool in tenant["spec"]["pools"]] == [ARCH_IN_AMD64] * 2  # type: ignore[index]
