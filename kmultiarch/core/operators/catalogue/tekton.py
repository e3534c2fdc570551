"""Tekton Pipelines (tektoncd/pipeline): a TaskRun's pod template, a PipelineRun's (v1 and
v1beta1 apart) and its tasks' own."""

from __future__ import annotations

from kmultiarch.core.operators.catalogue.common import optional_image
from kmultiarch.core.operators.model import ImageSource, Inheritance, OperatorKind, Placement, _p

__all__ = ["ENTRIES"]


def _by_reference(pointer: str, what: str) -> ImageSource:
    """Pods whose images a reference gives (a Task by taskRef, a StepAction by a step's ref),
    resolved by the controller at run time: not in the stream, so the pods sharing the
    placement cannot be decided on the images that are (tektoncd/pipeline pkg/reconciler/
    taskrun/resources/taskref.go, stepaction resolution)."""
    return ImageSource((), when=((_p(pointer), ()),), operator_only=what)


_TEKTON_PIPELINE_IMAGES = (
    optional_image("/spec/pipelineSpec/tasks/*/taskSpec/steps/*/image"),
    optional_image("/spec/pipelineSpec/tasks/*/taskSpec/sidecars/*/image"),
    optional_image("/spec/pipelineSpec/finally/*/taskSpec/steps/*/image"),
    optional_image("/spec/pipelineSpec/finally/*/taskSpec/sidecars/*/image"),
    *(
        _by_reference(f"/spec/pipelineSpec/{part}/*/{ref}", f"{part}[].{ref}")
        for part in ("tasks", "finally")
        for ref in ("taskRef", "pipelineRef", "pipelineSpec")
    ),
    *(
        _by_reference(f"/spec/pipelineSpec/{part}/*/taskSpec/steps/*/ref", f"{part}[] steps' ref")
        for part in ("tasks", "finally")
    ),
)


def _tekton_pipeline_run(
    version: str, template: str, task_template: str, creates: int
) -> tuple[Placement, Placement]:
    """A PipelineRun's pod template for every task's pod, and a task's own (taskRunSpecs[]),
    whose nodeSelector, tolerations and affinity replace the run's when set. The images of
    every task are judged for both (a task's own template is decided on them too: safe, if
    stricter than its own images need)."""
    source = (
        f"tektoncd/pipeline pkg/apis/pipeline/{version}/pipelinerun_types.go "
        f"PipelineRunSpec ({template}), GetTaskRunSpec: pod.MergePodTemplateWithDefault("
        f"taskRunSpecs[].{task_template}, the run's); pkg/apis/pipeline/pod/template.go "
        "MergePodTemplateWithDefault: a field of the task's template replaces the run's when "
        "not nil"
    )
    return (
        Placement(
            _p(template),
            _TEKTON_PIPELINE_IMAGES,
            creates=creates,
            versions=(version,),
            cites=source,
        ),
        Placement(
            _p(f"/spec/taskRunSpecs/*/{task_template}"),
            _TEKTON_PIPELINE_IMAGES,
            versions=(version,),
            inherits=Inheritance(
                _p(template),
                (("nodeSelector", "replace"), ("tolerations", "replace"), ("affinity", "replace")),
            ),
            cites=source,
        ),
    )


ENTRIES: tuple[OperatorKind, ...] = (
    # Tekton: a pod template applied to every step's pod; the images are the steps'.
    OperatorKind(
        "tekton.dev",
        "TaskRun",
        (
            Placement(
                _p("/spec/podTemplate"),
                (
                    optional_image("/spec/taskSpec/steps/*/image"),
                    optional_image("/spec/taskSpec/sidecars/*/image"),
                    _by_reference("/spec/taskSpec/steps/*/ref", "steps' ref (StepActions)"),
                ),
                creates=1,
            ),
        ),
        cites="TaskRun.spec.podTemplate.{affinity,tolerations,nodeSelector}; images "
        "spec.taskSpec.{steps,sidecars}[].image (a taskRef's are the referenced Task's)",
        adds="its init and entrypoint images",
        # apply.go ApplyParameters: $(params.NAME) in the step images are the run's values
        # (a step naming none runs its stepTemplate's: merge.go MergeStepsWithStepTemplate).
        image_parameters="tekton",
    ),
    OperatorKind(
        "tekton.dev",
        "PipelineRun",
        (
            *_tekton_pipeline_run("v1", "/spec/taskRunTemplate/podTemplate", "podTemplate", 2),
            *_tekton_pipeline_run("v1beta1", "/spec/podTemplate", "taskPodTemplate", 1),
        ),
        cites="PipelineRun (v1) spec.taskRunTemplate.podTemplate, spec.taskRunSpecs[]."
        "podTemplate; (v1beta1) spec.podTemplate, spec.taskRunSpecs[].taskPodTemplate; images "
        "spec.pipelineSpec.{tasks,finally}[].taskSpec.{steps,sidecars}[].image",
        adds="its init and entrypoint images",
        # apply.go ApplyParameters: $(params.NAME) in the step images are the run's values
        # (a step naming none runs its stepTemplate's: merge.go MergeStepsWithStepTemplate).
        image_parameters="tekton",
    ),
)
