"""The webhook's reads from the API server (issue 37, item 3): the pod's pull secrets and its
ServiceAccount's, get only (never list), decoded in memory, kept while fresh, never logged; the
kubeconfig or in-cluster configuration. httpx.MockTransport answers as the API server would
(the real one is in test_admission_cluster.py)."""

from __future__ import annotations

import base64
import json
import logging
from pathlib import Path
from typing import Any

import httpx
import pytest
import trustme
import yaml

from kmultiarch.admission.kubeapi import KubeConfigError, KubeReader, kube_settings

PASSWORD = "s3cret-Pa55"


def dockerconfig_secret(namespace: str, name: str, host: str, version: str = "1") -> dict[str, Any]:
    auth = base64.b64encode(f"alice:{PASSWORD}".encode()).decode()
    config = json.dumps({"auths": {host: {"auth": auth}}}).encode()
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"namespace": namespace, "name": name, "resourceVersion": version},
        "type": "kubernetes.io/dockerconfigjson",
        "data": {".dockerconfigjson": base64.b64encode(config).decode()},
    }


class FakeApi:
    def __init__(self, objects: dict[str, dict[str, Any]]) -> None:
        self.objects = objects
        self.requests: list[tuple[str, str]] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append((request.method, request.url.path))
        found = self.objects.get(request.url.path)
        if found is None:
            return httpx.Response(404, json={"kind": "Status", "code": 404})
        return httpx.Response(200, json=found)


@pytest.fixture
def settings(tmp_path: Path):
    kubeconfig = tmp_path / "kubeconfig"
    ca = trustme.CA()
    kubeconfig.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "current-context": "test",
                "contexts": [{"name": "test", "context": {"cluster": "c", "user": "u"}}],
                "clusters": [
                    {
                        "name": "c",
                        "cluster": {
                            "server": "https://127.0.0.1:6443",
                            "certificate-authority-data": base64.b64encode(
                                ca.cert_pem.bytes()
                            ).decode(),
                        },
                    }
                ],
                "users": [{"name": "u", "user": {"token": "the-token"}}],
            }
        )
    )
    return kube_settings(str(kubeconfig))


def reader(settings, objects: dict[str, dict[str, Any]]) -> tuple[KubeReader, FakeApi]:
    api = FakeApi(objects)
    return KubeReader(settings, transport=httpx.MockTransport(api)), api


POD = {
    "metadata": {"name": "web"},
    "spec": {
        "imagePullSecrets": [{"name": "regcred"}],
        "containers": [{"name": "c", "image": "private.example/app:1"}],
    },
}


def test_pull_secrets_of_the_pod_and_its_service_account_are_read_with_get_only(
    settings, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    kube, api = reader(
        settings,
        {
            "/api/v1/namespaces/shop/serviceaccounts/default": {
                "apiVersion": "v1",
                "kind": "ServiceAccount",
                "metadata": {"namespace": "shop", "name": "default"},
                "imagePullSecrets": [{"name": "sa-cred"}],
            },
            "/api/v1/namespaces/shop/secrets/regcred": dockerconfig_secret(
                "shop", "regcred", "private.example"
            ),
            "/api/v1/namespaces/shop/secrets/sa-cred": dockerconfig_secret(
                "shop", "sa-cred", "other.example"
            ),
        },
    )
    configs = kube.pull_secrets(POD, "shop")
    assert [config.label for config in configs] == ["Secret shop/regcred", "Secret shop/sa-cred"]
    assert {method for method, _ in api.requests} == {"GET"}
    assert all(path.split("/")[-1] in ("default", "regcred", "sa-cred") for _, path in api.requests)
    # Kept while fresh: a second pod of the namespace costs no read.
    count = len(api.requests)
    kube.pull_secrets(POD, "shop")
    assert len(api.requests) == count
    assert PASSWORD not in caplog.text
    assert PASSWORD not in repr(configs)


def test_a_missing_service_account_or_secret_is_no_error(settings) -> None:
    kube, _ = reader(
        settings,
        {
            "/api/v1/namespaces/shop/secrets/regcred": dockerconfig_secret(
                "shop", "regcred", "private.example"
            )
        },
    )
    pod = json.loads(json.dumps(POD))
    pod["spec"]["imagePullSecrets"].append({"name": "gone"})
    assert [c.label for c in kube.pull_secrets(pod, "shop")] == ["Secret shop/regcred"]


def test_a_pod_without_pull_secrets_reads_only_its_service_account(settings) -> None:
    kube, api = reader(settings, {})
    pod = {"spec": {"serviceAccountName": "builder", "containers": []}}
    assert kube.pull_secrets(pod, "ci") == []
    assert api.requests == [("GET", "/api/v1/namespaces/ci/serviceaccounts/builder")]


def test_the_bearer_token_of_the_kubeconfig_is_sent(settings) -> None:
    seen: list[str] = []

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(request.headers.get("Authorization", ""))
        return httpx.Response(200, json={"kind": "Node", "metadata": {"name": "n1"}})

    kube = KubeReader(settings, transport=httpx.MockTransport(answer))
    assert kube.node("n1") == {"kind": "Node", "metadata": {"name": "n1"}}
    assert seen == ["Bearer the-token"]


def test_an_exec_user_is_refused_with_what_to_use(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        yaml.safe_dump(
            {
                "current-context": "t",
                "contexts": [{"name": "t", "context": {"cluster": "c", "user": "u"}}],
                "clusters": [{"name": "c", "cluster": {"server": "https://h:6443"}}],
                "users": [{"name": "u", "user": {"exec": {"command": "aws"}}}],
            }
        )
    )
    with pytest.raises(KubeConfigError, match="token or a client certificate"):
        kube_settings(str(kubeconfig))


def test_no_configuration_at_all_says_what_to_give(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("KUBECONFIG", "KUBERNETES_SERVICE_HOST", "KUBERNETES_SERVICE_PORT"):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(KubeConfigError, match="--kubeconfig"):
        kube_settings(None)
