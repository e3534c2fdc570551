"""Running the real ``kmultiarch`` command and measuring it: wall time and peak memory.

Peak memory is the child's own ``ru_maxrss`` (``os.wait4``), so it is the kmultiarch process
alone, whatever else the machine runs. Several runs can go at once (``run_concurrently``),
which is how tests overlap the slow fault cases and start 16 processes on one cache.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path


@dataclass
class Measured:
    returncode: int
    stdout: bytes
    stderr: str
    elapsed: float
    #: Peak resident set size of the process, in bytes.
    max_rss: int

    @property
    def text(self) -> str:
        return self.stdout.decode("utf-8")

    @property
    def stderr_lines(self) -> list[str]:
        return self.stderr.splitlines()


@dataclass(frozen=True)
class Invocation:
    args: Sequence[str]
    env: Mapping[str, str]
    stdin: bytes | None = None
    cwd: Path | None = None


def run_measured(
    args: Sequence[str],
    *,
    env: Mapping[str, str],
    stdin: str | bytes | None = None,
    cwd: Path | None = None,
    timeout: float = 120,
) -> Measured:
    """Run ``python -m kmultiarch ARGS``; fail the test on a traceback or a hang."""
    data = stdin.encode() if isinstance(stdin, str) else stdin
    started = time.monotonic()
    process = subprocess.Popen(
        [sys.executable, "-m", "kmultiarch", *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=dict(env),
        cwd=cwd,
    )
    outputs: dict[str, bytes] = {}

    def feed() -> None:
        assert process.stdin is not None
        # The command may stop reading (it refused the input): that is its right.
        with contextlib.suppress(BrokenPipeError):
            if data:
                process.stdin.write(data)
        with contextlib.suppress(BrokenPipeError):
            process.stdin.close()

    def drain(name: str) -> None:
        stream = process.stdout if name == "stdout" else process.stderr
        assert stream is not None
        outputs[name] = stream.read()

    threads = [
        threading.Thread(target=feed, daemon=True),
        threading.Thread(target=drain, args=("stdout",), daemon=True),
        threading.Thread(target=drain, args=("stderr",), daemon=True),
    ]
    for thread in threads:
        thread.start()
    watchdog = threading.Timer(timeout, process.kill)
    watchdog.start()
    try:
        _, status, usage = os.wait4(process.pid, 0)
    finally:
        watchdog.cancel()
    elapsed = time.monotonic() - started
    process.returncode = os.waitstatus_to_exitcode(status)
    for thread in threads:
        thread.join(10)
    measured = Measured(
        process.returncode,
        outputs.get("stdout", b""),
        outputs.get("stderr", b"").decode("utf-8", "replace"),
        elapsed,
        usage.ru_maxrss * 1024,
    )
    assert elapsed < timeout, f"kmultiarch {' '.join(args)} was killed after {timeout} s"
    assert "Traceback" not in measured.stderr, measured.stderr
    return measured


def run_concurrently(invocations: Sequence[Invocation], timeout: float = 120) -> list[Measured]:
    """Start every invocation at once; their results in the same order."""
    with ThreadPoolExecutor(max_workers=len(invocations)) as pool:
        futures = [
            pool.submit(
                run_measured,
                invocation.args,
                env=invocation.env,
                stdin=invocation.stdin,
                cwd=invocation.cwd,
                timeout=timeout,
            )
            for invocation in invocations
        ]
        return [future.result() for future in futures]
