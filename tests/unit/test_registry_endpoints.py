"""Endpoints and challenges: tables of plain inputs (no network)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kmultiarch.core.policy.model import RegistrySettings
from kmultiarch.registry.challenge import parse_challenge, repository_scope
from kmultiarch.registry.endpoints import (
    endpoints_for,
    is_loopback,
    loggable,
    loggable_or_raw,
    origin,
    strip_user_info,
)


@pytest.mark.parametrize(
    ("registry", "settings", "expected"),
    [
        ("docker.io", RegistrySettings(), ["https://registry-1.docker.io"]),
        ("ghcr.io", RegistrySettings(), ["https://ghcr.io"]),
        ("localhost:5000", RegistrySettings(), ["http://localhost:5000"]),
        # Host names are case-insensitive: lower-cased here, once, for every later comparison.
        ("LOCALHOST:5000", RegistrySettings(), ["http://localhost:5000"]),
        (
            "Registry.Example",
            RegistrySettings(mirror="https://bob:pw@MIRROR.Example:8443/Hub"),
            ["https://mirror.example:8443/Hub", "https://registry.example"],
        ),
        ("127.0.0.1:5000", RegistrySettings(), ["http://127.0.0.1:5000"]),
        ("[::1]:5000", RegistrySettings(), ["http://[::1]:5000"]),
        ("127.0.0.1:5000", RegistrySettings(insecure=False), ["https://127.0.0.1:5000"]),
        ("127.0.0.1:5000", RegistrySettings(ca=Path("ca.pem")), ["https://127.0.0.1:5000"]),
        ("registry.lan", RegistrySettings(insecure=True), ["http://registry.lan"]),
        (
            "docker.io",
            RegistrySettings(mirror="https://mirror.lan/"),
            ["https://mirror.lan", "https://registry-1.docker.io"],
        ),
        (
            "docker.io",
            RegistrySettings(mirror="https://bob:p%40ss@mirror.lan:8443/hub"),
            ["https://mirror.lan:8443/hub", "https://registry-1.docker.io"],
        ),
    ],
)
def test_endpoints_for(registry: str, settings: RegistrySettings, expected: list[str]) -> None:
    endpoints = endpoints_for(registry, settings)
    assert [endpoint.base_url for endpoint in endpoints] == expected
    assert [endpoint.is_mirror for endpoint in endpoints] == [True] * (len(expected) - 1) + [False]
    assert all("@" not in repr(endpoint) for endpoint in endpoints)


def test_a_mirror_user_info_becomes_its_credentials_never_shown() -> None:
    mirror = endpoints_for("docker.io", RegistrySettings(mirror="https://bob:p%40ss@mirror.lan"))[0]
    assert mirror.credentials is not None
    assert (mirror.credentials.username, mirror.credentials.secret) == ("bob", "p@ss")
    assert "p@ss" not in repr(mirror) and "p@ss" not in str(mirror.credentials)


@pytest.mark.parametrize(
    ("base_url", "host", "endpoint_origin"),
    [
        ("https://Registry.Example:5000", "registry.example:5000", "https://registry.example:5000"),
        ("http://LOCALHOST:5000", "localhost:5000", "http://localhost:5000"),
        ("https://mirror.lan/prefix", "mirror.lan", "https://mirror.lan"),
    ],
)
def test_hosts_and_origins_are_lower_case(base_url: str, host: str, endpoint_origin: str) -> None:
    endpoint = endpoints_for("x", RegistrySettings(mirror=base_url))[0]
    assert endpoint.host == host
    assert endpoint.origin == endpoint_origin == origin(base_url)


@pytest.mark.parametrize(
    ("host", "expected"),
    [
        ("localhost", True),
        ("LOCALHOST:5000", True),
        ("127.0.0.1", True),
        ("127.5.6.7:80", True),
        ("::1", True),
        ("[::1]:5000", True),
        ("registry.test", False),
        ("10.0.0.1:5000", False),
        ("localhost.example.com", False),
    ],
)
def test_is_loopback(host: str, expected: bool) -> None:
    assert is_loopback(host) is expected


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("https://bob:secret@mirror.lan/v2/x?token=abc", "https://mirror.lan/v2/x"),
        (
            "http://127.0.0.1:5000/v2/app/manifests/1.0",
            "http://127.0.0.1:5000/v2/app/manifests/1.0",
        ),
        ("https://auth.test/token?scope=repository:app:pull", "https://auth.test/token"),
    ],
)
def test_loggable_urls_hold_no_secret(url: str, shown: str) -> None:
    assert loggable(url) == shown


def test_a_url_that_does_not_parse_is_shown_without_user_info() -> None:
    shown = loggable_or_raw("https://bob:secret@registry.example.com:99999/v2/?q=1")
    assert "secret" not in shown and "bob" not in shown and "q=1" not in shown


@pytest.mark.parametrize(
    ("url", "stripped", "user"),
    [
        ("https://mirror.lan", "https://mirror.lan", None),
        ("https://bob@mirror.lan", "https://mirror.lan", "bob"),
        ("https://bob:pw@[::1]:5000/p", "https://[::1]:5000/p", "bob"),
    ],
)
def test_strip_user_info(url: str, stripped: str, user: str | None) -> None:
    result, credentials = strip_user_info(url)
    assert result == stripped
    assert (credentials.username if credentials else None) == user


@pytest.mark.parametrize(
    ("header", "scheme", "params"),
    [
        (None, None, None),
        ("", None, None),
        (
            'Bearer realm="https://auth.docker.io/token",service="registry.docker.io",'
            'scope="repository:library/nginx:pull"',
            "bearer",
            {
                "realm": "https://auth.docker.io/token",
                "service": "registry.docker.io",
                "scope": "repository:library/nginx:pull",
            },
        ),
        ('Basic realm="Registry Realm"', "basic", {"realm": "Registry Realm"}),
        (
            "BEARER Realm=https://a/t , Service=svc",
            "bearer",
            {"realm": "https://a/t", "service": "svc"},
        ),
        ('Bearer realm="a\\"b"', "bearer", {"realm": 'a"b'}),
        (
            'Bearer realm="https://a/t",scope="repository:a:pull repository:b:pull"',
            "bearer",
            {"realm": "https://a/t", "scope": "repository:a:pull repository:b:pull"},
        ),
        ("Negotiate", "negotiate", {}),
    ],
)
def test_parse_challenge(
    header: str | None, scheme: str | None, params: dict[str, str] | None
) -> None:
    challenge = parse_challenge(header)
    if scheme is None:
        assert challenge is None
        return
    assert challenge is not None
    assert challenge.scheme == scheme
    assert dict(challenge.params) == params
    assert challenge.realm == (params or {}).get("realm", "")


def test_repository_scope() -> None:
    assert repository_scope("library/nginx") == "repository:library/nginx:pull"
