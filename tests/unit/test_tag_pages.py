"""Which ``Link`` targets ``RegistryClient.list_tags`` follows: the next page on the same
endpoint only (credentials never go to another host by way of a Link header)."""

from __future__ import annotations

import httpx
import pytest

from kmultiarch.registry.endpoints import Endpoint
from kmultiarch.registry.endpoints import next_page as _next_page


class _Streamed(httpx.AsyncByteStream):
    """A body that arrives as from a socket (``content=`` bodies are pre-read)."""

    def __init__(self, body: bytes) -> None:
        self._body = body

    async def __aiter__(self):  # type: ignore[no-untyped-def]
        yield self._body


REGISTRY = Endpoint("registry.internal", "https://registry.internal")
MIRROR = Endpoint("docker.io", "https://mirror.internal/prefix", is_mirror=True)


@pytest.mark.parametrize(
    ("endpoint", "link", "expected"),
    [
        (REGISTRY, '</v2/app/tags/list?n=2&last=b>; rel="next"', "/v2/app/tags/list?n=2&last=b"),
        (
            REGISTRY,
            '<https://registry.internal/v2/app/tags/list?last=b>; rel="next"',
            "/v2/app/tags/list?last=b",
        ),
        (REGISTRY, '<https://elsewhere.example/v2/app/tags/list?last=b>; rel="next"', None),
        (REGISTRY, '</v2/app/tags/list?last=a>; rel="prev"', None),
        (
            REGISTRY,
            '</v2/app/tags/list?last=a>; rel="prev", </v2/app/tags/list?last=c>; rel="next"',
            "/v2/app/tags/list?last=c",
        ),
        (REGISTRY, '</somewhere/else>; rel="next"', None),
        (REGISTRY, None, None),
        (MIRROR, '</prefix/v2/app/tags/list?last=b>; rel="next"', "/v2/app/tags/list?last=b"),
    ],
)
def test_next_page(endpoint: Endpoint, link: str | None, expected: str | None) -> None:
    assert _next_page(link, endpoint) == expected


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (b'{"name": "app", "tags": null}', []),
        (b'{"name": "app", "tags": 5}', []),
        (b'{"name": "app", "tags": ["1.0", 2, "1.1", "1.0"]}', ["1.0", "1.1"]),
        (b"[]", []),
    ],
)
def test_odd_tag_list_bodies(body: bytes, expected: list[str]) -> None:
    import asyncio

    from kmultiarch.core.policy import RegistrySettings
    from kmultiarch.registry.client import RegistryClient

    def answer(request: httpx.Request) -> httpx.Response:
        return httpx.Response(
            200, headers={"Content-Type": "application/json"}, stream=_Streamed(body)
        )

    async def run() -> list[str]:
        registries = {"registry.internal": RegistrySettings(insecure=True)}
        transport = httpx.MockTransport(answer)
        async with RegistryClient(registries, transport=transport) as client:
            (endpoint,) = client.endpoints("registry.internal")
            return await client.list_tags(endpoint, "app", source="registry.internal/app")

    assert asyncio.run(run()) == expected


def test_a_tag_list_that_is_not_json_is_a_manifest_error() -> None:
    import asyncio

    from kmultiarch.core.policy import RegistrySettings
    from kmultiarch.errors import ManifestError
    from kmultiarch.registry.client import RegistryClient

    async def run() -> list[str]:
        transport = httpx.MockTransport(
            lambda request: httpx.Response(200, stream=_Streamed(b"<html>"))
        )
        registries = {"registry.internal": RegistrySettings(insecure=True)}
        async with RegistryClient(registries, transport=transport) as client:
            (endpoint,) = client.endpoints("registry.internal")
            return await client.list_tags(endpoint, "app", source="registry.internal/app")

    with pytest.raises(ManifestError, match=r"registry\.internal/app: the tag list is not JSON"):
        asyncio.run(run())
