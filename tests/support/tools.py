"""The real tools the integration tests drive: Helm 3 and 4, kubectl (its embedded kustomize),
kpt; and a ``bin`` directory that puts this checkout's ``kmultiarch`` first on PATH.

A tool that is missing skips its tests on a developer's machine and fails them in CI
(``CI=true``): CI installs Helm (``scripts/install-tools``) and must prove every integration.
kpt is not installed by CI, so its tests are skipped wherever it is absent.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from .cli import clean_env

REPO = Path(__file__).resolve().parents[2]
TOOLS_BIN = REPO / ".tools" / "bin"
PLUGIN = REPO / "plugin"
EXAMPLES = REPO / "examples"


def in_ci() -> bool:
    return os.environ.get("CI", "").lower() in ("true", "1")


def missing(what: str, *, required_in_ci: bool = True) -> None:
    if required_in_ci and in_ci():
        pytest.fail(f"{what} (CI must prove this integration with the real tool)")
    pytest.skip(what)


def helm_binary(major: int) -> Path:
    """``$KMULTIARCH_HELM<major>``, else ``.tools/bin/helm<major>`` (``scripts/install-tools``)."""
    configured = os.environ.get(f"KMULTIARCH_HELM{major}")
    candidate = Path(configured) if configured else TOOLS_BIN / f"helm{major}"
    if not (candidate.is_file() and os.access(candidate, os.X_OK)):
        missing(f"Helm {major} not found at {candidate}: run scripts/install-tools")
    version = subprocess.run(
        [str(candidate), "version", "--short"], capture_output=True, text=True, check=False
    )
    assert version.stdout.startswith(f"v{major}."), (candidate, version.stdout, version.stderr)
    return candidate


def kubectl_binary() -> Path:
    found = shutil.which("kubectl")
    if found is None:
        missing("kubectl (with its embedded kustomize) is not installed")
    assert found is not None
    return Path(found)


def kpt_binary() -> Path:
    found = shutil.which("kpt")
    if found is None:
        missing("kpt is not installed", required_in_ci=False)
    assert found is not None
    return Path(found)


def kmultiarch_bin(directory: Path) -> Path:
    """``kmultiarch`` and ``kmultiarch-fn`` scripts that run this checkout with this Python,
    for tools that find kmultiarch on PATH (Helm, kustomize, kpt, Argo CD's shell)."""
    directory.mkdir(parents=True, exist_ok=True)
    for name, prefix in (("kmultiarch", ""), ("kmultiarch-fn", "fn ")):
        script = directory / name
        script.write_text(
            "#!/bin/sh\n"
            f'PYTHONPATH="{REPO}${{PYTHONPATH:+:$PYTHONPATH}}" '
            f'exec "{sys.executable}" -m kmultiarch {prefix}"$@"\n'
        )
        script.chmod(0o755)
    return directory


def tool_env(tmp_path: Path, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """A clean environment whose PATH starts with this checkout's kmultiarch."""
    env = clean_env(tmp_path)
    env["PATH"] = f"{kmultiarch_bin(tmp_path / 'kmultiarch-bin')}{os.pathsep}{env['PATH']}"
    env.update(extra or {})
    return env


@dataclass
class Ran:
    returncode: int
    stdout: str
    stderr: str


def succeeded(result: Ran) -> str:
    assert result.returncode == 0, result.stderr
    return result.stdout


def assert_expected(output: str, expected: Path) -> None:
    """``output`` is ``expected``'s text; ``KMULTIARCH_UPDATE_EXAMPLES=1`` rewrites the file
    instead (review the diff)."""
    if os.environ.get("KMULTIARCH_UPDATE_EXAMPLES") == "1":
        expected.write_text(output)
    assert output == expected.read_text()


def run_tool(
    args: Sequence[str | Path],
    *,
    env: Mapping[str, str],
    cwd: Path | None = None,
    stdin: str | None = None,
    timeout: float = 180,
) -> Ran:
    completed = subprocess.run(
        [str(arg) for arg in args],
        input=stdin,
        capture_output=True,
        text=True,
        env=dict(env),
        cwd=cwd,
        timeout=timeout,
        check=False,
    )
    assert "Traceback" not in completed.stderr, completed.stderr
    return Ran(completed.returncode, completed.stdout, completed.stderr)


def mirrored_policy(policy: Mapping[str, Any] | None, registry_url: str) -> dict[str, Any]:
    """``policy`` (default: an empty MultiArchPolicy) with ``registry.test`` mirrored to the
    test registry, so that manifests naming ``registry.test/<key>:1.0`` resolve."""
    document: dict[str, Any] = dict(
        policy
        or {
            "apiVersion": "kmultiarch.dev/v1alpha1",
            "kind": "MultiArchPolicy",
            "metadata": {"name": "test"},
        }
    )
    spec = dict(document.get("spec") or {})
    registries = dict(spec.get("registries") or {})
    registries["registry.test"] = {"mirror": registry_url}
    spec["registries"] = registries
    document["spec"] = spec
    return document


def write_mirrored_policy(path: Path, registry_url: str, source: Path | None = None) -> Path:
    """Write ``source`` (a policy file) or a default policy to ``path``, mirroring
    ``registry.test``; comments are not kept (the copy is for the test run only)."""
    policy = yaml.safe_load(source.read_text()) if source is not None else None
    path.write_text(yaml.safe_dump(mirrored_policy(policy, registry_url), sort_keys=False))
    return path


def load_all(text: str) -> list[Any]:
    return [document for document in yaml.safe_load_all(text) if document is not None]
