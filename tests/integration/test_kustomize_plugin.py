"""The kustomize legacy exec plugin (``plugin/kustomize``) run by the real ``kubectl kustomize
--enable-alpha-plugins``: a kustomization written by the test lists a MultiArchPolicy under
``transformers:``; kustomize hands the plugin the config file and a plain stream."""

from __future__ import annotations

import copy
import os
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from support import SeededRegistry
from support.tools import (
    PLUGIN,
    REPO,
    kubectl_binary,
    load_all,
    mirrored_policy,
    run_tool,
    tool_env,
)

PLUGIN_HOME = PLUGIN / "kustomize"
EXECUTABLE = PLUGIN_HOME / "kmultiarch.dev" / "v1alpha1" / "multiarchpolicy" / "MultiArchPolicy"

DEPLOYMENT = """\
# the web tier
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  labels: {app: web}
spec:
  replicas: 3
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: web
        image: registry.test/single-docker-amd64:1.0
        ports:
        - containerPort: 8080
      - name: sidecar
        image: registry.test/multiarch-oci:1.0
---
apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: agent
spec:
  selector:
    matchLabels: {app: agent}
  template:
    metadata:
      labels: {app: agent}
    spec:
      tolerations:
      - key: node-role.kubernetes.io/control-plane
        operator: Exists
        effect: NoSchedule
      containers:
      - name: agent
        image: registry.test/multiarch-docker:1.0
---
apiVersion: v1
kind: Service
metadata:
  name: web
spec:
  selector: {app: web}
  ports:
  - port: 80
    targetPort: 8080
"""

KUSTOMIZATION = """\
namespace: shop
namePrefix: prod-
labels:
- pairs: {team: payments}
buildMetadata: [originAnnotations]
resources:
- workloads.yaml
"""


def write_kustomization(
    directory: Path, policy: dict[str, Any] | None, *, transformers: bool = True
) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "workloads.yaml").write_text(DEPLOYMENT)
    kustomization = KUSTOMIZATION
    if transformers:
        kustomization += "transformers:\n- multiarch.yaml\n"
        (directory / "multiarch.yaml").write_text(yaml.safe_dump(policy, sort_keys=False))
    (directory / "kustomization.yaml").write_text(kustomization)
    return directory


def kustomize(directory: Path, env: dict[str, str]) -> Any:
    return run_tool(
        [kubectl_binary(), "kustomize", "--enable-alpha-plugins", directory],
        env={**env, "KUSTOMIZE_PLUGIN_HOME": str(PLUGIN_HOME)},
    )


def policy(registry: SeededRegistry, **spec: Any) -> dict[str, Any]:
    document = mirrored_policy(
        {
            "apiVersion": "kmultiarch.dev/v1alpha1",
            "kind": "MultiArchPolicy",
            "metadata": {"name": "cluster", "annotations": {"team": "platform"}},
            "spec": spec,
        },
        registry.url,
    )
    return document


def without_scheduling(document: dict[str, Any]) -> dict[str, Any]:
    """The document with what kmultiarch adds taken out again (the DaemonSet's own
    toleration stays)."""
    stripped = copy.deepcopy(document)
    pod = stripped.get("spec", {}).get("template", {}).get("spec")
    if pod is not None:
        pod.pop("affinity", None)
        tolerations = [
            t for t in pod.get("tolerations", []) if t.get("key") != "kubernetes.io/arch"
        ]
        if tolerations:
            pod["tolerations"] = tolerations
        else:
            pod.pop("tolerations", None)
    return stripped


def arch_terms(document: dict[str, Any]) -> Any:
    affinity = document["spec"]["template"]["spec"]["affinity"]["nodeAffinity"]
    return affinity["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]


def test_kubectl_kustomize_runs_the_plugin_as_a_transformer(
    registry: SeededRegistry, tmp_path: Path
) -> None:
    env = tool_env(tmp_path)
    app = write_kustomization(tmp_path / "app", policy(registry))
    baseline_dir = write_kustomization(tmp_path / "baseline", None, transformers=False)

    result = kustomize(app, env)
    assert result.returncode == 0, result.stderr
    baseline = kustomize(baseline_dir, env)
    assert baseline.returncode == 0, baseline.stderr

    documents = {doc["kind"]: doc for doc in load_all(result.stdout)}
    expected = {doc["kind"]: doc for doc in load_all(baseline.stdout)}
    # Everything kustomize did (namespace, prefix, labels, origin annotations) is intact; the
    # only difference from a build without the transformer is what kmultiarch adds.
    assert {kind: without_scheduling(doc) for kind, doc in documents.items()} == expected

    web = documents["Deployment"]
    assert web["metadata"]["name"] == "prod-web" and web["metadata"]["namespace"] == "shop"
    assert arch_terms(web) == [
        {"matchExpressions": [{"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]}]}
    ]
    assert "tolerations" not in web["spec"]["template"]["spec"]
    agent = documents["DaemonSet"]
    assert agent["spec"]["template"]["spec"]["tolerations"] == [
        {
            "key": "node-role.kubernetes.io/control-plane",
            "operator": "Exists",
            "effect": "NoSchedule",
        },
        {
            "key": "kubernetes.io/arch",
            "operator": "Equal",
            "value": "arm64",
            "effect": "NoSchedule",
        },
    ]
    assert documents["Service"] == expected["Service"]
    # kustomize's bookkeeping annotation went to the plugin and came back for kustomize to use.
    assert "kustomize.config.k8s.io/id" not in result.stdout


def test_the_transformer_config_kustomize_passes_carries_extra_metadata(
    registry: SeededRegistry, tmp_path: Path
) -> None:
    """With ``buildMetadata: [originAnnotations]`` kustomize adds
    ``config.kubernetes.io/origin`` to the config's annotations: accepted, like any metadata.
    The config is also read when it comes inline in the kustomization."""
    env = tool_env(tmp_path)
    app = write_kustomization(tmp_path / "app", policy(registry), transformers=False)
    inline = yaml.safe_dump(policy(registry, nodeAffinity="preferred"), sort_keys=False)
    (app / "kustomization.yaml").write_text(
        KUSTOMIZATION
        + "transformers:\n- |-\n"
        + "".join(f"  {line}\n" for line in inline.splitlines())
    )
    result = kustomize(app, env)
    assert result.returncode == 0, result.stderr
    web = next(doc for doc in load_all(result.stdout) if doc["kind"] == "Deployment")
    preferred = web["spec"]["template"]["spec"]["affinity"]["nodeAffinity"]
    assert list(preferred) == ["preferredDuringSchedulingIgnoredDuringExecution"]


def test_a_failing_policy_fails_the_build_with_one_clear_line(
    registry: SeededRegistry, tmp_path: Path
) -> None:
    env = tool_env(tmp_path)
    app = write_kustomization(tmp_path / "app", policy(registry, failurePolicy="Fail"))
    (app / "workloads.yaml").write_text(DEPLOYMENT.replace("multiarch-oci", "no-such-image"))
    result = kustomize(app, env)
    assert result.returncode != 0
    assert result.stdout == ""
    errors = [line for line in result.stderr.splitlines() if "kmultiarch: error:" in line]
    assert len(errors) == 2, result.stderr
    assert "Deployment shop/prod-web: image 'registry.test/no-such-image:1.0'" in errors[0]
    assert "failurePolicy: Fail" in errors[0]


def test_policy_errors_name_the_kustomization_not_a_temp_file(
    registry: SeededRegistry, tmp_path: Path
) -> None:
    env = tool_env(tmp_path)
    app = write_kustomization(tmp_path / "app", policy(registry, nodeAffinity="sometimes"))
    result = kustomize(app, env)
    assert result.returncode != 0
    assert (
        f"kmultiarch: error: {app}: transformer MultiArchPolicy cluster: spec.nodeAffinity: "
        "expected one of required, preferred, none, got 'sometimes'"
    ) in result.stderr
    assert "kust-plugin-config" not in result.stderr.split("kmultiarch: error:")[1].splitlines()[0]


def test_relative_paths_in_the_policy_are_relative_to_the_kustomization(
    registry: SeededRegistry, tmp_path: Path
) -> None:
    env = tool_env(tmp_path)
    document = policy(registry)
    document["spec"]["registries"]["registry.internal:5000"] = {"ca": "certs/ca.pem"}
    app = write_kustomization(tmp_path / "app", document)
    missing = kustomize(app, env)
    assert missing.returncode != 0
    assert f"CA bundle {app.resolve()}/certs/ca.pem not found" in missing.stderr

    (app / "certs").mkdir()
    (app / "certs" / "ca.pem").write_text("not used: no image names registry.internal:5000\n")
    found = kustomize(app, env)
    assert found.returncode == 0, found.stderr


def test_warnings_of_a_good_build_go_to_the_warnings_file(
    registry: SeededRegistry, tmp_path: Path
) -> None:
    """kustomize shows a plugin's stderr only when it fails."""
    warnings_file = tmp_path / "warnings.txt"
    env = tool_env(tmp_path, {"KMULTIARCH_WARNINGS_FILE": str(warnings_file)})
    app = write_kustomization(tmp_path / "app", policy(registry))
    (app / "workloads.yaml").write_text(DEPLOYMENT.replace("multiarch-oci", "no-such-image"))
    result = kustomize(app, env)
    assert result.returncode == 0, result.stderr
    assert "no-such-image" not in result.stderr
    lines = warnings_file.read_text().splitlines()
    assert any(
        line.startswith("kmultiarch: warning:") and "registry.test/no-such-image:1.0" in line
        for line in lines
    ), lines
    assert lines[-1].startswith("kmultiarch: 2 pod specs, 1 changed, 1 unresolved")


def test_without_kmultiarch_on_path_the_plugin_runs_the_python_module(
    registry: SeededRegistry, tmp_path: Path
) -> None:
    shims = tmp_path / "python-only"
    shims.mkdir()
    python = shims / "python3"
    python.write_text(f'#!/bin/sh\nPYTHONPATH="{REPO}" exec "{sys.executable}" "$@"\n')
    python.chmod(0o755)
    kubectl = kubectl_binary()
    path = os.pathsep.join([str(shims), str(kubectl.parent), "/usr/bin", "/bin"])
    assert shutil.which("kmultiarch", path=path) is None
    env = {**tool_env(tmp_path), "PATH": path}
    app = write_kustomization(tmp_path / "app", policy(registry))
    result = kustomize(app, env)
    assert result.returncode == 0, result.stderr
    assert "- amd64" in result.stdout


@pytest.mark.parametrize("path", [EXECUTABLE, PLUGIN / "helm" / "kmultiarch-postrender"])
def test_plugin_scripts_are_executable_posix_shell(path: Path) -> None:
    assert os.access(path, os.X_OK), f"{path} must be executable (git: mode 100755)"
    assert path.read_text().startswith("#!/bin/sh\n")
    check = run_tool(["sh", "-n", path], env=os.environ)
    assert check.returncode == 0, check.stderr
