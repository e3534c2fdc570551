"""A real redis-server (Debian's) on 127.0.0.1, on a free port in a temporary directory: never
the machine's own instance. ``password`` sets ``requirepass``; with ``user`` too, an ACL user of
that name and password who may use only ``kmultiarch:*`` keys and the commands kmultiarch
sends (the default user is off)."""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from pathlib import Path

from .tools import missing


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


class RedisServer:
    def __init__(
        self,
        workdir: Path,
        *,
        password: str | None = None,
        user: str | None = None,
        tls: bool = False,
    ) -> None:
        binary = shutil.which("redis-server")
        if binary is None:
            missing("redis-server is not installed (scripts/install-tools)")
        assert binary is not None
        self.binary = binary
        self.workdir = workdir
        self.password = password
        self.user = user
        self.port = _free_port()
        self.tls = tls
        #: With ``tls``: the PEM of the test CA that signed the server's certificate.
        self.ca_pem: Path | None = None
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        auth = f"{self.user or ''}:{self.password}@" if self.password else ""
        scheme = "rediss" if self.tls else "redis"
        return f"{scheme}://{auth}127.0.0.1:{self.port}/0"

    def start(self) -> RedisServer:
        self.workdir.mkdir(parents=True, exist_ok=True)
        args = [
            self.binary,
            "--port",
            str(self.port),
            "--bind",
            "127.0.0.1",
            "--dir",
            str(self.workdir),
            "--save",
            "",
            "--appendonly",
            "no",
            # DEBUG SLEEP and POPULATE, for the fault tests.
            "--enable-debug-command",
            "yes",
        ]
        if self.password and self.user:
            args += ["--user", "default", "off"]
            # The commands docs/cache.md tells an operator to allow, and no others.
            commands = ["+get", "+mget", "+set", "+exists", "+del", "+scan", "+ping"]
            args += ["--user", self.user, "on", f">{self.password}", "~kmultiarch:*", *commands]
        elif self.password:
            args += ["--requirepass", self.password]
        if self.tls:
            import trustme

            ca = trustme.CA()
            certificate = ca.issue_cert("127.0.0.1", "localhost")
            self.ca_pem = self.workdir / "ca.pem"
            ca.cert_pem.write_to_path(str(self.ca_pem))
            certificate.cert_chain_pems[0].write_to_path(str(self.workdir / "server.pem"))
            certificate.private_key_pem.write_to_path(str(self.workdir / "server.key"))
            # The TLS port is the one clients use; the plain port is closed.
            args[args.index("--port") + 1] = "0"
            args += [
                "--tls-port",
                str(self.port),
                "--tls-cert-file",
                str(self.workdir / "server.pem"),
                "--tls-key-file",
                str(self.workdir / "server.key"),
                "--tls-ca-cert-file",
                str(self.ca_pem),
                "--tls-auth-clients",
                "no",
            ]
        self._process = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.2):
                    return self
            except OSError:
                time.sleep(0.05)
        raise RuntimeError("redis-server did not start")

    def restart(self) -> None:
        """Stop and start again on the same port: an empty server (nothing is saved)."""
        self.stop()
        self.start()

    def cli(self, *command: str) -> str:
        """``redis-cli`` as the test's operator (the URL's user and password)."""
        args = ["redis-cli", "-p", str(self.port)]
        if self.tls:
            assert self.ca_pem is not None
            args += ["--tls", "--cacert", str(self.ca_pem)]
        if self.user:
            args += ["--user", self.user]
        if self.password:
            args += ["--pass", self.password, "--no-auth-warning"]
        return subprocess.run([*args, *command], capture_output=True, text=True, check=True).stdout

    def stop(self) -> None:
        if self._process is not None:
            self._process.terminate()
            self._process.wait(timeout=10)
            self._process = None

    def __enter__(self) -> RedisServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()
