"""The shared cache level (issue 15) against a real redis-server and the real registry: what one
runner learnt, another with an empty disk cache reads, in one round trip per stage; a fleet
started together asks the registry once per image. Faults: tests/reliability/
test_shared_cache_faults.py."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from pathlib import Path

from support import SeededRegistry
from support.cli import Completed, clean_env, run_kmultiarch
from support.redis_server import RedisServer

from kmultiarch.core.images.reference import ImageRef
from kmultiarch.core.policy.model import ResolutionPolicy
from kmultiarch.core.resolution import tag_key
from kmultiarch.resolve.cache import open_cache
from kmultiarch.resolve.resolver import Resolver

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
        assert redis.cli("--scan", "--pattern", "kmultiarch:v1:*").split() == []


def test_16_runners_started_together_ask_the_registry_once_per_image(
    registry: SeededRegistry, tmp_path: Path
) -> None:
    """Coalescing across the fleet: the first process to miss a tag takes a short lock
    (SET NX PX); the others wait for its answer in Redis instead of asking the registry."""
    import subprocess
    import sys

    from support.tools import REPO

    alone = registry.mark()
    single, _ = _inspect(registry, tmp_path, "one-runner-alone", "")
    assert single.returncode == 0, single.stderr
    one_run = [r.path for r in alone.requests() if r.method == "GET" and "/manifests/" in r.path]
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
        # One GET per image's tag (and one per child of the nested index): 16 runners, once,
        # as many as one runner alone.
        tags = [r for r in manifest_gets if "/manifests/sha256:" not in r.path]
        assert len(tags) == len(KEYS), [r.path for r in manifest_gets]
        assert sorted(r.path for r in manifest_gets) == sorted(one_run)
        answers = [_without_source(json.loads(out)) for out, _ in outputs]
        assert all(answer == answers[0] for answer in answers)
        assert [e["platforms"] for e in answers[0]] == [e["platforms"] for e in single.json()]


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
        info = run_kmultiarch(
            ["cache", "info", "--cache-url", redis.url], env=clean_env(tmp_path, env)
        )
        assert info.returncode == 0, info.stderr
        assert f"shared:    rediss://127.0.0.1:{redis.port}/0" in info.stdout


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


def _without_source(answers: list[dict[str, object]]) -> list[dict[str, object]]:
    """inspect's answers without where each came from (registry, cache)."""
    return [{k: v for k, v in answer.items() if k != "source"} for answer in answers]


def _commands(redis: RedisServer) -> dict[str, int]:
    """How many times each command ran since the last CONFIG RESETSTAT."""
    counts: dict[str, int] = {}
    for line in redis.cli("INFO", "commandstats").splitlines():
        if line.startswith("cmdstat_"):
            name, _, stats = line.partition(":")
            counts[name.removeprefix("cmdstat_")] = int(stats.split(",")[0].split("=")[1])
    return counts


def test_a_warm_run_asks_redis_once_per_stage_not_once_per_image(
    registry: SeededRegistry, tmp_path: Path
) -> None:
    """A runner with an empty disk, answered by Redis: one MGET for the tags and pinned
    digests (and a second for digests the tags name that were not asked yet); no GET per
    image."""
    pinned = [registry.digest_reference(key) for key in KEYS]
    tags = [registry.reference(key) for key in KEYS]
    args = ["inspect", "-o", "json", *tags, *pinned]
    with RedisServer(tmp_path / "redis") as redis:
        env = {"KMULTIARCH_CACHE_URL": redis.url}
        first = run_kmultiarch(
            args, env=clean_env(tmp_path, {**env, "KMULTIARCH_CACHE_DIR": str(tmp_path / "a")})
        )
        assert first.returncode == 0, first.stderr
        redis.cli("CONFIG", "RESETSTAT")
        log = registry.mark()
        second = run_kmultiarch(
            args, env=clean_env(tmp_path, {**env, "KMULTIARCH_CACHE_DIR": str(tmp_path / "b")})
        )
        assert second.returncode == 0, second.stderr
        assert log.requests() == []
        assert _without_source(second.json()) == _without_source(first.json())
        commands = _commands(redis)
        # The pinned digests are those the tags name: the first MGET asked for all of them.
        assert commands.get("mget") == 1, commands
        assert "get" not in commands and "set" not in commands, commands
        redis.cli("CONFIG", "RESETSTAT")
        tags_only = run_kmultiarch(
            ["inspect", "-o", "json", *tags],
            env=clean_env(tmp_path, {**env, "KMULTIARCH_CACHE_DIR": str(tmp_path / "c")}),
        )
        assert tags_only.returncode == 0, tags_only.stderr
        assert _commands(redis).get("mget") == 2  # the tags, then the digests they name
        # The answers are now on b's disk: its next run does not even connect.
        redis.cli("CONFIG", "RESETSTAT")
        third = run_kmultiarch(
            args, env=clean_env(tmp_path, {**env, "KMULTIARCH_CACHE_DIR": str(tmp_path / "b")})
        )
        assert third.returncode == 0, third.stderr
        assert _without_source(third.json()) == _without_source(first.json())
        assert "mget" not in _commands(redis)


def test_a_tag_another_runner_revalidated_is_not_revalidated_again(
    registry: SeededRegistry, tmp_path: Path
) -> None:
    """Runner b's disk holds a tag past its TTL; runner a revalidated it since and wrote the
    fresh answer to Redis: b takes it from there instead of sending its own HEAD."""
    references = [registry.reference(k) for k in KEYS]
    with RedisServer(tmp_path / "redis") as redis:

        def run(runner: str) -> object:
            env = clean_env(
                tmp_path,
                {
                    "KMULTIARCH_CACHE_URL": redis.url,
                    "KMULTIARCH_CACHE_DIR": str(tmp_path / runner),
                    "KMULTIARCH_CACHE_TTL": "2",
                },
            )
            result = run_kmultiarch(["inspect", "-o", "json", *references], env=env)
            assert result.returncode == 0, result.stderr
            return result

        run("a")
        run("b")  # b's disk now holds every answer
        time.sleep(2.1)  # past the TTL on both disks
        log = registry.mark()
        run("a")
        assert log.count("HEAD") == len(KEYS), "a revalidated its stale tags"
        log = registry.mark()
        run("b")
        assert log.requests() == [], "b read a's revalidation from Redis"


def test_a_failed_lookup_releases_the_fleet_lock_at_once(
    registry: SeededRegistry, tmp_path: Path
) -> None:
    """Failures are never cached: when the process holding a tag's lock fails, the processes
    waiting for its answer ask for themselves at once, not at the end of their wait."""
    missing = ImageRef.parse(f"{registry.host}/no/such-image:1.0")
    with RedisServer(tmp_path / "redis") as redis:
        holder = open_cache(tmp_path / "holder", shared_url=redis.url)
        claimed, _ = holder.claim_tag(tag_key(missing))
        assert claimed
        waiter = Resolver(ResolutionPolicy(), open_cache(tmp_path / "waiter", shared_url=redis.url))
        threading.Timer(0.3, holder.release_tag, args=(tag_key(missing),)).start()
        started = time.monotonic()
        result = waiter.resolve([missing])[missing]
        elapsed = time.monotonic() - started
        assert result.error is not None and "not found" in result.error.reason.lower(), result
        assert 0.3 <= elapsed < 1.5, f"{elapsed:.2f} s: waited past the release"
        assert holder.warnings == [] and waiter.cache.warnings == []
        holder.close()
        waiter.cache.close()


# Issue 21: the shared level's own client (RESP2, no redis-py), its URLs, and signed entries.


def _run(
    registry: SeededRegistry,
    tmp_path: Path,
    cache: str,
    extra: dict[str, str],
    *args: str,
) -> Completed:
    env = clean_env(tmp_path, {"KMULTIARCH_CACHE_DIR": str(tmp_path / cache), **extra})
    return run_kmultiarch(
        ["inspect", "-o", "json", *args, *(registry.reference(k) for k in KEYS)], env=env
    )


def _shared_warnings(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if "shared cache" in line]


def test_cache_clear_removes_keys_that_are_not_utf8(
    registry: SeededRegistry, tmp_path: Path
) -> None:
    """Issue 21, symptom 4: one key under kmultiarch:v1: that is not UTF-8 made `cache clear
    --cache-url` remove nothing and exit 1 (the key list failed to decode). Keys are bytes
    now: every one under the prefix is removed, and `cache info` counts it."""
    with RedisServer(tmp_path / "redis") as redis:
        first, _ = _inspect(registry, tmp_path, "a", redis.url)
        assert first.returncode == 0, first.stderr
        # The answers stay; the fleet's locks (kmultiarch:v1:lock:...) may expire meanwhile.
        answers = [
            key
            for key in redis.cli("--scan", "--pattern", "kmultiarch:v1:*").split()
            if not key.startswith("kmultiarch:v1:lock:")
        ]
        redis.cli("SET", "kmultiarch:v1:tag:caf\udce9/app:1", "x")  # the byte 0xe9
        redis.cli("SET", "other:key", "kept")
        env = clean_env(tmp_path, {"KMULTIARCH_CACHE_DIR": str(tmp_path / "a")})
        info = run_kmultiarch(["cache", "info", "--cache-url", redis.url], env=env)
        assert info.returncode == 0 and "shared:" in info.stdout, info.stderr
        shared_entries = info.stdout.split("shared:")[1].split("entries:")[1]
        assert int(shared_entries.split()[0]) >= len(answers) + 1
        cleared = run_kmultiarch(["cache", "clear", "--cache-url", redis.url], env=env)
        assert cleared.returncode == 0, cleared.stderr
        shared_line = cleared.stdout.splitlines()[-1]
        assert shared_line.startswith("redis://"), cleared.stdout
        assert int(shared_line.split("removed ")[1].split()[0]) >= len(answers) + 1
        assert redis.cli("DBSIZE").strip() == "1", "only other:key is left"
        assert redis.cli("GET", "other:key").strip() == "kept"


def test_a_password_in_the_url_query_authenticates_and_is_never_shown(
    registry: SeededRegistry, tmp_path: Path
) -> None:
    """Issue 21, symptom 6: redis-py authenticates with ?password= in the URL, and `cache
    info` and the warnings printed the URL with it. The shown URL drops every credential, in
    the user info and in the query; the query's password still logs in."""
    with RedisServer(tmp_path / "redis", password="query-pw-8812") as redis:
        url = f"redis://127.0.0.1:{redis.port}/0?password=query-pw-8812"
        first = _run(registry, tmp_path, "a", {"KMULTIARCH_CACHE_URL": url})
        assert first.returncode == 0 and _shared_warnings(first.stderr) == [], first.stderr
        log = registry.mark()
        second = _run(registry, tmp_path, "b", {"KMULTIARCH_CACHE_URL": url})
        assert second.returncode == 0 and log.requests() == [], "logged in with ?password="
        env = clean_env(tmp_path, {"KMULTIARCH_CACHE_DIR": str(tmp_path / "a")})
        info = run_kmultiarch(["cache", "info", "--cache-url", url], env=env)
        assert info.returncode == 0, info.stderr
        assert f"shared:    redis://127.0.0.1:{redis.port}/0\n" in info.stdout
        wrong_url = url.replace("query-pw-8812", "wrong-query-pw")
        wrong = _run(registry, tmp_path, "c", {"KMULTIARCH_CACHE_URL": wrong_url})
        assert wrong.returncode == 0 and len(_shared_warnings(wrong.stderr)) == 1, wrong.stderr
        users = _run(
            registry,
            tmp_path,
            "d",
            {"KMULTIARCH_CACHE_URL": f"{wrong_url}&username=someone"},
        )
        assert len(_shared_warnings(users.stderr)) == 1, users.stderr
    for result in (first, second, info, wrong, users):
        for secret in ("query-pw-8812", "wrong-query-pw", "someone"):
            assert secret not in result.stdout + result.stderr


BLOCK_REDIS_PY = """\
import sys


class BlockRedisPy:
    def find_spec(self, name, path=None, target=None):
        if name == "redis" or name.startswith("redis."):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None


sys.meta_path.insert(0, BlockRedisPy())
"""


def test_the_shared_level_works_without_redis_py(registry: SeededRegistry, tmp_path: Path) -> None:
    """Issue 21, symptom 7: without the `redis` extra the warning said ModuleNotFoundError
    instead of how to install it. kmultiarch speaks RESP2 itself now: no extra is needed, and
    the level works where `import redis` fails."""
    blocker = tmp_path / "no-redis-py"
    blocker.mkdir()
    (blocker / "sitecustomize.py").write_text(BLOCK_REDIS_PY)
    blocked = {"PYTHONPATH": str(blocker)}
    probe = subprocess.run(
        [sys.executable, "-c", "import redis"],
        env=clean_env(tmp_path, blocked),
        capture_output=True,
        text=True,
        check=False,
    )
    assert probe.returncode == 1 and "No module named 'redis'" in probe.stderr, probe.stderr
    with RedisServer(tmp_path / "redis", password="no-extra-pw") as redis:
        first = _run(registry, tmp_path, "a", {**blocked, "KMULTIARCH_CACHE_URL": redis.url})
        assert first.returncode == 0 and _shared_warnings(first.stderr) == [], first.stderr
        log = registry.mark()
        second = _run(registry, tmp_path, "b", {**blocked, "KMULTIARCH_CACHE_URL": redis.url})
        assert second.returncode == 0 and _shared_warnings(second.stderr) == [], second.stderr
        assert log.requests() == [], "answered from Redis without redis-py"


KEY = "kmultiarch-test-key-5f1c0a9e7d3b"


def _tag_key(registry: SeededRegistry, image: str) -> str:
    return f"kmultiarch:v1:tag:{registry.reference(image)}"


def test_with_a_cache_key_only_entries_signed_with_it_decide(
    registry: SeededRegistry, tmp_path: Path
) -> None:
    """Issue 21, item 8: whoever may write the shared Redis decides scheduling. With a key,
    runners sign what they write (HMAC-SHA256 over the Redis key and the stored record), and
    an entry that is unsigned, signed with another key or copied from another key is a miss,
    said in one warning per run: a writer without the key can make runners ask the registry,
    never change their answer. Without a key, the forged answer is taken (the trust model
    docs/cache.md states)."""
    expected = _platforms_of(_run(registry, tmp_path, "reference", {}))
    with RedisServer(tmp_path / "redis") as redis:
        keyed = {"KMULTIARCH_CACHE_URL": redis.url, "KMULTIARCH_CACHE_KEY": KEY}
        first = _run(registry, tmp_path, "a", keyed)
        assert first.returncode == 0 and _shared_warnings(first.stderr) == [], first.stderr
        target = _tag_key(registry, "multiarch-oci")
        assert redis.cli("GET", target).startswith("kmultiarch-hmac-sha256:")
        log = registry.mark()
        second = _run(registry, tmp_path, "b", keyed)
        assert second.returncode == 0 and _shared_warnings(second.stderr) == [], second.stderr
        assert log.requests() == [], "signed answers are shared"

        # A writer without the key points the multi-arch tag at the amd64-only image.
        amd64_only = redis.cli("GET", _tag_key(registry, "single-docker-amd64")).strip()
        forged_record = amd64_only.split("\n", 1)[1]
        redis.cli("SET", target, forged_record)
        unkeyed = _run(registry, tmp_path, "c", {"KMULTIARCH_CACHE_URL": redis.url})
        assert _platforms_of(unkeyed)[0] == expected[1], "without a key the writer decides"
        log = registry.mark()
        refused = _run(registry, tmp_path, "d", keyed)
        assert refused.returncode == 0 and _platforms_of(refused) == expected
        warnings = _shared_warnings(refused.stderr)
        assert len(warnings) == 1 and "not signed" in warnings[0], refused.stderr
        assert log.count("GET") > 0, "the refused entry was a miss: asked the registry"
        assert redis.cli("GET", target).startswith("kmultiarch-hmac-sha256:"), "rewritten"

        # A signed record copied from another key does not verify.
        redis.cli("SET", target, amd64_only)
        copied = _run(registry, tmp_path, "e", keyed)
        assert _platforms_of(copied) == expected
        warnings = _shared_warnings(copied.stderr)
        assert len(warnings) == 1 and "for another entry" in warnings[0], copied.stderr

        # Another key refuses every entry: still one warning for the run.
        other = {**keyed, "KMULTIARCH_CACHE_KEY": "another-key-of-enough-length"}
        stranger = _run(registry, tmp_path, "f", other)
        assert _platforms_of(stranger) == expected
        assert len(_shared_warnings(stranger.stderr)) == 1, stranger.stderr


def _platforms_of(result: Completed) -> list[list[str]]:
    assert result.returncode == 0, result.stderr
    return [entry["platforms"] for entry in result.json()]


def test_the_cache_key_comes_from_a_file_the_environment_or_the_policy(
    registry: SeededRegistry, tmp_path: Path
) -> None:
    """--cache-key-file (or $KMULTIARCH_CACHE_KEY_FILE), $KMULTIARCH_CACHE_KEY, and the
    policy's spec.cache.keyFile (relative to the policy) or spec.cache.key: the same key from
    each source reads what another wrote; the policy's key goes with the policy's URL."""
    key_file = tmp_path / "secrets" / "cache.key"
    key_file.parent.mkdir()
    key_file.write_text(KEY + "\n")  # as `kubectl create secret` files often end
    with RedisServer(tmp_path / "redis") as redis:
        policy = tmp_path / "policy.yaml"
        policy.write_text(
            "apiVersion: kmultiarch.dev/v1alpha1\nkind: MultiArchPolicy\n"
            f"spec:\n  cache: {{url: '{redis.url}', keyFile: secrets/cache.key}}\n"
        )
        literal = tmp_path / "literal.yaml"
        literal.write_text(
            "apiVersion: kmultiarch.dev/v1alpha1\nkind: MultiArchPolicy\n"
            f"spec:\n  cache: {{url: '{redis.url}', key: {KEY}}}\n"
        )
        first = _run(registry, tmp_path, "a", {}, "--config", str(policy))
        assert first.returncode == 0 and _shared_warnings(first.stderr) == [], first.stderr
        assert redis.cli("GET", _tag_key(registry, "nested-index")).startswith("kmultiarch-hmac")
        url = {"KMULTIARCH_CACHE_URL": redis.url}
        for runner, extra, args in [
            ("b", url, ("--cache-key-file", str(key_file))),
            ("c", {**url, "KMULTIARCH_CACHE_KEY_FILE": str(key_file)}, ()),
            ("d", {**url, "KMULTIARCH_CACHE_KEY": KEY}, ()),
            ("e", {}, ("--config", str(literal))),
        ]:
            log = registry.mark()
            result = _run(registry, tmp_path, runner, extra, *args)
            assert result.returncode == 0, result.stderr
            assert _shared_warnings(result.stderr) == [], (runner, result.stderr)
            assert log.requests() == [], f"runner {runner} read the signed answers"
        info = run_kmultiarch(
            ["cache", "info", "--cache-url", redis.url, "--cache-key-file", str(key_file)],
            env=clean_env(tmp_path),
        )
        assert info.returncode == 0, info.stderr
        # 4 digests, 3 tags and the 3 platform manifests the indexes list (issue 36)
        assert "signed:    10 of 10 signed with this key" in info.stdout, info.stdout


def test_a_cache_key_that_cannot_be_used_turns_the_shared_level_off(
    registry: SeededRegistry, tmp_path: Path
) -> None:
    """A key file that is missing, or a key shorter than 16 bytes: the run cannot tell which
    entries to trust, so it does not use the shared level at all (one warning, no command
    sent), rather than trust every entry."""
    short = tmp_path / "short.key"
    short.write_text("too-short\n")
    with RedisServer(tmp_path / "redis") as redis:
        url = {"KMULTIARCH_CACHE_URL": redis.url}
        for runner, extra, args, reason in [
            ("a", url, ("--cache-key-file", str(tmp_path / "missing.key")), "cannot read"),
            ("b", url, ("--cache-key-file", str(short)), "shorter than 16 bytes"),
            ("c", {**url, "KMULTIARCH_CACHE_KEY": "too-short"}, (), "shorter than 16 bytes"),
        ]:
            redis.cli("CONFIG", "RESETSTAT")
            result = _run(registry, tmp_path, runner, extra, *args)
            assert result.returncode == 0, result.stderr
            warnings = _shared_warnings(result.stderr)
            assert len(warnings) == 1 and reason in warnings[0], result.stderr
            assert "too-short" not in result.stderr
            assert set(_commands(redis)) <= {"config|resetstat"}, "nothing was sent to Redis"


def test_the_cache_key_is_never_shown_or_stored(registry: SeededRegistry, tmp_path: Path) -> None:
    """The key signs; it is never printed (not with -v, not by cache info), nor written to the
    disk cache or to Redis."""
    with RedisServer(tmp_path / "redis") as redis:
        keyed = {"KMULTIARCH_CACHE_URL": redis.url, "KMULTIARCH_CACHE_KEY": KEY}
        runs = [_run(registry, tmp_path, "a", keyed, "-v"), _run(registry, tmp_path, "b", keyed)]
        runs.append(
            run_kmultiarch(
                ["cache", "info", "--cache-url", redis.url], env=clean_env(tmp_path, keyed)
            )
        )
        stored = redis.cli("--scan", "--pattern", "*").split()
        values = [redis.cli("GET", key) for key in stored]
    for result in runs:
        assert result.returncode == 0, result.stderr
        assert KEY not in result.stdout + result.stderr
    assert not any(KEY in value for value in values)
    for path in (tmp_path / "a").rglob("*"):
        if path.is_file():
            assert KEY.encode() not in path.read_bytes(), path
