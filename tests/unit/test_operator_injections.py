"""A ``mode: sidecar`` OpenTelemetryCollector makes no pod: the operator injects it into the
pods annotated ``sidecar.opentelemetry.io/inject`` (open-telemetry/opentelemetry-operator
pkg/sidecar/annotation.go). A warning gives the ``spec.injections`` entry that declares it
(issue 29, details: "a warning names the spec.injections entry that would declare it")."""

from __future__ import annotations

import yaml
from support.operators import ARCH_IN_AMD64, resolve

from kmultiarch.api import mutate_text
from kmultiarch.core.findings import INJECTED_SIDECAR
from kmultiarch.io.config import parse_policy_text

SIDECAR = (
    "apiVersion: opentelemetry.io/v1beta1\nkind: OpenTelemetryCollector\n"
    "metadata: {name: sidecar-for-my-app}\nspec:\n  mode: sidecar\n"
    "  image: registry.test/otelcol-amd64:0.110.0\n"
    "  config:\n    receivers: {otlp: {protocols: {grpc: {}}}}\n"
    "    exporters: {debug: {}}\n"
    "    service: {pipelines: {traces: {receivers: [otlp], exporters: [debug]}}}\n"
)
APP = (
    "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: app}\nspec:\n"
    "  selector: {matchLabels: {app: a}}\n  template:\n    metadata:\n"
    "      labels: {app: a}\n"
    "      annotations: {sidecar.opentelemetry.io/inject: 'true'}\n"
    "    spec:\n      containers: [{name: a, image: registry.test/app:1}]\n"
)


def test_a_sidecar_collector_is_left_alone_with_the_injections_entry_to_declare() -> None:
    result = mutate_text(SIDECAR, resolve=resolve)
    assert yaml.safe_load(result.stream()) == yaml.safe_load(SIDECAR)
    (finding,) = result.findings
    assert finding.rule == INJECTED_SIDECAR and finding.severity == "warning"
    assert "spec.injections" in finding.message and "spec.mode is sidecar" in finding.message
    assert finding.suggestion is not None
    entry = yaml.safe_load(finding.suggestion)["injections"][0]
    assert entry == {
        "name": "opentelemetrycollector-sidecar-for-my-app",
        "images": ["registry.test/otelcol-amd64:0.110.0"],
        "when": {"podAnnotations": {"sidecar.opentelemetry.io/inject": "*"}},
        "unless": {"podAnnotations": {"sidecar.opentelemetry.io/inject": "false"}},
    }


def test_the_suggested_entry_pasted_into_a_policy_judges_the_annotated_pods() -> None:
    (finding,) = mutate_text(SIDECAR, resolve=resolve).findings
    assert finding.suggestion is not None
    indented = "".join(f"  {line}\n" for line in finding.suggestion.splitlines())
    policy = parse_policy_text(
        "apiVersion: kmultiarch.dev/v1alpha1\nkind: MultiArchPolicy\nmetadata: {name: p}\n"
        f"spec:\n{indented}",
        "policy.yaml",
    )
    result = mutate_text(APP, policy, resolve=resolve)
    app = yaml.safe_load(result.stream())
    assert app["spec"]["template"]["spec"]["affinity"] == ARCH_IN_AMD64


def test_a_deployment_collector_gets_no_injection_warning() -> None:
    text = SIDECAR.replace("mode: sidecar", "mode: deployment")
    result = mutate_text(text, resolve=resolve)
    assert [f.rule for f in result.findings] == []
    assert yaml.safe_load(result.stream())["spec"]["affinity"] == ARCH_IN_AMD64
