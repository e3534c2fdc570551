"""The real-cluster harness (support.kubecluster) against itself: the real kube-scheduler binds
pods by architecture, taints and tolerations, and the real kube-apiserver calls a mutating
webhook on loopback and applies its patch. The admission tests build on exactly these paths."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from support.kubecluster import KubeApiError, KubeCluster
from support.tools import kubectl_binary
from support.webhook import WebhookServer

ARM64_TAINT = "kubernetes.io/arch=arm64:NoSchedule"  # as GKE taints its Arm nodes


def _pod(name: str, **spec: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": name},
        "spec": {"containers": [{"name": "app", "image": "registry.test/app:1.0"}], **spec},
    }


ARM64_AFFINITY = {
    "nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [
                {
                    "matchExpressions": [
                        {"key": "kubernetes.io/arch", "operator": "In", "values": ["arm64"]}
                    ]
                }
            ]
        }
    }
}
ARM64_TOLERATION = {
    "key": "kubernetes.io/arch",
    "operator": "Equal",
    "value": "arm64",
    "effect": "NoSchedule",
}


@pytest.fixture
def two_nodes(kube: KubeCluster) -> KubeCluster:
    kube.create_node("amd64-node", "amd64")
    kube.create_node("arm64-node", "arm64", taints=[ARM64_TAINT])
    return kube


def test_nodes_keep_only_their_own_taints_and_are_ready(two_nodes: KubeCluster) -> None:
    nodes = {
        node["metadata"]["name"]: node
        for node in two_nodes.request("GET", "/api/v1/nodes")["items"]
    }
    assert set(nodes) == {"amd64-node", "arm64-node"}
    # TaintNodesByCondition's not-ready taint is gone; the requested one stays.
    assert nodes["amd64-node"]["spec"].get("taints") is None
    assert nodes["arm64-node"]["spec"]["taints"] == [
        {"key": "kubernetes.io/arch", "value": "arm64", "effect": "NoSchedule"}
    ]
    arm64 = nodes["arm64-node"]
    assert arm64["metadata"]["labels"]["kubernetes.io/arch"] == "arm64"
    assert arm64["status"]["nodeInfo"]["architecture"] == "arm64"
    assert arm64["status"]["allocatable"]["pods"] == "110"
    ready = [c for c in arm64["status"]["conditions"] if c["type"] == "Ready"]
    assert ready[0]["status"] == "True"


def test_scheduler_binds_a_tolerating_arm64_pod_to_the_tainted_arm64_node(
    two_nodes: KubeCluster,
) -> None:
    namespace = two_nodes.new_namespace("arm")
    pod = _pod("arm", affinity=ARM64_AFFINITY, tolerations=[ARM64_TOLERATION])
    two_nodes.create_pod(namespace, pod)

    assert two_nodes.wait_bound(namespace, "arm") == "arm64-node"


def test_scheduler_binds_a_pod_without_toleration_to_the_amd64_node(
    two_nodes: KubeCluster,
) -> None:
    namespace = two_nodes.new_namespace("plain")
    for index in range(3):
        two_nodes.create_pod(namespace, _pod(f"plain-{index}"))

    bound = {two_nodes.wait_bound(namespace, f"plain-{index}") for index in range(3)}

    assert bound == {"amd64-node"}


def test_arm64_pod_without_toleration_stays_pending_with_the_schedulers_reason(
    two_nodes: KubeCluster,
) -> None:
    namespace = two_nodes.new_namespace("pending")
    two_nodes.create_pod(namespace, _pod("untolerated", affinity=ARM64_AFFINITY))

    assert two_nodes.wait_bound(namespace, "untolerated", timeout=3) is None
    message = two_nodes.scheduling_message(namespace, "untolerated")
    assert message.startswith("Unschedulable: 0/2 nodes are available"), message
    assert "taint {kubernetes.io/arch: arm64}" in message, message
    assert "1 node(s) didn't match Pod's node affinity" in message, message


def test_a_bound_pod_is_deleted_at_once(two_nodes: KubeCluster) -> None:
    namespace = two_nodes.new_namespace("delete")
    two_nodes.create_pod(namespace, _pod("short"))
    assert two_nodes.wait_bound(namespace, "short") == "amd64-node"

    two_nodes.delete_pod(namespace, "short")

    with pytest.raises(KubeApiError) as gone:
        two_nodes.get_pod(namespace, "short")
    assert gone.value.status == 404


def test_a_pod_needs_its_service_account_which_each_namespace_is_given(kube: KubeCluster) -> None:
    namespace = kube.new_namespace("sa")
    account = kube.get("v1", "ServiceAccount", "default", namespace)
    assert account is not None
    assert account["automountServiceAccountToken"] is False

    created = kube.create_pod(namespace, _pod("defaulted"))
    assert created["spec"]["serviceAccountName"] == "default"
    assert "volumes" not in created["spec"]  # no token is mounted
    with pytest.raises(
        KubeApiError, match=r'service account \S+/builder: serviceaccount "builder" not found'
    ):
        kube.create_pod(namespace, _pod("named", serviceAccountName="builder"))


def test_apply_creates_then_replaces_objects(kube: KubeCluster) -> None:
    namespace = kube.new_namespace("apply")
    secret: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "pull", "namespace": namespace},
        "type": "kubernetes.io/dockerconfigjson",
        "stringData": {".dockerconfigjson": json.dumps({"auths": {}})},
    }
    first = kube.apply(secret)
    second = kube.apply({**secret, "metadata": {**secret["metadata"], "labels": {"v": "2"}}})

    assert first["metadata"]["uid"] == second["metadata"]["uid"]
    assert second["metadata"]["labels"] == {"v": "2"}
    # The ServiceAccount admission plugin copies its pull secrets into pods that name none.
    kube.apply(
        {
            "apiVersion": "v1",
            "kind": "ServiceAccount",
            "metadata": {"name": "puller", "namespace": namespace},
            "automountServiceAccountToken": False,
            "imagePullSecrets": [{"name": "pull"}],
        }
    )
    created = kube.create_pod(namespace, _pod("pulling", serviceAccountName="puller"))
    assert created["spec"]["imagePullSecrets"] == [{"name": "pull"}]


def test_kubeconfig_works_for_kubectl(two_nodes: KubeCluster) -> None:
    completed = subprocess.run(
        [kubectl_binary(), "--kubeconfig", two_nodes.kubeconfig, "get", "nodes", "-o", "json"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={"PATH": "/usr/bin:/bin", "HOME": str(two_nodes.workdir)},
    )
    assert completed.returncode == 0, completed.stderr
    names = {node["metadata"]["name"] for node in json.loads(completed.stdout)["items"]}
    assert names == {"amd64-node", "arm64-node"}


def _select_arm64(request: Mapping[str, Any]) -> list[dict[str, Any]]:
    return [
        {"op": "add", "path": "/spec/nodeSelector", "value": {"kubernetes.io/arch": "arm64"}},
        {"op": "add", "path": "/spec/tolerations/-", "value": ARM64_TOLERATION},
    ]


@pytest.fixture
def arm64_webhook(two_nodes: KubeCluster, tmp_path: Path) -> Iterator[tuple[WebhookServer, str]]:
    """A webhook adding an arm64 nodeSelector and toleration to the pods of one namespace
    (labelled for it), registered and in use; the webhook server and the namespace."""
    namespace = two_nodes.new_namespace("hooked", labels={"kmultiarch-test": "hooked"})
    with WebhookServer(tmp_path, _select_arm64) as webhook:
        two_nodes.apply(
            webhook.configuration(
                "select-arm64",
                namespace_selector={"matchLabels": {"kmultiarch-test": "hooked"}},
            )
        )
        two_nodes.wait_admitted(namespace, _pod("probe"), lambda pod: "nodeSelector" in pod["spec"])
        yield webhook, namespace


def test_api_server_calls_a_loopback_webhook_and_applies_its_patch(
    two_nodes: KubeCluster, arm64_webhook: tuple[WebhookServer, str]
) -> None:
    webhook, namespace = arm64_webhook

    created = two_nodes.create_pod(namespace, _pod("mutated", tolerations=[]))

    assert created["spec"]["nodeSelector"] == {"kubernetes.io/arch": "arm64"}
    assert ARM64_TOLERATION in created["spec"]["tolerations"]
    assert two_nodes.wait_bound(namespace, "mutated") == "arm64-node"
    last = webhook.reviews()[-1]
    # The API server appends the webhook's timeout (default 10 s) to the configured URL.
    assert last.path == "/mutate?timeout=10s"
    assert last.review["apiVersion"] == "admission.k8s.io/v1"
    assert last.review["request"]["operation"] == "CREATE"
    assert last.review["request"]["namespace"] == namespace
    assert last.review["request"]["object"]["metadata"]["name"] == "mutated"
    assert last.review["request"]["dryRun"] is False


def test_a_webhook_outside_its_namespace_selector_is_not_called(
    two_nodes: KubeCluster, arm64_webhook: tuple[WebhookServer, str]
) -> None:
    webhook, _ = arm64_webhook
    other = two_nodes.new_namespace("other")
    calls = len(webhook.reviews())

    created = two_nodes.create_pod(other, _pod("untouched"))

    assert len(webhook.reviews()) == calls
    assert "nodeSelector" not in created["spec"]
    assert two_nodes.wait_bound(other, "untouched") == "amd64-node"
