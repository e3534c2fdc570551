"""``kmultiarch admission configuration`` (issue 37, item 5): the MutatingWebhookConfiguration
(admissionregistration.k8s.io/v1) that registers the server."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import pytest
import trustme
import yaml
from support.cli import clean_env, run_kmultiarch

from kmultiarch.admission.configuration import WEBHOOK_NAME, webhook_configuration
from kmultiarch.core.policy.schema import policy_from_object


def policy(**spec: Any):
    return policy_from_object(
        {"apiVersion": "kmultiarch.dev/v1alpha1", "kind": "MultiArchPolicy", "spec": spec},
        "policy.yaml",
    )


def test_a_service_webhook_judges_pod_creation_and_ephemeral_containers() -> None:
    document = webhook_configuration(
        policy(), service=("kmultiarch", "webhook", 443), ca_bundle=b"PEM"
    )
    assert document["apiVersion"] == "admissionregistration.k8s.io/v1"
    assert document["kind"] == "MutatingWebhookConfiguration"
    (webhook,) = document["webhooks"]
    assert webhook["name"] == WEBHOOK_NAME
    assert webhook["clientConfig"] == {
        "service": {"namespace": "kmultiarch", "name": "webhook", "port": 443, "path": "/mutate"},
        "caBundle": base64.b64encode(b"PEM").decode(),
    }
    rules = {(tuple(r["operations"]), tuple(r["resources"])) for r in webhook["rules"]}
    assert rules == {(("CREATE",), ("pods",)), (("UPDATE",), ("pods/ephemeralcontainers",))}
    assert webhook["reinvocationPolicy"] == "IfNeeded"
    assert webhook["sideEffects"] == "None"
    assert webhook["admissionReviewVersions"] == ["v1"]
    assert webhook["timeoutSeconds"] == 10
    # The policy's default failure policy is Ignore: said, not left to the API's default (Fail).
    assert webhook["failurePolicy"] == "Ignore"
    # The webhook's own namespace is never judged (it must not block its own start).
    assert webhook["namespaceSelector"] == {
        "matchExpressions": [
            {"key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": ["kmultiarch"]}
        ]
    }


def test_the_policys_scope_becomes_the_namespace_selector_where_a_selector_can_say_it() -> None:
    document = webhook_configuration(
        policy(
            failurePolicy="Fail",
            exclude={
                "namespaces": ["kube-system", "legacy-*"],
                "namespaceSelector": {"matchLabels": {"tier": "system"}},
            },
        ),
        url="https://webhook.example:8443/mutate",
        own_namespace="kmultiarch",
    )
    (webhook,) = document["webhooks"]
    assert webhook["clientConfig"] == {"url": "https://webhook.example:8443/mutate"}
    assert webhook["failurePolicy"] == "Fail"
    expressions = webhook["namespaceSelector"]["matchExpressions"]
    # legacy-* is a glob: a selector cannot say it, the server applies it.
    assert expressions == [
        {
            "key": "kubernetes.io/metadata.name",
            "operator": "NotIn",
            "values": ["kmultiarch", "kube-system"],
        },
        {"key": "tier", "operator": "NotIn", "values": ["system"]},
    ]


def test_a_namespace_selector_of_several_requirements_is_left_to_the_server() -> None:
    document = webhook_configuration(
        policy(exclude={"namespaceSelector": {"matchLabels": {"a": "1", "b": "2"}}}),
        url="https://w/mutate",
    )
    assert "namespaceSelector" not in document["webhooks"][0]


def test_the_command_prints_the_configuration(tmp_path: Path) -> None:
    ca = trustme.CA()
    ca_file = tmp_path / "ca.pem"
    ca.cert_pem.write_to_path(str(ca_file))
    policy_file = tmp_path / "policy.yaml"
    policy_file.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "kmultiarch.dev/v1alpha1",
                "kind": "MultiArchPolicy",
                "spec": {"failurePolicy": "Fail", "exclude": {"namespaces": ["kube-system"]}},
            }
        )
    )
    result = run_kmultiarch(
        [
            "admission",
            "configuration",
            "--service",
            "platform/kmultiarch-admission",
            "--ca-file",
            str(ca_file),
            "--config",
            str(policy_file),
            "--timeout-seconds",
            "5",
        ],
        env=clean_env(tmp_path),
    )
    assert result.returncode == 0, result.stderr
    document = yaml.safe_load(result.stdout)
    (webhook,) = document["webhooks"]
    assert webhook["failurePolicy"] == "Fail"
    assert webhook["timeoutSeconds"] == 5
    assert webhook["clientConfig"]["service"]["port"] == 443
    assert base64.b64decode(webhook["clientConfig"]["caBundle"]) == ca_file.read_bytes()
    assert webhook["namespaceSelector"]["matchExpressions"][0]["values"] == [
        "kube-system",
        "platform",
    ]


@pytest.mark.parametrize(
    ("arguments", "said"),
    [
        (["--ca-file", "ca.pem"], "--url URL or --service"),
        (["--url", "http://w/mutate", "--ca-file", "ca.pem"], "https://"),
        (["--service", "nonamespace", "--ca-file", "ca.pem"], "NAMESPACE/NAME"),
        (["--service", "ns/name", "--ca-file", "missing.pem"], "cannot read --ca-file"),
        (["--service", "ns/name", "--ca-file", "empty.pem"], "no PEM certificate"),
    ],
)
def test_bad_options_say_what_to_do(tmp_path: Path, arguments: list[str], said: str) -> None:
    trustme.CA().cert_pem.write_to_path(str(tmp_path / "ca.pem"))
    (tmp_path / "empty.pem").write_text("")
    result = run_kmultiarch(
        ["admission", "configuration", *arguments], env=clean_env(tmp_path), cwd=tmp_path
    )
    assert result.returncode != 0
    assert said in result.stderr
    assert result.stdout == ""
