"""KubeRay (ray-project/kuberay): pod templates per head and worker group."""

from __future__ import annotations

from kmultiarch.core.operators import OperatorKind, Placement, _p

__all__ = ["ENTRIES"]


def _ray(kind: str, cluster: str) -> OperatorKind:
    return OperatorKind(
        "ray.io",
        kind,
        (
            Placement(_p(f"{cluster}/headGroupSpec/template/spec"), pod_spec=True),
            Placement(_p(f"{cluster}/workerGroupSpecs/*/template/spec"), pod_spec=True),
        ),
        cites=f"{kind}{cluster.replace('/', '.')}.headGroupSpec.template, "
        "workerGroupSpecs[].template (PodTemplateSpecs)",
    )


ENTRIES: tuple[OperatorKind, ...] = (
    # KubeRay: pod templates per group.
    _ray("RayCluster", "/spec"),
    _ray("RayJob", "/spec/rayClusterSpec"),
    _ray("RayService", "/spec/rayClusterConfig"),
)
