"""The Python API is assembled as the command line is (issue 22): ``kmultiarch.mutate_text``
honours a policy's lock and its shared cache, which only the CLI read before (the policy's
``spec.lock`` and ``spec.cache`` were read in cli/session.py alone). Real registry, real
redis-server."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from support import SeededRegistry
from support.redis_server import RedisServer

import kmultiarch
from kmultiarch.io.config import parse_policy_text

MULTIARCH = "multiarch-oci"


def _deployment(image: str) -> str:
    return (
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  template:\n"
        f"    spec:\n      containers:\n      - name: main\n        image: {image}\n"
    )


def _policy(tmp_path: Path, spec: str) -> kmultiarch.Policy:
    path = tmp_path / "policy.yaml"
    text = (
        "apiVersion: kmultiarch.dev/v1alpha1\nkind: MultiArchPolicy\nmetadata: {name: api}\n"
        f"spec:\n{spec}"
    )
    path.write_text(text)
    return parse_policy_text(text, str(path))


def _pod_spec(result: kmultiarch.EngineResult) -> dict[str, object]:
    (document,) = yaml.safe_load_all(result.stream())
    spec = document["spec"]["template"]["spec"]
    assert isinstance(spec, dict)
    return spec


def test_the_api_answers_from_the_policys_lock_without_a_request(
    registry: SeededRegistry, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The lock says amd64 only (the registry has both): the affinity proves the lock answered,
    the registry's log that nothing was asked."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    image = registry.reference(MULTIARCH)
    digest = registry.images[MULTIARCH].digest
    (tmp_path / "kmultiarch.lock").write_text(
        "apiVersion: kmultiarch.dev/v1alpha1\nkind: ImageLock\nimages:\n"
        f"  {image}: {{digest: '{digest}', platforms: [linux/amd64]}}\n"
    )
    policy = _policy(tmp_path, "  lock: kmultiarch.lock\n")
    log = registry.mark()
    result = kmultiarch.mutate_text(_deployment(image), policy, cache_dir=tmp_path / "disk")
    assert log.requests() == []
    spec = _pod_spec(result)
    assert "tolerations" not in spec
    assert "amd64" in str(spec["affinity"])
    assert result.resolutions[kmultiarch.ImageRef.parse(image)].source == "lock"


def test_the_api_shares_answers_through_the_policys_shared_cache(
    registry: SeededRegistry, tmp_path: Path
) -> None:
    image = registry.reference(MULTIARCH)
    with RedisServer(tmp_path / "redis") as redis:
        policy = _policy(tmp_path, f"  cache: {{url: '{redis.url}'}}\n")
        first = kmultiarch.mutate_text(_deployment(image), policy, cache_dir=tmp_path / "one")
        assert first.findings == [], first.findings
        assert redis.cli("--scan", "--pattern", "kmultiarch:v1:*").split(), "written to Redis"
        log = registry.mark()
        second = kmultiarch.mutate_text(_deployment(image), policy, cache_dir=tmp_path / "two")
        assert log.requests() == [], "answered by the shared level, with an empty disk cache"
    assert second.stream() == first.stream()
    assert "tolerations" in _pod_spec(second)
