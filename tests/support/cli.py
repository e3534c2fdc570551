"""Running the real ``kmultiarch`` command in a subprocess, as users and tools do."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: Environment variables that would leak the developer's machine into a test.
_SCRUBBED = (
    "KMULTIARCH_CONFIG",
    "KMULTIARCH_CACHE_DIR",
    "DOCKER_CONFIG",
    "REGISTRY_AUTH_FILE",
    "XDG_RUNTIME_DIR",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "http_proxy",
    "https_proxy",
    "ALL_PROXY",
    "all_proxy",
)


@dataclass
class Completed:
    returncode: int
    stdout: str
    stderr: str

    def json(self) -> Any:
        return json.loads(self.stdout)


def clean_env(home: Path, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """A minimal environment: a private HOME and cache, no proxies, no docker credentials."""
    env = {key: value for key, value in os.environ.items() if key not in _SCRUBBED}
    env["HOME"] = str(home)
    env["XDG_CACHE_HOME"] = str(home / ".cache")
    env["NO_PROXY"] = "*"
    env.update(extra or {})
    return env


def shell_env(home: Path) -> dict[str, str]:
    """:func:`clean_env`, with ``kmultiarch`` on PATH as a user's shell finds it (the entry
    point beside this interpreter): for commands run with bash as kmultiarch printed them."""
    environment = clean_env(home)
    environment["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{environment['PATH']}"
    return environment


def run_kmultiarch(
    args: Sequence[str],
    *,
    env: Mapping[str, str],
    stdin: str | bytes | None = None,
    cwd: Path | None = None,
    timeout: float = 120,
) -> Completed:
    data = stdin.encode() if isinstance(stdin, str) else stdin
    completed = subprocess.run(
        [sys.executable, "-m", "kmultiarch", *args],
        input=data,
        capture_output=True,
        env=dict(env),
        cwd=cwd,
        timeout=timeout,
        check=False,
    )
    result = Completed(
        completed.returncode,
        completed.stdout.decode("utf-8", "replace"),
        completed.stderr.decode("utf-8", "replace"),
    )
    assert "Traceback" not in result.stderr, result.stderr
    return result
