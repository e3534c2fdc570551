"""This round's operators' kinds (issue 39) through the commands against the real registry on
loopback: a KServe InferenceService runs the ClusterServingRuntime of the stream that its
model format selects; an AppWrapper's Deployment is placed inside the AppWrapper; a
LeaderWorkerSet's leader and worker templates, and a StarRocksCluster's FE and BE, each by
their own images. The unit tests ran these rules with a resolver table only."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from support import SeededRegistry
from support.cli import Completed, clean_env, run_kmultiarch
from support.manifests import image, policy_workspace

AMD64_ONLY = ["require node affinity kubernetes.io/arch In [amd64]"]


def _stream(registry: SeededRegistry) -> str:
    multi, amd64 = image(registry, "multiarch-oci"), image(registry, "single-docker-amd64")
    return f"""\
apiVersion: serving.kserve.io/v1alpha1
kind: ClusterServingRuntime
metadata: {{name: kserve-sklearnserver}}
spec:
  supportedModelFormats: [{{name: sklearn, version: "1", autoSelect: true, priority: 1}}]
  protocolVersions: [v1, v2]
  containers: [{{name: kserve-container, image: "{amd64}"}}]
---
apiVersion: serving.kserve.io/v1beta1
kind: InferenceService
metadata: {{name: sklearn-iris, namespace: models}}
spec:
  predictor:
    model: {{modelFormat: {{name: sklearn}}}}
---
apiVersion: workload.codeflare.dev/v1beta2
kind: AppWrapper
metadata: {{name: sample, namespace: batch}}
spec:
  components:
  - template:
      apiVersion: apps/v1
      kind: Deployment
      metadata: {{name: sample}}
      spec:
        selector: {{matchLabels: {{app: sample}}}}
        template:
          metadata: {{labels: {{app: sample}}}}
          spec:
            containers: [{{name: app, image: "{amd64}"}}]
---
apiVersion: leaderworkerset.x-k8s.io/v1
kind: LeaderWorkerSet
metadata: {{name: lws, namespace: serving}}
spec:
  leaderWorkerTemplate:
    size: 2
    leaderTemplate:
      spec:
        containers: [{{name: leader, image: "{amd64}"}}]
    workerTemplate:
      spec:
        containers: [{{name: worker, image: "{multi}"}}]
---
apiVersion: starrocks.com/v1
kind: StarRocksCluster
metadata: {{name: starrocks, namespace: olap}}
spec:
  starRocksFeSpec: {{image: "{multi}"}}
  starRocksBeSpec: {{image: "{amd64}"}}
"""


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return clean_env(tmp_path)


@pytest.fixture
def workspace(tmp_path: Path, registry: SeededRegistry) -> Path:
    return policy_workspace(tmp_path / "repo", registry, _stream(registry))


def _run(workspace: Path, env: dict[str, str], *args: str) -> Completed:
    return run_kmultiarch([args[0], "--config", "policy.yaml", *args[1:]], env=env, cwd=workspace)


def test_check_judges_each_new_kind_as_its_operator_runs_it(
    workspace: Path, env: dict[str, str]
) -> None:
    result = _run(workspace, env, "check", "-o", "json", "operators.yaml")
    assert result.returncode == 1, result.stderr
    report = result.json()
    pods = {(p["kind"], p["fieldPath"]): p for p in report["pods"]}
    # The predictor runs the runtime its model format selects, not an image of its own.
    assert pods["InferenceService", "spec.predictor"]["changes"] == AMD64_ONLY
    wrapped = "spec.components[0].template.spec.template.spec"
    assert pods["Deployment", wrapped]["changes"] == AMD64_ONLY
    leader = "spec.leaderWorkerTemplate.leaderTemplate.spec"
    assert pods["LeaderWorkerSet", leader]["changes"] == AMD64_ONLY
    assert pods["StarRocksCluster", "spec.starRocksBeSpec"]["changes"] == AMD64_ONLY
    unknown = {p["resource"]["kind"] for p in report["problems"] if p["rule"] == "unknown-pod-kind"}
    assert not unknown & {"InferenceService", "AppWrapper", "LeaderWorkerSet", "StarRocksCluster"}
    # The wrapped Deployment is named, in its AppWrapper's namespace.
    assert pods["Deployment", wrapped]["namespace"] == "batch"


def test_fix_writes_where_each_new_kinds_operator_reads(
    workspace: Path, env: dict[str, str]
) -> None:
    fixed = _run(workspace, env, "fix", "operators.yaml")
    assert fixed.returncode == 1, fixed.stderr
    runtime, isvc, wrapper, lws, starrocks = yaml.safe_load_all(
        (workspace / "operators.yaml").read_text()
    )
    assert "affinity" not in runtime["spec"]
    assert isvc["spec"]["predictor"]["affinity"]["nodeAffinity"]
    deployment = wrapper["spec"]["components"][0]["template"]
    assert deployment["spec"]["template"]["spec"]["affinity"]["nodeAffinity"]
    assert lws["spec"]["leaderWorkerTemplate"]["leaderTemplate"]["spec"]["affinity"]
    assert "affinity" not in lws["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]
    assert starrocks["spec"]["starRocksBeSpec"]["affinity"]["nodeAffinity"]
    again = _run(workspace, env, "check", "operators.yaml")
    assert again.returncode == 0, again.stdout + again.stderr
