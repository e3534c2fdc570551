"""KServe: the ServingRuntime an InferenceService's predictor runs, as the controller chooses it
from the runtimes of the stream, and the images and scheduling fields the predictor's pods take
from it. Pure: plain data in and out.

What is followed (kserve/kserve, commit aaac4e294dae2c7b1aa1886447793f3aa1c30912):

- pkg/apis/serving/v1beta1/inference_service_defaults.go setPredictorModelDefaults: a framework
  predictor (``sklearn``, ``tensorflow``...) is a ``model`` of that format (its own fields kept);
  triton and vLLM models, and the triton, onnx and huggingface framework forms, default to
  protocol v2; any other to v1 (predictor_model.go GetProtocol).
- pkg/controller/v1beta1/inferenceservice/components/predictor.go reconcileModel: a named
  ``model.runtime`` is that ServingRuntime of the namespace, else that ClusterServingRuntime
  (utils.go GetServingRuntime); else the first of GetSupportingRuntimes (predictor_model.go):
  the namespace's runtimes, then the cluster's, each group those not disabled, not multi-model,
  multi-node exactly when the predictor has a ``workerSpec``, supporting the model's format
  (``mt:name[:version]``, only formats with ``autoSelect`` when the runtime is not named) and its
  protocol, ordered by the lowest protocol they speak, then newest first, then by name
  (sortServingRuntimeList), then re-sorted, stably, by the format's priority, highest first,
  unset last (sortSupportedRuntimeByPriority): the priority decides first. A manifest carries
  no creation time, so runtimes tied on priority and protocol are all taken: the pods are
  judged on every image they could run.
- buildPodSpec: the pods run the runtime's ``kserve-container`` merged with the model's own
  container (its ``image`` wins: utils.go MergeRuntimeContainers), its tag set by UpdateImageTag
  (``runtimeVersion`` replaces or adds it; without one a GPU limit adds ``-gpu`` to the tag of a
  TF Serving, TorchServe or Hugging Face server, and a vLLM server without one runs the
  ``-cpu`` repository; not for a digest), the runtime's ``transformer-container`` unless the
  predictor names one, every other runtime container, and the predictor's own containers.
- utils.go MergePodSpec: the runtime's nodeSelector, affinity and tolerations under the
  predictor's, by a strategic merge patch (the predictor's tolerations and node affinity
  replace the runtime's; nodeSelector keys merge). multiNodeProcess: a worker's pods are the
  runtime's ``workerSpec`` (its ``worker-container``) merged with the predictor's.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

__all__ = [
    "CLUSTER_SERVING_RUNTIME",
    "GROUP",
    "SERVING_RUNTIME",
    "RuntimeChoice",
    "Runtimes",
    "runtime_choice",
    "storage_choice",
]

GROUP = "serving.kserve.io"
SERVING_RUNTIME = "ServingRuntime"
CLUSTER_SERVING_RUNTIME = "ClusterServingRuntime"

#: The runtimes of the stream of a kind: (API group, kind, namespace; None: every namespace).
Runtimes = Callable[[str, str, str | None], Sequence[Mapping[str, object]]]

#: Framework predictors and the model format the defaulting webhook gives them.
_FRAMEWORKS = {
    "sklearn": "sklearn",
    "tensorflow": "tensorflow",
    "xgboost": "xgboost",
    "pytorch": "pytorch",
    "triton": "triton",
    "onnx": "onnx",
    "huggingface": "huggingface",
    "pmml": "pmml",
    "lightgbm": "lightgbm",
    "paddle": "paddle",
}
#: Framework forms assigned protocol v2 when they name none (assignTritonRuntime...).
_V2_FRAMEWORKS = frozenset({"triton", "onnx", "huggingface"})
#: Model formats defaulting to protocol v2 (setPredictorModelDefaults).
_V2_FORMATS = frozenset({"triton", "vLLM"})
#: constants.go GetProtocolVersionInt: the order protocols are preferred in.
_PROTOCOL_RANK = {"v1": 1, "v2": 2, "grpc-v1": 3, "grpc-v2": 4}
_UNKNOWN_PROTOCOL = 5
_MAIN = "kserve-container"
_TRANSFORMER = "transformer-container"
_WORKER = "worker-container"
#: constants.go GetServerTypeFromRuntimeName, for runtimes without the server-type annotation.
_SERVER_TYPE_BY_NAME = {
    "kserve-mlserver": "mlserver",
    "kserve-torchserve": "torchserve",
    "kserve-tritonserver": "tritonserver",
    "kserve-tensorflow-serving": "tensorflow-serving",
    "kserve-huggingfaceserver": "huggingfaceserver",
    "kserve-vllmserver": "vllmserver",
}
_SERVER_TYPE_ANNOTATION = "serving.kserve.io/server-type"
_GPU_SUFFIXED = frozenset({"tensorflow-serving", "torchserve", "huggingfaceserver"})


@dataclass(frozen=True)
class RuntimeChoice:
    """What a predictor's (or its workers') pods take from the runtime the controller chooses.

    ``images``: (where, image) of each container the runtime gives them; ``fields``: the
    scheduling fields the runtime sets (the predictor's own, when set, win); ``missing``: why
    no runtime of the stream can be named (then the images are the operator's choice);
    ``chosen``: an image of the operator's configuration the pods run."""

    images: tuple[tuple[str, str], ...] = ()
    fields: Mapping[str, object] = field(default_factory=dict)
    missing: str = ""
    #: An image the operator's configuration chooses (a ``defaultImages`` entry stands for it).
    chosen: str = ""


def runtime_choice(
    isvc: Mapping[str, object], namespace: str, runtimes: Runtimes, worker: bool = False
) -> RuntimeChoice | None:
    """The runtime(s) an InferenceService's predictor runs (``worker``: its workers'), or None
    when the predictor has no model (a custom predictor: its own containers are its images)."""
    spec = _mapping(isvc.get("spec"))
    predictor = _mapping(spec.get("predictor"))
    model = _model(predictor)
    if model is None:
        return None
    multi_node = predictor.get("workerSpec") is not None
    named = model.get("runtime")
    if isinstance(named, str) and named:
        found = _named(named, namespace, runtimes)
        chosen = [(named, found)] if found is not None else []
        if not chosen:
            return RuntimeChoice(
                missing=f"the ServingRuntime or ClusterServingRuntime {named} (not in the stream)"
            )
    else:
        chosen = _supporting(model, namespace, runtimes, multi_node)
        if not chosen:
            format_name = _format(model)[0]
            return RuntimeChoice(
                missing=f"the serving runtime the operator chooses for model format "
                f"{format_name or '(none)'} (no runtime of the stream supports it)"
            )
    images: list[tuple[str, str]] = []
    fields: dict[str, object] = {}
    for name, runtime in chosen:
        kind = str(runtime.get("kind"))
        runtime_spec = _mapping(runtime.get("spec"))
        if worker:
            runtime_spec = _mapping(runtime_spec.get("workerSpec"))
        for where, image in _runtime_images(model, predictor, name, runtime, runtime_spec, worker):
            if (f"{kind} {name} {where}", image) not in images:
                images.append((f"{kind} {name} {where}", image))
        for key in ("nodeSelector", "affinity", "tolerations"):
            if runtime_spec.get(key) is not None:
                fields.setdefault(key, runtime_spec[key])
    return RuntimeChoice(tuple(images), fields)


def storage_choice(isvc: Mapping[str, object]) -> RuntimeChoice | None:
    """The storage initializer the pod webhook adds to a predictor's pods for its model's
    storage (predictor.go addStorageInitializerAnnotations: the model's ``storageUri`` or
    ``storage``, a custom predictor's STORAGE_URI environment; spec.predictor.storageUris), its
    image the inferenceservice-config ConfigMap's; none when every URI is a ``pvc://`` one,
    which is mounted, not downloaded (storage_initializer_injector.go
    CommonStorageInitialization)."""
    predictor = _mapping(_mapping(isvc.get("spec")).get("predictor"))
    model = _model(predictor) or {}
    uris: list[object] = [model.get("storageUri")]
    if model.get("storage") is not None:
        uris.append("storage")
    uris.extend(_mapping(item).get("uri") for item in _listed(predictor.get("storageUris")))
    for container in _listed(predictor.get("containers")):
        if _mapping(container).get("name") == _MAIN:
            uris.extend(
                _mapping(variable).get("value")
                for variable in _listed(_mapping(container).get("env"))
                if _mapping(variable).get("name") == "STORAGE_URI"
            )
    downloaded = [
        uri for uri in uris if isinstance(uri, str) and uri and not uri.startswith("pvc://")
    ]
    if not downloaded:
        return None
    return RuntimeChoice(
        chosen="the storage initializer the pod webhook adds for spec.predictor's model "
        "storage (the inferenceservice-config ConfigMap's storageInitializer image; an oci:// "
        "model as the operator's ociModelMode says)"
    )


def _model(predictor: Mapping[str, object]) -> dict[str, object] | None:
    """The predictor's model as the defaulting webhook leaves it (a framework form as a model
    of its format; ``_framework``: which form it was)."""
    model = predictor.get("model")
    if isinstance(model, Mapping):
        return dict(model)
    for key, format_name in _FRAMEWORKS.items():
        framework = predictor.get(key)
        if isinstance(framework, Mapping):
            return {**framework, "modelFormat": {"name": format_name}, "_framework": key}
    return None


def _format(model: Mapping[str, object]) -> tuple[str, str | None]:
    model_format = _mapping(model.get("modelFormat"))
    name = model_format.get("name")
    version = model_format.get("version")
    return (
        name if isinstance(name, str) else "",
        str(version) if isinstance(version, str | int | float) else None,
    )


def _protocol(model: Mapping[str, object]) -> str:
    given = model.get("protocolVersion")
    if isinstance(given, str) and given:
        return given
    if model.get("_framework") in _V2_FRAMEWORKS or _format(model)[0] in _V2_FORMATS:
        return "v2"
    return "v1"


def _named(name: str, namespace: str, runtimes: Runtimes) -> Mapping[str, object] | None:
    for kind, scope in ((SERVING_RUNTIME, namespace), (CLUSTER_SERVING_RUNTIME, None)):
        for runtime in runtimes(GROUP, kind, scope):
            if _name(runtime) == name:
                return runtime
    return None


def _supporting(
    model: Mapping[str, object], namespace: str, runtimes: Runtimes, multi_node: bool
) -> list[tuple[str, Mapping[str, object]]]:
    """The runtimes the controller may choose first: of the namespace's when any supports the
    model, else of the cluster's; those tied with the first on both orders."""
    for kind, scope in ((SERVING_RUNTIME, namespace), (CLUSTER_SERVING_RUNTIME, None)):
        candidates = [
            runtime
            for runtime in runtimes(GROUP, kind, scope)
            if _supports(model, _mapping(runtime.get("spec")), multi_node)
        ]
        if not candidates:
            continue
        format_name = _format(model)[0]
        ranked = [(_order(runtime, format_name), runtime) for runtime in candidates]
        first = min(rank for rank, _ in ranked)
        return [(_name(runtime), runtime) for rank, runtime in ranked if rank == first]
    return []


def _order(runtime: Mapping[str, object], format_name: str) -> tuple[float, int]:
    """Where the controller's two sorts put a runtime: the stable sort by the format's priority
    comes last, so it decides first (a priority before none, the highest first), then the
    lowest protocol the runtime speaks (sortServingRuntimeList's first key)."""
    runtime_spec = _mapping(runtime.get("spec"))
    priority = _priority(runtime_spec, format_name)
    return (-priority if priority is not None else math.inf, _protocol_rank(runtime_spec))


def _supports(
    model: Mapping[str, object], runtime_spec: Mapping[str, object], multi_node: bool
) -> bool:
    if runtime_spec.get("disabled") is True or runtime_spec.get("multiModel") is True:
        return False
    if (runtime_spec.get("workerSpec") is not None) != multi_node:
        return False
    protocols = runtime_spec.get("protocolVersions")
    if isinstance(protocols, list) and protocols and _protocol(model) not in protocols:
        return False
    name, version = _format(model)
    wanted = f"mt:{name}:{version}" if version is not None else f"mt:{name}"
    labels: set[str] = set()
    for supported in _listed(runtime_spec.get("supportedModelFormats")):
        if not isinstance(supported, Mapping) or supported.get("autoSelect") is not True:
            continue  # only auto-selectable formats when the runtime is not named
        labels.add(f"mt:{supported.get('name')}")
        if isinstance(supported.get("version"), str | int | float):
            labels.add(f"mt:{supported.get('name')}:{supported.get('version')}")
    return wanted in labels


def _priority(runtime_spec: Mapping[str, object], format_name: str) -> int | None:
    for supported in _listed(runtime_spec.get("supportedModelFormats")):
        if isinstance(supported, Mapping) and supported.get("name") == format_name:
            priority = supported.get("priority")
            return (
                priority if isinstance(priority, int) and not isinstance(priority, bool) else None
            )
    return None


def _protocol_rank(runtime_spec: Mapping[str, object]) -> int:
    protocols = _listed(runtime_spec.get("protocolVersions"))
    ranks = [_PROTOCOL_RANK.get(str(p), _UNKNOWN_PROTOCOL) for p in protocols]
    return min(ranks) if ranks else _UNKNOWN_PROTOCOL


def _runtime_images(
    model: Mapping[str, object],
    predictor: Mapping[str, object],
    name: str,
    runtime: Mapping[str, object],
    runtime_spec: Mapping[str, object],
    worker: bool,
) -> list[tuple[str, str]]:
    containers = [c for c in _listed(runtime_spec.get("containers")) if isinstance(c, Mapping)]
    main_name = _WORKER if worker else _MAIN
    own = _mapping(predictor.get("workerSpec")) if worker else predictor
    images: list[tuple[str, str]] = []
    for container in containers:
        container_name = container.get("name")
        image = container.get("image")
        if container_name == main_name:
            if worker:
                own_first = _listed(own.get("containers"))
                own_container = _mapping(own_first[0]) if own_first else {}
                image = own_container.get("image") or image
            else:
                image = model.get("image") or image
                image = (
                    _tagged(image, model, container, name, runtime)
                    if isinstance(image, str)
                    else image
                )
        elif container_name == _TRANSFORMER and not worker and _names_transformer(predictor):
            continue  # the predictor's own transformer container's image wins
        elif worker:
            continue  # a worker runs its worker container alone
        if isinstance(image, str) and image.strip():
            images.append((f"container {container_name}", image))
    return images


def _names_transformer(predictor: Mapping[str, object]) -> bool:
    return any(
        isinstance(c, Mapping) and c.get("name") == _TRANSFORMER and c.get("image")
        for c in _listed(predictor.get("containers"))
    )


def _tagged(
    image: str,
    model: Mapping[str, object],
    container: Mapping[str, object],
    runtime_name: str,
    runtime: Mapping[str, object],
) -> str:
    """UpdateImageTag (pkg/controller/v1beta1/inferenceservice/utils/utils.go)."""
    if "@sha256:" in image:
        return image
    tail = image.rsplit("/", 1)[-1]
    tag = ":" + tail.rsplit(":", 1)[1] if ":" in tail else ""
    version = model.get("runtimeVersion")
    if isinstance(version, str | int | float) and not isinstance(version, bool):
        return (image.removesuffix(tag) if tag else image) + ":" + str(version)
    annotations = _mapping(_mapping(runtime.get("metadata")).get("annotations"))
    server_type = annotations.get(_SERVER_TYPE_ANNOTATION)
    if not isinstance(server_type, str) or not server_type:
        server_type = _SERVER_TYPE_BY_NAME.get(runtime_name, "")
    if not server_type or not tag:
        return image
    without_tag = image.removesuffix(tag)
    if _gpu(model, container):
        if server_type in _GPU_SUFFIXED and not image.endswith("-gpu"):
            return image + "-gpu"
    elif server_type == "vllmserver" and not without_tag.endswith("-cpu"):
        return without_tag + "-cpu" + tag
    return image


def _gpu(model: Mapping[str, object], container: Mapping[str, object]) -> bool:
    """utils.IsGPUEnabled on the merged container: an nvidia.com/gpu or nvidia.com/mig-*
    limit, the model's or the runtime's."""
    limits = {
        **_mapping(_mapping(container.get("resources")).get("limits")),
        **_mapping(_mapping(model.get("resources")).get("limits")),
    }
    return any(
        key == "nvidia.com/gpu" or (isinstance(key, str) and key.startswith("nvidia.com/mig"))
        for key in limits
    )


def _name(resource: Mapping[str, object]) -> str:
    name = _mapping(resource.get("metadata")).get("name")
    return name if isinstance(name, str) else ""


def _mapping(value: object) -> Mapping[str, object]:
    return value if isinstance(value, Mapping) else {}


def _listed(value: object) -> list[object]:
    return list(value) if isinstance(value, list) else []
