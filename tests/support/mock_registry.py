"""A registry and its token endpoint as a plain function, for ``httpx.MockTransport`` tables.

Unit tests of the registry layer use it where the real registry (``support.registry``) would
be slow to set up for each row of a table, or cannot be made to answer as a row needs: each
row sets the images, the auth the registry wants and the faults it meets (an answer queued for
a path, returned before the registry's own). Every request is recorded.
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from urllib.parse import parse_qs, urlsplit

import httpx

OCI_INDEX = "application/vnd.oci.image.index.v1+json"
OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
OCI_CONFIG = "application/vnd.oci.image.config.v1+json"

Fault = Callable[[httpx.Request], httpx.Response] | httpx.Response | Exception


class Streamed(httpx.AsyncByteStream):
    """A body that arrives in chunks, as from a socket (``content=`` bodies are pre-read)."""

    def __init__(self, body: bytes, chunk: int = 16 * 1024) -> None:
        self._body, self._chunk = body, chunk

    async def __aiter__(self):  # type: ignore[no-untyped-def]
        for start in range(0, len(self._body), self._chunk):
            yield self._body[start : start + self._chunk]


def answer(status: int, body: bytes = b"", **headers: str) -> httpx.Response:
    """A response; ``content_type="..."`` becomes ``Content-Type``."""
    return httpx.Response(
        status, headers={k.replace("_", "-"): v for k, v in headers.items()}, stream=Streamed(body)
    )


def digest_of(body: bytes) -> str:
    return "sha256:" + hashlib.sha256(body).hexdigest()


def _json(document: object) -> bytes:
    return json.dumps(document, sort_keys=True).encode()


@dataclass
class MockRegistry:
    """``host`` serves ``/v2/<name>/manifests|blobs/<ref>``; with ``auth="bearer"`` it wants a
    token from ``realm`` whose scopes include the repository, with ``auth="basic"`` the
    ``users``' basic credentials. ``faults[path]`` answers are returned first, in order."""

    host: str = "registry.test"
    auth: str | None = None
    realm: str = "https://auth.test/token"
    users: dict[str, str] = field(default_factory=lambda: {"alice": "secret"})
    token_lifetime: int = 300
    manifests: dict[tuple[str, str], tuple[str, bytes]] = field(default_factory=dict)
    blobs: dict[str, bytes] = field(default_factory=dict)
    faults: dict[str, list[Fault]] = field(default_factory=dict)
    requests: list[httpx.Request] = field(default_factory=list)
    token_requests: list[httpx.Request] = field(default_factory=list)
    issued: dict[str, frozenset[str]] = field(default_factory=dict)

    # -- content ---------------------------------------------------------------------------

    def add_image(self, repository: str, tag: str, os: str = "linux", arch: str = "amd64") -> str:
        """A single-platform image (manifest and config blob); returns the manifest digest."""
        config = _json({"architecture": arch, "os": os, "rootfs": {"type": "layers"}})
        self.blobs[digest_of(config)] = config
        manifest = _json(
            {
                "schemaVersion": 2,
                "mediaType": OCI_MANIFEST,
                "config": {
                    "mediaType": OCI_CONFIG,
                    "digest": digest_of(config),
                    "size": len(config),
                },
                "layers": [],
            }
        )
        return self._put(repository, tag, OCI_MANIFEST, manifest)

    def add_index(
        self, repository: str, tag: str, platforms: Iterable[str], *, extra: Iterable[dict] = ()
    ) -> str:
        """An index of one image per ``os/arch`` (plus ``extra`` raw entries); its digest."""
        entries = []
        for platform in platforms:
            os, arch = platform.split("/")
            child = self.add_image(repository, f"{os}-{arch}-{tag}", os, arch)
            body = self.manifests[(repository, child)][1]
            entries.append(
                {
                    "mediaType": OCI_MANIFEST,
                    "digest": child,
                    "size": len(body),
                    "platform": {"os": os, "architecture": arch},
                }
            )
        entries.extend(extra)
        index = _json({"schemaVersion": 2, "mediaType": OCI_INDEX, "manifests": entries})
        return self._put(repository, tag, OCI_INDEX, index)

    def _put(self, repository: str, tag: str, media_type: str, body: bytes) -> str:
        digest = digest_of(body)
        self.manifests[(repository, tag)] = (media_type, body)
        self.manifests[(repository, digest)] = (media_type, body)
        return digest

    def fail(self, path: str, *answers: Fault) -> None:
        """Queue answers for ``path`` (e.g. ``/v2/app/manifests/1.0``), returned first."""
        self.faults.setdefault(path, []).extend(answers)

    def requests_to(self, path: str) -> list[httpx.Request]:
        return [r for r in self.requests if r.url.path == path]

    # -- the HTTP side ---------------------------------------------------------------------

    def __call__(self, request: httpx.Request) -> httpx.Response:
        url = urlsplit(str(request.url))
        is_token = f"{url.scheme}://{url.netloc}{url.path}" == self.realm
        (self.token_requests if is_token else self.requests).append(request)
        queued = self.faults.get(url.path)
        if queued:
            fault = queued.pop(0)
            if isinstance(fault, Exception):
                raise fault
            return fault(request) if callable(fault) else fault
        if is_token:
            return self._token(request)
        if url.netloc.lower() != self.host.lower():
            return answer(404)
        name, kind, reference = _split(url.path)
        refused = self._refuse(request, name)
        if refused is not None:
            return refused
        if kind == "manifests" and (name, reference) in self.manifests:
            media_type, body = self.manifests[(name, reference)]
            headers = {"content_type": media_type, "docker_content_digest": digest_of(body)}
            return answer(200, b"" if request.method == "HEAD" else body, **headers)
        if kind == "blobs" and reference in self.blobs:
            return answer(200, self.blobs[reference], content_type="application/octet-stream")
        code = "MANIFEST_UNKNOWN" if kind == "manifests" else "BLOB_UNKNOWN"
        return answer(404, _json({"errors": [{"code": code, "message": "unknown"}]}))

    def _refuse(self, request: httpx.Request, name: str) -> httpx.Response | None:
        authorization = request.headers.get("authorization", "")
        if self.auth == "basic":
            if authorization not in {_basic(u, p) for u, p in self.users.items()}:
                return answer(401, www_authenticate=f'Basic realm="{self.host}"')
        elif self.auth == "bearer":
            scope = f"repository:{name}:pull"
            if scope not in self.issued.get(authorization.removeprefix("Bearer "), frozenset()):
                return answer(
                    401,
                    www_authenticate=f'Bearer realm="{self.realm}",service="{self.host}",'
                    f'scope="{scope}"',
                )
        return None

    def _token(self, request: httpx.Request) -> httpx.Response:
        query = parse_qs(urlsplit(str(request.url)).query)
        authorization = request.headers.get("authorization")
        if authorization is not None and authorization not in {
            _basic(u, p) for u, p in self.users.items()
        }:
            return answer(401)
        token = f"token-{len(self.token_requests)}"
        self.issued[token] = frozenset(query.get("scope", []))
        body = _json({"token": token, "expires_in": self.token_lifetime})
        return answer(200, body, content_type="application/json")


def _split(path: str) -> tuple[str, str, str]:
    """``/v2/<name>/<manifests|blobs>/<reference>`` -> (name, kind, reference)."""
    for kind in ("manifests", "blobs"):
        marker = f"/{kind}/"
        if marker in path:
            name, _, reference = path.removeprefix("/v2/").rpartition(marker)
            return name, kind, reference
    return path, "", ""


def _basic(user: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()
