"""A real Kubernetes control plane on loopback: etcd, kube-apiserver and kube-scheduler.

etcd is Debian's ``etcd-server``; kube-apiserver and kube-scheduler are v1.20.2, built from
Debian's ``kubernetes`` source package by ``scripts/build-kubernetes`` into
``.tools/kubernetes/bin``. Each process listens on free 127.0.0.1 ports only and keeps its data,
certificates and log in its own directory (etcd's data on /dev/shm when there is one: the API
server's writes wait for etcd's fsyncs).

What runs is a control plane without controllers or kubelets, so ``KubeCluster`` does their part:

- a Node is created with the ``node.kubernetes.io/not-ready:NoSchedule`` taint by the
  TaintNodesByCondition admission plugin (kubernetes v1.20.2
  plugin/pkg/admission/nodetaint/admission.go, ``Admit`` on Create; the node lifecycle
  controller removes it once the kubelet reports Ready). ``create_node`` reports the node Ready
  with allocatable cpu, memory and pods, as a kubelet does, then sets the node's taints to the
  requested ones, which drops not-ready (the plugin is not called on updates);
- a Pod is refused unless its ServiceAccount exists (plugin/pkg/admission/serviceaccount
  /admission.go, ``Admit``: "error looking up service account"), and the ServiceAccount
  controller that makes ``default`` in each namespace does not run: ``ensure_namespace`` creates
  it, with ``automountServiceAccountToken: false`` since no token controller makes the secret the
  plugin would mount;
- with no kubelet to stop containers, a pod is deleted at once (``gracePeriodSeconds: 0``).

The API is reached with plain httpx, as the admin user of a static token file (group
``system:masters``); the scheduler has its own token as user ``system:kube-scheduler``, whom the
API server's bootstrap RBAC policy binds to the scheduler's roles.
"""

from __future__ import annotations

import datetime
import os
import secrets
import shutil
import socket
import ssl
import subprocess
import tempfile
import time
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import trustme
import yaml
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from .tools import REPO

__all__ = [
    "KUBE_BIN",
    "KubeApiError",
    "KubeCluster",
    "KubeStartError",
    "missing_kube_binaries",
]

#: Where scripts/build-kubernetes puts kube-apiserver and kube-scheduler.
KUBE_BIN = REPO / ".tools" / "kubernetes" / "bin"

#: The service network the API server allocates ClusterIPs from (its own Service takes .1).
SERVICE_CIDR = "10.96.0.0/24"

_CORE_GROUP_PATH = "/api/v1"


def _kube_binary(name: str) -> Path | None:
    configured = os.environ.get(f"KMULTIARCH_{name.upper().replace('-', '_')}")
    candidate = Path(configured) if configured else KUBE_BIN / name
    return candidate if candidate.is_file() and os.access(candidate, os.X_OK) else None


def missing_kube_binaries() -> list[str]:
    """What of etcd, kube-apiserver and kube-scheduler is not installed (empty when all are)."""
    absent = [name for name in ("kube-apiserver", "kube-scheduler") if _kube_binary(name) is None]
    if shutil.which("etcd") is None:
        absent.insert(0, "etcd")
    return absent


def _free_ports(count: int) -> list[int]:
    """``count`` distinct free ports on 127.0.0.1 (all held open together while picked)."""
    sockets = [socket.socket(socket.AF_INET, socket.SOCK_STREAM) for _ in range(count)]
    try:
        for sock in sockets:
            sock.bind(("127.0.0.1", 0))
        return [int(sock.getsockname()[1]) for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()


class KubeStartError(RuntimeError):
    """A control-plane process exited or did not become ready; the message holds its log tail."""


class KubeApiError(RuntimeError):
    """The API server answered a request with an error ``status`` (its Status message inside)."""

    def __init__(self, method: str, path: str, status: int, message: str) -> None:
        super().__init__(f"{method} {path}: {status} {message}")
        self.status = status
        self.message = message


@dataclass
class _Daemon:
    """One control-plane process, its command line and its log file."""

    name: str
    args: list[str]
    log: Path
    env: Mapping[str, str]
    process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        with self.log.open("ab") as log:
            self.process = subprocess.Popen(
                self.args,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=dict(self.env),
            )

    def check_running(self) -> None:
        if self.process is None or self.process.poll() is not None:
            raise KubeStartError(f"{self.name} exited:\n{self.tail()}")

    def tail(self, lines: int = 30) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        except FileNotFoundError:
            return "(no log)"

    def stop(self) -> None:
        process, self.process = self.process, None
        if process is None or process.poll() is not None:
            return
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)


def _process_env() -> dict[str, str]:
    """The environment of the control plane: no proxy settings (the API server would send its
    webhook calls through one), no KUBECONFIG of the user's."""
    dropped = {"http_proxy", "https_proxy", "all_proxy", "no_proxy", "kubeconfig"}
    env = {key: value for key, value in os.environ.items() if key.lower() not in dropped}
    env["NO_PROXY"] = "127.0.0.1,localhost"
    return env


def _wait_until(
    ready: Callable[[], bool], daemon: _Daemon, timeout: float, interval: float = 0.1
) -> None:
    deadline = time.monotonic() + timeout
    while True:
        daemon.check_running()
        try:
            if ready():
                return
        except httpx.TransportError:
            pass
        if time.monotonic() > deadline:
            raise KubeStartError(f"{daemon.name} not ready in {timeout:.0f}s:\n{daemon.tail()}")
        time.sleep(interval)


def _parse_taint(taint: str | Mapping[str, str]) -> dict[str, str]:
    """``key[=value]:Effect`` (kubectl taint's form) or a Taint object, as a Taint object."""
    if not isinstance(taint, str):
        return dict(taint)
    key_value, _, effect = taint.rpartition(":")
    if not key_value or effect not in ("NoSchedule", "PreferNoSchedule", "NoExecute"):
        raise ValueError(
            f"taint {taint!r} is not key[=value]:NoSchedule|PreferNoSchedule|NoExecute"
        )
    key, _, value = key_value.partition("=")
    parsed = {"key": key, "effect": effect}
    if value:
        parsed["value"] = value
    return parsed


@dataclass(frozen=True)
class _Resource:
    path: str  # the collection's path without namespace: /api/v1/pods, /apis/g/v/things
    namespaced: bool

    def collection(self, namespace: str | None) -> str:
        if not self.namespaced:
            return self.path
        if not namespace:
            raise ValueError(f"{self.path} is namespaced: the object needs metadata.namespace")
        prefix, _, plural = self.path.rpartition("/")
        return f"{prefix}/namespaces/{namespace}/{plural}"


@dataclass
class KubeCluster:
    """etcd, kube-apiserver and kube-scheduler on 127.0.0.1, and helpers to drive them.

    ``start()`` returns once the API server is ready (``/readyz``) and the scheduler answers
    its health check; ``stop()`` stops the scheduler, then the API server, then etcd.
    """

    workdir: Path
    #: The admin's bearer token (group system:masters).
    token: str = field(default_factory=lambda: secrets.token_urlsafe(24), repr=False)
    server: str = ""
    ca_file: Path = field(init=False)
    kubeconfig: Path = field(init=False)
    _daemons: list[_Daemon] = field(default_factory=list, repr=False)
    _etcd_dir: Path | None = field(default=None, repr=False)
    _client: httpx.Client | None = field(default=None, repr=False)
    _resources: dict[tuple[str, str], _Resource] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        self.ca_file = self.workdir / "ca.pem"
        self.kubeconfig = self.workdir / "kubeconfig"

    # -- lifecycle -------------------------------------------------------------------------

    def start(self) -> KubeCluster:
        """Start etcd, the API server and the scheduler, again on other ports if one of the
        ports picked was taken before its process could bind it."""
        for attempt in range(3):
            try:
                return self._start()
            except KubeStartError as error:
                if attempt == 2 or "address already in use" not in str(error):
                    raise
        raise AssertionError("unreachable")

    def _start(self) -> KubeCluster:
        absent = missing_kube_binaries()
        if absent:
            raise KubeStartError(f"not installed: {', '.join(absent)} (scripts/install-tools)")
        apiserver_binary, scheduler_binary = (
            str(_kube_binary(name)) for name in ("kube-apiserver", "kube-scheduler")
        )
        self.workdir.mkdir(parents=True, exist_ok=True)
        etcd_client, etcd_peer, api_port, scheduler_port = _free_ports(4)
        self.server = f"https://127.0.0.1:{api_port}"
        pki = self.workdir / "pki"
        pki.mkdir(exist_ok=True)
        scheduler_token = secrets.token_urlsafe(24)
        self._write_pki(pki, scheduler_token)
        self._write_kubeconfig(self.kubeconfig, self.token, "admin")
        scheduler_kubeconfig = pki / "scheduler.kubeconfig"
        self._write_kubeconfig(scheduler_kubeconfig, scheduler_token, "system:kube-scheduler")
        env = _process_env()
        shm = Path("/dev/shm")
        self._etcd_dir = Path(
            tempfile.mkdtemp(prefix="kmultiarch-etcd-", dir=shm if shm.is_dir() else self.workdir)
        )
        etcd_url = f"http://127.0.0.1:{etcd_client}"
        peer_url = f"http://127.0.0.1:{etcd_peer}"
        etcd = _Daemon(
            "etcd",
            [
                shutil.which("etcd") or "etcd",
                "--name=kmultiarch",
                f"--data-dir={self._etcd_dir / 'data'}",
                f"--listen-client-urls={etcd_url}",
                f"--advertise-client-urls={etcd_url}",
                f"--listen-peer-urls={peer_url}",
                f"--initial-advertise-peer-urls={peer_url}",
                f"--initial-cluster=kmultiarch={peer_url}",
                "--logger=zap",
                "--log-level=warn",
            ],
            self.workdir / "etcd.log",
            env,
        )
        apiserver = _Daemon(
            "kube-apiserver",
            [
                apiserver_binary,
                f"--etcd-servers={etcd_url}",
                "--bind-address=127.0.0.1",
                "--advertise-address=127.0.0.1",
                f"--secure-port={api_port}",
                # v1.20 still serves plain HTTP on localhost:8080 unless told not to.
                "--insecure-port=0",
                f"--cert-dir={pki}",
                f"--tls-cert-file={pki / 'apiserver.pem'}",
                f"--tls-private-key-file={pki / 'apiserver-key.pem'}",
                f"--token-auth-file={pki / 'tokens.csv'}",
                "--authorization-mode=RBAC",
                # v1.20 requires both (cmd/kube-apiserver/app/options/validation.go).
                f"--service-account-key-file={pki / 'service-account.pub'}",
                f"--service-account-signing-key-file={pki / 'service-account.key'}",
                "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
                f"--service-cluster-ip-range={SERVICE_CIDR}",
                # The `kubernetes` Service's endpoints would be this loopback address, which
                # Endpoints validation refuses: keep the reconciler from retrying it all along.
                "--endpoint-reconciler-type=none",
                # The default plugins (NamespaceLifecycle, ServiceAccount, TaintNodesByCondition,
                # DefaultTolerationSeconds, Priority, MutatingAdmissionWebhook, ...) run as in a
                # real cluster; none of them needs a controller.
                "--profiling=false",
                "--v=1",
            ],
            self.workdir / "kube-apiserver.log",
            env,
        )
        scheduler = _Daemon(
            "kube-scheduler",
            [
                scheduler_binary,
                f"--kubeconfig={scheduler_kubeconfig}",
                "--leader-elect=false",
                "--bind-address=127.0.0.1",
                f"--secure-port={scheduler_port}",
                # v1.20 also serves plain HTTP on 10251 unless told not to.
                "--port=0",
                f"--cert-dir={pki / 'scheduler'}",
                "--v=1",
            ],
            self.workdir / "kube-scheduler.log",
            env,
        )
        try:
            etcd.start()
            self._daemons.append(etcd)
            _wait_until(lambda: self._etcd_healthy(etcd_url), etcd, timeout=30)
            apiserver.start()
            self._daemons.append(apiserver)
            _wait_until(self._apiserver_ready, apiserver, timeout=90, interval=0.25)
            scheduler.start()
            self._daemons.append(scheduler)
            _wait_until(lambda: self._scheduler_healthy(scheduler_port), scheduler, timeout=60)
            self.ensure_namespace("default")
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        """Stop the scheduler first (it would retry against a dying API server), then the API
        server, then etcd; remove etcd's data."""
        if self._client is not None:
            self._client.close()
            self._client = None
        while self._daemons:
            self._daemons.pop().stop()
        if self._etcd_dir is not None:
            shutil.rmtree(self._etcd_dir, ignore_errors=True)
            self._etcd_dir = None

    def __enter__(self) -> KubeCluster:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def log_tail(self, name: str, lines: int = 40) -> str:
        """The last lines of ``etcd``'s, ``kube-apiserver``'s or ``kube-scheduler``'s log."""
        return _Daemon(name, [], self.workdir / f"{name}.log", {}).tail(lines)

    # -- setup -----------------------------------------------------------------------------

    def _write_pki(self, pki: Path, scheduler_token: str) -> None:
        ca = trustme.CA()
        serving = ca.issue_cert(
            "127.0.0.1",
            "localhost",
            "kubernetes",
            "kubernetes.default",
            "kubernetes.default.svc",
            "10.96.0.1",
        )
        ca.cert_pem.write_to_path(str(self.ca_file))
        (pki / "apiserver.pem").write_bytes(
            b"".join(blob.bytes() for blob in serving.cert_chain_pems)
        )
        serving.private_key_pem.write_to_path(str(pki / "apiserver-key.pem"))
        # The static token file: token,user,uid,"group,...".
        (pki / "tokens.csv").write_text(
            f'{self.token},admin,admin,"system:masters"\n'
            f"{scheduler_token},system:kube-scheduler,system:kube-scheduler\n"
        )
        key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        (pki / "service-account.key").write_bytes(
            key.private_bytes(
                serialization.Encoding.PEM,
                serialization.PrivateFormat.TraditionalOpenSSL,
                serialization.NoEncryption(),
            )
        )
        (pki / "service-account.pub").write_bytes(
            key.public_key().public_bytes(
                serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
            )
        )
        for path in pki.iterdir():
            path.chmod(0o600)

    def _write_kubeconfig(self, path: Path, token: str, user: str) -> None:
        config = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [
                {
                    "name": "kmultiarch-test",
                    "cluster": {"server": self.server, "certificate-authority": str(self.ca_file)},
                }
            ],
            "users": [{"name": user, "user": {"token": token}}],
            "contexts": [
                {"name": "kmultiarch-test", "context": {"cluster": "kmultiarch-test", "user": user}}
            ],
            "current-context": "kmultiarch-test",
        }
        path.write_text(yaml.safe_dump(config, sort_keys=False))
        path.chmod(0o600)

    @staticmethod
    def _etcd_healthy(url: str) -> bool:
        response = httpx.get(f"{url}/health", timeout=1.0)
        return response.status_code == 200 and '"health":"true"' in response.text.replace(" ", "")

    def _apiserver_ready(self) -> bool:
        return self.client().get("/readyz", timeout=2.0).status_code == 200

    @staticmethod
    def _scheduler_healthy(port: int) -> bool:
        # The scheduler serves its health check with a certificate it made for itself.
        response = httpx.get(f"https://127.0.0.1:{port}/healthz", verify=False, timeout=1.0)
        return response.status_code == 200

    # -- the API ---------------------------------------------------------------------------

    def ssl_context(self) -> ssl.SSLContext:
        """A client context trusting only the cluster's CA."""
        return ssl.create_default_context(cafile=str(self.ca_file))

    def client(self) -> httpx.Client:
        """An httpx client for the API server, as the admin (shared; do not close it)."""
        if self._client is None:
            self._client = httpx.Client(
                base_url=self.server,
                verify=self.ssl_context(),
                headers={"Authorization": f"Bearer {self.token}"},
                timeout=30.0,
                trust_env=False,
            )
        return self._client

    def request(
        self,
        method: str,
        path: str,
        *,
        body: Any = None,
        params: Mapping[str, str] | None = None,
        content_type: str = "application/json",
        allow: Iterable[int] = (),
    ) -> dict[str, Any]:
        """``method path`` with a JSON ``body``; the decoded answer. A status >= 400 raises
        ``KubeApiError`` unless it is in ``allow`` (then its Status object is returned)."""
        headers = {"Content-Type": content_type} if body is not None else {}
        response = self.client().request(method, path, json=body, params=params, headers=headers)
        try:
            answer: dict[str, Any] = response.json()
        except ValueError:
            answer = {"message": response.text}
        if response.status_code >= 400 and response.status_code not in set(allow):
            raise KubeApiError(method, path, response.status_code, str(answer.get("message")))
        return answer

    def _resource(self, api_version: str, kind: str) -> _Resource:
        """The collection of ``kind`` in ``api_version``, from the API server's discovery."""
        if (api_version, kind) not in self._resources:
            group_path = _CORE_GROUP_PATH if api_version == "v1" else f"/apis/{api_version}"
            for entry in self.request("GET", group_path)["resources"]:
                if "/" not in entry["name"]:
                    self._resources[(api_version, entry["kind"])] = _Resource(
                        f"{group_path}/{entry['name']}", bool(entry["namespaced"])
                    )
        try:
            return self._resources[(api_version, kind)]
        except KeyError:
            raise ValueError(f"the API server serves no {kind} in {api_version}") from None

    def object_path(self, api_version: str, kind: str, name: str, namespace: str | None) -> str:
        """The API path of one object, e.g. ``/api/v1/namespaces/ns/pods/name``."""
        return f"{self._resource(api_version, kind).collection(namespace)}/{name}"

    def get(
        self, api_version: str, kind: str, name: str, namespace: str | None = None
    ) -> dict[str, Any] | None:
        """The object, or None when there is none."""
        path = self.object_path(api_version, kind, name, namespace)
        answer = self.request("GET", path, allow=(404,))
        return None if answer.get("kind") == "Status" else answer

    def apply(self, manifest: Mapping[str, Any]) -> dict[str, Any]:
        """Create ``manifest``, or replace the object of that name; the stored object.

        A namespaced object's namespace (default: ``default``) is made first, with its
        ``default`` ServiceAccount (``ensure_namespace``).
        """
        document = dict(manifest)
        metadata = dict(document.get("metadata") or {})
        resource = self._resource(document["apiVersion"], document["kind"])
        namespace: str | None = None
        if resource.namespaced:
            namespace = metadata.setdefault("namespace", "default")
            self.ensure_namespace(namespace)
        document["metadata"] = metadata
        collection = resource.collection(namespace)
        created = self.request("POST", collection, body=document, allow=(409,))
        if created.get("kind") != "Status":
            return created
        path = f"{collection}/{metadata['name']}"
        current = self.request("GET", path)
        metadata["resourceVersion"] = current["metadata"]["resourceVersion"]
        return self.request("PUT", path, body=document)

    def delete(self, api_version: str, kind: str, name: str, namespace: str | None = None) -> None:
        """Delete the object at once (grace period 0); no error when it is already gone."""
        path = self.object_path(api_version, kind, name, namespace)
        self.request(
            "DELETE",
            path,
            body={"apiVersion": "v1", "kind": "DeleteOptions", "gracePeriodSeconds": 0},
            allow=(404,),
        )

    # -- namespaces, nodes, pods -----------------------------------------------------------

    def ensure_namespace(self, name: str, labels: Mapping[str, str] | None = None) -> str:
        """Create namespace ``name`` (with ``labels``) unless it exists, and its ``default``
        ServiceAccount, which admission requires of every pod that names no other."""
        namespace: dict[str, Any] = {
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": {"name": name, "labels": dict(labels or {})},
        }
        self.request("POST", f"{_CORE_GROUP_PATH}/namespaces", body=namespace, allow=(409,))
        service_account = {
            "apiVersion": "v1",
            "kind": "ServiceAccount",
            "metadata": {"name": "default", "namespace": name},
            "automountServiceAccountToken": False,
        }
        self.request(
            "POST",
            f"{_CORE_GROUP_PATH}/namespaces/{name}/serviceaccounts",
            body=service_account,
            allow=(409,),
        )
        return name

    def new_namespace(self, prefix: str = "test", labels: Mapping[str, str] | None = None) -> str:
        """A namespace of a fresh name (``prefix-<random>``): namespaces cannot be deleted here
        (the namespace controller that empties them does not run), so tests do not share one."""
        return self.ensure_namespace(f"{prefix}-{uuid.uuid4().hex[:8]}", labels)

    def create_node(
        self,
        name: str,
        arch: str,
        os: str = "linux",
        *,
        taints: Iterable[str | Mapping[str, str]] = (),
        labels: Mapping[str, str] | None = None,
        cpu: str = "8",
        memory: str = "32Gi",
        pods: str = "110",
    ) -> dict[str, Any]:
        """A Ready node of platform ``os``/``arch`` with exactly ``taints`` (``key=value:Effect``
        strings or Taint objects) and the well-known labels a kubelet sets (kubernetes.io/arch,
        kubernetes.io/os, kubernetes.io/hostname) plus ``labels``; the stored node."""
        wanted_taints = [_parse_taint(taint) for taint in taints]
        node = {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {
                "name": name,
                "labels": {
                    "kubernetes.io/arch": arch,
                    "kubernetes.io/os": os,
                    "kubernetes.io/hostname": name,
                    **(labels or {}),
                },
            },
            "spec": {"taints": wanted_taints},
        }
        path = f"{_CORE_GROUP_PATH}/nodes/{name}"
        self.request("POST", f"{_CORE_GROUP_PATH}/nodes", body=node)
        now = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        resources = {"cpu": cpu, "memory": memory, "pods": pods}
        status = {
            "status": {
                "capacity": resources,
                "allocatable": resources,
                "conditions": [
                    {
                        "type": "Ready",
                        "status": "True",
                        "reason": "KubeletReady",
                        "message": "kmultiarch test node (no kubelet runs)",
                        "lastHeartbeatTime": now,
                        "lastTransitionTime": now,
                    }
                ],
                "nodeInfo": {"architecture": arch, "operatingSystem": os},
            }
        }
        merge = "application/merge-patch+json"
        self.request("PATCH", f"{path}/status", body=status, content_type=merge)
        # A merge patch replaces the whole list: not-ready goes, the wanted taints stay.
        return self.request(
            "PATCH", path, body={"spec": {"taints": wanted_taints or None}}, content_type=merge
        )

    def delete_node(self, name: str) -> None:
        self.delete("v1", "Node", name)

    def create_pod(
        self, namespace: str, manifest: Mapping[str, Any], *, dry_run: bool = False
    ) -> dict[str, Any]:
        """Create the pod in ``namespace`` (made if need be); the pod as admission left it.

        ``dry_run``: admitted (webhooks with ``sideEffects: None`` are called) but not stored.
        """
        self.ensure_namespace(namespace)
        pod = dict(manifest)
        pod.setdefault("apiVersion", "v1")
        pod.setdefault("kind", "Pod")
        pod["metadata"] = {**(pod.get("metadata") or {}), "namespace": namespace}
        params = {"dryRun": "All"} if dry_run else None
        return self.request(
            "POST", f"{_CORE_GROUP_PATH}/namespaces/{namespace}/pods", body=pod, params=params
        )

    def wait_admitted(
        self,
        namespace: str,
        manifest: Mapping[str, Any],
        until: Callable[[dict[str, Any]], bool],
        timeout: float = 15.0,
    ) -> dict[str, Any]:
        """Dry-run ``manifest`` until the admitted pod satisfies ``until``; that pod.

        The API server takes up a new webhook configuration from its informer a moment after
        it is stored; webhooks with ``sideEffects: None`` are called on dry runs, so this waits
        for a webhook to be in use without leaving pods behind.
        """
        deadline = time.monotonic() + timeout
        while True:
            admitted = self.create_pod(namespace, manifest, dry_run=True)
            if until(admitted):
                return admitted
            if time.monotonic() > deadline:
                raise AssertionError(f"no dry run was admitted as wanted in {timeout}s: {admitted}")
            time.sleep(0.1)

    def get_pod(self, namespace: str, name: str) -> dict[str, Any]:
        return self.request("GET", f"{_CORE_GROUP_PATH}/namespaces/{namespace}/pods/{name}")

    def wait_bound(self, namespace: str, name: str, timeout: float = 30.0) -> str | None:
        """The node the scheduler binds the pod to, or None if it is not bound in ``timeout``
        seconds (``scheduling_message`` then says why)."""
        deadline = time.monotonic() + timeout
        while True:
            node: str | None = self.get_pod(namespace, name)["spec"].get("nodeName")
            if node or time.monotonic() > deadline:
                return node
            time.sleep(0.05)

    def scheduling_message(self, namespace: str, name: str) -> str:
        """The scheduler's last word on the pod (its PodScheduled condition), e.g.
        ``0/2 nodes are available: 1 node(s) had taint {...}, that the pod didn't tolerate``."""
        conditions = self.get_pod(namespace, name).get("status", {}).get("conditions", [])
        for condition in conditions:
            if condition.get("type") == "PodScheduled":
                return f"{condition.get('reason', '')}: {condition.get('message', '')}"
        return "(not looked at by the scheduler yet)"

    def delete_pod(self, namespace: str, name: str) -> None:
        """Delete the pod at once (no kubelet would confirm a graceful stop)."""
        self.delete("v1", "Pod", name, namespace)

    def reset(self) -> None:
        """Remove what tests leave behind that would change later tests' outcomes: webhook
        configurations (a dead webhook would refuse every pod), every pod, every node."""
        group = "admissionregistration.k8s.io/v1"
        for kind in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"):
            collection = self._resource(group, kind).collection(None)
            for item in self.request("GET", collection)["items"]:
                self.delete(group, kind, item["metadata"]["name"])
        for pod in self.request("GET", f"{_CORE_GROUP_PATH}/pods")["items"]:
            self.delete_pod(pod["metadata"]["namespace"], pod["metadata"]["name"])
        for node in self.request("GET", f"{_CORE_GROUP_PATH}/nodes")["items"]:
            self.delete_node(node["metadata"]["name"])
