"""Which proxy a request goes through (HTTPS_PROXY, HTTP_PROXY, ALL_PROXY, NO_PROXY)."""

from __future__ import annotations

import pytest

from kmultiarch.registry.proxies import ProxySettings

ENV = {"HTTPS_PROXY": "http://proxy.corp:3128", "HTTP_PROXY": "proxy.corp:8080"}


@pytest.mark.parametrize(
    ("environ", "url", "expected"),
    [
        (ENV, "https://ghcr.io/v2/", "http://proxy.corp:3128"),
        (ENV, "http://registry.corp:5000/v2/", "http://proxy.corp:8080"),
        ({}, "https://ghcr.io/v2/", None),
        ({"https_proxy": "http://lower:1"}, "https://ghcr.io/v2/", "http://lower:1"),
        ({"ALL_PROXY": "http://all:1"}, "http://a.b/v2/", "http://all:1"),
        (ENV, "http://127.0.0.1:5000/v2/", None),
        (ENV, "http://localhost:5000/v2/", None),
        (ENV, "http://[::1]:5000/v2/", None),
        ({**ENV, "NO_PROXY": "corp"}, "http://registry.corp:5000/v2/", None),
        ({**ENV, "NO_PROXY": ".corp"}, "http://registry.corp:5000/v2/", None),
        ({**ENV, "NO_PROXY": "*.corp"}, "http://registry.corp:5000/v2/", None),
        ({**ENV, "NO_PROXY": "registry.corp:5000"}, "http://registry.corp:5000/v2/", None),
        (
            {**ENV, "NO_PROXY": "registry.corp:6000"},
            "http://registry.corp:5000/v2/",
            "http://proxy.corp:8080",
        ),
        ({**ENV, "NO_PROXY": "orp"}, "http://registry.corp:5000/v2/", "http://proxy.corp:8080"),
        ({**ENV, "NO_PROXY": "10.0.0.0/8"}, "http://10.1.2.3/v2/", None),
        ({**ENV, "NO_PROXY": "10.0.0.0/8"}, "http://11.1.2.3/v2/", "http://proxy.corp:8080"),
        ({**ENV, "no_proxy": "*"}, "https://ghcr.io/v2/", None),
        ({**ENV, "NO_PROXY": " ghcr.io , quay.io"}, "https://QUAY.IO/v2/", None),
    ],
)
def test_proxy_for(environ: dict[str, str], url: str, expected: str | None) -> None:
    assert ProxySettings.from_environment(environ).proxy_for(url) == expected
