"""Node platforms and taints from Node objects and Karpenter NodePools; the policy they make;
the drift between NodePools and a policy."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from kmultiarch.core.images.platform import Platform
from kmultiarch.core.placement.cluster import (
    Taint,
    cluster_shape,
    drift,
    node_sources,
    nodepool_platforms,
    policy_document,
)
from kmultiarch.core.policy.model import SchedulingPolicy, Toleration
from kmultiarch.core.policy.schema import policy_from_object

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "cluster"
AMD64 = Platform("linux", "amd64")
ARM64 = Platform("linux", "arm64")
ARCH_TAINT = Taint("kubernetes.io/arch", "arm64", "NoSchedule")


def requirement(operator: str, *values: str, key: str = "kubernetes.io/arch") -> dict[str, Any]:
    item: dict[str, Any] = {"key": key, "operator": operator}
    if values:
        item["values"] = list(values)
    return item


def nodepool(name: str, requirements: list[Any], taints: list[Any] | None = None) -> Any:
    spec: dict[str, Any] = {"requirements": requirements}
    if taints is not None:
        spec["taints"] = taints
    return {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodePool",
        "metadata": {"name": name},
        "spec": {"template": {"spec": spec}},
    }


@pytest.mark.parametrize(
    ("requirements", "expected"),
    [
        ([requirement("In", "arm64")], [ARM64]),
        ([requirement("In", "amd64", "arm64")], [AMD64, ARM64]),
        ([requirement("NotIn", "amd64")], [ARM64]),
        ([requirement("Exists")], [AMD64, ARM64]),
        ([], [AMD64, ARM64]),  # no requirement on the architecture: either may be launched
        ([requirement("DoesNotExist")], []),
        ([requirement("Exists"), requirement("In", "arm64")], [ARM64]),
        ([requirement("In", "amd64", "arm64"), requirement("NotIn", "arm64")], [AMD64]),
        ([requirement("In", "s390x")], [Platform("linux", "s390x")]),
        (
            [requirement("In", "amd64"), requirement("In", "windows", key="kubernetes.io/os")],
            [Platform("windows", "amd64")],
        ),
        ([requirement("In", "arm64", key="beta.kubernetes.io/arch")], [ARM64]),
    ],
)
def test_nodepool_requirements_give_platforms(
    requirements: list[Any], expected: list[Platform]
) -> None:
    assert list(nodepool_platforms(requirements)) == expected


def test_nodes_give_platforms_from_labels_or_node_info_and_drop_transient_taints() -> None:
    document = yaml.safe_load((FIXTURES / "nodes.yaml").read_text())
    sources = {source.name: source for source in node_sources(document)}
    assert sources["ip-10-0-1-17.ec2.internal"].platforms == (AMD64,)
    assert sources["ip-10-0-1-18.ec2.internal"].taints == ()  # the cordon taint is left out
    assert sources["ip-10-0-2-40.ec2.internal"].taints == (ARCH_TAINT,)
    assert sources["akswin000001"].platforms == (Platform("windows", "amd64", "", "10.0.17763"),)
    no_labels = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": "bare"},
        "status": {"nodeInfo": {"operatingSystem": "linux", "architecture": "arm64"}},
    }
    assert node_sources(no_labels)[0].platforms == (ARM64,)


def test_startup_taints_are_not_tolerated_and_other_kinds_are_ignored() -> None:
    documents = list(yaml.safe_load_all((FIXTURES / "nodepools.yaml").read_text()))
    sources = [source for document in documents for source in node_sources(document)]
    assert [source.name for source in sources] == ["general", "graviton", "graviton-gpu"]
    graviton = sources[1]
    assert graviton.taints == (ARCH_TAINT,)  # not ebs.csi.aws.com/agent-not-ready


def test_shape_tolerates_the_least_tainted_pools_of_a_platform_without_untainted_capacity() -> None:
    sources = [
        node_sources(nodepool("general", [requirement("In", "amd64")], [gpu_taint()]))[0],
        node_sources(nodepool("plain", [requirement("In", "amd64")]))[0],
        node_sources(nodepool("arm", [requirement("In", "arm64")], [arch_taint()]))[0],
        node_sources(
            nodepool("arm-gpu", [requirement("In", "arm64")], [arch_taint(), gpu_taint()])
        )[0],
    ]
    shape = cluster_shape(sources)
    assert shape.platforms == (AMD64, ARM64)
    assert dict(shape.tolerations) == {
        ARM64: (Toleration("kubernetes.io/arch", "Equal", "arm64", "NoSchedule"),)
    }


def test_disjoint_tainted_pools_are_all_tolerated_and_prefer_no_schedule_is_not() -> None:
    sources = [
        node_sources(nodepool("a", [requirement("In", "arm64")], [arch_taint()]))[0],
        node_sources(
            nodepool(
                "b",
                [requirement("In", "arm64")],
                [{"key": "team", "value": "ml", "effect": "NoExecute"}],
            )
        )[0],
        node_sources(
            nodepool(
                "soft",
                [requirement("In", "amd64")],
                [{"key": "spot", "effect": "PreferNoSchedule"}],
            )
        )[0],
    ]
    shape = cluster_shape(sources)
    assert shape.platforms == (AMD64, ARM64)
    assert shape.tolerations[ARM64] == (
        Toleration("kubernetes.io/arch", "Equal", "arm64", "NoSchedule"),
        Toleration("team", "Equal", "ml", "NoExecute"),
    )
    assert AMD64 not in shape.tolerations


def test_policy_document_is_a_valid_policy_that_says_no_default_tolerations() -> None:
    untainted = node_sources(nodepool("all", [requirement("Exists")]))
    document = policy_document(cluster_shape(untainted))
    policy = policy_from_object(document, "(generated)")
    assert policy.scheduling.platforms == (AMD64, ARM64)
    assert dict(policy.scheduling.tolerations) == {}  # not the built-in arm64 toleration


def test_drift_names_missing_platforms_and_untolerated_taints() -> None:
    pools = [
        node_sources(nodepool("general", [requirement("In", "amd64")]))[0],
        node_sources(nodepool("graviton", [requirement("In", "arm64")], [arch_taint()]))[0],
        node_sources(nodepool("mainframe", [requirement("In", "s390x")]))[0],
    ]
    assert drift(pools, SchedulingPolicy()) == [
        (
            pools[2],
            "offers linux/s390x, which spec.platforms of the policy "
            "(linux/amd64, linux/arm64) lacks",
        ),
    ]
    untolerating = SchedulingPolicy(tolerations={})
    problems = drift(pools[:2], untolerating)
    assert [(pool.name, message) for pool, message in problems] == [
        (
            "graviton",
            "taints its linux/arm64 nodes kubernetes.io/arch=arm64:NoSchedule, which "
            "spec.tolerations.linux/arm64 of the policy does not tolerate",
        )
    ]
    exists = SchedulingPolicy(tolerations={ARM64: (Toleration("kubernetes.io/arch", "Exists"),)})
    assert drift(pools[:2], exists) == []


def test_nodes_alone_never_drift() -> None:
    document = yaml.safe_load((FIXTURES / "nodes.yaml").read_text())
    assert drift(node_sources(document), SchedulingPolicy(platforms=(AMD64,), tolerations={})) == []


def arch_taint() -> dict[str, str]:
    return {"key": "kubernetes.io/arch", "value": "arm64", "effect": "NoSchedule"}


def gpu_taint() -> dict[str, str]:
    return {"key": "nvidia.com/gpu", "effect": "NoSchedule"}
