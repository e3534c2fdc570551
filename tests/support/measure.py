"""Running the real ``kmultiarch`` command and measuring it: wall time and peak memory.

Peak memory is the kmultiarch process's own ``ru_maxrss`` (``os.wait4``), whatever else the
machine runs. A child's ``ru_maxrss`` includes the memory of the process it was forked from (the
old address space's high-water mark is kept across ``exec``), and the test process may be large:
so a small launcher starts kmultiarch and reports its rusage. Several runs can go at once
(``run_concurrently``).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

#: Runs ``python -m kmultiarch ARGS`` as its child, writes the child's ru_maxrss (KiB) to the
#: file descriptor given first, and exits as the child did.
_LAUNCHER = """
import os, signal, sys
fd, args = int(sys.argv[1]), sys.argv[2:]
pid = os.fork()
if pid == 0:
    os.close(fd)
    os.execv(sys.executable, [sys.executable, "-m", "kmultiarch", *args])
_, status, usage = os.wait4(pid, 0)
os.write(fd, str(usage.ru_maxrss).encode())
os.close(fd)
if os.WIFSIGNALED(status):
    signal.signal(os.WTERMSIG(status), signal.SIG_DFL)
    os.kill(os.getpid(), os.WTERMSIG(status))
sys.exit(os.waitstatus_to_exitcode(status))
"""


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
    read_usage, write_usage = os.pipe()
    started = time.monotonic()
    process = subprocess.Popen(
        [sys.executable, "-c", _LAUNCHER, str(write_usage), *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=dict(env),
        cwd=cwd,
        pass_fds=(write_usage,),
        start_new_session=True,
    )
    os.close(write_usage)
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
    watchdog = threading.Timer(timeout, os.killpg, (process.pid, signal.SIGKILL))
    watchdog.start()
    try:
        process.wait()
    finally:
        watchdog.cancel()
    elapsed = time.monotonic() - started
    with os.fdopen(read_usage, "rb") as usage:
        max_rss_kb = int(usage.read() or 0)
    for thread in threads:
        thread.join(10)
    measured = Measured(
        process.returncode,
        outputs.get("stdout", b""),
        outputs.get("stderr", b"").decode("utf-8", "replace"),
        elapsed,
        max_rss_kb * 1024,
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
