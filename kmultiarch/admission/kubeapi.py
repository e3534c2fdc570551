"""The few reads the webhook makes from the API server: a pod's pull secrets, its
ServiceAccount, and a Node. Only ``get`` (never ``list`` or ``watch``: the RBAC the chart grants
is ``get`` on secrets, serviceaccounts and nodes), with httpx, already kmultiarch's HTTP client.

Why not lightkube or the official client: three GETs do not need a typed model of every kind;
lightkube's current release brings a second HTTP stack (httpx2, httpcore2) and msgspec, the
official client urllib3 and its generated models (tens of megabytes). What a client gives that
matters here is its configuration, and that is small: ``--kubeconfig``/``KUBECONFIG`` (the
current context's server, CA, client certificate or bearer token) or the in-cluster service
account (``KUBERNETES_SERVICE_HOST``/``_PORT``, the token at
``/var/run/secrets/kubernetes.io/serviceaccount/token``, a bound token that rotates: read again
every minute, and ``ca.crt`` beside it). Exec and auth-provider plugins are not run.

Pull secrets are decoded in memory by
:func:`kmultiarch.core.operators.pullsecrets.pull_secret_configs`, the reader of manifests' pull
secrets; nothing read is logged or stored. Objects are kept a short while and reused while their
``resourceVersion`` is the same (a read is still made after
:data:`FRESH_SECONDS`, so a rotated secret counts within that time).
"""

from __future__ import annotations

import base64
import contextlib
import logging
import os
import ssl
import tempfile
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import yaml

from kmultiarch.core.operators.pullsecrets import (
    DEFAULT_SERVICE_ACCOUNT,
    DockerConfig,
    pull_secret_configs,
)
from kmultiarch.errors import InputError, KmultiarchError

__all__ = ["KubeConfigError", "KubeReader", "NotLocal", "kube_settings"]

log = logging.getLogger("kmultiarch.admission")

SERVICE_ACCOUNT_DIR = Path("/var/run/secrets/kubernetes.io/serviceaccount")
#: How long an object read is used without asking again.
FRESH_SECONDS = 30.0
#: How often the in-cluster token file is read again (kubelet renews bound tokens at 80 % of
#: their life, an hour at least).
TOKEN_REREAD_SECONDS = 60.0
#: A read never takes longer than this, nor longer than what is left of the review.
READ_TIMEOUT = 5.0


class KubeConfigError(KmultiarchError):
    """The API server's address or credentials cannot be found or used."""


class NotLocal(Exception):
    """An answer the caller asked for from memory only is not there (it must be read or looked
    up, off the event loop)."""


@dataclass
class KubeSettings:
    server: str
    ssl_context: ssl.SSLContext | bool
    token: str | None = field(default=None, repr=False)
    token_file: str | None = None
    basic: tuple[str, str] | None = field(default=None, repr=False)


def kube_settings(kubeconfig: str | None) -> KubeSettings:
    """``kubeconfig`` (else ``$KUBECONFIG``'s first file), else the in-cluster account."""
    path = kubeconfig or (os.environ.get("KUBECONFIG", "").split(os.pathsep)[0] or None)
    if path:
        return _from_kubeconfig(path)
    host, port = (
        os.environ.get("KUBERNETES_SERVICE_HOST"),
        os.environ.get("KUBERNETES_SERVICE_PORT"),
    )
    if not host or not port:
        raise KubeConfigError(
            "no API server: give --kubeconfig FILE, set KUBECONFIG, or run in a pod "
            "(KUBERNETES_SERVICE_HOST and _PORT)"
        )
    server = f"https://[{host}]:{port}" if ":" in host else f"https://{host}:{port}"
    context = ssl.create_default_context(cafile=str(SERVICE_ACCOUNT_DIR / "ca.crt"))
    return KubeSettings(server, context, token_file=str(SERVICE_ACCOUNT_DIR / "token"))


def _from_kubeconfig(path: str) -> KubeSettings:
    try:
        document = yaml.safe_load(Path(path).read_text())
    except (OSError, yaml.YAMLError) as exc:
        raise KubeConfigError(f"cannot read the kubeconfig {path}: {exc}") from None
    if not isinstance(document, dict):
        raise KubeConfigError(f"the kubeconfig {path} is not a mapping")
    base = Path(path).resolve().parent

    def named(section: str, name: object) -> dict[str, Any]:
        for entry in document.get(section) or []:
            if isinstance(entry, dict) and entry.get("name") == name:
                inner = entry.get(section.rstrip("s"))
                return inner if isinstance(inner, dict) else {}
        raise KubeConfigError(f"the kubeconfig {path} has no {section} entry named {name!r}")

    context = named("contexts", document.get("current-context"))
    cluster = named("clusters", context.get("cluster"))
    user = named("users", context.get("user")) if context.get("user") else {}
    server = cluster.get("server")
    if not isinstance(server, str) or not server.startswith("https://"):
        raise KubeConfigError(f"the kubeconfig {path}: its cluster's server must be https://")
    if cluster.get("insecure-skip-tls-verify"):
        tls = ssl.create_default_context()
        tls.check_hostname = False
        tls.verify_mode = ssl.CERT_NONE
    else:
        with _pem(cluster, "certificate-authority", base) as ca:
            tls = ssl.create_default_context(cafile=ca) if ca else ssl.create_default_context()
    with (
        _pem(user, "client-certificate", base) as cert,
        _pem(user, "client-key", base) as key,
    ):
        if cert and key:
            tls.load_cert_chain(cert, key)
    if "exec" in user or "auth-provider" in user:
        raise KubeConfigError(
            f"the kubeconfig {path}: exec and auth-provider users are not supported; use a "
            "token or a client certificate"
        )
    token = user.get("token") if isinstance(user.get("token"), str) else None
    token_file = user.get("tokenFile") if isinstance(user.get("tokenFile"), str) else None
    basic = None
    if isinstance(user.get("username"), str) and isinstance(user.get("password"), str):
        basic = (user["username"], user["password"])
    return KubeSettings(server.rstrip("/"), tls, token, token_file, basic)


@contextlib.contextmanager
def _pem(section: Mapping[str, Any], key: str, base: Path) -> Iterator[str | None]:
    """A file holding ``key``'s PEM (``key`` names a file, ``key-data`` holds it in base64):
    data goes to a private temporary file, removed once read."""
    data = section.get(f"{key}-data")
    if isinstance(data, str):
        with tempfile.TemporaryDirectory(prefix="kmultiarch-kube-") as directory:
            target = Path(directory) / "pem"
            descriptor = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(descriptor, "wb") as stream:
                stream.write(base64.b64decode(data))
            yield str(target)
        return
    named = section.get(key)
    yield str(base / named) if isinstance(named, str) else None


@dataclass
class _Kept:
    value: dict[str, Any] | None
    read_at: float


class KubeReader:
    """``get`` on Secrets, ServiceAccounts and Nodes, kept :data:`FRESH_SECONDS`."""

    def __init__(self, settings: KubeSettings, *, transport: httpx.BaseTransport | None = None):
        self.settings = settings
        self._client = httpx.Client(
            base_url=settings.server,
            verify=settings.ssl_context,
            timeout=READ_TIMEOUT,
            transport=transport,
            trust_env=False,
        )
        self._kept: dict[str, _Kept] = {}
        self._decoded: dict[tuple[str, ...], list[DockerConfig]] = {}
        self._guard = threading.Lock()
        self._token: str | None = settings.token
        self._token_read = 0.0
        #: GETs sent, by path (tests count them; never the answers).
        self.reads: dict[str, int] = {}

    def close(self) -> None:
        self._client.close()

    def _headers(self) -> dict[str, str]:
        settings = self.settings
        if settings.token_file and time.monotonic() - self._token_read > TOKEN_REREAD_SECONDS:
            try:
                self._token = Path(settings.token_file).read_text().strip()
                self._token_read = time.monotonic()
            except OSError as exc:
                log.warning("cannot read the token file %s: %s", settings.token_file, exc)
        if self._token:
            return {"Authorization": f"Bearer {self._token}"}
        if settings.basic:
            pair = ":".join(settings.basic).encode()
            return {"Authorization": f"Basic {base64.b64encode(pair).decode()}"}
        return {}

    def get(
        self, path: str, *, local: bool = False, deadline: float | None = None
    ) -> dict[str, Any] | None:
        """The object at ``path`` (None: not found, or not readable: said in the log, without
        its content). ``local``: from memory only (:class:`NotLocal` when it is not fresh
        there). ``deadline`` (``time.monotonic()``): the read ends by then (the review's)."""
        now = time.monotonic()
        with self._guard:
            kept = self._kept.get(path)
        if kept is not None and now - kept.read_at < FRESH_SECONDS:
            return kept.value
        if local:
            raise NotLocal(path)
        self.reads[path] = self.reads.get(path, 0) + 1
        timeout = READ_TIMEOUT if deadline is None else max(0.05, min(READ_TIMEOUT, deadline - now))
        try:
            response = self._client.get(path, headers=self._headers(), timeout=timeout)
        except httpx.HTTPError as exc:
            log.warning("GET %s failed: %s", path, type(exc).__name__)
            return kept.value if kept is not None else None
        value: dict[str, Any] | None = None
        if response.status_code == 200:
            try:
                parsed = response.json()
            except ValueError:
                parsed = None
            value = parsed if isinstance(parsed, dict) else None
        elif response.status_code != 404:
            log.warning("GET %s: HTTP %d", path, response.status_code)
            return kept.value if kept is not None else None
        with self._guard:
            self._kept[path] = _Kept(value, now)
        return value

    def node(
        self, name: str, *, local: bool = False, deadline: float | None = None
    ) -> dict[str, Any] | None:
        return self.get(f"/api/v1/nodes/{quote(name, safe='')}", local=local, deadline=deadline)

    def namespace(
        self, name: str, *, local: bool = False, deadline: float | None = None
    ) -> dict[str, Any] | None:
        path = f"/api/v1/namespaces/{quote(name, safe='')}"
        return self.get(path, local=local, deadline=deadline)

    def pull_secrets(
        self,
        pod: Mapping[str, Any],
        namespace: str,
        *,
        local: bool = False,
        deadline: float | None = None,
    ) -> Sequence[DockerConfig]:
        """The Docker configs of the pod's ``imagePullSecrets`` and its ServiceAccount's."""
        spec = pod.get("spec") if isinstance(pod.get("spec"), dict) else {}
        assert isinstance(spec, dict)
        account_name = spec.get("serviceAccountName") or spec.get("serviceAccount")
        account_name = account_name if isinstance(account_name, str) else DEFAULT_SERVICE_ACCOUNT
        where = f"/api/v1/namespaces/{quote(namespace, safe='')}"
        account = self.get(
            f"{where}/serviceaccounts/{quote(account_name, safe='')}",
            local=local,
            deadline=deadline,
        )
        names = [*_names(spec.get("imagePullSecrets"))]
        if account is not None:
            names += _names(account.get("imagePullSecrets"))
        if not names:
            return []
        secrets = [
            self.get(f"{where}/secrets/{quote(name, safe='')}", local=local, deadline=deadline)
            for name in dict.fromkeys(names)
        ]
        found = [secret for secret in secrets if secret is not None]
        versions = tuple(
            str(secret.get("metadata", {}).get("resourceVersion", "")) for secret in found
        )
        key = (namespace, account_name, *names, *versions)
        with self._guard:
            decoded = self._decoded.get(key)
        if decoded is not None:
            return decoded
        # The reader of manifests' pull secrets, on what the API gave: the pod (in its
        # namespace), its ServiceAccount and the Secrets.
        placed = {**pod, "metadata": {**(pod.get("metadata") or {}), "namespace": namespace}}
        placed.setdefault("apiVersion", "v1")
        placed.setdefault("kind", "Pod")
        documents: list[object] = [placed, *found]
        if account is not None:
            documents.append(account)
        try:
            decoded = pull_secret_configs(documents)
        except InputError as exc:
            log.warning("pull secrets of a pod in %s not used: %s", namespace, exc)
            decoded = []
        with self._guard:
            self._decoded[key] = decoded
        return decoded


def _names(value: object) -> list[str]:
    if not isinstance(value, list):
        return []
    return [
        entry["name"]
        for entry in value
        if isinstance(entry, dict) and isinstance(entry.get("name"), str) and entry["name"]
    ]
