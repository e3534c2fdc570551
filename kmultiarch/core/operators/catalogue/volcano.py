"""Volcano (volcano-sh/volcano): a pod template per task of a Job, a CronJob's job template
and a flow JobTemplate."""

from __future__ import annotations

from kmultiarch.core.operators.model import OperatorKind, Placement, _p

__all__ = ["ENTRIES"]


ENTRIES: tuple[OperatorKind, ...] = (
    # Volcano: one pod template per task.
    OperatorKind(
        "batch.volcano.sh",
        "Job",
        (Placement(_p("/spec/tasks/*/template/spec"), pod_spec=True),),
        cites="Job.spec.tasks[].template (a PodTemplateSpec)",
    ),
    # Volcano: a CronJob's Jobs are its spec.jobTemplate.spec (cronjob_controller_util.go
    # getJobFromTemplate: JobTemplate.Spec.DeepCopyInto(&job.Spec)); a flow JobTemplate's spec
    # is a Job's spec (flow/v1alpha1/jobtemplate_types.go JobTemplate.Spec v1alpha1.JobSpec).
    OperatorKind(
        "batch.volcano.sh",
        "CronJob",
        (
            Placement(
                _p("/spec/jobTemplate/spec/tasks/*/template/spec"),
                pod_spec=True,
                cites="volcano-sh/volcano staging/src/volcano.sh/apis/pkg/apis/batch/v1alpha1/"
                "job.go CronJobSpec.JobTemplate (JobTemplateSpec: a JobSpec, tasks[].template "
                "a PodTemplateSpec); pkg/controllers/cronjob/cronjob_controller_util.go "
                "(cj.Spec.JobTemplate.Spec.DeepCopyInto(&job.Spec))",
            ),
        ),
        cites="CronJob.spec.jobTemplate.spec.tasks[].template (PodTemplateSpecs)",
    ),
    OperatorKind(
        "flow.volcano.sh",
        "JobTemplate",
        (
            Placement(
                _p("/spec/tasks/*/template/spec"),
                pod_spec=True,
                cites="volcano-sh/volcano staging/src/volcano.sh/apis/pkg/apis/flow/v1alpha1/"
                "jobtemplate_types.go JobTemplate.Spec (a batch.volcano.sh JobSpec, made a "
                "Job by a JobFlow)",
            ),
        ),
        cites="JobTemplate.spec.tasks[].template (PodTemplateSpecs)",
    ),
)
