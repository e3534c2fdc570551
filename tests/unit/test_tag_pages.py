"""Which ``Link`` targets ``RegistryClient.list_tags`` follows: the next page on the same
endpoint only (credentials never go to another host by way of a Link header)."""

from __future__ import annotations

import pytest

from kmultiarch.registry.client import Endpoint, _next_page

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
