"""A shared cache is an accelerator, never a dependency (issue 15): a Redis that is down, slow,
full, restarted, refusing the password or answering garbage costs one warning and a bounded
time, and the run gives the right answers from the local cache and the registry. Against a
real redis-server and the real registry; the faults a real server cannot produce (a byte every
0.3 s, an endless array, replies of the wrong type) come from a proxy in front of it
(support/resp_proxy.py). Issue 21's shared-cache symptoms are named in each test."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from support import SeededRegistry
from support.cli import clean_env, run_kmultiarch
from support.latency_proxy import LatencyProxy
from support.measure import run_measured
from support.redis_server import RedisServer
from support.resp_proxy import RespFaultProxy

from kmultiarch.core.images.platform import Platform
from kmultiarch.resolve.cache import open_cache

KEYS = ["multiarch-oci", "single-docker-amd64", "nested-index"]
DIGEST = "sha256:" + "a" * 64


def _inspect(
    registry: SeededRegistry,
    tmp_path: Path,
    cache: str,
    url: str,
    *,
    host: str | None = None,
    timeout: float = 120,
) -> tuple[Any, float]:
    env = clean_env(
        tmp_path, {"KMULTIARCH_CACHE_DIR": str(tmp_path / cache), "KMULTIARCH_CACHE_URL": url}
    )
    references = [registry.reference(key) for key in KEYS]
    if host is not None:
        references = [host + reference[reference.index("/") :] for reference in references]
    started = time.monotonic()
    result = run_kmultiarch(["inspect", "-o", "json", *references], env=env, timeout=timeout)
    return result, time.monotonic() - started


def _shared_warnings(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if "shared cache" in line]


def _platforms(result: Any) -> list[list[str]]:
    return [entry["platforms"] for entry in result.json()]


def _expected(registry: SeededRegistry, tmp_path: Path) -> list[list[str]]:
    """The answers without any shared level, to compare each faulty run with."""
    env = clean_env(tmp_path, {"KMULTIARCH_CACHE_DIR": str(tmp_path / "reference-run")})
    result = run_kmultiarch(
        ["inspect", "-o", "json", *(registry.reference(key) for key in KEYS)], env=env
    )
    assert result.returncode == 0, result.stderr
    return _platforms(result)


def test_wrong_password_is_one_warning_and_the_password_is_never_shown(
    registry: SeededRegistry, tmp_path: Path
) -> None:
    expected = _expected(registry, tmp_path)
    with RedisServer(tmp_path / "redis", password="right-pw") as redis:
        wrong = redis.url.replace(":right-pw@", ":wrong-pw@")
        result, elapsed = _inspect(registry, tmp_path, "runner", wrong)
    assert result.returncode == 0, result.stderr
    assert _platforms(result) == expected
    assert len(_shared_warnings(result.stderr)) == 1, result.stderr
    assert "wrong-pw" not in result.stderr + result.stdout
    assert "right-pw" not in result.stderr + result.stdout
    assert elapsed < 10


def test_an_acl_user_with_the_documented_rights(registry: SeededRegistry, tmp_path: Path) -> None:
    """redis://user:password@ with an ACL user who may use only kmultiarch:* keys and the
    commands docs/cache.md lists: everything works (no warning) and a second runner is
    answered from Redis; a wrong password for that user is one warning."""
    with RedisServer(tmp_path / "redis", password="acl-pw", user="kmultiarch") as redis:
        assert redis.url.startswith("redis://kmultiarch:acl-pw@")
        first, _ = _inspect(registry, tmp_path, "a", redis.url)
        assert first.returncode == 0, first.stderr
        assert _shared_warnings(first.stderr) == [], first.stderr
        log = registry.mark()
        second, _ = _inspect(registry, tmp_path, "b", redis.url)
        assert second.returncode == 0 and _shared_warnings(second.stderr) == [], second.stderr
        assert log.requests() == []
        wrong, _ = _inspect(registry, tmp_path, "c", redis.url.replace("acl-pw", "nope"))
        assert wrong.returncode == 0 and len(_shared_warnings(wrong.stderr)) == 1, wrong.stderr
        assert "nope" not in wrong.stderr and _platforms(wrong) == _platforms(first)
        cleared = run_kmultiarch(
            ["cache", "clear", "--cache-url", redis.url], env=clean_env(tmp_path / "d")
        )
        assert cleared.returncode == 0, cleared.stderr
        assert redis.cli("--scan", "--pattern", "kmultiarch:*").split() == []


def test_a_redis_that_is_down_is_one_warning(registry: SeededRegistry, tmp_path: Path) -> None:
    expected = _expected(registry, tmp_path)
    with RedisServer(tmp_path / "redis") as redis:
        port = redis.port
    result, elapsed = _inspect(registry, tmp_path, "runner", f"redis://127.0.0.1:{port}/0")
    assert result.returncode == 0, result.stderr
    assert _platforms(result) == expected
    assert len(_shared_warnings(result.stderr)) == 1, result.stderr
    assert elapsed < 10


def test_garbage_and_pickles_in_redis_are_one_warning_and_never_run(
    registry: SeededRegistry, tmp_path: Path
) -> None:
    with RedisServer(tmp_path / "redis") as redis:
        first, _ = _inspect(registry, tmp_path, "runner-a", redis.url)
        assert first.returncode == 0, first.stderr
        keys = redis.cli("--scan", "--pattern", "kmultiarch:v1:*").split()
        assert len(keys) > len(KEYS), "the first runner wrote its answers"
        planted = tmp_path / "pwned"
        pickle = b"cos\nsystem\n(S'touch " + str(planted).encode() + b"'\ntR."
        garbage = [pickle.decode("latin-1"), "not JSON {", "[1, 2]", '{"digest": 7}', "\xff\xfe"]
        for position, key in enumerate(keys):
            redis.cli("SET", key, garbage[position % len(garbage)])
        log = registry.mark()
        second, _ = _inspect(registry, tmp_path, "runner-b", redis.url)
        assert second.returncode == 0, second.stderr
        assert _platforms(second) == _platforms(first)
        assert len(_shared_warnings(second.stderr)) == 1, second.stderr
        assert not planted.exists()
        assert log.count("GET") > 0, "the garbage was a miss: asked the registry"
        # The answers fetched instead replaced the garbage: a third runner reads them.
        log = registry.mark()
        third, _ = _inspect(registry, tmp_path, "runner-c", redis.url)
        assert third.returncode == 0 and _shared_warnings(third.stderr) == [], third.stderr
        assert log.requests() == []


def test_a_full_redis_is_one_warning(registry: SeededRegistry, tmp_path: Path) -> None:
    with RedisServer(tmp_path / "redis") as redis:
        redis.cli("CONFIG", "SET", "maxmemory", "1mb")
        redis.cli("CONFIG", "SET", "maxmemory-policy", "noeviction")
        redis.cli("DEBUG", "POPULATE", "3000", "filler", "1000")  # past maxmemory
        full, elapsed = _inspect(registry, tmp_path, "runner", redis.url)
    assert full.returncode == 0, full.stderr
    assert _platforms(full) == _expected(registry, tmp_path)
    assert len(_shared_warnings(full.stderr)) == 1, full.stderr
    assert "OOM" in full.stderr or "maxmemory" in full.stderr, full.stderr
    assert elapsed < 10


def test_a_slow_redis_costs_one_timeout(registry: SeededRegistry, tmp_path: Path) -> None:
    """DEBUG SLEEP 5 holds the server: the run waits one command timeout (0.5 s), not 5 s,
    nor a timeout per image."""
    with RedisServer(tmp_path / "redis") as redis:
        warm, quick = _inspect(registry, tmp_path, "warm", redis.url)  # the registry is warm too
        assert warm.returncode == 0, warm.stderr
        sleeper = threading.Thread(target=redis.cli, args=("DEBUG", "SLEEP", "5"))
        sleeper.start()
        time.sleep(0.2)  # the server is asleep
        slow, elapsed = _inspect(registry, tmp_path, "runner", redis.url)
        sleeper.join()
    assert slow.returncode == 0, slow.stderr
    assert _platforms(slow) == _platforms(warm)
    assert len(_shared_warnings(slow.stderr)) == 1, slow.stderr
    assert elapsed < quick + 2.5, f"{elapsed:.1f} s against {quick:.1f} s: the sleep held the run"


def test_a_restart_between_commands_is_transparent_and_down_is_one_warning(
    tmp_path: Path,
) -> None:
    """A pooled connection the server closed is retried once at once: a restart between two
    commands costs nothing. A server still down is one warning, then the level is off for the
    run (no more attempts, no more time)."""
    amd64 = frozenset({Platform("linux", "amd64")})
    with RedisServer(tmp_path / "redis") as redis:
        cache = open_cache(tmp_path / "disk", shared_url=redis.url)
        cache.put_platforms(DIGEST, "application/vnd.oci.image.index.v1+json", amd64)
        redis.restart()  # empty again: nothing is saved
        cache.put_tag("127.0.0.1:5000/app:1.0", DIGEST)
        assert cache.warnings == []
        assert redis.cli("--scan", "--pattern", "kmultiarch:v1:tag:*").split() == [
            "kmultiarch:v1:tag:127.0.0.1:5000/app:1.0"
        ]
        redis.stop()
        started = time.monotonic()
        for index in range(20):
            cache.put_platforms(f"sha256:{index:064d}", "application/json", amd64)
            assert cache.get_platforms(f"sha256:{index + 100:064d}") is None
        assert time.monotonic() - started < 1.5
        assert len(cache.warnings) == 1 and "shared cache" in cache.warnings[0], cache.warnings
        assert cache.get_platforms(DIGEST) is not None  # the local level still answers
        cache.close()


def test_a_restart_in_the_middle_of_a_run(registry: SeededRegistry, tmp_path: Path) -> None:
    """Redis restarted while the run waits for the registry (50 ms away): the right answers,
    at most one warning, no time lost waiting for Redis."""
    expected = _expected(registry, tmp_path)
    host, port = registry.host.split(":")
    slow = LatencyProxy(host, int(port), 0.1).start()
    with RedisServer(tmp_path / "redis") as redis:
        log = registry.mark()
        restarted = threading.Event()

        def restart_once_the_lookups_start() -> None:
            deadline = time.monotonic() + 30
            while not log.requests() and time.monotonic() < deadline:
                time.sleep(0.02)
            redis.restart()
            restarted.set()

        restarter = threading.Thread(target=restart_once_the_lookups_start)
        restarter.start()
        result, elapsed = _inspect(registry, tmp_path, "runner", redis.url, host=slow.host)
        restarter.join()
    slow.stop()
    assert restarted.is_set()
    assert result.returncode == 0, result.stderr
    assert _platforms(result) == expected
    assert len(_shared_warnings(result.stderr)) <= 1, result.stderr
    assert elapsed < 15


def test_a_server_sending_a_byte_every_0_3_s_is_cut_at_the_operation_deadline(
    registry: SeededRegistry, tmp_path: Path
) -> None:
    """Issue 21, symptom 1: the 0.5 s timeout was per read, so a server that sends one byte
    every 0.3 s renewed it with each byte and held the run for minutes (this test's 30 s
    limit). Each operation now has one deadline: the first MGET is cut at 0.5 s, one warning,
    and the run goes on with the registry."""
    expected = _expected(registry, tmp_path)
    plain, quick = _inspect(registry, tmp_path, "plain", "")
    assert plain.returncode == 0, plain.stderr
    with RedisServer(tmp_path / "redis") as redis:
        warm, _ = _inspect(registry, tmp_path, "warm", redis.url)  # Redis holds every answer
        assert warm.returncode == 0, warm.stderr
        with RespFaultProxy(redis.port, "drip") as drip:
            slow, elapsed = _inspect(registry, tmp_path, "runner", drip.url, timeout=30)
    assert slow.returncode == 0, slow.stderr
    assert _platforms(slow) == expected
    warnings = _shared_warnings(slow.stderr)
    assert len(warnings) == 1 and "DeadlineExceeded" in warnings[0], slow.stderr
    assert elapsed < quick + 1.5, f"{elapsed:.1f} s against {quick:.1f} s without Redis"


def test_an_endless_mget_array_stops_at_the_cap_in_bounded_memory(
    registry: SeededRegistry, tmp_path: Path
) -> None:
    """Issue 21, symptom 2: an MGET answered ``*1000000000`` followed by nils for as long as
    the client reads grew the run without bound (413 MB after 15 s; killed here at 20 s). The
    reply must have as many elements as keys asked, within a cap: refused at its header."""
    references = [registry.reference(key) for key in KEYS]
    plain = run_measured(
        ["inspect", "-o", "json", *references],
        env=clean_env(tmp_path, {"KMULTIARCH_CACHE_DIR": str(tmp_path / "plain")}),
    )
    with (
        RedisServer(tmp_path / "redis") as redis,
        RespFaultProxy(redis.port, "endless-array") as endless,
    ):
        env = clean_env(
            tmp_path,
            {"KMULTIARCH_CACHE_DIR": str(tmp_path / "runner"), "KMULTIARCH_CACHE_URL": endless.url},
        )
        result = run_measured(["inspect", "-o", "json", *references], env=env, timeout=20)
    assert result.returncode == 0, result.stderr
    assert _measured_platforms(result) == _measured_platforms(plain)
    warnings = _shared_warnings(result.stderr)
    assert len(warnings) == 1 and "ProtocolError" in warnings[0], result.stderr
    assert result.max_rss < plain.max_rss + 20 * 2**20, (result.max_rss, plain.max_rss)
    assert result.elapsed < plain.elapsed + 2


def _measured_platforms(result: Any) -> list[list[str]]:
    return [entry["platforms"] for entry in json.loads(result.text)]


@pytest.mark.parametrize("fault", ["mget-integer", "mget-nested"])
def test_an_mget_answered_by_an_integer_or_nested_arrays_is_one_warning(
    registry: SeededRegistry, tmp_path: Path, fault: str
) -> None:
    """Issue 21, symptom 3: an MGET answered by an integer (``:1``) or by an array of arrays
    was a TypeError and exit 3. A reply of the wrong type turns the level off with one
    warning; the run answers from the registry."""
    expected = _expected(registry, tmp_path)
    with RedisServer(tmp_path / "redis") as redis, RespFaultProxy(redis.port, fault) as proxy:
        result, elapsed = _inspect(registry, tmp_path, "runner", proxy.url)
    assert result.returncode == 0, result.stderr
    assert _platforms(result) == expected
    warnings = _shared_warnings(result.stderr)
    assert len(warnings) == 1 and "MGET answered" in warnings[0], result.stderr
    assert elapsed < 10


@pytest.mark.parametrize(
    "address",
    ["127.0.0.1:99999", "127.0.0.1:abc", "[::1:6379", "[::zz]:6379", "127.0.0.1:-1"],
)
def test_a_cache_url_with_a_bad_port_or_host_is_one_clear_line(
    registry: SeededRegistry, tmp_path: Path, address: str
) -> None:
    """Issue 21, symptom 5: a port out of range or not a number, or a broken IPv6 host, made
    the URL's own parser raise inside the warning and the run exit 3, with the password from
    argv in the crash log. The URL is now checked before anything connects: one line saying
    what is wrong and where to fix it; the run goes on; nothing crashed, nothing logged."""
    expected = _expected(registry, tmp_path)
    url = f"redis://kmultiarch:hunter2-url-pw@{address}/0"
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    env = clean_env(
        tmp_path, {"KMULTIARCH_CACHE_DIR": str(tmp_path / "runner"), "TMPDIR": str(temporary)}
    )
    references = [registry.reference(key) for key in KEYS]
    result = run_kmultiarch(["inspect", "-o", "json", "--cache-url", url, *references], env=env)
    assert result.returncode == 0, result.stderr
    assert _platforms(result) == expected
    warnings = _shared_warnings(result.stderr)
    assert len(warnings) == 1 and "is not valid" in warnings[0], result.stderr
    assert "--cache-url" in warnings[0] and "redis://" in warnings[0]
    info = run_kmultiarch(["cache", "info", "--cache-url", url], env=env)
    assert info.returncode == 1 and len(_shared_warnings(info.stderr)) == 1, info.stderr
    for output in (result.stdout, result.stderr, info.stdout, info.stderr):
        assert "hunter2-url-pw" not in output
    assert list(temporary.glob("kmultiarch-crash-*")) == []


CRASHING = """\
import os
import sys

import kmultiarch.cli.commands.inspect as command


def crash(*args, **kwargs):
    # An unexpected failure whose message quotes what the run was given: the worst case.
    url = sys.argv[sys.argv.index("--cache-url") + 1]
    raise ValueError(f"cannot use {url} with {os.environ['KMULTIARCH_CACHE_KEY']}")


command.inspect_images = crash
from kmultiarch.__main__ import main

sys.exit(main(sys.argv[1:]))
"""


def test_the_crash_log_holds_no_credential_from_argv_or_the_environment(tmp_path: Path) -> None:
    """Issue 21, symptom 5: the crash log wrote argv as it was, so a --cache-url's password
    was in it. Now URLs lose their user info and query credentials, and the values of the
    environment's secrets (the cache key, a REDIS_PASSWORD) are cut, in argv and in the
    traceback alike."""
    script = tmp_path / "crash.py"
    script.write_text(CRASHING)
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    secrets = {
        "argv": "argv-pw-7741",
        "query": "query-pw-5512",
        "key": "cache-key-0123456789abcdef",
        "sidecar": "sidecar-redis-pw-9931",
    }
    url = f"redis://kmultiarch:{secrets['argv']}@127.0.0.1:1/0?password={secrets['query']}"
    env = clean_env(
        tmp_path,
        {
            "TMPDIR": str(temporary),
            "KMULTIARCH_CACHE_KEY": secrets["key"],
            "REDIS_PASSWORD": secrets["sidecar"],
            "KMULTIARCH_CACHE_URL": f"redis://:{secrets['sidecar']}@argocd-redis:6379/1",
        },
    )
    completed = subprocess.run(
        [sys.executable, str(script), "inspect", "--cache-url", url, "nginx"],
        capture_output=True,
        env=env,
        timeout=60,
        check=False,
    )
    stderr = completed.stderr.decode("utf-8", "replace")
    assert completed.returncode == 3, stderr
    logs = list(temporary.glob("kmultiarch-crash-*.log"))
    assert len(logs) == 1 and str(logs[0]) in stderr
    log = logs[0].read_text(encoding="utf-8")
    assert "Traceback" in log and "ValueError" in log and "cannot use" in log, log
    assert "redis://***@127.0.0.1:1/0?password=***" in log, log
    for name, secret in secrets.items():
        assert secret not in log, f"the {name} secret is in the crash log"
        assert secret not in stderr
