"""A distribution token server on loopback: the Bearer half of registry auth, under test control.

A registry configured with ``auth: token`` answers 401 with
``WWW-Authenticate: Bearer realm=...,service=...,scope=...``; the client fetches
``GET <realm>?service=...&scope=repository:<name>:pull`` (anonymously or with basic auth) and
retries with the JWT it gets. This module is that realm: it signs tokens the real registry
verifies, grants access by simple rules (public repositories for anonymous pulls, users who may
do everything), leaves denied scopes out of ``access`` as Docker Hub does, and records each
request it answered so tests can count token fetches and see whether credentials were sent.

It never logs or records a password or a token.
"""

from __future__ import annotations

import base64
import binascii
import datetime as dt
import hashlib
import json
import secrets
import threading
import time
import urllib.parse
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Literal

import jwt
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

__all__ = ["TokenIssuer", "TokenRequest", "TokenRequestLog", "libtrust_key_id"]

#: What a user with credentials may do on any repository.
USER_ACTIONS = frozenset({"pull", "push"})

KeyReference = Literal["x5c", "kid"]


@dataclass(frozen=True)
class TokenRequest:
    """One request the issuer answered, as tests see it (no secrets).

    ``username`` is the name sent in a basic Authorization header (None when anonymous), whether
    or not the password was right; ``authorization_sent`` tells whether any Authorization header
    came at all, so a test can assert that credentials were not sent to a host they are not for.
    """

    time: float
    service: str | None
    scopes: tuple[str, ...]
    username: str | None
    authorization_sent: bool
    status: int


class TokenRequestLog:
    """The token requests an issuer answered after this log was made (a mark)."""

    def __init__(self, issuer: TokenIssuer) -> None:
        self._issuer = issuer
        self._start = len(issuer.requests())

    def requests(self) -> list[TokenRequest]:
        """Token requests answered since the mark, oldest first."""
        return self._issuer.requests()[self._start :]


def libtrust_key_id(public_key: ec.EllipticCurvePublicKey) -> str:
    """The key id distribution 2.x derives from a public key (docker/libtrust ``KeyID``).

    SHA-256 of the DER SubjectPublicKeyInfo, first 240 bits, base32, in twelve groups of four
    joined by ``:``. A JWT whose ``kid`` header equals it is checked against that certificate's key.
    """
    der = public_key.public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    encoded = base64.b32encode(hashlib.sha256(der).digest()[:30]).decode().rstrip("=")
    return ":".join(encoded[i : i + 4] for i in range(0, len(encoded), 4))


def _self_signed_certificate(key: ec.EllipticCurvePrivateKey, name: str) -> x509.Certificate:
    """A certificate for the signing key: distribution trusts keys only through certificates."""
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    now = dt.datetime.now(dt.UTC)
    return (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(days=1))
        .not_valid_after(now + dt.timedelta(days=30))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )


def _parse_scopes(values: Iterable[str]) -> tuple[str, ...]:
    """Scopes from the ``scope`` parameters; a parameter may hold several, space-separated."""
    return tuple(scope for value in values for scope in value.split() if scope)


class TokenIssuer:
    """A token realm for one registry ``service``, serving on 127.0.0.1 in a thread.

    Access rules: anonymous callers may pull the repositories in ``public_repositories``; each
    user in ``users`` (name to password) may pull and push every repository. ``expires_in`` is
    read for each token, so a test may change it and must put it back (the fixture is shared).
    Wrong credentials get 401, like Docker Hub; a ``service`` other than ours gets 400.

    Distribution checks the signature against the certificates in ``rootcertbundle``
    (``cert_path``); the JWT header names the key by ``x5c`` (the certificate itself) or by
    ``kid`` (libtrust key id): both are accepted by distribution 2.8, ``x5c`` by default.
    """

    def __init__(
        self,
        workdir: Path,
        *,
        service: str = "kmultiarch-test-registry",
        name: str = "kmultiarch-test-issuer",
        public_repositories: Iterable[str] = (),
        users: Mapping[str, str] | None = None,
        expires_in: int = 300,
        key_reference: KeyReference = "x5c",
    ) -> None:
        self.service = service
        self.name = name
        self.public_repositories = frozenset(public_repositories)
        self.users = dict(users or {})
        self.expires_in = expires_in
        self.key_reference: KeyReference = key_reference
        self._key = ec.generate_private_key(ec.SECP256R1())
        self._certificate = _self_signed_certificate(self._key, name)
        self.cert_path = workdir / "token-issuer.pem"
        self.cert_path.write_bytes(self._certificate.public_bytes(serialization.Encoding.PEM))
        self._lock = threading.Lock()
        self._requests: list[TokenRequest] = []
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle -------------------------------------------------------------------------

    def start(self) -> TokenIssuer:
        """Listen on a free loopback port and serve in a daemon thread."""
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self))
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.05},
            name="token-issuer",
            daemon=True,
        )
        self._thread.start()
        return self

    def close(self) -> None:
        """Stop serving; safe to call twice."""
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> TokenIssuer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    @property
    def url(self) -> str:
        """Base URL, e.g. ``http://127.0.0.1:40123``."""
        if self._server is None:
            raise RuntimeError("token issuer is not started")
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    @property
    def realm(self) -> str:
        """The realm a registry names in its Bearer challenge."""
        return f"{self.url}/token"

    # -- what tests read -------------------------------------------------------------------

    def requests(self) -> list[TokenRequest]:
        """Every request answered so far, oldest first."""
        with self._lock:
            return list(self._requests)

    def mark(self) -> TokenRequestLog:
        """A mark: its ``requests()`` are those answered after this call."""
        return TokenRequestLog(self)

    # -- token minting ---------------------------------------------------------------------

    def granted_access(
        self, scopes: Iterable[str], username: str | None
    ) -> list[dict[str, object]]:
        """The ``access`` claim for these scopes: what is allowed, denied scopes left out."""
        access: list[dict[str, object]] = []
        for scope in scopes:
            parts = scope.split(":")
            if len(parts) < 3 or parts[0] != "repository":
                continue
            repository, requested = ":".join(parts[1:-1]), parts[-1].split(",")
            if username is not None:
                allowed = USER_ACTIONS
            elif repository in self.public_repositories:
                allowed = frozenset({"pull"})
            else:
                allowed = frozenset()
            actions = [action for action in requested if action in allowed]
            if actions:
                access.append({"type": "repository", "name": repository, "actions": actions})
        return access

    def issue(self, scopes: Iterable[str], username: str | None) -> dict[str, object]:
        """The JSON body of a token response for an authenticated (or anonymous) caller."""
        now = int(time.time())
        claims = {
            "iss": self.name,
            "sub": username or "",
            "aud": self.service,
            "exp": now + self.expires_in,
            "nbf": now - 1,
            "iat": now,
            "jti": secrets.token_hex(16),
            "access": self.granted_access(scopes, username),
        }
        if self.key_reference == "x5c":
            der = self._certificate.public_bytes(serialization.Encoding.DER)
            headers: dict[str, object] = {"x5c": [base64.b64encode(der).decode()]}
        else:
            headers = {"kid": libtrust_key_id(self._key.public_key())}
        token = jwt.encode(claims, self._key, algorithm="ES256", headers=headers)
        issued_at = dt.datetime.fromtimestamp(now, dt.UTC).isoformat().replace("+00:00", "Z")
        return {
            "token": token,
            "access_token": token,
            "expires_in": self.expires_in,
            "issued_at": issued_at,
        }

    def _record(self, request: TokenRequest) -> None:
        with self._lock:
            self._requests.append(request)


def _basic_credentials(header: str | None) -> tuple[str, str] | None:
    """(user, password) from a basic Authorization header, None when absent or not basic."""
    if not header or not header.lower().startswith("basic "):
        return None
    try:
        decoded = base64.b64decode(header[6:].strip(), validate=True).decode()
    except (binascii.Error, UnicodeDecodeError):
        return None
    username, sep, password = decoded.partition(":")
    return (username, password) if sep else None


def _handler_for(issuer: TokenIssuer) -> type[BaseHTTPRequestHandler]:
    """A request handler class bound to one issuer (http.server instantiates it per request)."""

    class TokenHandler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self) -> None:
            url = urllib.parse.urlsplit(self.path)
            if url.path != "/token":
                self._reply(HTTPStatus.NOT_FOUND, {"details": "not found"})
                return
            query = urllib.parse.parse_qs(url.query)
            service = query.get("service", [None])[0]
            scopes = _parse_scopes(query.get("scope", []))
            header = self.headers.get("Authorization")
            credentials = _basic_credentials(header)
            username = credentials[0] if credentials else None

            if header is not None and credentials is None:
                status, body = HTTPStatus.UNAUTHORIZED, {"details": "unsupported authorization"}
            elif credentials is not None and issuer.users.get(username or "") != credentials[1]:
                status, body = (
                    HTTPStatus.UNAUTHORIZED,
                    {"details": "incorrect username or password"},
                )
            elif service is not None and service != issuer.service:
                status, body = HTTPStatus.BAD_REQUEST, {"details": f"unknown service {service!r}"}
            else:
                status, body = HTTPStatus.OK, issuer.issue(scopes, username)
            issuer._record(
                TokenRequest(
                    time=time.time(),
                    service=service,
                    scopes=scopes,
                    username=username,
                    authorization_sent=header is not None,
                    status=int(status),
                )
            )
            self._reply(status, body)

        def _reply(self, status: HTTPStatus, body: Mapping[str, object]) -> None:
            payload = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            if status == HTTPStatus.UNAUTHORIZED:
                self.send_header("WWW-Authenticate", f'Basic realm="{issuer.name}"')
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, format: str, *args: object) -> None:
            """Silent: requests are recorded as data instead, and nothing secret is printed."""

    return TokenHandler
