"""``kmultiarch admission serve`` and ``kmultiarch admission configuration``.

The server's dependencies (uvicorn, prometheus-client: ``pip install 'kmultiarch[admission]'``)
are imported here, inside the command that serves, so no other command pays for them.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

import yaml

from kmultiarch.cli.session import note, warn
from kmultiarch.errors import InputError

if TYPE_CHECKING:
    from kmultiarch.cli.session import RunOptions

EXTRA_HINT = "install the server's dependencies: pip install 'kmultiarch[admission]'"


def serve(
    options: RunOptions,
    listen: str,
    cert_file: str,
    key_file: str,
    kubeconfig: str | None,
) -> int:
    if options.config is None:
        raise InputError("admission serve needs --config POLICY (the policy mutate runs with)")
    host, port = _host_and_port(listen)
    try:
        from kmultiarch.admission.kubeapi import KubeConfigError, KubeReader, kube_settings
        from kmultiarch.admission.server import AdmissionApp, ReloadingTls
        from kmultiarch.admission.server import serve as run_server
    except ImportError as exc:
        raise InputError(f"admission serve cannot start ({exc}); {EXTRA_HINT}") from None
    policy = options.load_policy()
    config = options.configure(policy)
    kube = None
    try:
        kube = KubeReader(kube_settings(kubeconfig))
    except KubeConfigError as exc:
        if kubeconfig is not None:
            raise InputError(str(exc)) from None
        # Reviews are still answered; pods' pull secrets, Namespaces and Nodes are not read.
        warn(f"{exc}; pull secrets, namespaces and nodes will not be read")
    try:
        tls = ReloadingTls(cert_file, key_file)
    except (OSError, ValueError) as exc:
        raise InputError(
            f"cannot load the TLS certificate {cert_file} and key {key_file}: {exc}"
        ) from None
    app = AdmissionApp(config, kube)
    if not options.quiet:
        note(f"serving admission reviews on https://{listen}/mutate (policy {options.config})")
    try:
        run_server(app, tls, host, port)
    except OSError as exc:
        raise InputError(f"cannot listen on {listen}: {exc.strerror or exc}") from None
    finally:
        if kube is not None:
            kube.close()
    return 0


def _host_and_port(listen: str) -> tuple[str, int]:
    host, _, port = listen.rpartition(":")
    host = host.strip("[]") or "0.0.0.0"  # noqa: S104 - a webhook listens for the API server
    if not port.isdigit() or not 0 < int(port) < 65536:
        raise InputError(f"--listen {listen}: expected HOST:PORT, e.g. 0.0.0.0:8443")
    return host, int(port)


def configuration(
    config: str | None,
    url: str | None,
    service: str | None,
    ca_file: str,
    timeout_seconds: int,
    name: str,
) -> int:
    from kmultiarch.admission.configuration import webhook_configuration
    from kmultiarch.io.config import load_policy

    if (url is None) == (service is None):
        raise InputError("give --url URL or --service NAMESPACE/NAME[:PORT] (one of them)")
    if url is not None and not url.startswith("https://"):
        raise InputError(f"--url {url}: the API server calls webhooks over https:// only")
    try:
        ca_bundle = Path(ca_file).read_bytes()
    except OSError as exc:
        raise InputError(f"cannot read --ca-file {ca_file}: {exc.strerror or exc}") from None
    if b"-----BEGIN CERTIFICATE-----" not in ca_bundle:
        raise InputError(f"--ca-file {ca_file} holds no PEM certificate")
    policy = load_policy(config)
    document = webhook_configuration(
        policy,
        url=url,
        service=_service(service) if service is not None else None,
        ca_bundle=ca_bundle,
        timeout_seconds=timeout_seconds,
        name=name,
    )
    sys.stdout.write(yaml.safe_dump(document, sort_keys=False))
    return 0


def _service(text: str) -> tuple[str, str, int]:
    namespace, slash, rest = text.partition("/")
    name, colon, port = rest.partition(":")
    if not slash or not namespace or not name or (colon and not port.isdigit()):
        raise InputError(
            f"--service {text}: expected NAMESPACE/NAME[:PORT], e.g. kmultiarch/webhook:443"
        )
    return namespace, name, int(port) if colon else 443
