"""Where a registry's API is served, and how its URLs may be shown.

An :class:`Endpoint` is the policy's mirror (same repository paths) or the registry itself,
reached over plain HTTP for ``insecure: true`` and loopback hosts (as Docker does), HTTPS
otherwise. Host names are case-insensitive: an endpoint's :attr:`Endpoint.host` and
:attr:`Endpoint.origin` are lower-cased here, once, and credentials, tokens and origins are
looked up and compared under that form. No URL leaves this layer with its user info or query.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field
from urllib.parse import unquote, urlsplit

from kmultiarch.core.images.reference import DOCKER_HUB
from kmultiarch.core.policy.model import RegistrySettings
from kmultiarch.registry.credentials import Credentials

DOCKER_HUB_API = "registry-1.docker.io"


@dataclass(frozen=True)
class Endpoint:
    """Where the API of a registry (or of its mirror) is served. ``base_url`` never holds
    user info: a mirror URL's ``user:password@`` becomes ``credentials``, sent to that mirror
    only and never shown."""

    registry: str
    base_url: str
    is_mirror: bool = False
    credentials: Credentials | None = field(default=None, repr=False, compare=False)

    @property
    def origin(self) -> str:
        return origin(self.base_url)

    @property
    def host(self) -> str:
        """The host (and port) in lower case."""
        return urlsplit(self.base_url).netloc.lower()


def endpoints_for(registry: str, settings: RegistrySettings) -> list[Endpoint]:
    """The mirror (if any) then the registry itself, with the scheme each is reached over.
    Hosts are lower-cased here, the one place: host names are case-insensitive, and every
    later comparison (origins, credentials, tokens, proxies, CA mounts) takes them from here."""
    endpoints = []
    if settings.mirror:
        base_url, credentials = strip_user_info(settings.mirror.rstrip("/"))
        parts = urlsplit(base_url)
        base_url = parts._replace(scheme=parts.scheme.lower(), netloc=parts.netloc.lower()).geturl()
        endpoints.append(Endpoint(registry, base_url, is_mirror=True, credentials=credentials))
    api_host = DOCKER_HUB_API if registry == DOCKER_HUB else registry.lower()
    if settings.insecure is True:
        scheme = "http"
    elif settings.insecure is False or settings.ca is not None:
        scheme = "https"
    else:
        scheme = "http" if is_loopback(api_host) else "https"
    endpoints.append(Endpoint(registry, f"{scheme}://{api_host}"))
    return endpoints


def strip_user_info(url: str) -> tuple[str, Credentials | None]:
    """``url`` without ``user:password@``, and those credentials (percent-decoded)."""
    parts = urlsplit(url)
    if parts.username is None:
        return url, None
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    netloc = f"{host}:{parts.port}" if parts.port else host
    stripped = parts._replace(netloc=netloc).geturl()
    return stripped, Credentials(unquote(parts.username), unquote(parts.password or ""))


def is_loopback(host: str) -> bool:
    """``host`` (with or without a port) is ``localhost`` or a loopback address."""
    hostname = urlsplit(f"//{host}").hostname or host
    if hostname == "localhost":
        return True
    try:
        return ipaddress.ip_address(hostname).is_loopback
    except ValueError:
        return False


def origin(url: str) -> str:
    """``scheme://host:port`` in lower case, without user info: what "the same server" means
    for credentials, and a form safe to show."""
    parts = urlsplit(url)
    return f"{parts.scheme}://{shown_host(url)}".lower()


def loggable(url: str) -> str:
    """The URL without query or user info: nothing secret goes into a log line or message."""
    parts = urlsplit(url)
    return f"{parts.scheme}://{shown_host(url)}{parts.path}"


def shown_host(url: str) -> str:
    """The netloc of ``url`` without ``user:password@`` (IPv6 hosts keep their brackets)."""
    netloc = urlsplit(url).netloc
    return netloc.rpartition("@")[2]


def loggable_or_raw(url: str) -> str:
    """:func:`loggable`, or a shortened form when the URL does not even parse."""
    try:
        return loggable(url)
    except ValueError:
        return url.split("?", 1)[0].rsplit("@", 1)[-1][:200]


def next_page(link: str | None, endpoint: Endpoint) -> str | None:
    """The path and query of a ``Link`` header's ``rel="next"`` target on the same endpoint
    (relative, as distribution writes it, or absolute on the same origin), else None."""
    if not link:
        return None
    for part in link.split(","):
        target, _, params = part.partition(";")
        if 'rel="next"' not in params.replace(" ", "") and "rel=next" not in params:
            continue
        url = target.strip().removeprefix("<").removesuffix(">")
        parts = urlsplit(url)
        if parts.netloc and f"{parts.scheme}://{parts.netloc}" != endpoint.origin:
            return None  # never follow a link to another host with this endpoint's credentials
        prefix = urlsplit(endpoint.base_url).path.rstrip("/")
        path = parts.path.removeprefix(prefix) if prefix else parts.path
        if not path.startswith("/v2/"):
            return None
        return f"{path}?{parts.query}" if parts.query else path
    return None
