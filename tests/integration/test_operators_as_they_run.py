"""Operators as they really run (issue 29), through the commands against the real registry on
loopback: ``check`` (JSON) and ``fix`` on a stream of this round's rules. A Tekton run's
``$(params.image)`` resolves to the run's value; a PerconaXtraDBCluster's constraint goes into
``affinity.advanced`` with the operator's anti-affinity beside it; a KafkaConnect with a build
runs the image its build pod makes for its own node's architecture, and a Vitess dashboard in a
zoned cell needs a constraint: neither can be written, each an ``unwritable-constraint``
warning, which ``fix`` cannot make go away."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from support import SeededRegistry
from support.cli import Completed, clean_env, run_kmultiarch
from support.manifests import image, policy_workspace

ARCH_AMD64 = {
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


def _stream(registry: SeededRegistry) -> str:
    multi, amd64 = image(registry, "multiarch-oci"), image(registry, "single-docker-amd64")
    return f"""\
apiVersion: tekton.dev/v1
kind: TaskRun
metadata: {{name: build, namespace: ci}}
spec:
  params:
  - {{name: builder, value: "{amd64}"}}
  taskSpec:
    params:
    - {{name: builder, type: string, default: "{multi}"}}
    steps:
    - {{name: build, image: $(params.builder), script: make}}
---
apiVersion: pxc.percona.com/v1
kind: PerconaXtraDBCluster
metadata: {{name: cluster1, namespace: db}}
spec:
  crVersion: 1.18.0
  initContainer: {{image: "{multi}"}}
  upgradeOptions: {{apply: disabled}}
  pxc:
    size: 3
    image: "{amd64}"
    affinity: {{antiAffinityTopologyKey: kubernetes.io/hostname}}
---
apiVersion: kafka.strimzi.io/v1beta2
kind: KafkaConnect
metadata: {{name: connect, namespace: kafka}}
spec:
  replicas: 1
  image: "{multi}"
  bootstrapServers: my-cluster-kafka-bootstrap:9093
  build:
    output: {{type: docker, image: "{amd64}"}}
    plugins: []
---
apiVersion: planetscale.com/v2
kind: VitessCluster
metadata: {{name: example, namespace: vitess}}
spec:
  images:
    vtctld: "{amd64}"
  cells:
  - name: zone1
    zone: us-east-1a
  vitessDashboard:
    cells: [zone1]
    replicas: 1
"""


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return clean_env(tmp_path)


@pytest.fixture
def workspace(tmp_path: Path, registry: SeededRegistry) -> Path:
    return policy_workspace(tmp_path / "repo", registry, _stream(registry))


def _run(workspace: Path, env: dict[str, str], *args: str) -> Completed:
    return run_kmultiarch([args[0], "--config", "policy.yaml", *args[1:]], env=env, cwd=workspace)


def test_check_judges_each_pod_as_its_operator_runs_it(
    workspace: Path, env: dict[str, str]
) -> None:
    result = _run(workspace, env, "check", "-o", "json", "operators.yaml")
    assert result.returncode == 1, result.stderr
    report = result.json()
    pods = {(p["kind"], p["fieldPath"]): p for p in report["pods"]}
    amd64_only = ["require node affinity kubernetes.io/arch In [amd64]"]
    # The step runs the run's value of $(params.builder), not the task's multi-arch default.
    assert pods["TaskRun", "spec.podTemplate"]["changes"] == amd64_only
    assert pods["PerconaXtraDBCluster", "spec.pxc"]["changes"] == amd64_only
    # The Connect pods run the image the build makes, for the build node's architecture: not
    # spec.image (the build's base), nor the output image as the registry holds it before.
    assert pods["KafkaConnect", "spec.template.pod"]["changes"] == []
    unwritable = [p for p in report["problems"] if p["rule"] == "unwritable-constraint"]
    assert [p["level"] for p in unwritable] == ["warning", "warning"]
    assert [p["fieldPath"] for p in unwritable] == ["spec.template.pod", "spec.vitessDashboard"]
    assert "spec.template.buildPod" in unwritable[0]["message"]
    assert "spec.vitessDashboard" in unwritable[1]["message"]


def test_fix_writes_where_each_operator_reads_and_the_unwritable_stays_said(
    workspace: Path, env: dict[str, str]
) -> None:
    fixed = _run(workspace, env, "fix", "operators.yaml")
    assert fixed.returncode == 1, fixed.stderr
    run, pxc, connect, vitess = yaml.safe_load_all((workspace / "operators.yaml").read_text())
    assert run["spec"]["podTemplate"]["affinity"]["nodeAffinity"] == ARCH_AMD64
    affinity = pxc["spec"]["pxc"]["affinity"]
    assert affinity["antiAffinityTopologyKey"] == "kubernetes.io/hostname"
    assert affinity["advanced"]["nodeAffinity"] == ARCH_AMD64
    (anti,) = affinity["advanced"]["podAntiAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"
    ]
    assert anti["topologyKey"] == "kubernetes.io/hostname"
    assert anti["labelSelector"]["matchLabels"]["app.kubernetes.io/instance"] == "cluster1"
    assert "template" not in connect["spec"]
    assert "affinity" not in vitess["spec"]["vitessDashboard"]
    again = _run(workspace, env, "check", "operators.yaml")
    assert again.returncode == 0, again.stdout + again.stderr
    assert "[unwritable-constraint]" in again.stdout
