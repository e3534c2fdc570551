"""One request, retried and redirected, with ``httpx.MockTransport`` tables: which answers are
retried and how long it waits, which problems are raised at once, where credentials go on a
redirect, and how bodies are capped."""

from __future__ import annotations

import asyncio
import email.utils
import time
from collections.abc import Callable

import httpx
import pytest
from support.mock_registry import MockRegistry, answer

from kmultiarch.errors import (
    ManifestError,
    RegistryAuthError,
    RegistryError,
    RegistryTransportError,
)
from kmultiarch.registry import retries
from kmultiarch.registry.client import RegistryClient
from kmultiarch.registry.credentials import Credentials, CredentialStore
from kmultiarch.registry.endpoints import Endpoint
from kmultiarch.registry.retries import parse_retry_after
from kmultiarch.registry.settings import ClientSettings

HOST = "registry.test"
ENDPOINT = Endpoint(HOST, f"https://{HOST}")
PATH = "/v2/app/manifests/1.0"


class FixedStore(CredentialStore):
    def __init__(self) -> None:
        super().__init__(environ={})

    def lookup(self, host: str) -> Credentials | None:
        return Credentials("alice", "secret") if host == HOST else None


@pytest.fixture
def pauses(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The pauses between attempts, recorded instead of slept."""
    recorded: list[float] = []

    async def pause(delay: float) -> None:
        recorded.append(delay)

    monkeypatch.setattr(retries.asyncio, "sleep", pause)
    return recorded


def _get(
    handler: Callable[[httpx.Request], object], *, retries: int = 2, **settings: float
) -> bytes:
    client = RegistryClient(
        {},
        ClientSettings(retries=retries, backoff=0.25, **settings),  # type: ignore[arg-type]
        FixedStore(),
        transport=httpx.MockTransport(handler),  # type: ignore[arg-type]
    )

    async def run() -> bytes:
        async with client:
            return (await client.get_manifest(ENDPOINT, "app", "1.0", source="app:1.0")).body

    return asyncio.run(run())


def _registry(*faults: object) -> MockRegistry:
    registry = MockRegistry()
    registry.add_image("app", "1.0")
    registry.fail(PATH, *faults)  # type: ignore[arg-type]
    return registry


@pytest.mark.parametrize(
    "faults",
    [
        [answer(503)],
        [answer(500), answer(502)],
        [answer(429)],
        [httpx.ConnectError("refused")],
        [httpx.ReadError("")],
        [httpx.RemoteProtocolError("peer closed")],
    ],
)
def test_transient_failures_are_retried(faults: list[object], pauses: list[float]) -> None:
    registry = _registry(*faults)
    assert _get(registry).startswith(b"{")
    assert len(registry.requests_to(PATH)) == len(faults) + 1
    # Exponential backoff with jitter: 0.25 then 0.5, each up to half as much again.
    for attempt, pause in enumerate(pauses):
        assert 0.25 * 2**attempt <= pause <= 0.375 * 2**attempt


@pytest.mark.parametrize(
    ("faults", "error", "message"),
    [
        (
            [answer(503) for _ in range(3)],
            RegistryTransportError,
            r"registry\.test answered 503 after 3 attempts",
        ),
        (
            [httpx.ConnectError("refused")] * 3,
            RegistryTransportError,
            r"did not answer after 3 attempts: ConnectError: refused",
        ),
        (
            [httpx.ReadError("")] * 3,
            RegistryTransportError,
            "the connection broke while the answer was being read",
        ),
        ([answer(400)], RegistryError, r"registry\.test answered 400"),
        ([answer(404)], RegistryError, "not found on registry.test; check the image name"),
        (
            [answer(403, b'{"errors":[{"code":"DENIED","message":"no"}]}')],
            RegistryAuthError,
            r"refused access \(403 \(DENIED: no\)\); if the image is private, run `docker login",
        ),
    ],
)
def test_what_is_given_up_on(
    faults: list[object], error: type[Exception], message: str, pauses: list[float]
) -> None:
    registry = _registry(*faults)
    with pytest.raises(error, match=message):
        _get(registry)
    assert len(registry.requests_to(PATH)) == len(faults)


@pytest.mark.parametrize(
    "fault",
    [
        httpx.ConnectError("[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed"),
        httpx.InvalidURL("Invalid port: '99999'"),
        httpx.UnsupportedProtocol("Request URL has an unsupported protocol 'ftp://'"),
        ValueError("'256.256.256.256' does not appear to be an IPv4 or IPv6 address"),
        OverflowError("getsockaddrarg: port must be 0-65535."),
    ],
)
def test_what_asking_again_cannot_fix_is_not_retried(fault: Exception, pauses: list[float]) -> None:
    registry = _registry(fault)
    with pytest.raises(RegistryTransportError) as caught:
        _get(registry)
    assert len(registry.requests_to(PATH)) == 1
    assert pauses == []
    assert "\n" not in str(caught.value)


def test_retry_after_is_honoured(pauses: list[float]) -> None:
    registry = _registry(answer(429, retry_after="3"))
    _get(registry, max_retry_after=10.0)
    assert pauses == [3.0]


def test_a_retry_after_longer_than_the_cap_fails_at_once(pauses: list[float]) -> None:
    registry = _registry(answer(429, retry_after="3600"))
    with pytest.raises(RegistryTransportError, match=r"asks to retry after 3600 s, longer than"):
        _get(registry, max_retry_after=10.0)
    assert pauses == [] and len(registry.requests_to(PATH)) == 1


def test_backoff_never_exceeds_the_cap(pauses: list[float]) -> None:
    registry = _registry(*[answer(503) for _ in range(6)])
    _get(registry, retries=6, max_retry_after=1.0)
    assert len(pauses) == 6 and max(pauses) <= 1.0


def test_an_attempt_that_trickles_is_cut_by_its_deadline(pauses: list[float]) -> None:
    registry = _registry()

    async def slow(request: httpx.Request) -> httpx.Response:
        await asyncio.wait_for(asyncio.Event().wait(), timeout=5)
        return answer(200)

    registry.fail(PATH, slow, slow)  # type: ignore[arg-type]

    async def handler(request: httpx.Request) -> httpx.Response:
        queued = registry.faults.get(request.url.path)
        if queued:
            return await queued.pop(0)(request)  # type: ignore[operator,no-any-return]
        return registry(request)

    started = time.monotonic()
    with pytest.raises(RegistryTransportError, match=r"no complete answer within 0\.1 s"):
        _get(handler, retries=1, attempt_timeout=0.1)  # type: ignore[arg-type]
    assert time.monotonic() - started < 2


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (None, None),
        ("", None),
        ("5", 5.0),
        (" 12 ", 12.0),
        ("soon", None),
        ("-1", None),
        (email.utils.formatdate(time.time() - 60, usegmt=True), 0.0),
    ],
)
def test_parse_retry_after(value: str | None, expected: float | None) -> None:
    assert parse_retry_after(value) == expected


def test_retry_after_as_an_http_date() -> None:
    later = parse_retry_after(email.utils.formatdate(time.time() + 30, usegmt=True))
    assert later is not None and 25 <= later <= 31


def test_a_declared_length_over_the_cap_is_refused_unread() -> None:
    registry = _registry(answer(200, b"", content_length=str(64 * 1024 * 1024)))
    with pytest.raises(ManifestError, match=r"over the .*-byte cap"):
        _get(registry)


# -- redirects ------------------------------------------------------------------------------


def _redirecting(
    *hops: str, final: httpx.Response | None = None
) -> tuple[MockRegistry, list[httpx.Request]]:
    """The registry wants Basic auth and redirects the manifest through ``hops``."""
    registry = MockRegistry(auth="basic")
    registry.add_image("app", "1.0")
    elsewhere: list[httpx.Request] = []
    registry.fail(PATH, answer(401, www_authenticate='Basic realm="r"'))
    for hop in hops:
        registry.fail(PATH, answer(307, location=hop))

    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.host != HOST:
            elsewhere.append(request)
            return final or answer(200, b"{}")
        return registry(request)

    return registry, elsewhere  # type: ignore[return-value]


def _through(
    registry: MockRegistry, elsewhere: list[httpx.Request]
) -> Callable[[httpx.Request], httpx.Response]:
    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.host != HOST:
            elsewhere.append(request)
            return answer(200, b"{}")
        return registry(request)

    return handler


def test_credentials_are_not_sent_to_another_origin_on_a_redirect(pauses: list[float]) -> None:
    registry, elsewhere = _redirecting("https://blobs.example/app?sig=1")
    assert _get(_through(registry, elsewhere)) == b"{}"
    assert [r.headers.get("authorization") for r in registry.requests] == [
        None,
        "Basic YWxpY2U6c2VjcmV0",
    ]
    (outside,) = elsewhere
    assert "authorization" not in outside.headers


def test_credentials_follow_a_redirect_on_the_same_origin(pauses: list[float]) -> None:
    registry, elsewhere = _redirecting("/v2/app/manifests/sha256-moved")
    registry.fail("/v2/app/manifests/sha256-moved", answer(200, b"{}"))
    assert _get(_through(registry, elsewhere)) == b"{}"
    moved = registry.requests_to("/v2/app/manifests/sha256-moved")
    assert moved[0].headers["authorization"].startswith("Basic ")
    assert elsewhere == []


def test_too_many_redirects(pauses: list[float]) -> None:
    registry, elsewhere = _redirecting(*[PATH] * 7)
    with pytest.raises(RegistryTransportError, match="more than 5 redirects"):
        _get(_through(registry, elsewhere))


@pytest.mark.parametrize(
    "location",
    ["https://registry.example.com:99999/x", "https://256.256.256.256/x", "ftp://files.example/x"],
)
def test_a_redirect_to_a_url_httpx_refuses_is_that_images_problem(
    location: str, pauses: list[float]
) -> None:
    registry, _ = _redirecting(location)

    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.host != HOST:
            # What the real transport raises for these URLs (MockTransport connects nowhere).
            raise (
                httpx.InvalidURL("Invalid port")
                if ":99999" in str(request.url)
                else ValueError("bad address")
            )
        return registry(request)

    with pytest.raises(
        RegistryTransportError, match=r"app:1\.0: (cannot reach|.* redirected to an invalid URL)"
    ):
        _get(handler)
    assert pauses == []  # the same redirect would come again: nothing to retry


def test_a_401_after_a_redirect_to_another_origin_is_not_answered(pauses: list[float]) -> None:
    registry = MockRegistry()
    registry.add_image("app", "1.0")
    registry.fail(PATH, answer(307, location="https://elsewhere.example/app"))

    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.host != HOST:
            return answer(401, www_authenticate='Bearer realm="https://evil.example/token"')
        return registry(request)

    with pytest.raises(RegistryAuthError, match=r"sends credentials only to registry\.test"):
        _get(handler)


def test_a_redirect_without_location_is_the_answer(pauses: list[float]) -> None:
    registry = _registry(answer(302))
    with pytest.raises(RegistryError, match="answered 302"):
        _get(registry)


def test_user_info_in_a_redirect_target_is_never_shown(pauses: list[float]) -> None:
    """A Location with ``user:password@`` (a presigned storage URL, a misconfigured proxy):
    neither the refusal nor a failure to reach it may echo the password."""
    registry = MockRegistry()
    registry.add_image("app", "1.0")
    registry.fail(PATH, answer(307, location="https://bob:hunter2@elsewhere.example/app"))
    registry.fail(PATH, answer(307, location="https://bob:hunter2@down.example/app"))

    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.host == "elsewhere.example":
            return answer(401, www_authenticate='Bearer realm="https://elsewhere.example/t"')
        if request.url.host == "down.example":
            raise httpx.ConnectError("refused")
        return registry(request)

    for expected in (RegistryAuthError, RegistryTransportError):
        with pytest.raises(expected) as caught:
            _get(handler)
        assert "hunter2" not in str(caught.value) and "bob" not in str(caught.value)


def _raw_deflate(body: bytes) -> bytes:
    import zlib

    compressor = zlib.compressobj(wbits=-zlib.MAX_WBITS)
    return compressor.compress(body) + compressor.flush()


@pytest.mark.parametrize(
    ("encoding", "encode"),
    [
        ("gzip", lambda body: __import__("gzip").compress(body)),
        ("x-gzip", lambda body: __import__("gzip").compress(body)),
        ("deflate", lambda body: __import__("zlib").compress(body)),
        # RFC 9110's deflate is zlib-wrapped, but some servers send raw deflate (httpx and
        # browsers accept both).
        ("deflate", _raw_deflate),
        ("identity", lambda body: body),
        (" GZIP ", lambda body: __import__("gzip").compress(body)),
    ],
)
def test_bodies_are_decoded_whatever_their_content_encoding(
    encoding: str, encode: Callable[[bytes], bytes]
) -> None:
    registry = MockRegistry()
    digest = registry.add_image("app", "1.0")
    _, body = registry.manifests[("app", digest)]
    registry.fail(
        PATH,
        answer(
            200,
            encode(body),
            content_type="application/vnd.oci.image.manifest.v1+json",
            content_encoding=encoding,
            docker_content_digest=digest,
        ),
    )
    assert _get(registry) == body


@pytest.mark.parametrize(
    ("encoding", "payload", "problem"),
    [
        ("br", b"\x1b\x00", "unsupported Content-Encoding 'br'"),
        ("gzip", b"not gzip at all", "corrupt compressed body"),
        ("deflate", b"\xff\xfe not deflate", "corrupt compressed body"),
    ],
)
def test_a_body_that_cannot_be_decoded_is_that_images_error(
    encoding: str, payload: bytes, problem: str
) -> None:
    registry = _registry(answer(200, payload, content_encoding=encoding))
    with pytest.raises(ManifestError, match=problem):
        _get(registry)


@pytest.mark.parametrize("wrapped", [True, False])
def test_deflate_in_one_byte_chunks(wrapped: bool) -> None:
    import zlib

    from kmultiarch.registry.decoding import CappedDecoder

    body = b'{"schemaVersion": 2}' * 50
    encoded = zlib.compress(body) if wrapped else _raw_deflate(body)
    decoder = CappedDecoder("deflate", 10_000)
    decoded = b"".join(decoder.feed(encoded[i : i + 1], 10_000) for i in range(len(encoded)))
    assert decoded == body
