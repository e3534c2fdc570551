"""A resource named only by ``metadata.generateName`` (an Argo Workflow, a Job made by
``kubectl create``) is named by that prefix, as ``hello-world-*``, in every output (issue 36,
item 17). Before, it was ``Workflow argo/`` (``Workflow :`` in the messages), naming nothing."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from support.cli import clean_env, run_kmultiarch

from kmultiarch.core.findings import ResourceRef

REPO = Path(__file__).resolve().parents[2]
OPTIONS = ["--config", "demo/policy.yaml", "--lock", "demo/kmultiarch.lock", "--offline"]
#: After argoproj/argo-workflows examples/hello-world.yaml, with the demo's amd64-only image.
WORKFLOW = """\
apiVersion: argoproj.io/v1alpha1
kind: Workflow
metadata:
  generateName: hello-world-
  namespace: argo
spec:
  entrypoint: main
  templates:
  - name: main
    container:
      image: docker.io/library/mysql:5.7
"""
SHOWN = "Workflow argo/hello-world-*"


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    shutil.copytree(REPO / "examples" / "demo", tmp_path / "demo")
    (tmp_path / "workflow.yaml").write_text(WORKFLOW)
    return tmp_path


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return clean_env(tmp_path / "home")


@pytest.mark.parametrize("output_format", ["text", "github", "sarif", "gitlab", "markdown"])
def test_a_workflow_named_by_generate_name_is_named_by_it_in_checks_outputs(
    workdir: Path, env: dict[str, str], output_format: str
) -> None:
    checked = run_kmultiarch(
        ["check", *OPTIONS, "-o", output_format, "workflow.yaml"], env=env, cwd=workdir
    )
    assert checked.returncode == 1, checked.stderr
    output = checked.stdout
    if output_format in ("sarif", "gitlab"):
        output = json.dumps(json.loads(output))  # the messages, as a string
    shown = "Workflow/argo/hello-world-*" if output_format == "sarif" else SHOWN
    assert SHOWN in output and shown in output, output
    assert "argo/:" not in output and "argo/ " not in output and "argo/`" not in output


def test_json_outputs_carry_the_generate_name(workdir: Path, env: dict[str, str]) -> None:
    checked = run_kmultiarch(
        ["check", *OPTIONS, "-o", "json", "workflow.yaml"], env=env, cwd=workdir
    )
    (pod,) = checked.json()["pods"]
    assert (pod["name"], pod["generateName"]) == ("", "hello-world-")
    (problem,) = checked.json()["problems"]
    assert problem["resource"]["generateName"] == "hello-world-"
    assert problem["message"].startswith(f"{SHOWN}: ")
    reported = run_kmultiarch(["report", *OPTIONS, "workflow.yaml"], env=env, cwd=workdir)
    assert SHOWN in reported.stdout
    reported = run_kmultiarch(
        ["report", *OPTIONS, "-o", "json", "workflow.yaml"], env=env, cwd=workdir
    )
    (workload,) = reported.json()["workloads"]
    assert workload["generateName"] == "hello-world-"


@pytest.mark.parametrize(
    ("metadata", "shown"),
    [
        ({"name": "web"}, "Deployment shop/web"),
        ({"generateName": "web-"}, "Deployment shop/web-*"),
        ({"name": "web", "generateName": "web-"}, "Deployment shop/web"),  # the name wins
        ({}, "Deployment shop/"),
    ],
)
def test_a_resource_is_named_by_its_name_else_its_generate_name(
    metadata: dict[str, str], shown: str
) -> None:
    resource = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {**metadata}}
    resource["metadata"]["namespace"] = "shop"  # type: ignore[index]
    assert ResourceRef.of(resource).display_name == shown
