"""The webhook in a real cluster (issue 37, "Done when"): pods created through a real
kube-apiserver are bound by the real kube-scheduler only to nodes whose platform runs every
image - containers, init containers, a sidecar injected by a second webhook, a private image
whose credentials are in the pod's pull secret. Images are in the real registry fixture; nodes
are amd64 and arm64, the arm64 one tainted as GKE taints it (support.kubecluster).

v1.20 has neither image volumes nor scheduling gates, and ephemeral containers are behind a
feature gate there: those paths are tested with AdmissionReviews posted to the server
(test_admission_review.py, test_admission_server.py)."""

from __future__ import annotations

import base64
import json
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from support import SeededRegistry
from support.admission import ARM_TOLERATION, AdmissionServer
from support.cli import clean_env, run_kmultiarch
from support.kubecluster import KubeApiError, KubeCluster
from support.manifests import image, write_policy
from support.webhook import WebhookServer

pytest.importorskip("uvicorn")

ARM64_TAINT = "kubernetes.io/arch=arm64:NoSchedule"
TEST_LABEL = "kmultiarch-admission-test"
SPEC = {
    "platforms": ["linux/amd64", "linux/arm64"],
    "tolerations": {"linux/arm64": [ARM_TOLERATION]},
}


@pytest.fixture
def cluster(kube: KubeCluster) -> KubeCluster:
    kube.create_node("amd64-node", "amd64")
    kube.create_node("arm64-node", "arm64", taints=[ARM64_TAINT])
    return kube


def pod(name: str, *images: str, init: tuple[str, ...] = (), **spec: Any) -> dict[str, Any]:
    manifest: dict[str, Any] = {
        "metadata": {"name": name, "labels": {"app": name}},
        "spec": {
            "containers": [{"name": f"c{n}", "image": i} for n, i in enumerate(images)],
            **spec,
        },
    }
    if init:
        manifest["spec"]["initContainers"] = [
            {"name": f"i{n}", "image": i} for n, i in enumerate(init)
        ]
    return manifest


def register(
    kube: KubeCluster, server: AdmissionServer, policy: Path, tmp_path: Path, label: str
) -> None:
    """The configuration `admission configuration --url` prints, limited to this test's
    namespace, applied; then dry-run pods until the API server calls the webhook."""
    printed = run_kmultiarch(
        [
            "admission",
            "configuration",
            "--url",
            f"{server.url}/mutate",
            "--ca-file",
            str(server.ca_pem),
            "--config",
            str(policy),
        ],
        env=clean_env(tmp_path / "configuration"),
    )
    assert printed.returncode == 0, printed.stderr
    configuration = yaml.safe_load(printed.stdout)
    selector = configuration["webhooks"][0].setdefault("namespaceSelector", {})
    selector["matchLabels"] = {TEST_LABEL: label}
    kube.apply(configuration)


def wait_for_webhook(
    kube: KubeCluster, namespace: str, server: AdmissionServer, probe_image: str
) -> None:
    """Until the API server's informer has the configuration: dry-run pods (webhooks of
    ``sideEffects: None`` are called for them) until the server has answered one."""
    deadline = time.monotonic() + 20
    probe = pod("probe", probe_image)
    while True:
        created = kube.create_pod(namespace, probe, dry_run=True)
        with server.client() as client:
            invalid_or_seen = client.get("/metrics").text
        if "kmultiarch_admission_reviews_total{outcome=" in invalid_or_seen and any(
            line.startswith("kmultiarch_admission_reviews_total") and not line.endswith(" 0.0")
            for line in invalid_or_seen.splitlines()
        ):
            return
        assert time.monotonic() < deadline, ("the API server never called the webhook", created)
        time.sleep(0.1)


def serve(
    kube: KubeCluster,
    registry: SeededRegistry,
    tmp_path: Path,
    label: str,
    **spec: Any,
) -> tuple[AdmissionServer, str]:
    policy = write_policy(tmp_path / "policy.yaml", registry, {**SPEC, **spec})
    server = AdmissionServer(
        tmp_path / "server", policy, extra_args=["--kubeconfig", str(kube.kubeconfig)]
    ).start()
    namespace = kube.new_namespace(label, labels={TEST_LABEL: label})
    register(kube, server, policy, tmp_path, label)
    wait_for_webhook(kube, namespace, server, image(registry, "multiarch-oci"))
    return server, namespace


def test_pods_are_bound_only_to_nodes_whose_platform_runs_every_image(
    cluster: KubeCluster, registry: SeededRegistry, tmp_path: Path
) -> None:
    server, namespace = serve(cluster, registry, tmp_path, "images")
    try:
        arm = image(registry, "single-oci-arm64")
        amd = image(registry, "single-docker-amd64")
        both = image(registry, "multiarch-oci")
        created = {
            "arm-only": cluster.create_pod(namespace, pod("arm-only", arm)),
            "amd-only": cluster.create_pod(namespace, pod("amd-only", amd)),
            # The init container counts: a multi-arch app with an arm64-only init container.
            "arm-init": cluster.create_pod(namespace, pod("arm-init", both, init=(arm,))),
            "amd-init": cluster.create_pod(namespace, pod("amd-init", both, init=(amd,))),
        }
        expected = {
            "arm-only": "arm64-node",
            "amd-only": "amd64-node",
            "arm-init": "arm64-node",
            "amd-init": "amd64-node",
        }
        for name, node in expected.items():
            bound = cluster.wait_bound(namespace, name)
            assert bound == node, (
                name,
                json.dumps(created[name]["spec"]),
                cluster.scheduling_message(namespace, name),
            )
        assert ARM_TOLERATION not in created["amd-init"]["spec"].get("tolerations", [])
    finally:
        server.stop()


def create_with_warnings(
    kube: KubeCluster, namespace: str, manifest: dict[str, Any]
) -> tuple[dict[str, Any], list[str]]:
    """The pod as admitted, and the warnings the API server passed on (kubectl prints them)."""
    body = {"apiVersion": "v1", "kind": "Pod", **manifest}
    response = kube.client().post(f"/api/v1/namespaces/{namespace}/pods", json=body)
    assert response.status_code == 201, response.text
    return response.json(), response.headers.get_list("Warning")


def test_a_pod_no_node_can_run_is_created_with_a_warning_and_stays_pending(
    cluster: KubeCluster, registry: SeededRegistry, tmp_path: Path
) -> None:
    server, namespace = serve(cluster, registry, tmp_path, "conflict")
    try:
        arm = image(registry, "single-oci-arm64")
        amd = image(registry, "single-docker-amd64")
        created, warnings = create_with_warnings(cluster, namespace, pod("conflict", arm, amd))
    finally:
        server.stop()
    assert any("kmultiarch:" in warning for warning in warnings), warnings
    assert "affinity" not in created["spec"]


def _inject_sidecar(sidecar_image: str):
    def mutate(request: dict[str, Any]) -> list[dict[str, Any]] | None:
        labels = request["object"]["metadata"].get("labels") or {}
        containers = request["object"]["spec"]["containers"]
        if labels.get("inject") != "true" or any(c["name"] == "sidecar" for c in containers):
            return None
        return [
            {
                "op": "add",
                "path": "/spec/containers/-",
                "value": {"name": "sidecar", "image": sidecar_image},
            }
        ]

    return mutate


def test_a_sidecar_injected_by_a_later_webhook_is_judged_with_the_pod(
    cluster: KubeCluster, registry: SeededRegistry, tmp_path: Path
) -> None:
    """The injector's configuration sorts after kmultiarch's, so the API server calls
    kmultiarch first, then the injector, then kmultiarch again (reinvocationPolicy IfNeeded)."""
    arm = image(registry, "single-oci-arm64")
    both = image(registry, "multiarch-oci")
    server, namespace = serve(cluster, registry, tmp_path, "sidecar")
    try:
        with WebhookServer(tmp_path / "injector", _inject_sidecar(arm)) as injector:
            configuration = injector.configuration(
                "zz-sidecar-injector",
                namespace_selector={"matchLabels": {TEST_LABEL: "sidecar"}},
            )
            cluster.apply(configuration)
            deadline = time.monotonic() + 20
            while not injector.reviews():
                assert time.monotonic() < deadline, "the injector was never called"
                cluster.create_pod(namespace, pod("probe", both), dry_run=True)
                time.sleep(0.1)
            manifest = pod("injected", both)
            manifest["metadata"]["labels"]["inject"] = "true"
            created = cluster.create_pod(namespace, manifest)
            bound = cluster.wait_bound(namespace, "injected")
    finally:
        server.stop()
    assert [c["name"] for c in created["spec"]["containers"]] == ["c0", "sidecar"]
    assert ARM_TOLERATION in created["spec"]["tolerations"]
    terms = created["spec"]["affinity"]["nodeAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"
    ]["nodeSelectorTerms"]
    assert all(
        expression["values"] == ["arm64"]
        for term in terms
        for expression in term["matchExpressions"]
        if expression["key"] == "kubernetes.io/arch"
    ), terms
    assert bound == "arm64-node"


def _pull_secret(registry: SeededRegistry, namespace: str) -> dict[str, Any]:
    assert registry.username and registry.password
    auth = base64.b64encode(f"{registry.username}:{registry.password}".encode()).decode()
    config = json.dumps({"auths": {registry.host: {"auth": auth}}})
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "regcred", "namespace": namespace},
        "type": "kubernetes.io/dockerconfigjson",
        "data": {".dockerconfigjson": base64.b64encode(config.encode()).decode()},
    }


def test_a_private_image_is_resolved_with_the_pods_pull_secret(
    cluster: KubeCluster,
    registry: SeededRegistry,
    basic_auth_registry: SeededRegistry,
    tmp_path: Path,
) -> None:
    private = basic_auth_registry.reference("single-oci-arm64")
    server, namespace = serve(cluster, registry, tmp_path, "private")
    try:
        cluster.apply(_pull_secret(basic_auth_registry, namespace))
        created = cluster.create_pod(
            namespace, pod("private", private, imagePullSecrets=[{"name": "regcred"}])
        )
        bound = cluster.wait_bound(namespace, "private")
    finally:
        server.stop()
    assert ARM_TOLERATION in created["spec"]["tolerations"]
    assert bound == "arm64-node"
    assert basic_auth_registry.password
    for file in (tmp_path / "server").rglob("*"):
        if file.is_file():
            assert basic_auth_registry.password.encode() not in file.read_bytes(), file


def test_a_private_image_without_credentials_is_admitted_unchanged_with_a_warning(
    cluster: KubeCluster,
    registry: SeededRegistry,
    basic_auth_registry: SeededRegistry,
    tmp_path: Path,
) -> None:
    private = basic_auth_registry.reference("single-oci-arm64")
    server, namespace = serve(cluster, registry, tmp_path, "nocreds")
    try:
        created, warnings = create_with_warnings(cluster, namespace, pod("bare", private))
    finally:
        server.stop()
    assert ARM_TOLERATION not in created["spec"].get("tolerations", [])
    assert any(private in warning for warning in warnings), warnings


@pytest.mark.parametrize("failure_policy", ["Ignore", "Fail"])
def test_failure_table_webhook_down(
    cluster: KubeCluster, registry: SeededRegistry, tmp_path: Path, failure_policy: str
) -> None:
    """No replica answers: Ignore creates the pod unjudged, Fail refuses it (the API server's
    failurePolicy, which `admission configuration` takes from the policy)."""
    label = f"down-{failure_policy.lower()}"
    server, namespace = serve(cluster, registry, tmp_path, label, failurePolicy=failure_policy)
    server.stop()
    arm = image(registry, "single-oci-arm64")
    if failure_policy == "Ignore":
        created = cluster.create_pod(namespace, pod("unjudged", arm))
        assert ARM_TOLERATION not in created["spec"].get("tolerations", [])
        assert "affinity" not in created["spec"]
    else:
        with pytest.raises(KubeApiError) as refused:
            cluster.create_pod(namespace, pod("refused", arm))
        assert "pods.kmultiarch.dev" in refused.value.message


def test_an_ephemeral_container_is_judged_against_the_real_nodes_platform(
    cluster: KubeCluster, registry: SeededRegistry, tmp_path: Path
) -> None:
    """v1.20 serves pods/ephemeralcontainers only behind a feature gate: the review the API
    server would send is posted to the server, which reads the Node from the real API."""
    server, namespace = serve(cluster, registry, tmp_path, "debug")
    arm = image(registry, "single-oci-arm64")
    amd = image(registry, "single-docker-amd64")
    running = pod("running", arm)
    running["metadata"]["namespace"] = namespace
    running["spec"]["nodeName"] = "arm64-node"
    debugged = json.loads(json.dumps(running))
    debugged["spec"]["ephemeralContainers"] = [{"name": "debugger", "image": amd}]
    body = {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": "00000000-0000-0000-0000-000000000001",
            "kind": {"group": "", "version": "v1", "kind": "Pod"},
            "resource": {"group": "", "version": "v1", "resource": "pods"},
            "subResource": "ephemeralcontainers",
            "namespace": namespace,
            "operation": "UPDATE",
            "object": debugged,
            "oldObject": running,
        },
    }
    try:
        with server.client() as client:
            response = client.post("/mutate?timeout=10s", json=body).json()["response"]
    finally:
        server.stop()
    assert response["allowed"] is False
    message = response["status"]["message"]
    assert amd in message and "arm64-node" in message and "linux/arm64" in message
