"""Tekton runs' images as the controller runs them (issue 29): ``$(params.NAME)`` filled in from
the run's params over the task's defaults (pkg/reconciler/taskrun/resources/apply.go
ApplyParameters), a PipelineRun's params first into its tasks' (pipelinerun/resources/apply.go),
and a step naming no image given its stepTemplate's (v1/merge.go MergeStepsWithStepTemplate).
Before, ``$(params.image)`` was an invalid reference (an unresolved-image warning, no change)
and a stepTemplate's image was not judged."""

from __future__ import annotations

import pytest
import yaml
from support.operators import ARCH_IN_AMD64, ARM64_TOLERATION, resolve

from kmultiarch.api import mutate_text
from kmultiarch.core.findings import IMAGE_CHOSEN_BY_OPERATOR
from kmultiarch.core.operators.tekton import tekton_images_view
from kmultiarch.engine import EngineResult
from kmultiarch.errors import PolicyError
from kmultiarch.io.config import parse_policy_text

#: After tektoncd/pipeline examples/v1/taskruns/step-image-params (a parameterised step image).
TASK_RUN = """\
apiVersion: tekton.dev/v1
kind: TaskRun
metadata: {name: build}
spec:
  params:
  - {name: image, value: registry.test/tool-amd64:1}
  taskSpec:
    params:
    - {name: image, type: string, default: registry.test/tool:1}
    stepTemplate:
      image: $(params.image)
    steps:
    - name: templated
      script: echo from the template
    - name: bracketed
      image: $(params["image"])
"""


def _run(text: str) -> tuple[dict[str, object], EngineResult]:
    result = mutate_text(text, resolve=resolve)
    (document,) = yaml.safe_load_all(result.stream())
    return document, result


def test_a_task_runs_step_images_take_the_runs_parameter_value() -> None:
    run, result = _run(TASK_RUN)
    assert run["spec"]["podTemplate"] == {"affinity": ARCH_IN_AMD64}  # type: ignore[index]
    assert result.findings == []


def test_a_parameter_the_run_does_not_give_takes_the_tasks_default() -> None:
    text = TASK_RUN.replace("  - {name: image, value: registry.test/tool-amd64:1}\n", "")
    text = text.replace("  params:\n  taskSpec:", "  taskSpec:")
    run, _ = _run(text)
    assert run["spec"]["podTemplate"] == {"tolerations": [ARM64_TOLERATION]}  # type: ignore[index]


def test_a_step_template_image_counts_for_the_steps_naming_none() -> None:
    """Only the template names the amd64 image; the step that names its own runs that."""
    text = TASK_RUN.replace('image: $(params["image"])', "image: registry.test/other:1")
    view = tekton_images_view(yaml.safe_load(text))
    steps = view["spec"]["taskSpec"]["steps"]  # type: ignore[index]
    assert [step["image"] for step in steps] == [
        "registry.test/tool-amd64:1",
        "registry.test/other:1",
    ]
    run, _ = _run(text)
    assert run["spec"]["podTemplate"] == {"affinity": ARCH_IN_AMD64}  # type: ignore[index]


PIPELINE_RUN = """\
apiVersion: tekton.dev/v1
kind: PipelineRun
metadata: {name: release}
spec:
  params:
  - {name: builder, value: registry.test/builder-amd64:2}
  pipelineSpec:
    params:
    - {name: builder, type: string, default: registry.test/builder:2}
    - name: tools
      type: object
      properties: {lint: {type: string}}
      default: {lint: registry.test/lint:1}
    tasks:
    - name: build
      params:
      - {name: tool, value: $(params.builder)}
      taskSpec:
        params:
        - {name: tool, type: string}
        steps:
        - {name: build, image: $(params.tool)}
    - name: lint
      params:
      - {name: linter, value: $(params.tools.lint)}
      taskSpec:
        params:
        - {name: linter, type: string}
        steps:
        - {name: lint, image: "$(params['linter'])"}
"""


def test_a_pipeline_runs_parameters_reach_its_tasks_step_images() -> None:
    run, result = _run(PIPELINE_RUN)
    template = run["spec"]["taskRunTemplate"]["podTemplate"]  # type: ignore[index]
    assert template == {"affinity": ARCH_IN_AMD64}
    assert result.findings == []
    view = tekton_images_view(yaml.safe_load(PIPELINE_RUN))
    tasks = view["spec"]["pipelineSpec"]["tasks"]  # type: ignore[index]
    assert [task["taskSpec"]["steps"][0]["image"] for task in tasks] == [
        "registry.test/builder-amd64:2",
        "registry.test/lint:1",  # an object parameter's key
    ]


def test_an_image_known_only_when_the_run_starts_is_the_runs_choice() -> None:
    """A task result is known at run time: the pods are not decided on the other images."""
    text = PIPELINE_RUN.replace("value: $(params.builder)", "value: $(tasks.fetch.results.image)")
    run, result = _run(text)
    assert "taskRunTemplate" not in run["spec"]  # type: ignore[operator]
    (finding,) = result.findings
    assert finding.rule == IMAGE_CHOSEN_BY_OPERATOR
    assert "$(tasks.fetch.results.image): known only when the run starts" in finding.message
    assert "the resource names none" not in finding.message


def test_the_input_resource_is_not_changed_by_the_view() -> None:
    resource = yaml.safe_load(TASK_RUN)
    tekton_images_view(resource)
    assert resource == yaml.safe_load(TASK_RUN)


_POLICY = (
    "apiVersion: kmultiarch.dev/v1alpha1\nkind: MultiArchPolicy\nmetadata: {name: p}\n"
    "spec:\n  podSpecs:\n  - apiVersion: example.com/v1\n    kind: BuildRun\n"
    "    imageParameters: {value}\n    placements:\n    - path: /spec/podTemplate\n"
    "      creates: 1\n      images: [/spec/taskSpec/steps/*/image]\n"
)


def test_a_policy_entry_can_say_its_controller_fills_in_tekton_parameters() -> None:
    policy = parse_policy_text(_POLICY.replace("{value}", "tekton"), "policy.yaml")
    text = TASK_RUN.replace(
        "apiVersion: tekton.dev/v1\nkind: TaskRun", "apiVersion: example.com/v1\nkind: BuildRun"
    )
    result = mutate_text(text, policy, resolve=resolve)
    (run,) = yaml.safe_load_all(result.stream())
    assert run["spec"]["podTemplate"] == {"affinity": ARCH_IN_AMD64}


def test_an_unknown_image_parameters_value_is_a_policy_error_naming_the_key() -> None:
    with pytest.raises(PolicyError) as caught:
        parse_policy_text(_POLICY.replace("{value}", "argo"), "policy.yaml")
    assert "imageParameters" in str(caught.value) and "tekton" in str(caught.value)


def test_a_matrix_parameter_is_known_only_when_the_run_starts() -> None:
    """A matrix fans a task out, one TaskRun per value (pipelinerun resources): the task's
    default for that parameter is not what its pods run."""
    text = PIPELINE_RUN.replace(
        "      params:\n      - {name: tool, value: $(params.builder)}\n",
        "      matrix:\n        params:\n        - name: tool\n          value: [registry.test/a:1,"
        " registry.test/b-amd64:1]\n",
    ).replace(
        "        - {name: tool, type: string}",
        "        - {name: tool, type: string, default: registry.test/a:1}",
    )
    view = tekton_images_view(yaml.safe_load(text))
    step = view["spec"]["pipelineSpec"]["tasks"][0]["taskSpec"]["steps"][0]  # type: ignore[index]
    assert step["image"] == "$(params.tool)"
    run, result = _run(text)
    assert "taskRunTemplate" not in run["spec"]  # type: ignore[operator]
    assert [f.rule for f in result.findings] == [IMAGE_CHOSEN_BY_OPERATOR]


#: A TaskRun whose tag parameter is written as YAML writes a number (issue 36, item 14).
NUMBER_TAGGED_RUN = """\
apiVersion: tekton.dev/v1
kind: TaskRun
metadata: {name: build}
spec:
  params:
  - {name: tag, value: 1}
  taskSpec:
    params:
    - {name: tag, type: string}
    steps:
    - name: build
      image: registry.test/tool-amd64:$(params.tag)
"""


def test_a_param_value_written_as_a_yaml_number_fills_in_the_step_image() -> None:
    """``value: 1`` is the string "1" to Tekton (ParamValue.UnmarshalJSON keeps a JSON value
    that is no string, array or object as its text): the step runs tool-amd64:1, and the
    TaskRun is kept on amd64. Before, ``$(params.tag)`` stayed in the image and the TaskRun
    was left unplaced."""
    run, result = _run(NUMBER_TAGGED_RUN)
    assert run["spec"]["podTemplate"] == {"affinity": ARCH_IN_AMD64}  # type: ignore[index]
    assert result.findings == []


def test_a_default_written_as_a_yaml_boolean_is_its_json_text() -> None:
    text = NUMBER_TAGGED_RUN.replace("  - {name: tag, value: 1}\n", "  - {name: other, value: x}\n")
    text = text.replace("{name: tag, type: string}", "{name: tag, type: string, default: true}")
    view = tekton_images_view(yaml.safe_load(text))
    step = view["spec"]["taskSpec"]["steps"][0]  # type: ignore[index]
    assert step["image"] == "registry.test/tool-amd64:true"


@pytest.mark.parametrize(
    ("written", "held"),
    [
        # After ParamValue.UnmarshalJSON (tektoncd/pipeline pkg/apis/pipeline/v1/param_types.go)
        # on the JSON the API server serves (Go's encoding/json).
        ("v1.2", "v1.2"),
        ("1", "1"),
        ("1.50", "1.5"),
        ("1.0", "1"),
        ("2.0e+21", "2e+21"),
        ("0.0000001", "1e-7"),
        ("true", "true"),
        ("false", "false"),
        ("null", ""),
        ("[a, b]", ["a", "b"]),
        ("[1, 2]", "[1,2]"),
        ("{k: v}", {"k": "v"}),
        ("{b: 1, a: x}", '{"a":"x","b":1}'),
    ],
)
def test_a_param_value_is_read_as_tekton_unmarshals_it(written: str, held: object) -> None:
    from kmultiarch.core.operators.tekton import tekton_param_value

    assert tekton_param_value(yaml.safe_load(f"value: {written}")["value"]) == held
