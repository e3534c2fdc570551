"""An HTTP proxy on 127.0.0.1 that injects faults in front of a real server.

The real registry (or token issuer) answers; the proxy forwards each request to it and, for the
requests a rule names (by path and method, for the next N requests or for ever), replaces or
spoils the answer the way a broken network or server would: a connection reset mid-body, a
server that accepts and never answers, a body that trickles a byte a second, 5xx and 429
bursts, truncated or malformed JSON, wrong or missing headers, an oversized or tampered body,
a redirect elsewhere. Everything a rule does not name goes through untouched, so the other
images of a run are served by the real registry as usual.

It records every request it saw (method, path, the Authorization header sent, the fault
applied), so tests can count attempts and check where credentials went. A refused connection
needs no proxy: :class:`ClosedPort` is a bound port that does not listen.

    with FaultProxy(registry.url) as proxy:
        proxy.inject("/v2/app/manifests/1.0", Status(503), times=2)   # two 503s, then recovery
        ... run kmultiarch against proxy.host ...
        assert proxy.count(path_contains="/manifests/") == 3
"""

from __future__ import annotations

import contextlib
import http.client
import re
import select
import socket
import struct
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import ClassVar
from urllib.parse import urlsplit

__all__ = [
    "ClosedPort",
    "Fault",
    "FaultProxy",
    "Gzip",
    "Hang",
    "Redirect",
    "ReplaceBody",
    "Reset",
    "SeenRequest",
    "SetHeaders",
    "Status",
    "Trickle",
    "Truncate",
]

_HOP_BY_HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-authenticate",
        "proxy-authorization",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
    }
)


@dataclass
class Upstream:
    """What the real server answered (after the proxy's header rewrites)."""

    status: int
    reason: str
    headers: list[tuple[str, str]]
    body: bytes

    def header(self, name: str) -> str | None:
        for key, value in self.headers:
            if key.lower() == name.lower():
                return value
        return None

    def with_header(self, name: str, value: str | None) -> list[tuple[str, str]]:
        """The headers with ``name`` replaced (or removed when ``value`` is None)."""
        kept = [(k, v) for k, v in self.headers if k.lower() != name.lower()]
        return kept if value is None else [*kept, (name, value)]


@dataclass(frozen=True)
class SeenRequest:
    """One request the proxy received; ``authorization`` is the header as sent (or None)."""

    method: str
    path: str
    authorization: str | None
    fault: str | None
    time: float


class Fault:
    """What to do with a request a rule matched. Subclasses set ``forward`` when they need the
    real server's answer first, and implement :meth:`respond`."""

    forward: ClassVar[bool] = True

    @property
    def name(self) -> str:
        return type(self).__name__

    def respond(self, exchange: _Exchange, upstream: Upstream | None) -> None:
        raise NotImplementedError


@dataclass
class Status(Fault):
    """Answer ``status`` at once, without asking the server (5xx, 429 with ``Retry-After``)."""

    status: int
    headers: Mapping[str, str] = field(default_factory=dict)
    body: bytes = b'{"errors":[{"code":"UNAVAILABLE","message":"injected fault"}]}'
    forward: ClassVar[bool] = False

    @property
    def name(self) -> str:
        return f"Status({self.status})"

    def respond(self, exchange: _Exchange, upstream: Upstream | None) -> None:
        headers = [("Content-Type", "application/json"), *self.headers.items()]
        exchange.send(self.status, "Injected", headers, self.body)


@dataclass
class Redirect(Fault):
    """Answer ``status`` with ``Location``: ``location(path)``, e.g. another host's URL."""

    location: Callable[[str], str]
    status: int = 307
    forward: ClassVar[bool] = False

    def respond(self, exchange: _Exchange, upstream: Upstream | None) -> None:
        exchange.send(self.status, "Redirect", [("Location", self.location(exchange.path))], b"")


@dataclass
class Hang(Fault):
    """Accept the request and never answer, until the client gives up (or the proxy stops)."""

    forward: ClassVar[bool] = False

    def respond(self, exchange: _Exchange, upstream: Upstream | None) -> None:
        exchange.wait_for_client_to_leave()


@dataclass
class Reset(Fault):
    """Send the headers and ``fraction`` of the body, then reset the connection (TCP RST)."""

    fraction: float = 0.5

    def respond(self, exchange: _Exchange, upstream: Upstream | None) -> None:
        assert upstream is not None
        cut = int(len(upstream.body) * self.fraction)
        exchange.send_head(upstream.status, upstream.reason, upstream.headers, len(upstream.body))
        exchange.write(upstream.body[:cut])
        exchange.reset()


@dataclass
class Trickle(Fault):
    """Send the headers at once, then the body one byte every ``interval`` seconds."""

    interval: float = 1.0

    def respond(self, exchange: _Exchange, upstream: Upstream | None) -> None:
        assert upstream is not None
        exchange.send_head(upstream.status, upstream.reason, upstream.headers, len(upstream.body))
        for position in range(len(upstream.body)):
            if not exchange.write(upstream.body[position : position + 1]):
                return
            if exchange.stopping.wait(self.interval):
                return


@dataclass
class Truncate(Fault):
    """Send the first ``fraction`` of the body with a Content-Length that matches it: a body
    cut short by a broken server rather than by the network."""

    fraction: float = 0.5

    def respond(self, exchange: _Exchange, upstream: Upstream | None) -> None:
        assert upstream is not None
        body = upstream.body[: int(len(upstream.body) * self.fraction)]
        exchange.send(upstream.status, upstream.reason, upstream.headers, body)


@dataclass
class ReplaceBody(Fault):
    """Send ``body(original)`` instead of the body, every header kept (``Docker-Content-Digest``
    included); ``chunked`` sends it without a Content-Length."""

    body: Callable[[bytes], bytes]
    chunked: bool = False

    def respond(self, exchange: _Exchange, upstream: Upstream | None) -> None:
        assert upstream is not None
        body = self.body(upstream.body)
        if self.chunked:
            exchange.send_chunked(upstream.status, upstream.reason, upstream.headers, body)
        else:
            exchange.send(upstream.status, upstream.reason, upstream.headers, body)


@dataclass
class Gzip(Fault):
    """Send the real answer gzip-compressed with ``Content-Encoding: gzip``, as a proxy or CDN
    may although the client asked for identity."""

    def respond(self, exchange: _Exchange, upstream: Upstream | None) -> None:
        import gzip

        assert upstream is not None
        headers = upstream.with_header("Content-Encoding", "gzip")
        headers = [(k, v) for k, v in headers if k.lower() != "content-length"]
        exchange.send(upstream.status, upstream.reason, headers, gzip.compress(upstream.body))


@dataclass
class SetHeaders(Fault):
    """Send the real answer with headers replaced (a None value removes the header)."""

    headers: Mapping[str, str | None]

    def respond(self, exchange: _Exchange, upstream: Upstream | None) -> None:
        assert upstream is not None
        answer = upstream
        for name, value in self.headers.items():
            answer = Upstream(answer.status, answer.reason, answer.with_header(name, value), b"")
        exchange.send(upstream.status, upstream.reason, answer.headers, upstream.body)


@dataclass
class _Rule:
    pattern: re.Pattern[str]
    fault: Fault
    method: str | None
    remaining: int | None
    authorized: bool | None

    def matches(self, method: str, path: str, authorized: bool) -> bool:
        return (
            (self.method is None or self.method == method)
            and (self.authorized is None or self.authorized == authorized)
            and (self.remaining is None or self.remaining > 0)
            and self.pattern.search(path) is not None
        )


class FaultProxy:
    """A threaded HTTP/1.1 proxy in front of ``upstream`` (``http://host:port``).

    ``rewrite_realm`` replaces the ``realm`` of Bearer challenges with another URL, so token
    requests go through a second proxy (in front of the token issuer) that can fail them.
    """

    def __init__(
        self, upstream: str, *, rewrite_realm: str | None = None, keep_bodies: bool = False
    ) -> None:
        parts = urlsplit(upstream)
        if parts.scheme != "http" or parts.hostname is None or parts.port is None:
            raise ValueError(f"upstream must be http://host:port, not {upstream!r}")
        self.upstream = (parts.hostname, parts.port)
        self.rewrite_realm = rewrite_realm
        self.keep_bodies = keep_bodies
        self._bodies: list[tuple[str, bytes]] = []
        self.stopping = threading.Event()
        self._rules: list[_Rule] = []
        self._seen: list[SeenRequest] = []
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- addresses and lifecycle -----------------------------------------------------------

    @property
    def port(self) -> int:
        assert self._server is not None, "proxy not started"
        return int(self._server.server_address[1])

    @property
    def host(self) -> str:
        """``127.0.0.1:<port>``: the registry part of image references served through it."""
        return f"127.0.0.1:{self.port}"

    @property
    def url(self) -> str:
        return f"http://{self.host}"

    def start(self) -> FaultProxy:
        server = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self))
        server.daemon_threads = True
        server.block_on_close = False
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever,
            kwargs={"poll_interval": 0.05},
            name="fault-proxy",
            daemon=True,
        )
        self._thread.start()
        return self

    def close(self) -> None:
        self.stopping.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._thread is not None:
            self._thread.join(5)
            self._thread = None

    def __enter__(self) -> FaultProxy:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # -- rules -----------------------------------------------------------------------------

    def inject(
        self,
        path: str,
        fault: Fault,
        *,
        times: int | None = None,
        method: str | None = None,
        authorized: bool | None = None,
        regex: bool = False,
    ) -> None:
        """Apply ``fault`` to requests whose path (query excluded) contains ``path`` (or matches
        it as a regular expression), for the next ``times`` of them or for ever; only to those
        with (or without) an Authorization header when ``authorized`` says so."""
        pattern = re.compile(path if regex else re.escape(path))
        with self._lock:
            self._rules.append(_Rule(pattern, fault, method, times, authorized))

    def clear(self) -> None:
        """Remove every rule: the proxy forwards everything from now on."""
        with self._lock:
            self._rules.clear()

    def _fault_for(self, method: str, path: str, authorized: bool) -> Fault | None:
        with self._lock:
            for rule in self._rules:
                if rule.matches(method, path, authorized):
                    if rule.remaining is not None:
                        rule.remaining -= 1
                    return rule.fault
        return None

    # -- what tests read -------------------------------------------------------------------

    def requests(self) -> list[SeenRequest]:
        with self._lock:
            return list(self._seen)

    def count(
        self, method: str | None = None, path_contains: str = "", *, faulted: bool | None = None
    ) -> int:
        return sum(
            1
            for request in self.requests()
            if (method is None or request.method == method)
            and path_contains in request.path
            and (faulted is None or (request.fault is not None) == faulted)
        )

    def bodies(self, path_contains: str = "") -> list[bytes]:
        """Bodies the server answered (with ``keep_bodies``), e.g. the tokens an issuer sent."""
        with self._lock:
            return [body for path, body in self._bodies if path_contains in path]

    def authorizations(self) -> list[str]:
        """Every Authorization header value the proxy received."""
        return [r.authorization for r in self.requests() if r.authorization is not None]

    def _record(self, request: SeenRequest) -> None:
        with self._lock:
            self._seen.append(request)

    # -- forwarding ------------------------------------------------------------------------

    def fetch_upstream(
        self, method: str, target: str, headers: list[tuple[str, str]], body: bytes
    ) -> Upstream:
        connection = http.client.HTTPConnection(*self.upstream, timeout=30)
        try:
            connection.putrequest(method, target, skip_host=True, skip_accept_encoding=True)
            connection.putheader("Host", f"{self.upstream[0]}:{self.upstream[1]}")
            for name, value in headers:
                if name.lower() not in _HOP_BY_HOP and name.lower() != "host":
                    connection.putheader(name, value)
            connection.putheader("Connection", "close")
            connection.endheaders(body or None)
            response = connection.getresponse()
            payload = response.read()
            kept = [
                (name, value)
                for name, value in response.getheaders()
                if name.lower() not in _HOP_BY_HOP
                and (name.lower() != "content-length" or method == "HEAD")
            ]
            if self.rewrite_realm is not None:
                kept = [
                    (name, _with_realm(value, self.rewrite_realm))
                    if name.lower() == "www-authenticate"
                    else (name, value)
                    for name, value in kept
                ]
            return Upstream(response.status, response.reason, kept, payload)
        finally:
            connection.close()


def _with_realm(challenge: str, realm: str) -> str:
    return re.sub(r'realm="[^"]*"', f'realm="{realm}"', challenge)


class _Exchange:
    """One request being answered: the handler's socket, with the ways to answer it."""

    def __init__(self, handler: BaseHTTPRequestHandler, proxy: FaultProxy, method: str) -> None:
        self.handler = handler
        self.proxy = proxy
        self.method = method
        self.path = urlsplit(handler.path).path
        self.stopping = proxy.stopping

    def send_head(
        self, status: int, reason: str, headers: list[tuple[str, str]], length: int | None
    ) -> None:
        lines = [f"HTTP/1.1 {status} {reason}"]
        lines += [
            f"{name}: {value}"
            for name, value in headers
            if name.lower() not in _HOP_BY_HOP
            and not (name.lower() == "content-length" and self.method != "HEAD")
        ]
        if length is not None and self.method != "HEAD":
            lines.append(f"Content-Length: {length}")
        elif length is None:
            lines.append("Transfer-Encoding: chunked")
        self.write(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1"))

    def send(self, status: int, reason: str, headers: list[tuple[str, str]], body: bytes) -> None:
        self.send_head(status, reason, headers, len(body))
        if self.method != "HEAD":
            self.write(body)

    def send_chunked(
        self, status: int, reason: str, headers: list[tuple[str, str]], body: bytes
    ) -> None:
        self.send_head(status, reason, headers, None)
        for start in range(0, len(body), 65536):
            chunk = body[start : start + 65536]
            if not self.write(b"%x\r\n%s\r\n" % (len(chunk), chunk)):
                return
        self.write(b"0\r\n\r\n")

    def write(self, data: bytes) -> bool:
        """Write to the client; False when it has gone away."""
        try:
            self.handler.connection.sendall(data)
        except OSError:
            self.handler.close_connection = True
            return False
        return True

    def reset(self) -> None:
        """Abort the connection with a TCP RST (SO_LINGER 0, then close)."""
        sock = self.handler.connection
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            sock.close()
        self.handler.close_connection = True

    def wait_for_client_to_leave(self) -> None:
        sock = self.handler.connection
        while not self.stopping.is_set():
            try:
                readable, _, _ = select.select([sock], [], [], 0.1)
                if readable and not sock.recv(4096):
                    break
            except (OSError, ValueError):
                break
        self.handler.close_connection = True


def _handler_for(proxy: FaultProxy) -> type[BaseHTTPRequestHandler]:
    class ProxyHandler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def _handle(self) -> None:
            method = self.command
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            exchange = _Exchange(self, proxy, method)
            authorization = self.headers.get("Authorization")
            fault = proxy._fault_for(method, exchange.path, authorization is not None)
            proxy._record(
                SeenRequest(
                    method,
                    exchange.path,
                    authorization,
                    None if fault is None else fault.name,
                    time.time(),
                )
            )
            upstream = None
            if fault is None or fault.forward:
                try:
                    upstream = proxy.fetch_upstream(
                        method, self.path, list(self.headers.items()), body
                    )
                except OSError:
                    exchange.send(502, "Bad Gateway", [], b"upstream unreachable")
                    return
            if upstream is not None and proxy.keep_bodies:
                with proxy._lock:
                    proxy._bodies.append((exchange.path, upstream.body))
            if fault is None:
                assert upstream is not None
                exchange.send(upstream.status, upstream.reason, upstream.headers, upstream.body)
            else:
                fault.respond(exchange, upstream)

        do_GET = do_HEAD = do_POST = do_PUT = do_DELETE = do_PATCH = _handle

        def finish(self) -> None:
            with contextlib.suppress(OSError):
                super().finish()

        def log_message(self, format: str, *args: object) -> None:
            """Silent: requests are recorded as data (``FaultProxy.requests()``)."""

    return ProxyHandler


class ClosedPort:
    """A loopback port that is bound but does not listen: connecting is refused (ECONNREFUSED),
    and no other process can take the port while this is open."""

    def __init__(self) -> None:
        self._socket = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._socket.bind(("127.0.0.1", 0))

    @property
    def host(self) -> str:
        return f"127.0.0.1:{self._socket.getsockname()[1]}"

    def close(self) -> None:
        self._socket.close()

    def __enter__(self) -> ClosedPort:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


@contextlib.contextmanager
def fault_proxies(*upstreams: str) -> Iterator[list[FaultProxy]]:
    """Several proxies at once, all closed on exit."""
    with contextlib.ExitStack() as stack:
        yield [stack.enter_context(FaultProxy(upstream)) for upstream in upstreams]
