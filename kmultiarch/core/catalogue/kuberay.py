"""KubeRay (ray-project/kuberay): pod templates per head and worker group; a RayCronJob's
RayJobs are its spec.jobTemplate."""

from __future__ import annotations

from kmultiarch.core.operators import OperatorKind, Placement, _p

__all__ = ["ENTRIES"]


def _ray(kind: str, cluster: str, source: str = "") -> OperatorKind:
    return OperatorKind(
        "ray.io",
        kind,
        (
            Placement(_p(f"{cluster}/headGroupSpec/template/spec"), pod_spec=True, cites=source),
            Placement(
                _p(f"{cluster}/workerGroupSpecs/*/template/spec"), pod_spec=True, cites=source
            ),
        ),
        cites=f"{kind}{cluster.replace('/', '.')}.headGroupSpec.template, "
        "workerGroupSpecs[].template (PodTemplateSpecs)",
    )


ENTRIES: tuple[OperatorKind, ...] = (
    # KubeRay: pod templates per group.
    _ray("RayCluster", "/spec"),
    _ray("RayJob", "/spec/rayClusterSpec"),
    _ray("RayService", "/spec/rayClusterConfig"),
    # A RayCronJob makes, on its schedule, a RayJob whose spec is spec.jobTemplate.
    _ray(
        "RayCronJob",
        "/spec/jobTemplate/rayClusterSpec",
        "ray-project/kuberay ray-operator/apis/ray/v1/raycronjob_types.go RayCronJobSpec."
        "JobTemplate (a RayJobSpec); ray-operator/controllers/ray/raycronjob_controller.go "
        "constructRayJob (Spec: *cronJob.Spec.JobTemplate.DeepCopy())",
    ),
)
