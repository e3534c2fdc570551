"""The HTTP client of a run and its transports: TLS per registry, environment proxies.

Imported only when a run reaches the network. httpx applies ``HTTPS_PROXY`` and friends only to
clients without a custom transport; kmultiarch always injects its own (:class:`LazyTransport`),
so the proxy of each request is chosen here, from :mod:`kmultiarch.registry.proxies`.
"""

from __future__ import annotations

import os
import ssl
from collections.abc import Mapping

import httpx

from kmultiarch.core.policy.model import RegistrySettings
from kmultiarch.errors import RegistryTransportError
from kmultiarch.registry.endpoints import endpoints_for
from kmultiarch.registry.proxies import ProxySettings
from kmultiarch.registry.settings import ClientSettings


def build_http_client(
    registries: Mapping[str, RegistrySettings],
    settings: ClientSettings,
    transport: httpx.AsyncBaseTransport | None = None,
) -> httpx.AsyncClient:
    """The run's one ``httpx.AsyncClient``: bounded pools and timeouts, no automatic redirects
    (the client follows them itself, without credentials to other origins), a transport with
    the policy's extra CA for each registry that has one. ``transport`` replaces them all
    (tests inject ``httpx.MockTransport``)."""
    from kmultiarch.version import __version__

    timeout = httpx.Timeout(settings.read_timeout, connect=settings.connect_timeout, pool=None)
    limits = httpx.Limits(
        max_connections=max(settings.concurrency * 2, 8), max_keepalive_connections=32
    )
    mounts: dict[str, httpx.AsyncBaseTransport] = {}
    if transport is None:
        for registry, registry_settings in registries.items():
            if registry_settings.ca is None:
                continue
            for endpoint in endpoints_for(registry, registry_settings):
                if endpoint.base_url.startswith("https://") and not endpoint.is_mirror:
                    mounts[f"https://{endpoint.host}"] = LazyTransport(
                        limits, ca_settings=registry_settings
                    )
    return httpx.AsyncClient(
        timeout=timeout,
        limits=limits,
        follow_redirects=False,
        transport=transport or LazyTransport(limits),
        mounts=mounts or None,
        headers={"User-Agent": f"kmultiarch/{__version__}"},
        trust_env=True,
    )


class LazyTransport(httpx.AsyncBaseTransport):
    """Builds its httpx transports on first use, one for plain HTTP and one for HTTPS.

    Loading a CA bundle into an SSL context costs ~130 ms, more than two round trips at 50 ms:
    a run that only talks plain HTTP (loopback, ``insecure: true``) never pays it, and one that
    never reaches the network (warm cache) builds nothing at all.
    """

    def __init__(
        self,
        limits: httpx.Limits,
        ca_settings: RegistrySettings | None = None,
        proxies: ProxySettings | None = None,
    ) -> None:
        self._limits = limits
        self._ca_settings = ca_settings
        self._proxies = proxies or ProxySettings.from_environment(os.environ)
        self._transports: dict[tuple[str, str | None], httpx.AsyncHTTPTransport] = {}

    def _transport_for(self, scheme: str, proxy: str | None) -> httpx.AsyncHTTPTransport:
        transport = self._transports.get((scheme, proxy))
        if transport is None:
            # Plain HTTP never uses the context: an empty one is free; HTTPS verifies.
            verify: ssl.SSLContext | bool = (
                ssl_context_for(self._ca_settings or RegistrySettings())
                if scheme == "https"
                else False
            )
            transport = httpx.AsyncHTTPTransport(
                verify=verify,
                limits=self._limits,
                proxy=httpx.Proxy(proxy) if proxy is not None else None,
            )
            self._transports[(scheme, proxy)] = transport
        return transport

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        proxy = self._proxies.proxy_for(str(request.url))
        transport = self._transport_for(request.url.scheme, proxy)
        return await transport.handle_async_request(request)

    async def __aenter__(self) -> LazyTransport:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        for transport in self._transports.values():
            await transport.aclose()


class UnusableCAError(RegistryTransportError):
    """The policy's ``ca:`` file is no PEM bundle: every request to that registry fails."""


def ssl_context_for(settings: RegistrySettings) -> ssl.SSLContext:
    import certifi

    context = ssl.create_default_context(cafile=certifi.where())
    if settings.ca is not None:
        try:
            context.load_verify_locations(cafile=str(settings.ca))
        except (ssl.SSLError, OSError, ValueError) as exc:
            raise UnusableCAError(
                f"the CA bundle {settings.ca} of the policy cannot be used ({exc}); "
                "give a PEM file of CA certificates"
            ) from None
    return context
