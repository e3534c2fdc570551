"""Which ``Link`` targets ``RegistryClient.list_tags`` follows: the next page on the same
endpoint only (credentials never go to another host by way of a Link header)."""

from __future__ import annotations

import json
from collections.abc import Callable

import httpx
import pytest

from kmultiarch.errors import ManifestError
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

    from kmultiarch.core.policy.model import RegistrySettings
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

    from kmultiarch.core.policy.model import RegistrySettings
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


def _pages(
    page: Callable[[int], bytes], *, length: bool = False, endless: bool = True
) -> Callable[[httpx.Request], httpx.Response]:
    """A registry that answers page ``N`` (``?page=N``) with ``page(N)`` and a Link to the
    next one (for ever when ``endless``); with ``length`` the body has a Content-Length."""

    def answer(request: httpx.Request) -> httpx.Response:
        number = int(request.url.params.get("page", "0"))
        headers = {"Content-Type": "application/json"}
        if endless:
            headers["Link"] = f'</v2/app/tags/list?n=1000&page={number + 1}>; rel="next"'
        body = page(number)
        if length:
            headers["Content-Length"] = str(len(body))
        return httpx.Response(200, headers=headers, stream=_Streamed(body))

    return answer


def _list_tags(
    answer: Callable[[httpx.Request], object], bounds: object = None
) -> tuple[list[str] | Exception, int]:
    """What list_tags gives (or raises, a KmultiarchError) and how many pages it asked for."""
    import asyncio

    from kmultiarch.core.policy.model import RegistrySettings
    from kmultiarch.errors import KmultiarchError
    from kmultiarch.registry.client import RegistryClient

    async def run() -> tuple[list[str] | Exception, int]:
        registries = {"registry.internal": RegistrySettings(insecure=True)}
        transport = httpx.MockTransport(answer)  # type: ignore[arg-type]
        async with RegistryClient(registries, transport=transport) as client:
            (endpoint,) = client.endpoints("registry.internal")
            extra = {} if bounds is None else {"bounds": bounds}
            try:
                tags: list[str] | Exception = await client.list_tags(
                    endpoint, "app", source="registry.internal/app", **extra
                )
            except KmultiarchError as exc:
                tags = exc
            return tags, client.requests["tags-list"]

    return asyncio.run(run())


def _tags_page(tags: list[str], padding: int = 0) -> bytes:
    return json.dumps({"name": "app", "tags": tags}).encode() + b" " * padding


@pytest.mark.parametrize("length", [False, True], ids=["streamed", "content-length"])
def test_endless_pages_stop_at_a_byte_cap_on_the_whole_list(length: bool) -> None:
    """The 8 MB cap was per page, for 50 pages: a registry that ignores n and sends 1 MB pages
    for ever was read for 50 MB (and parsed: 943 MB resident after 8 pages of short tags)."""
    answer = _pages(lambda n: _tags_page([f"1.{n}"], padding=1024 * 1024), length=length)
    result, requests = _list_tags(answer)
    assert isinstance(result, ManifestError), result
    assert str(result).startswith(
        "registry.internal/app: the tag list is over the 8388608-byte cap on a whole list"
    )
    assert requests == 8  # 7 pages of just over 1 MB fit, the eighth does not


def test_a_page_with_more_tags_than_the_whole_list_may_have_is_refused_unparsed() -> None:
    """One page (a registry that ignores n) of 60 000 tags was taken whole."""
    tags = [f"1.{number}" for number in range(60_000)]
    result, requests = _list_tags(_pages(lambda n: _tags_page(tags), endless=False))
    assert isinstance(result, ManifestError), result
    assert str(result) == (
        "registry.internal/app: the tag list is over the 50000-tag cap on a whole list"
    )
    assert requests == 1


def test_tags_over_several_pages_add_up_to_the_tag_cap() -> None:
    result, requests = _list_tags(
        _pages(lambda n: _tags_page([f"{n}.{number}" for number in range(10_000)]))
    )
    assert isinstance(result, ManifestError) and "50000-tag cap" in str(result), result
    assert requests == 6


def test_a_list_longer_than_the_page_cap_is_an_error_not_part_of_it() -> None:
    """After 50 pages the list read so far was used: the nearest newer tag may be on page 51."""
    result, requests = _list_tags(_pages(lambda n: _tags_page([f"1.{n}"])))
    assert isinstance(result, ManifestError), result
    assert "goes on past the 50-page cap (50 tags read)" in str(result)
    assert requests == 50


def test_the_whole_tag_list_has_a_deadline() -> None:
    """Each page had its own attempt deadline; a registry answering each page in time could
    hold the run for 50 of them."""
    import time

    from kmultiarch.errors import RegistryTransportError
    from kmultiarch.registry.client import TagListBounds

    async def slow(request: httpx.Request) -> httpx.Response:
        import asyncio

        await asyncio.sleep(0.1)
        return _pages(lambda n: _tags_page([f"1.{n}"]))(request)

    started = time.monotonic()
    result, requests = _list_tags(slow, TagListBounds(seconds=0.5))
    assert isinstance(result, RegistryTransportError), result
    assert str(result) == "registry.internal/app: the tag list did not come whole within 0.5 s"
    assert time.monotonic() - started < 2 and requests <= 6


def test_a_tag_list_nested_too_deep_for_json_is_a_manifest_error() -> None:
    """json.loads raised RecursionError: a crash (exit 3), not a skipped suggestion."""
    result, _ = _list_tags(_pages(lambda n: b'{"tags": ' + b"[" * 5000, endless=False))
    assert isinstance(result, ManifestError), result
    assert "the tag list is not JSON" in str(result)
