"""Files (issue 7, item 3): ``mutate --in-place`` and ``fix`` rewrite files atomically.

A rewrite is a temporary file in the same directory, given the old file's mode, then renamed
over it: the file gets a new inode, keeps its mode, and a symlink keeps pointing where it
pointed (the target is rewritten). The kill test SIGKILLs real ``kmultiarch`` processes at
random points of a 20 MB rewrite, half of them after the temporary file appeared (while it is
being written), and checks each time that the file is the old one or the new one, whole.

No registry is contacted: policy ``overrides`` declare the image's platforms.
"""

from __future__ import annotations

import os
import random
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest
from support.cli import clean_env
from support.measure import run_measured

POLICY = """\
apiVersion: kmultiarch.dev/v1alpha1
kind: MultiArchPolicy
metadata: {name: offline}
spec:
  overrides:
  - {image: "registry.test/*", platforms: [linux/amd64, linux/arm64]}
"""

DEPLOYMENT = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web-{index}
spec:
  template:
    spec:
      containers:
      - name: main
        image: registry.test/app:1.0
"""
TEMPORARY_SUFFIX = ".kmultiarch.tmp"


@pytest.fixture
def policy(tmp_path: Path) -> Path:
    path = tmp_path / "policy.yaml"
    path.write_text(POLICY)
    return path


def _kmultiarch(tmp_path: Path, policy: Path, *args: str) -> tuple[int, str]:
    run = run_measured([*args, "--config", str(policy), "--no-cache"], env=clean_env(tmp_path))
    return run.returncode, run.stderr


def _rewrite(command: str, tmp_path: Path, policy: Path, *paths: Path) -> None:
    args = ["mutate", "--in-place"] if command == "mutate" else ["fix"]
    code, stderr = _kmultiarch(tmp_path, policy, *args, *map(str, paths))
    assert code == (0 if command == "mutate" else 1), stderr


def _temporaries(directory: Path) -> list[str]:
    return [name for name in os.listdir(directory) if name.endswith(TEMPORARY_SUFFIX)]


COMMANDS = ["mutate", "fix"]


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize("mode", [0o600, 0o640, 0o755])
def test_a_rewrite_keeps_the_mode_and_replaces_the_file_by_rename(
    command: str, mode: int, tmp_path: Path, policy: Path
) -> None:
    manifests = tmp_path / "manifests"
    manifests.mkdir()
    path = manifests / "app.yaml"
    path.write_text(DEPLOYMENT.format(index=0))
    path.chmod(mode)
    before = path.stat()
    _rewrite(command, tmp_path, policy, path)
    after = path.stat()
    assert "tolerations:" in path.read_text()
    assert stat.S_IMODE(after.st_mode) == mode
    assert after.st_ino != before.st_ino, "a new file renamed over the old one"
    assert _temporaries(manifests) == []


@pytest.mark.parametrize("command", COMMANDS)
def test_symlinks_stay_symlinks_and_their_target_is_rewritten(
    command: str, tmp_path: Path, policy: Path
) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    target = shared / "app.yaml"
    target.write_text(DEPLOYMENT.format(index=0))
    target.chmod(0o640)
    overlay = tmp_path / "overlay"
    overlay.mkdir()
    link = overlay / "app.yaml"
    link.symlink_to(Path("..") / "shared" / "app.yaml")  # relative, as in a Git checkout
    chained = overlay / "again.yaml"
    chained.symlink_to("app.yaml")  # a link to the link

    _rewrite(command, tmp_path, policy, chained)

    assert chained.is_symlink() and os.readlink(chained) == "app.yaml"
    assert link.is_symlink() and os.readlink(link) == str(Path("..") / "shared" / "app.yaml")
    assert "tolerations:" in target.read_text()
    assert stat.S_IMODE(target.stat().st_mode) == 0o640
    assert _temporaries(shared) == [] and _temporaries(overlay) == []


def test_files_that_need_no_change_are_not_touched(tmp_path: Path, policy: Path) -> None:
    path = tmp_path / "app.yaml"
    path.write_text(DEPLOYMENT.format(index=0))
    _rewrite("mutate", tmp_path, policy, path)
    first = path.stat()
    code, stderr = _kmultiarch(tmp_path, policy, "fix", str(path))
    assert code == 0, stderr  # nothing to fix
    assert path.stat().st_ino == first.st_ino
    assert path.stat().st_mtime_ns == first.st_mtime_ns


# -- SIGKILL during the rewrite of a large file ------------------------------------------------

KILLS = 12


def _large_stream() -> str:
    """20 pod templates and 20 ConfigMaps of 1 MB each: 20 MB, read in well under a second."""
    blob = "    " + "x" * 99 + "\n"
    config_map = (
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: blob-{index}\ndata:\n"
        "  blob: |\n" + blob * 10_000
    )
    parts = []
    for index in range(20):
        parts += [DEPLOYMENT.format(index=index), config_map.format(index=index)]
    return "---\n".join(parts)


def test_a_process_killed_while_rewriting_leaves_the_old_or_the_new_file(
    tmp_path: Path, policy: Path
) -> None:
    directory = tmp_path / "big"
    directory.mkdir()
    path = directory / "rendered.yaml"
    old = _large_stream().encode()
    path.write_bytes(old)
    env = clean_env(tmp_path)
    command = [
        sys.executable,
        "-m",
        "kmultiarch",
        "mutate",
        "--in-place",
        "--config",
        str(policy),
        "--no-cache",
        "-q",
        str(path),
    ]
    # A first, whole run: how long a run takes, and how long its temporary file exists (the
    # write and fsync of 20 MB).
    started = time.monotonic()
    process = subprocess.Popen(command, env=env)
    appeared = vanished = None
    while process.poll() is None:
        now, present = time.monotonic(), bool(_temporaries(directory))
        if present and appeared is None:
            appeared = now
        if not present and appeared is not None and vanished is None:
            vanished = now
        time.sleep(0.0005)
    assert process.returncode == 0
    duration = time.monotonic() - started
    assert appeared is not None, "the temporary file was never seen"
    write_window = (vanished or time.monotonic()) - appeared
    new = path.read_bytes()
    assert new != old and len(new) > len(old)

    chance = random.Random(7)
    outcomes = {"old": 0, "new": 0}
    mid_write = 0
    for kill in range(KILLS):
        path.write_bytes(old)
        process = subprocess.Popen(command, env=env, stderr=subprocess.DEVNULL)
        if kill % 2 == 0:
            # Anywhere in the run, start-up included.
            time.sleep(chance.uniform(0, duration * 1.1))
        else:
            # While the rewrite is under way: from the temporary file's appearance on.
            deadline = time.monotonic() + 60
            while not _temporaries(directory) and process.poll() is None:
                assert time.monotonic() < deadline, "no temporary file appeared"
                time.sleep(0.0005)
            if kill == KILLS - 1:
                # Just after the rename, while the process syncs the directory and reports.
                while _temporaries(directory) and process.poll() is None:
                    time.sleep(0.0005)
            else:
                # Spread over the write of the temporary file.
                time.sleep(write_window * (kill // 2) / (KILLS // 2 - 1))
        process.send_signal(signal.SIGKILL)
        process.wait()
        leftovers = _temporaries(directory)
        if leftovers:
            mid_write += 1
        content = path.read_bytes()
        assert content in (old, new), f"kill {kill}: a mix of {len(content)} bytes"
        outcomes["old" if content == old else "new"] += 1
        for name in leftovers:  # what a kill mid-write leaves: a hidden temporary file
            (directory / name).unlink()
    print(
        f"{KILLS} kills: {outcomes}, {mid_write} while the temporary file was written "
        f"(write window {write_window * 1000:.0f} ms)"
    )
    # The kills landed on both sides of the rename, some of them while the file was written.
    assert outcomes["old"] > 0 and outcomes["new"] > 0, outcomes
    assert mid_write > 0, outcomes
