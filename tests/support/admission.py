"""``kmultiarch admission serve`` as a real process on 127.0.0.1, over HTTPS with a test CA
(trustme), and AdmissionReviews to post to it."""

from __future__ import annotations

import base64
import json
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import httpx
import trustme

from .cli import clean_env

#: The toleration the tests' policies give pods whose images all run on linux/arm64 (nodes
#: tainted as GKE taints arm64 nodes).
ARM_TOLERATION = {
    "key": "kubernetes.io/arch",
    "operator": "Equal",
    "value": "arm64",
    "effect": "NoSchedule",
}


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def write_certificates(directory: Path, ca: trustme.CA | None = None) -> tuple[Path, Path, Path]:
    """(ca.pem, cert.pem, key.pem) for 127.0.0.1 and localhost."""
    directory.mkdir(parents=True, exist_ok=True)
    ca = ca or trustme.CA()
    issued = ca.issue_cert("127.0.0.1", "localhost")
    ca_pem, cert_pem, key_pem = directory / "ca.pem", directory / "cert.pem", directory / "key.pem"
    ca.cert_pem.write_to_path(str(ca_pem))
    issued.private_key_pem.write_to_path(str(key_pem))
    issued.cert_chain_pems[0].write_to_path(str(cert_pem))
    return ca_pem, cert_pem, key_pem


class AdmissionServer:
    """The server in a process of its own; ``client()`` speaks to it."""

    def __init__(
        self,
        workdir: Path,
        policy: Path,
        *,
        extra_args: Sequence[str] = (),
        env: Mapping[str, str] | None = None,
    ) -> None:
        self.workdir = workdir
        self.policy = policy
        self.port = free_port()
        self.ca_pem, self.cert_pem, self.key_pem = write_certificates(workdir / "tls")
        self.extra_args = list(extra_args)
        self.env = dict(env or clean_env(workdir / "home"))
        self.env.pop("KUBECONFIG", None)
        self.env.pop("KUBERNETES_SERVICE_HOST", None)
        self.log = workdir / "server.log"
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.port}"

    def start(self) -> AdmissionServer:
        args = [
            sys.executable,
            "-m",
            "kmultiarch",
            "admission",
            "serve",
            "--config",
            str(self.policy),
            "--listen",
            f"127.0.0.1:{self.port}",
            "--tls-cert-file",
            str(self.cert_pem),
            "--tls-key-file",
            str(self.key_pem),
            "--cache-dir",
            str(self.workdir / "cache"),
            *self.extra_args,
        ]
        with self.log.open("wb") as log:
            self._process = subprocess.Popen(args, stdout=log, stderr=log, env=self.env)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                raise RuntimeError(f"the server exited: {self.log.read_text()}")
            try:
                with self.client() as client:
                    if client.get("/readyz").status_code == 200:
                        return self
            except httpx.TransportError:
                pass
            time.sleep(0.05)
        raise RuntimeError(f"the server did not become ready: {self.log.read_text()}")

    def client(self, **kwargs: Any) -> httpx.Client:
        return httpx.Client(base_url=self.url, verify=str(self.ca_pem), timeout=30, **kwargs)

    def alive(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def stop(self) -> None:
        if self._process is not None and self._process.poll() is None:
            self._process.terminate()
            try:
                self._process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()

    def __enter__(self) -> AdmissionServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


def pod(*images: str, init: Sequence[str] = (), **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "web"},
        "spec": {
            **spec,
            **(
                {"initContainers": [{"name": f"i{n}", "image": i} for n, i in enumerate(init)]}
                if init
                else {}
            ),
            "containers": [{"name": f"c{n}", "image": image} for n, image in enumerate(images)],
        },
    }


def review(pod_object: Mapping[str, Any], namespace: str = "default") -> dict[str, Any]:
    return {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": str(uuid.uuid4()),
            "kind": {"group": "", "version": "v1", "kind": "Pod"},
            "resource": {"group": "", "version": "v1", "resource": "pods"},
            "namespace": namespace,
            "operation": "CREATE",
            "object": dict(pod_object),
        },
    }


def patch_of(response: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The RFC 6902 operations of an AdmissionResponse ([] when none)."""
    if "patch" not in response:
        return []
    assert response["patchType"] == "JSONPatch"
    operations: list[dict[str, Any]] = json.loads(base64.b64decode(response["patch"]))
    return operations


def metric(text: str, name: str) -> float:
    """The value of one sample (``name`` with its labels, as /metrics writes it)."""
    for line in text.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[-1])
    raise AssertionError(f"{name} not in /metrics")
