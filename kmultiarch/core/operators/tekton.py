"""The images a Tekton run's steps really run: ``$(params.NAME)`` substituted as the controller
does it, and a step without an image given its ``stepTemplate``'s.

From tektoncd/pipeline:
- pkg/reconciler/taskrun/resources/apply.go ``ApplyParameters``: a Task's string and object
  parameters, their ``default`` overridden by the TaskRun's ``params[].value``, replace
  ``$(params.NAME)``, ``$(params["NAME"])``, ``$(params['NAME'])`` (``$(params.NAME.KEY)`` for
  an object's key) in the steps, the sidecars and the step template;
- pkg/reconciler/pipelinerun/resources/apply.go ``ApplyParameters``: a Pipeline's parameters
  (defaults overridden by the PipelineRun's ``params``) are substituted into its tasks'
  ``params[].value`` first, which then feed each task's own;
- pkg/apis/pipeline/v1/merge.go ``MergeStepsWithStepTemplate``: a step's fields over the
  template's, so a step naming no image runs the template's;
- pkg/apis/pipeline/v1/param_types.go ``ParamValue.UnmarshalJSON``: a ``value`` (or a
  ``default``) is an array when its JSON is an array of strings, an object when a map of
  strings, and otherwise a string: a JSON string's text, nothing for ``null`` (unmarshalling
  null into a Go string leaves it empty), and for anything else the JSON text itself (``1``,
  ``true``, ``[1,2]``). So ``value: 1`` is the string "1" (:func:`tekton_param_value`).

What is known only at run time (``$(tasks.X.results.Y)``, ``$(context...)``, a matrix's values)
stays as written: the image is the run's choice, and the engine says so. Pure: data in, a new
resource out (the input is not changed).
"""

from __future__ import annotations

import copy
import json
import math
import re
from collections.abc import Mapping, MutableMapping
from decimal import Decimal

__all__ = ["tekton_images_view", "tekton_param_value"]

_PARAM = re.compile(
    r"\$\(params(?:\.(?P<dotted>[A-Za-z0-9_.-]+)|\[\"(?P<double>[^\"]+)\"\]|\['(?P<single>[^']+)'\])\)"
)

Parameters = dict[str, object]
ParamValue = str | list[str] | dict[str, str]


def tekton_images_view(resource: Mapping[str, object]) -> Mapping[str, object]:
    """``resource`` (a TaskRun's ``spec.taskSpec``, a PipelineRun's ``spec.pipelineSpec``)
    with each inline task's step and sidecar images as the controller runs them."""
    view = copy.deepcopy(dict(resource))
    spec = view.get("spec")
    if not isinstance(spec, MutableMapping):
        return view
    task = spec.get("taskSpec")  # a TaskRun's
    if isinstance(task, MutableMapping):
        _apply(task, _parameters(task.get("params"), spec.get("params"), {}))
    pipeline = spec.get("pipelineSpec")  # a PipelineRun's
    if not isinstance(pipeline, MutableMapping):
        return view
    run = _parameters(pipeline.get("params"), spec.get("params"), {})
    for part in ("tasks", "finally"):
        for pipeline_task in _items(pipeline.get(part)):
            task = pipeline_task.get("taskSpec")
            if isinstance(task, MutableMapping):
                values = _parameters(task.get("params"), pipeline_task.get("params"), run)
                for name in _matrix_names(pipeline_task.get("matrix")):
                    values.pop(name, None)  # one TaskRun per value: known at run time
                _apply(task, values)
    return view


def _items(value: object) -> list[MutableMapping[str, object]]:
    return (
        [item for item in value if isinstance(item, MutableMapping)]
        if isinstance(value, list)
        else []
    )


def _matrix_names(matrix: object) -> set[str]:
    """The parameters a task's ``matrix`` fans out (``params``, ``include[].params``)."""
    if not isinstance(matrix, Mapping):
        return set()
    lists = [matrix.get("params")] + [item.get("params") for item in _items(matrix.get("include"))]
    return {
        name
        for params in lists
        for item in _items(params)
        if isinstance(name := item.get("name"), str)
    }


def _parameters(declared: object, given: object, outer: Parameters) -> Parameters:
    """The values of a task's (or pipeline's) parameters: each declared default, replaced by
    the value given for it, itself substituted with the ``outer`` parameters."""
    values: Parameters = {}
    for item in _items(declared):
        name = item.get("name")
        if isinstance(name, str) and "default" in item:
            values[name] = tekton_param_value(item["default"])
    for item in _items(given):
        name = item.get("name")
        if isinstance(name, str) and "value" in item:
            value = tekton_param_value(item["value"])
            values[name] = _substituted(value, outer) if isinstance(value, str) else value
    return values


def tekton_param_value(value: object) -> ParamValue:
    """A parameter's ``value`` (or ``default``) as the controller holds it, after
    ``ParamValue.UnmarshalJSON`` (param_types.go) on the JSON the API server serves: a list of
    strings is an array, a map of strings an object; a string is itself, ``null`` the empty
    string, and anything else (a number, a boolean, a list or map holding other values) the
    string of its JSON text."""
    if isinstance(value, str):
        return value
    if isinstance(value, list) and all(isinstance(item, str) for item in value):
        return list(value)
    if isinstance(value, dict) and all(
        isinstance(key, str) and isinstance(item, str) for key, item in value.items()
    ):
        return dict(value)
    if value is None:
        return ""
    return _json_text(value)


def _json_text(value: object) -> str:
    """``value`` as Go's encoding/json writes it, which is how the API server serves a custom
    resource: compact, maps' keys sorted, floats in Go's form (``1``, ``0.5``, ``1e+21``)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return _go_float(value)
    if isinstance(value, list):
        return "[" + ",".join(_json_text(item) for item in value) + "]"
    if isinstance(value, dict):
        items = sorted((str(key), item) for key, item in value.items())
        return "{" + ",".join(f"{json.dumps(k)}:{_json_text(v)}" for k, v in items) + "}"
    if value is None:
        return "null"
    if isinstance(value, int) and not -(2**63) <= value < 2**63:
        return _go_float(float(value))  # past int64, YAML's reader gives Go a float64
    return json.dumps(value, ensure_ascii=False)


def _go_float(number: float) -> str:
    """encoding/json's ``floatEncoder``: the shortest digits that read back, in plain
    notation for magnitudes in [1e-6, 1e21), else as ``1e-07`` cleaned to ``1e-7``."""
    if not math.isfinite(number):
        return json.dumps(number)  # YAML's .inf: the API server would have refused it
    magnitude = abs(number)
    if magnitude == 0:
        return "-0" if math.copysign(1, number) < 0 else "0"
    if 1e-6 <= magnitude < 1e21:
        return format(Decimal(repr(number)).normalize(), "f")
    mantissa, _, exponent = repr(number).partition("e")
    sign = exponent[0] if exponent[0] in "+-" else "+"
    return f"{mantissa}e{sign}{int(exponent.lstrip('+-'))}"


def _apply(task: MutableMapping[str, object], values: Parameters) -> None:
    template = task.get("stepTemplate")
    template_image = template.get("image") if isinstance(template, Mapping) else None
    for step in _items(task.get("steps")):
        image = step.get("image")
        if not (isinstance(image, str) and image.strip()) and isinstance(template_image, str):
            image = template_image
        if isinstance(image, str):
            step["image"] = _substituted(image, values)
    for sidecar in _items(task.get("sidecars")):
        image = sidecar.get("image")
        if isinstance(image, str):
            sidecar["image"] = _substituted(image, values)


def _substituted(text: str, values: Parameters) -> str:
    """``text`` with every parameter whose value is known replaced (an object's key by
    ``NAME.KEY``); the others left for run time."""

    def value_of(match: re.Match[str]) -> str:
        name = match.group("dotted") or match.group("double") or match.group("single") or ""
        value = values.get(name)
        if value is None and match.group("dotted") and "." in name:
            base, _, key = name.partition(".")
            found = values.get(base)
            value = found.get(key) if isinstance(found, Mapping) else None
        return value if isinstance(value, str) else match.group(0)

    return _PARAM.sub(value_of, text)
