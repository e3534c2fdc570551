"""The registry HTTP client: one ``httpx.AsyncClient`` per run, bounded and retried.

How a request is made, in order:
- the endpoint: the policy's mirror first (same repository paths), then the registry itself;
  plain HTTP for ``insecure: true`` and loopback hosts (as Docker does), HTTPS otherwise, with
  an extra CA per registry when configured;
- the handshake: no ``GET /v2/`` ping; the first 401 of an endpoint says whether it wants
  Bearer tokens or Basic auth. Bearer tokens are fetched for every repository of the run that
  lives on that endpoint in one request (several ``scope`` parameters), reused until they
  expire, and fetched again only when the registry refuses one;
- retries with exponential backoff on connection errors, timeouts, 5xx and 429 (honouring
  ``Retry-After``, capped); a total deadline per attempt, so a server that trickles bytes cannot
  hold a run; bodies read with a size cap;
- credentials go only to the host they belong to and to the token realm that host names (over
  HTTPS, or loopback); redirects to another origin are followed without them.
"""

from __future__ import annotations

import asyncio
import email.utils
import ipaddress
import logging
import random
import time
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import urljoin, urlsplit

from kmultiarch.core.oci import MANIFEST_ACCEPT, MAX_MANIFEST_BYTES
from kmultiarch.core.policy import RegistrySettings
from kmultiarch.core.reference import DOCKER_HUB
from kmultiarch.errors import (
    ManifestError,
    RegistryAuthError,
    RegistryError,
    RegistryTransportError,
)
from kmultiarch.registry.auth import (
    Challenge,
    Credentials,
    CredentialStore,
    parse_challenge,
    repository_scope,
)
from kmultiarch.registry.settings import ClientSettings

if TYPE_CHECKING:
    import httpx

log = logging.getLogger("kmultiarch.registry")

DOCKER_HUB_API = "registry-1.docker.io"
RETRYABLE_STATUS = frozenset({429, 500, 502, 503, 504})
MAX_REDIRECTS = 5
TAGS_PAGE_SIZE = 1000
MAX_TAG_PAGES = 50
MAX_TAG_LIST_BYTES = 8 * 1024 * 1024
MAX_SCOPES_PER_TOKEN_REQUEST = 50
TOKEN_EXPIRY_MARGIN = 10.0
DEFAULT_TOKEN_LIFETIME = 60.0
MAX_ERROR_BODY = 64 * 1024


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
        return _origin(self.base_url)

    @property
    def host(self) -> str:
        """The host (and port) in lower case: host names are case-insensitive, and credentials,
        tokens and origins are looked up and compared under this form."""
        return urlsplit(self.base_url).netloc.lower()


@dataclass
class FetchedBody:
    body: bytes
    content_type: str | None
    digest: str | None
    endpoint: Endpoint


@dataclass
class _Token:
    scopes: frozenset[str]
    value: str = field(repr=False)
    expires_at: float


@dataclass
class _EndpointAuth:
    """What one endpoint asked for, learnt once per run."""

    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    challenge: Challenge | None = None
    tokens: list[_Token] = field(default_factory=list)


def _without_user_info(url: str) -> tuple[str, Credentials | None]:
    """``url`` without ``user:password@``, and those credentials (percent-decoded)."""
    from urllib.parse import unquote

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
    hostname = urlsplit(f"//{host}").hostname or host
    if hostname == "localhost":
        return True
    try:
        return ipaddress.ip_address(hostname).is_loopback
    except ValueError:
        return False


def endpoints_for(registry: str, settings: RegistrySettings) -> list[Endpoint]:
    """The mirror (if any) then the registry itself, with the scheme each is reached over."""
    endpoints = []
    if settings.mirror:
        base_url, credentials = _without_user_info(settings.mirror.rstrip("/"))
        endpoints.append(Endpoint(registry, base_url, is_mirror=True, credentials=credentials))
    api_host = DOCKER_HUB_API if registry == DOCKER_HUB else registry
    if settings.insecure is True:
        scheme = "http"
    elif settings.insecure is False or settings.ca is not None:
        scheme = "https"
    else:
        scheme = "http" if is_loopback(api_host) else "https"
    endpoints.append(Endpoint(registry, f"{scheme}://{api_host}"))
    return endpoints


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
        self._client: httpx.AsyncClient | None = None
        self._auth: dict[str, _EndpointAuth] = {}
        self._planned: dict[str, set[str]] = {}
        self._credential_lookups: dict[str, asyncio.Future[Credentials | None]] = {}
        #: Requests made, by kind: token, manifest-head, manifest-get, blob.
        self.requests: Counter[str] = Counter()

    async def __aenter__(self) -> RegistryClient:
        import httpx

        from kmultiarch.registry.transport import LazyTransport

        timeout = httpx.Timeout(
            self.settings.read_timeout, connect=self.settings.connect_timeout, pool=None
        )
        limits = httpx.Limits(
            max_connections=max(self.settings.concurrency * 2, 8), max_keepalive_connections=32
        )
        mounts: dict[str, httpx.AsyncBaseTransport] = {}
        if self._transport is None:
            for registry, registry_settings in self.registries.items():
                if registry_settings.ca is None:
                    continue
                for endpoint in endpoints_for(registry, registry_settings):
                    if endpoint.base_url.startswith("https://") and not endpoint.is_mirror:
                        mounts[f"https://{endpoint.host}"] = LazyTransport(
                            limits, ca_settings=registry_settings
                        )
        self._client = httpx.AsyncClient(
            timeout=timeout,
            limits=limits,
            follow_redirects=False,
            transport=self._transport or LazyTransport(limits),
            mounts=mounts or None,
            headers={"User-Agent": _user_agent()},
            trust_env=True,
        )
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None

    def plan(self, repositories: Iterable[tuple[str, str]]) -> None:
        """Announce the (registry, repository) pairs of the run, so tokens are fetched for all
        repositories of a registry in one request."""
        for registry, repository in repositories:
            self._planned.setdefault(registry, set()).add(repository)

    def endpoints(self, registry: str) -> list[Endpoint]:
        return endpoints_for(registry, self.registries.get(registry, RegistrySettings()))

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

    async def list_tags(
        self,
        endpoint: Endpoint,
        repository: str,
        *,
        source: str,
        page_size: int = TAGS_PAGE_SIZE,
        max_pages: int = MAX_TAG_PAGES,
    ) -> list[str]:
        """Every tag of ``repository`` (``GET /v2/<name>/tags/list``), following the ``Link:
        <...>; rel="next"`` header from page to page (distribution paginates with ``n`` and
        ``last``). Stops after ``max_pages``: a repository of 50 000 tags is not worth more."""
        import json

        path = f"/v2/{repository}/tags/list?n={page_size}"
        tags: list[str] = []
        for _ in range(max_pages):
            response = await self._request(
                "GET",
                endpoint,
                repository,
                path,
                kind="tags-list",
                accept="application/json",
                cap=MAX_TAG_LIST_BYTES,
                source=source,
            )
            try:
                document = json.loads(response.body)
            except ValueError as exc:
                raise ManifestError(f"{source}: the tag list is not JSON: {exc}") from exc
            page = document.get("tags") if isinstance(document, dict) else None
            tags.extend(
                tag for tag in (page if isinstance(page, list) else []) if isinstance(tag, str)
            )
            following = _next_page(response.headers.get("link"), endpoint)
            if following is None or following == path:
                break
            path = following
        return list(dict.fromkeys(tags))

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
    ) -> _Response:
        # No /v2/ ping first: requests go out at once, and the first 401 teaches the endpoint's
        # challenge. On a registry without auth that saves a round trip per run; on one with
        # tokens, concurrent 401s wait for a single batched token request.
        auth = self._auth.setdefault(endpoint.base_url, _EndpointAuth())
        authorization = await self._authorization(endpoint, auth, repository, source=source)
        url = endpoint.base_url + path
        response = await self._send_following_redirects(
            method,
            endpoint,
            url,
            authorization,
            kind=kind,
            accept=accept,
            cap=cap,
            source=source,
        )
        if response.status == 401:
            _refuse_foreign_challenge(response, endpoint, source)
            challenge = parse_challenge(response.headers.get("www-authenticate"))
            if challenge is None:
                raise self._status_error(response, endpoint, repository, source=source)
            retry = await self._answer_challenge(
                endpoint, auth, repository, challenge, rejected=authorization, source=source
            )
            if retry is not None:
                response = await self._send_following_redirects(
                    method,
                    endpoint,
                    url,
                    retry,
                    kind=kind,
                    accept=accept,
                    cap=cap,
                    source=source,
                )
        if 200 <= response.status < 300:
            return response
        if response.status == 401:
            _refuse_foreign_challenge(response, endpoint, source)
        raise self._status_error(response, endpoint, repository, source=source)

    async def _answer_challenge(
        self,
        endpoint: Endpoint,
        auth: _EndpointAuth,
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
                token = _valid_token(auth, scope)
                if token is None or f"Bearer {token.value}" == rejected:
                    if rejected is not None:
                        # The registry refused a token we thought valid: drop it.
                        auth.tokens = [t for t in auth.tokens if f"Bearer {t.value}" != rejected]
                    token = await self._fetch_token(
                        endpoint,
                        auth,
                        self._wanted_scopes(endpoint, auth, challenge, scope),
                        scope,
                        source=source,
                    )
            return f"Bearer {token.value}"
        if challenge.scheme == "basic":
            auth.challenge = challenge
            if rejected is not None:
                return None  # the credentials themselves were refused
            return await self._authorization(endpoint, auth, repository, source=source)
        raise RegistryAuthError(
            f"{source}: {endpoint.host} asks for unsupported auth scheme {challenge.scheme!r}"
        )

    def _wanted_scopes(
        self, endpoint: Endpoint, auth: _EndpointAuth, challenge: Challenge, scope: str
    ) -> frozenset[str]:
        """This repository's scope (or the one the registry named), plus every planned
        repository of the registry that has no valid token yet: one request for the run."""
        wanted = {scope, *challenge.scope.split()} if challenge.scope else {scope}
        for name in sorted(self._planned.get(endpoint.registry, ())):
            planned = repository_scope(name)
            if _valid_token(auth, planned) is None:
                wanted.add(planned)
        return frozenset(wanted)

    async def _authorization(
        self, endpoint: Endpoint, auth: _EndpointAuth, repository: str, *, source: str
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
        token = _valid_token(auth, scope)
        if token is None:
            async with auth.lock:
                token = _valid_token(auth, scope)
                if token is None:
                    token = await self._fetch_token(
                        endpoint,
                        auth,
                        self._wanted_scopes(endpoint, auth, challenge, scope),
                        scope,
                        source=source,
                    )
        return f"Bearer {token.value}"

    async def _fetch_token(
        self,
        endpoint: Endpoint,
        auth: _EndpointAuth,
        scopes: frozenset[str],
        needed: str,
        *,
        source: str,
    ) -> _Token:
        """Tokens for ``scopes`` (in requests of at most MAX_SCOPES_PER_TOKEN_REQUEST scopes),
        kept for the run; returns the one whose scopes include ``needed``, the caller's."""
        challenge = auth.challenge
        if challenge is None or not challenge.realm:
            raise RegistryAuthError(
                f"{source}: {endpoint.host} sent a Bearer challenge without realm"
            )
        realm = challenge.realm
        credentials = await self._credentials(endpoint)
        realm_parts = urlsplit(realm)
        if realm_parts.scheme not in ("http", "https"):
            raise RegistryAuthError(f"{source}: token realm {realm!r} is not an http(s) URL")
        if (
            credentials is not None
            and realm_parts.scheme != "https"
            and not (is_loopback(realm_parts.netloc) or endpoint.base_url.startswith("http://"))
        ):
            raise RegistryAuthError(
                f"{source}: {endpoint.host} wants credentials sent to {realm_parts.netloc} over "
                "plain HTTP; refusing"
            )
        # The caller's scope first, so its token is in the first request's answer.
        ordered = [needed, *sorted(scopes - {needed})] if needed in scopes else sorted(scopes)
        tokens: list[_Token] = []
        for start in range(0, len(ordered), MAX_SCOPES_PER_TOKEN_REQUEST):
            chunk = ordered[start : start + MAX_SCOPES_PER_TOKEN_REQUEST]
            tokens.append(
                await self._token_request(
                    endpoint, realm, challenge.service, chunk, credentials, source=source
                )
            )
        auth.tokens = [t for t in auth.tokens if t.expires_at > time.time()] + tokens
        for token in tokens:
            if needed in token.scopes:
                return token
        return tokens[0]  # the registry named another scope than the repository's own

    async def _token_request(
        self,
        endpoint: Endpoint,
        realm: str,
        service: str,
        scopes: list[str],
        credentials: Credentials | None,
        *,
        source: str,
    ) -> _Token:
        params: list[tuple[str, str]] = []
        if service:
            params.append(("service", service))
        params.extend(("scope", scope) for scope in scopes)
        if credentials is not None and credentials.identity_token:
            method, form = (
                "POST",
                {
                    "grant_type": "refresh_token",
                    "refresh_token": credentials.secret,
                    "client_id": "kmultiarch",
                    "service": service,
                    "scope": " ".join(scopes),
                },
            )
            headers: dict[str, str] = {}
        else:
            method, form = "GET", None
            headers = {"Authorization": credentials.basic_header()} if credentials else {}
        response = await self._send_with_retries(
            method,
            realm,
            headers,
            params=params,
            form=form,
            kind="token",
            accept="application/json",
            cap=MAX_ERROR_BODY,
            source=source,
            label=f"token endpoint {urlsplit(realm).netloc}",
        )
        if response.status in (401, 403):
            login = " the stored credentials were refused;" if credentials else ""
            raise RegistryAuthError(
                f"{source}: token endpoint {urlsplit(realm).netloc} answered {response.status};"
                f"{login} check `docker login {endpoint.host}`"
            )
        if response.status != 200:
            raise RegistryAuthError(
                f"{source}: token endpoint {urlsplit(realm).netloc} answered {response.status}"
            )
        try:
            import json

            answer = json.loads(response.body)
            value = answer.get("token") or answer.get("access_token")
            lifetime = float(answer.get("expires_in") or DEFAULT_TOKEN_LIFETIME)
        except (ValueError, TypeError, AttributeError):
            raise RegistryAuthError(
                f"{source}: token endpoint {urlsplit(realm).netloc} sent an unreadable answer"
            ) from None
        if not isinstance(value, str) or not value:
            raise RegistryAuthError(
                f"{source}: token endpoint {urlsplit(realm).netloc} sent no token"
            )
        if not value.isascii() or not value.isprintable() or " " in value:
            # A token goes into a header line: control characters or non-ASCII would break
            # it (and an error would echo it). It is refused without being shown.
            raise RegistryAuthError(
                f"{source}: token endpoint {urlsplit(realm).netloc} sent a token that is not "
                "printable ASCII; refusing to use it"
            )
        lifetime = max(lifetime, TOKEN_EXPIRY_MARGIN * 2)
        return _Token(frozenset(scopes), value, time.time() + lifetime - TOKEN_EXPIRY_MARGIN)

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
    ) -> _Response:
        origin = endpoint.origin
        for _ in range(MAX_REDIRECTS + 1):
            same_origin = _origin(url) == origin
            headers = {"Accept": accept}
            if authorization and same_origin:
                headers["Authorization"] = authorization
            response = await self._send_with_retries(
                method, url, headers, kind=kind, accept=accept, cap=cap, source=source
            )
            if response.status not in (301, 302, 303, 307, 308):
                return response
            location = response.headers.get("location")
            if not location:
                return response
            url = urljoin(url, location)
            if _origin(url) != origin:
                log.debug(
                    "redirect to another origin %s: credentials are not sent there", _origin(url)
                )
        raise RegistryTransportError(f"{source}: more than {MAX_REDIRECTS} redirects")

    async def _send_with_retries(
        self,
        method: str,
        url: str,
        headers: dict[str, str],
        *,
        kind: str,
        accept: str,
        cap: int,
        source: str,
        params: list[tuple[str, str]] | None = None,
        form: dict[str, str] | None = None,
        label: str | None = None,
    ) -> _Response:
        """``label`` names the server in messages (default: the URL's origin)."""
        import httpx

        from kmultiarch.registry.transport import UnusableCAError

        assert self._client is not None, "RegistryClient used outside `async with`"
        where = label or _origin(url)
        attempts = self.settings.retries + 1
        last_problem = ""
        for attempt in range(attempts):
            started = time.monotonic()
            self.requests[kind] += 1
            try:
                async with asyncio.timeout(self.settings.attempt_timeout):
                    response = await self._exchange(
                        method, url, headers, params, form, cap, source=source
                    )
            except TimeoutError:
                last_problem = f"no complete answer within {self.settings.attempt_timeout:g} s"
                retry_after = None
            except httpx.TransportError as exc:
                last_problem = _describe_transport_error(exc)
                if _is_certificate_failure(exc):
                    # Asking again does not make a certificate trusted.
                    raise RegistryTransportError(f"{source}: {where}: {last_problem}") from exc
                retry_after = None
            except UnusableCAError as exc:
                raise RegistryTransportError(f"{source}: {where}: {exc}") from None
            except (httpx.InvalidURL, httpx.UnsupportedProtocol, ValueError, OverflowError) as exc:
                # A URL httpx or the socket layer refuses (a port over 65535, an address that is
                # no IPv4 address, a redirect or token realm naming one): asking again is useless.
                raise RegistryTransportError(
                    f"{source}: cannot reach {_loggable_or_raw(url)}: {_one_line(exc)}"
                ) from None
            except ExceptionGroup as group:
                raise RegistryTransportError(
                    f"{source}: cannot reach {_loggable_or_raw(url)}: "
                    + "; ".join(_one_line(exc) for exc in group.exceptions)
                ) from None
            else:
                log.debug(
                    "%s %s -> %d (%.0f ms)",
                    method,
                    _loggable(url),
                    response.status,
                    (time.monotonic() - started) * 1000,
                )
                if response.status not in RETRYABLE_STATUS:
                    return response
                message = _registry_message(response)
                last_problem = f"{response.status}" + (f" ({message})" if message else "")
                retry_after = _retry_after(response.headers.get("retry-after"))
                if attempt == attempts - 1:
                    return response
            log.debug(
                "%s %s failed: %s (attempt %d of %d)",
                method,
                _loggable(url),
                last_problem,
                attempt + 1,
                attempts,
            )
            if attempt < attempts - 1:
                if retry_after is not None and retry_after > self.settings.max_retry_after:
                    # Waiting the cap and asking again would only meet the same answer: the
                    # registry said when it will serve us, and that is later than we wait.
                    raise RegistryTransportError(
                        f"{source}: {where} answered {last_problem} and asks to retry "
                        f"after {retry_after:.0f} s, longer than kmultiarch waits "
                        f"({self.settings.max_retry_after:g} s); try again later"
                    )
                delay = self.settings.backoff * (2**attempt) * (1 + random.random() / 2)  # noqa: S311
                # Exponential, but never longer than a registry may ask us to wait: with
                # --retries 10 the last pause would otherwise be two minutes.
                delay = min(delay, self.settings.max_retry_after)
                if retry_after is not None:
                    delay = max(retry_after, delay)
                await asyncio.sleep(delay)
        raise RegistryTransportError(
            f"{source}: {where} did not answer after {attempts} attempt"
            f"{'' if attempts == 1 else 's'}: {last_problem}"
        )

    async def _exchange(
        self,
        method: str,
        url: str,
        headers: dict[str, str],
        params: list[tuple[str, str]] | None,
        form: dict[str, str] | None,
        cap: int,
        *,
        source: str,
    ) -> _Response:
        assert self._client is not None
        query: Any = params
        # Bodies are asked for as they are (identity): a digest is over those bytes. A proxy or
        # CDN may compress all the same; such bodies are decoded below, within the cap.
        headers = {"Accept-Encoding": "identity", **headers}
        request = self._client.build_request(method, url, headers=headers, params=query, data=form)
        response = await self._client.send(request, stream=True)
        try:
            ok = 200 <= response.status_code < 300
            limit = cap if ok else MAX_ERROR_BODY
            encoding = response.headers.get("content-encoding", "identity").strip().lower()
            declared = response.headers.get("content-length")
            if (
                method != "HEAD"
                and encoding in ("", "identity")
                and declared
                and declared.isdigit()
                and int(declared) > limit
            ):
                if ok:
                    raise ManifestError(
                        f"{source}: {_loggable(url)} is {int(declared)} bytes, over the "
                        f"{limit}-byte cap"
                    )
                return _Response(response.status_code, response.headers, b"", url)
            body = b""
            if method != "HEAD":
                body = await _read_decoded(response, encoding, limit, strict=ok, source=source)
            return _Response(response.status_code, response.headers, body, url)
        finally:
            await response.aclose()

    def _status_error(
        self, response: _Response, endpoint: Endpoint, repository: str | None, *, source: str
    ) -> RegistryError:
        message = _registry_message(response)
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


@dataclass
class _Response:
    status: int
    headers: httpx.Headers
    body: bytes
    #: Where the answer came from (after redirects): challenges are learnt from the endpoint only.
    url: str


def _refuse_foreign_challenge(response: _Response, endpoint: Endpoint, source: str) -> None:
    """A 401 from another origin (a redirect target) is not answered: answering its challenge
    would hand that host this registry's credentials (through a Bearer realm it names)."""
    if _origin(response.url) != _origin(endpoint.base_url):
        raise RegistryAuthError(
            f"{source}: {endpoint.host} redirected to {_origin(response.url)}, which asks for "
            f"credentials; kmultiarch sends credentials only to {endpoint.host}"
        )


def _valid_token(auth: _EndpointAuth, scope: str) -> _Token | None:
    now = time.time()
    for token in auth.tokens:
        if scope in token.scopes and token.expires_at > now:
            return token
    return None


def _next_page(link: str | None, endpoint: Endpoint) -> str | None:
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


def _loggable_or_raw(url: str) -> str:
    """:func:`_loggable`, or a shortened form when the URL does not even parse."""
    try:
        return _loggable(url)
    except ValueError:
        return url.split("?", 1)[0].rsplit("@", 1)[-1][:200]


def _one_line(exc: BaseException) -> str:
    """An exception's message on one line, without control characters, bounded."""
    text = " ".join(str(exc).split()) or type(exc).__name__
    return "".join(c if c.isprintable() else "?" for c in text)[:300]


def _origin(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}".lower()


class _CappedDecoder:
    """Decodes a body per its Content-Encoding (gzip, deflate or none) a chunk at a time,
    never holding more than ``limit`` + 1 decoded bytes: a gzip bomb stays bounded."""

    def __init__(self, encoding: str, limit: int) -> None:
        import zlib

        self.limit = limit
        if encoding in ("", "identity"):
            self._inflate = None
        elif encoding in ("gzip", "x-gzip"):
            self._inflate = zlib.decompressobj(16 + zlib.MAX_WBITS)
        elif encoding == "deflate":
            self._inflate = zlib.decompressobj()
        else:
            raise ValueError(f"an unsupported Content-Encoding {encoding!r}")

    def feed(self, chunk: bytes, room: int) -> bytes:
        """Decoded bytes of ``chunk``, at most ``room`` of them (more means over the cap)."""
        import zlib

        if self._inflate is None:
            return chunk[:room]
        try:
            return self._inflate.decompress(chunk, room)
        except zlib.error as exc:
            raise ValueError(f"a corrupt compressed body ({exc})") from exc


async def _read_decoded(
    response: httpx.Response, encoding: str, limit: int, *, strict: bool, source: str
) -> bytes:
    """The body, decoded, at most ``limit`` bytes. Over the cap: a ManifestError when the body
    is what was asked for (``strict``), else the first ``limit`` bytes (an error page)."""
    try:
        decoder = _CappedDecoder(encoding, limit)
    except ValueError as exc:
        if not strict:
            return b""
        raise ManifestError(f"{source}: {_loggable(str(response.url))} sent {exc}") from None
    chunks: list[bytes] = []
    size = 0
    async for chunk in response.aiter_raw():
        try:
            decoded = decoder.feed(chunk, limit + 1 - size)
        except ValueError as exc:
            if not strict:
                break
            raise ManifestError(f"{source}: {_loggable(str(response.url))} sent {exc}") from None
        size += len(decoded)
        if size > limit:
            if strict:
                raise ManifestError(
                    f"{source}: {_loggable(str(response.url))} is larger than the {limit}-byte cap"
                )
            chunks.append(decoded[: max(0, limit - (size - len(decoded)))])
            break
        chunks.append(decoded)
    return b"".join(chunks)


def _loggable(url: str) -> str:
    """The URL without query or user info: nothing secret goes into a log line."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if parts.port:
        host += f":{parts.port}"
    return f"{parts.scheme}://{host}{parts.path}"


def _retry_after(value: str | None) -> float | None:
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        moment = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, moment.timestamp() - time.time())


def _registry_message(response: _Response) -> str:
    """The registry's own error code and message, e.g. ``MANIFEST_UNKNOWN: manifest unknown``."""
    import json

    try:
        errors = json.loads(response.body).get("errors")
        first = errors[0]
        return f"{first.get('code', '')}: {first.get('message', '')}".strip(": ")[:200]
    except (ValueError, AttributeError, TypeError, IndexError, KeyError):
        return ""


def _is_certificate_failure(exc: Exception) -> bool:
    return "CERTIFICATE_VERIFY_FAILED" in str(exc)


def _describe_transport_error(exc: Exception) -> str:
    name = type(exc).__name__
    text = str(exc).strip()
    if _is_certificate_failure(exc):
        return (
            "TLS certificate not trusted (CERTIFICATE_VERIFY_FAILED); add the registry's CA with "
            "`ca:` under spec.registries, or `insecure: true` for plain HTTP"
        )
    return f"{name}: {text or _TRANSPORT_ERROR_MEANINGS.get(name, 'no detail')}"


#: What httpx's exceptions without a message mean, in words.
_TRANSPORT_ERROR_MEANINGS = {
    "ReadError": "the connection broke while the answer was being read",
    "WriteError": "the connection broke while the request was being sent",
    "ReadTimeout": "nothing received within the read timeout",
    "WriteTimeout": "the request could not be sent within the timeout",
    "ConnectTimeout": "no connection within the connect timeout",
    "PoolTimeout": "no free connection within the timeout",
}


def _user_agent() -> str:
    from kmultiarch.version import __version__

    return f"kmultiarch/{__version__}"
