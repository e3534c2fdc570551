"""Registries as users really have them (issue 11), against the real registry on loopback:
many repositories on one token registry, host names in any case, references and settings
httpx refuses, artifacts in an index, skipped pods, stale answers."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from support import SeededRegistry, write_docker_config
from support.cli import clean_env, run_kmultiarch
from support.fault_proxy import FaultProxy, Gzip
from support.seed import PlatformSpec, Seeder, oci_image

MANY = 120


@pytest.fixture(scope="module")
def many_repositories(token_registry: SeededRegistry) -> list[str]:
    """``MANY`` repositories of one single-platform image each, pushed as alice."""
    names = [f"many/app-{index:03d}" for index in range(MANY)]
    with token_registry.client(authenticated=True) as client:
        seeder = Seeder(client)

        def push(name: str) -> None:
            seeder.push_manifest(name, oci_image(PlatformSpec("linux", "arm64"), name), "1.0")

        with ThreadPoolExecutor(max_workers=8) as pool:
            list(pool.map(push, names))
    return [f"{token_registry.host}/{name}:1.0" for name in names]


def test_120_repositories_on_one_token_registry_cold_then_warm(
    token_registry: SeededRegistry, many_repositories: list[str], tmp_path: Path
) -> None:
    """Tokens are fetched in batches of scopes; each lookup must use a token that covers its
    repository (the first batch's token was handed to every caller: 401 for the rest)."""
    docker = write_docker_config(
        tmp_path / "docker", {token_registry.host: ("alice", token_registry.password or "")}
    )
    env = clean_env(tmp_path, {"DOCKER_CONFIG": str(docker)})
    log = token_registry.mark()
    assert token_registry.issuer is not None
    tokens = token_registry.issuer.mark()
    cold = run_kmultiarch(["inspect", "--output", "json", *many_repositories], env=env)
    assert cold.returncode == 0, cold.stderr[-2000:]
    entries = cold.json()
    assert [entry["error"] for entry in entries] == [None] * MANY
    assert {tuple(entry["platforms"]) for entry in entries} == {("linux/arm64",)}
    # One batched token request per 50 scopes: 3, not one more per refused token.
    assert len(tokens.requests()) == 3, [len(r.scopes) for r in tokens.requests()]
    # Every manifest is fetched once with a token that works: the only 401s are the first
    # wave, sent before the registry's challenge was known (at most --concurrency of them).
    refused = [r for r in log.requests() if "/manifests/" in r.path and r.status == 401]
    assert len(refused) <= 32
    assert log.count("GET", "/manifests/") == MANY + len(refused)
    warm_log = token_registry.mark()
    warm = run_kmultiarch(["inspect", "--output", "json", *many_repositories], env=env)
    assert warm.returncode == 0, warm.stderr[-2000:]
    assert [entry["source"] for entry in warm.json()] == ["cache"] * MANY
    assert warm_log.requests() == []


def test_gzip_answers_from_a_proxy_are_decoded_and_verified(
    registry: SeededRegistry, tmp_path: Path
) -> None:
    """A proxy or CDN that compresses JSON although identity was asked for: the body is decoded
    before parsing and its digest checked on the decoded bytes."""
    env = clean_env(tmp_path)
    with FaultProxy(registry.url) as proxy:
        proxy.inject("/manifests/", Gzip())
        proxy.inject("/blobs/", Gzip())
        keys = ["multiarch-oci", "single-docker-amd64"]
        references = [
            f"{proxy.host}/{registry.images[key].repository}:{registry.images[key].tag}"
            for key in keys
        ]
        result = run_kmultiarch(["inspect", "--output", "json", *references], env=env)
    assert result.returncode == 0, result.stderr
    for key, entry in zip(keys, result.json(), strict=True):
        assert entry["error"] is None
        assert entry["platforms"] == list(registry.images[key].platforms)
        assert entry["digest"] == registry.images[key].digest
    assert proxy.count(path_contains="/manifests/") >= 2


def test_a_host_written_in_upper_case_authenticates(
    basic_auth_registry: SeededRegistry, tmp_path: Path
) -> None:
    """``LOCALHOST:PORT/app`` with credentials stored under ``localhost:PORT``."""
    port = basic_auth_registry.host.rsplit(":", 1)[1]
    docker = write_docker_config(
        tmp_path / "docker",
        {f"localhost:{port}": ("alice", basic_auth_registry.password or "")},
    )
    env = clean_env(tmp_path, {"DOCKER_CONFIG": str(docker)})
    image = basic_auth_registry.images["multiarch-oci"]
    reference = f"LOCALHOST:{port}/{image.repository}:{image.tag}"
    result = run_kmultiarch(["inspect", "--output", "json", reference], env=env)
    assert result.returncode == 0, result.stderr
    assert result.json()[0]["digest"] == image.digest
