"""scripts/build-images' own logic, without building anything: the platforms it accepts, the
executables it lets into the sidecar, the options it refuses, the digest that names an image's
sources. (The builds themselves are exercised by CI and tests/integration/test_images.py.)"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import os
import struct
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "build-images"


def _load() -> ModuleType:
    loader = importlib.machinery.SourceFileLoader("build_images", str(SCRIPT))
    spec = importlib.util.spec_from_loader("build_images", loader)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


build_images = _load()


def _elf(path: Path, machine: int) -> Path:
    """The first bytes of a 64-bit little-endian ELF executable for ``machine``."""
    header = b"\x7fELF" + bytes([2, 1, 1, 0]) + b"\0" * 8 + struct.pack("<HH", 2, machine)
    path.write_bytes(header + b"\0" * 44)
    path.chmod(0o755)
    return path


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        (["linux/amd64"], ["linux/amd64"]),
        (["linux/amd64,linux/arm64"], ["linux/amd64", "linux/arm64"]),
        (["linux/arm64", "linux/amd64,linux/arm64"], ["linux/arm64", "linux/amd64"]),
        ([" linux/arm64 "], ["linux/arm64"]),
    ],
)
def test_platforms_are_read_from_repeated_and_comma_separated_options(
    values: list[str], expected: list[str]
) -> None:
    assert build_images.requested_platforms(values) == expected


def test_the_default_platform_is_this_machines() -> None:
    machine = build_images.PLATFORM_MACHINES[build_images.requested_platforms(None)[0]]
    assert machine == os.uname().machine


@pytest.mark.parametrize("value", ["linux/s390x", "arm64", "linux/arm/v7", ""])
def test_other_platforms_are_refused_with_the_ones_it_builds(value: str) -> None:
    with pytest.raises(build_images.BuildError, match="expected one of linux/amd64, linux/arm64"):
        build_images.requested_platforms([value])


def test_an_executable_for_the_machine_is_accepted(tmp_path: Path) -> None:
    helm = _elf(tmp_path / "helm", 0x3E)
    assert build_images.check_executable(helm, "x86_64", "--helm") == helm.resolve()
    kustomize = _elf(tmp_path / "kustomize", 0xB7)
    assert build_images.check_executable(kustomize, "aarch64", "--kustomize") == kustomize


def test_an_executable_for_another_machine_is_refused(tmp_path: Path) -> None:
    helm = _elf(tmp_path / "helm", 0xB7)
    with pytest.raises(build_images.BuildError, match=r"--helm .*helm is not built for x86_64"):
        build_images.check_executable(helm, "x86_64", "--helm")


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        (b"#!/bin/sh\nexec helm\n", "is not a Linux executable"),
        (b"\xcf\xfa\xed\xfe" * 8, "is not a Linux executable"),
    ],
)
def test_scripts_and_other_formats_are_refused(tmp_path: Path, content: bytes, reason: str) -> None:
    """A wrapper script would run the host's helm, which the image does not have; a macOS
    helm (Mach-O) does not run in a Linux container."""
    helm = tmp_path / "helm"
    helm.write_bytes(content)
    with pytest.raises(build_images.BuildError, match=reason):
        build_images.check_executable(helm, "x86_64", "--helm")


def test_a_missing_executable_is_named(tmp_path: Path) -> None:
    with pytest.raises(build_images.BuildError, match="is not a file"):
        build_images.check_executable(tmp_path / "helm", "x86_64", "--helm")


def test_without_kustomize_kubectl_and_a_wrapper_stand_in(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    helm = _elf(tmp_path / "helm", 0x3E)
    kubectl = _elf(tmp_path / "kubectl", 0x3E)
    tools = tmp_path / "tools"
    build_images.stage_tools(tools, str(helm), None, str(kubectl), "x86_64")
    assert sorted(path.name for path in tools.iterdir()) == ["helm", "kubectl", "kustomize"]
    wrapper = (tools / "kustomize").read_text()
    assert 'build) shift; exec kubectl kustomize "$@"' in wrapper
    # The wrapper, run: `kustomize build DIR` runs `kubectl kustomize DIR`.
    (tools / "kubectl").write_text('#!/bin/sh\necho "kubectl $*"\n')
    ran = subprocess.run(
        [str(tools / "kustomize"), "build", "overlays/prod", "--enable-helm"],
        capture_output=True,
        text=True,
        env={"PATH": f"{tools}:/usr/bin:/bin"},
        check=True,
    )
    assert ran.stdout == "kubectl kustomize overlays/prod --enable-helm\n"


def test_a_given_kustomize_is_taken_as_it_is(tmp_path: Path) -> None:
    helm = _elf(tmp_path / "helm", 0x3E)
    kustomize = _elf(tmp_path / "kustomize", 0x3E)
    tools = tmp_path / "tools"
    build_images.stage_tools(tools, str(helm), str(kustomize), None, "x86_64")
    assert sorted(path.name for path in tools.iterdir()) == ["helm", "kustomize"]
    assert (tools / "kustomize").read_bytes() == kustomize.read_bytes()


def test_no_helm_anywhere_says_what_to_give(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    monkeypatch.setattr(build_images, "TOOLS_BIN", tmp_path / "no-tools")
    with pytest.raises(build_images.BuildError, match="the sidecar needs helm: give --helm PATH"):
        build_images.stage_tools(tmp_path / "tools", None, None, None, "x86_64")


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["--base", "x", "--debian-base"], "--base and --debian-base name two bases"),
        (["--platform", "linux/ppc64le"], "--platform 'linux/ppc64le': expected one of"),
    ],
)
def test_option_mistakes_are_one_line_and_exit_1(arguments: list[str], message: str) -> None:
    ran = subprocess.run(
        [sys.executable, str(SCRIPT), "--engine", "podman", *arguments],
        capture_output=True,
        text=True,
        check=False,
    )
    assert ran.returncode == 1
    assert ran.stdout == ""
    assert ran.stderr.startswith(f"build-images: {message}")
    assert len(ran.stderr.splitlines()) == 1
    assert "Traceback" not in ran.stderr


def test_the_source_digest_follows_the_sources_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in build_images.SOURCE_FILES:
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if name == "kmultiarch":
            path.mkdir()
            (path / "core.py").write_text("x = 1\n")
        else:
            path.write_text(name)
    monkeypatch.setattr(build_images, "REPO", tmp_path)
    first = build_images.source_digest()
    (tmp_path / "docs.md").write_text("not in the image")
    (tmp_path / "kmultiarch" / "__pycache__").mkdir()
    (tmp_path / "kmultiarch" / "__pycache__" / "core.pyc").write_bytes(b"\0")
    assert build_images.source_digest() == first
    (tmp_path / "kmultiarch" / "core.py").write_text("x = 2\n")
    assert build_images.source_digest() != first
