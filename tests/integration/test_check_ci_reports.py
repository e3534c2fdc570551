"""``kmultiarch check --output gitlab`` and ``--output markdown`` as a CI job runs them: on the
demo's manifests with its lock, offline."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from support.cli import clean_env, run_kmultiarch
from support.schemas import validate_gitlab_report
from support.tools import EXAMPLES

DEMO = EXAMPLES / "demo"


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """A repository checkout as a CI job sees it: manifests, policy and lock."""
    target = tmp_path / "repo"
    shutil.copytree(DEMO, target)
    return target


def check(workspace: Path, *options: str) -> tuple[int, str, str]:
    result = run_kmultiarch(
        [
            "check",
            "--config",
            "policy.yaml",
            "--lock",
            "kmultiarch.lock",
            "--offline",
            *options,
            "manifests",
        ],
        env=clean_env(workspace.parent),
        cwd=workspace,
    )
    return result.returncode, result.stdout, result.stderr


def test_check_writes_a_gitlab_code_quality_report(workspace: Path) -> None:
    code, stdout, stderr = check(workspace, "--output", "gitlab")
    assert code == 1, stderr
    entries = validate_gitlab_report(stdout)
    by_path = {entry["location"]["path"]: entry for entry in entries}
    assert sorted(by_path) == [
        "manifests/database.yaml",
        "manifests/ingress.yaml",
        "manifests/jobs.yaml",
        "manifests/monitoring.yaml",
        "manifests/storefront.yaml",
    ]
    database = by_path["manifests/database.yaml"]
    assert database["check_name"] == "needs-scheduling"
    assert database["severity"] == "major"
    assert database["description"].startswith("StatefulSet shop/orders-db: require node affinity")
    text = (workspace / "manifests" / "database.yaml").read_text().splitlines()
    # The line of the pod spec, as the text output gives it.
    assert text[database["location"]["lines"]["begin"] - 1].strip() == "spec:"


def test_gitlab_fingerprints_survive_lines_moving(workspace: Path) -> None:
    """A merge request that adds lines above a finding does not make GitLab show it as fixed
    and found again."""
    _, before, _ = check(workspace, "--output", "gitlab")
    database = workspace / "manifests" / "database.yaml"
    database.write_text("# a comment\n# and another\n" + database.read_text())
    _, after, _ = check(workspace, "--output", "gitlab")
    old, new = validate_gitlab_report(before), validate_gitlab_report(after)
    assert [e["fingerprint"] for e in old] == [e["fingerprint"] for e in new]
    assert [e["location"]["lines"]["begin"] for e in old] != [
        e["location"]["lines"]["begin"] for e in new
    ]


def test_gitlab_report_of_passing_manifests_is_empty(workspace: Path) -> None:
    shutil.rmtree(workspace / "manifests")
    (workspace / "manifests").mkdir()
    shutil.copy(workspace / "expected" / "mutated.yaml", workspace / "manifests")
    code, stdout, stderr = check(workspace, "--output", "gitlab")
    assert (code, validate_gitlab_report(stdout)) == (0, []), stderr


def test_check_writes_a_markdown_job_summary(workspace: Path) -> None:
    code, stdout, stderr = check(workspace, "--output", "markdown", "--diff")
    assert code == 1, stderr
    # Paths and resources are code spans: no name becomes a link (issue 28), and what is
    # copied is what the files are named (issue 36).
    assert stdout.startswith("## kmultiarch check failed\n")
    assert "| NEEDS CHANGE | 5 |" in stdout
    assert (
        "| error | `manifests/database.yaml:" in stdout
        and "| `StatefulSet shop/orders-db` | require node affinity" in stdout
    )
    assert (
        "kmultiarch fix --config policy.yaml --lock kmultiarch.lock --offline "
        "manifests/database.yaml manifests/ingress.yaml"
    ) in stdout
    assert "<details><summary>diff of <code>manifests/database.yaml</code></summary>" in stdout
    assert "```diff\n--- a/manifests/database.yaml\n" in stdout
