"""``scripts/demo``, the README's first command: the real pipeline on examples/demo, offline.

Run in a network namespace of its own (``unshare -n``: no interface but a loopback that is
down) where the machine allows it, so that any connection attempt would fail the run."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from support.cli import clean_env

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "examples" / "demo"


def _without_network() -> list[str]:
    unshare = shutil.which("unshare")
    if unshare is None:
        return []
    probe = subprocess.run([unshare, "-n", "true"], capture_output=True, check=False, timeout=30)
    return [unshare, "-n"] if probe.returncode == 0 else []


def test_the_demo_runs_offline(tmp_path: Path) -> None:
    isolation = _without_network()
    env = clean_env(tmp_path)
    # The demo finds `kmultiarch` on PATH, as after `pip install -e .`.
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    result = subprocess.run(
        [*isolation, str(ROOT / "scripts" / "demo")],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    stdout, stderr = result.stdout, result.stderr
    # 1. mutate: the mutated manifests, then a summary on stderr
    expected = (DEMO / "expected" / "mutated.yaml").read_text()
    assert stdout.startswith(expected)
    assert (
        "kmultiarch: 6 pod specs, 5 changed, 1 unchanged; 8 images: 8 from cache or lock, "
        "0 looked up\n"
    ) in stderr
    # 2. check: the table, and why it exits 1
    rest = stdout[len(expected) :]
    assert rest.startswith("WORKLOAD ")
    assert "check FAILED: 6 pod specs, 1 ok, 5 needs-change" in rest
    assert "(check exits 1" in stderr
    # 3. report
    assert "Summary\n  workloads (pod specs):  6\n  images:                 8\n" in rest
    assert "  amd64-only:             1\n" in rest
    if isolation:
        assert "unshare" in isolation[0]


def test_the_expected_output_is_what_mutate_gives_and_is_stable() -> None:
    expected = (DEMO / "expected" / "mutated.yaml").read_text()
    documents = [doc for doc in yaml.safe_load_all(expected) if doc]
    assert len(documents) == 7  # six workloads and a Service
    db = next(doc for doc in documents if doc["metadata"]["name"] == "orders-db")
    terms = db["spec"]["template"]["spec"]["affinity"]["nodeAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"
    ]["nodeSelectorTerms"]
    assert terms == [
        {"matchExpressions": [{"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]}]}
    ]
    lock = yaml.safe_load((DEMO / "kmultiarch.lock").read_text())
    assert "ILLUSTRATIVE" in (DEMO / "kmultiarch.lock").read_text()
    assert lock["kind"] == "ImageLock" and len(lock["images"]) == 8
    assert list(lock["images"]) == sorted(lock["images"])


@pytest.mark.parametrize("command", ["check", "report"])
def test_demo_commands_touch_nothing(tmp_path: Path, command: str) -> None:
    before = {p: p.read_bytes() for p in DEMO.rglob("*") if p.is_file()}
    subprocess.run(
        [
            sys.executable,
            "-m",
            "kmultiarch",
            command,
            "--config",
            str(DEMO / "policy.yaml"),
            "--lock",
            str(DEMO / "kmultiarch.lock"),
            "--offline",
            str(DEMO / "manifests"),
        ],
        capture_output=True,
        env=clean_env(tmp_path),
        timeout=120,
        check=False,
    )
    assert {p: p.read_bytes() for p in DEMO.rglob("*") if p.is_file()} == before
