"""Bearer tokens (distribution's token specification): fetched in batches, kept per endpoint.

One token request may carry many ``scope`` parameters: the first 401 of an endpoint fetches
tokens for every repository of the run planned on that registry, at most
:data:`MAX_SCOPES_PER_TOKEN_REQUEST` scopes per request, and each caller gets a token whose
scopes include its own repository. Tokens are reused until shortly before they expire and
dropped when the registry refuses one. Credentials go to the realm only over HTTPS (or on
loopback, or when the registry itself is plain HTTP); a token is never shown, and one that is
not printable ASCII (it would break a header line, or be echoed) is refused unseen.
"""

from __future__ import annotations

import asyncio
import json
import math
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from kmultiarch.errors import RegistryAuthError
from kmultiarch.registry.challenge import Challenge, repository_scope
from kmultiarch.registry.endpoints import Endpoint, is_loopback, loggable_or_raw, shown_host
from kmultiarch.registry.retries import MAX_ERROR_BODY

if TYPE_CHECKING:
    from kmultiarch.registry.credentials import Credentials
    from kmultiarch.registry.retries import RetryingSender

MAX_SCOPES_PER_TOKEN_REQUEST = 50
TOKEN_EXPIRY_MARGIN = 10.0
DEFAULT_TOKEN_LIFETIME = 60.0


@dataclass
class Token:
    scopes: frozenset[str]
    value: str = field(repr=False)
    expires_at: float

    @property
    def header(self) -> str:
        return f"Bearer {self.value}"


@dataclass
class EndpointAuth:
    """What one endpoint asked for, learnt once per run, and the tokens it gave."""

    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    challenge: Challenge | None = None
    tokens: list[Token] = field(default_factory=list)

    def valid_token(self, scope: str) -> Token | None:
        now = time.time()
        for token in self.tokens:
            if scope in token.scopes and token.expires_at > now:
                return token
        return None

    def forget(self, rejected: str) -> None:
        """Drop the token sent as the ``rejected`` Authorization header."""
        self.tokens = [token for token in self.tokens if token.header != rejected]

    def keep(self, tokens: Iterable[Token]) -> None:
        self.tokens = [t for t in self.tokens if t.expires_at > time.time()] + list(tokens)

    def wanted_scopes(
        self, challenge: Challenge, scope: str, planned: Iterable[str]
    ) -> frozenset[str]:
        """This repository's scope (or the one the registry named), plus every planned
        repository that has no valid token yet: one request for the run."""
        wanted = {scope, *challenge.scope.split()} if challenge.scope else {scope}
        for name in sorted(planned):
            planned_scope = repository_scope(name)
            if self.valid_token(planned_scope) is None:
                wanted.add(planned_scope)
        return frozenset(wanted)


def scope_batches(scopes: frozenset[str], needed: str) -> list[list[str]]:
    """``scopes`` in requests of at most MAX_SCOPES_PER_TOKEN_REQUEST, the caller's scope
    (``needed``) in the first, so its token is in the first answer."""
    ordered = [needed, *sorted(scopes - {needed})] if needed in scopes else sorted(scopes)
    size = MAX_SCOPES_PER_TOKEN_REQUEST
    return [ordered[start : start + size] for start in range(0, len(ordered), size)]


async def fetch_tokens(
    sender: RetryingSender,
    endpoint: Endpoint,
    auth: EndpointAuth,
    scopes: frozenset[str],
    needed: str,
    credentials: Credentials | None,
    *,
    source: str,
) -> Token:
    """Tokens for ``scopes``, kept in ``auth``; returns the one whose scopes include
    ``needed``, the caller's."""
    challenge = auth.challenge
    if challenge is None or not challenge.realm:
        raise RegistryAuthError(f"{source}: {endpoint.host} sent a Bearer challenge without realm")
    realm = challenge.realm
    realm_parts = urlsplit(realm)
    if realm_parts.scheme not in ("http", "https"):
        raise RegistryAuthError(
            f"{source}: token realm {loggable_or_raw(realm)!r} is not an http(s) URL"
        )
    if (
        credentials is not None
        and realm_parts.scheme != "https"
        and not (is_loopback(realm_parts.netloc) or endpoint.base_url.startswith("http://"))
    ):
        raise RegistryAuthError(
            f"{source}: {endpoint.host} wants credentials sent to {shown_host(realm)} over "
            "plain HTTP; refusing"
        )
    # The batches at once: 120 repositories cost one round trip, not three.
    tokens = await asyncio.gather(
        *(
            _token_request(
                sender, endpoint, realm, challenge.service, batch, credentials, source=source
            )
            for batch in scope_batches(scopes, needed)
        )
    )
    auth.keep(tokens)
    for token in tokens:
        if needed in token.scopes:
            return token
    return tokens[0]  # the registry named another scope than the repository's own


async def _token_request(
    sender: RetryingSender,
    endpoint: Endpoint,
    realm: str,
    service: str,
    scopes: list[str],
    credentials: Credentials | None,
    *,
    source: str,
) -> Token:
    params: list[tuple[str, str]] = []
    if service:
        params.append(("service", service))
    params.extend(("scope", scope) for scope in scopes)
    headers = {"Accept": "application/json"}
    form: dict[str, str] | None = None
    if credentials is not None and credentials.identity_token:
        method = "POST"
        form = {
            "grant_type": "refresh_token",
            "refresh_token": credentials.secret,
            "client_id": "kmultiarch",
            "service": service,
            "scope": " ".join(scopes),
        }
    else:
        method = "GET"
        if credentials is not None:
            headers["Authorization"] = credentials.basic_header()
    where = f"token endpoint {shown_host(realm)}"
    response = await sender.send(
        method,
        realm,
        headers,
        params=params,
        form=form,
        kind="token",
        cap=MAX_ERROR_BODY,
        source=source,
        label=where,
    )
    if response.status in (401, 403):
        login = " the stored credentials were refused;" if credentials else ""
        raise RegistryAuthError(
            f"{source}: {where} answered {response.status};{login} check "
            f"`docker login {endpoint.host}`"
        )
    if response.status != 200:
        raise RegistryAuthError(f"{source}: {where} answered {response.status}")
    value, lifetime = read_token_answer(response.body, where, source=source)
    return Token(frozenset(scopes), value, time.time() + lifetime - TOKEN_EXPIRY_MARGIN)


def read_token_answer(body: bytes, where: str, *, source: str) -> tuple[str, float]:
    """The token (``token`` or ``access_token``) and its lifetime in seconds (``expires_in``,
    60 by default, at least twice the expiry margin)."""
    try:
        answer = json.loads(body)
        value = answer.get("token") or answer.get("access_token")
        lifetime = float(answer.get("expires_in") or DEFAULT_TOKEN_LIFETIME)
    except (ValueError, TypeError, AttributeError):
        raise RegistryAuthError(f"{source}: {where} sent an unreadable answer") from None
    if not isinstance(value, str) or not value:
        raise RegistryAuthError(f"{source}: {where} sent no token")
    if not value.isascii() or not value.isprintable() or " " in value:
        # A token goes into a header line: control characters or non-ASCII would break it (and
        # an error would echo it). It is refused without being shown.
        raise RegistryAuthError(
            f"{source}: {where} sent a token that is not printable ASCII; refusing to use it"
        )
    if not math.isfinite(lifetime):
        lifetime = DEFAULT_TOKEN_LIFETIME  # NaN would make the token never valid: one per request
    return value, max(lifetime, TOKEN_EXPIRY_MARGIN * 2)
