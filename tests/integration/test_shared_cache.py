"""The shared cache level (issue 15, first step) against a real redis-server and the real
registry: what one runner learnt, another with an empty disk cache reads; a Redis that is down
or refuses the password is one warning and the run goes on."""

from __future__ import annotations

import time
from pathlib import Path

from support import SeededRegistry
from support.cli import clean_env, run_kmultiarch
from support.redis_server import RedisServer

KEYS = ["multiarch-oci", "single-docker-amd64", "nested-index"]


def _inspect(
    registry: SeededRegistry, tmp_path: Path, cache: str, url: str
) -> tuple[object, float]:
    env = clean_env(
        tmp_path, {"KMULTIARCH_CACHE_DIR": str(tmp_path / cache), "KMULTIARCH_CACHE_URL": url}
    )
    started = time.monotonic()
    result = run_kmultiarch(
        ["inspect", "-o", "json", *(registry.reference(k) for k in KEYS)], env=env
    )
    return result, time.monotonic() - started


def test_two_runners_share_answers_through_redis(registry: SeededRegistry, tmp_path: Path) -> None:
    with RedisServer(tmp_path / "redis", password="s3cret-redis") as redis:
        log = registry.mark()
        first, _ = _inspect(registry, tmp_path, "runner-a", redis.url)
        assert first.returncode == 0, first.stderr
        asked = len(log.requests())
        assert asked >= len(KEYS)
        second_log = registry.mark()
        second, _ = _inspect(registry, tmp_path, "runner-b", redis.url)
        assert second.returncode == 0, second.stderr
        assert second_log.requests() == [], "answered from Redis, not the registry"
        assert [e["platforms"] for e in second.json()] == [e["platforms"] for e in first.json()]
        assert "s3cret-redis" not in first.stderr + second.stderr


def test_a_redis_that_is_down_or_refuses_is_one_warning(
    registry: SeededRegistry, tmp_path: Path
) -> None:
    with RedisServer(tmp_path / "redis", password="right") as redis:
        wrong = redis.url.replace(":right@", ":wrong@")
        result, elapsed = _inspect(registry, tmp_path, "runner-a", wrong)
        assert result.returncode == 0, result.stderr
        warnings = [line for line in result.stderr.splitlines() if "shared cache" in line]
        assert len(warnings) == 1, result.stderr
        assert "wrong" not in result.stderr and "right" not in result.stderr
        port = redis.port
    down = f"redis://127.0.0.1:{port}/0"
    result, elapsed = _inspect(registry, tmp_path, "runner-b", down)
    assert result.returncode == 0, result.stderr
    assert [e["error"] for e in result.json()] == [None] * len(KEYS)
    assert len([line for line in result.stderr.splitlines() if "shared cache" in line]) == 1
    assert elapsed < 10


def _redis_cli(redis: RedisServer, *command: str) -> str:
    import subprocess

    args = ["redis-cli", "-p", str(redis.port)]
    if redis.password:
        args += ["-a", redis.password, "--no-auth-warning"]
    return subprocess.run([*args, *command], capture_output=True, text=True, check=True).stdout


def test_garbage_and_pickles_in_redis_are_ignored_with_a_warning(
    registry: SeededRegistry, tmp_path: Path
) -> None:
    with RedisServer(tmp_path / "redis") as redis:
        first, _ = _inspect(registry, tmp_path, "runner-a", redis.url)
        assert first.returncode == 0, first.stderr
        keys = _redis_cli(redis, "--scan", "--pattern", "kmultiarch:v1:*").split()
        assert keys, "the first runner wrote its answers"
        planted = tmp_path / "pwned"
        pickle = b"cos\nsystem\n(S'touch " + str(planted).encode() + b"'\ntR."
        for position, key in enumerate(keys):
            value = pickle.decode("latin-1") if position % 2 else "not JSON {"
            _redis_cli(redis, "SET", key, value)
        second, _ = _inspect(registry, tmp_path, "runner-b", redis.url)
        assert second.returncode == 0, second.stderr
        assert [e["platforms"] for e in second.json()] == [e["platforms"] for e in first.json()]
        assert "not a JSON object" in second.stderr
        assert not planted.exists()


def test_a_slow_or_full_redis_costs_a_bounded_time_and_one_warning(
    registry: SeededRegistry, tmp_path: Path
) -> None:
    import threading

    with RedisServer(tmp_path / "redis") as redis:
        _redis_cli(redis, "CONFIG", "SET", "maxmemory", "1mb")
        _redis_cli(redis, "CONFIG", "SET", "maxmemory-policy", "noeviction")
        _redis_cli(redis, "DEBUG", "POPULATE", "3000", "filler", "1000")  # past maxmemory
        full, _ = _inspect(registry, tmp_path, "runner-a", redis.url)
        assert full.returncode == 0, full.stderr
        assert len([line for line in full.stderr.splitlines() if "shared cache" in line]) == 1, (
            full.stderr
        )
        sleeper = threading.Thread(target=_redis_cli, args=(redis, "DEBUG", "SLEEP", "5"))
        sleeper.start()
        slow, elapsed = _inspect(registry, tmp_path, "runner-b", redis.url)
        sleeper.join()
        assert slow.returncode == 0, slow.stderr
        assert [e["error"] for e in slow.json()] == [None] * len(KEYS)
        assert elapsed < 4, f"{elapsed:.1f} s: the slow server held the run"


def test_cache_info_and_clear_reach_the_shared_level(
    registry: SeededRegistry, tmp_path: Path
) -> None:
    with RedisServer(tmp_path / "redis", password="pw-hidden") as redis:
        first, _ = _inspect(registry, tmp_path, "runner-a", redis.url)
        assert first.returncode == 0, first.stderr
        env = clean_env(tmp_path, {"KMULTIARCH_CACHE_DIR": str(tmp_path / "runner-a")})
        info = run_kmultiarch(["cache", "info", "--cache-url", redis.url], env=env)
        assert info.returncode == 0, info.stderr
        assert "shared:" in info.stdout and "pw-hidden" not in info.stdout + info.stderr
        cleared = run_kmultiarch(["cache", "clear", "--cache-url", redis.url], env=env)
        assert cleared.returncode == 0, cleared.stderr
        assert _redis_cli(redis, "--scan", "--pattern", "kmultiarch:v1:*").split() == []


def test_16_runners_started_together_ask_the_registry_once_per_image(
    registry: SeededRegistry, tmp_path: Path
) -> None:
    """Coalescing across the fleet: the first process to miss a tag takes a short lock
    (SET NX PX); the others wait for its answer in Redis instead of asking the registry."""
    import subprocess
    import sys

    from support.tools import REPO

    with RedisServer(tmp_path / "redis") as redis:
        log = registry.mark()
        processes = []
        for runner in range(16):
            env = clean_env(
                tmp_path,
                {
                    "KMULTIARCH_CACHE_DIR": str(tmp_path / f"runner-{runner}"),
                    "KMULTIARCH_CACHE_URL": redis.url,
                },
            )
            processes.append(
                subprocess.Popen(
                    [
                        sys.executable,
                        "-m",
                        "kmultiarch",
                        "inspect",
                        "-o",
                        "json",
                        *(registry.reference(k) for k in KEYS),
                    ],
                    env=env,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    cwd=REPO,  # this checkout's package
                )
            )
        outputs = [process.communicate(timeout=120) for process in processes]
        assert [process.returncode for process in processes] == [0] * 16, outputs[0][1]
        manifest_gets = [r for r in log.requests() if r.method == "GET" and "/manifests/" in r.path]
        # One GET per image's tag (and one per child of the nested index): 16 runners, once.
        tags = [r for r in manifest_gets if "/manifests/sha256:" not in r.path]
        assert len(tags) == len(KEYS), [r.path for r in manifest_gets]


def test_a_tls_redis_with_a_ca_of_ones_own(registry: SeededRegistry, tmp_path: Path) -> None:
    with RedisServer(tmp_path / "redis", tls=True) as redis:
        assert redis.url.startswith("rediss://") and redis.ca_pem is not None
        env = {"KMULTIARCH_CACHE_CA": str(redis.ca_pem)}
        first = run_kmultiarch(
            ["inspect", "-o", "json", *(registry.reference(k) for k in KEYS)],
            env=clean_env(
                tmp_path,
                {
                    **env,
                    "KMULTIARCH_CACHE_DIR": str(tmp_path / "a"),
                    "KMULTIARCH_CACHE_URL": redis.url,
                },
            ),
        )
        assert first.returncode == 0, first.stderr
        assert "shared cache" not in first.stderr, first.stderr
        log = registry.mark()
        second = run_kmultiarch(
            ["inspect", "-o", "json", *(registry.reference(k) for k in KEYS)],
            env=clean_env(
                tmp_path,
                {
                    **env,
                    "KMULTIARCH_CACHE_DIR": str(tmp_path / "b"),
                    "KMULTIARCH_CACHE_URL": redis.url,
                },
            ),
        )
        assert second.returncode == 0, second.stderr
        assert log.requests() == [], "answered over TLS from Redis"
        unverified = run_kmultiarch(
            ["inspect", "-o", "json", registry.reference(KEYS[0])],
            env=clean_env(
                tmp_path,
                {"KMULTIARCH_CACHE_DIR": str(tmp_path / "c"), "KMULTIARCH_CACHE_URL": redis.url},
            ),
        )
        assert unverified.returncode == 0
        assert "shared cache" in unverified.stderr  # the system CAs do not know the test CA


def test_the_policy_names_the_shared_cache(registry: SeededRegistry, tmp_path: Path) -> None:
    """spec.cache: {url: ...} in the policy (a repository's own settings; the option and the
    environment win over it)."""
    with RedisServer(tmp_path / "redis") as redis:
        policy = tmp_path / "policy.yaml"
        policy.write_text(
            "apiVersion: kmultiarch.dev/v1alpha1\nkind: MultiArchPolicy\n"
            f"spec:\n  cache: {{url: '{redis.url}'}}\n"
        )
        args = [
            "inspect",
            "--config",
            str(policy),
            "-o",
            "json",
            *(registry.reference(k) for k in KEYS),
        ]
        first = run_kmultiarch(
            args, env=clean_env(tmp_path, {"KMULTIARCH_CACHE_DIR": str(tmp_path / "a")})
        )
        assert first.returncode == 0, first.stderr
        log = registry.mark()
        second = run_kmultiarch(
            args, env=clean_env(tmp_path, {"KMULTIARCH_CACHE_DIR": str(tmp_path / "b")})
        )
        assert second.returncode == 0, second.stderr
        assert log.requests() == []
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "apiVersion: kmultiarch.dev/v1alpha1\nkind: MultiArchPolicy\nspec:\n  cache: {url: http://x}\n"
    )
    refused = run_kmultiarch(["inspect", "--config", str(bad), "nginx"], env=clean_env(tmp_path))
    assert refused.returncode == 2 and "spec.cache.url" in refused.stderr


def test_a_unix_socket_redis(registry: SeededRegistry, tmp_path: Path) -> None:
    import shutil
    import subprocess

    socket_path = tmp_path / "redis.sock"
    binary = shutil.which("redis-server")
    assert binary is not None
    server = subprocess.Popen(
        [
            binary,
            "--port",
            "0",
            "--unixsocket",
            str(socket_path),
            "--dir",
            str(tmp_path),
            "--save",
            "",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 10
        while not socket_path.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        url = f"unix://{socket_path}"
        first, _ = _inspect(registry, tmp_path, "a", url)
        assert first.returncode == 0 and "shared cache" not in first.stderr, first.stderr
        log = registry.mark()
        second, _ = _inspect(registry, tmp_path, "b", url)
        assert second.returncode == 0, second.stderr
        assert log.requests() == []
    finally:
        server.terminate()
        server.wait(timeout=10)
