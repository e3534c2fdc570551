"""Argo Rollouts (argoproj/argo-rollouts): an Experiment's ReplicaSets, one per template, and
the Jobs of an analysis template's job metrics."""

from __future__ import annotations

from kmultiarch.core.operators.model import OperatorKind, Placement, _p

__all__ = ["ENTRIES"]

_ROLLOUTS = "argoproj/argo-rollouts "

#: An AnalysisRun copies its template's metrics (arguments substituted); a job metric's Job
#: has the metric's Job spec as it is.
_JOB_METRIC_CITE = (
    _ROLLOUTS + "pkg/apis/rollouts/v1alpha1/analysis_types.go MetricProvider.Job (JobMetric."
    "Spec, a batchv1.JobSpec); metricproviders/job/job.go newMetricJob (the Job's Spec is "
    "metric.Provider.Job.Spec, only labels added to its pod template)"
)


ENTRIES: tuple[OperatorKind, ...] = (
    # An Experiment: a ReplicaSet per spec.templates[] item, its pod template copied.
    OperatorKind(
        "argoproj.io",
        "Experiment",
        (
            Placement(
                _p("/spec/templates/*/template/spec"),
                pod_spec=True,
                cites=_ROLLOUTS + "pkg/apis/rollouts/v1alpha1/experiment_types.go TemplateSpec."
                "Template (a PodTemplateSpec); experiments/replicaset.go "
                "newReplicaSetFromTemplate (the ReplicaSet's template is a copy of it, only "
                "the pod-template-hash label added)",
            ),
        ),
        cites="Experiment.spec.templates[].template (PodTemplateSpecs)",
    ),
    # An AnalysisTemplate's or ClusterAnalysisTemplate's job metrics: a Job per measurement.
    *(
        OperatorKind(
            "argoproj.io",
            kind,
            (
                Placement(
                    _p("/spec/metrics/*/provider/job/spec/template/spec"),
                    pod_spec=True,
                    cites=_JOB_METRIC_CITE,
                ),
            ),
            cites=f"{kind}.spec.metrics[].provider.job.spec.template (a Job's PodTemplateSpec)",
        )
        for kind in ("AnalysisTemplate", "ClusterAnalysisTemplate")
    ),
)
