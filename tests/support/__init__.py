"""Test support: real registries on loopback, a token issuer, and the images seeded into them.

``SeededRegistry`` is what the registry fixtures in ``tests/conftest.py`` hand to tests: a
running ``RegistryServer``, the catalogue it holds (``SEEDED``, with digests), and whatever a
client needs to reach it (credentials, the CA, the token issuer).

Modules:
    registry      RegistryServer (docker-registry process, TLS, basic/token auth, request log)
    token_issuer  TokenIssuer (distribution token realm, access rules, request record)
    seed          the catalogue (SEEDED), content builders, seeding over the HTTP API
"""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from .registry import RegistryServer, RequestLog
from .seed import SEEDED, RegistryAuth, SeededImage
from .token_issuer import TokenIssuer

__all__ = ["SeededRegistry", "write_docker_config"]


@dataclass
class SeededRegistry:
    """A running registry holding the whole catalogue, as the fixtures provide it.

    ``username``/``password`` are set when the registry (or its token issuer) knows a user;
    ``issuer`` is the token realm of a token-auth registry; ``ca_pem`` the CA of a TLS one.
    """

    server: RegistryServer
    images: Mapping[str, SeededImage] = field(default_factory=lambda: SEEDED)
    username: str | None = None
    password: str | None = field(default=None, repr=False)
    issuer: TokenIssuer | None = None

    @property
    def host(self) -> str:
        """``127.0.0.1:<port>``, the registry part of image references."""
        return self.server.host

    @property
    def url(self) -> str:
        return self.server.url

    @property
    def ca_pem(self) -> Path | None:
        return self.server.ca_pem

    def reference(self, key: str) -> str:
        """``host/repository:tag`` of catalogue image ``key``."""
        return self.images[key].reference(self.host)

    def digest_reference(self, key: str) -> str:
        """``host/repository@sha256:...`` of catalogue image ``key``."""
        return self.images[key].digest_reference(self.host)

    def mark(self) -> RequestLog:
        """A request-log mark: ``mark().requests()`` lists what the registry answered since."""
        return self.server.mark()

    def client(self, *, authenticated: bool = False, **kwargs: Any) -> httpx.Client:
        """An httpx client for this registry; with ``authenticated``, as the known user.

        Without it the client still answers Bearer challenges, anonymously, as docker does.
        """
        verify = self.server.verify()
        if authenticated:
            kwargs["auth"] = RegistryAuth(self.username, self.password, verify=verify)
        else:
            kwargs.setdefault("auth", RegistryAuth(verify=verify))
        return self.server.client(**kwargs)


def write_docker_config(directory: Path, auths: Mapping[str, tuple[str, str]]) -> Path:
    """Write ``directory/config.json`` with ``auths`` (host -> (user, password)); return it.

    The ``auth`` value is base64 of ``user:password``, as ``docker login`` stores it; point
    ``DOCKER_CONFIG`` at the returned directory.
    """
    directory.mkdir(parents=True, exist_ok=True)
    config = {
        "auths": {
            host: {"auth": base64.b64encode(f"{user}:{password}".encode()).decode()}
            for host, (user, password) in auths.items()
        }
    }
    (directory / "config.json").write_text(json.dumps(config, indent=2) + "\n")
    return directory
