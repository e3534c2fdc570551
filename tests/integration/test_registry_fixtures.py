"""The test harness itself: real registries answer as kmultiarch's tests assume they do.

Plain httpx only (no kmultiarch code), so a failure here points at the harness, not the tool.
"""

from __future__ import annotations

import json
import ssl
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import jwt
import pytest
from support import SeededRegistry
from support.registry import BasicAuth, LoggedRequest, RegistryServer, RequestLog, TlsFiles
from support.seed import (
    ACCEPT_MANIFESTS,
    DOCKER_MANIFEST_LIST,
    DOCKER_SCHEMA1_SIGNED,
    MODERN_MANIFEST_TYPES,
    OCI_INDEX,
    PRIVATE_REPOSITORY,
    SEEDED,
    PlatformSpec,
    RegistryAuth,
    Seeder,
    oci_image,
    schema1_payload,
    sha256_digest,
)

ACCEPT = {"Accept": ACCEPT_MANIFESTS}
ACCEPT_WITH_SCHEMA1 = {"Accept": f"{ACCEPT_MANIFESTS}, {DOCKER_SCHEMA1_SIGNED}"}
INDEX_TYPES = {OCI_INDEX, DOCKER_MANIFEST_LIST}


# -- an independent oracle for the catalogue's expected platforms ---------------------------


def _normalise(platform: dict[str, Any]) -> str:
    """``os/arch[/variant][:os.version]`` with the normalisations REFERENCE.md lists."""
    arch = {"x86_64": "amd64", "x86-64": "amd64", "aarch64": "arm64"}.get(
        platform["architecture"], platform["architecture"]
    )
    variant = platform.get("variant") or None
    if arch == "arm64" and variant == "v8":
        variant = None
    if arch == "arm" and variant is None:
        variant = "v7"
    text = f"{platform['os']}/{arch}" + (f"/{variant}" if variant else "")
    return text + (f":{platform['os.version']}" if platform.get("os.version") else "")


def _platforms_in_registry(client: httpx.Client, repository: str, reference: str) -> set[str]:
    """Walk an image as stored: indexes (nested), attestations skipped, configs read.

    Also checks that each index entry's platform agrees with its child's config, so the
    catalogue cannot say one thing in the index and another in the image.
    """
    response = client.get(f"/v2/{repository}/manifests/{reference}", headers=ACCEPT_WITH_SCHEMA1)
    response.raise_for_status()
    media_type = response.headers["Content-Type"]
    document = response.json()
    if media_type == DOCKER_SCHEMA1_SIGNED:
        history = json.loads(document["history"][0]["v1Compatibility"])
        return {_normalise({"os": history["os"], "architecture": document["architecture"]})}
    if media_type in INDEX_TYPES:
        found: set[str] = set()
        for entry in document["manifests"]:
            annotations = entry.get("annotations", {})
            if annotations.get("vnd.docker.reference.type") == "attestation-manifest":
                assert entry["platform"] == {"architecture": "unknown", "os": "unknown"}
                continue
            child = _platforms_in_registry(client, repository, entry["digest"])
            if "platform" in entry:
                assert child == {_normalise(entry["platform"])}, entry
            found |= child
        return found
    config = client.get(f"/v2/{repository}/blobs/{document['config']['digest']}")
    config.raise_for_status()
    assert sha256_digest(config.content) == document["config"]["digest"]
    if "artifactType" in document or document["config"]["mediaType"].endswith("empty.v1+json"):
        return set()  # an artifact: no platform
    labels = config.json().get("config", {}).get("Labels") or {}
    if any(key.startswith("operators.operatorframework.io.bundle.") for key in labels):
        return set()  # an OLM bundle: metadata, no program
    return {_normalise(config.json())}


# -- the catalogue in every registry -----------------------------------------------------


@pytest.mark.parametrize("key", sorted(SEEDED))
def test_catalogue_image_served_with_digest_and_media_type(
    registry: SeededRegistry, key: str
) -> None:
    image = registry.images[key]
    with registry.client() as client:
        response = client.get(f"/v2/{image.repository}/manifests/{image.tag}", headers=ACCEPT)
    assert response.status_code == 200
    assert response.headers["Content-Type"] == image.media_type
    assert response.headers["Docker-Content-Digest"] == image.digest
    if image.media_type == DOCKER_SCHEMA1_SIGNED:
        # Distribution names schema 1 by its JWS payload and re-signs it on every GET.
        assert sha256_digest(schema1_payload(response.content)) == image.digest
    else:
        assert sha256_digest(response.content) == image.digest
        assert image.media_type in MODERN_MANIFEST_TYPES


@pytest.mark.parametrize("key", sorted(SEEDED))
def test_catalogue_platforms_match_content(registry: SeededRegistry, key: str) -> None:
    image = registry.images[key]
    assert list(image.platforms) == sorted(image.platforms)
    with registry.client() as client:
        assert _platforms_in_registry(client, image.repository, image.tag) == set(image.platforms)


@pytest.mark.parametrize("fixture", ["basic_auth_registry", "token_registry", "tls_registry"])
def test_every_registry_holds_the_same_catalogue(
    fixture: str, request: pytest.FixtureRequest
) -> None:
    seeded: SeededRegistry = request.getfixturevalue(fixture)
    with seeded.client(authenticated=seeded.username is not None) as client:
        for image in seeded.images.values():
            response = client.head(f"/v2/{image.repository}/manifests/{image.tag}", headers=ACCEPT)
            assert response.status_code == 200, image.key
            assert response.headers["Docker-Content-Digest"] == image.digest, image.key


def test_head_answers_digest_without_body(registry: SeededRegistry) -> None:
    image = registry.images["multiarch-oci"]
    with registry.client() as client:
        response = client.head(f"/v2/{image.repository}/manifests/{image.tag}", headers=ACCEPT)
    assert response.status_code == 200
    assert response.headers["Docker-Content-Digest"] == image.digest
    assert response.content == b""


def test_manifest_list_without_list_accept_gives_amd64_child(registry: SeededRegistry) -> None:
    """The trap REFERENCE.md warns about, reproduced: a narrow Accept hides the other platforms."""
    image = registry.images["multiarch-docker"]
    with registry.client() as client:
        response = client.get(
            f"/v2/{image.repository}/manifests/{image.tag}",
            headers={"Accept": "application/vnd.docker.distribution.manifest.v2+json"},
        )
    assert response.status_code == 200
    assert response.headers["Docker-Content-Digest"] != image.digest
    amd64 = next(
        entry
        for entry in image.manifest.document["manifests"]
        if entry["platform"]["architecture"] == "amd64"
    )
    assert response.headers["Docker-Content-Digest"] == amd64["digest"]


def test_digests_are_deterministic() -> None:
    rebuilt = oci_image(PlatformSpec("linux", "amd64"), "amd64-only-index")
    assert rebuilt.digest == SEEDED["amd64-only-index"].manifest.children[0].digest
    assert len({image.digest for image in SEEDED.values()}) == len(SEEDED)


# -- basic auth ----------------------------------------------------------------------------


def test_basic_auth_registry_requires_credentials(basic_auth_registry: SeededRegistry) -> None:
    image = basic_auth_registry.images["multiarch-oci"]
    path = f"/v2/{image.repository}/manifests/{image.tag}"
    with basic_auth_registry.server.client() as client:
        anonymous = client.get(path, headers=ACCEPT)
        wrong = client.get(path, headers=ACCEPT, auth=("alice", "not-the-password"))
        right = client.get(
            path,
            headers=ACCEPT,
            auth=(basic_auth_registry.username or "", basic_auth_registry.password or ""),
        )
    assert anonymous.status_code == 401
    assert anonymous.headers["WWW-Authenticate"].startswith("Basic realm=")
    assert wrong.status_code == 401
    assert right.status_code == 200
    assert right.headers["Docker-Content-Digest"] == image.digest


# -- token auth ----------------------------------------------------------------------------


def _token(seeded: SeededRegistry, *scopes: str, as_user: bool = False) -> str:
    assert seeded.issuer is not None
    auth = (seeded.username or "", seeded.password or "") if as_user else None
    response = httpx.get(
        seeded.issuer.realm,
        params=[("service", seeded.issuer.service), *(("scope", scope) for scope in scopes)],
        auth=auth,
    )
    response.raise_for_status()
    body = response.json()
    assert body["token"] == body["access_token"]
    assert body["expires_in"] == seeded.issuer.expires_in
    assert body["issued_at"].endswith("Z")
    return str(body["token"])


def test_token_registry_challenges_with_bearer_realm_service_scope(
    token_registry: SeededRegistry,
) -> None:
    assert token_registry.issuer is not None
    image = token_registry.images["multiarch-oci"]
    with token_registry.server.client() as client:
        base = client.get("/v2/")
        manifest = client.get(f"/v2/{image.repository}/manifests/{image.tag}", headers=ACCEPT)
    assert base.status_code == 401
    assert manifest.status_code == 401
    challenge = manifest.headers["WWW-Authenticate"]
    assert challenge == (
        f'Bearer realm="{token_registry.issuer.realm}",'
        f'service="{token_registry.issuer.service}",'
        f'scope="repository:{image.repository}:pull"'
    )


def test_anonymous_token_opens_public_repository(token_registry: SeededRegistry) -> None:
    assert token_registry.issuer is not None
    image = token_registry.images["multiarch-oci"]
    issued = token_registry.issuer.mark()
    token = _token(token_registry, f"repository:{image.repository}:pull")
    with token_registry.server.client() as client:
        response = client.get(
            f"/v2/{image.repository}/manifests/{image.tag}",
            headers={**ACCEPT, "Authorization": f"Bearer {token}"},
        )
    assert response.status_code == 200
    assert response.headers["Docker-Content-Digest"] == image.digest
    [record] = issued.requests()
    assert record.scopes == (f"repository:{image.repository}:pull",)
    assert record.username is None
    assert not record.authorization_sent
    assert record.service == token_registry.issuer.service


def test_private_repository_is_refused_to_anonymous_tokens(token_registry: SeededRegistry) -> None:
    image = token_registry.images["private-app"]
    assert image.repository == PRIVATE_REPOSITORY
    token = _token(token_registry, f"repository:{image.repository}:pull")
    claims = jwt.decode(token, options={"verify_signature": False})
    assert claims["access"] == []  # denied scopes are left out, not an error
    with token_registry.server.client() as client:
        response = client.get(
            f"/v2/{image.repository}/manifests/{image.tag}",
            headers={**ACCEPT, "Authorization": f"Bearer {token}"},
        )
    assert response.status_code == 401
    assert 'error="insufficient_scope"' in response.headers["WWW-Authenticate"]


def test_alice_token_opens_private_repository(token_registry: SeededRegistry) -> None:
    assert token_registry.issuer is not None
    image = token_registry.images["private-app"]
    issued = token_registry.issuer.mark()
    token = _token(token_registry, f"repository:{image.repository}:pull", as_user=True)
    with token_registry.server.client() as client:
        response = client.get(
            f"/v2/{image.repository}/manifests/{image.tag}",
            headers={**ACCEPT, "Authorization": f"Bearer {token}"},
        )
    assert response.status_code == 200
    [record] = issued.requests()
    assert record.username == "alice"
    assert record.authorization_sent


def test_one_token_covers_several_scopes(token_registry: SeededRegistry) -> None:
    token = _token(
        token_registry,
        "repository:multiarch-oci:pull",
        "repository:private/app:pull",
        "repository:team/app/api:pull,push",
    )
    claims = jwt.decode(token, options={"verify_signature": False})
    assert claims["access"] == [
        {"type": "repository", "name": "multiarch-oci", "actions": ["pull"]},
        {"type": "repository", "name": "team/app/api", "actions": ["pull"]},
    ]
    assert token_registry.issuer is not None
    assert claims["aud"] == token_registry.issuer.service
    assert claims["iss"] == token_registry.issuer.name
    assert claims["nbf"] <= claims["iat"] < claims["exp"]


def test_issuer_refuses_wrong_password_and_records_no_secret(
    token_registry: SeededRegistry,
) -> None:
    assert token_registry.issuer is not None
    issued = token_registry.issuer.mark()
    response = httpx.get(
        token_registry.issuer.realm,
        params={"service": token_registry.issuer.service, "scope": "repository:x:pull"},
        auth=("alice", "wrong-password"),
    )
    assert response.status_code == 401
    [record] = issued.requests()
    assert record.status == 401
    assert record.username == "alice"
    assert "wrong-password" not in repr(record)


# -- TLS -----------------------------------------------------------------------------------


def test_tls_registry_trusts_only_the_test_ca(tls_registry: SeededRegistry) -> None:
    assert tls_registry.ca_pem is not None
    assert tls_registry.url.startswith("https://")
    image = tls_registry.images["multiarch-docker"]
    path = f"/v2/{image.repository}/manifests/{image.tag}"
    context = ssl.create_default_context(cafile=str(tls_registry.ca_pem))
    with httpx.Client(base_url=tls_registry.url, verify=context) as client:
        assert client.get(path, headers=ACCEPT).headers["Docker-Content-Digest"] == image.digest
    with (
        httpx.Client(base_url=tls_registry.url) as client,
        pytest.raises(httpx.ConnectError, match="CERTIFICATE_VERIFY_FAILED"),
    ):
        client.get(path, headers=ACCEPT)
    with httpx.Client(
        base_url=f"https://localhost:{tls_registry.server.port}", verify=context
    ) as client:
        assert client.get("/v2/").status_code == 200


def test_tls_and_basic_auth_combine(registry: SeededRegistry, tmp_path: Path) -> None:
    tls, auth = TlsFiles.issue(tmp_path), BasicAuth.create(tmp_path)
    image = registry.images["nested-index"]
    with (
        RegistryServer(
            tmp_path / "server", tls=tls, auth=auth, storage_from=registry.server.storage
        ) as server,
        server.client() as client,
    ):
        assert client.get("/v2/").status_code == 401
        response = client.get(
            f"/v2/{image.repository}/manifests/{image.tag}",
            headers=ACCEPT,
            auth=(auth.username, auth.password),
        )
    assert response.headers["Docker-Content-Digest"] == image.digest
    assert server.url.startswith("https://")


# -- request log ---------------------------------------------------------------------------


def test_request_log_lists_requests_since_mark(
    registry: SeededRegistry, registry_log: RequestLog
) -> None:
    image = registry.images["multiarch-oci"]
    path = f"/v2/{image.repository}/manifests/{image.tag}"
    with registry.client() as client:
        client.head(path, headers=ACCEPT)
        client.get(f"/v2/{image.repository}/manifests/{image.digest}", headers=ACCEPT)
        client.get("/v2/no-such-repo/manifests/latest?x=1", headers=ACCEPT)
    assert registry_log.requests() == [
        ("HEAD", path, 200),
        ("GET", f"/v2/{image.repository}/manifests/{image.digest}", 200),
        ("GET", "/v2/no-such-repo/manifests/latest?x=1", 404),
    ]
    assert registry_log.count("HEAD") == 1
    assert registry_log.count("GET", "/manifests/") == 2
    later = registry.mark()
    assert later.requests() == []
    assert registry.server.requests()[0] == ("GET", "/v2/", 200)  # the first readiness poll


def test_request_log_records_auth_challenges(token_registry: SeededRegistry) -> None:
    log = token_registry.mark()
    image = token_registry.images["single-oci-arm64"]
    with token_registry.client() as client:  # anonymous, answers the Bearer challenge
        response = client.get(f"/v2/{image.repository}/manifests/{image.tag}", headers=ACCEPT)
    assert response.status_code == 200
    path = f"/v2/{image.repository}/manifests/{image.tag}"
    assert log.requests() == [LoggedRequest("GET", path, 401), LoggedRequest("GET", path, 200)]


# -- seeding works through auth ------------------------------------------------------------


@pytest.mark.parametrize("fixture", ["basic_auth_registry", "token_registry"])
def test_seeding_through_auth(fixture: str, request: pytest.FixtureRequest) -> None:
    seeded: SeededRegistry = request.getfixturevalue(fixture)
    manifest = oci_image(PlatformSpec("linux", "riscv64"), f"pushed-through-{fixture}")
    with seeded.client(authenticated=True) as client:
        digest = Seeder(client).push_manifest("harness/pushed", manifest, fixture)
        response = client.get(f"/v2/harness/pushed/manifests/{fixture}", headers=ACCEPT)
    assert digest == manifest.digest
    assert response.headers["Docker-Content-Digest"] == manifest.digest


def test_anonymous_push_is_refused_by_token_registry(token_registry: SeededRegistry) -> None:
    manifest = oci_image(PlatformSpec("linux", "riscv64"), "anonymous-push")
    with (
        token_registry.client() as client,
        pytest.raises(RuntimeError, match="HTTP 401"),
    ):
        Seeder(client).push_manifest("harness/anonymous", manifest, "nope")


def test_registry_auth_sends_no_credentials_to_plain_registry(registry: SeededRegistry) -> None:
    """RegistryAuth only answers challenges: a registry that asks for nothing gets nothing."""
    sent: list[httpx.Request] = []
    with registry.server.client(
        auth=RegistryAuth("alice", "secret"), event_hooks={"request": [sent.append]}
    ) as client:
        client.get("/v2/")
    assert [request.headers.get("Authorization") for request in sent] == [None]


# -- docker config helper --------------------------------------------------------------------


def test_docker_config_helper(
    docker_config: Callable[[str, str, str], Path], basic_auth_registry: SeededRegistry
) -> None:
    directory = docker_config(basic_auth_registry.host, "alice", "pa:ss")
    config = json.loads((directory / "config.json").read_text())
    assert config == {"auths": {basic_auth_registry.host: {"auth": "YWxpY2U6cGE6c3M="}}}
