"""A real distribution registry (Debian's ``docker-registry``, v2.8) on loopback, for tests.

kmultiarch's integration tests talk to the real reference registry rather than a fake, so the
media types, challenges, digests and edge behaviours are the ones users meet. ``RegistryServer``
writes a config into a temporary directory, starts ``docker-registry serve`` on 127.0.0.1 with a
free port, and can add TLS (a trustme CA), htpasswd basic auth or token auth, alone or combined.

The registry writes an Apache "combined" access log line for every request it answers, whatever
the status; ``mark()`` returns a ``RequestLog`` whose ``requests()`` are the
``(method, path-with-query, status)`` tuples seen since, so tests can assert request counts.
"""

from __future__ import annotations

import functools
import os
import re
import secrets
import shutil
import socket
import ssl
import subprocess
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

import bcrypt
import httpx
import trustme
import yaml

__all__ = [
    "REGISTRY_BINARY",
    "BasicAuth",
    "LoggedRequest",
    "RegistryServer",
    "RegistryStartError",
    "RequestLog",
    "TlsFiles",
    "TokenAuth",
    "default_ssl_context",
    "registry_binary",
]

REGISTRY_BINARY = "docker-registry"

#: Requests to this path only mark a point in the access log; they are left out of results.
_SYNC_PATH = "/_kmultiarch/log-sync/"

_ACCESS_LINE = re.compile(
    r'^\S+ \S+ \S+ \[[^\]]*\] "(?P<method>[A-Z]+) (?P<path>\S+) [^"]*" (?P<status>\d{3}) '
)


def registry_binary() -> str | None:
    """Path of ``docker-registry`` on PATH (or in /usr/bin, where Debian puts it), else None."""
    return shutil.which(REGISTRY_BINARY) or shutil.which(REGISTRY_BINARY, path="/usr/bin")


@functools.cache
def default_ssl_context() -> ssl.SSLContext:
    """The system-trust client context, built once.

    httpx builds one per client unless given a context, and loading the system CAs costs some
    25 ms: more than the requests of a typical harness call.
    """
    return ssl.create_default_context()


class RegistryStartError(RuntimeError):
    """The registry process exited or did not answer in time; the message holds its log tail."""


#: A name, besides 127.0.0.1 and localhost, that TLS registries' certificates cover: only a
#: proxy (support.forward_proxy) resolves it, for tests of HTTPS through a proxy.
PROXIED_TLS_NAME = "registry.corp.test"


@dataclass(frozen=True)
class TlsFiles:
    """Server certificate and key for 127.0.0.1 and localhost, and the CA that signed them."""

    certificate: Path
    key: Path
    ca_pem: Path

    def ssl_context(self) -> ssl.SSLContext:
        """A client context trusting only the test CA (httpx deprecates ``verify=<path>``)."""
        return ssl.create_default_context(cafile=str(self.ca_pem))

    @classmethod
    def issue(cls, directory: Path) -> TlsFiles:
        """A fresh trustme CA and server certificate, written as PEM files into ``directory``."""
        ca = trustme.CA()
        # PROXIED_TLS_NAME: the name the proxy tests reach it under, through a CONNECT tunnel.
        server = ca.issue_cert("127.0.0.1", "localhost", PROXIED_TLS_NAME)
        files = cls(
            certificate=directory / "server-chain.pem",
            key=directory / "server-key.pem",
            ca_pem=directory / "ca.pem",
        )
        files.certificate.write_bytes(b"".join(blob.bytes() for blob in server.cert_chain_pems))
        server.private_key_pem.write_to_path(str(files.key))
        ca.cert_pem.write_to_path(str(files.ca_pem))
        return files


@dataclass(frozen=True)
class BasicAuth:
    """htpasswd credentials: one user, a password made for the session."""

    username: str
    password: str = field(repr=False)
    htpasswd: Path
    realm: str = "kmultiarch-test"

    @classmethod
    def create(cls, directory: Path, username: str = "alice") -> BasicAuth:
        """Write a bcrypt htpasswd file for ``username`` with a random password.

        Cost 4 (the minimum): the registry checks the hash on every request, and the default
        cost would add tens of milliseconds to each.
        """
        password = secrets.token_urlsafe(18)
        hashed = bcrypt.hashpw(password.encode(), bcrypt.gensalt(rounds=4)).decode()
        path = directory / "htpasswd"
        path.write_text(f"{username}:{hashed}\n")
        return cls(username=username, password=password, htpasswd=path)

    def config(self) -> dict[str, Any]:
        return {"htpasswd": {"realm": self.realm, "path": str(self.htpasswd)}}


@dataclass(frozen=True)
class TokenAuth:
    """Where the registry sends clients for tokens, and which signing certificates it trusts."""

    realm: str
    service: str
    issuer: str
    rootcertbundle: Path

    def config(self) -> dict[str, Any]:
        return {
            "token": {
                "realm": self.realm,
                "service": self.service,
                "issuer": self.issuer,
                "rootcertbundle": str(self.rootcertbundle),
            }
        }


class LoggedRequest(NamedTuple):
    """One request from the access log; compares equal to a plain ``(method, path, status)``."""

    method: str
    path: str
    status: int


class RequestLog:
    """The requests a registry answered after this mark was taken (see ``RegistryServer.mark``)."""

    def __init__(self, server: RegistryServer, offset: int) -> None:
        self._server = server
        self._offset = offset

    def requests(self) -> list[LoggedRequest]:
        """All requests since the mark, oldest first (log-sync probes excluded)."""
        return self._server.requests_since(self._offset)

    def count(self, method: str | None = None, path_contains: str = "") -> int:
        """How many requests since the mark match ``method`` and contain ``path_contains``."""
        return sum(
            1
            for request in self.requests()
            if (method is None or request.method == method) and path_contains in request.path
        )


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class RegistryServer:
    """One ``docker-registry serve`` process on 127.0.0.1, with its config, data and logs.

    ``start()`` only spawns the process, so several servers can boot in parallel;
    ``wait_ready()`` then polls ``GET /v2/`` until it answers 200 or 401. ``close()`` terminates
    the process (then kills it) and is safe to call twice.

    ``storage_from`` names another server's storage directory to copy before starting: seeding
    through the API costs a few hundred milliseconds per registry, copying its result a few.
    """

    def __init__(
        self,
        workdir: Path,
        *,
        tls: TlsFiles | None = None,
        auth: BasicAuth | TokenAuth | None = None,
        schema1: bool = True,
        storage_from: Path | None = None,
    ) -> None:
        self.workdir = workdir
        self.tls = tls
        self.auth = auth
        self.schema1 = schema1
        self.storage_from = storage_from
        self.port = 0
        self.storage = workdir / "data"
        self.config_path = workdir / "config.yml"
        self.access_log = workdir / "access.log"
        self.log_path = workdir / "registry.log"
        self._process: subprocess.Popen[bytes] | None = None

    # -- addresses -------------------------------------------------------------------------

    @property
    def host(self) -> str:
        """``127.0.0.1:<port>``: the registry part of an image reference."""
        return f"127.0.0.1:{self.port}"

    @property
    def scheme(self) -> str:
        return "https" if self.tls else "http"

    @property
    def url(self) -> str:
        return f"{self.scheme}://{self.host}"

    @property
    def ca_pem(self) -> Path | None:
        return self.tls.ca_pem if self.tls else None

    def verify(self) -> ssl.SSLContext:
        """What to pass as httpx ``verify=`` to trust this registry."""
        return self.tls.ssl_context() if self.tls else default_ssl_context()

    def client(self, **kwargs: Any) -> httpx.Client:
        """An httpx client for this registry: base URL set, the test CA trusted when TLS is on."""
        kwargs.setdefault("verify", self.verify())
        kwargs.setdefault("timeout", 10.0)
        return httpx.Client(base_url=self.url, **kwargs)

    # -- config and lifecycle --------------------------------------------------------------

    def config(self) -> dict[str, Any]:
        """The distribution configuration for the current port."""
        http: dict[str, Any] = {
            "addr": self.host,
            # Fixed, so upload state signed by one process would still verify in another.
            "secret": "kmultiarch-test-http-secret",
        }
        if self.tls:
            http["tls"] = {"certificate": str(self.tls.certificate), "key": str(self.tls.key)}
        config: dict[str, Any] = {
            "version": "0.1",
            # JSON for the application log; the access log is separate, on stdout.
            "log": {"level": "info", "formatter": "json"},
            "storage": {
                "filesystem": {"rootdirectory": str(self.storage)},
                "maintenance": {"uploadpurging": {"enabled": False}},
                "redirect": {"disable": True},
            },
            "http": http,
        }
        if self.auth:
            config["auth"] = self.auth.config()
        if self.schema1:
            config["compatibility"] = {"schema1": {"enabled": True}}
        return config

    def start(self) -> RegistryServer:
        """Write the config and spawn the registry on a free port; do not wait for it."""
        binary = registry_binary()
        if binary is None:
            raise RegistryStartError(f"{REGISTRY_BINARY} is not installed")
        self.workdir.mkdir(parents=True, exist_ok=True)
        if self.storage_from is not None and not self.storage.exists():
            shutil.copytree(self.storage_from, self.storage)
        self.port = _free_port()
        self.config_path.write_text(yaml.safe_dump(self.config(), sort_keys=False))
        # REGISTRY_* variables override the config file: keep the caller's out.
        env = {key: value for key, value in os.environ.items() if not key.startswith("REGISTRY_")}
        with self.access_log.open("ab") as stdout, self.log_path.open("ab") as stderr:
            self._process = subprocess.Popen(
                [binary, "serve", str(self.config_path)],
                stdin=subprocess.DEVNULL,
                stdout=stdout,
                stderr=stderr,
                env=env,
            )
        return self

    def wait_ready(self, timeout: float = 10.0) -> None:
        """Poll ``GET /v2/`` until it answers 200 or 401; restart once on a lost port race."""
        for attempt in range(3):
            try:
                self._poll_ready(timeout)
            except RegistryStartError:
                if attempt == 2 or "address already in use" not in self._log_tail():
                    raise
                self.close()
                self.start()
            else:
                return

    def _poll_ready(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        with self.client(timeout=1.0) as client:
            while True:
                if self._process is None or self._process.poll() is not None:
                    raise RegistryStartError(f"registry exited:\n{self._log_tail()}")
                try:
                    if client.get("/v2/").status_code in (200, 401):
                        return
                except httpx.TransportError:
                    pass
                if time.monotonic() > deadline:
                    raise RegistryStartError(
                        f"registry not ready in {timeout}s:\n{self._log_tail()}"
                    )
                time.sleep(0.01)

    def _log_tail(self, lines: int = 20) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except FileNotFoundError:
            return "(no log)"

    def close(self) -> None:
        """Stop the registry: terminate, then kill if it lingers."""
        process, self._process = self._process, None
        if process is None or process.poll() is not None:
            return
        process.terminate()
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=5)

    def __enter__(self) -> RegistryServer:
        self.start()
        self.wait_ready()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # -- request log -----------------------------------------------------------------------

    def mark(self) -> RequestLog:
        """A mark in the access log: its ``requests()`` are those answered after this call."""
        _, end = self._sync_log(self._log_size())
        return RequestLog(self, end)

    def requests(self) -> list[LoggedRequest]:
        """Every request since the registry started, readiness polls included."""
        return self.requests_since(0)

    def requests_since(self, offset: int) -> list[LoggedRequest]:
        """Requests logged after byte ``offset`` of the access log, oldest first."""
        text, _ = self._sync_log(offset)
        logged: list[LoggedRequest] = []
        for line in text.splitlines():
            match = _ACCESS_LINE.match(line)
            if match is None or match["path"].startswith(_SYNC_PATH):
                continue
            logged.append(LoggedRequest(match["method"], match["path"], int(match["status"])))
        return logged

    def _log_size(self) -> int:
        return self.access_log.stat().st_size if self.access_log.exists() else 0

    def _sync_log(self, offset: int, timeout: float = 5.0) -> tuple[str, int]:
        """The access log from ``offset`` through a fresh probe's line, and the offset after it.

        The registry writes a request's line just after the response went out, so a reader
        right after its last response could miss it (or, taking a mark, count it as later).
        A probe to a path nobody else uses is sent, and the log is read once the probe's line is
        in it: every request answered before the probe was sent is logged by then.
        """
        probe = f"{_SYNC_PATH}{uuid.uuid4().hex}"
        with self.client(timeout=timeout) as client:
            client.get(probe)
        needle = f" {probe} ".encode()
        deadline = time.monotonic() + timeout
        while True:
            with self.access_log.open("rb") as log:
                log.seek(offset)
                data = log.read()
            found = data.find(needle)
            line_end = data.find(b"\n", found) if found >= 0 else -1
            if line_end >= 0:
                return data[: line_end + 1].decode(errors="replace"), offset + line_end + 1
            if time.monotonic() > deadline:
                raise TimeoutError(f"log-sync probe {probe} never reached {self.access_log}")
            time.sleep(0.002)
