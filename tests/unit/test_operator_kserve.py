"""KServe's InferenceService (issue 39, item 2), from KServe's own sample and runtime
(tests/fixtures/operators/kserve-*.yaml: kserve/kserve at commit
aaac4e294dae2c7b1aa1886447793f3aa1c30912, docs/samples/v1beta1/sklearn/v1/sklearn.yaml and
config/runtimes/kserve-sklearnserver.yaml). The kind was unknown: an unknown-pod-kind warning
and nothing written."""

from __future__ import annotations

import yaml
from support.declared import declared_defaults, sample
from support.operators import ARCH_IN_AMD64, ARM64_TOLERATION, resolve

from kmultiarch.api import mutate_text
from kmultiarch.core.findings import IMAGE_CHOSEN_BY_OPERATOR, UNWRITABLE_CONSTRAINT
from kmultiarch.engine import EngineResult

ISVC = sample("kserve-sklearn-iris.yaml")
#: The runtime as KServe installs it, its image named as the install's kustomization would.
RUNTIME = sample("kserve-sklearnserver-runtime.yaml").replace(
    "kserve-sklearnserver:replace", "registry.test/sklearnserver-amd64:v0.15.0"
)
STORAGE_INITIALIZER = "registry.test/storage-initializer:v0.15.0"
#: The storage initializer's image, as an air-gapped user declares it.
DECLARED = declared_defaults("serving.kserve.io/v1beta1", "InferenceService", STORAGE_INITIALIZER)


def _run(text: str, declared: bool = True) -> tuple[list[dict[str, object]], EngineResult]:
    result = mutate_text(text, DECLARED if declared else None, resolve=resolve)
    return [d for d in yaml.safe_load_all(result.stream()) if d], result


def _predictor(documents: list[dict[str, object]]) -> dict[str, object]:
    isvc = next(d for d in documents if d["kind"] == "InferenceService")
    return isvc["spec"]["predictor"]  # type: ignore[index,no-any-return]


def _findings(result: EngineResult) -> list[str]:
    """The findings' rules (the runtimes themselves make no pods: no warning of their own)."""
    return [f.rule for f in result.findings]


def _judged(result: EngineResult) -> set[str]:
    return {str(reference) for reference in result.resolutions}


def test_an_inference_service_runs_the_runtime_its_model_format_selects() -> None:
    """predictor.go reconcileModel: a sklearn predictor (a model of format sklearn) runs the
    auto-selectable runtime supporting it; its kserve-container image is amd64-only, so the
    predictor gets the arch affinity (spec.predictor is the pod spec: PodSpec inline)."""
    documents, result = _run(ISVC + "---\n" + RUNTIME)
    predictor = _predictor(documents)
    assert predictor["affinity"] == ARCH_IN_AMD64
    assert "tolerations" not in predictor
    assert _judged(result) == {"registry.test/sklearnserver-amd64:v0.15.0", STORAGE_INITIALIZER}
    runtime = next(d for d in documents if d["kind"] == "ClusterServingRuntime")
    assert runtime == yaml.safe_load(RUNTIME)  # the runtime itself is not a pod


def test_the_storage_initializer_is_the_operators_choice_until_declared() -> None:
    """storage_initializer_injector.go: a storageUri gets the webhook's storage initializer,
    whose image is the operator's configuration: said, and the pods are kept to what the known
    runtime image runs on (partial knowledge narrows; no toleration is written)."""
    documents, result = _run(ISVC + "---\n" + RUNTIME, declared=False)
    assert _predictor(documents)["affinity"] == ARCH_IN_AMD64
    documents, _ = _run(
        ISVC + "---\n" + RUNTIME.replace("sklearnserver-amd64", "sklearnserver"), declared=False
    )
    assert "tolerations" not in _predictor(documents)
    assert _findings(result) == [IMAGE_CHOSEN_BY_OPERATOR]
    assert any("storage initializer" in f.message for f in result.findings)


def test_no_runtime_in_the_stream_leaves_the_runtime_to_the_operator() -> None:
    """Declaring the kind's default images (the storage initializer) does not stand for the
    runtime the stream lacks."""
    documents, result = _run(ISVC)
    assert documents == [yaml.safe_load(ISVC)]
    (finding,) = result.findings
    assert finding.rule == IMAGE_CHOSEN_BY_OPERATOR
    assert "model format sklearn" in finding.message


def test_a_namespaced_runtime_is_chosen_before_the_clusters() -> None:
    """GetSupportingRuntimes: the namespace's ServingRuntimes first, then the cluster's."""
    namespaced = (
        RUNTIME.replace("kind: ClusterServingRuntime", "kind: ServingRuntime")
        .replace("name: kserve-sklearnserver", "name: own-sklearn")
        .replace("registry.test/sklearnserver-amd64:v0.15.0", "registry.test/own-sklearn:1")
    )
    cluster_arm64 = RUNTIME
    documents, result = _run(ISVC + "---\n" + namespaced + "---\n" + cluster_arm64)
    assert "registry.test/sklearnserver-amd64:v0.15.0" not in _judged(result)
    assert "registry.test/own-sklearn:1" in _judged(result)
    assert _predictor(documents)["tolerations"] == [ARM64_TOLERATION]


def test_a_named_runtime_wins_and_runtime_version_sets_the_tag() -> None:
    """reconcileModel: model.runtime names the runtime (even one not auto-selectable);
    UpdateImageTag: model.runtimeVersion replaces the image's tag."""
    isvc = ISVC.replace(
        "    sklearn:\n",
        "    model:\n      modelFormat: {name: sklearn}\n      runtime: kserve-sklearnserver\n"
        "      runtimeVersion: v0.16.0\n",
    )
    runtime = RUNTIME.replace("autoSelect: true", "autoSelect: false")
    documents, result = _run(isvc + "---\n" + runtime)
    assert "registry.test/sklearnserver-amd64:v0.16.0" in _judged(result)
    assert _predictor(documents)["affinity"] == ARCH_IN_AMD64


def test_a_runtime_not_auto_selectable_is_not_chosen_by_format() -> None:
    """getServingRuntimeSupportedModelFormatLabelSet: without model.runtime, only formats
    with autoSelect count."""
    _, result = _run(ISVC + "---\n" + RUNTIME.replace("autoSelect: true", "autoSelect: false"))
    assert "registry.test/sklearnserver-amd64:v0.15.0" not in _judged(result)
    assert any(f.rule == IMAGE_CHOSEN_BY_OPERATOR for f in result.findings)


def test_runtimes_tied_in_the_controllers_order_are_all_judged() -> None:
    """sortServingRuntimeList orders equal runtimes by creation time, which a manifest does
    not carry: the predictor is judged on the images of each it could run."""
    other = RUNTIME.replace("name: kserve-sklearnserver", "name: other-sklearn").replace(
        "registry.test/sklearnserver-amd64:v0.15.0", "registry.test/other-sklearn:1"
    )
    documents, result = _run(ISVC + "---\n" + RUNTIME + "---\n" + other)
    assert {"registry.test/sklearnserver-amd64:v0.15.0", "registry.test/other-sklearn:1"} <= (
        _judged(result)
    )
    assert _predictor(documents)["affinity"] == ARCH_IN_AMD64


def test_the_runtimes_tolerations_are_kept_and_its_node_affinity_is_said() -> None:
    """utils.go MergePodSpec: the runtime's tolerations and node affinity hold unless the
    predictor sets its own, which would replace them: neither is written into the predictor,
    and an arch constraint that cannot be written is said (unwritable-constraint)."""
    runtime = RUNTIME.replace(
        "  containers:\n",
        "  tolerations: [{key: gpu, operator: Exists}]\n"
        "  affinity:\n    nodeAffinity:\n      requiredDuringSchedulingIgnoredDuringExecution:\n"
        "        nodeSelectorTerms:\n        - matchExpressions:\n"
        "          - {key: pool, operator: In, values: [inference]}\n"
        "  containers:\n",
        1,
    )
    documents, result = _run(ISVC + "---\n" + runtime)
    predictor = _predictor(documents)
    assert "tolerations" not in predictor and "affinity" not in predictor
    assert _findings(result) == [UNWRITABLE_CONSTRAINT]


def test_a_modelmesh_inference_service_makes_no_predictor_pod_of_its_own() -> None:
    """inferenceservice/controller.go Reconcile: in ModelMesh mode the predictor's pods are
    modelmesh-serving's runtime pods; a transformer is still KServe's, placed by its spec."""
    isvc = ISVC.replace(
        'name: "sklearn-iris"\n',
        'name: "sklearn-iris"\n  annotations: {serving.kserve.io/deploymentMode: ModelMesh}\n',
    )
    documents, result = _run(isvc + "---\n" + RUNTIME)
    assert "affinity" not in _predictor(documents)
    assert _findings(result) == []
    transformer = "  transformer:\n    containers: [{name: t, image: registry.test/t-amd64:1}]\n"
    documents, _ = _run(isvc.replace("spec:\n", "spec:\n" + transformer, 1) + "---\n" + RUNTIME)
    (isvc_out,) = [d for d in documents if d["kind"] == "InferenceService"]
    assert isvc_out["spec"]["transformer"]["affinity"] == ARCH_IN_AMD64  # type: ignore[index]
    assert "affinity" not in _predictor(documents)


def test_a_custom_transformer_is_placed_by_its_own_pod_spec() -> None:
    """components/transformer.go: spec.transformer is the transformer pods' spec; the
    predictor's pods are the runtime's (kserve/kserve docs/samples/v1beta1/transformer/
    torchserve_image_transformer/transformer.yaml, its transformer image amd64-only here)."""
    text = (
        "apiVersion: serving.kserve.io/v1beta1\nkind: InferenceService\n"
        "metadata: {name: torch-transformer}\nspec:\n  transformer:\n    containers:\n"
        "    - image: registry.test/image-transformer-amd64:latest\n      name: kserve-container\n"
        "  predictor:\n    containers:\n    - {name: kserve-container, "
        "image: 'pytorch/torchserve:0.9.0-cpu'}\n"
    )
    documents, result = _run(text)
    (isvc,) = documents
    assert isvc["spec"]["transformer"]["affinity"] == ARCH_IN_AMD64  # type: ignore[index]
    assert isvc["spec"]["predictor"]["tolerations"] == [ARM64_TOLERATION]  # type: ignore[index]
    assert result.findings == []


#: After kserve/kserve config/runtimes/kserve-huggingfaceserver-multinode.yaml (commit
#: aaac4e29): a multi-node runtime (its workerSpec) beside the single-node one, trimmed to
#: what the choice reads.
MULTI_NODE = """\
apiVersion: serving.kserve.io/v1alpha1
kind: ClusterServingRuntime
metadata: {name: kserve-huggingfaceserver-multinode}
spec:
  supportedModelFormats: [{name: huggingface, version: "1", autoSelect: true, priority: 2}]
  protocolVersions: [v2, v1]
  containers: [{name: kserve-container, image: registry.test/hf-head:v0.15}]
  workerSpec:
    containers: [{name: worker-container, image: registry.test/hf-worker-amd64:v0.15}]
---
apiVersion: serving.kserve.io/v1alpha1
kind: ClusterServingRuntime
metadata: {name: kserve-huggingfaceserver}
spec:
  supportedModelFormats: [{name: huggingface, version: "1", autoSelect: true, priority: 1}]
  protocolVersions: [v2, v1]
  containers: [{name: kserve-container, image: registry.test/hf-single-amd64:v0.15}]
"""


def test_a_multi_node_predictors_workers_run_the_runtimes_worker_container() -> None:
    """GetSupportingRuntimes: a predictor with a workerSpec runs a multi-node runtime only;
    multiNodeProcess: its workers' pods are spec.predictor.workerSpec merged with the runtime's
    workerSpec, running its worker-container."""
    isvc = (
        "apiVersion: serving.kserve.io/v1beta1\nkind: InferenceService\nmetadata: {name: hf}\n"
        "spec:\n  predictor:\n    model: {modelFormat: {name: huggingface}}\n"
        "    workerSpec: {tensorParallelSize: 1}\n"
    )
    documents, result = _run(isvc + "---\n" + MULTI_NODE, declared=False)
    predictor = _predictor(documents)
    assert predictor["tolerations"] == [ARM64_TOLERATION]
    assert predictor["workerSpec"]["affinity"] == ARCH_IN_AMD64  # type: ignore[index]
    assert "registry.test/hf-single-amd64:v0.15" not in _judged(result)
    assert _findings(result) == []


def test_the_formats_priority_decides_before_the_protocol() -> None:
    """sortSupportedRuntimeByPriority is a stable sort run after sortServingRuntimeList: a
    runtime with a higher priority for the format wins over one speaking a lower protocol."""
    preferred = (
        RUNTIME.replace("name: kserve-sklearnserver", "name: preferred")
        .replace("priority: 1", "priority: 5")
        .replace("    - v1\n    - v2\n", "    - v2\n")
        .replace("registry.test/sklearnserver-amd64:v0.15.0", "registry.test/preferred:1")
    )
    isvc = ISVC.replace("    sklearn:\n", "    sklearn:\n      protocolVersion: v2\n")
    documents, result = _run(isvc + "---\n" + RUNTIME + "---\n" + preferred)
    assert "registry.test/preferred:1" in _judged(result)
    assert "registry.test/sklearnserver-amd64:v0.15.0" not in _judged(result)
    assert _predictor(documents)["tolerations"] == [ARM64_TOLERATION]


def test_a_pvc_model_is_mounted_and_needs_no_storage_initializer() -> None:
    """storage_initializer_injector.go CommonStorageInitialization: pvc:// URIs are mounted as
    volumes, nothing downloads them: no image of the operator's to name."""
    isvc = ISVC.replace(
        'storageUri: "gs://kfserving-examples/models/sklearn/1.0/model"',
        'storageUri: "pvc://models/sklearn"',
    )
    documents, result = _run(isvc + "---\n" + RUNTIME, declared=False)
    assert _predictor(documents)["affinity"] == ARCH_IN_AMD64
    assert _findings(result) == []
