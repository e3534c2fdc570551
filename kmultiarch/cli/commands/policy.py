"""``kmultiarch policy init [PATH...]``: a MultiArchPolicy derived from the cluster's Node objects
(``kubectl get nodes -o yaml``) or its Karpenter NodePools, printed on stdout.

The printed policy is data made from the cluster's text (node names, labels, taints), so it is
written to load back, with kmultiarch's own loader, to exactly :func:`policy_document`'s value
whatever that text holds: the YAML is emitted by a serialiser, never assembled from the text,
and the header comment shows the text through :func:`printable` and as ASCII, so nothing in it
can end the comment line. Taints with an effect Kubernetes does not have are left out, with a
warning, since a policy cannot tolerate them.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

import yaml

from kmultiarch.cli.session import warn
from kmultiarch.core.placement.cluster import (
    NodeSource,
    cluster_shape,
    node_sources,
    policy_document,
    splitting_labels,
)
from kmultiarch.core.policy.model import TAINT_EFFECTS
from kmultiarch.errors import InputError
from kmultiarch.io.inputs import collect_inputs
from kmultiarch.output.safe import printable
from kmultiarch.yaml.stream import read_stream


def init_policy(paths: list[str], name: str) -> int:
    sources = collect_inputs(paths)
    found = [
        node
        for source in sources
        for document in read_stream(source.text, source.name)
        if document.value is not None
        for node in node_sources(document.value)
    ]
    where = ", ".join(source.name for source in sources)
    if not found:
        raise InputError(
            f"{where}: no Node (kubectl get nodes -o yaml) and no Karpenter NodePool "
            "(karpenter.sh/v1) found: give the files that hold them"
        )
    without_platform = [node.display_name for node in found if not node.platforms]
    if len(without_platform) == len(found):
        raise InputError(
            f"{where}: no platform could be read from {', '.join(without_platform)} (Nodes "
            "without kubernetes.io/os and kubernetes.io/arch labels, or NodePools whose "
            "requirements allow no architecture)"
        )
    for node in found:
        for taint in node.unknown_taints:
            warn(
                f"{node.display_name}: taint {taint} left out: Kubernetes has no taint effect "
                f"{taint.effect!r} ({', '.join(TAINT_EFFECTS)})"
            )
    sys.stdout.write(format_policy(found, name))
    sys.stdout.flush()
    return 0


def format_policy(found: Sequence[NodeSource], name: str) -> str:
    """The policy for ``found`` as YAML, under a comment naming each source."""
    lines = ["Written by `kmultiarch policy init` from:"]
    for node in found:
        platforms = ", ".join(str(p) for p in node.platforms) or "no platform"
        taints = f"; taints {', '.join(str(t) for t in node.taints)}" if node.taints else ""
        lines.append(f"  {node.display_name}: {platforms}{taints}")
    header = "".join(f"# {_comment_text(line)}\n" for line in lines)
    document = policy_document(cluster_shape(found), name, splitting_labels(found))
    return header + yaml.safe_dump(document, sort_keys=False, default_flow_style=False)


def _comment_text(text: str) -> str:
    """``text`` for a YAML comment: no character that could end the line (CR, LF, NEL, the
    Unicode line and paragraph separators) or that YAML refuses, as the terminal would show
    it; whatever is not ASCII escaped too, so the comment is plain ASCII by construction."""
    return printable(text).encode("ascii", "backslashreplace").decode("ascii")
