"""``unknown-pod-kind`` through the commands (issue 29, item 5): a custom resource of a kind
kmultiarch does not know, holding what pods are made of, is a warning in ``check`` (text, JSON
with the entry as ``suggestion``, SARIF), ``mutate`` (stdout unchanged, byte for byte) and
``report`` (listed); ``exclude.kinds`` silences it, and the suggested entry pasted into the
policy gets the resource decided.

The kind is a test-only one shaped as CloudNativePG's Cluster (spec.imageName beside a
spec.affinity that holds nodeSelector and tolerations: tests/fixtures/unknown-kinds), so that
no kind the catalogue may gain changes what these tests see. Images are declared by the
policy's overrides: no registry, no network."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from support.cli import Completed, clean_env, run_kmultiarch
from support.schemas import validate_gitlab_report, validate_sarif

RESOURCE = """\
# A comment, and a layout kmultiarch must keep byte for byte.
apiVersion: db.example.test/v1
kind: Database
metadata:
  name: orders
  namespace: shop
spec:
  instances: 3
  imageName: registry.example.test/db/postgres:16   # amd64 only (the policy says)
  affinity:
    nodeSelector:
      node-role.kubernetes.io/db: ""
    tolerations:
    - key: node-role.kubernetes.io/db
      operator: Exists
      effect: NoSchedule
    enablePodAntiAffinity: true
---
apiVersion: v1
kind: ConfigMap
metadata: {name: settings, namespace: shop}
data: {image: "registry.example.test/not/an/image/here:1"}
"""
ENTRY = """\
- apiVersion: db.example.test/v1
  kind: Database
  placements:
  - path: /spec/affinity
    images: [/spec/imageName]
    shape: node-affinity
"""


def _policy(path: Path, extra: str = "") -> Path:
    path.write_text(
        "apiVersion: kmultiarch.dev/v1alpha1\nkind: MultiArchPolicy\nmetadata: {name: t}\n"
        "spec:\n  overrides:\n"
        "  - {image: 'registry.example.test/db/*', platforms: [linux/amd64]}\n" + extra
    )
    return path


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    manifest = tmp_path / "db.yaml"
    manifest.write_text(RESOURCE)
    return {"manifest": manifest, "policy": _policy(tmp_path / "policy.yaml")}


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return clean_env(tmp_path / "home")


def _run(args: list[str], files: dict[str, Path], env: dict[str, str]) -> Completed:
    return run_kmultiarch(
        [
            *args,
            "--offline",
            "--no-cache",
            "--config",
            str(files["policy"]),
            str(files["manifest"]),
        ],
        env=env,
    )


def _problems(document: dict[str, Any]) -> list[dict[str, Any]]:
    return [p for p in document["problems"] if p["rule"] == "unknown-pod-kind"]


def test_check_warns_in_text_and_passes(files: dict[str, Path], env: dict[str, str]) -> None:
    result = _run(["check"], files, env)
    assert result.returncode == 0, result.stderr
    (line,) = [line for line in result.stdout.splitlines() if "[unknown-pod-kind]" in line]
    assert line.startswith(f"{files['manifest']}:9: warning: Database shop/orders: ")
    assert "(/spec/imageName, /spec/affinity/nodeSelector, /spec/affinity/tolerations)" in line
    flow = line.removesuffix(" [unknown-pod-kind]").rpartition(": - ")[2]
    assert yaml.safe_load("- " + flow) == yaml.safe_load(ENTRY)
    assert "check passed" in result.stdout


def test_check_json_gives_the_entry_as_suggestion(
    files: dict[str, Path], env: dict[str, str]
) -> None:
    result = _run(["check", "--output", "json"], files, env)
    assert result.returncode == 0, result.stderr
    document = result.json()
    assert document["passed"] is True
    (problem,) = _problems(document)
    assert problem["level"] == "warning"
    assert problem["suggestion"] == ENTRY
    assert problem["resource"] == {
        "apiVersion": "db.example.test/v1",
        "kind": "Database",
        "name": "orders",
        "namespace": "shop",
    }
    assert problem["fieldPath"] == "spec.imageName"
    assert problem["line"] == 9


def test_check_sarif_declares_the_rule_as_a_warning(
    files: dict[str, Path], env: dict[str, str]
) -> None:
    result = _run(["check", "--output", "sarif"], files, env)
    assert result.returncode == 0, result.stderr
    log = json.loads(result.stdout)
    validate_sarif(log)
    run = log["runs"][0]
    rules = {rule["id"]: rule for rule in run["tool"]["driver"]["rules"]}
    assert rules["unknown-pod-kind"]["defaultConfiguration"]["level"] == "warning"
    assert "spec.podSpecs" in rules["unknown-pod-kind"]["help"]["text"]
    (entry,) = [r for r in run["results"] if r["ruleId"] == "unknown-pod-kind"]
    assert entry["level"] == "warning"
    assert entry["properties"]["suggestion"] == ENTRY
    assert run["tool"]["driver"]["rules"][entry["ruleIndex"]]["id"] == "unknown-pod-kind"


def test_check_gitlab_reports_it_as_minor(files: dict[str, Path], env: dict[str, str]) -> None:
    result = _run(["check", "--output", "gitlab"], files, env)
    assert result.returncode == 0, result.stderr
    (issue,) = [
        i for i in validate_gitlab_report(result.stdout) if i["check_name"] == "unknown-pod-kind"
    ]
    assert issue["severity"] == "minor"
    markdown = _run(["check", "--output", "markdown"], files, env).stdout
    assert "unknown-pod-kind (1): Declare the kind in the policy's spec.podSpecs" in markdown


def test_mutate_warns_and_changes_no_byte(files: dict[str, Path], env: dict[str, str]) -> None:
    result = _run(["mutate"], files, env)
    assert result.returncode == 0, result.stderr
    assert result.stdout == RESOURCE
    assert f"warning: {files['manifest']}:9: Database shop/orders: " in result.stderr
    assert "- {apiVersion: db.example.test/v1, kind: Database" in result.stderr


def test_exclude_kinds_silences_it(
    files: dict[str, Path], env: dict[str, str], tmp_path: Path
) -> None:
    files["policy"] = _policy(tmp_path / "excluding.yaml", "  exclude: {kinds: [Database]}\n")
    document = _run(["check", "--output", "json"], files, env).json()
    assert _problems(document) == []


def test_report_lists_the_resource_with_its_entry(
    files: dict[str, Path], env: dict[str, str]
) -> None:
    text = _run(["report"], files, env)
    assert text.returncode == 0, text.stderr
    section = text.stdout.split("Kinds kmultiarch does not know", 1)[1]
    assert f"Database shop/orders ({files['manifest']}:9)" in section
    assert "    - apiVersion: db.example.test/v1\n" in section
    document = _run(["report", "--output", "json"], files, env).json()
    (listed,) = document["unknownPodKinds"]
    assert (listed["kind"], listed["name"], listed["suggestion"]) == ("Database", "orders", ENTRY)
    html = _run(["report", "--output", "html"], files, env).stdout
    assert 'id="unknown-kinds"' in html and "Database shop/orders" in html


def test_the_entry_pasted_into_the_policy_gets_the_resource_decided(
    files: dict[str, Path], env: dict[str, str], tmp_path: Path
) -> None:
    pasted = "  podSpecs:\n" + "".join(f"  {line}\n" for line in ENTRY.splitlines())
    files["policy"] = _policy(tmp_path / "declared.yaml", pasted)
    result = _run(["mutate"], files, env)
    assert result.returncode == 0, result.stderr
    assert "unknown-pod-kind" not in result.stderr
    assert "kind kmultiarch does not know" not in result.stderr
    database = next(yaml.safe_load_all(result.stdout))
    terms = database["spec"]["affinity"]["nodeAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"
    ]["nodeSelectorTerms"]
    assert terms[0]["matchExpressions"][0] == {
        "key": "kubernetes.io/arch",
        "operator": "In",
        "values": ["amd64"],
    }
    assert result.stdout.startswith("# A comment, and a layout kmultiarch must keep")


def test_the_krm_function_gives_a_warning_result_and_the_items_unchanged(
    env: dict[str, str], tmp_path: Path
) -> None:
    items = list(yaml.safe_load_all(RESOURCE))
    resource_list = {
        "apiVersion": "config.kubernetes.io/v1",
        "kind": "ResourceList",
        "items": items,
        "functionConfig": yaml.safe_load(_policy(tmp_path / "fn-policy.yaml").read_text()),
    }
    result = run_kmultiarch(["fn"], env=env, stdin=yaml.safe_dump(resource_list, sort_keys=False))
    assert result.returncode == 0, result.stderr
    output = yaml.safe_load(result.stdout)
    assert output["items"] == items
    (warning,) = [r for r in output["results"] if "kind kmultiarch does not know" in r["message"]]
    assert warning["severity"] == "warning"
    assert warning["resourceRef"]["kind"] == "Database"
    assert warning["field"]["path"] == "spec.imageName"
