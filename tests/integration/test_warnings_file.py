"""``$KMULTIARCH_WARNINGS_FILE``: every command appends what it says on stderr (warnings,
errors, the summary, usage errors) to the file, for tools that hide a plugin's stderr."""

from __future__ import annotations

import os
from pathlib import Path

from support import SeededRegistry
from support.cli import clean_env, run_kmultiarch
from support.tools import write_mirrored_policy

POD = """\
apiVersion: v1
kind: Pod
metadata:
  name: app
spec:
  containers:
  - name: app
    image: registry.test/{image}:1.0
"""


def test_mutate_appends_warnings_and_summary(registry: SeededRegistry, tmp_path: Path) -> None:
    warnings_file = tmp_path / "warnings.log"
    warnings_file.write_text("from an earlier run\n")
    env = clean_env(tmp_path, {"KMULTIARCH_WARNINGS_FILE": str(warnings_file)})
    policy = write_mirrored_policy(tmp_path / "policy.yaml", registry.url)
    result = run_kmultiarch(
        ["mutate", "--config", str(policy)], env=env, stdin=POD.format(image="no-such-image")
    )
    assert result.returncode == 0, result.stderr
    lines = warnings_file.read_text().splitlines()
    assert lines[0] == "from an earlier run"  # appended, never truncated
    assert lines[1:] == result.stderr.splitlines()
    assert lines[1].startswith("kmultiarch: warning: <stdin>:8: Pod app: image ")  # its image: line
    assert lines[-1] == (
        "kmultiarch: 1 pod spec, 1 unresolved; 1 image: 0 from cache or lock, 1 looked up, 1 failed"
    )


def test_errors_of_any_command_are_appended(registry: SeededRegistry, tmp_path: Path) -> None:
    warnings_file = tmp_path / "warnings.log"
    env = clean_env(tmp_path, {"KMULTIARCH_WARNINGS_FILE": str(warnings_file)})
    inspect = run_kmultiarch(["inspect", "registry.test/Not A Reference"], env=env)
    assert inspect.returncode == 2
    usage = run_kmultiarch(["mutate", "--no-such-option"], env=env)
    assert usage.returncode == 2
    lines = warnings_file.read_text().splitlines()
    assert len(lines) == 2, lines
    assert lines[0].startswith("kmultiarch: error: ") and "Not A Reference" in lines[0]
    assert lines[1].startswith("kmultiarch: error: No such option")
    assert "--no-such-option" in lines[1]


def test_an_unwritable_warnings_file_is_said_once_and_does_not_fail_the_run(
    registry: SeededRegistry, tmp_path: Path
) -> None:
    target = tmp_path / "missing-directory" / "warnings.log"
    env = clean_env(tmp_path, {"KMULTIARCH_WARNINGS_FILE": str(target)})
    policy = write_mirrored_policy(tmp_path / "policy.yaml", registry.url)
    result = run_kmultiarch(
        ["mutate", "--config", str(policy)], env=env, stdin=POD.format(image="no-such-image")
    )
    assert result.returncode == 0
    assert "image: registry.test/no-such-image:1.0" in result.stdout
    complaints = [line for line in result.stderr.splitlines() if "KMULTIARCH_WARNINGS_FILE" in line]
    assert len(complaints) == 1
    assert str(target) in complaints[0]
    assert not target.exists()


def test_a_fifo_no_one_reads_does_not_hold_the_run(tmp_path: Path) -> None:
    """A FIFO without a reader blocked the first append for ever; now it is said once, and the
    run ends as without the file."""
    fifo = tmp_path / "warnings.fifo"
    os.mkfifo(fifo)
    env = clean_env(tmp_path, {"KMULTIARCH_WARNINGS_FILE": str(fifo)})
    result = run_kmultiarch(["inspect", "registry.test/Not A Reference"], env=env, timeout=20)
    assert result.returncode == 2
    complaints = [line for line in result.stderr.splitlines() if "KMULTIARCH_WARNINGS_FILE" in line]
    assert len(complaints) == 1, result.stderr
    assert str(fifo) in complaints[0]


def test_a_fifo_with_a_reader_gets_every_line(tmp_path: Path) -> None:
    fifo = tmp_path / "warnings.fifo"
    os.mkfifo(fifo)
    received: list[str] = []
    # Opened for reading (and kept open by a writer end of our own) before the run starts.
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    keeper = os.open(fifo, os.O_WRONLY)
    try:
        env = clean_env(tmp_path, {"KMULTIARCH_WARNINGS_FILE": str(fifo)})
        result = run_kmultiarch(["inspect", "registry.test/Not A Reference"], env=env, timeout=20)
        received = os.read(reader, 65536).decode().splitlines()
    finally:
        os.close(keeper)
        os.close(reader)
    assert result.returncode == 2
    assert received == result.stderr.splitlines()
    assert "Not A Reference" in received[0]
