"""The type scan cannot be fooled (issue 21): a document whose text seems to prove a kind
without pod templates, while YAML reads another, is composed and guarded like any other.

The attack: the root mapping indented by one space, and an annotation whose multi-line quoted
value has continuation lines at column 0 reading ``apiVersion: v1`` and ``kind: ConfigMap``.
libyaml (and kubectl's go-yaml) read a Deployment or a CronJob; the scan once "proved" a
ConfigMap, so ``mutate`` wrote no affinity for an amd64-only image and ``check``, ``report``,
``lock`` and ``fix`` did not see the workload. No registry: policy overrides give platforms.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from support.cli import Completed, clean_env, run_kmultiarch

POLICY = """\
apiVersion: kmultiarch.dev/v1alpha1
kind: MultiArchPolicy
metadata: {name: offline}
spec:
  overrides:
  - {image: "registry.test/amd64-only:*", platforms: [linux/amd64]}
"""

DEPLOYMENT_POSING_AS_CONFIG_MAP = """\
 apiVersion: apps/v1
 kind: Deployment
 metadata:
  name: web
  annotations:
   note: "x
apiVersion: v1
kind: ConfigMap
end: y"
 spec:
  template:
   spec:
    containers:
    - name: main
      image: registry.test/amd64-only:1.0
"""

CRONJOB_POSING_AS_CONFIG_MAP = """\
 apiVersion: batch/v1
 kind: CronJob
 metadata:
  name: nightly
  annotations:
   note: 'x
apiVersion: v1
kind: ConfigMap
end: y'
 spec:
  schedule: "0 0 * * *"
  jobTemplate:
   spec:
    template:
     spec:
      restartPolicy: Never
      containers:
      - name: main
        image: registry.test/amd64-only:1.0
"""

CASES = {
    "double-quoted-deployment": (DEPLOYMENT_POSING_AS_CONFIG_MAP, "Deployment web"),
    "single-quoted-cronjob": (CRONJOB_POSING_AS_CONFIG_MAP, "CronJob nightly"),
}


def _run(tmp_path: Path, *args: str, document: str) -> tuple[Completed, Path]:
    policy = tmp_path / "policy.yaml"
    policy.write_text(POLICY)
    manifest = tmp_path / "stream.yaml"
    manifest.write_text(document)
    run = run_kmultiarch(
        [*args, "--config", str(policy), "--no-cache", str(manifest)], env=clean_env(tmp_path)
    )
    return run, manifest


def _required_architectures(document: dict[str, object]) -> list[str]:
    spec = document["spec"]
    assert isinstance(spec, dict)
    if document["kind"] == "CronJob":
        spec = spec["jobTemplate"]["spec"]
    terms = spec["template"]["spec"]["affinity"]["nodeAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"
    ]["nodeSelectorTerms"]
    return [
        value
        for term in terms
        for expression in term["matchExpressions"]
        if expression["key"] == "kubernetes.io/arch"
        for value in expression["values"]
    ]


@pytest.mark.parametrize("case", CASES)
def test_mutate_constrains_a_workload_whose_text_poses_as_a_config_map(
    case: str, tmp_path: Path
) -> None:
    document, _ = CASES[case]
    assert yaml.safe_load(document)["kind"] != "ConfigMap", "libyaml reads a workload"
    run, _ = _run(tmp_path, "mutate", document=document)
    assert run.returncode == 0, run.stderr
    (mutated,) = yaml.safe_load_all(run.stdout)
    assert _required_architectures(mutated) == ["amd64"]
    assert "1 pod spec" in run.stderr


@pytest.mark.parametrize("case", CASES)
def test_check_fails_on_a_workload_whose_text_poses_as_a_config_map(
    case: str, tmp_path: Path
) -> None:
    document, workload = CASES[case]
    run, _ = _run(tmp_path, "check", "-o", "json", document=document)
    assert run.returncode == 1, run.stdout
    assert workload in run.stdout


@pytest.mark.parametrize("case", CASES)
def test_report_lists_a_workload_whose_text_poses_as_a_config_map(
    case: str, tmp_path: Path
) -> None:
    document, workload = CASES[case]
    run, _ = _run(tmp_path, "report", "-o", "json", document=document)
    assert run.returncode == 0, run.stderr
    report = json.loads(run.stdout)
    assert report["summary"]["workloads"] == 1
    assert [image["image"] for image in report["images"]] == ["registry.test/amd64-only:1.0"]
    assert workload.split()[1] in json.dumps(report["workloads"])


@pytest.mark.parametrize("case", CASES)
def test_lock_sees_the_image_of_a_workload_whose_text_poses_as_a_config_map(
    case: str, tmp_path: Path
) -> None:
    document, _ = CASES[case]
    lock = tmp_path / "kmultiarch.lock"
    run, _ = _run(tmp_path, "lock", "-o", str(lock), document=document)
    assert run.returncode == 0, run.stderr
    assert "1 image not in the lock: the policy's spec.overrides" in run.stderr, run.stderr


@pytest.mark.parametrize("case", CASES)
def test_fix_rewrites_a_workload_whose_text_poses_as_a_config_map(
    case: str, tmp_path: Path
) -> None:
    document, _ = CASES[case]
    run, manifest = _run(tmp_path, "fix", document=document)
    assert run.returncode == 1, run.stderr
    (fixed,) = yaml.safe_load_all(manifest.read_text())
    assert _required_architectures(fixed) == ["amd64"]
