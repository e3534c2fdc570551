"""The failures issue 12 names, one test each, through the engine (``mutate_text`` with images
declared in memory): each failed before the fix and passes after.

What a pod may be scheduled on is judged with the scheduler model of test_scheduler_model.py.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import yaml

from kmultiarch.api import mutate_text
from kmultiarch.core.images.platform import Platform
from kmultiarch.core.images.reference import ImageRef
from kmultiarch.core.policy.model import Policy, SchedulingPolicy
from kmultiarch.core.policy.schema import policy_from_spec
from kmultiarch.core.resolution import Resolution
from kmultiarch.engine import EngineResult

ARCH = "kubernetes.io/arch"
OS = "kubernetes.io/os"
BUILD = "node.kubernetes.io/windows-build"
REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"
PREFERRED = "preferredDuringSchedulingIgnoredDuringExecution"

LINUX_AMD64 = Platform("linux", "amd64")
LINUX_ARM64 = Platform("linux", "arm64")
WINDOWS = Platform("windows", "amd64")


def run(text: str, policy: Policy, images: Mapping[str, set[str]]) -> EngineResult:
    """``mutate`` over ``text``; ``images`` maps an image name (as written) to its platforms."""

    def resolve(references: list[ImageRef]) -> dict[ImageRef, Resolution]:
        answers = {}
        for reference in references:
            name = str(reference).removeprefix("docker.io/library/").rsplit(":", 1)[0]
            platforms = frozenset(Platform.parse(p) for p in images[name])
            answers[reference] = Resolution(reference, platforms, "sha256:" + "0" * 64)
        return answers

    return mutate_text(text, policy, resolve=resolve)


def pod(spec: Mapping[str, Any], *, name: str = "p", namespace: str | None = None) -> str:
    metadata: dict[str, Any] = {"name": name}
    if namespace is not None:
        metadata["namespace"] = namespace
    return yaml.safe_dump({"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec})


def spec_after(result: EngineResult) -> dict[str, Any]:
    document = yaml.safe_load(result.stream())
    spec: dict[str, Any] = document["spec"]
    return spec


def terms(spec: Mapping[str, Any]) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = spec["affinity"]["nodeAffinity"][REQUIRED]["nodeSelectorTerms"]
    return found


def allowed_pairs(term_list: list[dict[str, Any]], cluster: list[Platform]) -> set[str]:
    """The cluster platforms whose nodes (labelled by the kubelet) match one of the terms."""
    matched = set()
    for platform in cluster:
        labels = {ARCH: platform.architecture, OS: platform.os}
        for term in term_list:
            if all(
                labels.get(e["key"]) in e["values"]
                if e["operator"] == "In"
                else labels.get(e["key"]) not in e["values"]
                for e in term.get("matchExpressions") or []
                if e["key"] in labels
            ):
                matched.add(str(platform))
    return matched


CONTAINERS = [{"name": "c", "image": "app"}]


# 1. OS and architecture are constrained separately.
def test_a_pod_for_linux_arm64_and_windows_amd64_is_kept_off_linux_amd64() -> None:
    cluster = [LINUX_AMD64, LINUX_ARM64, WINDOWS]
    policy = Policy(SchedulingPolicy(platforms=tuple(cluster), tolerations={}))
    result = run(pod({"containers": CONTAINERS}), policy, {"app": {"linux/arm64", "windows/amd64"}})
    after = spec_after(result)
    assert allowed_pairs(terms(after), cluster) == {"linux/arm64", "windows/amd64"}
    assert terms(after) == [
        {
            "matchExpressions": [
                {"key": ARCH, "operator": "In", "values": ["arm64"]},
                {"key": OS, "operator": "In", "values": ["linux"]},
            ]
        },
        {
            "matchExpressions": [
                {"key": ARCH, "operator": "In", "values": ["amd64"]},
                {"key": OS, "operator": "In", "values": ["windows"]},
            ]
        },
    ]


# 2a. nodeAffinity: preferred skips the conflict check.
def test_preferred_mode_reports_a_required_term_that_contradicts_the_images() -> None:
    spec = {
        "containers": CONTAINERS,
        "affinity": {
            "nodeAffinity": {
                REQUIRED: {
                    "nodeSelectorTerms": [
                        {"matchExpressions": [{"key": ARCH, "operator": "In", "values": ["arm64"]}]}
                    ]
                }
            }
        },
    }
    result = run(
        pod(spec), Policy(SchedulingPolicy(node_affinity="preferred")), {"app": {"linux/amd64"}}
    )
    assert [p.status for p in result.pods] == ["scheduling-conflict"]
    assert result.stream() == pod(spec)
    assert any("nodeSelectorTerms[0]" in f.message for f in result.findings)


# 2b. ... and adds a redundant preferred term to a pod that already requires the right arch.
def test_preferred_mode_adds_nothing_to_a_pod_that_already_requires_the_right_arch() -> None:
    spec = {
        "containers": CONTAINERS,
        "affinity": {
            "nodeAffinity": {
                REQUIRED: {
                    "nodeSelectorTerms": [
                        {"matchExpressions": [{"key": ARCH, "operator": "In", "values": ["amd64"]}]}
                    ]
                }
            }
        },
    }
    result = run(
        pod(spec), Policy(SchedulingPolicy(node_affinity="preferred")), {"app": {"linux/amd64"}}
    )
    assert [p.status for p in result.pods] == ["ok"]
    assert result.stream() == pod(spec)


# 3. Several required terms, one of which allows only another architecture.
def test_a_term_that_allows_only_unsupported_nodes_is_removed_and_the_others_narrowed() -> None:
    arm64_term = {"matchExpressions": [{"key": ARCH, "operator": "In", "values": ["arm64"]}]}
    zone_term = {
        "matchExpressions": [
            {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["a"]}
        ]
    }
    spec = {
        "containers": CONTAINERS,
        "affinity": {"nodeAffinity": {REQUIRED: {"nodeSelectorTerms": [arm64_term, zone_term]}}},
    }
    result = run(pod(spec), Policy(), {"app": {"linux/amd64"}})
    assert [p.status for p in result.pods] == ["needs-change"]
    assert terms(spec_after(result)) == [
        {
            "matchExpressions": [
                {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["a"]},
                {"key": ARCH, "operator": "In", "values": ["amd64"]},
            ]
        }
    ]


# 4. Argo Workflows: `tolerations: []` on a template inherits the workflow's.
def test_an_argo_template_with_empty_tolerations_keeps_what_it_inherits() -> None:
    workflow = {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "Workflow",
        "metadata": {"name": "w"},
        "spec": {
            "tolerations": [{"key": "dedicated", "operator": "Exists"}],
            "templates": [{"name": "t", "tolerations": [], "container": {"image": "app"}}],
        },
    }
    result = run(yaml.safe_dump(workflow), Policy(), {"app": {"linux/amd64", "linux/arm64"}})
    template = yaml.safe_load(result.stream())["spec"]["templates"][0]
    assert template["tolerations"] == [
        {"key": "dedicated", "operator": "Exists"},
        {"key": ARCH, "operator": "Equal", "value": "arm64", "effect": "NoSchedule"},
    ]


def test_an_argo_template_with_null_affinity_inherits_the_workflows() -> None:
    zone = {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["a"]}
    workflow = {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "Workflow",
        "metadata": {"name": "w"},
        "spec": {
            "affinity": {
                "nodeAffinity": {REQUIRED: {"nodeSelectorTerms": [{"matchExpressions": [zone]}]}}
            },
            "templates": [{"name": "t", "affinity": None, "container": {"image": "app"}}],
        },
    }
    result = run(yaml.safe_dump(workflow), Policy(), {"app": {"linux/amd64"}})
    template = yaml.safe_load(result.stream())["spec"]["templates"][0]
    assert terms(template) == [
        {"matchExpressions": [zone, {"key": ARCH, "operator": "In", "values": ["amd64"]}]}
    ]


# 5a. An arm/v7-only image in a cluster with arm/v6 and arm/v7 nodes.
def test_an_arm_v7_image_in_a_cluster_with_two_arm_variants_is_warned_about() -> None:
    policy = policy_from_spec({"platforms": ["linux/amd64", "linux/arm/v6", "linux/arm/v7"]}, "p")
    result = run(pod({"containers": CONTAINERS}), policy, {"app": {"linux/arm/v7"}})
    assert any("linux/arm/v6" in f.message and f.severity == "warning" for f in result.findings), (
        result.findings
    )


def test_an_arm_variant_is_told_apart_by_the_node_selector_the_policy_names() -> None:
    policy = policy_from_spec(
        {
            "platforms": [
                "linux/amd64",
                {"platform": "linux/arm/v6", "nodeSelector": {"example.com/arm-variant": "v6"}},
                {"platform": "linux/arm/v7", "nodeSelector": {"example.com/arm-variant": "v7"}},
            ]
        },
        "p",
    )
    result = run(pod({"containers": CONTAINERS}), policy, {"app": {"linux/arm/v7"}})
    assert terms(spec_after(result)) == [
        {
            "matchExpressions": [
                {"key": ARCH, "operator": "In", "values": ["arm"]},
                {"key": "example.com/arm-variant", "operator": "In", "values": ["v7"]},
            ]
        }
    ]
    assert not [f for f in result.findings if f.severity != "info"]


# 5b. A Windows image's os.version is never matched to node.kubernetes.io/windows-build.
def test_a_windows_image_is_kept_on_nodes_of_its_build() -> None:
    policy = Policy(SchedulingPolicy(platforms=(LINUX_AMD64, WINDOWS), tolerations={}))
    result = run(
        pod({"containers": CONTAINERS}), policy, {"app": {"windows/amd64:10.0.17763.6659"}}
    )
    assert terms(spec_after(result)) == [
        {
            "matchExpressions": [
                {"key": OS, "operator": "In", "values": ["windows"]},
                {"key": BUILD, "operator": "In", "values": ["10.0.17763"]},
            ]
        }
    ]


# 6. A pod with spec.nodeName bypasses the scheduler.
def test_a_pinned_pod_gets_no_affinity_and_its_image_compatibility_is_reported() -> None:
    text = pod({"nodeName": "node-7", "containers": CONTAINERS})
    result = run(text, Policy(), {"app": {"linux/arm64"}})
    assert result.stream() == text
    assert any("node-7" in f.message and "linux/arm64" in f.message for f in result.findings), (
        result.findings
    )


# 7. tolerationSeconds is ignored when deciding whether a toleration covers the wanted one.
def test_a_toleration_with_seconds_does_not_cover_one_without() -> None:
    policy = policy_from_spec(
        {
            "tolerations": {
                "linux/arm64": [
                    {"key": ARCH, "operator": "Equal", "value": "arm64", "effect": "NoExecute"}
                ]
            }
        },
        "p",
    )
    limited = {"key": ARCH, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 30}
    result = run(
        pod({"containers": CONTAINERS, "tolerations": [limited]}),
        policy,
        {"app": {"linux/amd64", "linux/arm64"}},
    )
    tolerations = spec_after(result)["tolerations"]
    # The scheduler's taint manager uses the first toleration that matches a taint: the one
    # that tolerates forever must come first.
    assert tolerations == [
        {"key": ARCH, "operator": "Equal", "value": "arm64", "effect": "NoExecute"},
        limited,
    ]


# 8. exclude.namespaces never matches resources without metadata.namespace.
def test_namespace_exclusions_apply_to_resources_without_a_namespace() -> None:
    policy = policy_from_spec({"exclude": {"namespaces": ["default"]}}, "p")
    text = pod({"containers": CONTAINERS})
    result = run(text, policy, {"app": {"linux/amd64"}})
    assert [p.status for p in result.pods] == ["excluded"]
    assert result.stream() == text


# 9. Narrowing a quoted list drops the quotes of the kept value.
def test_narrowing_a_quoted_list_keeps_the_quotes() -> None:
    text = """\
apiVersion: v1
kind: Pod
metadata:
  name: p
spec:
  containers:
  - name: c
    image: app
  affinity:
    nodeAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
        nodeSelectorTerms:
        - matchExpressions:
          - key: kubernetes.io/arch
            operator: In
            values: ["amd64", "arm64"]
          - key: kubernetes.io/os
            operator: In
            values:
              - "linux"
              - 'windows'
"""
    policy = Policy(SchedulingPolicy(platforms=(LINUX_AMD64, LINUX_ARM64, WINDOWS), tolerations={}))
    result = run(text, policy, {"app": {"linux/amd64"}})
    output = result.stream()
    assert 'values: ["amd64"]' in output
    assert '              - "linux"\n' in output and "'windows'" not in output
