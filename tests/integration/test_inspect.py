"""``kmultiarch inspect`` against real registries: every image shape, auth set-up and the cache."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support import SeededRegistry, write_docker_config
from support.cli import clean_env, run_kmultiarch
from support.seed import SEEDED

RESOLVABLE = sorted(key for key in SEEDED if key not in ("schema1",))


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return clean_env(tmp_path)


def write_policy(path: Path, registries: dict[str, dict[str, object]]) -> Path:
    path.write_text(
        json.dumps(
            {
                "apiVersion": "kmultiarch.dev/v1alpha1",
                "kind": "MultiArchPolicy",
                "metadata": {"name": "test"},
                "spec": {"registries": registries},
            }
        )
    )
    return path


def test_every_image_shape_resolves_to_its_platforms(registry: SeededRegistry, env) -> None:
    references = [registry.reference(key) for key in RESOLVABLE]
    result = run_kmultiarch(["inspect", "--output", "json", *references], env=env)
    assert result.returncode == 0, result.stderr
    by_image = {entry["image"]: entry for entry in result.json()}
    for key in RESOLVABLE:
        image = registry.images[key]
        entry = by_image[registry.reference(key)]
        assert entry["platforms"] == list(image.platforms), key
        assert entry["digest"] == image.digest, key
        assert entry["registry"] == registry.host
        assert entry["repository"] == image.repository
        assert entry["error"] is None


def test_text_output_names_reference_digest_and_platforms(registry: SeededRegistry, env) -> None:
    image = registry.images["windows-linux"]
    result = run_kmultiarch(["inspect", registry.reference("windows-linux")], env=env)
    assert result.returncode == 0, result.stderr
    assert registry.reference("windows-linux") in result.stdout
    assert image.digest in result.stdout
    assert "platforms:  linux/amd64, windows/amd64:10.0.17763.6659" in result.stdout


def test_single_platform_image_is_not_assumed_amd64(registry: SeededRegistry, env) -> None:
    result = run_kmultiarch(
        [
            "inspect",
            "-o",
            "json",
            registry.reference("single-oci-arm64"),
            registry.reference("aarch64-config"),
        ],
        env=env,
    )
    assert [entry["platforms"] for entry in result.json()] == [["linux/arm64"], ["linux/arm64"]]


def test_digest_references_resolve_the_digest(registry: SeededRegistry, env) -> None:
    multiarch = registry.images["multiarch-oci"]
    by_digest = f"{registry.host}/{multiarch.repository}@{multiarch.digest}"
    # name:tag@digest: the digest wins even though the tag names another image.
    tag_and_digest = f"{registry.host}/{multiarch.repository}:not-a-tag@{multiarch.digest}"
    result = run_kmultiarch(["inspect", "-o", "json", by_digest, tag_and_digest], env=env)
    assert result.returncode == 0, result.stderr
    for entry in result.json():
        assert entry["digest"] == multiarch.digest
        assert entry["platforms"] == list(multiarch.platforms)


def test_schema1_is_reported_unsupported(registry: SeededRegistry, env) -> None:
    result = run_kmultiarch(
        ["inspect", registry.reference("schema1"), registry.reference("multiarch-oci")], env=env
    )
    assert result.returncode == 1
    assert "schema 1" in result.stderr
    assert registry.reference("schema1") in result.stderr
    # The other image still resolved and printed.
    assert registry.reference("multiarch-oci") in result.stdout


def test_unknown_tag_fails_with_one_line_reason(registry: SeededRegistry, env) -> None:
    missing = f"{registry.host}/multiarch-oci:does-not-exist"
    result = run_kmultiarch(["inspect", missing], env=env)
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1
    assert missing in lines[0] and "not found" in lines[0]
    assert result.stdout == ""


@pytest.mark.parametrize("reference", ["Upper/Case", "nginx:-bad", "a@sha256:123", ""])
def test_invalid_reference_is_a_usage_error(reference: str, env) -> None:
    result = run_kmultiarch(["inspect", reference], env=env)
    assert result.returncode == 2
    assert "invalid image reference" in result.stderr


def test_requests_are_one_get_per_image_and_one_config_per_single_image(
    registry: SeededRegistry, env
) -> None:
    keys = [
        "multiarch-oci",
        "multiarch-docker",
        "single-oci-arm64",
        "single-docker-amd64",
        "armv7-only",
    ]
    mark = registry.mark()
    result = run_kmultiarch(["inspect", *(registry.reference(k) for k in keys)], env=env)
    assert result.returncode == 0, result.stderr
    manifest_gets = mark.count("GET", "/manifests/")
    blob_gets = mark.count("GET", "/blobs/")
    assert manifest_gets == len(keys)
    assert blob_gets == 3  # the three single-platform images
    assert mark.count("HEAD") == 0  # a cold cache goes straight to GET


def test_warm_cache_makes_no_request_and_expired_tags_only_head(
    registry: SeededRegistry, env
) -> None:
    references = [registry.reference(key) for key in RESOLVABLE]
    first = run_kmultiarch(["inspect", "-o", "json", *references], env=env)
    assert first.returncode == 0, first.stderr

    mark = registry.mark()
    warm = run_kmultiarch(["inspect", "-o", "json", *references], env=env)
    assert warm.returncode == 0
    assert warm.json() == [dict(entry, source="cache") for entry in first.json()]
    assert mark.requests() == []

    mark = registry.mark()
    expired = run_kmultiarch(["inspect", "--cache-ttl", "0", "-o", "json", *references], env=env)
    assert expired.returncode == 0, expired.stderr
    assert [e["platforms"] for e in expired.json()] == [e["platforms"] for e in first.json()]
    methods = {
        method for method, path, _ in mark.requests() if "/manifests/" in path or "/blobs/" in path
    }
    assert methods == {"HEAD"}
    assert mark.count("HEAD", "/manifests/") == len(references)


def test_no_cache_leaves_nothing_on_disk(registry: SeededRegistry, env, tmp_path: Path) -> None:
    result = run_kmultiarch(["inspect", "--no-cache", registry.reference("multiarch-oci")], env=env)
    assert result.returncode == 0
    assert not (tmp_path / ".cache" / "kmultiarch").exists()


def test_cache_info_and_clear(registry: SeededRegistry, env, tmp_path: Path) -> None:
    run_kmultiarch(["inspect", registry.reference("multiarch-oci")], env=env)
    cache_dir = tmp_path / ".cache" / "kmultiarch"
    assert (cache_dir.stat().st_mode & 0o777) == 0o700
    info = run_kmultiarch(["cache", "info"], env=env)
    assert str(cache_dir) in info.stdout and "1 digests, 1 tags" in info.stdout
    cleared = run_kmultiarch(["cache", "clear"], env=env)
    # a digest, a tag, and the index's two platform manifests listed (issue 36)
    assert "removed 4 entries" in cleared.stdout
    assert "0 digests, 0 tags" in run_kmultiarch(["cache", "info"], env=env).stdout


def test_basic_auth_needs_and_uses_docker_config(
    basic_auth_registry: SeededRegistry, env, tmp_path: Path
) -> None:
    reference = basic_auth_registry.reference("multiarch-docker")
    anonymous = run_kmultiarch(["inspect", "--no-cache", reference], env=env)
    assert anonymous.returncode == 1
    assert "docker login" in anonymous.stderr

    config_dir = write_docker_config(
        tmp_path / "docker",
        {basic_auth_registry.host: (basic_auth_registry.username, basic_auth_registry.password)},
    )
    logged_in = run_kmultiarch(
        ["inspect", "-v", "--no-cache", "-o", "json", reference],
        env={**env, "DOCKER_CONFIG": str(config_dir)},
    )
    assert logged_in.returncode == 0, logged_in.stderr
    assert logged_in.json()[0]["platforms"] == list(
        basic_auth_registry.images["multiarch-docker"].platforms
    )
    assert basic_auth_registry.password not in logged_in.stdout + logged_in.stderr


def test_wrong_basic_credentials_fail_clearly(
    basic_auth_registry: SeededRegistry, env, tmp_path: Path
) -> None:
    config_dir = write_docker_config(
        tmp_path / "docker", {basic_auth_registry.host: ("alice", "wrong-password")}
    )
    result = run_kmultiarch(
        ["inspect", "--no-cache", basic_auth_registry.reference("multiarch-oci")],
        env={**env, "DOCKER_CONFIG": str(config_dir)},
    )
    assert result.returncode == 1
    assert "refused" in result.stderr
    assert "wrong-password" not in result.stderr


def test_token_auth_fetches_one_token_for_all_repositories(
    token_registry: SeededRegistry, env
) -> None:
    keys = ["multiarch-oci", "multiarch-docker", "single-oci-arm64", "team-app-api"]
    assert token_registry.issuer is not None
    token_mark = token_registry.issuer.mark()
    result = run_kmultiarch(
        ["inspect", "--no-cache", "-o", "json", *(token_registry.reference(k) for k in keys)],
        env=env,
    )
    assert result.returncode == 0, result.stderr
    for entry, key in zip(result.json(), keys, strict=True):
        assert entry["platforms"] == list(token_registry.images[key].platforms)
    token_requests = token_mark.requests()
    assert len(token_requests) == 1
    assert set(token_requests[0].scopes) == {
        f"repository:{token_registry.images[k].repository}:pull" for k in keys
    }
    assert token_requests[0].username is None  # anonymous: no credentials exist


def test_token_auth_private_repository_needs_credentials(
    token_registry: SeededRegistry, env, tmp_path: Path
) -> None:
    reference = token_registry.reference("private-app")
    anonymous = run_kmultiarch(["inspect", "--no-cache", reference], env=env)
    assert anonymous.returncode == 1
    assert "docker login" in anonymous.stderr

    assert token_registry.issuer is not None
    config_dir = write_docker_config(
        tmp_path / "docker",
        {token_registry.host: (token_registry.username, token_registry.password)},
    )
    token_mark = token_registry.issuer.mark()
    logged_in = run_kmultiarch(
        ["inspect", "--no-cache", "-v", "-o", "json", reference],
        env={**env, "DOCKER_CONFIG": str(config_dir)},
    )
    assert logged_in.returncode == 0, logged_in.stderr
    assert logged_in.json()[0]["platforms"] == list(token_registry.images["private-app"].platforms)
    assert [r.username for r in token_mark.requests()] == ["alice"]
    assert token_registry.password not in logged_in.stdout + logged_in.stderr


def test_tls_registry_with_policy_ca(tls_registry: SeededRegistry, env, tmp_path: Path) -> None:
    reference = tls_registry.reference("nested-index")
    untrusted = run_kmultiarch(
        [
            "inspect",
            "--no-cache",
            "--retries",
            "0",
            "--config",
            str(write_policy(tmp_path / "https.yaml", {tls_registry.host: {"insecure": False}})),
            reference,
        ],
        env=env,
    )
    assert untrusted.returncode == 1
    assert "CERTIFICATE_VERIFY_FAILED" in untrusted.stderr
    policy = write_policy(
        tmp_path / "ca.yaml", {tls_registry.host: {"ca": str(tls_registry.ca_pem)}}
    )
    trusted = run_kmultiarch(
        ["inspect", "--no-cache", "--config", str(policy), "-o", "json", reference], env=env
    )
    assert trusted.returncode == 0, trusted.stderr
    assert trusted.json()[0]["platforms"] == list(tls_registry.images["nested-index"].platforms)


def test_mirror_serves_the_repositories_of_another_registry(
    registry: SeededRegistry, env, tmp_path: Path
) -> None:
    policy = write_policy(tmp_path / "mirror.yaml", {"registry.invalid": {"mirror": registry.url}})
    result = run_kmultiarch(
        [
            "inspect",
            "--no-cache",
            "--config",
            str(policy),
            "-o",
            "json",
            "registry.invalid/multiarch-docker:1.0",
        ],
        env=env,
    )
    assert result.returncode == 0, result.stderr
    assert result.json()[0]["platforms"] == list(registry.images["multiarch-docker"].platforms)


def test_policy_errors_name_the_file_and_key(env, tmp_path: Path) -> None:
    policy = tmp_path / "bad.yaml"
    policy.write_text(
        "apiVersion: kmultiarch.dev/v1alpha1\nkind: MultiArchPolicy\n"
        "spec:\n  registries:\n    docker.io:\n      mirrorr: https://x\n"
    )
    result = run_kmultiarch(["inspect", "--config", str(policy), "nginx"], env=env)
    assert result.returncode == 2
    assert str(policy) in result.stderr
    assert "spec.registries.docker.io.mirrorr" in result.stderr
