"""The Bearer token flow, against ``support.mock_registry`` through ``httpx.MockTransport``:
batches of scopes, a token per caller that covers its repository, reuse, refusal, credentials
sent to the realm only as allowed, and token answers read without ever being shown."""

from __future__ import annotations

import asyncio
import time
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
from support.mock_registry import MockRegistry, answer

from kmultiarch.errors import RegistryAuthError
from kmultiarch.registry.challenge import Challenge
from kmultiarch.registry.client import RegistryClient
from kmultiarch.registry.credentials import Credentials, CredentialStore
from kmultiarch.registry.endpoints import Endpoint
from kmultiarch.registry.settings import ClientSettings
from kmultiarch.registry.tokens import (
    MAX_SCOPES_PER_TOKEN_REQUEST,
    TOKEN_EXPIRY_MARGIN,
    EndpointAuth,
    Token,
    read_token_answer,
    scope_batches,
)

HOST = "registry.test"
ENDPOINT = Endpoint(HOST, f"https://{HOST}")


class FixedStore(CredentialStore):
    """Credentials for one host, as if found in an auth file."""

    def __init__(self, credentials: Credentials | None, host: str = HOST) -> None:
        super().__init__(environ={})
        self._credentials, self._host = credentials, host

    def lookup(self, host: str) -> Credentials | None:
        return self._credentials if host == self._host else None


def _client(registry: MockRegistry, credentials: Credentials | None = None) -> RegistryClient:
    return RegistryClient(
        {},
        ClientSettings(retries=0, backoff=0.0),
        FixedStore(credentials),
        transport=httpx.MockTransport(registry),
    )


def _scopes(request: httpx.Request) -> list[str]:
    return parse_qs(urlsplit(str(request.url)).query).get("scope", [])


def _fetch_all(
    registry: MockRegistry, names: list[str], *, client: RegistryClient | None = None
) -> RegistryClient:
    client = client or _client(registry)

    async def run() -> None:
        client.plan((HOST, name) for name in names)
        async with client:
            await asyncio.gather(
                *(client.get_manifest(ENDPOINT, name, "1.0", source=name) for name in names)
            )

    asyncio.run(run())
    return client


def test_120_repositories_cold_and_concurrent_get_one_batched_round_of_tokens() -> None:
    registry = MockRegistry(auth="bearer")
    names = [f"team/app-{index:03d}" for index in range(120)]
    for name in names:
        registry.add_image(name, "1.0")
    client = _fetch_all(registry, names)
    assert [len(_scopes(r)) for r in registry.token_requests] == [50, 50, 20]
    assert {s for r in registry.token_requests for s in _scopes(r)} == {
        f"repository:{name}:pull" for name in names
    }
    # Each repository: its first request meets a 401 only if it went out before the tokens
    # came; afterwards, every request carries a token that covers it (no 401 after a token).
    authorized = [r for r in registry.requests if "authorization" in r.headers]
    assert len(authorized) == len(names)
    assert client.requests["token"] == 3


def test_warm_tokens_are_reused() -> None:
    registry = MockRegistry(auth="bearer")
    for name in ("a", "b"):
        registry.add_image(name, "1.0")
    client = _client(registry)

    async def run() -> None:
        client.plan([(HOST, "a"), (HOST, "b")])
        async with client:
            for _ in range(3):
                for name in ("a", "b"):
                    await client.get_manifest(ENDPOINT, name, "1.0", source=name)

    asyncio.run(run())
    assert len(registry.token_requests) == 1
    assert len(registry.requests) == 1 + 6  # one challenge, then six authorized requests


def test_a_token_the_registry_refuses_is_dropped_and_fetched_again() -> None:
    registry = MockRegistry(auth="bearer")
    registry.add_image("app", "1.0")
    client = _client(registry)

    async def run() -> None:
        async with client:
            await client.get_manifest(ENDPOINT, "app", "1.0", source="app")
            registry.issued.clear()  # the registry revoked every token
            await client.get_manifest(ENDPOINT, "app", "1.0", source="app")

    asyncio.run(run())
    assert len(registry.token_requests) == 2
    sent = [r.headers.get("authorization") for r in registry.requests]
    # challenge, first token, first token refused, second token
    assert sent[0] is None and sent[1] == sent[2] != sent[3]
    assert sent[3] is not None and sent[3].startswith("Bearer ")


@pytest.mark.parametrize(
    ("credentials", "method", "authorization", "form"),
    [
        (None, "GET", None, None),
        (Credentials("alice", "secret"), "GET", "Basic YWxpY2U6c2VjcmV0", None),
        (
            Credentials("<token>", "refresh-me", identity_token=True),
            "POST",
            None,
            {"grant_type": "refresh_token", "refresh_token": "refresh-me"},
        ),
    ],
)
def test_what_the_token_request_carries(
    credentials: Credentials | None,
    method: str,
    authorization: str | None,
    form: dict[str, str] | None,
) -> None:
    registry = MockRegistry(auth="bearer", users={"alice": "secret"})
    registry.add_image("app", "1.0")
    _fetch_all(registry, ["app"], client=_client(registry, credentials))
    (request,) = registry.token_requests
    assert request.method == method
    assert request.headers.get("authorization") == authorization
    assert parse_qs(urlsplit(str(request.url)).query)["service"] == [HOST]
    if form is not None:
        sent = {k: v[0] for k, v in parse_qs(request.content.decode()).items()}
        assert form.items() <= sent.items()
        assert sent["scope"] == "repository:app:pull"


def test_credentials_never_go_to_a_plain_http_realm_of_an_https_registry() -> None:
    registry = MockRegistry(auth="bearer", realm="http://auth.test/token")
    registry.add_image("app", "1.0")
    with pytest.raises(RegistryAuthError, match=r"over plain HTTP; refusing"):
        _fetch_all(registry, ["app"], client=_client(registry, Credentials("alice", "secret")))
    assert registry.token_requests == []


def test_anonymous_tokens_may_come_from_a_plain_http_realm() -> None:
    registry = MockRegistry(auth="bearer", realm="http://auth.test/token")
    registry.add_image("app", "1.0")
    _fetch_all(registry, ["app"])
    assert len(registry.token_requests) == 1


def test_a_refused_login_says_so_without_the_secret() -> None:
    registry = MockRegistry(auth="bearer", users={"alice": "right"})
    registry.add_image("app", "1.0")
    with pytest.raises(RegistryAuthError) as caught:
        _fetch_all(registry, ["app"], client=_client(registry, Credentials("alice", "wrong")))
    assert "credentials were refused" in str(caught.value)
    assert "wrong" not in str(caught.value)


def test_a_token_endpoint_that_fails_is_retried_then_named() -> None:
    registry = MockRegistry(auth="bearer")
    registry.add_image("app", "1.0")
    registry.fail("/token", answer(503), answer(503))
    client = RegistryClient(
        {},
        ClientSettings(retries=1, backoff=0.0),
        FixedStore(None),
        transport=httpx.MockTransport(registry),
    )
    with pytest.raises(RegistryAuthError, match=r"token endpoint auth\.test answered 503"):
        _fetch_all(registry, ["app"], client=client)
    assert len(registry.token_requests) == 2


@pytest.mark.parametrize(
    ("body", "value", "lifetime"),
    [
        (b'{"token": "abc", "expires_in": 300}', "abc", 300.0),
        (b'{"access_token": "abc"}', "abc", 60.0),
        (b'{"token": "abc", "access_token": "other"}', "abc", 60.0),
        (b'{"token": "abc", "expires_in": 1}', "abc", TOKEN_EXPIRY_MARGIN * 2),
        (b'{"token": "abc", "expires_in": -5}', "abc", TOKEN_EXPIRY_MARGIN * 2),
        (b'{"token": "abc", "expires_in": NaN}', "abc", 60.0),
        (b'{"token": "abc", "expires_in": "120"}', "abc", 120.0),
    ],
)
def test_read_token_answer(body: bytes, value: str, lifetime: float) -> None:
    assert read_token_answer(body, "token endpoint t", source="img") == (value, lifetime)


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        (b"<html>", "unreadable answer"),
        (b"[]", "unreadable answer"),
        (b'{"token": ""}', "sent no token"),
        (b'{"token": 5}', "sent no token"),
        (b'{"token": "abc", "expires_in": "soon"}', "unreadable answer"),
        (b'{"token": "abc\\r\\nX-Injected: 1"}', "not printable ASCII"),
        ('{"token": "abc\u00e9"}'.encode(), "not printable ASCII"),
        (b'{"token": "abc def"}', "not printable ASCII"),
    ],
)
def test_a_bad_token_answer_is_refused_unseen(body: bytes, problem: str) -> None:
    with pytest.raises(RegistryAuthError, match=problem) as caught:
        read_token_answer(body, "token endpoint t", source="img")
    message = str(caught.value)
    assert "abc" not in message and "\r" not in message and "\n" not in message


def test_scope_batches_put_the_callers_scope_first() -> None:
    scopes = frozenset(f"repository:r{index:03d}:pull" for index in range(120))
    needed = "repository:r119:pull"
    batches = scope_batches(scopes, needed)
    assert [len(batch) for batch in batches] == [50, 50, 20]
    assert batches[0][0] == needed
    assert sorted(s for batch in batches for s in batch) == sorted(scopes)
    assert max(map(len, batches)) <= MAX_SCOPES_PER_TOKEN_REQUEST


def test_endpoint_auth_keeps_valid_tokens_only() -> None:
    auth = EndpointAuth()
    now = time.time()
    auth.keep(
        [
            Token(frozenset({"repository:a:pull"}), "old", now - 1),
            Token(frozenset({"repository:a:pull", "repository:b:pull"}), "new", now + 100),
        ]
    )
    assert auth.valid_token("repository:a:pull") is not None
    assert auth.valid_token("repository:a:pull").value == "new"  # type: ignore[union-attr]
    assert auth.valid_token("repository:c:pull") is None
    auth.forget("Bearer new")
    assert auth.valid_token("repository:b:pull") is None
    auth.keep([])
    assert auth.tokens == []  # the expired one is gone too


def test_wanted_scopes_add_the_planned_repositories_without_a_token() -> None:
    auth = EndpointAuth()
    auth.keep([Token(frozenset({"repository:b:pull"}), "t", time.time() + 100)])
    challenge = Challenge("bearer", {"realm": "r", "scope": "repository:a:pull"})
    assert auth.wanted_scopes(challenge, "repository:a:pull", ["a", "b", "c"]) == {
        "repository:a:pull",
        "repository:c:pull",
    }


def test_user_info_in_a_realm_is_never_shown() -> None:
    registry = MockRegistry(auth="bearer", realm="https://bob:hunter2@auth.test/token")
    registry.add_image("app", "1.0")
    with pytest.raises(RegistryAuthError) as caught:
        _fetch_all(registry, ["app"])
    assert "token endpoint auth.test answered" in str(caught.value)
    assert "hunter2" not in str(caught.value) and "bob" not in str(caught.value)


def test_the_batches_of_one_round_are_asked_at_once() -> None:
    """120 repositories: three token requests in flight together, one round trip in all."""
    registry = MockRegistry(auth="bearer")
    names = [f"team/app-{index:03d}" for index in range(120)]
    for name in names:
        registry.add_image(name, "1.0")
    in_flight = 0
    most = 0

    async def handler(request: httpx.Request) -> httpx.Response:
        nonlocal in_flight, most
        if request.url.host == "auth.test":
            in_flight += 1
            most = max(most, in_flight)
            await asyncio.sleep(0.05)
            in_flight -= 1
        return registry(request)

    client = RegistryClient(
        {},
        ClientSettings(retries=0, backoff=0.0),
        FixedStore(None),
        transport=httpx.MockTransport(handler),
    )
    _fetch_all(registry, names, client=client)
    assert len(registry.token_requests) == 3 and most == 3


def test_one_token_round_for_a_registry_written_in_two_cases() -> None:
    registry = MockRegistry(auth="bearer", host=HOST)
    for name in ("a", "b"):
        registry.add_image(name, "1.0")
    client = _client(registry)

    async def run() -> None:
        client.plan([(HOST.upper(), "a"), (HOST, "b")])
        async with client:
            for host, name in ((HOST.upper(), "a"), (HOST, "b")):
                endpoint = client.endpoints(host)[-1]
                await client.get_manifest(endpoint, name, "1.0", source=name)

    asyncio.run(run())
    assert len(registry.token_requests) == 1
    assert sorted(_scopes(registry.token_requests[0])) == ["repository:a:pull", "repository:b:pull"]
