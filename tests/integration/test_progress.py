"""The progress line: on stderr when it is a terminal (a real pty here) and there are more than a
handful of images; never in a pipe, never with --quiet; erased when resolving is over."""

from __future__ import annotations

import os
import pty
import subprocess
import sys
from pathlib import Path

import pytest
from support import SeededRegistry
from support.cli import clean_env, run_kmultiarch
from support.manifests import deployment, image, write_policy

KEYS = [
    "multiarch-oci",
    "multiarch-docker",
    "single-oci-arm64",
    "single-docker-amd64",
    "armv7-only",
    "aarch64-config",
    "nested-index",
    "amd64-only-index",
    "two-tags-latest",
    "team-app-api",
]
PROGRESS = "kmultiarch: resolving images "


@pytest.fixture
def setup(tmp_path: Path, registry: SeededRegistry) -> tuple[list[str], dict[str, str]]:
    policy = write_policy(tmp_path / "policy.yaml", registry)
    manifest = tmp_path / "many.yaml"
    manifest.write_text(
        "---\n".join(deployment(f"app{n}", [image(registry, key)]) for n, key in enumerate(KEYS))
    )
    return ["--config", str(policy), str(manifest)], clean_env(tmp_path)


def run_with_terminal_stderr(args: list[str], env: dict[str, str]) -> tuple[int, str, str]:
    """Run kmultiarch with stderr on a pseudo-terminal and stdout on a pipe."""
    controller, terminal = pty.openpty()
    try:
        process = subprocess.Popen(
            [sys.executable, "-m", "kmultiarch", *args],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=terminal,
            env=env,
        )
        os.close(terminal)
        terminal = -1
        chunks = []
        while True:
            try:
                chunk = os.read(controller, 4096)
            except OSError:  # EIO: the child closed the terminal
                break
            if not chunk:
                break
            chunks.append(chunk)
        stdout = process.stdout.read() if process.stdout else b""
        code = process.wait(timeout=120)
    finally:
        os.close(controller)
        if terminal >= 0:
            os.close(terminal)
    return code, stdout.decode(), b"".join(chunks).decode(errors="replace")


def test_a_progress_line_on_a_terminal(setup: tuple[list[str], dict[str, str]]) -> None:
    args, env = setup
    code, stdout, stderr = run_with_terminal_stderr(["mutate", "--no-cache", *args], env)
    assert code == 0, stderr
    assert f"\r\x1b[K{PROGRESS}0/10 (0 from cache or lock)" in stderr
    assert f"\r\x1b[K{PROGRESS}10/10 (0 from cache or lock)" in stderr
    # Erased before what follows (a warning for the armv7-only pod, then the summary).
    after = stderr[stderr.rindex(PROGRESS) :]
    assert after.startswith(f"{PROGRESS}10/10 (0 from cache or lock)\r\x1b[Kkmultiarch: warning:")
    assert stderr.splitlines()[-1].startswith("kmultiarch: 10 pod specs")
    assert PROGRESS not in stdout and stdout.startswith("apiVersion: apps/v1")

    # A warm run counts its cache hits.
    run_kmultiarch(["mutate", *args], env=env)
    code, _, warm = run_with_terminal_stderr(["check", *args], env)
    assert f"{PROGRESS}10/10 (10 from cache or lock)" in warm


def test_silent_with_quiet_and_in_a_pipe(setup: tuple[list[str], dict[str, str]]) -> None:
    args, env = setup
    code, _, stderr = run_with_terminal_stderr(["mutate", "--no-cache", "--quiet", *args], env)
    assert code == 0
    assert stderr == ""
    piped = run_kmultiarch(["mutate", "--no-cache", *args], env=env)
    assert piped.returncode == 0
    assert PROGRESS not in piped.stderr and "\r" not in piped.stderr


def test_silent_for_a_handful_of_images(tmp_path: Path, registry: SeededRegistry) -> None:
    policy = write_policy(tmp_path / "policy.yaml", registry)
    manifest = tmp_path / "few.yaml"
    manifest.write_text(deployment("few", [image(registry, key) for key in KEYS[:3]]))
    code, _, stderr = run_with_terminal_stderr(
        ["mutate", "--no-cache", "--config", str(policy), str(manifest)], clean_env(tmp_path)
    )
    assert code == 0
    assert PROGRESS not in stderr
