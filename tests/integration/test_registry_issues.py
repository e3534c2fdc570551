"""Registries as users really have them (issue 11), against the real registry on loopback:
many repositories on one token registry, host names in any case, references and settings
httpx refuses, artifacts in an index, skipped pods, stale answers."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from support import SeededRegistry, write_docker_config
from support.cli import clean_env, run_kmultiarch
from support.fault_proxy import FaultProxy, Gzip, Status
from support.seed import (
    OCI_INDEX,
    OCI_MANIFEST,
    Blob,
    Manifest,
    PlatformSpec,
    Seeder,
    attestation_entry,
    image_manifest,
    oci_artifact,
    oci_image,
)

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


def _index_with_artifacts() -> Manifest:
    """A multi-arch index as registries hold them today: two images, a cosign-style signature
    (an image manifest without platform whose config is no image config), an entry annotated
    only ``vnd.docker.reference.digest``, and an OCI artifact (SBOM) with ``artifactType``."""
    amd64 = oci_image(PlatformSpec("linux", "amd64"), "artifacts-amd64")
    arm64 = oci_image(PlatformSpec("linux", "arm64"), "artifacts-arm64")
    signature_config = Blob("application/vnd.dev.cosign.simplesigning.v1+json", b'{"critical":{}}')
    signature_layer = Blob("application/vnd.dev.cosign.simplesigning.v1+json", b'{"sig":"x"}')
    signature = image_manifest(signature_config, [signature_layer], media_type=OCI_MANIFEST)
    # BuildKit's attestation manifest (config os/architecture "unknown"), listed without
    # platform and without the reference-type annotation.
    reference_only = attestation_entry(amd64).manifest
    sbom = oci_artifact("artifacts-sbom")
    entries = [
        amd64.descriptor(PlatformSpec("linux", "amd64")),
        arm64.descriptor(PlatformSpec("linux", "arm64")),
        signature.descriptor(),
        reference_only.descriptor(annotations={"vnd.docker.reference.digest": amd64.digest}),
        {**sbom.descriptor(), "artifactType": "application/spdx+json"},
    ]
    document = {"schemaVersion": 2, "mediaType": OCI_INDEX, "manifests": entries}
    return Manifest(
        OCI_INDEX,
        json.dumps(document, separators=(",", ":")).encode(),
        children=(amd64, arm64, signature, reference_only, sbom),
    )


def test_artifacts_in_an_index_are_not_platforms(registry: SeededRegistry, tmp_path: Path) -> None:
    """Signatures, SBOMs and attestation references listed in an index are skipped (as
    containerd and skopeo do): they neither fail the image nor count as platforms."""
    with registry.client() as client:
        Seeder(client).push_manifest("artifacts/app", _index_with_artifacts(), "1.0")
    result = run_kmultiarch(
        ["inspect", "--output", "json", f"{registry.host}/artifacts/app:1.0"],
        env=clean_env(tmp_path),
    )
    assert result.returncode == 0, result.stderr
    entry = result.json()[0]
    assert entry["error"] is None
    assert entry["platforms"] == ["linux/amd64", "linux/arm64"]


def test_a_mirror_without_a_child_manifest_falls_back_to_the_registry(
    registry: SeededRegistry, tmp_path: Path
) -> None:
    """Index children were memoised by digest across endpoints, failures included: the
    registry itself was answered with the mirror's 404."""
    image = registry.images["nested-index"]
    inner = image.manifest.document["manifests"][0]["digest"]
    with FaultProxy(registry.url) as mirror:
        mirror.inject(f"/manifests/{inner}", Status(404))
        policy = tmp_path / "policy.yaml"
        policy.write_text(
            json.dumps(
                {
                    "apiVersion": "kmultiarch.dev/v1alpha1",
                    "kind": "MultiArchPolicy",
                    "spec": {"registries": {registry.host: {"mirror": mirror.url}}},
                }
            )
        )
        result = run_kmultiarch(
            [
                "inspect",
                "--no-cache",
                "--config",
                str(policy),
                "-o",
                "json",
                registry.reference("nested-index"),
            ],
            env=clean_env(tmp_path),
        )
        assert mirror.count(path_contains=f"/manifests/{inner}") == 1
    assert result.returncode == 0, result.stderr
    assert result.json()[0]["platforms"] == list(image.platforms)
