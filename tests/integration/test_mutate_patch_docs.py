"""docs/mutate.md's ``--output patch`` section shows what ``mutate`` prints: its example is the
real output for the demo's CronJob, and its table names every field."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

from support.cli import clean_env, run_kmultiarch
from support.tools import EXAMPLES, REPO

DOC = REPO / "docs" / "mutate.md"
DEMO = EXAMPLES / "demo"


def documented_section() -> str:
    text = DOC.read_text()
    return text[text.index("## `--output patch`") :]


def test_the_patch_output_is_documented_as_it_is(tmp_path: Path) -> None:
    (tmp_path / "deploy").mkdir()
    shutil.copy(DEMO / "manifests" / "jobs.yaml", tmp_path / "deploy" / "jobs.yaml")
    result = run_kmultiarch(
        [
            "mutate",
            "--config",
            str(DEMO / "policy.yaml"),
            "--lock",
            str(DEMO / "kmultiarch.lock"),
            "--offline",
            "--output",
            "patch",
            "deploy/jobs.yaml",
        ],
        env=clean_env(tmp_path),
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    section = documented_section()
    example = re.search(r"```json\n(.*?)\n```", section, re.DOTALL)
    assert example is not None
    assert json.loads(result.stdout) == json.loads(example.group(1))
    fields = set(re.findall(r"^\| `([^`]+)`", section, re.MULTILINE))
    fields |= {"apiVersion", "kind", "name", "namespace"}  # one row names the four
    assert set(json.loads(result.stdout)[0]) <= fields


def test_document_counts_from_1_as_messages_do(tmp_path: Path) -> None:
    """The third document is ``document: 3``, as kmultiarch's messages name it (here the
    error of ``--output kustomize`` about the same document)."""
    jobs = (DEMO / "manifests" / "jobs.yaml").read_text()
    stream = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n---\n# nothing\n---\n" + jobs
    options = ["--config", str(DEMO / "policy.yaml"), "--lock", str(DEMO / "kmultiarch.lock")]
    result = run_kmultiarch(
        ["mutate", *options, "--offline", "--output", "patch"],
        env=clean_env(tmp_path),
        stdin=stream,
    )
    assert result.returncode == 0, result.stderr
    (entry,) = json.loads(result.stdout)
    assert (entry["kind"], entry["document"]) == ("CronJob", 3)
    twice = run_kmultiarch(
        ["mutate", *options, "--offline", "--output", "helmrelease-patches"],
        env=clean_env(tmp_path),
        stdin=stream + "---\n" + jobs,
    )
    assert twice.returncode == 2
    assert "kmultiarch: error: <stdin>: document 3: batch/v1 CronJob shop/orders-backup" in (
        twice.stderr
    )
    assert "counts from **0**" not in documented_section()
