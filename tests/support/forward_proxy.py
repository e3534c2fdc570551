"""A forward HTTP proxy on 127.0.0.1, as corporate networks put in front of registries.

Clients send it absolute-form requests (``GET http://registry.corp.test:5000/v2/... HTTP/1.1``)
for http URLs and ``CONNECT registry.corp.test:5000`` for https ones (a tunnel, through which
TLS runs end to end); it forwards each to the address ``routes`` maps the host to (the tests'
registries live on loopback, which kmultiarch never proxies, so they are reached under made-up
names that only this proxy resolves) and records what went through: method, host and path,
and whether a ``Proxy-Authorization`` header came.
"""

from __future__ import annotations

import http.client
import select
import socket
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit


@dataclass(frozen=True)
class ProxiedRequest:
    method: str
    host: str
    path: str
    proxy_authorization: bool


class ForwardProxy:
    def __init__(self, routes: Mapping[str, str]) -> None:
        self.routes = dict(routes)
        self.seen: list[ProxiedRequest] = []
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> ForwardProxy:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _forward(self) -> None:
                target = urlsplit(self.path)
                host = target.netloc.lower()
                with proxy._lock:
                    proxy.seen.append(
                        ProxiedRequest(
                            self.command,
                            host,
                            target.path,
                            "Proxy-Authorization" in self.headers,
                        )
                    )
                upstream = proxy.routes.get(host)
                if not target.scheme or upstream is None:
                    self.send_error(502, "no route")
                    return
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else None
                headers = {
                    key: value
                    for key, value in self.headers.items()
                    if key.lower() not in ("proxy-authorization", "proxy-connection", "connection")
                }
                connection = http.client.HTTPConnection(upstream, timeout=30)
                path = target.path + (f"?{target.query}" if target.query else "")
                connection.request(self.command, path, body=body, headers=headers)
                answer = connection.getresponse()
                data = answer.read()
                self.send_response(answer.status, answer.reason)
                for key, value in answer.getheaders():
                    if key.lower() not in ("transfer-encoding", "connection", "content-length"):
                        self.send_header(key, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(data)
                connection.close()

            do_GET = do_HEAD = do_POST = _forward

            def do_CONNECT(self) -> None:
                host = self.path.lower()
                with proxy._lock:
                    proxy.seen.append(
                        ProxiedRequest("CONNECT", host, "", "Proxy-Authorization" in self.headers)
                    )
                upstream = proxy.routes.get(host)
                if upstream is None:
                    self.send_error(502, "no route")
                    return
                address, _, port = upstream.rpartition(":")
                try:
                    tunnel = socket.create_connection((address, int(port)), timeout=30)
                except OSError:
                    self.send_error(502, "upstream unreachable")
                    return
                self.send_response(200, "Connection established")
                self.end_headers()
                self.close_connection = True
                with tunnel:
                    _pipe(self.connection, tunnel)

            def log_message(self, format: str, *args: object) -> None:
                pass

        return Handler


def _pipe(client: socket.socket, upstream: socket.socket) -> None:
    """Copy bytes both ways until either side closes (a CONNECT tunnel)."""
    sockets = [client, upstream]
    while True:
        readable, _, broken = select.select(sockets, [], sockets, 30)
        if broken or not readable:
            return
        for source in readable:
            data = source.recv(65536)
            if not data:
                return
            (upstream if source is client else client).sendall(data)
