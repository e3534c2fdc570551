"""The registry client's HTTP logic, with ``httpx.MockTransport`` tables: a fake registry and
token endpoint written as plain functions, no network. The real registry covers the same paths
in tests/integration; these pin down what it cannot be made to do."""

from __future__ import annotations

import asyncio
import gzip
import json
from collections.abc import Callable
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest

from kmultiarch.core.images.oci import OCI_MANIFEST
from kmultiarch.core.policy.model import RegistrySettings
from kmultiarch.errors import ManifestError, RegistryAuthError
from kmultiarch.registry.client import Endpoint, RegistryClient
from kmultiarch.registry.credentials import CredentialStore
from kmultiarch.registry.settings import ClientSettings
from kmultiarch.registry.tokens import MAX_SCOPES_PER_TOKEN_REQUEST

REGISTRY = "registry.test"
REALM = "https://auth.test/token"
MANIFEST = json.dumps({"schemaVersion": 2, "mediaType": OCI_MANIFEST, "layers": []}).encode()


class _Streamed(httpx.AsyncByteStream):
    """A body that arrives in chunks, as from a socket (``content=`` bodies are pre-read)."""

    def __init__(self, body: bytes, chunk: int = 16 * 1024) -> None:
        self._body, self._chunk = body, chunk

    async def __aiter__(self):  # type: ignore[no-untyped-def]
        for start in range(0, len(self._body), self._chunk):
            yield self._body[start : start + self._chunk]


def _answer(status: int, body: bytes = b"", **headers: str) -> httpx.Response:
    return httpx.Response(
        status, headers={k.replace("_", "-"): v for k, v in headers.items()}, stream=_Streamed(body)
    )


def _client(handler: Callable[[httpx.Request], httpx.Response], **kwargs: object) -> RegistryClient:
    return RegistryClient(
        {},
        ClientSettings(retries=0, backoff=0.0),
        CredentialStore(environ={"HOME": "/nonexistent"}),
        transport=httpx.MockTransport(handler),
        **kwargs,  # type: ignore[arg-type]
    )


class TokenRegistry:
    """A registry that wants a Bearer token whose scopes include the repository asked for."""

    def __init__(self) -> None:
        self.token_requests: list[list[str]] = []
        self.manifest_requests: list[tuple[str, str | None]] = []
        self.issued: dict[str, set[str]] = {}

    def __call__(self, request: httpx.Request) -> httpx.Response:
        url = urlsplit(str(request.url))
        if url.netloc == "auth.test":
            scopes = parse_qs(url.query).get("scope", [])
            self.token_requests.append(scopes)
            token = f"token-{len(self.token_requests)}"
            self.issued[token] = set(scopes)
            return _answer(200, json.dumps({"token": token, "expires_in": 300}).encode())
        repository = url.path.removeprefix("/v2/").split("/manifests/")[0]
        authorization = request.headers.get("authorization")
        self.manifest_requests.append((repository, authorization))
        token = (authorization or "").removeprefix("Bearer ")
        if f"repository:{repository}:pull" not in self.issued.get(token, set()):
            return _answer(
                401,
                www_authenticate=f'Bearer realm="{REALM}",service="{REGISTRY}",'
                f'scope="repository:{repository}:pull"',
            )
        return _answer(200, MANIFEST, content_type=OCI_MANIFEST)


def test_each_caller_gets_a_token_that_covers_its_repository() -> None:
    """120 planned repositories: three token requests of at most 50 scopes. A caller whose
    scope is not in the first batch must not be handed the first batch's token."""
    registry = TokenRegistry()
    names = [f"team/app-{index:03d}" for index in range(120)]

    async def run() -> None:
        client = _client(registry)
        client.plan((REGISTRY, name) for name in names)
        endpoint = Endpoint(REGISTRY, f"https://{REGISTRY}")
        async with client:
            # The last repository first: its scope sorts into the last batch.
            await client.get_manifest(endpoint, names[-1], "1.0", source=names[-1])
            await asyncio.gather(
                *(client.get_manifest(endpoint, name, "1.0", source=name) for name in names[:-1])
            )

    asyncio.run(run())
    assert [len(scopes) for scopes in registry.token_requests] == [50, 50, 20]
    assert max(len(s) for s in registry.token_requests) <= MAX_SCOPES_PER_TOKEN_REQUEST
    refused = [r for r in registry.manifest_requests if r[1] is not None]
    answered = {repository for repository, _ in registry.manifest_requests}
    assert answered == set(names)
    # One unauthenticated request (the challenge), then every request with the right token.
    assert len(registry.manifest_requests) == len(names) + 1
    assert len(refused) == len(names)


def test_a_gzip_answer_is_decoded_and_capped_after_decoding() -> None:
    """A proxy or CDN may compress JSON although kmultiarch asked for identity."""
    seen_encodings: list[str | None] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen_encodings.append(request.headers.get("accept-encoding"))
        return _answer(
            200, gzip.compress(MANIFEST), content_type=OCI_MANIFEST, content_encoding="gzip"
        )

    async def run() -> bytes:
        async with _client(handler) as client:
            endpoint = Endpoint(REGISTRY, f"https://{REGISTRY}")
            fetched = await client.get_manifest(endpoint, "app", "1.0", source="app")
            return fetched.body

    assert asyncio.run(run()) == MANIFEST
    assert seen_encodings == ["identity"]


def test_a_gzip_bomb_stays_bounded() -> None:
    bomb = gzip.compress(b" " * (64 * 1024 * 1024))

    def handler(request: httpx.Request) -> httpx.Response:
        return _answer(200, bomb, content_encoding="gzip")

    async def run() -> None:
        async with _client(handler) as client:
            endpoint = Endpoint(REGISTRY, f"https://{REGISTRY}")
            await client.get_manifest(endpoint, "app", "1.0", source="app")

    with pytest.raises(ManifestError, match="cap"):
        asyncio.run(run())


def test_basic_credentials_are_found_whatever_the_case_of_the_host(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """``LOCALHOST:5000/app``: the host the user wrote and the one credentials are stored
    under differ in case only; hosts are case-insensitive."""
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"auths": {"localhost:5000": {"auth": "YWxpY2U6c2VjcmV0"}}}))
    store = CredentialStore(environ={"DOCKER_CONFIG": str(tmp_path), "HOME": str(tmp_path)})
    assert store.lookup("LOCALHOST:5000") is not None
    assert store.lookup("localhost:5000") is not None


def test_the_origin_comparison_ignores_case() -> None:
    """Credentials are sent to the endpoint's own origin: an upper-case host is the same one."""
    sent: list[str | None] = []

    def handler(request: httpx.Request) -> httpx.Response:
        sent.append(request.headers.get("authorization"))
        if request.headers.get("authorization") is None:
            return _answer(401, www_authenticate='Basic realm="r"')
        return _answer(200, MANIFEST, content_type=OCI_MANIFEST)

    class Store(CredentialStore):
        def lookup(self, host: str):  # type: ignore[no-untyped-def]
            from kmultiarch.registry.credentials import Credentials

            return Credentials("alice", "secret") if host.lower() == "mirror.test" else None

    async def run() -> None:
        client = RegistryClient(
            {"REGISTRY.TEST": RegistrySettings("https://MIRROR.TEST")},
            ClientSettings(retries=0),
            Store(environ={}),
            transport=httpx.MockTransport(handler),
        )
        async with client:
            endpoint = client.endpoints("REGISTRY.TEST")[0]
            await client.get_manifest(endpoint, "app", "1.0", source="app")

    asyncio.run(run())
    assert sent[-1] is not None and sent[-1].startswith("Basic ")


def test_a_token_endpoint_that_refuses_names_itself() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        if "auth.test" in str(request.url):
            return _answer(401)
        return _answer(401, www_authenticate=f'Bearer realm="{REALM}",service="{REGISTRY}"')

    async def run() -> None:
        async with _client(handler) as client:
            endpoint = Endpoint(REGISTRY, f"https://{REGISTRY}")
            await client.get_manifest(endpoint, "app", "1.0", source="app")

    with pytest.raises(RegistryAuthError, match=r"token endpoint auth\.test answered 401"):
        asyncio.run(run())


def test_the_policy_of_a_registry_applies_whatever_the_case_of_the_reference() -> None:
    """``spec.registries: {registry.test: {mirror: ...}}`` and an image ``REGISTRY.TEST/app``:
    the same registry, so its mirror is asked first."""
    client = RegistryClient({REGISTRY: RegistrySettings(mirror="https://mirror.test")})
    assert [e.base_url for e in client.endpoints(REGISTRY.upper())] == [
        "https://mirror.test",
        f"https://{REGISTRY}",
    ]


def test_a_slow_credential_lookup_holds_neither_the_event_loop_nor_other_registries() -> None:
    """A credential helper that takes a second (Docker Desktop's store starting): it runs once
    for its host, in a worker thread, while another registry's requests go on."""
    import time

    from support.mock_registry import MockRegistry

    from kmultiarch.registry.credentials import Credentials

    private = MockRegistry(host="private.test", auth="basic")
    public = MockRegistry(host="public.test")
    for index in range(5):
        private.add_image(f"app{index}", "1.0")
        public.add_image(f"app{index}", "1.0")
    lookups: list[str] = []

    class SlowStore(CredentialStore):
        def lookup(self, host: str) -> Credentials | None:
            lookups.append(host)
            if host == "private.test":
                time.sleep(1.0)  # blocking, as a helper subprocess is
                return Credentials("alice", "secret")
            return None

    def route(request: httpx.Request) -> httpx.Response:
        return (private if request.url.host == "private.test" else public)(request)

    finished: dict[str, float] = {}

    async def run() -> None:
        client = RegistryClient(
            {},
            ClientSettings(retries=0),
            SlowStore(environ={}),
            transport=httpx.MockTransport(route),
        )
        started = time.monotonic()

        async def fetch(host: str, name: str) -> None:
            endpoint = Endpoint(host, f"https://{host}")
            await client.get_manifest(endpoint, name, "1.0", source=name)
            finished[f"{host}/{name}"] = time.monotonic() - started

        async with client:
            # Every private request meets the Basic challenge and waits for the one lookup.
            await asyncio.gather(
                *(fetch("private.test", f"app{i}") for i in range(5)),
                *(fetch("public.test", f"app{i}") for i in range(5)),
            )

    asyncio.run(run())
    assert lookups == ["private.test"]
    assert max(v for k, v in finished.items() if k.startswith("public.test")) < 0.5
    assert min(v for k, v in finished.items() if k.startswith("private.test")) >= 0.9
    assert len(finished) == 10
