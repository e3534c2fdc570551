"""Session fixtures: real distribution registries on 127.0.0.1, seeded with the catalogue.

``registry`` is seeded through the HTTP API; the other registries start from a copy of its
storage (same content, same digests, a few milliseconds instead of a few hundred). Each fixture
starts only when a test asks for it. Tests are skipped only when ``docker-registry`` is missing.

Fixtures (all ``SeededRegistry``: ``host``, ``url``, ``images``, ``reference(key)``, ``mark()``,
``client()``):
    registry             plain HTTP, no auth
    basic_auth_registry  htpasswd basic auth; ``username`` (alice) and ``password``
    token_registry       token auth; ``issuer`` (TokenIssuer); anonymous may pull every
                         repository but ``private/app``; ``username``/``password`` (alice) may
                         pull and push all
    tls_registry         HTTPS with a trustme CA; ``ca_pem``
    registry_log         a request-log mark on ``registry``, taken when the test starts
    docker_config        factory: writes a Docker config.json with auths, returns its directory

A real control plane (``support.kubecluster.KubeCluster``: etcd, kube-apiserver and kube-scheduler
v1.20 on loopback; docs/testing.md):
    kube_cluster         the session's cluster, started when a test first asks for it
    kube                 the same cluster with no webhook configuration, pod or node left by an
                         earlier test
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from support import SeededRegistry, write_docker_config
from support.kubecluster import KubeCluster, missing_kube_binaries
from support.registry import (
    REGISTRY_BINARY,
    BasicAuth,
    RegistryServer,
    RequestLog,
    TlsFiles,
    TokenAuth,
    registry_binary,
)
from support.seed import PUBLIC_REPOSITORIES, seed_catalogue
from support.token_issuer import TokenIssuer
from support.tools import missing


def _require_registry_binary() -> None:
    if registry_binary() is None:
        pytest.skip(
            f"{REGISTRY_BINARY} (distribution v2) is not installed: apt-get install docker-registry"
        )


@pytest.fixture(scope="session")
def registry(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SeededRegistry]:
    """Plain HTTP registry without auth, seeded through the distribution API."""
    _require_registry_binary()
    with RegistryServer(tmp_path_factory.mktemp("registry-plain")) as server:
        with server.client() as client:
            seed_catalogue(client)
        yield SeededRegistry(server)


@pytest.fixture(scope="session")
def basic_auth_registry(
    registry: SeededRegistry, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[SeededRegistry]:
    """Registry behind htpasswd basic auth; user alice with a password made for the session."""
    workdir = tmp_path_factory.mktemp("registry-basic")
    auth = BasicAuth.create(workdir)
    with RegistryServer(workdir, auth=auth, storage_from=registry.server.storage) as server:
        yield SeededRegistry(server, username=auth.username, password=auth.password)


@pytest.fixture(scope="session")
def token_registry(
    registry: SeededRegistry, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[SeededRegistry]:
    """Registry behind token auth, with its token issuer (``.issuer``).

    Anonymous tokens may pull every catalogue repository except ``private/app``; alice may pull
    and push everything.
    """
    workdir = tmp_path_factory.mktemp("registry-token")
    password = secrets.token_urlsafe(18)
    with TokenIssuer(
        workdir, public_repositories=PUBLIC_REPOSITORIES, users={"alice": password}
    ) as issuer:
        auth = TokenAuth(
            realm=issuer.realm,
            service=issuer.service,
            issuer=issuer.name,
            rootcertbundle=issuer.cert_path,
        )
        with RegistryServer(workdir, auth=auth, storage_from=registry.server.storage) as server:
            yield SeededRegistry(server, username="alice", password=password, issuer=issuer)


@pytest.fixture(scope="session")
def tls_registry(
    registry: SeededRegistry, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[SeededRegistry]:
    """HTTPS registry (no auth) whose certificate only the session's test CA (``ca_pem``) signs."""
    workdir = tmp_path_factory.mktemp("registry-tls")
    tls = TlsFiles.issue(workdir)
    with RegistryServer(workdir, tls=tls, storage_from=registry.server.storage) as server:
        yield SeededRegistry(server)


@pytest.fixture
def registry_log(registry: SeededRegistry) -> RequestLog:
    """Requests the plain registry answers during this test: ``registry_log.requests()``."""
    return registry.mark()


@pytest.fixture
def docker_config(tmp_path: Path) -> Callable[[str, str, str], Path]:
    """Factory ``docker_config(host, username, password)`` -> a directory for ``DOCKER_CONFIG``."""

    def write(host: str, username: str, password: str) -> Path:
        return write_docker_config(tmp_path / "docker-config", {host: (username, password)})

    return write


@pytest.fixture(scope="session")
def kube_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KubeCluster]:
    """etcd, kube-apiserver and kube-scheduler on 127.0.0.1 (skipped when they are not
    installed, except in CI, where that fails)."""
    absent = missing_kube_binaries()
    if absent:
        missing(
            f"{', '.join(absent)} not installed: scripts/install-tools builds kube-apiserver and "
            "kube-scheduler into .tools/kubernetes/bin and installs Debian's etcd-server"
        )
    with KubeCluster(tmp_path_factory.mktemp("kube-cluster")) as cluster:
        yield cluster


@pytest.fixture
def kube(kube_cluster: KubeCluster) -> KubeCluster:
    """The session's cluster, emptied of what an earlier test left (``KubeCluster.reset``)."""
    kube_cluster.reset()
    return kube_cluster
