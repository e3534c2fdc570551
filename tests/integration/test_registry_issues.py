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
from support.fault_proxy import (
    ClosedPort,
    FaultProxy,
    Gzip,
    Redirect,
    SetHeaders,
    Status,
)
from support.forward_proxy import ForwardProxy
from support.manifests import deployment, image, write_policy
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


def _mutate_one_per_pod(
    tmp_path: Path, registry: SeededRegistry, references: list[str], spec: dict[str, object]
) -> tuple[int, str, str]:
    """mutate a stream with one Deployment per reference, plus one with a good image."""
    stream = "---\n".join(
        deployment(f"app{index}", [reference]) for index, reference in enumerate(references)
    )
    stream += "---\n" + deployment("good", [image(registry, "multiarch-oci")])
    path = tmp_path / "stream.yaml"
    path.write_text(stream)
    policy = write_policy(tmp_path / "policy.yaml", registry, spec)
    result = run_kmultiarch(
        ["mutate", "--no-cache", "--retries", "0", "--config", str(policy), str(path)],
        env=clean_env(tmp_path),
    )
    return result.returncode, result.stdout, result.stderr


@pytest.mark.parametrize("failure_policy", ["Ignore", "Fail"])
def test_references_httpx_refuses_are_that_images_problem(
    registry: SeededRegistry, tmp_path: Path, failure_policy: str
) -> None:
    """A port over 65535 or an address that is no IPv4 address used to crash the whole run
    (exit 3, 'this is a bug'), whatever the failure policy."""
    bad = ["registry.example.com:99999/x:1", "256.256.256.256/x:1"]
    code, stdout, stderr = _mutate_one_per_pod(
        tmp_path, registry, bad, {"failurePolicy": failure_policy}
    )
    assert "bug" not in stderr and "unexpected" not in stderr, stderr
    for reference in bad:
        assert reference in stderr
    if failure_policy == "Ignore":
        assert code == 0, stderr
        assert "tolerations" in stdout  # the good pod is handled
    else:
        assert code == 1, stderr
        assert stdout == ""


def test_a_redirect_to_an_invalid_url_and_a_bad_realm_are_that_images_problem(
    registry: SeededRegistry, token_registry: SeededRegistry, tmp_path: Path
) -> None:
    key = "multiarch-docker"
    with FaultProxy(registry.url) as redirecting, FaultProxy(token_registry.url) as bad_realm:
        redirecting.inject(
            "/manifests/", Redirect(lambda path: f"http://256.256.256.256:99999{path}")
        )
        bad_realm.inject(
            "/manifests/",
            SetHeaders(
                {"www-authenticate": 'Bearer realm="http://127.0.0.1:99999/token",service="x"'}
            ),
        )
        seeded = registry.images[key]
        references = [
            f"{redirecting.host}/{seeded.repository}:{seeded.tag}",
            f"{bad_realm.host}/{seeded.repository}:{seeded.tag}",
        ]
        code, stdout, stderr = _mutate_one_per_pod(tmp_path, registry, references, {})
    assert code == 0, stderr
    assert "bug" not in stderr and "unexpected" not in stderr, stderr
    assert stderr.count("could not be resolved") == 2, stderr
    assert "tolerations" in stdout


def test_a_ca_that_is_not_pem_is_that_registrys_problem(
    registry: SeededRegistry, tls_registry: SeededRegistry, tmp_path: Path
) -> None:
    bad_ca = tmp_path / "ca.pem"
    bad_ca.write_text("this is not a certificate\n")
    seeded = tls_registry.images["multiarch-oci"]
    code, stdout, stderr = _mutate_one_per_pod(
        tmp_path,
        registry,
        [f"{tls_registry.host}/{seeded.repository}:{seeded.tag}"],
        {"registries": {tls_registry.host: {"ca": str(bad_ca)}}},
    )
    assert code == 0, stderr
    assert "bug" not in stderr and "unexpected" not in stderr, stderr
    assert "could not be resolved" in stderr and str(bad_ca) in stderr, stderr
    assert "tolerations" in stdout


def test_images_of_skipped_and_excluded_pods_are_not_looked_up(
    registry: SeededRegistry, tmp_path: Path
) -> None:
    skipped = deployment("skipped", [image(registry, "single-docker-amd64")]).replace(
        "  namespace: default\n",
        "  namespace: default\n  annotations: {kmultiarch.dev/skip: 'true'}\n",
        1,
    )
    excluded = deployment("excluded", [image(registry, "armv7-only")], namespace="kube-system")
    decided = deployment("decided", [image(registry, "multiarch-oci")])
    path = tmp_path / "stream.yaml"
    path.write_text("---\n".join([skipped, excluded, decided]))
    policy = write_policy(
        tmp_path / "policy.yaml", registry, {"exclude": {"namespaces": ["kube-system"]}}
    )
    log = registry.mark()
    result = run_kmultiarch(
        ["mutate", "--no-cache", "--config", str(policy), str(path)], env=clean_env(tmp_path)
    )
    assert result.returncode == 0, result.stderr
    paths = [request.path for request in log.requests()]
    assert any("/multiarch-oci/" in p for p in paths)
    assert not any("/single-docker-amd64/" in p or "/armv7-only/" in p for p in paths), paths


def test_lock_says_what_the_cache_met(registry: SeededRegistry, tmp_path: Path) -> None:
    """A damaged cache entry is a warning for every command; lock kept it to itself."""
    import sqlite3

    path = tmp_path / "stream.yaml"
    path.write_text(deployment("app", [image(registry, "multiarch-docker")]))
    policy = write_policy(tmp_path / "policy.yaml", registry)
    cache = tmp_path / "cache"
    env = clean_env(tmp_path, {"KMULTIARCH_CACHE_DIR": str(cache)})
    lock = tmp_path / "kmultiarch.lock"
    first = run_kmultiarch(["lock", "--config", str(policy), "-o", str(lock), str(path)], env=env)
    assert first.returncode == 0, first.stderr
    with sqlite3.connect(cache / "cache.db") as connection:
        changed = connection.execute(
            "UPDATE Cache SET mode = 1, value = 'not JSON {' WHERE key LIKE 'platforms:%'"
        ).rowcount
    assert changed >= 1
    again = run_kmultiarch(["lock", "--config", str(policy), "-o", str(lock), str(path)], env=env)
    assert again.returncode == 0, again.stderr
    assert "kmultiarch: warning:" in again.stderr and "cache" in again.stderr, again.stderr


def _helper(directory: Path, name: str, script: str) -> Path:
    """``docker-credential-<name>`` on PATH; it appends each server it is asked for to a log."""
    directory.mkdir(parents=True, exist_ok=True)
    log = directory / f"{name}.log"
    helper = directory / f"docker-credential-{name}"
    helper.write_text(f'#!/bin/sh\nread server\necho "$server" >> "{log}"\n{script}\n')
    helper.chmod(0o755)
    return log


def test_a_hanging_credential_helper_costs_one_timeout_and_blocks_nothing(
    registry: SeededRegistry, token_registry: SeededRegistry, tmp_path: Path
) -> None:
    """Docker Desktop's store while Desktop is off: the helper hangs. It used to cost its full
    timeout per image, one after another, holding the event loop so that healthy requests to
    other registries timed out too. Now: asked once, in a worker thread, bounded; public images
    still resolve anonymously."""
    import os
    import time

    bin_dir = tmp_path / "bin"
    log = _helper(bin_dir, "hang", "sleep 30")
    docker = tmp_path / "docker"
    docker.mkdir()
    (docker / "config.json").write_text(json.dumps({"credHelpers": {token_registry.host: "hang"}}))
    env = clean_env(
        tmp_path,
        {
            "DOCKER_CONFIG": str(docker),
            "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
            "KMULTIARCH_CREDENTIAL_HELPER_TIMEOUT": "2",
        },
    )
    keys = ["multiarch-oci", "multiarch-docker", "single-docker-amd64", "armv7-only"]
    references = [token_registry.reference(key) for key in keys]
    references += [registry.reference(key) for key in keys]
    started = time.monotonic()
    result = run_kmultiarch(
        ["inspect", "--no-cache", "--timeout", "3", "--output", "json", *references], env=env
    )
    elapsed = time.monotonic() - started
    assert result.returncode == 0, result.stderr
    assert [entry["error"] for entry in result.json()] == [None] * len(references)
    assert log.read_text().splitlines() == [token_registry.host], "asked once"
    assert elapsed < 2 + 6, f"{elapsed:.1f} s"


def test_a_credential_helper_that_finds_nothing_lets_the_search_go_on(
    basic_auth_registry: SeededRegistry, tmp_path: Path
) -> None:
    """credHelpers, then credsStore, then auths (docker's order), going on when one finds
    nothing: a credHelpers entry that found nothing stopped the search."""
    import base64
    import os

    bin_dir = tmp_path / "bin"
    log = _helper(bin_dir, "empty", 'echo "credentials not found in native keychain"; exit 1')
    docker = tmp_path / "docker"
    docker.mkdir()
    user = f"alice:{basic_auth_registry.password}".encode()
    (docker / "config.json").write_text(
        json.dumps(
            {
                "credHelpers": {basic_auth_registry.host: "empty"},
                "auths": {basic_auth_registry.host: {"auth": base64.b64encode(user).decode()}},
            }
        )
    )
    env = clean_env(
        tmp_path,
        {"DOCKER_CONFIG": str(docker), "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"},
    )
    result = run_kmultiarch(
        ["inspect", "--output", "json", basic_auth_registry.reference("multiarch-oci")], env=env
    )
    assert result.returncode == 0, result.stderr
    assert result.json()[0]["error"] is None
    assert log.read_text().splitlines() == [basic_auth_registry.host]


def test_a_mirror_password_is_never_shown(tmp_path: Path) -> None:
    """A mirror URL with user:password@ was printed in errors, SARIF and KRM results."""
    password = "s3cret-Pa55"
    with ClosedPort() as registry_port, ClosedPort() as mirror_port:
        reference = f"{registry_port.host}/team/app:1.0"
        mirror_host = mirror_port.host
        policy = {
            "apiVersion": "kmultiarch.dev/v1alpha1",
            "kind": "MultiArchPolicy",
            "spec": {
                "registries": {
                    registry_port.host: {
                        "mirror": f"http://mirror-user:{password}@{mirror_port.host}"
                    }
                }
            },
        }
        policy_path = tmp_path / "policy.yaml"
        policy_path.write_text(json.dumps(policy))
        stream = tmp_path / "stream.yaml"
        stream.write_text(deployment("app", [reference]))
        env = clean_env(tmp_path)
        common = ["--no-cache", "--retries", "0", "--config", str(policy_path)]
        runs = [
            run_kmultiarch(["mutate", *common, str(stream)], env=env),
            run_kmultiarch(["check", *common, "--output", "sarif", str(stream)], env=env),
            run_kmultiarch(["inspect", *common, reference], env=env),
            run_kmultiarch(
                ["fn"],
                env=env,
                stdin=json.dumps(
                    {
                        "apiVersion": "config.kubernetes.io/v1",
                        "kind": "ResourceList",
                        "items": [__import__("yaml").safe_load(stream.read_text())],
                        "functionConfig": policy,
                    }
                ),
            ),
        ]
    # The KRM function hands its functionConfig back as the contract says: the user's own text.
    function_output = __import__("yaml").safe_load(runs[3].stdout)
    shown = [run.stdout + run.stderr for run in runs[:3]]
    shown.append(json.dumps(function_output["results"]) + runs[3].stderr)
    for text in shown:
        assert password not in text and "mirror-user" not in text, text
    assert "could not be resolved" in runs[0].stderr, runs[0].stderr
    assert mirror_host in runs[0].stderr


def test_a_token_with_control_characters_is_refused_unseen(
    token_registry: SeededRegistry, tmp_path: Path
) -> None:
    """A token with CR/LF or non-ASCII bytes ended up in an error line (httpx refuses the
    header and its message quotes it)."""
    assert token_registry.issuer is not None
    hostile = "abc\r\nX-Injected: yes\u00e9"
    with FaultProxy(token_registry.issuer.url) as issuer, FaultProxy(token_registry.url) as proxy:
        issuer.inject("/", Status(200, body=json.dumps({"token": hostile}).encode()))
        proxy.inject(
            "/manifests/",
            SetHeaders({"www-authenticate": f'Bearer realm="{issuer.url}/token",service="x"'}),
        )
        seeded = token_registry.images["multiarch-oci"]
        result = run_kmultiarch(
            [
                "inspect",
                "--no-cache",
                "--retries",
                "0",
                f"{proxy.host}/{seeded.repository}:{seeded.tag}",
            ],
            env=clean_env(tmp_path),
        )
    assert result.returncode == 1
    assert "X-Injected" not in result.stderr and "abc" not in result.stderr, result.stderr
    assert "not printable ASCII" in result.stderr


def test_environment_proxies_are_honoured_and_loopback_is_not_proxied(
    registry: SeededRegistry, tmp_path: Path
) -> None:
    """HTTP_PROXY/NO_PROXY were ignored (a custom transport turns httpx's own handling off).
    The registry is reached through a forward proxy under a name only the proxy knows; the
    same registry on its loopback address goes direct, and NO_PROXY sends a name direct."""
    name = "registry.corp.test:5000"
    key = "multiarch-oci"
    seeded = registry.images[key]
    policy = tmp_path / "policy.yaml"
    policy.write_text(
        json.dumps(
            {
                "apiVersion": "kmultiarch.dev/v1alpha1",
                "kind": "MultiArchPolicy",
                "spec": {"registries": {name: {"insecure": True}}},
            }
        )
    )
    proxied = f"{name}/{seeded.repository}:{seeded.tag}"
    with ForwardProxy({name: registry.host}) as proxy:
        env = {**clean_env(tmp_path), "HTTP_PROXY": proxy.url, "NO_PROXY": "other.test"}
        result = run_kmultiarch(
            [
                "inspect",
                "--no-cache",
                "--config",
                str(policy),
                "-o",
                "json",
                proxied,
                registry.reference(key),
            ],
            env=env,
        )
        assert result.returncode == 0, result.stderr
        assert [entry["platforms"] for entry in result.json()] == [list(seeded.platforms)] * 2
        assert {request.host for request in proxy.seen} == {name}, proxy.seen
        assert any("/manifests/" in request.path for request in proxy.seen)
        seen_before = len(proxy.seen)
        bypass = {**env, "NO_PROXY": "corp.test", "KMULTIARCH_TIMEOUT": "2"}
        direct = run_kmultiarch(
            ["inspect", "--no-cache", "--retries", "0", "--config", str(policy), proxied],
            env=bypass,
        )
        assert direct.returncode == 1  # the name resolves nowhere without the proxy
        assert len(proxy.seen) == seen_before


@pytest.mark.parametrize("stale_if_error", [None, 0])
def test_a_stale_tag_serves_when_its_registry_fails_stale_if_error(
    registry: SeededRegistry, tmp_path: Path, stale_if_error: int | None
) -> None:
    """Once a tag's TTL had passed, an unreachable registry turned a cached image into
    'unresolved' and the render silently dropped the tolerations it wrote an hour ago."""
    seeded = registry.images["multiarch-oci"]
    cache = tmp_path / "cache"
    with FaultProxy(registry.url) as proxy:
        stream = tmp_path / "stream.yaml"
        stream.write_text(deployment("app", [f"{proxy.host}/{seeded.repository}:{seeded.tag}"]))
        spec: dict[str, object] = {} if stale_if_error is None else {"staleIfError": stale_if_error}
        policy = tmp_path / "policy.yaml"
        policy.write_text(
            json.dumps(
                {"apiVersion": "kmultiarch.dev/v1alpha1", "kind": "MultiArchPolicy", "spec": spec}
            )
        )
        env = clean_env(tmp_path, {"KMULTIARCH_CACHE_DIR": str(cache)})
        args = ["mutate", "--retries", "0", "--config", str(policy), str(stream)]
        first = run_kmultiarch(args, env=env)
        assert first.returncode == 0, first.stderr
        assert "tolerations" in first.stdout
        proxy.inject("/v2/", Status(503))
        later = run_kmultiarch([*args, "--cache-ttl", "0"], env=env)
        assert proxy.count(method="HEAD") >= 1, "the tag was revalidated"
    assert later.returncode == 0, later.stderr
    if stale_if_error is None:
        assert later.stdout == first.stdout
        assert "using the answer cached" in later.stderr and "staleIfError: 24 h" in later.stderr
    else:
        assert "tolerations" not in later.stdout
        assert "could not be resolved" in later.stderr


def test_https_registries_are_reached_through_the_https_proxy(
    tls_registry: SeededRegistry, tmp_path: Path
) -> None:
    """HTTPS_PROXY: a CONNECT tunnel through the proxy, TLS end to end (the registry's own
    certificate, checked against the policy's CA); the same registry on loopback goes direct."""
    from support.registry import PROXIED_TLS_NAME

    assert tls_registry.ca_pem is not None
    port = tls_registry.host.rpartition(":")[2]
    name = f"{PROXIED_TLS_NAME}:{port}"
    key = "multiarch-oci"
    seeded = tls_registry.images[key]
    ca = {"ca": str(tls_registry.ca_pem)}
    policy = tmp_path / "policy.yaml"
    policy.write_text(
        json.dumps(
            {
                "apiVersion": "kmultiarch.dev/v1alpha1",
                "kind": "MultiArchPolicy",
                "spec": {"registries": {name: ca, tls_registry.host: ca}},
            }
        )
    )
    proxied = f"{name}/{seeded.repository}:{seeded.tag}"
    with ForwardProxy({name: tls_registry.host}) as proxy:
        env = {**clean_env(tmp_path), "HTTPS_PROXY": proxy.url, "NO_PROXY": "other.test"}
        result = run_kmultiarch(
            ["inspect", "--no-cache", "--config", str(policy), "-o", "json", proxied,
             tls_registry.reference(key)],
            env=env,
        )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert [entry["platforms"] for entry in result.json()] == [list(seeded.platforms)] * 2
    assert {(request.method, request.host) for request in proxy.seen} == {("CONNECT", name)}
