"""Which proxy a registry request goes through, from the environment, as curl and Go decide.

``HTTPS_PROXY`` / ``https_proxy`` for https URLs, ``HTTP_PROXY`` / ``http_proxy`` for http ones
(``ALL_PROXY`` for either when those are unset), except for hosts ``NO_PROXY`` / ``no_proxy``
names: a comma-separated list of host names (matching the host and its subdomains; a leading
dot or ``*.`` means the same), ``host:port``, IP addresses and CIDR ranges, or ``*`` for all.
Loopback hosts never go through a proxy. httpx applies the environment itself only to clients
without a custom transport; kmultiarch injects its own, so it decides here.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import urlsplit

from kmultiarch.registry.endpoints import is_loopback


@dataclass(frozen=True)
class ProxySettings:
    http: str | None = None
    https: str | None = None
    no_proxy: tuple[str, ...] = ()

    @classmethod
    def from_environment(cls, environ: Mapping[str, str]) -> ProxySettings:
        def first(*names: str) -> str | None:
            for name in names:
                value = environ.get(name, "").strip()
                if value:
                    return value
            return None

        fallback = first("ALL_PROXY", "all_proxy")
        no_proxy = first("NO_PROXY", "no_proxy") or ""
        return cls(
            http=first("HTTP_PROXY", "http_proxy") or fallback,
            https=first("HTTPS_PROXY", "https_proxy") or fallback,
            no_proxy=tuple(entry.strip().lower() for entry in no_proxy.split(",") if entry.strip()),
        )

    def proxy_for(self, url: str) -> str | None:
        """The proxy URL for a request to ``url``, or None to go direct."""
        parts = urlsplit(url)
        proxy = self.https if parts.scheme == "https" else self.http
        host = (parts.hostname or "").lower()
        if proxy is None or not host or _is_loopback(host):
            return None
        port = parts.port or (443 if parts.scheme == "https" else 80)
        if any(_excluded(host, port, entry) for entry in self.no_proxy):
            return None
        return proxy if "://" in proxy else f"http://{proxy}"


def _is_loopback(host: str) -> bool:
    # Names under .localhost resolve to loopback too (RFC 6761): never worth a proxy.
    return host.endswith(".localhost") or is_loopback(host)


def _excluded(host: str, port: int, entry: str) -> bool:
    if entry == "*":
        return True
    name, _, entry_port = entry.rpartition(":") if _has_port(entry) else (entry, "", "")
    if entry_port and entry_port != str(port):
        return False
    name = name.strip("[]")
    try:
        network = ipaddress.ip_network(name, strict=False)
    except ValueError:
        network = None
    if network is not None:
        try:
            return ipaddress.ip_address(host) in network
        except ValueError:
            return False
    name = name.removeprefix("*").removeprefix(".")
    return host == name or host.endswith(f".{name}")


def _has_port(entry: str) -> bool:
    if entry.startswith("["):
        return "]:" in entry
    return entry.count(":") == 1
