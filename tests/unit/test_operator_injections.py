"""A ``mode: sidecar`` OpenTelemetryCollector makes no pod: the operator injects it into the
pods annotated ``sidecar.opentelemetry.io/inject`` (open-telemetry/opentelemetry-operator
pkg/sidecar/annotation.go). A warning gives the ``spec.injections`` entry that declares it
(issue 29, details: "a warning names the spec.injections entry that would declare it")."""

from __future__ import annotations

import pytest
import yaml
from support.operators import ARCH_IN_AMD64, resolve

from kmultiarch.api import mutate_text
from kmultiarch.core.findings import INJECTED_SIDECAR
from kmultiarch.core.policy.model import Policy
from kmultiarch.errors import PolicyError
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


def _policy(entry: str) -> Policy:
    return parse_policy_text(
        "apiVersion: kmultiarch.dev/v1alpha1\nkind: MultiArchPolicy\nmetadata: {name: p}\n"
        f"spec:\n  podSpecs:\n{entry}",
        "policy.yaml",
    )


def test_a_policys_placement_says_the_same_with_injected_by_and_node_selector_from() -> None:
    """spec.podSpecs reads the same keys as the catalogue: one meaning for both."""
    policy = _policy(
        "  - apiVersion: example.com/v1\n    kind: Agent\n    placements:\n"
        "    - path: /spec\n      images: [[/spec/image]]\n"
        "      unless: {/spec/mode: sidecar}\n      injectedBy: example.com/inject\n"
        "      nodeSelectorFrom: {kubernetes.io/arch: /spec/arch}\n"
    )
    agent = (
        "apiVersion: example.com/v1\nkind: Agent\nmetadata: {name: a}\n"
        "spec: {mode: sidecar, image: 'registry.test/agent-amd64:1'}\n"
    )
    (finding,) = mutate_text(agent, policy, resolve=resolve).findings
    assert finding.rule == INJECTED_SIDECAR and "example.com/inject" in finding.message
    pinned = agent.replace("mode: sidecar", "mode: own, arch: arm64")
    result = mutate_text(pinned, policy, resolve=resolve)
    assert [f.rule for f in result.findings] == ["scheduling-conflict"]


def test_a_policys_node_selector_from_must_map_labels_to_pointers() -> None:
    with pytest.raises(PolicyError, match="nodeSelectorFrom"):
        _policy(
            "  - apiVersion: example.com/v1\n    kind: Agent\n    placements:\n"
            "    - {path: /spec, nodeSelectorFrom: [kubernetes.io/arch]}\n"
        )


def test_an_excluded_or_skipped_sidecar_collector_is_not_warned() -> None:
    skipped = SIDECAR.replace(
        "metadata: {name: sidecar-for-my-app}",
        "metadata: {name: s, annotations: {kmultiarch.dev/skip: 'true'}}",
    )
    assert mutate_text(skipped, resolve=resolve).findings == []
    policy = parse_policy_text(
        "apiVersion: kmultiarch.dev/v1alpha1\nkind: MultiArchPolicy\nmetadata: {name: p}\n"
        "spec:\n  exclude: {kinds: [OpenTelemetryCollector]}\n",
        "policy.yaml",
    )
    assert mutate_text(SIDECAR, policy, resolve=resolve).findings == []
