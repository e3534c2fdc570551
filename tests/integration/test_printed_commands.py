"""Every command ``check`` prints for the user runs as printed (issue 32, item 4): the fix hint of
each output format carries the options that shaped the check (``--config``, ``--lock``,
``--offline``, ``--verify``...), so that pasted into a shell it makes the same decisions. Run on
the demo (its policy and lock, offline: no registry), each format's command is run with bash as
printed and the check passes afterwards."""

from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest
from support.cli import run_kmultiarch, shell_env

REPO = Path(__file__).resolve().parents[2]
#: The options of a check that an offline run needs: without them, ``fix`` would ask the
#: registries with the default policy (and fail here, with no network).
OPTIONS = ["--config", "demo/policy.yaml", "--lock", "demo/kmultiarch.lock", "--offline"]


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    shutil.copytree(REPO / "examples" / "demo", tmp_path / "demo")
    return tmp_path


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return shell_env(tmp_path / "home")


def _commands_of(output_format: str, stdout: str) -> list[str]:
    """The fix commands a format prints, where a user reads them."""
    if output_format == "markdown":
        return re.findall(r"```sh\n(.*?)\n```", stdout, re.DOTALL)
    if output_format == "json":
        texts = [problem["message"] for problem in json.loads(stdout)["problems"]]
    elif output_format == "sarif":
        runs = json.loads(stdout)["runs"]
        texts = [result["message"]["text"] for run in runs for result in run["results"]]
    elif output_format == "gitlab":
        texts = [entry["description"] for entry in json.loads(stdout)]
    else:
        texts = [stdout]
    return [command for text in texts for command in re.findall(r"run `([^`]*)` to apply", text)]


@pytest.mark.parametrize("output_format", ["text", "json", "github", "sarif", "gitlab", "markdown"])
def test_the_fix_command_check_prints_runs_as_printed(
    workdir: Path, env: dict[str, str], output_format: str
) -> None:
    checked = run_kmultiarch(
        ["check", *OPTIONS, "--output", output_format, "demo/manifests"], env=env, cwd=workdir
    )
    assert checked.returncode == 1, checked.stderr
    commands = _commands_of(output_format, checked.stdout)
    assert commands, checked.stdout
    for command in commands:
        words = shlex.split(command)
        assert words[:2] == ["kmultiarch", "fix"], command
        assert words[2 : 2 + len(OPTIONS)] == OPTIONS, command
    for command in dict.fromkeys(commands):
        ran = subprocess.run(
            ["bash", "-c", command], cwd=workdir, env=env, capture_output=True, text=True
        )
        assert ran.returncode in (0, 1), ran.stderr  # fix exits 1 when it changed a file
        assert "error" not in ran.stderr, ran.stderr
    again = run_kmultiarch(["check", *OPTIONS, "demo/manifests"], env=env, cwd=workdir)
    assert again.returncode == 0, again.stdout + again.stderr


def test_the_fix_command_names_the_verification_mode_and_namespace(
    workdir: Path, env: dict[str, str]
) -> None:
    """Options given by environment variables are written out as options: the command runs
    the same in a shell without them."""
    checked = run_kmultiarch(
        ["check", *OPTIONS[:2], "--namespace", "team a", "--output", "markdown", "demo/manifests"],
        env={
            **env,
            "KMULTIARCH_LOCK": "demo/kmultiarch.lock",
            "KMULTIARCH_OFFLINE": "1",
            "KMULTIARCH_VERIFY": "off",
        },
        cwd=workdir,
    )
    assert checked.returncode == 1, checked.stderr
    (command,) = _commands_of("markdown", checked.stdout)
    words = shlex.split(command)
    assert words[:2] == ["kmultiarch", "fix"]
    for option in (OPTIONS[:2], OPTIONS[2:4], ["--offline"], ["--namespace", "team a"]):
        assert " ".join(option) in " ".join(words), command
    assert words[words.index("--verify") : words.index("--verify") + 2] == ["--verify", "off"]
    assert "'team a'" in command, "shell-quoted"


def test_manifests_on_stdin_get_the_mutate_command(workdir: Path, env: dict[str, str]) -> None:
    """Manifests read from stdin have no file to fix (``fix`` alone is a usage error): the hint
    is ``mutate`` with the check's options, reading them from stdin as check did."""
    manifests = sorted((workdir / "demo/manifests").iterdir())
    text = "".join(path.read_text() + "\n---\n" for path in manifests)
    checked = run_kmultiarch(["check", *OPTIONS, "-"], env=env, stdin=text, cwd=workdir)
    assert checked.returncode == 1, checked.stderr
    commands = set(_commands_of("text", checked.stdout))
    assert commands == {"kmultiarch mutate " + " ".join(OPTIONS) + " < MANIFESTS"}
    (workdir / "MANIFESTS").write_text(text)
    mutated = subprocess.run(
        ["bash", "-c", commands.pop()], cwd=workdir, env=env, capture_output=True, text=True
    )
    assert mutated.returncode == 0, mutated.stderr
    again = run_kmultiarch(["check", *OPTIONS, "-"], env=env, stdin=mutated.stdout, cwd=workdir)
    assert again.returncode == 0, again.stdout + again.stderr


def test_the_fix_command_triage_prints_runs_as_printed(tmp_path: Path, env: dict[str, str]) -> None:
    """triage's next step for a missing constraint is ``fix`` with triage's own options (its
    lock, offline): run as printed, the manifest gains the constraint, and triage then says
    the cluster runs another render than the files, no longer that the files lack it."""
    shop = tmp_path / "shop"
    shutil.copytree(REPO / "tests" / "fixtures" / "triage" / "shop", shop)
    arguments = ["triage", "deploy/", "--cluster", "cluster.json", "--lock", "kmultiarch.lock"]
    arguments += ["--offline", "-o", "json"]
    before = run_kmultiarch(arguments, env=env, cwd=shop)
    assert before.returncode == 1, before.stderr
    (agent,) = [f for f in before.json()["failures"] if f["workload"]["name"] == "node-agent"]
    assert agent["cause"] == "missing-constraint"
    command = agent["next"]
    assert shlex.split(command)[:5] == [
        "kmultiarch",
        "fix",
        "--lock",
        "kmultiarch.lock",
        "--offline",
    ]
    ran = subprocess.run(["bash", "-c", command], cwd=shop, env=env, capture_output=True, text=True)
    assert ran.returncode == 1, ran.stderr  # it changed the file
    after = run_kmultiarch(arguments, env=env, cwd=shop)
    (agent,) = [f for f in after.json()["failures"] if f["workload"]["name"] == "node-agent"]
    assert "another render" in agent["detail"], agent
