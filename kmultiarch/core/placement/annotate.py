"""``spec.annotate``: the pod template kmultiarch changed says on which platforms it was judged
to run (``kmultiarch.dev/platforms: linux/amd64,linux/arm64``), so that whoever reads the
workload in the cluster sees why it got its tolerations and affinity.

Only pods whose scheduling fields change are annotated: an unchanged pod keeps its text, and a
second run changes nothing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from kmultiarch.core.images.platform import Platform
from kmultiarch.core.operators.workloads import Path, value_at
from kmultiarch.core.patch import OperationKind, PatchOperation

PLATFORMS_ANNOTATION = "kmultiarch.dev/platforms"


def template_path(pod_path: Path) -> Path:
    """The mapping whose ``metadata.annotations`` belong to the pod at ``pod_path``: the pod
    template holding the pod spec (``.../template`` for ``.../template/spec``; the Pod for
    ``spec``), or an Argo Workflows template itself (a list item: it carries its own
    ``metadata``)."""
    if pod_path and isinstance(pod_path[-1], int):
        return pod_path
    return pod_path[:-1]


def platforms_value(supported: frozenset[Platform], cluster: Sequence[Platform]) -> str:
    """The supported platforms in the policy's order, comma-separated without spaces."""
    return ",".join(str(platform) for platform in cluster if platform in supported)


def annotation_operations(
    document: object, pod_path: Path, supported: frozenset[Platform], cluster: Sequence[Platform]
) -> list[PatchOperation]:
    """RFC 6902 operations that set the platforms annotation on the pod's template."""
    value = platforms_value(supported, cluster)
    path = template_path(pod_path)
    template = value_at(document, path)
    if not isinstance(template, Mapping):
        return []
    metadata = template.get("metadata")
    if not isinstance(metadata, Mapping):
        op: OperationKind = "replace" if "metadata" in template else "add"
        return [
            PatchOperation(op, (*path, "metadata"), {"annotations": {PLATFORMS_ANNOTATION: value}})
        ]
    annotations = metadata.get("annotations")
    if not isinstance(annotations, Mapping):
        op = "replace" if "annotations" in metadata else "add"
        return [
            PatchOperation(op, (*path, "metadata", "annotations"), {PLATFORMS_ANNOTATION: value})
        ]
    if annotations.get(PLATFORMS_ANNOTATION) == value:
        return []
    return [
        PatchOperation(
            "replace" if PLATFORMS_ANNOTATION in annotations else "add",
            (*path, "metadata", "annotations", PLATFORMS_ANNOTATION),
            value,
        )
    ]
