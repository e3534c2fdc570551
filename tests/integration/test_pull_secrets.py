"""Credentials from the manifests' own pull secrets: ``imagePullSecrets`` of a pod spec or of
its ServiceAccount, naming a ``kubernetes.io/dockerconfigjson`` Secret of the stream, open the
basic-auth registry; the password is never printed nor cached."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import yaml
from support import SeededRegistry
from support.cli import clean_env, run_kmultiarch


def docker_config_secret(registry: SeededRegistry, name: str, namespace: str) -> str:
    assert registry.username and registry.password
    auth = base64.b64encode(f"{registry.username}:{registry.password}".encode()).decode()
    config = json.dumps({"auths": {registry.host: {"auth": auth}}})
    encoded = base64.b64encode(config.encode()).decode()
    return (
        f"apiVersion: v1\nkind: Secret\nmetadata:\n  name: {name}\n  namespace: {namespace}\n"
        f"type: kubernetes.io/dockerconfigjson\ndata:\n  .dockerconfigjson: {encoded}\n"
    )


def workload(registry: SeededRegistry, *, pod_secret: str = "", account: str = "") -> str:
    spec = ""
    if pod_secret:
        spec += f"      imagePullSecrets:\n      - name: {pod_secret}\n"
    if account:
        spec += f"      serviceAccountName: {account}\n"
    return (
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: private\n  namespace: shop\n"
        "spec:\n  template:\n    spec:\n"
        f"{spec}"
        "      containers:\n"
        f"      - name: app\n        image: {registry.host}/single-docker-amd64:1.0\n"
    )


def service_account(name: str, secret: str) -> str:
    return (
        f"apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: {name}\n  namespace: shop\n"
        f"imagePullSecrets:\n- name: {secret}\n"
    )


def assert_required_amd64(stdout: str) -> None:
    deployment = next(d for d in yaml.safe_load_all(stdout) if d and d["kind"] == "Deployment")
    affinity = deployment["spec"]["template"]["spec"]["affinity"]["nodeAffinity"]
    terms = affinity["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    assert terms[0]["matchExpressions"][0]["values"] == ["amd64"]


def assert_never_shown(password: str, tmp_path: Path, *outputs: str) -> None:
    for output in outputs:
        assert password not in output
    for file in tmp_path.rglob("*"):
        if file.is_file() and file.suffix != ".yaml":
            assert password.encode() not in file.read_bytes(), file


def test_the_pods_own_pull_secret_opens_the_registry(
    tmp_path: Path, basic_auth_registry: SeededRegistry
) -> None:
    env = clean_env(tmp_path)
    manifest = tmp_path / "app.yaml"
    without = workload(basic_auth_registry)
    manifest.write_text(without)
    denied = run_kmultiarch(["mutate", str(manifest)], env=env)
    assert denied.returncode == 0
    assert "could not be resolved" in denied.stderr  # no credentials: left unchanged

    secret = docker_config_secret(basic_auth_registry, "regcred", "shop")
    manifest.write_text(f"{secret}---\n{workload(basic_auth_registry, pod_secret='regcred')}")
    result = run_kmultiarch(["mutate", "-v", str(manifest)], env=env)
    assert result.returncode == 0, result.stderr
    assert "could not be resolved" not in result.stderr
    assert_required_amd64(result.stdout)
    assert basic_auth_registry.password
    assert_never_shown(basic_auth_registry.password, tmp_path, result.stdout, result.stderr)


def test_the_service_accounts_pull_secret_in_check_and_fn(
    tmp_path: Path, basic_auth_registry: SeededRegistry
) -> None:
    env = clean_env(tmp_path)
    documents = [
        docker_config_secret(basic_auth_registry, "regcred", "shop"),
        service_account("builder", "regcred"),
        workload(basic_auth_registry, account="builder"),
    ]
    manifest = tmp_path / "app.yaml"
    manifest.write_text("---\n".join(documents))
    checked = run_kmultiarch(["check", "-o", "json", "--no-cache", str(manifest)], env=env)
    assert checked.returncode == 1, checked.stderr  # needs a change: so it was resolved
    (pod,) = checked.json()["pods"]
    assert pod["verdict"] == "needs-change"

    # a Secret of another namespace is not the pod's
    other = [documents[0].replace("namespace: shop", "namespace: other"), *documents[1:]]
    manifest.write_text("---\n".join(other))
    elsewhere = run_kmultiarch(["check", "-o", "json", "--no-cache", str(manifest)], env=env)
    assert elsewhere.json()["pods"][0]["verdict"] == "unresolved"

    resource_list = {
        "apiVersion": "config.kubernetes.io/v1",
        "kind": "ResourceList",
        "items": [yaml.safe_load(document) for document in documents],
    }
    krm = run_kmultiarch(["fn", "--no-cache"], env=env, stdin=json.dumps(resource_list))
    assert krm.returncode == 0, krm.stderr
    items = yaml.safe_load(krm.stdout)["items"]
    assert "affinity" in items[2]["spec"]["template"]["spec"]
    assert basic_auth_registry.password
    assert_never_shown(
        basic_auth_registry.password, tmp_path, checked.stdout, checked.stderr, krm.stderr
    )


def test_lock_and_lock_check_use_the_pull_secrets(
    tmp_path: Path, basic_auth_registry: SeededRegistry
) -> None:
    env = clean_env(tmp_path)
    manifest = tmp_path / "app.yaml"
    secret = docker_config_secret(basic_auth_registry, "regcred", "shop")
    manifest.write_text(f"{secret}---\n{workload(basic_auth_registry, pod_secret='regcred')}")
    lock = tmp_path / "kmultiarch.lock"
    written = run_kmultiarch(["lock", "-o", str(lock), str(manifest)], env=env)
    assert written.returncode == 0, written.stderr
    reference = f"{basic_auth_registry.host}/single-docker-amd64:1.0"
    assert reference in lock.read_text()
    checked = run_kmultiarch(["lock", "--check", "-o", str(lock), str(manifest)], env=env)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "up to date (1 tags checked" in checked.stderr
    assert basic_auth_registry.password
    assert_never_shown(
        basic_auth_registry.password, tmp_path, written.stderr, checked.stdout, checked.stderr
    )
