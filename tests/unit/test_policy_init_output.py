"""What ``kmultiarch policy init`` prints is data: for any node names, labels and taints it loads,
with kmultiarch's own reader and policy loader, to exactly the policy meant, and its header
comment stays a comment (issue 21)."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from kmultiarch.cli.commands.policy import format_policy
from kmultiarch.core.images.platform import Platform
from kmultiarch.core.placement.cluster import Taint, cluster_shape, node_sources, policy_document
from kmultiarch.io.config import parse_policy_text
from kmultiarch.yaml.stream import read_single_document

#: What ends a line or a scalar, opens or closes one, starts a comment, an anchor, a tag, a
#: directive, a document: YAML's indicators, line breaks of every kind, control characters.
_HOSTILE_PIECES = [
    "\n",
    "\r",
    "\r\n",
    "\x85",
    "\u2028",
    "\u2029",
    "'",
    '"',
    "''",
    "#",
    " #",
    ": ",
    ":",
    "- ",
    "? ",
    "[",
    "]",
    "{",
    "}",
    ",",
    "&a",
    "*a",
    "!",
    "!!python/object:os.system",
    "|",
    ">",
    "%YAML 1.2",
    "@",
    "`",
    "---",
    "...",
    "\t",
    " ",
    "\x00",
    "\x07",
    "\x1b]0;x\x07",
    "\x7f",
    "\ufeff",
    "\ufffe",
    "\uffff",
    "\u202e",
    "é",
    "\U0001f600",
    "::error::x",
    "##[warning]",
    "\\",
    "\\n",
    "yes",
    "null",
    "~",
    "1:20",
    "0o17",
    "1e3",
    "=",
    "<<",
    "linux/arm64",
    "tolerations: {linux/arm64: [{operator: Exists}]}",
    "a" * 130,  # past the 128 characters of a YAML simple key
]
HOSTILE = st.lists(
    st.one_of(st.sampled_from(_HOSTILE_PIECES), st.text(max_size=3)), max_size=6
).map("".join)
ARCH = st.one_of(st.sampled_from(["amd64", "arm64", "arm", "x86_64", "s390x", "a" * 130]), HOSTILE)
OS = st.one_of(st.sampled_from(["linux", "windows"]), HOSTILE)
EFFECT = st.one_of(
    st.sampled_from(["NoSchedule", "PreferNoSchedule", "NoExecute", "NoSchedul", "x'"]), HOSTILE
)
TAINT = st.fixed_dictionaries(
    {"key": st.one_of(st.just("dedicated"), HOSTILE)},
    optional={"value": HOSTILE, "effect": EFFECT},
)


def _node(name: str, os: str, arch: str, build: str, taints: list[Any]) -> dict[str, Any]:
    labels = {"kubernetes.io/os": os, "kubernetes.io/arch": arch}
    if build:
        labels["node.kubernetes.io/windows-build"] = build
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": labels},
        "spec": {"taints": taints},
    }


def _nodepool(name: str, archs: list[str], taints: list[Any]) -> dict[str, Any]:
    requirement = {"key": "kubernetes.io/arch", "operator": "In", "values": archs}
    return {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodePool",
        "metadata": {"name": name},
        "spec": {"template": {"spec": {"requirements": [requirement], "taints": taints}}},
    }


NODES = st.builds(
    _node,
    HOSTILE,
    OS,
    ARCH,
    st.one_of(st.just(""), st.just("10.0.17763"), HOSTILE),
    st.lists(TAINT, max_size=3),
)
NODEPOOLS = st.builds(_nodepool, HOSTILE, st.lists(ARCH, max_size=3), st.lists(TAINT, max_size=3))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.one_of(NODES, NODEPOOLS), min_size=1, max_size=5), HOSTILE)
def test_the_printed_policy_loads_to_exactly_the_intended_value(
    items: list[Any], name: str
) -> None:
    found = node_sources({"apiVersion": "v1", "kind": "List", "items": items})
    assume(any(node.platforms for node in found))
    shape = cluster_shape(found)
    printed = format_policy(found, name)

    assert read_single_document(printed, "printed") == policy_document(shape, name)
    policy = parse_policy_text(printed, "printed")
    assert policy.scheduling.platforms == shape.platforms
    assert dict(policy.scheduling.tolerations) == dict(shape.tolerations)

    lines = printed.split("\n")
    header, first = lines[: len(found) + 1], lines[len(found) + 1]
    assert first == "apiVersion: kmultiarch.dev/v1alpha1"
    for line in header:
        assert line.startswith("# ")
        assert all(" " <= character <= "~" or character == "\t" for character in line), line


def test_taints_with_an_effect_kubernetes_does_not_have_are_kept_apart() -> None:
    """NoSchedul reached the policy, which kmultiarch then refused to load (exit 2)."""
    taints = [
        {"key": "kubernetes.io/arch", "value": "arm64", "effect": "NoSchedule"},
        {"key": "dedicated", "value": "batch", "effect": "NoSchedul"},
        {"key": "gpu", "effect": "noexecute"},
    ]
    (node,) = node_sources(_node("arm", "linux", "arm64", "", taints))
    assert node.taints == (Taint("kubernetes.io/arch", "arm64", "NoSchedule"),)
    assert node.unknown_taints == (
        Taint("dedicated", "batch", "NoSchedul"),
        Taint("gpu", "", "noexecute"),
    )
    (pool,) = node_sources(_nodepool("pool", ["arm64"], taints))
    assert (pool.taints, pool.unknown_taints) == (node.taints, node.unknown_taints)
    printed = format_policy([node], "cluster")
    policy = parse_policy_text(printed, "printed")
    assert policy.scheduling.tolerations == {
        Platform("linux", "arm64"): (Taint("kubernetes.io/arch", "arm64").toleration(),)
    }
