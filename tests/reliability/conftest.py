"""Fixtures of the reliability suite: fault proxies in front of the real registries."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from support import SeededRegistry
from support.fault_proxy import FaultProxy


@pytest.fixture
def proxy(registry: SeededRegistry) -> Iterator[FaultProxy]:
    """A fault proxy in front of the plain registry, with no rule yet."""
    with FaultProxy(registry.url) as started:
        yield started


@pytest.fixture
def token_proxies(token_registry: SeededRegistry) -> Iterator[tuple[FaultProxy, FaultProxy]]:
    """(registry proxy, token proxy): the token registry behind the first, whose Bearer
    challenges name the second (in front of the token issuer) as their realm."""
    assert token_registry.issuer is not None
    with (
        FaultProxy(token_registry.issuer.url) as tokens,
        FaultProxy(token_registry.url, rewrite_realm=f"{tokens.url}/token") as registry,
    ):
        yield registry, tokens
