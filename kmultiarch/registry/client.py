"""The registry client: manifests, blobs and tag lists, authenticated, over one HTTP client.

The concerns live in their own modules, as in go-containerregistry's ``remote/transport``:

- :mod:`~kmultiarch.registry.endpoints`: where a registry is served (mirror first), over which
  scheme, and how its URLs may be shown;
- :mod:`~kmultiarch.registry.challenge`: the ``WWW-Authenticate`` challenge of a 401;
- :mod:`~kmultiarch.registry.credentials`: docker's and podman's credential search;
- :mod:`~kmultiarch.registry.tokens`: Bearer tokens, batched per registry, kept per endpoint;
- :mod:`~kmultiarch.registry.retries` and :mod:`~kmultiarch.registry.decoding`: one request,
  retried, its body decoded within a cap;
- :mod:`~kmultiarch.registry.transport` and :mod:`~kmultiarch.registry.proxies`: the httpx
  client, TLS per registry, environment proxies.

This module ties them: no ``GET /v2/`` ping; the first 401 of an endpoint says whether it wants
Bearer tokens or Basic auth, and later requests send what it wants up front. Credentials go only
to the host they belong to and to the token realm that host names; redirects to another origin
are followed without them, and a 401 from another origin is not answered.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections import Counter
from collections.abc import AsyncIterator, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import urljoin

from kmultiarch.core.findings import count_of
from kmultiarch.core.images.oci import MANIFEST_ACCEPT, MAX_MANIFEST_BYTES
from kmultiarch.core.policy.model import RegistrySettings
from kmultiarch.errors import (
    ManifestError,
    RegistryAuthError,
    RegistryError,
    RegistryTransportError,
)
from kmultiarch.registry.challenge import Challenge, parse_challenge, repository_scope
from kmultiarch.registry.credentials import Credentials, CredentialStore
from kmultiarch.registry.endpoints import Endpoint, endpoints_for, next_page, origin
from kmultiarch.registry.retries import (
    RETRYABLE_STATUS,
    RegistryResponse,
    RetryingSender,
    registry_message,
)
from kmultiarch.registry.settings import ClientSettings
from kmultiarch.registry.tokens import EndpointAuth, Token, fetch_tokens

if TYPE_CHECKING:
    import httpx

log = logging.getLogger("kmultiarch.registry")

MAX_REDIRECTS = 5
TAGS_PAGE_SIZE = 1000
_REDIRECT_STATUS = frozenset({301, 302, 303, 307, 308})


@dataclass(frozen=True)
class TagListBounds:
    """Bounds of one repository's tag list, all its pages together: a registry may ignore
    ``n`` and send page after page, so no bound is per page. The bytes read, the tags kept
    (a page that could hold more values than are still allowed is refused before it is
    parsed, so memory stays within these by construction), the pages asked for, the seconds
    taken."""

    bytes: int = 8 * 1024 * 1024
    tags: int = 50_000
    pages: int = 50
    seconds: float = 60.0


@dataclass
class FetchedBody:
    body: bytes
    content_type: str | None
    digest: str | None
    endpoint: Endpoint


class RegistryClient:
    """Fetches manifests and blobs. Use as ``async with RegistryClient(...) as client``."""

    def __init__(
        self,
        registries: Mapping[str, RegistrySettings],
        settings: ClientSettings | None = None,
        credentials: CredentialStore | None = None,
        *,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self.registries = registries
        self.settings = settings or ClientSettings()
        self.credentials = credentials or CredentialStore()
        self._transport = transport
        self._sender: RetryingSender | None = None
        self._auth: dict[str, EndpointAuth] = {}
        self._planned: dict[str, set[str]] = {}
        self._credential_lookups: dict[str, asyncio.Future[Credentials | None]] = {}
        #: Requests made, by kind: token, manifest-head, manifest-get, blob, tags-list.
        self.requests: Counter[str] = Counter()

    async def __aenter__(self) -> RegistryClient:
        from kmultiarch.registry.transport import build_http_client

        client = build_http_client(self.registries, self.settings, self._transport)
        self._sender = RetryingSender(client, self.settings, self.requests)
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        if self._sender is not None:
            await self._sender.client.aclose()
            self._sender = None

    @property
    def sender(self) -> RetryingSender:
        assert self._sender is not None, "RegistryClient used outside `async with`"
        return self._sender

    def plan(self, repositories: Iterable[tuple[str, str]]) -> None:
        """Announce the (registry, repository) pairs of the run, so tokens are fetched for all
        repositories of a registry in one request."""
        for registry, repository in repositories:
            self._planned.setdefault(registry.lower(), set()).add(repository)

    def endpoints(self, registry: str) -> list[Endpoint]:
        """Where ``registry`` is served; its policy entry is found whatever the case of either."""
        settings = self.registries.get(registry)
        if settings is None:
            folded = registry.lower()
            settings = next(
                (s for host, s in self.registries.items() if host.lower() == folded),
                RegistrySettings(),
            )
        return endpoints_for(registry, settings)

    # -- public operations ------------------------------------------------------------------

    async def head_manifest(
        self, endpoint: Endpoint, repository: str, reference: str, *, source: str
    ) -> str | None:
        """The digest a tag points to now, or None when the registry does not say."""
        response = await self._request(
            "HEAD",
            endpoint,
            repository,
            f"/v2/{repository}/manifests/{reference}",
            kind="manifest-head",
            accept=MANIFEST_ACCEPT,
            cap=0,
            source=source,
        )
        digest = response.headers.get("docker-content-digest")
        return digest.strip() if digest else None

    async def get_manifest(
        self, endpoint: Endpoint, repository: str, reference: str, *, source: str
    ) -> FetchedBody:
        response = await self._request(
            "GET",
            endpoint,
            repository,
            f"/v2/{repository}/manifests/{reference}",
            kind="manifest-get",
            accept=MANIFEST_ACCEPT,
            cap=MAX_MANIFEST_BYTES,
            source=source,
        )
        digest = response.headers.get("docker-content-digest")
        return FetchedBody(
            response.body,
            response.headers.get("content-type"),
            digest.strip() if digest else None,
            endpoint,
        )

    async def get_blob(
        self, endpoint: Endpoint, repository: str, digest: str, *, cap: int, source: str
    ) -> bytes:
        response = await self._request(
            "GET",
            endpoint,
            repository,
            f"/v2/{repository}/blobs/{digest}",
            kind="blob",
            accept="application/json, */*",
            cap=cap,
            source=source,
        )
        return response.body

    @contextlib.asynccontextmanager
    async def stream_blob(
        self, endpoint: Endpoint, repository: str, digest: str, *, source: str
    ) -> AsyncIterator[httpx.Response]:
        """A blob as it arrives (a layer, read only as far as needed, never held whole): the
        response, its body unread; closed on leaving. Authentication, redirects and retries
        of the request are those of every request; the body is the caller's to bound."""
        response = await self._request(
            "GET",
            endpoint,
            repository,
            f"/v2/{repository}/blobs/{digest}",
            kind="blob-stream",
            accept="*/*",
            cap=0,
            source=source,
            stream=True,
        )
        assert response.stream is not None
        try:
            yield response.stream
        finally:
            await response.stream.aclose()

    async def list_tags(
        self,
        endpoint: Endpoint,
        repository: str,
        *,
        source: str,
        page_size: int = TAGS_PAGE_SIZE,
        bounds: TagListBounds = TagListBounds(),
    ) -> list[str]:
        """Every tag of ``repository`` (``GET /v2/<name>/tags/list``), following the ``Link:
        <...>; rel="next"`` header from page to page (distribution paginates with ``n`` and
        ``last``). A list past any of ``bounds`` is a :class:`ManifestError` (a
        :class:`RegistryTransportError` for the time), never a partial list: the nearest newer
        tag may be on the page not read."""
        try:
            async with asyncio.timeout(bounds.seconds):
                return await self._tag_pages(endpoint, repository, source, page_size, bounds)
        except TimeoutError:
            raise RegistryTransportError(
                f"{source}: the tag list did not come whole within {bounds.seconds:g} s"
            ) from None

    async def _tag_pages(
        self,
        endpoint: Endpoint,
        repository: str,
        source: str,
        page_size: int,
        bounds: TagListBounds,
    ) -> list[str]:
        path = f"/v2/{repository}/tags/list?n={page_size}"
        tags: dict[str, None] = {}
        read = 0
        for page in range(bounds.pages):
            room = bounds.bytes - read
            try:
                response = await self._request(
                    "GET",
                    endpoint,
                    repository,
                    path,
                    kind="tags-list",
                    accept="application/json",
                    cap=room,
                    source=source,
                )
            except ManifestError as exc:
                # The page is over what is left of the whole list's bytes (the one cap the
                # request layer knows); its other refusals (a corrupt body) are kept as they are.
                if "-byte cap" not in str(exc):
                    raise
                raise ManifestError(
                    f"{source}: the tag list is over the {bounds.bytes}-byte cap on a whole "
                    f"list ({read} bytes in {count_of(page, 'page')} before)"
                ) from None
            read += len(response.body)
            tags.update(dict.fromkeys(_page_tags(response.body, len(tags), bounds.tags, source)))
            if len(tags) > bounds.tags:
                raise _over_tag_cap(source, bounds.tags)
            following = next_page(response.headers.get("link"), endpoint)
            if following is None or following == path:
                return list(tags)
            path = following
        raise ManifestError(
            f"{source}: the tag list goes on past the {bounds.pages}-page cap "
            f"({len(tags)} tags read)"
        )

    # -- the request pipeline ---------------------------------------------------------------

    async def _request(
        self,
        method: str,
        endpoint: Endpoint,
        repository: str,
        path: str,
        *,
        kind: str,
        accept: str,
        cap: int,
        source: str,
        stream: bool = False,
    ) -> RegistryResponse:
        # No /v2/ ping first: requests go out at once, and the first 401 teaches the endpoint's
        # challenge. On a registry without auth that saves a round trip per run; on one with
        # tokens, concurrent 401s wait for a single batched token request.
        auth = self._auth.setdefault(endpoint.base_url, EndpointAuth())
        authorization = await self._authorization(endpoint, auth, repository, source=source)
        url = endpoint.base_url + path

        async def send(authorization: str | None) -> RegistryResponse:
            return await self._send_following_redirects(
                method, endpoint, url, authorization, kind=kind, accept=accept, cap=cap,
                source=source, stream=stream,
            )  # fmt: skip

        response = await send(authorization)
        if response.status == 401:
            _refuse_foreign_challenge(response, endpoint, source)
            challenge = parse_challenge(response.headers.get("www-authenticate"))
            if challenge is None:
                raise self._status_error(response, endpoint, source=source)
            retry = await self._answer_challenge(
                endpoint, auth, repository, challenge, rejected=authorization, source=source
            )
            if retry is not None:
                response = await send(retry)
        if 200 <= response.status < 300:
            return response
        if response.status == 401:
            _refuse_foreign_challenge(response, endpoint, source)
        raise self._status_error(response, endpoint, source=source)

    async def _answer_challenge(
        self,
        endpoint: Endpoint,
        auth: EndpointAuth,
        repository: str,
        challenge: Challenge,
        *,
        rejected: str | None,
        source: str,
    ) -> str | None:
        """The authorization to retry with after a 401, or None when retrying is pointless."""
        if challenge.scheme == "bearer":
            scope = repository_scope(repository)
            async with auth.lock:
                auth.challenge = challenge
                token = auth.valid_token(scope)
                if token is None or token.header == rejected:
                    if rejected is not None:
                        auth.forget(rejected)  # the registry refused a token we thought valid
                    token = await self._fetch_token(endpoint, auth, scope, source=source)
            return token.header
        if challenge.scheme == "basic":
            auth.challenge = challenge
            if rejected is not None:
                return None  # the credentials themselves were refused
            return await self._authorization(endpoint, auth, repository, source=source)
        raise RegistryAuthError(
            f"{source}: {endpoint.host} asks for unsupported auth scheme {challenge.scheme!r}"
        )

    async def _authorization(
        self, endpoint: Endpoint, auth: EndpointAuth, repository: str, *, source: str
    ) -> str | None:
        """What to send before any 401 is seen on this request: known challenges only."""
        challenge = auth.challenge
        if challenge is None:
            return None
        if challenge.scheme == "basic":
            credentials = await self._credentials(endpoint)
            if credentials is None:
                raise RegistryAuthError(
                    f"{source}: {endpoint.host} requires a login; run `docker login "
                    f"{endpoint.host}` or set DOCKER_CONFIG / REGISTRY_AUTH_FILE"
                    f"{self._credential_problems(endpoint)}"
                )
            return credentials.basic_header()
        if challenge.scheme != "bearer":
            return None
        scope = repository_scope(repository)
        token = auth.valid_token(scope)
        if token is None:
            async with auth.lock:
                token = auth.valid_token(scope)
                if token is None:
                    token = await self._fetch_token(endpoint, auth, scope, source=source)
        return token.header

    async def _fetch_token(
        self, endpoint: Endpoint, auth: EndpointAuth, scope: str, *, source: str
    ) -> Token:
        assert auth.challenge is not None
        wanted = auth.wanted_scopes(
            auth.challenge, scope, self._planned.get(endpoint.registry.lower(), ())
        )
        credentials = await self._credentials(endpoint)
        return await fetch_tokens(
            self.sender, endpoint, auth, wanted, scope, credentials, source=source
        )

    def _credential_problems(self, endpoint: Endpoint) -> str:
        problems = self.credentials.problems_for(endpoint.host)
        return f" ({'; '.join(problems)})" if problems else ""

    async def _credentials(self, endpoint: Endpoint) -> Credentials | None:
        """The host's credentials, looked up once per run in a worker thread: a credential
        helper may take seconds (or hang until its timeout) without holding the event loop,
        and every request for the host waits for the same lookup."""
        if endpoint.credentials is not None:
            return endpoint.credentials
        host = endpoint.host
        lookup = self._credential_lookups.get(host)
        if lookup is None:
            lookup = asyncio.ensure_future(asyncio.to_thread(self.credentials.lookup, host))
            self._credential_lookups[host] = lookup
        return await asyncio.shield(lookup)

    async def _send_following_redirects(
        self,
        method: str,
        endpoint: Endpoint,
        url: str,
        authorization: str | None,
        *,
        kind: str,
        accept: str,
        cap: int,
        source: str,
        stream: bool = False,
    ) -> RegistryResponse:
        for _ in range(MAX_REDIRECTS + 1):
            headers = {"Accept": accept}
            if authorization and origin(url) == endpoint.origin:
                headers["Authorization"] = authorization
            response = await self.sender.send(
                method, url, headers, kind=kind, cap=cap, source=source, stream=stream
            )
            if response.status not in _REDIRECT_STATUS:
                return response
            location = response.headers.get("location")
            if not location:
                return response
            url = urljoin(url, location)
            if origin(url) != endpoint.origin:
                log.debug(
                    "redirect to another origin %s: credentials are not sent there", origin(url)
                )
        raise RegistryTransportError(f"{source}: more than {MAX_REDIRECTS} redirects")

    def _status_error(
        self, response: RegistryResponse, endpoint: Endpoint, *, source: str
    ) -> RegistryError:
        message = registry_message(response)
        detail = f" ({message})" if message else ""
        status = response.status
        if status in (401, 403):
            return RegistryAuthError(
                f"{source}: {endpoint.host} refused access ({status}{detail}); if the image is "
                f"private, run `docker login {endpoint.host}` or set DOCKER_CONFIG / "
                f"REGISTRY_AUTH_FILE{self._credential_problems(endpoint)}"
            )
        if status == 404:
            return RegistryError(
                f"{source}: not found on {endpoint.host}{detail}; check the image name and tag"
            )
        if status in RETRYABLE_STATUS:
            return RegistryTransportError(
                f"{source}: {endpoint.host} answered {status}{detail} after "
                f"{self.settings.retries + 1} attempts"
            )
        return RegistryError(f"{source}: {endpoint.host} answered {status}{detail}")


#: JSON text that starts a value inside a document (after the first): a page with fewer of
#: these than N holds fewer than N values, whatever they are.
_VALUE_STARTS = (b",", b":", b"[", b"{")


def _page_tags(body: bytes, kept: int, cap: int, source: str) -> list[str]:
    """The tags of one page, when ``kept`` tags and the values it may hold stay within ``cap``
    (and a few: ``{"name": ..., "tags": [...]}``), counted on the bytes before ``json.loads``
    builds an object for each value."""
    values = sum(body.count(start) for start in _VALUE_STARTS)
    if kept + values > cap + 8:
        raise _over_tag_cap(source, cap)

    try:
        document = json.loads(body)
    except (ValueError, RecursionError) as exc:
        raise ManifestError(f"{source}: the tag list is not JSON: {exc}") from exc
    page = document.get("tags") if isinstance(document, dict) else None
    return [tag for tag in (page if isinstance(page, list) else []) if isinstance(tag, str)]


def _over_tag_cap(source: str, cap: int) -> ManifestError:
    return ManifestError(f"{source}: the tag list is over the {cap}-tag cap on a whole list")


def _refuse_foreign_challenge(response: RegistryResponse, endpoint: Endpoint, source: str) -> None:
    """A 401 from another origin (a redirect target) is not answered: answering its challenge
    would hand that host this registry's credentials (through a Bearer realm it names)."""
    if origin(response.url) != endpoint.origin:
        raise RegistryAuthError(
            f"{source}: {endpoint.host} redirected to {origin(response.url)}, which asks for "
            f"credentials; kmultiarch sends credentials only to {endpoint.host}"
        )


__all__ = ["Endpoint", "FetchedBody", "RegistryClient", "TagListBounds"]
