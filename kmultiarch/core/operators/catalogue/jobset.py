"""JobSet (kubernetes-sigs/jobset): a Job template per replicated job."""

from __future__ import annotations

from kmultiarch.core.operators.model import OperatorKind, Placement, _p

__all__ = ["ENTRIES"]


ENTRIES: tuple[OperatorKind, ...] = (
    # JobSet: a Job template per replicated job.
    OperatorKind(
        "jobset.x-k8s.io",
        "JobSet",
        (
            Placement(
                _p("/spec/replicatedJobs/*/template/spec/template/spec"),
                pod_spec=True,
                cites="kubernetes-sigs/jobset api/jobset/v1alpha2/jobset_types.go "
                "ReplicatedJob.Template (a batch/v1 JobTemplateSpec)",
            ),
        ),
        cites="JobSet.spec.replicatedJobs[].template.spec.template (PodTemplateSpecs)",
    ),
)
