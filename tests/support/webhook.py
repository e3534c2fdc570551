"""A tiny mutating admission webhook on https://127.0.0.1 for the real-cluster tests.

``WebhookServer(workdir, mutate)`` serves ``POST <any path>``: it records the path (query
string included) and the AdmissionReview the API server sent, calls ``mutate(request)`` with
the review's ``request`` and answers ``admission.k8s.io/v1`` with the JSONPatch it returns
(none: allowed unchanged). Its certificate is signed by a fresh test CA (``ca_pem``), which
``configuration()`` passes as the ``caBundle`` of a MutatingWebhookConfiguration pointing at it.
"""

from __future__ import annotations

import base64
import json
import ssl
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import trustme

__all__ = ["ReceivedReview", "WebhookServer"]

Mutation = Callable[[Mapping[str, Any]], list[dict[str, Any]] | None]


@dataclass(frozen=True)
class ReceivedReview:
    path: str  # with the query string: the API server adds ?timeout=<timeoutSeconds>s
    review: dict[str, Any]


class WebhookServer:
    def __init__(self, workdir: Path, mutate: Mutation) -> None:
        self.workdir = workdir
        self.mutate = mutate
        self.ca_pem = workdir / "webhook-ca.pem"
        self.received: list[ReceivedReview] = []
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        assert self._server is not None, "the webhook server is not started"
        return int(self._server.server_address[1])

    def url(self, path: str = "/mutate") -> str:
        return f"https://127.0.0.1:{self.port}{path}"

    def reviews(self) -> list[ReceivedReview]:
        with self._lock:
            return list(self.received)

    def configuration(
        self,
        name: str,
        *,
        path: str = "/mutate",
        namespace_selector: Mapping[str, Any] | None = None,
        failure_policy: str = "Fail",
        timeout_seconds: int | None = None,
        reinvocation_policy: str = "Never",
    ) -> dict[str, Any]:
        """A MutatingWebhookConfiguration (admissionregistration.k8s.io/v1) sending pod CREATEs
        to this server at ``path``."""
        webhook: dict[str, Any] = {
            "name": f"{name}.kmultiarch.test",
            "admissionReviewVersions": ["v1"],
            "sideEffects": "None",
            "failurePolicy": failure_policy,
            "reinvocationPolicy": reinvocation_policy,
            "clientConfig": {
                "url": self.url(path),
                "caBundle": base64.b64encode(self.ca_pem.read_bytes()).decode(),
            },
            "rules": [
                {
                    "apiGroups": [""],
                    "apiVersions": ["v1"],
                    "operations": ["CREATE"],
                    "resources": ["pods"],
                    "scope": "Namespaced",
                }
            ],
        }
        if namespace_selector is not None:
            webhook["namespaceSelector"] = dict(namespace_selector)
        if timeout_seconds is not None:
            webhook["timeoutSeconds"] = timeout_seconds
        return {
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "MutatingWebhookConfiguration",
            "metadata": {"name": name},
            "webhooks": [webhook],
        }

    def _answer(self, path: str, review: dict[str, Any]) -> dict[str, Any]:
        with self._lock:
            self.received.append(ReceivedReview(path, review))
        request = review["request"]
        response: dict[str, Any] = {"uid": request["uid"], "allowed": True}
        patch = self.mutate(request)
        if patch:
            response["patchType"] = "JSONPatch"
            response["patch"] = base64.b64encode(json.dumps(patch).encode()).decode()
        return {
            "apiVersion": "admission.k8s.io/v1",
            "kind": "AdmissionReview",
            "response": response,
        }

    def start(self) -> WebhookServer:
        self.workdir.mkdir(parents=True, exist_ok=True)
        ca = trustme.CA()
        ca.cert_pem.write_to_path(str(self.ca_pem))
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        ca.issue_cert("127.0.0.1", "localhost").configure_cert(context)
        answer = self._answer

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = json.dumps(answer(self.path, json.loads(self.rfile.read(length)))).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        server.daemon_threads = True
        server.socket = context.wrap_socket(server.socket, server_side=True)
        self._server = server
        self._thread = threading.Thread(target=server.serve_forever, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> WebhookServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()
