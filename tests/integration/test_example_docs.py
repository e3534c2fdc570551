"""Every command of every example README, and of the blocks the docs mark runnable, run exactly
as written: in order, in one shell per document, from the root of a copy of the repository,
with no registry and no network (pip included: it builds this repository in place, offline).

What is a command: the lines of a fenced ``sh`` or ``bash`` block, joined where a line ends with
a backslash, without the lines that are only comments. Example READMEs run all their blocks;
a doc runs the blocks right after a ``<!-- runnable -->`` comment. ``<!-- needs: WHAT -->``
before a block names what it needs beyond this machine's tools (``registry``: a registry to
ask; ``kustomize-exec``: a standalone kustomize that runs exec KRM functions): such a block
runs only where that is there, in a test of its own. A command whose comment says
``# → FILE`` must print FILE (relative to the document's directory), byte for byte.

The environment is a newcomer's after ``scripts/install-tools``: ``.tools`` in the copy, and,
for the container function, the image ``scripts/build-images`` built, tagged as the
placeholder the example names, a ``docker`` that runs podman (kustomize calls ``docker run``)
and ``KPT_FN_RUNTIME=podman``.
"""

from __future__ import annotations

import os
import platform
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from support import SeededRegistry
from support.checkout import copy_checkout
from support.cli import clean_env
from support.offline_pip import OFFLINE_PIP_ENV, offline_virtualenv
from support.tools import (
    REPO,
    TOOLS_BIN,
    kpt_binary,
    missing,
    run_tool,
    tool_env,
    write_mirrored_policy,
)

FN_IMAGE = os.environ.get("KMULTIARCH_FN_IMAGE", "localhost/kmultiarch:dev")
PLACEHOLDER_IMAGE = "ghcr.io/your-org/kmultiarch:0.1.0"
EXAMPLE_READMES = sorted(REPO.glob("examples/*/README.md"))
DOCS = sorted(REPO.glob("docs/*.md"))
EXPECTED = re.compile(r"#\s*→\s*(\S+)")
MARKER = re.compile(r"<!--\s*(runnable|needs:\s*([\w-]+))\s*-->")


@dataclass
class Block:
    document: Path
    line: int
    commands: list[str]
    needs: set[str] = field(default_factory=set)

    @property
    def name(self) -> str:
        return f"{self.document.relative_to(REPO)}:{self.line}"


def code_blocks(document: Path) -> Iterator[Block]:
    """The document's runnable blocks, in order."""
    every_block = document.parent.parent == REPO / "examples"
    lines = document.read_text().splitlines()
    markers: list[str] = []
    index = 0
    while index < len(lines):
        line = lines[index]
        found = MARKER.fullmatch(line.strip())
        if found:
            markers.append(found.group(2) or found.group(1))
            index += 1
            continue
        fence = re.match(r"^(`{3,})\s*(\w*)", line)
        if not fence:
            if line.strip():
                markers = []
            index += 1
            continue
        end = index + 1
        while not lines[end].startswith(fence.group(1)):
            end += 1
        body = lines[index + 1 : end]
        runnable = every_block or "runnable" in markers
        if fence.group(2) in ("sh", "bash") and runnable:
            yield Block(
                document,
                index + 1,
                shell_commands(body),
                {marker for marker in markers if marker != "runnable"},
            )
        markers = []
        index = end + 1


def shell_commands(lines: list[str]) -> list[str]:
    commands: list[str] = []
    current: list[str] = []
    for line in lines:
        if not current and (not line.strip() or line.lstrip().startswith("#")):
            continue
        current.append(line)
        if not line.endswith("\\"):
            commands.append("\n".join(current))
            current = []
    assert not current, f"a command ends with a backslash: {current}"
    return commands


def blocks_of(document: Path) -> list[Block]:
    return list(code_blocks(document))


RUN_DOCUMENTS = [doc for doc in [*EXAMPLE_READMES, *DOCS] if blocks_of(doc)]


def available(need: str) -> bool:
    if need == "kustomize-exec":
        found = shutil.which("kustomize")
        if found is None:
            return False
        shown = subprocess.run([found, "build", "--help"], capture_output=True, text=True)
        return "--enable-exec" in shown.stdout
    return False  # registry: the tests reach none but their own


# --- the environment -------------------------------------------------------------------------


@pytest.fixture(scope="module")
def python_bin(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return offline_virtualenv(tmp_path_factory.mktemp("python") / "venv")


@dataclass
class Ran:
    block: Block
    command: str
    returncode: int
    stdout: str
    stderr: str


def container_setup(env: dict[str, str], directory: Path) -> None:
    """The function image built here under the example's placeholder name, and what kustomize
    and kpt need to run it with podman."""
    podman = shutil.which("podman")
    if podman is None:
        missing("podman is not installed")
    assert podman is not None
    exists = subprocess.run([podman, "image", "exists", FN_IMAGE], env=env, check=False)
    if exists.returncode != 0:
        missing(f"{FN_IMAGE} is not built: scripts/build-images --debian-base")
    subprocess.run([podman, "tag", function_image(env), PLACEHOLDER_IMAGE], env=env, check=True)
    docker = directory / "docker"
    docker.parent.mkdir(parents=True, exist_ok=True)
    docker.write_text(f'#!/bin/sh\nexec "{podman}" "$@"\n')
    docker.chmod(0o755)
    env["PATH"] = f"{docker.parent}{os.pathsep}{env['PATH']}"
    env["KPT_FN_RUNTIME"] = "podman"


def function_image(env: dict[str, str]) -> str:
    """This machine's image of the function: podman 4 cannot take a second name off a manifest
    list again (``untag`` fails, or takes every name off the platform image it resolves to), so
    the name goes on the platform image ``scripts/build-images --platform`` also tags."""
    architecture = {"x86_64": "amd64", "aarch64": "arm64"}.get(platform.machine(), "")
    candidate = f"{FN_IMAGE}-{architecture}"
    found = subprocess.run(["podman", "image", "exists", candidate], env=env, check=False)
    return candidate if architecture and found.returncode == 0 else FN_IMAGE


def untag_placeholder(env: dict[str, str]) -> None:
    subprocess.run(
        ["podman", "untag", function_image(env), PLACEHOLDER_IMAGE], env=env, check=False
    )


def run_blocks(blocks: list[Block], tmp_path: Path, python_bin: Path) -> list[Ran]:
    """The blocks' commands in one bash, on a copy of the repository; stops at the first
    command that fails."""
    root = copy_checkout(tmp_path / "kmultiarch")
    if (REPO / ".tools").exists():
        (root / ".tools").symlink_to(REPO / ".tools")
    out = tmp_path / "out"
    out.mkdir()
    env = clean_env(tmp_path / "home", OFFLINE_PIP_ENV)
    for name in ("VIRTUAL_ENV", "PYTHONPATH", "KMULTIARCH_LOCK", "KMULTIARCH_OFFLINE"):
        env.pop(name, None)
    test_python = str(Path(sys.executable).parent)
    path = [entry for entry in env["PATH"].split(os.pathsep) if entry != test_python]
    env["PATH"] = os.pathsep.join([str(python_bin), *path])
    commands = [(block, command) for block in blocks for command in block.commands]
    uses_image = any(PLACEHOLDER_IMAGE in command for _, command in commands)
    if any(re.match(r"kpt\b", command) for _, command in commands) and not shutil.which("kpt"):
        missing("kpt is not installed", required_in_ci=False)
    if uses_image:
        container_setup(env, tmp_path / "docker-bin")
    script = ["set -o pipefail"]
    for number, (_, command) in enumerate(commands):
        script += [
            "{",
            command,
            f'}} >"{out}/{number}.out" 2>"{out}/{number}.err" || {{ '
            f'echo $? >"{out}/{number}.status"; exit 1; }}',
        ]
    try:
        subprocess.run(
            ["bash", "-c", "\n".join(script)],
            cwd=root,
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=900,
            check=False,
        )
    finally:
        if uses_image:
            untag_placeholder(env)
    ran = []
    for number, (block, command) in enumerate(commands):
        output = out / f"{number}.out"
        if not output.exists():
            break
        status = out / f"{number}.status"
        ran.append(
            Ran(
                block,
                command,
                int(status.read_text()) if status.exists() else 0,
                output.read_text(),
                (out / f"{number}.err").read_text(),
            )
        )
    return ran


def assert_ran(blocks: list[Block], ran: list[Ran]) -> None:
    expected = [command for block in blocks for command in block.commands]
    for result in ran:
        where = f"{result.block.name}: {result.command}"
        assert result.returncode == 0, f"{where}\nexit {result.returncode}\n{result.stderr}"
        assert "failed to load plugins" not in result.stderr, f"{where}\n{result.stderr}"
        assert "Traceback" not in result.stderr, f"{where}\n{result.stderr}"
        for name in EXPECTED.findall(result.command):
            wanted = (result.block.document.parent / name).read_text()
            assert result.stdout == wanted, f"{where}: the output is not {name}"
    assert [r.command for r in ran] == expected, "not every command ran"


# --- the tests -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "document", RUN_DOCUMENTS, ids=[str(doc.relative_to(REPO)) for doc in RUN_DOCUMENTS]
)
def test_every_documented_command_runs_offline(
    document: Path, tmp_path: Path, python_bin: Path
) -> None:
    blocks = [block for block in blocks_of(document) if not block.needs]
    assert_ran(blocks, run_blocks(blocks, tmp_path, python_bin))


NEEDING = [block for doc in RUN_DOCUMENTS for block in blocks_of(doc) if block.needs]


@pytest.mark.parametrize("block", NEEDING, ids=[block.name for block in NEEDING])
def test_documented_commands_that_need_more_run_where_it_is_there(
    block: Block, tmp_path: Path, python_bin: Path
) -> None:
    unmet = sorted(need for need in block.needs if not available(need))
    if unmet:
        pytest.skip(f"needs {', '.join(unmet)}")
    before = [b for b in blocks_of(block.document) if not b.needs and b.line < block.line]
    assert_ran([*before, block], run_blocks([*before, block], tmp_path, python_bin))


def test_every_example_readme_has_commands_and_every_marker_is_known() -> None:
    for readme in EXAMPLE_READMES:
        if readme.parent.name in ("demo", "pre-commit"):
            continue
        assert blocks_of(readme), readme
    for document in [*EXAMPLE_READMES, *DOCS]:
        for block in blocks_of(document):
            assert block.needs <= {"registry", "kustomize-exec"}, block.name
            assert block.commands, block.name


def test_kpt_fn_render_on_the_krm_example_leaves_expected_yaml_alone(
    registry: SeededRegistry, tmp_path: Path
) -> None:
    """``kpt fn render`` reads every YAML file of the package: without the example's
    ``.krmignore`` it ran the function on expected.yaml too (4 pod specs, not 2)."""
    example = tmp_path / "kustomize-krm"
    shutil.copytree(REPO / "examples" / "kustomize-krm", example)
    policy = example / "multiarch.yaml"
    write_mirrored_policy(policy, registry.url, source=policy)
    result = run_tool(
        [kpt_binary(), "fn", "render", "--allow-exec", example], env=tool_env(tmp_path)
    )
    assert result.returncode == 0, result.stderr
    assert re.search(r"\b2 pod specs\b", result.stderr), result.stderr
    original = (REPO / "examples" / "kustomize-krm" / "expected.yaml").read_bytes()
    assert (example / "expected.yaml").read_bytes() == original
    assert (example / "workloads.yaml").read_bytes() == original


def test_install_tools_names_the_tools_as_the_docs_do() -> None:
    """The docs say ``helm`` (Helm 3), ``helm4`` and ``kustomize``; scripts/install-tools puts
    them in .tools/bin."""
    if not TOOLS_BIN.is_dir():
        missing("run scripts/install-tools")
    helm = subprocess.run(
        [TOOLS_BIN / "helm", "version", "--short"], capture_output=True, text=True
    )
    assert helm.stdout.startswith("v3."), helm
    built = subprocess.run(
        [TOOLS_BIN / "kustomize", "build", REPO / "examples" / "kustomize-overlay" / "base"],
        capture_output=True,
        text=True,
    )
    assert built.returncode == 0 and "kind: Deployment" in built.stdout, built.stderr
    refused = subprocess.run(
        [TOOLS_BIN / "kustomize", "build", "--enable-exec", "."], capture_output=True, text=True
    )
    assert refused.returncode == 2 and "standalone kustomize" in refused.stderr
