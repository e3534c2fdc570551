"""KubeRay (ray-project/kuberay): pod templates per head and worker group; a RayCronJob's
RayJobs are its spec.jobTemplate."""

from __future__ import annotations

from kmultiarch.core.operators.model import OperatorKind, Placement, _p

__all__ = ["ENTRIES"]


#: A RayJob in K8sJobMode (the default) submits from a Job whose pod template is
#: spec.submitterPodTemplate when given (its first container the submitter), else the
#: operator's default (the head's image, no placement fields).
_SUBMITTER_CITE = (
    "ray-project/kuberay ray-operator/controllers/ray/rayjob_controller.go getSubmitterTemplate "
    "(spec.submitterPodTemplate, else common.GetDefaultSubmitterTemplate: the head's first "
    "container's image); createK8sJobIfNeed (only in submissionMode K8sJobMode, the default)"
)


def _ray(kind: str, cluster: str, source: str = "", job: str = "") -> OperatorKind:
    """A Ray cluster's pod templates at ``cluster``; ``job``: the RayJobSpec holding it, whose
    submitter pod template is placed too."""
    submitter = (
        (
            Placement(
                _p(f"{job}/submitterPodTemplate/spec"),
                pod_spec=True,
                unless=(
                    (_p(f"{job}/submissionMode"), ("HTTPMode", "SidecarMode", "InteractiveMode")),
                ),
                cites=_SUBMITTER_CITE + ("; " + source if source else ""),
            ),
        )
        if job
        else ()
    )
    return OperatorKind(
        "ray.io",
        kind,
        (
            Placement(_p(f"{cluster}/headGroupSpec/template/spec"), pod_spec=True, cites=source),
            Placement(
                _p(f"{cluster}/workerGroupSpecs/*/template/spec"), pod_spec=True, cites=source
            ),
            *submitter,
        ),
        cites=f"{kind}{cluster.replace('/', '.')}.headGroupSpec.template, "
        "workerGroupSpecs[].template (PodTemplateSpecs)",
    )


ENTRIES: tuple[OperatorKind, ...] = (
    # KubeRay: pod templates per group.
    _ray("RayCluster", "/spec"),
    _ray("RayJob", "/spec/rayClusterSpec", job="/spec"),
    _ray("RayService", "/spec/rayClusterConfig"),
    # A RayCronJob makes, on its schedule, a RayJob whose spec is spec.jobTemplate.
    _ray(
        "RayCronJob",
        "/spec/jobTemplate/rayClusterSpec",
        "ray-project/kuberay ray-operator/apis/ray/v1/raycronjob_types.go RayCronJobSpec."
        "JobTemplate (a RayJobSpec); ray-operator/controllers/ray/raycronjob_controller.go "
        "constructRayJob (Spec: *cronJob.Spec.JobTemplate.DeepCopy())",
        job="/spec/jobTemplate",
    ),
)
