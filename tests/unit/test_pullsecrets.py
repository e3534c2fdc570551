"""Which Secrets of the stream are a pod's pull secrets, and how they are decoded."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

from kmultiarch.core.operators.pullsecrets import pull_secret_configs
from kmultiarch.errors import InputError
from kmultiarch.registry.credentials import CredentialStore, DockerConfigSource

CONFIG = {"auths": {"registry.internal": {"username": "u", "password": "s3cret"}}}


def secret(name: str, namespace: str = "ns", **fields: Any) -> dict[str, Any]:
    encoded = base64.b64encode(json.dumps(CONFIG).encode()).decode()
    document = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name, "namespace": namespace},
        "type": "kubernetes.io/dockerconfigjson",
        "data": {".dockerconfigjson": encoded},
    }
    document.update(fields)
    return document


def pod(spec: dict[str, Any], namespace: str = "ns") -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": namespace},
        "spec": {"containers": [{"name": "c", "image": "registry.internal/a:1"}], **spec},
    }


def test_the_pods_secret_and_its_service_accounts() -> None:
    account = {
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": {"name": "default", "namespace": "ns"},
        "imagePullSecrets": [{"name": "from-account"}],
    }
    values = [
        secret("from-pod"),
        secret("from-account"),
        secret("unused"),
        account,
        pod({"imagePullSecrets": [{"name": "from-pod"}]}),
    ]
    configs = pull_secret_configs(values)
    assert [config.label for config in configs] == ["Secret ns/from-pod", "Secret ns/from-account"]
    assert configs[0].config == CONFIG
    assert "s3cret" not in repr(configs[0]) and "s3cret" not in str(configs[0])


def test_namespaces_must_match_and_other_types_are_ignored() -> None:
    values = [
        secret("regcred", namespace="other"),
        secret("opaque", type="Opaque"),
        pod({"imagePullSecrets": [{"name": "regcred"}, {"name": "opaque"}]}),
    ]
    assert pull_secret_configs(values) == []


def test_string_data_and_the_legacy_dockercfg() -> None:
    legacy = secret("old", type="kubernetes.io/dockercfg", data={})
    legacy["stringData"] = {".dockercfg": json.dumps(CONFIG["auths"])}
    (config,) = pull_secret_configs([legacy, pod({"imagePullSecrets": [{"name": "old"}]})])
    assert config.config == CONFIG


def test_a_broken_secret_is_named_without_its_content() -> None:
    broken = secret("bad", data={".dockerconfigjson": "not base64!!"})
    with pytest.raises(InputError, match=r"^Secret ns/bad: data.\.dockerconfigjson is not base64"):
        pull_secret_configs([broken, pod({"imagePullSecrets": [{"name": "bad"}]})])


def test_pull_secrets_come_after_the_auth_files(tmp_path: Any) -> None:
    source = DockerConfigSource([("Secret ns/regcred", CONFIG)])
    store = CredentialStore({"HOME": str(tmp_path)}, extra=[source])
    found = store.lookup("registry.internal")
    assert found is not None and (found.username, found.secret) == ("u", "s3cret")
    docker = tmp_path / ".docker"
    docker.mkdir()
    auth = base64.b64encode(b"me:mine").decode()
    (docker / "config.json").write_text(
        json.dumps({"auths": {"registry.internal": {"auth": auth}}})
    )
    own = CredentialStore({"HOME": str(tmp_path)}, extra=[source]).lookup("registry.internal")
    assert own is not None and own.username == "me"


@pytest.mark.parametrize("data", ["\x80", "not base64!!", base64.b64encode(b"\xff\xfe").decode()])
def test_undecodable_data_is_one_clear_error(data: str) -> None:
    broken = secret("bad", data={".dockerconfigjson": data})
    with pytest.raises(InputError, match=r"^Secret ns/bad: data.\.dockerconfigjson is not base64"):
        pull_secret_configs([broken, pod({"imagePullSecrets": [{"name": "bad"}]})])


def test_line_breaks_in_the_base64_are_skipped_as_the_api_server_does() -> None:
    encoded = base64.b64encode(json.dumps(CONFIG).encode()).decode()
    wrapped = "\n".join(encoded[i : i + 20] for i in range(0, len(encoded), 20)) + "\n"
    document = secret("wrapped", data={".dockerconfigjson": wrapped})
    (config,) = pull_secret_configs([document, pod({"imagePullSecrets": [{"name": "wrapped"}]})])
    assert config.config == CONFIG


def test_an_argo_workflow_names_its_pull_secrets_at_the_workflow_level() -> None:
    workflow = {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "Workflow",
        "metadata": {"name": "w", "namespace": "ns"},
        "spec": {
            "imagePullSecrets": [{"name": "regcred"}],
            "templates": [{"name": "main", "container": {"image": "registry.internal/a:1"}}],
        },
    }
    (config,) = pull_secret_configs([secret("regcred"), workflow])
    assert config.label == "Secret ns/regcred"
    cron = {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "CronWorkflow",
        "metadata": {"name": "c", "namespace": "ns"},
        "spec": {
            "workflowSpec": {
                "serviceAccountName": "runner",
                "templates": [{"name": "main", "container": {"image": "registry.internal/a:1"}}],
            }
        },
    }
    account = {
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": {"name": "runner", "namespace": "ns"},
        "imagePullSecrets": [{"name": "regcred"}],
    }
    assert len(pull_secret_configs([secret("regcred"), account, cron])) == 1
