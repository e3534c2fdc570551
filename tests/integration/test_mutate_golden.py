"""Golden cases for ``kmultiarch mutate``: ``tests/golden/<case>/`` holds ``input.yaml``, an
optional ``policy.yaml``, ``expected.yaml`` (stdout, byte for byte) and an optional
``expect.yaml`` (``exit`` code and ``stderr`` substrings).

Inputs name images on ``registry.test``; each run's policy mirrors that host to the live test
registry, so inputs and expected outputs are fixed files. Every case is also run again on its
expected output, which must come back unchanged (idempotence).

Set ``KMULTIARCH_UPDATE_GOLDEN=1`` to rewrite ``expected.yaml`` files, then review the diff.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml
from support import SeededRegistry
from support.cli import clean_env, run_kmultiarch

GOLDEN = Path(__file__).resolve().parent.parent / "golden"
CASES = sorted(path.name for path in GOLDEN.iterdir() if (path / "input.yaml").exists())
UPDATE = os.environ.get("KMULTIARCH_UPDATE_GOLDEN") == "1"


def policy_for(case: Path, registry: SeededRegistry, target: Path) -> Path:
    policy_file = case / "policy.yaml"
    policy = (
        yaml.safe_load(policy_file.read_text())
        if policy_file.exists()
        else {
            "apiVersion": "kmultiarch.dev/v1alpha1",
            "kind": "MultiArchPolicy",
            "metadata": {"name": "golden"},
            "spec": {},
        }
    )
    policy.setdefault("spec", {}).setdefault("registries", {})["registry.test"] = {
        "mirror": registry.url
    }
    target.write_text(yaml.safe_dump(policy))
    return target


def expectations(case: Path) -> dict[str, object]:
    meta = case / "expect.yaml"
    loaded = yaml.safe_load(meta.read_text()) if meta.exists() else {}
    return {"exit": 0, "stderr": [], **loaded}


@pytest.mark.parametrize("name", CASES)
def test_golden_case(name: str, registry: SeededRegistry, tmp_path: Path) -> None:
    case = GOLDEN / name
    env = clean_env(tmp_path)
    policy = policy_for(case, registry, tmp_path / "policy.yaml")
    expect = expectations(case)
    result = run_kmultiarch(["mutate", "--config", str(policy), str(case / "input.yaml")], env=env)
    assert result.returncode == expect["exit"], result.stderr
    for fragment in expect["stderr"]:  # type: ignore[attr-defined]
        assert fragment in result.stderr, (fragment, result.stderr)
    expected_file = case / "expected.yaml"
    if result.returncode != 0:
        assert result.stdout == "", "nothing may be written to stdout on failure"
        assert not expected_file.exists()
        return
    if UPDATE:
        expected_file.write_text(result.stdout)
    assert result.stdout == expected_file.read_text()

    again = run_kmultiarch(["mutate", "--config", str(policy), str(expected_file)], env=env)
    assert again.returncode == 0, again.stderr
    assert again.stdout == expected_file.read_text(), "a second run must change nothing"


def test_every_case_is_exercised() -> None:
    assert len(CASES) >= 15
    for name in CASES:
        case = GOLDEN / name
        assert (case / "expected.yaml").exists() or expectations(case)["exit"] != 0, name
