"""KServe (kserve/kserve): an InferenceService's predictor, its workers, transformer and
explainer, each a Deployment (or Knative revision) whose pod spec is the component's own."""

from __future__ import annotations

from kmultiarch.core.operators.model import Condition, ImageSource, OperatorKind, Placement, _p

__all__ = ["ENTRIES"]


_KSERVE = "kserve/kserve "
#: In ModelMesh mode the modelmesh-serving controller runs the model in its own runtime
#: pods: KServe makes no predictor pods (inferenceservice/controller.go Reconcile adds the
#: predictor's reconciler only outside ModelMesh; the transformer's and explainer's always).
_MODELMESH: tuple[Condition, ...] = (
    (_p("/metadata/annotations/serving.kserve.io~1deploymentMode"), ("ModelMesh",)),
)


def _agent(component: str) -> tuple[ImageSource, ...]:
    """The agent sidecar the pod webhook injects into a component with a logger or batcher
    (components/component.go addLoggerAnnotations, addBatcherAnnotations; webhook/admission/
    pod/agent_injector.go InjectAgent: the inferenceservice-config agent image)."""
    return tuple(
        ImageSource(
            (),
            when=((_p(f"/spec/{component}/{field}"), ()),),
            operator_only=f"the agent sidecar of spec.{component}.{field} (the "
            "inferenceservice-config ConfigMap's agent image)",
        )
        for field in ("logger", "batcher")
    )


ENTRIES: tuple[OperatorKind, ...] = (
    OperatorKind(
        "serving.kserve.io",
        "InferenceService",
        (
            Placement(
                _p("/spec/predictor"),
                (
                    ImageSource((), selected_by="kserve-runtime"),
                    # predictor.go buildPredictorResources addStorageInitializerAnnotations,
                    # webhook/admission/pod/storage_initializer_injector.go (not for pvc://)
                    ImageSource((), selected_by="kserve-storage"),
                    *_agent("predictor"),
                ),
                pod_spec=True,
                unless=_MODELMESH,
                cites=_KSERVE + "pkg/apis/serving/v1beta1/predictor.go PredictorSpec (a PodSpec "
                "inline); pkg/controller/v1beta1/inferenceservice/components/predictor.go "
                "buildPredictorResources, reconcileModel (the runtime: model.runtime, else "
                "GetSupportingRuntimes by modelFormat), buildPodSpec (the runtime's containers, "
                "the model's image, UpdateImageTag); inferenceservice/utils/utils.go MergePodSpec "
                "(the runtime's nodeSelector, affinity, tolerations under the predictor's)",
            ),
            Placement(
                _p("/spec/predictor/workerSpec"),
                (ImageSource((), selected_by="kserve-worker"),),
                pod_spec=True,
                unless=_MODELMESH,
                cites=_KSERVE + "pkg/controller/v1beta1/inferenceservice/components/predictor.go "
                "reconcileWorker, multiNodeProcess (the runtime's workerSpec and its "
                "worker-container, merged with spec.predictor.workerSpec by "
                "MergeServingRuntimeAndInferenceServiceSpecs)",
            ),
            Placement(
                _p("/spec/transformer"),
                _agent("transformer"),
                pod_spec=True,
                cites=_KSERVE
                + "pkg/apis/serving/v1beta1/transformer.go TransformerSpec (a PodSpec "
                "inline); components/transformer.go Reconcile (podSpec := the transformer's "
                "PodSpec, its first container the custom transformer's)",
            ),
            Placement(
                _p("/spec/explainer"),
                (
                    ImageSource(
                        (_p("/spec/explainer/art/image"),),
                        when=((_p("/spec/explainer/art"), ()),),
                    ),
                    *_agent("explainer"),
                ),
                pod_spec=True,
                cites=_KSERVE + "pkg/apis/serving/v1beta1/explainer.go ExplainerSpec (a PodSpec "
                "inline); explainer_art.go ARTExplainerSpec.GetContainer (art.image, else the "
                "inferenceservice-config ART image with its runtimeVersion); "
                "components/explainer.go Reconcile",
            ),
        ),
        cites="InferenceService.spec.predictor (its model's runtime, by name or modelFormat, "
        "from the ServingRuntimes and ClusterServingRuntimes of the stream), "
        "spec.predictor.workerSpec, spec.transformer, spec.explainer (PodSpecs inline)",
        adds="the storage initializer and the agent sidecar (the operator's images: declare "
        "them as defaultImages); in Knative mode, Knative's queue-proxy",
    ),
)
