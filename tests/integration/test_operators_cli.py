"""Operators' custom resources through the commands (issue 23), against the real registry:
``check`` (text, JSON, SARIF), ``fix``, ``report``, ``lock`` and the KRM function name the
custom resource and the placement path; a Strimzi node pool takes its Kafka's image, in a
plain stream and in a KRM ResourceList alike."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from support import SeededRegistry
from support.cli import Completed, clean_env, run_kmultiarch
from support.manifests import image, policy_workspace

AMD64_ONLY = {
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


def _stream(registry: SeededRegistry) -> str:
    multi, amd64 = image(registry, "multiarch-oci"), image(registry, "single-docker-amd64")
    return f"""\
apiVersion: ray.io/v1
kind: RayCluster
metadata: {{name: raycluster, namespace: ml}}
spec:
  headGroupSpec:
    template:
      spec:
        containers:
        - {{name: ray-head, image: "{multi}"}}
  workerGroupSpecs:
  - groupName: cpu
    template:
      spec:
        containers:
        - {{name: ray-worker, image: "{amd64}"}}
---
apiVersion: monitoring.coreos.com/v1
kind: Alertmanager
metadata: {{name: main, namespace: monitoring}}
spec:
  replicas: 2
---
apiVersion: kafka.strimzi.io/v1beta2
kind: KafkaNodePool
metadata:
  name: pool-a
  namespace: kafka
  labels: {{strimzi.io/cluster: my-cluster}}
spec:
  replicas: 3
  roles: [broker]
  template:
    pod: {{terminationGracePeriodSeconds: 60}}
---
apiVersion: kafka.strimzi.io/v1beta2
kind: Kafka
metadata: {{name: my-cluster, namespace: kafka}}
spec:
  kafka:
    image: "{amd64}"
    listeners: []
"""


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return clean_env(tmp_path)


@pytest.fixture
def workspace(tmp_path: Path, registry: SeededRegistry) -> Path:
    return policy_workspace(tmp_path / "repo", registry, _stream(registry))


def _run(workspace: Path, env: dict[str, str], *args: str, stdin: str | None = None) -> Completed:
    return run_kmultiarch(
        [args[0], "--config", "policy.yaml", *args[1:]], env=env, cwd=workspace, stdin=stdin
    )


def test_check_names_each_custom_resource_and_its_placement(
    workspace: Path, env: dict[str, str]
) -> None:
    result = _run(workspace, env, "check", "-o", "json", "operators.yaml")
    assert result.returncode == 1, result.stderr
    pods = {(p["kind"], p["fieldPath"]): p for p in result.json()["pods"]}
    assert sorted(pods) == [
        ("Alertmanager", "spec"),
        ("Kafka", "spec.kafka.template.pod"),
        ("KafkaNodePool", "spec.template.pod"),
        ("RayCluster", "spec.headGroupSpec.template.spec"),
        ("RayCluster", "spec.workerGroupSpecs[0].template.spec"),
    ]
    assert pods["RayCluster", "spec.headGroupSpec.template.spec"]["changes"] == [
        "add toleration kubernetes.io/arch=arm64:NoSchedule"
    ]
    worker = pods["RayCluster", "spec.workerGroupSpecs[0].template.spec"]
    assert worker["changes"] == ["require node affinity kubernetes.io/arch In [amd64]"]
    # The pool's pods run its Kafka's image, found through its strimzi.io/cluster label, and its
    # own template.pod (which replaces the Kafka's) is where the constraint goes.
    pool = pods["KafkaNodePool", "spec.template.pod"]
    assert [c["image"] for c in pool["containers"]] == [
        c["image"] for c in pods["Kafka", "spec.kafka.template.pod"]["containers"]
    ]
    assert pool["changes"] == ["require node affinity kubernetes.io/arch In [amd64]"]
    assert pods["Alertmanager", "spec"]["verdict"] == "chosen-by-operator"
    assert result.json()["summary"] == {
        "podSpecs": 5,
        "needs-change": 4,
        "chosen-by-operator": 1,
    }


def test_check_sarif_and_text_name_the_resource_the_placement_and_the_change(
    workspace: Path, env: dict[str, str]
) -> None:
    sarif = _run(workspace, env, "check", "-o", "sarif", "operators.yaml")
    assert sarif.returncode == 1, sarif.stderr
    results = sarif.json()["runs"][0]["results"]
    names = {
        (r["ruleId"], r["locations"][0]["logicalLocations"][0]["fullyQualifiedName"])
        for r in results
    }
    assert names == {
        ("needs-scheduling", "RayCluster/ml/raycluster/spec.headGroupSpec.template.spec"),
        ("needs-scheduling", "RayCluster/ml/raycluster/spec.workerGroupSpecs[0].template.spec"),
        ("needs-scheduling", "KafkaNodePool/kafka/pool-a/spec.template.pod"),
        ("needs-scheduling", "Kafka/kafka/my-cluster/spec.kafka.template.pod"),
        ("image-chosen-by-operator", "Alertmanager/monitoring/main/spec"),
    }
    text = _run(workspace, env, "check", "operators.yaml")
    errors = [line for line in text.stdout.splitlines() if "[needs-scheduling]" in line]
    assert len(errors) == 4
    # A placement created whole (Strimzi's template.pod) still says what it requires.
    for line in errors:
        assert "require node affinity" in line or "add toleration" in line, line


def test_fix_writes_each_placement_and_check_then_only_warns(
    workspace: Path, env: dict[str, str]
) -> None:
    fixed = _run(workspace, env, "fix", "operators.yaml")
    # As pre-commit's fixers: exit 1 when a file was changed.
    assert fixed.returncode == 1, fixed.stderr
    assert fixed.stdout == "fixed operators.yaml: added tolerations/affinity to 4 pod specs\n"
    ray, alertmanager, pool, kafka = yaml.safe_load_all((workspace / "operators.yaml").read_text())
    assert ray["spec"]["workerGroupSpecs"][0]["template"]["spec"]["affinity"] == AMD64_ONLY
    assert ray["spec"]["headGroupSpec"]["template"]["spec"]["tolerations"] == [
        {"key": "kubernetes.io/arch", "operator": "Equal", "value": "arm64", "effect": "NoSchedule"}
    ]
    assert pool["spec"]["template"]["pod"]["affinity"] == AMD64_ONLY
    assert kafka["spec"]["kafka"]["template"]["pod"]["affinity"] == AMD64_ONLY
    assert alertmanager == {
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "Alertmanager",
        "metadata": {"name": "main", "namespace": "monitoring"},
        "spec": {"replicas": 2},
    }
    again = _run(workspace, env, "check", "operators.yaml")
    assert again.returncode == 0, again.stdout + again.stderr
    assert "[image-chosen-by-operator]" in again.stdout


def test_report_lists_the_resources_the_operator_chooses_the_image_of(
    workspace: Path, env: dict[str, str]
) -> None:
    result = _run(workspace, env, "report", "-o", "json", "operators.yaml")
    assert result.returncode == 0, result.stderr
    report = result.json()
    assert report["summary"]["chosen-by-operator"] == 1
    categories = {(w["kind"], w["fieldPath"]): w["category"] for w in report["workloads"]}
    assert categories["Alertmanager", "spec"] == "chosen-by-operator"
    assert categories["KafkaNodePool", "spec.template.pod"] == "amd64-only"
    users = {
        (use["kind"], use["container"]) for entry in report["images"] for use in entry["usedBy"]
    }
    assert ("KafkaNodePool", "spec.kafka.image") in users


def test_lock_records_the_images_custom_resources_run(
    workspace: Path, env: dict[str, str], registry: SeededRegistry
) -> None:
    result = _run(workspace, env, "lock", "operators.yaml", "-o", "k.lock")
    assert result.returncode == 0, result.stderr
    locked = yaml.safe_load((workspace / "k.lock").read_text())["images"]
    assert sorted(locked) == sorted(
        {image(registry, "multiarch-oci"), image(registry, "single-docker-amd64")}
    )


def test_the_krm_function_constrains_a_node_pool_from_its_kafka_among_the_items(
    workspace: Path, env: dict[str, str]
) -> None:
    items = list(yaml.safe_load_all((workspace / "operators.yaml").read_text()))
    resource_list = {
        "apiVersion": "config.kubernetes.io/v1",
        "kind": "ResourceList",
        "items": items,
    }
    result = _run(workspace, env, "fn", stdin=json.dumps(resource_list))
    assert result.returncode == 0, result.stderr
    output = yaml.safe_load(result.stdout)
    pool = output["items"][2]
    assert pool["kind"] == "KafkaNodePool"
    assert pool["spec"]["template"]["pod"]["affinity"] == AMD64_ONLY
    warnings = [r for r in output["results"] if r["severity"] == "warning"]
    assert [(w["resourceRef"]["kind"], w["field"]["path"]) for w in warnings] == [
        ("Alertmanager", "spec")
    ]
