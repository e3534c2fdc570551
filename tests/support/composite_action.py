"""A composite action run as the GitHub Actions runner runs one (actions/runner's
``CompositeActionHandler`` and ``ScriptHandler``), for testing ``action.yml`` without GitHub:

- the inputs are the caller's ``with:`` over the action's defaults; an unknown one is an error;
- ``${{ ... }}`` expressions in ``run:``, ``env:`` and the outputs' ``value:`` are replaced before
  a step runs: ``inputs.NAME``, ``steps.ID.outputs.NAME``, ``github.action_path``,
  ``github.workspace``, ``runner.temp``; any other expression fails the test, so the action
  stays within what is simulated here;
- every ``run:`` step must name its ``shell:`` (the runner refuses a composite step without);
  ``bash`` runs as ``bash --noprofile --norc -eo pipefail FILE``, ``sh`` as ``sh -e FILE``,
  ``python`` as ``python FILE``;
- each step gets fresh ``GITHUB_OUTPUT``, ``GITHUB_ENV``, ``GITHUB_PATH`` and
  ``GITHUB_STEP_SUMMARY`` files: ``name=value`` and ``name<<DELIMITER`` lines of the first two
  become the step's outputs and the next steps' environment, lines of ``GITHUB_PATH`` are put
  before ``PATH``, and the summaries are put together in order;
- the first step that fails ends the run with its exit status (no step here has ``if:``).
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from .workflow_commands import Command, workflow_commands

_EXPRESSION = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")
_STEP_KEYS = {"name", "id", "shell", "run", "env", "working-directory"}
_SHELLS = {
    "bash": ["bash", "--noprofile", "--norc", "-eo", "pipefail"],
    "sh": ["sh", "-e"],
    "python": ["python3"],
}


@dataclass
class StepRun:
    name: str
    returncode: int
    stdout: str
    stderr: str
    outputs: dict[str, str]


@dataclass
class ActionRun:
    returncode: int
    steps: list[StepRun]
    outputs: dict[str, str]
    summary: str
    commands: list[Command] = field(default_factory=list)

    @property
    def log(self) -> str:
        return "".join(step.stdout + step.stderr for step in self.steps)


def read_environment_file(path: Path) -> dict[str, str]:
    """``name=value`` lines, and ``name<<DELIMITER`` ... ``DELIMITER`` blocks."""
    values: dict[str, str] = {}
    lines = path.read_text().split("\n") if path.exists() else []
    index = 0
    while index < len(lines):
        line = lines[index]
        index += 1
        if not line:
            continue
        if "<<" in line and ("=" not in line or line.index("<<") < line.index("=")):
            name, delimiter = line.split("<<", 1)
            block: list[str] = []
            while lines[index] != delimiter:
                block.append(lines[index])
                index += 1
            index += 1
            values[name] = "\n".join(block)
        else:
            name, value = line.split("=", 1)
            values[name] = value
    return values


def run_composite_action(
    action_dir: Path,
    *,
    inputs: Mapping[str, str],
    workspace: Path,
    runner_temp: Path,
    env: Mapping[str, str],
) -> ActionRun:
    action: dict[str, Any] = yaml.safe_load((action_dir / "action.yml").read_text())
    assert action["runs"]["using"] == "composite"
    declared = action.get("inputs") or {}
    unknown = set(inputs) - set(declared)
    assert not unknown, f"inputs the action does not declare: {sorted(unknown)}"
    values = {name: str(spec.get("default", "")) for name, spec in declared.items()}
    values.update(inputs)
    contexts: dict[str, Any] = {
        "inputs": values,
        "steps": {},
        "github": {"action_path": str(action_dir), "workspace": str(workspace)},
        "runner": {"temp": str(runner_temp)},
    }
    runner_env = {
        **env,
        "CI": "true",
        "GITHUB_ACTIONS": "true",
        "GITHUB_WORKSPACE": str(workspace),
        "GITHUB_ACTION_PATH": str(action_dir),
        "RUNNER_TEMP": str(runner_temp),
        "RUNNER_OS": "Linux",
    }
    summary_parts: list[str] = []
    steps: list[StepRun] = []
    for number, step in enumerate(action["runs"]["steps"]):
        assert set(step) <= _STEP_KEYS, f"step {number}: not simulated: {set(step) - _STEP_KEYS}"
        assert "shell" in step, f"step {number} ({step.get('name')}): a run step needs shell:"
        files = {
            name: runner_temp / f"_step{number}_{name.lower()}"
            for name in ("GITHUB_OUTPUT", "GITHUB_ENV", "GITHUB_PATH", "GITHUB_STEP_SUMMARY")
        }
        for path in files.values():
            path.write_text("")
        script = runner_temp / f"_step{number}.script"
        script.write_text(substitute(step["run"], contexts))
        step_env = {
            **runner_env,
            **{
                key: substitute(str(value), contexts)
                for key, value in (step.get("env") or {}).items()
            },
            **{name: str(path) for name, path in files.items()},
        }
        completed = subprocess.run(
            [*_SHELLS[step["shell"]], str(script)],
            capture_output=True,
            text=True,
            env=step_env,
            cwd=workspace / step.get("working-directory", "."),
            stdin=subprocess.DEVNULL,
            timeout=600,
            check=False,
        )
        outputs = read_environment_file(files["GITHUB_OUTPUT"])
        steps.append(
            StepRun(
                step.get("name", str(number)),
                completed.returncode,
                completed.stdout,
                completed.stderr,
                outputs,
            )
        )
        if "id" in step:
            contexts["steps"][step["id"]] = {"outputs": outputs}
        runner_env.update(read_environment_file(files["GITHUB_ENV"]))
        added = [line for line in files["GITHUB_PATH"].read_text().splitlines() if line]
        if added:
            runner_env["PATH"] = ":".join([*reversed(added), runner_env["PATH"]])
        summary_parts.append(files["GITHUB_STEP_SUMMARY"].read_text())
        if completed.returncode != 0:
            break
    declared_outputs = action.get("outputs") or {}
    outputs = {
        name: substitute(str(spec["value"]), contexts) for name, spec in declared_outputs.items()
    }
    return ActionRun(
        returncode=steps[-1].returncode if steps else 0,
        steps=steps,
        outputs=outputs,
        summary="".join(summary_parts),
        commands=workflow_commands(*(step.stdout for step in steps)),
    )


def substitute(text: str, contexts: Mapping[str, Any]) -> str:
    def value(match: re.Match[str]) -> str:
        expression = match.group(1)
        parts = expression.split(".")
        known = (len(parts) == 2 and parts[0] in ("inputs", "github", "runner")) or (
            len(parts) == 4 and parts[0] == "steps" and parts[2] == "outputs"
        )
        assert known, f"expression not simulated: {expression}"
        found: Any = contexts
        for part in parts:
            found = found.get(part, "") if isinstance(found, Mapping) else ""
        return str(found)

    return _EXPRESSION.sub(value, text)
