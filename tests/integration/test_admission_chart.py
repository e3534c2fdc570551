"""The admission webhook as people deploy it (issue 37, item 6): the Helm chart linted and
rendered by the real Helm, its webhook configuration the one `kmultiarch admission
configuration` prints, the plain manifests equal to the chart's rendering, least-privilege RBAC,
and the self-signed bootstrap's certificate valid for the Service's name."""

from __future__ import annotations

import datetime
import ssl
import subprocess
from pathlib import Path
from typing import Any

import yaml
from cryptography import x509
from support.cli import clean_env, run_kmultiarch
from support.tools import helm_binary

REPO = Path(__file__).resolve().parents[2]
CHART = REPO / "deploy" / "admission" / "chart"
MANIFESTS = REPO / "deploy" / "admission" / "manifests" / "kmultiarch-admission.yaml"
BOOTSTRAP = REPO / "deploy" / "admission" / "bootstrap-certificates.sh"


def helm(*arguments: str) -> str:
    completed = subprocess.run(
        [str(helm_binary(3)), *arguments], capture_output=True, text=True, check=False
    )
    assert completed.returncode == 0, completed.stderr
    return completed.stdout


def rendered(*set_values: str, values: Path | None = None) -> list[dict[str, Any]]:
    arguments = ["template", "kmultiarch-admission", str(CHART), "--namespace", "kmultiarch"]
    for value in set_values:
        arguments += ["--set", value]
    if values is not None:
        arguments += ["--values", str(values)]
    return [doc for doc in yaml.safe_load_all(helm(*arguments)) if doc]


def by_kind(documents: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [doc for doc in documents if doc["kind"] == kind]


def test_the_chart_lints() -> None:
    helm("lint", "--strict", str(CHART))


def test_two_replicas_a_disruption_budget_and_probes() -> None:
    documents = rendered()
    (deployment,) = by_kind(documents, "Deployment")
    assert deployment["spec"]["replicas"] == 2
    (pdb,) = by_kind(documents, "PodDisruptionBudget")
    assert pdb["spec"]["minAvailable"] == 1
    assert pdb["spec"]["selector"] == deployment["spec"]["selector"]
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    assert container["args"][:2] == ["admission", "serve"]
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    (service,) = by_kind(documents, "Service")
    assert service["spec"]["ports"][0]["port"] == 443


def test_rbac_is_get_only_on_what_a_review_reads() -> None:
    (role,) = by_kind(rendered(), "ClusterRole")
    assert role["rules"] == [
        {
            "apiGroups": [""],
            "resources": ["secrets", "serviceaccounts", "namespaces", "nodes"],
            "verbs": ["get"],
        }
    ]


def test_the_charts_webhook_is_the_one_the_command_prints(tmp_path: Path) -> None:
    spec = {"failurePolicy": "Fail", "exclude": {"namespaces": ["kube-system", "legacy-*"]}}
    values = tmp_path / "values.yaml"
    values.write_text(
        yaml.safe_dump(
            {
                "policy": {"spec": spec},
                "webhook": {"timeoutSeconds": 7},
                "certManager": {"enabled": False},
            }
        )
    )
    (chart_webhook,) = by_kind(rendered(values=values), "MutatingWebhookConfiguration")
    policy = tmp_path / "policy.yaml"
    policy.write_text(
        yaml.safe_dump(
            {"apiVersion": "kmultiarch.dev/v1alpha1", "kind": "MultiArchPolicy", "spec": spec}
        )
    )
    subprocess.run(
        [str(BOOTSTRAP), "kmultiarch", "kmultiarch-admission", str(tmp_path / "tls")],
        check=True,
        capture_output=True,
    )
    ca = tmp_path / "tls" / "ca.crt"
    printed = run_kmultiarch(
        [
            "admission",
            "configuration",
            "--service",
            "kmultiarch/kmultiarch-admission",
            "--ca-file",
            str(ca),
            "--config",
            str(policy),
            "--timeout-seconds",
            "7",
        ],
        env=clean_env(tmp_path),
    )
    assert printed.returncode == 0, printed.stderr
    (command_hook,) = yaml.safe_load(printed.stdout)["webhooks"]
    del command_hook["clientConfig"]["caBundle"]
    assert chart_webhook["webhooks"] == [command_hook]


def test_cert_manager_fills_the_ca_bundle_of_the_charts_webhook() -> None:
    documents = rendered()
    (webhook,) = by_kind(documents, "MutatingWebhookConfiguration")
    (certificate,) = by_kind(documents, "Certificate")
    assert webhook["metadata"]["annotations"]["cert-manager.io/inject-ca-from"] == (
        f"kmultiarch/{certificate['metadata']['name']}"
    )
    assert "kmultiarch-admission.kmultiarch.svc" in certificate["spec"]["dnsNames"]


def test_the_plain_manifests_are_the_charts_rendering() -> None:
    chart = helm("template", "kmultiarch-admission", str(CHART), "--namespace", "kmultiarch")
    text = MANIFESTS.read_text()
    kept = text[text.index("---\n") :]  # after the header saying how it was made
    assert kept == chart, (
        "deploy/admission/manifests/kmultiarch-admission.yaml is out of date: render it again "
        "(its first lines say how)"
    )


def test_the_bootstrap_certificate_is_valid_for_the_service(tmp_path: Path) -> None:
    out = tmp_path / "certs"
    completed = subprocess.run(
        [str(BOOTSTRAP), "platform", "kmultiarch-admission", str(out)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout.startswith("caBundle: ")
    assert sorted(p.name for p in out.iterdir()) == ["ca.crt", "secret.yaml", "tls.crt", "tls.key"]
    # The server's pair loads, and a client trusting ca.crt accepts it for the Service's name.
    server = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server.load_cert_chain(out / "tls.crt", out / "tls.key")
    certificate = x509.load_pem_x509_certificate((out / "tls.crt").read_bytes())
    names = certificate.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert "kmultiarch-admission.platform.svc" in names.get_values_for_type(x509.DNSName)
    ca = x509.load_pem_x509_certificate((out / "ca.crt").read_bytes())
    certificate.verify_directly_issued_by(ca)
    assert certificate.not_valid_after_utc > datetime.datetime.now(datetime.UTC)
    secret = yaml.safe_load((out / "secret.yaml").read_text())
    assert secret["type"] == "kubernetes.io/tls"
    assert (out / "tls.key").stat().st_mode & 0o077 == 0


def test_the_bootstrap_script_says_how_to_call_it() -> None:
    completed = subprocess.run([str(BOOTSTRAP)], capture_output=True, text=True, check=False)
    assert completed.returncode == 2
    assert "usage:" in completed.stderr
