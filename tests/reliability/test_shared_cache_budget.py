"""The shared cache is bounded by the run, not only by the operation (issue 28, item 11).

Each operation had a 0.5 s deadline, but a server answering every one in 0.4 s added that to
each of a run's operations: 10 images took 13 s, without a word. All of a run's operations
now share one budget (2 s by default, ``spec.cache.budget``), after which the run goes on
without the level, with one warning. ``cache info`` against a server that pages SCAN for ever
(slowly) was bounded only by 100,000 pages, hours: it now stops at a deadline and says so.
Against a real redis-server, the faults from a proxy in front of it (support/resp_proxy.py)."""

from __future__ import annotations

import time
from pathlib import Path

from support import SeededRegistry
from support.cli import clean_env, run_kmultiarch
from support.redis_server import RedisServer
from support.resp_proxy import RespFaultProxy

from kmultiarch.core.images.platform import Platform
from kmultiarch.resolve.cache import open_cache

#: kmultiarch.resolve.shared's DEFAULT_BUDGET and LISTING_BUDGET, as docs/reliability.md says.
DEFAULT_BUDGET = 2.0
LISTING_BUDGET = 10.0

INDEX = "application/vnd.oci.image.index.v1+json"
AMD64 = frozenset({Platform("linux", "amd64")})
KEYS = ["multiarch-oci", "single-docker-amd64", "nested-index"]


def test_replies_at_0_4_s_make_10_images_take_13_s_silently(tmp_path: Path) -> None:
    """What a run does for 10 images it looks up (a miss, then the tag and the platforms
    stored), against a server answering every operation in 0.4 s: the budget, then one
    warning, then the local level alone."""
    with RedisServer(tmp_path / "redis") as redis, RespFaultProxy(redis.port, "slow") as slow:
        cache = open_cache(tmp_path / "disk", shared_url=slow.url)
        started = time.monotonic()
        for image in range(10):
            digest = f"sha256:{image:064x}"
            assert cache.get_platforms(digest) is None
            cache.put_platforms(digest, INDEX, AMD64)
            cache.put_tag(f"127.0.0.1:5000/app-{image}:1.0", digest)
        elapsed = time.monotonic() - started
        cache.close()
    assert elapsed < DEFAULT_BUDGET + 1.5, f"{elapsed:.1f} s"
    assert len(cache.warnings) == 1, cache.warnings
    assert "budget of 2 s" in cache.warnings[0] and "spec.cache.budget" in cache.warnings[0]
    assert "going on without it" in cache.warnings[0]


def test_spec_cache_budget_bounds_a_whole_run_against_a_slow_server(
    registry: SeededRegistry, tmp_path: Path
) -> None:
    """Through the command line: the policy's budget is the run's, the answers are right."""
    policy = tmp_path / "policy.yaml"
    policy.write_text(
        "apiVersion: kmultiarch.dev/v1alpha1\nkind: MultiArchPolicy\n"
        "spec:\n  cache:\n    budget: 0.5\n"
    )
    references = [registry.reference(key) for key in KEYS]
    with RedisServer(tmp_path / "redis") as redis, RespFaultProxy(redis.port, "slow") as slow:
        env = clean_env(
            tmp_path,
            {"KMULTIARCH_CACHE_DIR": str(tmp_path / "disk"), "KMULTIARCH_CACHE_URL": slow.url},
        )
        started = time.monotonic()
        result = run_kmultiarch(
            ["inspect", "--config", str(policy), "-o", "json", *references], env=env, timeout=60
        )
        elapsed = time.monotonic() - started
    assert result.returncode == 0, result.stderr
    assert len(result.json()) == len(KEYS)
    warnings = [line for line in result.stderr.splitlines() if "shared cache" in line]
    assert len(warnings) == 1 and "budget of 0.5 s" in warnings[0], result.stderr
    assert elapsed < 10, f"{elapsed:.1f} s"


def test_cache_info_against_an_endless_slow_scan_stops_at_its_deadline(tmp_path: Path) -> None:
    with (
        RedisServer(tmp_path / "redis") as redis,
        RespFaultProxy(redis.port, "endless-scan") as endless,
    ):
        started = time.monotonic()
        info = run_kmultiarch(
            ["cache", "info", "--cache-url", endless.url],
            env=clean_env(tmp_path, {"KMULTIARCH_CACHE_DIR": str(tmp_path / "disk")}),
            timeout=120,
        )
        elapsed = time.monotonic() - started
    assert info.returncode == 1, info.stderr
    assert "SCAN still paging after" in info.stderr, info.stderr
    assert f"budget of {LISTING_BUDGET:g} s (cache info's deadline)" in info.stderr
    assert elapsed < LISTING_BUDGET + 5, f"{elapsed:.1f} s"
