"""The HTTPS server around the handler: ``POST /mutate``, ``/healthz``, ``/readyz``, ``/metrics``.

uvicorn serves a bare ASGI application (no framework: four routes). A review whose answers are
all in memory is answered on the event loop (:class:`LocalAdmission`); another runs the engine in a
worker thread (the engine is synchronous), its image lookups shared on the event loop by every
review (:mod:`~kmultiarch.admission.lookups`). The API server calls
``/mutate?timeout=10s`` (client-go rest/request.go ``URL()``: the timeout as a Go duration): the
review's deadline is that, less a margin to write the answer.

TLS: the context is this module's (:class:`ReloadingTls`), so the certificate and key are read
again when they change on disk (cert-manager rotates the Secret; kubelet swaps the mounted
files): each handshake's SNI callback (called by OpenSSL for every ClientHello, with or without
a server name) checks the files at most once a second and hands the connection a context with
the new pair. TCP_NODELAY: asyncio sets it on every TCP transport (CPython
asyncio/selector_events.py ``_set_nodelay``); the listening socket is given it too (Linux copies
it to accepted sockets), so a response whose headers and body go out in two sends is not held
back ~40 ms by Nagle's algorithm against the client's delayed ACK.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import logging
import os
import re
import socket
import ssl
import threading
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

# The admission extra: imported with this module (only ``admission serve`` imports it), so a
# missing extra is said before the server starts.
import uvicorn

from kmultiarch.admission.kubeapi import KubeReader, NotLocal
from kmultiarch.admission.lookups import Credentials, SharedLookups
from kmultiarch.admission.metrics import CONTENT_TYPE, AdmissionMetrics
from kmultiarch.admission.review import Admission, Answer, MalformedReview, answer_review
from kmultiarch.core.findings import Finding
from kmultiarch.core.images.reference import ImageRef
from kmultiarch.core.policy.model import Policy
from kmultiarch.core.resolution import Resolution
from kmultiarch.run.admission import PodLookups
from kmultiarch.run.config import RunConfig

__all__ = ["AdmissionApp", "ReloadingTls", "review_deadline", "serve"]

log = logging.getLogger("kmultiarch.admission")

#: The API server's default timeoutSeconds (admissionregistration v1), when no ?timeout= is given.
DEFAULT_TIMEOUT = 10.0
#: Kept back from the API server's timeout to write and send the answer.
DEADLINE_MARGIN = 0.25
#: Largest review body read (a pod and its old object, as etcd holds them: 1.5 MiB each).
MAX_BODY_BYTES = 8 * 1024 * 1024
#: Threads that run the engine for reviews that wait on lookups (synchronous; most of them
#: wait for an answer, not for the GIL: reviews of several new images must not queue behind
#: each other's lookups).
ENGINE_THREADS = 32
#: How often the certificate files are looked at, at most.
TLS_CHECK_SECONDS = 1.0

Scope = Mapping[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]

_GO_DURATION = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h)")
_GO_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "μs": 1e-6, "ms": 1e-3, "s": 1, "m": 60, "h": 3600}


def go_duration(text: str) -> float | None:
    """Seconds of a Go ``time.Duration.String()`` (``10s``, ``1m0s``, ``500ms``); None if not."""
    if not text or _GO_DURATION.sub("", text):
        return None
    return sum(float(number) * _GO_UNITS[unit] for number, unit in _GO_DURATION.findall(text))


def review_deadline(query_string: bytes, arrived: float) -> float:
    """The monotonic time by which a review must be answered: its ``?timeout=`` (else the API
    server's default), less :data:`DEADLINE_MARGIN` (or a quarter of a short timeout)."""
    timeout = DEFAULT_TIMEOUT
    for part in query_string.decode("latin-1").split("&"):
        name, _, value = part.partition("=")
        if name == "timeout":
            timeout = go_duration(value) or DEFAULT_TIMEOUT
    return arrived + timeout - min(DEADLINE_MARGIN, timeout / 4)


class ReloadingTls:
    """A server SSLContext whose certificate and key are read again when they change."""

    def __init__(self, cert_file: str, key_file: str) -> None:
        self.cert_file = cert_file
        self.key_file = key_file
        self._lock = threading.Lock()
        self._checked = 0.0
        self._stamp = self._file_stamp()
        self.current = self._context()
        #: The listening context: every handshake starts on it, and its callback moves the
        #: connection to :attr:`current`.
        self.context = self._context()
        self.context.sni_callback = self._on_hello
        self.reloads = 0

    def _file_stamp(self) -> tuple[tuple[int, int, int], ...]:
        stamps = []
        for path in (self.cert_file, self.key_file):
            status = os.stat(path)
            stamps.append((status.st_mtime_ns, status.st_size, status.st_ino))
        return tuple(stamps)

    def _context(self) -> ssl.SSLContext:
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.minimum_version = ssl.TLSVersion.TLSv1_2
        context.load_cert_chain(self.cert_file, self.key_file)
        return context

    def reload_if_changed(self) -> None:
        now = time.monotonic()
        with self._lock:
            if now - self._checked < TLS_CHECK_SECONDS:
                return
            self._checked = now
            try:
                stamp = self._file_stamp()
                if stamp == self._stamp:
                    return
                context = self._context()
            except (OSError, ssl.SSLError) as exc:
                # Half-written (the certificate new, the key not yet): the old pair serves
                # until the next look.
                log.warning("TLS certificate not reloaded yet: %s", exc)
                return
            self._stamp, self.current = stamp, context
            self.reloads += 1
            log.info("TLS certificate reloaded from %s", self.cert_file)

    def _on_hello(
        self, connection: ssl.SSLObject | ssl.SSLSocket, name: str | None, _: ssl.SSLContext
    ) -> None:
        self.reload_if_changed()
        connection.context = self.current


class ServerAdmission:
    """The handler's :class:`~kmultiarch.admission.review.Admission` for one review."""

    def __init__(
        self,
        policy: Policy,
        lookups: SharedLookups,
        kube: KubeReader | None,
        deadline: float,
    ) -> None:
        self.policy = policy
        self._lookups = lookups
        self._kube = kube
        self._deadline = deadline

    def lookups_for(self, pod: Mapping[str, Any], namespace: str) -> PodLookups:
        kube, deadline = self._kube, self._deadline
        configs = kube.pull_secrets(pod, namespace, deadline=deadline) if kube else ()
        return self._lookups.for_review(Credentials(tuple(configs)), deadline)

    def node(self, name: str) -> Mapping[str, Any] | None:
        return self._kube.node(name, deadline=self._deadline) if self._kube else None

    def namespace(self, name: str) -> Mapping[str, Any] | None:
        return self._kube.namespace(name, deadline=self._deadline) if self._kube else None


class LocalAdmission:
    """The handler's :class:`~kmultiarch.admission.review.Admission` from memory alone: a review
    whose images were answered in the last minute, and whose pull secrets, Namespace and Node
    were read within 30 s, is answered on the event loop, with no thread hop (the engine takes
    a fifth of a millisecond for a pod); :class:`NotLocal` sends it to :class:`ServerAdmission`
    in a worker thread."""

    def __init__(self, policy: Policy, lookups: SharedLookups, kube: KubeReader | None) -> None:
        self.policy = policy
        self._lookups = lookups
        self._kube = kube

    def lookups_for(self, pod: Mapping[str, Any], namespace: str) -> PodLookups:
        configs = (
            self._kube.pull_secrets(pod, namespace, local=True) if self._kube is not None else ()
        )
        return _Remembered(self._lookups, Credentials(tuple(configs)))

    def node(self, name: str) -> Mapping[str, Any] | None:
        return self._kube.node(name, local=True) if self._kube is not None else None

    def namespace(self, name: str) -> Mapping[str, Any] | None:
        return self._kube.namespace(name, local=True) if self._kube is not None else None


class _Remembered:
    def __init__(self, lookups: SharedLookups, credentials: Credentials) -> None:
        self._lookups = lookups
        self._credentials = credentials

    def resolve(self, references: list[ImageRef]) -> Mapping[ImageRef, Resolution]:
        answers = self._lookups.remembered(references, self._credentials)
        if answers is None:
            raise NotLocal("an image to look up")
        return answers

    def findings(self) -> list[Finding]:
        return []


class AdmissionApp:
    """The ASGI application."""

    def __init__(self, config: RunConfig, kube: KubeReader | None = None) -> None:
        self.config = config
        self.kube = kube
        self.ready = False
        self.lookups: SharedLookups | None = None
        self.metrics = AdmissionMetrics(
            lambda: float(self.lookups.stats.in_flight) if self.lookups else 0.0
        )
        self._engine = concurrent.futures.ThreadPoolExecutor(ENGINE_THREADS, "kmultiarch-review")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
        elif scope["type"] == "http":
            await self._http(scope, receive, send)

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                self.lookups = SharedLookups(
                    self.config,
                    asyncio.get_running_loop(),
                    on_answers=self.metrics.count_answers,
                    on_deadline_missed=self.metrics.deadline_misses.inc,
                    on_remembered=self.metrics.cache_hits.labels("memory").inc,
                )
                self.ready = True
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                self.ready = False
                if self.lookups is not None:
                    self.lookups.close()
                self._engine.shutdown(wait=False, cancel_futures=True)
                await send({"type": "lifespan.shutdown.complete"})
                return

    async def _http(self, scope: Scope, receive: Receive, send: Send) -> None:
        path, method = scope["path"], scope["method"]
        if path == "/mutate" and method == "POST":
            await self._mutate(scope, receive, send)
        elif path == "/healthz" and method == "GET":
            await _respond(send, 200, b"ok\n")
        elif path == "/readyz" and method == "GET":
            ready = self.ready and self.lookups is not None
            await _respond(send, 200 if ready else 503, b"ok\n" if ready else b"not ready\n")
        elif path == "/metrics" and method == "GET":
            await _respond(send, 200, self.metrics.text(), CONTENT_TYPE)
        else:
            await _respond(send, 404, b"not found: POST /mutate, GET /healthz /readyz /metrics\n")

    async def _mutate(self, scope: Scope, receive: Receive, send: Send) -> None:
        arrived = time.monotonic()
        body = await _read_body(receive)
        if body is None:
            self.metrics.reviews.labels("invalid").inc()
            await _respond(send, 413, f"the review is over {MAX_BODY_BYTES} bytes\n".encode())
            return
        lookups = self.lookups
        if lookups is None:
            await _respond(send, 503, b"not ready\n")
            return
        admission = ServerAdmission(
            self.config.policy,
            lookups,
            self.kube,
            review_deadline(scope.get("query_string", b""), arrived),
        )
        loop = asyncio.get_running_loop()
        try:
            try:
                answer = answer_review(body, LocalAdmission(self.config.policy, lookups, self.kube))
            except NotLocal:
                answer = await loop.run_in_executor(self._engine, _answer, body, admission)
        except MalformedReview as exc:
            self.metrics.reviews.labels("invalid").inc()
            log.warning("not an AdmissionReview: %s", exc)
            payload = json.dumps({"error": f"not an AdmissionReview: {exc}"}).encode()
            await _respond(send, 400, payload, "application/json")
            return
        self.metrics.reviews.labels(answer.outcome).inc()
        self.metrics.duration.observe(time.monotonic() - arrived)
        await _respond(send, 200, answer.body(), "application/json")


def _answer(body: bytes, admission: Admission) -> Answer:
    return answer_review(body, admission)


async def _read_body(receive: Receive) -> bytes | None:
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > MAX_BODY_BYTES:
            return None
        chunks.append(chunk)
        if not message.get("more_body"):
            return b"".join(chunks)


async def _respond(
    send: Send, status: int, body: bytes, content_type: str = "text/plain; charset=utf-8"
) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", content_type.encode()),
                (b"content-length", str(len(body)).encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


def listening_socket(host: str, port: int) -> socket.socket:
    """A TCP socket bound to ``host:port`` with TCP_NODELAY (inherited by accepted sockets)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.bind((host, port))
    sock.listen(1024)
    sock.set_inheritable(True)
    return sock


def build_server(app: AdmissionApp, tls: ReloadingTls) -> Any:
    """The uvicorn server for ``app``, on the TLS context of ``tls``."""
    config = uvicorn.Config(
        app,
        lifespan="on",
        http="h11",
        loop="asyncio",
        log_level="warning",
        access_log=False,
        # The API server keeps its connections to webhooks open (Go's http.Transport).
        timeout_keep_alive=90,
        # 1 000 concurrent reviews at most; the API server's own limits sit before that.
        limit_concurrency=1000,
    )
    config.load()
    config.ssl = tls.context
    return uvicorn.Server(config)


def serve(app: AdmissionApp, tls: ReloadingTls, host: str, port: int) -> None:
    """Serve until SIGTERM or SIGINT (uvicorn's handlers: in-flight reviews are finished)."""
    sock = listening_socket(host, port)
    server = build_server(app, tls)
    server.run(sockets=[sock])
