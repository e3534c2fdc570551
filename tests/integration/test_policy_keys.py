"""Policy keys of issue 14 across the commands that are not mutate (mutate is covered by the
golden cases under tests/golden/): check, report, lock and the KRM function (MultiArchPolicy
and ConfigMap functionConfig), against the real registry."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from support import SeededRegistry
from support.cli import clean_env, run_kmultiarch
from support.manifests import deployment, image, write_policy

DEPLOYMENT_CONFIG = """\
apiVersion: apps.openshift.io/v1
kind: DeploymentConfig
metadata:
  name: frontend
  namespace: web
spec:
  template:
    spec:
      containers:
      - name: web
        image: registry.test/single-docker-amd64:1.0
"""
POD_SPECS = [
    {
        "apiVersion": "apps.openshift.io/v1",
        "kind": "DeploymentConfig",
        "path": "/spec/template/spec",
    }
]


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return clean_env(tmp_path, {"SOURCE_DATE_EPOCH": "1767225600"})


def resource_list(items: list[Any], function_config: Any) -> str:
    return json.dumps(
        {
            "apiVersion": "config.kubernetes.io/v1",
            "kind": "ResourceList",
            "items": items,
            "functionConfig": function_config,
        }
    )


def test_pod_specs_reach_check_report_lock_and_fn(
    tmp_path: Path, registry: SeededRegistry, env: dict[str, str]
) -> None:
    config = write_policy(tmp_path / "policy.yaml", registry, {"podSpecs": POD_SPECS})
    manifest = tmp_path / "dc.yaml"
    manifest.write_text(DEPLOYMENT_CONFIG)

    checked = run_kmultiarch(
        ["check", "-o", "json", "--config", str(config), str(manifest)], env=env
    )
    assert checked.returncode == 1, checked.stderr
    (pod,) = checked.json()["pods"]
    assert pod["verdict"] == "needs-change"

    report = run_kmultiarch(
        ["report", "-o", "json", "--config", str(config), str(manifest)], env=env
    )
    assert report.returncode == 0, report.stderr
    (workload,) = report.json()["workloads"]
    assert (workload["kind"], workload["category"]) == ("DeploymentConfig", "amd64-only")

    lock = tmp_path / "kmultiarch.lock"
    locked = run_kmultiarch(
        ["lock", "--config", str(config), "-o", str(lock), str(manifest)], env=env
    )
    assert locked.returncode == 0, locked.stderr
    assert list(yaml.safe_load(lock.read_text())["images"]) == [
        "registry.test/single-docker-amd64:1.0"
    ]

    item = yaml.safe_load(DEPLOYMENT_CONFIG)
    mirror = {"registry.test": {"mirror": registry.url}}
    configmap = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "kmultiarch"},
        "data": {"podSpecs": json.dumps(POD_SPECS), "registries": json.dumps(mirror)},
    }
    krm = run_kmultiarch(["fn"], env=env, stdin=resource_list([item], configmap))
    assert krm.returncode == 0, krm.stderr
    (out,) = yaml.safe_load(krm.stdout)["items"]
    required = out["spec"]["template"]["spec"]["affinity"]["nodeAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"
    ]
    assert required["nodeSelectorTerms"][0]["matchExpressions"][0]["values"] == ["amd64"]


def test_a_bad_pod_spec_pointer_names_the_key(tmp_path: Path, env: dict[str, str]) -> None:
    config = tmp_path / "policy.yaml"
    config.write_text(
        "apiVersion: kmultiarch.dev/v1alpha1\nkind: MultiArchPolicy\nspec:\n"
        "  podSpecs:\n  - {apiVersion: apps.openshift.io/v1, kind: DeploymentConfig, "
        "path: spec.template.spec}\n"
    )
    result = run_kmultiarch(["check", "--config", str(config)], env=env, stdin="")
    assert result.returncode == 2
    assert f"{config}: spec.podSpecs[0].path: invalid JSON pointer" in result.stderr


def running_pods(registry: SeededRegistry, digest_key: str) -> str:
    """``kubectl get pods -A -o yaml`` of one Pod whose spec names two-tags:1.0 (amd64 only)
    while its status says the container runs catalogue image ``digest_key``."""
    digest = registry.images[digest_key].digest
    return f"""\
apiVersion: v1
kind: List
metadata:
  resourceVersion: ""
items:
- apiVersion: v1
  kind: Pod
  metadata:
    name: web-7d4b9c-x2x9q
    namespace: shop
  spec:
    containers:
    - name: web
      image: registry.test/two-tags:1.0
    nodeName: ip-10-0-2-40.ec2.internal
  status:
    phase: Running
    containerStatuses:
    - name: web
      image: registry.test/two-tags:1.0
      imageID: registry.test/two-tags@{digest}
      ready: true
      restartCount: 0
"""


def test_report_on_running_pods_resolves_the_digest_they_run(
    tmp_path: Path, registry: SeededRegistry, env: dict[str, str]
) -> None:
    config = write_policy(tmp_path / "policy.yaml", registry)
    pods = running_pods(registry, "two-tags-latest")
    result = run_kmultiarch(
        ["report", "-o", "json", "--config", str(config), "-"], env=env, stdin=pods
    )
    assert result.returncode == 0, result.stderr
    (entry,) = result.json()["images"]
    digest = registry.images["two-tags-latest"].digest
    assert entry["image"] == f"registry.test/two-tags:1.0@{digest}"
    assert entry["digest"] == digest
    assert entry["platforms"] == list(registry.images["two-tags-latest"].platforms)
    (workload,) = result.json()["workloads"]
    assert (workload["kind"], workload["namespace"], workload["category"]) == (
        "Pod",
        "shop",
        "multi-arch",
    )


def test_report_suggests_the_nearest_newer_tag_with_the_missing_platform(
    tmp_path: Path, registry: SeededRegistry, env: dict[str, str]
) -> None:
    config = write_policy(tmp_path / "policy.yaml", registry)
    manifest = tmp_path / "apps.yaml"
    manifest.write_text(
        "---\n".join(
            [
                deployment("old", ["registry.test/upgrades/app:1.0"]),
                deployment("fine", [image(registry, "multiarch-oci")]),
                deployment("stuck", [image(registry, "two-tags-1.0")]),
            ]
        )
    )
    args = ["report", "--suggest-upgrades", "--config", str(config), str(manifest)]
    result = run_kmultiarch([*args, "-o", "json"], env=env)
    assert result.returncode == 0, result.stderr
    upgrades = {entry["image"]: entry for entry in result.json()["upgrades"]}
    assert set(upgrades) == {"registry.test/upgrades/app:1.0", "registry.test/two-tags:1.0"}
    old = upgrades["registry.test/upgrades/app:1.0"]
    # 1.1 is amd64-only and 1.2-alpine another variant: 1.3 is the nearest with arm64
    assert (old["lacking"], old["tag"], old["reference"]) == (
        ["linux/arm64"],
        "1.3",
        "registry.test/upgrades/app:1.3",
    )
    assert old["platforms"] == list(registry.images["upgrades-1.3"].platforms)
    stuck = upgrades["registry.test/two-tags:1.0"]
    assert (stuck["tag"], stuck["note"]) == (None, "no newer version tag")

    text = run_kmultiarch(args, env=env)
    assert (
        "registry.test/upgrades/app:1.0 lacks linux/arm64: registry.test/upgrades/app:1.3 runs "
        "on linux/amd64, linux/arm64" in text.stdout
    )
    plain = run_kmultiarch(
        ["report", "-o", "json", "--config", str(config), str(manifest)], env=env
    )
    assert "upgrades" not in plain.json()


def test_annotate_from_a_configmap_function_config(
    registry: SeededRegistry, env: dict[str, str]
) -> None:
    item = yaml.safe_load(deployment("web", [image(registry, "single-docker-amd64")]))
    configmap = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "kmultiarch"},
        "data": {
            "annotate": "true",
            "registries": json.dumps({"registry.test": {"mirror": registry.url}}),
        },
    }
    krm = run_kmultiarch(["fn"], env=env, stdin=resource_list([item], configmap))
    assert krm.returncode == 0, krm.stderr
    (out,) = yaml.safe_load(krm.stdout)["items"]
    annotations = out["spec"]["template"]["metadata"]["annotations"]
    assert annotations == {"kmultiarch.dev/platforms": "linux/amd64"}


def test_metadata_only_images_in_report_cache_and_lock(
    tmp_path: Path, registry: SeededRegistry, env: dict[str, str]
) -> None:
    config = write_policy(tmp_path / "policy.yaml", registry)
    manifest = tmp_path / "job.yaml"
    manifest.write_text(
        deployment(
            "unpack",
            ["registry.test/operators/demo-bundle:v0.1.0", "registry.test/artifacts/sbom:1.0"],
        )
    )
    args = ["report", "--config", str(config), str(manifest)]
    for attempt in ("cold", "cached"):
        report = run_kmultiarch([*args, "-o", "json"], env=env)
        assert report.returncode == 0, (attempt, report.stderr)
        images = {entry["image"]: entry for entry in report.json()["images"]}
        bundle = images["registry.test/operators/demo-bundle:v0.1.0"]
        assert (bundle["platforms"], bundle["metadataOnly"], bundle["error"]) == ([], True, None)
        assert images["registry.test/artifacts/sbom:1.0"]["metadataOnly"] is True
        (workload,) = report.json()["workloads"]
        assert workload["category"] == "multi-arch", attempt
    assert "registry.test/artifacts/sbom:1.0" in run_kmultiarch(args, env=env).stdout
    assert "metadata-only" in run_kmultiarch(args, env=env).stdout

    lock = tmp_path / "kmultiarch.lock"
    locked = run_kmultiarch(
        ["lock", "--config", str(config), "-o", str(lock), str(manifest)], env=env
    )
    assert locked.returncode == 0, locked.stderr
    assert "platforms: []" in lock.read_text()
    offline = run_kmultiarch(
        ["mutate", "--offline", "--lock", str(lock), "--config", str(config), str(manifest)],
        env=env,
    )
    assert offline.returncode == 0, offline.stderr
    assert "value: arm64" in offline.stdout  # runs everywhere: tolerates the arm64 taint


def test_scope_keys_from_a_configmap_function_config(
    registry: SeededRegistry, env: dict[str, str]
) -> None:
    namespace = {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": "ops", "labels": {"tier": "system"}},
    }
    excluded = yaml.safe_load(
        deployment("a", [image(registry, "single-docker-amd64")], namespace="ops")
    )
    opted = yaml.safe_load(
        deployment("b", [image(registry, "single-docker-amd64")], namespace="web")
    )
    opted["metadata"]["annotations"] = {"kmultiarch.dev/enabled": "true"}
    not_opted = yaml.safe_load(
        deployment("c", [image(registry, "single-docker-amd64")], namespace="web")
    )
    configmap = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "kmultiarch"},
        "data": {
            "mode": "optIn",
            "excludeNamespaceSelector": "matchLabels: {tier: system}",
            "registries": json.dumps({"registry.test": {"mirror": registry.url}}),
        },
    }
    # ops is opted in by its workload annotation too, but the selector excludes it first
    excluded["metadata"]["annotations"] = {"kmultiarch.dev/enabled": "true"}
    krm = run_kmultiarch(
        ["fn"], env=env, stdin=resource_list([namespace, excluded, opted, not_opted], configmap)
    )
    assert krm.returncode == 0, krm.stderr
    items = yaml.safe_load(krm.stdout)["items"]
    changed = [
        item["metadata"]["name"]
        for item in items[1:]
        if "affinity" in item["spec"]["template"]["spec"]
    ]
    assert changed == ["b"]


def test_check_names_the_preference_it_would_add(
    tmp_path: Path, registry: SeededRegistry, env: dict[str, str]
) -> None:
    config = write_policy(tmp_path / "policy.yaml", registry, {"preferences": {"linux/arm64": 80}})
    manifest = tmp_path / "app.yaml"
    manifest.write_text(deployment("web", [image(registry, "multiarch-oci")]))
    checked = run_kmultiarch(["check", "--config", str(config), str(manifest)], env=env)
    assert checked.returncode == 1
    assert (
        "Deployment default/web: add toleration kubernetes.io/arch=arm64:NoSchedule; prefer "
        "kubernetes.io/arch In [arm64] (weight 80) (its images run on linux/amd64, linux/arm64)"
        in checked.stdout
    )
