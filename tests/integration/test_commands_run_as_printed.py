"""Every command kmultiarch prints runs as printed, whatever the files are named (issue 36, items
1-3): file names with spaces, quotes, ``$()``, a newline, a leading dash, a byte that is not
UTF-8 and an invisible character. Each command is taken from where a user reads it (the text on
a terminal, a JSON or SARIF field, a GitHub annotation as the runner reads it, GitLab's
description, the Markdown job summary rendered by cmark-gfm as GitHub renders it), run with
``bash -c`` as printed, and must act on the file it was printed for and no other.

Before, check's and triage's text output escaped a shell-quoted newline for the terminal
(``'new\\nline.yaml'`` names another file), ``-agent.yaml`` was an option to click (``No such
option: -a``), and the Markdown summaries put U+2060 WORD JOINER inside names and commands."""

from __future__ import annotations

import html
import json
import os
import re
import shutil
import subprocess
import unicodedata
from pathlib import Path

import cmarkgfm
import pytest
import yaml
from support import SeededRegistry
from support.cli import run_kmultiarch, shell_env
from support.manifests import deployment, image, write_policy
from support.workflow_commands import workflow_commands

REPO = Path(__file__).resolve().parents[2]
#: File names a shell, click or a terminal would misread; the index names the workload inside.
HOSTILE_NAMES = [
    "a b $(touch pwned).yaml",
    'it\'s "q" `x`.yaml',
    "new\nline.yaml",
    "-agent.yaml",
    os.fsdecode(b"caf\xe9.yaml"),  # a byte that is not UTF-8, as Python holds it
    "zero\u200bwidth.yaml",
]
CHECK_OPTIONS = ["--config", "demo/policy.yaml", "--lock", "demo/kmultiarch.lock", "--offline"]
FORMATS = ["text", "json", "github", "sarif", "gitlab", "markdown"]


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return shell_env(tmp_path / "home")


def invisible(text: str) -> list[str]:
    """The characters of ``text`` a reader would not see: control characters but newline and
    tab, format characters (U+200B, U+2060...), separators but the space, private and
    unassigned code points."""
    hidden = {"Cc", "Cf", "Zl", "Zp", "Zs", "Co", "Cn", "Cs"}
    return [
        f"U+{ord(c):04X}" for c in text if c not in "\n\t " and unicodedata.category(c) in hidden
    ]


def bash(command: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(["bash", "-c", command], cwd=cwd, env=env, capture_output=True)


def snapshot(directory: Path) -> dict[str, bytes]:
    return {path.name: path.read_bytes() for path in directory.iterdir() if path.is_file()}


def run_each_fixes_its_own_file(
    commands: list[tuple[str, str]], directory: Path, env: dict[str, str]
) -> None:
    """Each ``fix`` command, run with bash as printed, changes the file of the resource it was
    printed for (``...-N``: the file ``HOSTILE_NAMES[N]``), and no other; nothing else runs."""
    for resource, command in commands:
        index = int(resource.rpartition("-")[2])
        before = snapshot(directory)
        ran = bash(command, directory, env)
        assert ran.returncode == 1, (command, ran.stderr)  # fix exits 1: it changed a file
        after = snapshot(directory)
        changed = [name for name in before if before[name] != after[name]]
        assert changed == [HOSTILE_NAMES[index]], command
        assert "nodeAffinity" in after[changed[0]].decode()
    assert not (directory / "pwned").exists()


def markdown_commands(markdown: str, kind: str) -> list[tuple[str, str]]:
    """(the resource, the ``fix`` command) of each table row of a Markdown summary, as a
    reader copies them from the page GitHub renders (the text of their code spans)."""
    rendered = cmarkgfm.github_flavored_markdown_to_html(markdown)
    found = []
    for row in re.findall(r"<tr>(.*?)</tr>", rendered, re.DOTALL):
        codes = [html.unescape(code) for code in re.findall(r"<code>(.*?)</code>", row)]
        resource = next((code for code in codes if code.startswith(kind)), None)
        command = next((code for code in codes if code.startswith("kmultiarch fix")), None)
        if resource and command:
            found.append((resource, command))
    return found


# --- check ------------------------------------------------------------------------------------


@pytest.fixture
def check_dir(tmp_path: Path) -> Path:
    """The demo's policy and lock, and the demo's amd64-only StatefulSet in a file of each
    hostile name, as ``orders-db-N``."""
    work = tmp_path / "work"
    work.mkdir()
    shutil.copytree(REPO / "examples" / "demo", work / "demo")
    database = (work / "demo" / "manifests" / "database.yaml").read_text()
    for index, name in enumerate(HOSTILE_NAMES):
        (work / name).write_text(database.replace("name: orders-db", f"name: orders-db-{index}"))
    return work


def _check_commands(output_format: str, stdout: str) -> list[tuple[str, str]]:
    """(the resource a command was printed for, the command), where a user reads them."""
    pattern = re.compile(r"(StatefulSet shop/orders-db-\d+):.*?run `(.+?)` to apply", re.DOTALL)
    if output_format == "text":
        return [m.groups() for line in stdout.splitlines() if (m := pattern.search(line))]
    if output_format == "github":
        texts = [command.data for command in workflow_commands(stdout)]
    elif output_format == "json":
        texts = [
            f"StatefulSet shop/{p['resource']['name']}: {p['message']}"
            for p in json.loads(stdout)["problems"]
        ]
    elif output_format == "sarif":
        results = json.loads(stdout)["runs"][0]["results"]
        texts = [result["message"]["text"] for result in results]
    elif output_format == "gitlab":
        texts = [entry["description"] for entry in json.loads(stdout)]
    else:
        return markdown_commands(stdout, "StatefulSet ")
    return [m.groups() for text in texts if (m := pattern.search(text))]


@pytest.mark.parametrize("output_format", FORMATS)
def test_check_fix_commands_run_as_printed_for_hostile_file_names(
    check_dir: Path, env: dict[str, str], output_format: str
) -> None:
    checked = run_kmultiarch(
        ["check", *CHECK_OPTIONS, "-o", output_format, "--", *HOSTILE_NAMES],
        env=env,
        cwd=check_dir,
    )
    assert checked.returncode == 1, checked.stderr
    assert invisible(checked.stdout) == [], checked.stdout
    commands = _check_commands(output_format, checked.stdout)
    assert len(commands) == len(HOSTILE_NAMES), checked.stdout
    run_each_fixes_its_own_file(commands, check_dir, env)
    again = run_kmultiarch(["check", *CHECK_OPTIONS, "--", *HOSTILE_NAMES], env=env, cwd=check_dir)
    assert again.returncode == 0, again.stdout + again.stderr


def test_the_markdown_summarys_fix_block_runs_as_copied_from_the_rendered_page(
    check_dir: Path, env: dict[str, str]
) -> None:
    """The fenced block for every file, copied from the rendered summary (its ``<code>``)."""
    checked = run_kmultiarch(
        ["check", *CHECK_OPTIONS, "-o", "markdown", "--", *HOSTILE_NAMES], env=env, cwd=check_dir
    )
    rendered = cmarkgfm.github_flavored_markdown_to_html(checked.stdout)
    (block,) = re.findall(r'<pre lang="sh"><code>(.*?)</code></pre>', rendered, re.DOTALL)
    before = snapshot(check_dir)
    ran = bash(html.unescape(block), check_dir, env)
    assert ran.returncode == 1, ran.stderr
    after = snapshot(check_dir)
    assert sorted(name for name in before if before[name] != after[name]) == sorted(HOSTILE_NAMES)
    assert not (check_dir / "pwned").exists()


# --- triage -----------------------------------------------------------------------------------


@pytest.fixture
def triage_dir(tmp_path: Path) -> Path:
    """The shop's node-agent (a DaemonSet whose pod died with exec format error on arm64, its
    manifest lacking the constraint) once per hostile name: ``node-agent-N`` in that file,
    its pod in the dump."""
    shop = REPO / "tests" / "fixtures" / "triage" / "shop"
    work = tmp_path / "shop"
    work.mkdir()
    shutil.copy(shop / "kmultiarch.lock", work)
    manifest = (shop / "deploy" / "node-agent.yaml").read_text()
    dump = json.loads((shop / "cluster.json").read_text())
    nodes = [item for item in dump["items"] if item["kind"] == "Node"]
    (pod,) = [item for item in dump["items"] if item["metadata"]["name"] == "node-agent-7xk2p"]
    pods = []
    for index, name in enumerate(HOSTILE_NAMES):
        text = manifest.replace("name: node-agent\n", f"name: node-agent-{index}\n", 1)
        (work / name).write_text(text)
        clone = json.loads(
            json.dumps(pod)
            .replace('"node-agent-7xk2p"', f'"node-agent-{index}-7xk2p"')
            .replace('"name": "node-agent"', f'"name": "node-agent-{index}"')
        )
        clone["metadata"]["uid"] = f"uid-{index}"
        pods.append(clone)
    (work / "cluster.json").write_text(json.dumps({**dump, "items": [*nodes, *pods]}))
    return work


def _triage_commands(output_format: str, stdout: str) -> list[tuple[str, str]]:
    """(the workload a next step was printed for, its command), where a user reads them."""
    pattern = re.compile(r"(DaemonSet shop/node-agent-\d+): .*?next: (kmultiarch .*?); DaemonSet")
    if output_format == "text":
        found, workload = [], ""
        for line in stdout.splitlines():
            if line.startswith("DaemonSet "):
                workload = line.split("  ")[0]
            elif line.startswith("    next:     "):
                found.append((workload, line.removeprefix("    next:     ")))
        return found
    if output_format == "json":
        failures = json.loads(stdout)["failures"]
        return [
            (f"DaemonSet shop/{f['workload']['name']}", command)
            for f in failures
            for command in f["commands"]
        ]
    if output_format == "markdown":
        return markdown_commands(stdout, "DaemonSet ")
    if output_format == "github":
        texts = [command.data for command in workflow_commands(stdout)]
    else:
        results = json.loads(stdout)["runs"][0]["results"]
        texts = [result["message"]["text"] for result in results]
    return [m.groups() for text in texts if (m := pattern.search(text))]


@pytest.mark.parametrize("output_format", ["text", "json", "github", "sarif", "markdown"])
def test_triage_next_commands_run_as_printed_for_hostile_file_names(
    triage_dir: Path, env: dict[str, str], output_format: str
) -> None:
    arguments = ["triage", "--cluster", "cluster.json", "--lock", "kmultiarch.lock", "--offline"]
    triaged = run_kmultiarch(
        [*arguments, "-o", output_format, "--", *HOSTILE_NAMES], env=env, cwd=triage_dir
    )
    assert triaged.returncode == 1, triaged.stderr
    assert invisible(triaged.stdout) == [], triaged.stdout
    commands = _triage_commands(output_format, triaged.stdout)
    assert len(commands) == len(HOSTILE_NAMES), triaged.stdout
    run_each_fixes_its_own_file(commands, triage_dir, env)


# --- lock -------------------------------------------------------------------------------------


def test_lock_commands_run_as_printed_for_hostile_file_names(
    tmp_path: Path, registry: SeededRegistry, env: dict[str, str]
) -> None:
    """The lock's header names the command that made it and the one that checks it; ``lock
    --check`` names the one that refreshes it. Each, run as printed, reads the same files."""
    work = tmp_path / "work"
    work.mkdir()
    write_policy(work / "policy.yaml", registry)
    # The last file's image is in no other file.
    keys = ["multiarch-oci", "single-docker-amd64", "team-app-api", "nested-index", "multiarch-oci"]
    keys.append("armv7-only")
    for index, name in enumerate(HOSTILE_NAMES):
        (work / name).write_text(deployment(f"app-{index}", [image(registry, keys[index])]))
    lock = "my lock.lock"
    made = run_kmultiarch(
        ["lock", "--config", "policy.yaml", "-o", lock, "--", *HOSTILE_NAMES[:-1]],
        env=env,
        cwd=work,
    )
    assert made.returncode == 0, made.stderr
    header = [line for line in (work / lock).read_text().splitlines() if line.startswith("#")]
    assert invisible("\n".join(header)) == []
    (make,) = [m[1] for line in header if (m := re.match(r"# Made by `(.*)` \(kmultiarch", line))]
    (check,) = [m[1] for line in header if (m := re.match(r"# `(.*)` lists entries", line))]
    # The check, without the last file: up to date.
    ran = bash(check, work, env)
    assert ran.returncode == 0, ran.stderr
    # Made again as printed: the same entries.
    entries = yaml.safe_load((work / lock).read_text())["images"]
    (work / lock).unlink()
    ran = bash(make, work, env)
    assert ran.returncode == 0, ran.stderr
    assert yaml.safe_load((work / lock).read_text())["images"] == entries
    # The last file's image is new: lock --check says so and prints the refresh command.
    checked = run_kmultiarch(
        ["lock", "--check", "--config", "policy.yaml", "-o", lock, "--", *HOSTILE_NAMES],
        env=env,
        cwd=work,
    )
    assert checked.returncode == 1, checked.stderr
    assert invisible(checked.stdout + checked.stderr) == []
    (refresh,) = re.findall(r"refresh it with `(.*)`$", checked.stderr, re.MULTILINE)
    ran = bash(refresh, work, env)
    assert ran.returncode == 0, ran.stderr
    again = run_kmultiarch(
        ["lock", "--check", "--config", "policy.yaml", "-o", lock, "--", *HOSTILE_NAMES],
        env=env,
        cwd=work,
    )
    assert again.returncode == 0, again.stdout + again.stderr


@pytest.mark.parametrize("output_format", ["text", "json", "html"])
def test_report_shows_hostile_file_names_with_no_invisible_character(
    check_dir: Path, env: dict[str, str], output_format: str
) -> None:
    reported = run_kmultiarch(
        ["report", *CHECK_OPTIONS, "-o", output_format, "--", *HOSTILE_NAMES],
        env=env,
        cwd=check_dir,
    )
    assert reported.returncode == 0, reported.stderr
    assert "orders-db-5" in reported.stdout
    assert invisible(reported.stdout) == [], reported.stdout
