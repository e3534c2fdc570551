"""One request to a registry, retried: backoff on connection errors, timeouts, 5xx and 429.

Retries back off exponentially, honouring ``Retry-After`` up to a cap (a registry that asks for
more than kmultiarch waits is an error at once); each attempt has a total deadline, so a server
that trickles bytes cannot hold a run; bodies are read within a size cap. A problem that asking
again cannot fix (an untrusted certificate, a URL httpx refuses, an unusable CA file) is raised
at once as that request's :class:`RegistryTransportError`, never as a crash of the run.
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import logging
import random
import time
from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kmultiarch.core.findings import count_of
from kmultiarch.errors import ManifestError, RegistryTransportError
from kmultiarch.registry.decoding import read_decoded
from kmultiarch.registry.endpoints import loggable, loggable_or_raw, origin
from kmultiarch.registry.settings import ClientSettings

if TYPE_CHECKING:
    import httpx

log = logging.getLogger("kmultiarch.registry")

RETRYABLE_STATUS = frozenset({429, 500, 502, 503, 504})
#: How much of an error page is read (for the registry's own error code and message).
MAX_ERROR_BODY = 64 * 1024


@dataclass
class RegistryResponse:
    status: int
    headers: httpx.Headers
    body: bytes
    #: Where the answer came from (after redirects): challenges are learnt from the endpoint only.
    url: str
    #: A 2xx answer asked for as a stream: its body not read yet (the caller reads and closes).
    stream: httpx.Response | None = None


class RetryingSender:
    """Sends requests through one ``httpx.AsyncClient``, counting them by kind."""

    def __init__(
        self, client: httpx.AsyncClient, settings: ClientSettings, requests: Counter[str]
    ) -> None:
        self.client = client
        self.settings = settings
        self.requests = requests

    async def send(
        self,
        method: str,
        url: str,
        headers: dict[str, str],
        *,
        kind: str,
        cap: int,
        source: str,
        params: list[tuple[str, str]] | None = None,
        form: dict[str, str] | None = None,
        label: str | None = None,
        stream: bool = False,
    ) -> RegistryResponse:
        """The answer, after retries. ``label`` names the server in messages (default: the
        URL's origin). A retryable status on the last attempt is returned, not raised.
        ``stream``: a 2xx body is left unread in :attr:`RegistryResponse.stream` (``cap`` and
        the attempt's deadline then bound only the other answers and the headers)."""
        import httpx

        from kmultiarch.registry.transport import UnusableCAError

        where = label or origin(url)
        attempts = self.settings.retries + 1
        last_problem = ""
        for attempt in range(attempts):
            started = time.monotonic()
            self.requests[kind] += 1
            retry_after: float | None = None
            try:
                async with asyncio.timeout(self.settings.attempt_timeout):
                    response = await self._exchange(
                        method, url, headers, params, form, cap, source=source, stream=stream
                    )
            except TimeoutError:
                last_problem = f"no complete answer within {self.settings.attempt_timeout:g} s"
            # Before TransportError: UnsupportedProtocol is one, and no retry makes it supported.
            except (httpx.InvalidURL, httpx.UnsupportedProtocol, ValueError, OverflowError) as exc:
                # A URL httpx or the socket layer refuses (a port over 65535, an address that is
                # no IPv4 address, a redirect or token realm naming one): asking again is useless.
                raise RegistryTransportError(
                    f"{source}: cannot reach {loggable_or_raw(url)}: {one_line(exc)}"
                ) from None
            except httpx.TransportError as exc:
                if str(exc).startswith("Invalid URL in location header"):
                    # httpx reads a redirect's target as it receives it: the same answer
                    # would come again, so this is no transient failure.
                    raise RegistryTransportError(
                        f"{source}: {where} redirected to an invalid URL ({one_line(exc)})"
                    ) from None
                last_problem = describe_transport_error(exc)
                if _is_certificate_failure(exc):
                    # Asking again does not make a certificate trusted.
                    raise RegistryTransportError(f"{source}: {where}: {last_problem}") from exc
            except UnusableCAError as exc:
                raise RegistryTransportError(f"{source}: {where}: {exc}") from None
            except ExceptionGroup as group:
                raise RegistryTransportError(
                    f"{source}: cannot reach {loggable_or_raw(url)}: "
                    + "; ".join(one_line(exc) for exc in group.exceptions)
                ) from None
            else:
                log.debug(
                    "%s %s -> %d (%.0f ms)",
                    method,
                    loggable(url),
                    response.status,
                    (time.monotonic() - started) * 1000,
                )
                if response.status not in RETRYABLE_STATUS:
                    return response
                message = registry_message(response)
                last_problem = f"{response.status}" + (f" ({message})" if message else "")
                retry_after = parse_retry_after(response.headers.get("retry-after"))
                if attempt == attempts - 1:
                    return response
            log.debug(
                "%s %s failed: %s (attempt %d of %d)",
                method,
                loggable(url),
                last_problem,
                attempt + 1,
                attempts,
            )
            if attempt < attempts - 1:
                await self._pause(attempt, retry_after, where, last_problem, source)
        raise RegistryTransportError(
            f"{source}: {where} did not answer after {count_of(attempts, 'attempt')}: "
            f"{last_problem}"
        )

    async def _pause(
        self, attempt: int, retry_after: float | None, where: str, problem: str, source: str
    ) -> None:
        if retry_after is not None and retry_after > self.settings.max_retry_after:
            # Waiting the cap and asking again would only meet the same answer: the registry
            # said when it will serve us, and that is later than we wait.
            raise RegistryTransportError(
                f"{source}: {where} answered {problem} and asks to retry "
                f"after {retry_after:.0f} s, longer than kmultiarch waits "
                f"({self.settings.max_retry_after:g} s); try again later"
            )
        delay = self.settings.backoff * (2**attempt) * (1 + random.random() / 2)  # noqa: S311
        # Exponential, but never longer than a registry may ask us to wait: with --retries 10
        # the last pause would otherwise be two minutes.
        delay = min(delay, self.settings.max_retry_after)
        if retry_after is not None:
            delay = max(retry_after, delay)
        await asyncio.sleep(delay)

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
        stream: bool = False,
    ) -> RegistryResponse:
        query: Any = params
        # Bodies are asked for as they are (identity): a digest is over those bytes. A proxy or
        # CDN may compress all the same; such bodies are decoded, within the cap.
        headers = {"Accept-Encoding": "identity", **headers}
        request = self.client.build_request(method, url, headers=headers, params=query, data=form)
        response = await self.client.send(request, stream=True)
        if stream and 200 <= response.status_code < 300:
            return RegistryResponse(response.status_code, response.headers, b"", url, response)
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
                        f"{source}: {loggable(url)} is {int(declared)} bytes, over the "
                        f"{limit}-byte cap"
                    )
                return RegistryResponse(response.status_code, response.headers, b"", url)
            body = b""
            if method != "HEAD":
                body = await read_decoded(response, encoding, limit, strict=ok, source=source)
            return RegistryResponse(response.status_code, response.headers, body, url)
        finally:
            await response.aclose()


def parse_retry_after(value: str | None) -> float | None:
    """Seconds to wait from a ``Retry-After`` header (delta-seconds or an HTTP date)."""
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


def registry_message(response: RegistryResponse) -> str:
    """The registry's own error code and message, e.g. ``MANIFEST_UNKNOWN: manifest unknown``."""
    try:
        errors = json.loads(response.body).get("errors")
        first = errors[0]
        return f"{first.get('code', '')}: {first.get('message', '')}".strip(": ")[:200]
    except (ValueError, AttributeError, TypeError, IndexError, KeyError):
        return ""


def one_line(exc: BaseException) -> str:
    """An exception's message on one line, without control characters, bounded."""
    text = " ".join(str(exc).split()) or type(exc).__name__
    return "".join(c if c.isprintable() else "?" for c in text)[:300]


def _is_certificate_failure(exc: Exception) -> bool:
    return "CERTIFICATE_VERIFY_FAILED" in str(exc)


def describe_transport_error(exc: Exception) -> str:
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
