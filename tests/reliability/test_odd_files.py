"""Odd files where a manifest, a policy or a lock is expected (issue 13): devices, FIFOs,
sockets. Each is refused at once, by name, before anything is read; pipes that a command line
makes (``<(...)``) still work."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from support import SeededRegistry
from support.cli import clean_env, run_kmultiarch
from support.manifests import deployment, image, write_policy


@pytest.mark.parametrize("device", ["/dev/zero", "/dev/urandom"])
def test_a_device_named_as_a_manifest_is_refused_at_once(tmp_path: Path, device: str) -> None:
    """/dev/zero as a manifest was read up to the 256 MB input cap (memory and seconds) before
    the run failed with 'larger than'."""
    started = time.monotonic()
    result = run_kmultiarch(["mutate", device], env=clean_env(tmp_path), timeout=60)
    elapsed = time.monotonic() - started
    assert result.returncode == 2, result.stderr
    assert f"{device}: not a regular file (a device)" in result.stderr
    assert elapsed < 5, elapsed


def test_a_socket_named_as_a_manifest_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    with socket.socket(socket.AF_UNIX) as server:
        server.bind(str(path))
        result = run_kmultiarch(["check", str(path)], env=clean_env(tmp_path), timeout=60)
    assert result.returncode == 2, result.stderr
    assert "no such device or address" in result.stderr.lower() or "a socket" in result.stderr


def test_a_fifo_named_by_the_policy_lock_is_refused_not_waited_on(
    registry: SeededRegistry, tmp_path: Path
) -> None:
    """A policy's lock: (the repository's choice) naming a FIFO that a writer holds open: the
    run waited for the writer forever."""
    fifo = tmp_path / "kmultiarch.lock"
    os.mkfifo(fifo)
    writer = os.open(fifo, os.O_RDWR)  # a writer that never writes nor closes
    try:
        stream = tmp_path / "app.yaml"
        stream.write_text(deployment("app", [image(registry, "multiarch-oci")]))
        policy = write_policy(tmp_path / "policy.yaml", registry, {"lock": str(fifo)})
        started = time.monotonic()
        result = run_kmultiarch(
            ["mutate", "--config", str(policy), str(stream)], env=clean_env(tmp_path), timeout=30
        )
        assert time.monotonic() - started < 10
    finally:
        os.close(writer)
    assert result.returncode == 2, result.stderr
    assert str(fifo) in result.stderr and "not a regular file" in result.stderr


def test_process_substitution_still_works_for_the_command_line(
    registry: SeededRegistry, tmp_path: Path
) -> None:
    """--config <(...), --lock <(...) and a manifest <(...) are pipes the user chose."""
    manifest = tmp_path / "app.yaml"
    manifest.write_text(deployment("app", [image(registry, "multiarch-oci")]))
    policy = write_policy(tmp_path / "policy.yaml", registry)
    env = clean_env(tmp_path)
    lock = tmp_path / "kmultiarch.lock"
    made = run_kmultiarch(
        ["lock", "--config", str(policy), "-o", str(lock), str(manifest)], env=env
    )
    assert made.returncode == 0, made.stderr
    script = (
        '"$0" -m kmultiarch mutate --offline --config <(cat "$1") --lock <(cat "$2") <(cat "$3")'
    )
    completed = subprocess.run(
        ["bash", "-c", script, sys.executable, str(policy), str(lock), str(manifest)],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr
    assert "tolerations" in completed.stdout
