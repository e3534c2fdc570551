"""``action.yml``, the composite GitHub Action, run as the runner runs it
(support/composite_action.py): its steps in order, with their shells, the environment files,
``pip install "$GITHUB_ACTION_PATH"`` of a copy of this repository (offline), on the demo's
manifests and lock. The SARIF it writes is validated against the SARIF 2.1.0 schema."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml
from support.checkout import copy_checkout
from support.cli import clean_env
from support.composite_action import ActionRun, run_composite_action
from support.offline_pip import OFFLINE_PIP_ENV, offline_virtualenv
from support.schemas import validate_sarif
from support.tools import EXAMPLES, REPO

DEMO = EXAMPLES / "demo"
PINNED_POD = """\
apiVersion: v1
kind: Pod
metadata: {name: pinned, namespace: shop}
spec:
  nodeName: node-1
  containers:
  - name: db
    image: mysql:5.7
"""


@pytest.fixture(scope="module")
def action_setup(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The action's own checkout (GITHUB_ACTION_PATH) and a Python whose pip installs it."""
    base = tmp_path_factory.mktemp("action")
    return copy_checkout(base / "kmultiarch-action"), offline_virtualenv(base / "python")


def run_action(
    action_setup: tuple[Path, Path], tmp_path: Path, manifests: dict[str, str], **inputs: str
) -> tuple[ActionRun, Path]:
    action_dir, python_bin = action_setup
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    shutil.copy(DEMO / "policy.yaml", workspace)
    shutil.copy(DEMO / "kmultiarch.lock", workspace)
    for name, text in manifests.items():
        (workspace / name).parent.mkdir(parents=True, exist_ok=True)
        (workspace / name).write_text(text)
    runner_temp = tmp_path / "runner-temp"
    runner_temp.mkdir()
    env = clean_env(tmp_path / "home", OFFLINE_PIP_ENV)
    env.pop("VIRTUAL_ENV", None)
    env.pop("PYTHONPATH", None)
    env["PATH"] = os.pathsep.join([str(python_bin), env["PATH"]])
    run = run_composite_action(
        action_dir,
        inputs={"config": "policy.yaml", "lock": "kmultiarch.lock", **inputs},
        workspace=workspace,
        runner_temp=runner_temp,
        env=env,
    )
    return run, workspace


def demo_manifests() -> dict[str, str]:
    return {f"deploy/{p.name}": p.read_text() for p in sorted((DEMO / "manifests").iterdir())}


def test_action_yml_is_a_composite_action_with_the_documented_inputs() -> None:
    action = yaml.safe_load((REPO / "action.yml").read_text())
    assert action["runs"]["using"] == "composite"
    assert set(action["inputs"]) == {"paths", "config", "lock", "verify", "fail-on"}
    assert action["inputs"]["fail-on"]["default"] == "error"
    assert "sarif-file" in action["outputs"]
    for step in action["runs"]["steps"]:
        assert "run" not in step or "shell" in step, step.get("name")
        # inputs reach scripts through env:, never pasted into them
        assert "${{" not in step.get("run", ""), step.get("name")


def test_action_fails_with_annotations_sarif_and_a_job_summary(
    action_setup: tuple[Path, Path], tmp_path: Path
) -> None:
    run, workspace = run_action(action_setup, tmp_path, demo_manifests(), paths="deploy")
    assert run.returncode == 1, run.log
    assert [step.name for step in run.steps] == [
        "Install kmultiarch",
        "Check (SARIF)",
        "Annotations",
        "Job summary",
        "Verdict",
    ]
    assert run.outputs["exit-code"] == "1"
    assert (run.outputs["errors"], run.outputs["warnings"]) == ("5", "0")
    sarif = Path(run.outputs["sarif-file"])
    log = json.loads(sarif.read_text())
    validate_sarif(log)
    results = log["runs"][0]["results"]
    assert {r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in results} == {
        "deploy/database.yaml",
        "deploy/ingress.yaml",
        "deploy/jobs.yaml",
        "deploy/monitoring.yaml",
        "deploy/storefront.yaml",
    }
    annotations = [c for c in run.commands if c.name == "error"]
    assert len(annotations) == 5
    assert annotations[0].properties["file"] == "deploy/database.yaml"
    assert annotations[0].properties["title"] == "kmultiarch needs-scheduling"
    assert run.summary.startswith("## kmultiarch check failed\n")
    assert "| NEEDS CHANGE | 5 |" in run.summary
    assert "kmultiarch fix --config policy.yaml --lock kmultiarch.lock deploy/database.yaml" in (
        run.summary
    ), "the fix command carries the check's options"
    assert not (workspace / "kmultiarch.sarif").exists(), "nothing written to the checkout"


def test_action_passes_manifests_that_need_nothing(
    action_setup: tuple[Path, Path], tmp_path: Path
) -> None:
    mutated = (DEMO / "expected" / "mutated.yaml").read_text()
    run, _ = run_action(action_setup, tmp_path, {"deploy/all.yaml": mutated}, paths="deploy")
    assert run.returncode == 0, run.log
    assert (run.outputs["exit-code"], run.outputs["errors"]) == ("0", "0")
    validate_sarif(json.loads(Path(run.outputs["sarif-file"]).read_text()))
    assert run.summary.startswith("## kmultiarch check passed\n")
    assert not [c for c in run.commands if c.name in ("error", "warning")]


def test_action_fail_on_never_reports_without_failing(
    action_setup: tuple[Path, Path], tmp_path: Path
) -> None:
    run, _ = run_action(
        action_setup, tmp_path, demo_manifests(), paths="deploy", **{"fail-on": "never"}
    )
    assert run.returncode == 0, run.log
    assert run.outputs["exit-code"] == "1"
    assert "check failed" in run.summary


@pytest.mark.parametrize(("fail_on", "code"), [("error", 0), ("warning", 1), ("never", 0)])
def test_action_fail_on_warning_fails_on_a_warning(
    action_setup: tuple[Path, Path], tmp_path: Path, fail_on: str, code: int
) -> None:
    run, _ = run_action(
        action_setup, tmp_path, {"pod.yaml": PINNED_POD}, paths="pod.yaml", **{"fail-on": fail_on}
    )
    assert run.returncode == code, run.log
    assert (run.outputs["errors"], run.outputs["warnings"]) == ("0", "1")
    assert [c.name for c in run.commands if c.name in ("error", "warning")] == ["warning"]


def test_action_paths_split_on_white_space_without_expansion(
    action_setup: tuple[Path, Path], tmp_path: Path
) -> None:
    """Paths are words: no command substitution, no globbing (``[d]`` would match
    database.yaml)."""
    manifests = demo_manifests()
    manifests["$(touch${IFS}pwned).yaml"] = PINNED_POD
    manifests["deploy/[d]atabase.yaml"] = PINNED_POD
    run, workspace = run_action(
        action_setup,
        tmp_path,
        manifests,
        paths="deploy/jobs.yaml\n  $(touch${IFS}pwned).yaml\tdeploy/[d]atabase.yaml\n",
    )
    assert run.returncode == 1, run.log
    files = {c.properties.get("file") for c in run.commands if c.name in ("error", "warning")}
    assert files == {"deploy/jobs.yaml", "$(touch${IFS}pwned).yaml", "deploy/[d]atabase.yaml"}
    assert not list(workspace.rglob("pwned"))


def test_action_rejects_an_unknown_fail_on(action_setup: tuple[Path, Path], tmp_path: Path) -> None:
    run, _ = run_action(action_setup, tmp_path, demo_manifests(), **{"fail-on": "sometimes"})
    assert run.returncode == 2
    assert "fail-on must be error, warning or never" in run.log


def test_action_passes_verify_through_only_when_set(
    action_setup: tuple[Path, Path], tmp_path: Path
) -> None:
    """``--verify`` lands in check later: until then a non-empty input reaches check and is
    refused as an unknown option (exit 2, whatever fail-on says); an empty one is not passed."""
    mutated = (DEMO / "expected" / "mutated.yaml").read_text()
    run, _ = run_action(
        action_setup, tmp_path, {"all.yaml": mutated}, paths="all.yaml", verify="off"
    )
    help_text = check_help(action_setup)
    if "--verify" in help_text:
        assert run.returncode == 0, run.log
    else:
        assert run.returncode == 2, run.log
        assert "--verify" in run.log
        assert run.outputs["exit-code"] == "2"


def check_help(action_setup: tuple[Path, Path]) -> str:
    _, python_bin = action_setup
    return subprocess.run(
        [str(python_bin / "kmultiarch"), "check", "--help"],
        capture_output=True,
        text=True,
        check=False,
    ).stdout
