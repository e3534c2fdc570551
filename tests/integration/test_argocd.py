"""The Argo CD Config Management Plugin (``plugin/argocd/plugin.yaml``): its ``init`` and
``generate`` commands, read from the file, run as Argo CD's cmp-server runs them (the command
and its args, in the application directory, with ``ARGOCD_APP_*`` and ``ARGOCD_ENV_*`` set),
with real renderers: ``kubectl kustomize`` standing in for ``kustomize`` (a PATH shim) and
Helm 3 for ``helm``."""

from __future__ import annotations

import glob
from pathlib import Path
from typing import Any

import pytest
import yaml
from support import SeededRegistry
from support.tools import (
    PLUGIN,
    Ran,
    helm_binary,
    kubectl_binary,
    load_all,
    mirrored_policy,
    run_tool,
    tool_env,
)

PLUGIN_FILE = PLUGIN / "argocd" / "plugin.yaml"

DEPLOYMENT = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: web
        image: registry.test/single-docker-amd64:1.0
---
apiVersion: batch/v1
kind: CronJob
metadata:
  name: report
spec:
  schedule: "0 * * * *"
  jobTemplate:
    spec:
      template:
        spec:
          restartPolicy: Never
          containers:
          - name: report
            image: registry.test/multiarch-oci:1.0
"""


def plugin() -> dict[str, Any]:
    document: dict[str, Any] = yaml.safe_load(PLUGIN_FILE.read_text())
    return document


def test_plugin_file_is_a_config_management_plugin_v2() -> None:
    document = plugin()
    assert document["apiVersion"] == "argoproj.io/v1alpha1"
    assert document["kind"] == "ConfigManagementPlugin"
    assert document["metadata"]["name"] == "kmultiarch"
    spec = document["spec"]
    assert set(spec) >= {"init", "generate", "discover"}
    for step in ("init", "generate"):
        assert spec[step]["command"] == ["bash", "-c"]
        assert spec[step]["args"][0].startswith("set -euo pipefail\n")
    assert "| kmultiarch mutate" in spec["generate"]["args"][0]


def shims(directory: Path) -> Path:
    """``kustomize`` -> ``kubectl kustomize``; ``helm`` -> the Helm 3 binary."""
    directory.mkdir(parents=True, exist_ok=True)
    kustomize = directory / "kustomize"
    kustomize.write_text(
        f'#!/bin/sh\n[ "$1" = build ] && shift\nexec "{kubectl_binary()}" kustomize "$@"\n'
    )
    helm = directory / "helm"
    helm.write_text(f'#!/bin/sh\nexec "{helm_binary(3)}" "$@"\n')
    for script in (kustomize, helm):
        script.chmod(0o755)
    return directory


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    environment = tool_env(
        tmp_path,
        {
            "ARGOCD_APP_NAME": "shop",
            "ARGOCD_APP_NAMESPACE": "shop-prod",
            "ARGOCD_APP_SOURCE_PATH": "apps/shop",
            "HELM_DATA_HOME": str(tmp_path / "helm" / "data"),
            "HELM_CONFIG_HOME": str(tmp_path / "helm" / "config"),
            "HELM_CACHE_HOME": str(tmp_path / "helm" / "cache"),
        },
    )
    environment["PATH"] = f"{shims(tmp_path / 'shims')}:{environment['PATH']}"
    return environment


def run_step(step: str, app: Path, env: dict[str, str], **extra: str) -> Ran:
    spec = plugin()["spec"][step]
    return run_tool([*spec["command"], *spec["args"]], env={**env, **extra}, cwd=app)


def render(app: Path, env: dict[str, str], **extra: str) -> Ran:
    init = run_step("init", app, env, **extra)
    assert init.returncode == 0, init.stderr
    return run_step("generate", app, env, **extra)


def kustomize_app(directory: Path, registry: SeededRegistry, **spec: Any) -> Path:
    directory.mkdir(parents=True)
    (directory / "kustomization.yaml").write_text("resources:\n- workloads.yaml\n")
    (directory / "workloads.yaml").write_text(DEPLOYMENT)
    policy = mirrored_policy(
        {"apiVersion": "kmultiarch.dev/v1alpha1", "kind": "MultiArchPolicy", "spec": spec},
        registry.url,
    )
    (directory / ".kmultiarch.yaml").write_text(yaml.safe_dump(policy))
    return directory


def helm_app(directory: Path, registry: SeededRegistry) -> Path:
    (directory / "templates").mkdir(parents=True)
    (directory / "Chart.yaml").write_text("apiVersion: v2\nname: shop\nversion: 0.1.0\n")
    (directory / "templates" / "workloads.yaml").write_text(
        DEPLOYMENT.replace("name: web\n", "name: {{ .Release.Name }}-web\n", 1).replace(
            '"0 * * * *"', '{{ "0 * * * *" | quote }}'
        )
    )
    (directory / ".kmultiarch.yaml").write_text(yaml.safe_dump(mirrored_policy(None, registry.url)))
    return directory


def scheduling(documents: list[Any]) -> dict[str, Any]:
    found = {}
    for document in documents:
        template = document["spec"].get("jobTemplate", document)["spec"]["template"]["spec"]
        found[document["kind"]] = {
            key: template[key] for key in ("tolerations", "affinity") if key in template
        }
    return found


AMD64_AFFINITY = {
    "affinity": {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {
                        "matchExpressions": [
                            {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]}
                        ]
                    }
                ]
            }
        }
    }
}
ARM64_TOLERATION = {
    "tolerations": [
        {"key": "kubernetes.io/arch", "operator": "Equal", "value": "arm64", "effect": "NoSchedule"}
    ]
}


def test_generate_renders_a_kustomization_through_kmultiarch(
    registry: SeededRegistry, tmp_path: Path, env: dict[str, str]
) -> None:
    app = kustomize_app(tmp_path / "app", registry)
    result = render(app, env)
    assert result.returncode == 0, result.stderr
    documents = load_all(result.stdout)
    assert [d["kind"] for d in documents] == ["Deployment", "CronJob"]
    assert scheduling(documents) == {"Deployment": AMD64_AFFINITY, "CronJob": ARM64_TOLERATION}


def test_generate_renders_a_helm_chart_through_kmultiarch(
    registry: SeededRegistry, tmp_path: Path, env: dict[str, str]
) -> None:
    app = helm_app(tmp_path / "chart", registry)
    result = render(app, env)
    assert result.returncode == 0, result.stderr
    documents = load_all(result.stdout)
    assert documents[0]["metadata"]["name"] == "shop-web"  # ARGOCD_APP_NAME is the release
    assert scheduling(documents) == {"Deployment": AMD64_AFFINITY, "CronJob": ARM64_TOLERATION}
    assert "# Source: shop/templates/workloads.yaml" in result.stdout


def test_the_policy_can_be_named_by_the_application(
    registry: SeededRegistry, tmp_path: Path, env: dict[str, str]
) -> None:
    app = kustomize_app(tmp_path / "app", registry)
    (app / ".kmultiarch.yaml").unlink()
    (tmp_path / "policies").mkdir()
    preferred = {
        "apiVersion": "kmultiarch.dev/v1alpha1",
        "kind": "MultiArchPolicy",
        "spec": {"nodeAffinity": "preferred"},
    }
    (tmp_path / "policies" / "preferred.yaml").write_text(
        yaml.safe_dump(mirrored_policy(preferred, registry.url))
    )
    result = render(app, env, ARGOCD_ENV_KMULTIARCH_CONFIG="../policies/preferred.yaml")
    assert result.returncode == 0, result.stderr
    web = load_all(result.stdout)[0]["spec"]["template"]["spec"]
    assert list(web["affinity"]["nodeAffinity"]) == [
        "preferredDuringSchedulingIgnoredDuringExecution"
    ]


def test_a_failing_kmultiarch_fails_the_render_with_nothing_on_stdout(
    registry: SeededRegistry, tmp_path: Path, env: dict[str, str]
) -> None:
    app = kustomize_app(tmp_path / "app", registry, failurePolicy="Fail")
    (app / "workloads.yaml").write_text(DEPLOYMENT.replace("multiarch-oci", "no-such-image"))
    result = render(app, env)
    assert result.returncode == 1
    assert result.stdout == ""
    assert "CronJob report: image 'registry.test/no-such-image:1.0'" in result.stderr


def test_a_failing_renderer_fails_the_render_thanks_to_pipefail(
    registry: SeededRegistry, tmp_path: Path, env: dict[str, str]
) -> None:
    """kmultiarch reads an empty stream and succeeds: only pipefail keeps Argo CD from
    applying an empty render."""
    app = kustomize_app(tmp_path / "app", registry)
    (app / "kustomization.yaml").write_text("resources:\n- missing.yaml\n")
    result = render(app, env)
    assert result.returncode != 0
    assert result.stdout == ""
    assert "missing.yaml" in result.stderr

    # The same pipeline without pipefail would have "succeeded".
    script = plugin()["spec"]["generate"]["args"][0].replace("set -euo pipefail", "set -eu")
    without = run_tool(["bash", "-c", script], env=env, cwd=app)
    assert without.returncode == 0 and without.stdout == ""


def test_a_directory_with_nothing_to_render_is_an_error(
    tmp_path: Path, env: dict[str, str]
) -> None:
    app = tmp_path / "empty"
    app.mkdir()
    result = render(app, env)
    assert result.returncode == 1
    assert result.stdout == ""
    assert "has no kustomization.yaml or Chart.yaml" in result.stderr


def test_discovery_matches_an_application_with_a_policy_file(
    registry: SeededRegistry, tmp_path: Path
) -> None:
    pattern = plugin()["spec"]["discover"]["fileName"]
    app = kustomize_app(tmp_path / "app", registry)
    assert glob.glob(pattern, root_dir=app, include_hidden=True) == ["./.kmultiarch.yaml"]
    (app / ".kmultiarch.yaml").unlink()
    assert glob.glob(pattern, root_dir=app, include_hidden=True) == []
