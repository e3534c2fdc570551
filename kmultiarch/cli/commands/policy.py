"""``kmultiarch policy init [PATH...]``: a MultiArchPolicy derived from the cluster's Node objects
(``kubectl get nodes -o yaml``) or its Karpenter NodePools, printed on stdout."""

from __future__ import annotations

import sys

import yaml

from kmultiarch.core.cluster import cluster_shape, node_sources, policy_document
from kmultiarch.errors import InputError
from kmultiarch.io.inputs import collect_inputs
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
    shape = cluster_shape(found)
    lines = ["# Written by `kmultiarch policy init` from:"]
    for node in found:
        platforms = ", ".join(str(p) for p in node.platforms) or "no platform"
        taints = f"; taints {', '.join(str(t) for t in node.taints)}" if node.taints else ""
        lines.append(f"#   {node.display_name}: {platforms}{taints}")
    header = "\n".join(lines) + "\n"
    body = yaml.safe_dump(policy_document(shape, name), sort_keys=False, default_flow_style=False)
    sys.stdout.write(header + body)
    sys.stdout.flush()
    return 0
