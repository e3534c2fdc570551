"""Spark operator (kubeflow/spark-operator): driver and executor, each with its image or the
application's, and the application's nodeSelector under their own; a ScheduledSparkApplication
makes the same from its template; a SparkConnect's server and executors, from their pod
templates."""

from __future__ import annotations

from kmultiarch.core.operators.catalogue.common import image_at, optional_image
from kmultiarch.core.operators.model import Inheritance, OperatorKind, Placement, _p

__all__ = ["ENTRIES"]

_SPARK = "kubeflow/spark-operator "
_ROLE_CITE = (
    _SPARK + "internal/controller/sparkapplication/submission.go nodeSelectorOption "
    "(spec.nodeSelector as spark.kubernetes.node.selector.*: driver and executor pods), "
    "internal/webhook/sparkpod_defaulter.go addNodeSelectors (the role's nodeSelector copied "
    "over it key by key), addAffinity (the role's affinity), addTolerations (the role's "
    "tolerations); v1beta1 (pkg/apis/sparkoperator.k8s.io/v1beta1/types.go) has the same "
    "fields but no initContainers, and spec.initContainerImage (the init container's, over "
    "spec.image)"
)


def _spark(kind: str, spec: str, cites: str) -> OperatorKind:
    """A SparkApplicationSpec at ``spec``: its driver's and executor's pods."""
    return OperatorKind(
        "sparkoperator.k8s.io",
        kind,
        tuple(
            Placement(
                _p(f"{spec}/{role}"),
                (
                    image_at(f"{spec}/{role}/image", f"{spec}/image"),
                    optional_image(f"{spec}/{role}/sidecars/*/image"),
                    optional_image(f"{spec}/{role}/initContainers/*/image"),
                    optional_image(f"{spec}/initContainerImage"),
                ),
                inherits=Inheritance(_p(spec), (("nodeSelector", "merge-by-key"),)),
                cites=cites,
            )
            for role in ("driver", "executor")
        ),
        cites=f"{kind}.{spec[1:].replace('/', '.')}.{{driver,executor}}.{{affinity,tolerations,"
        f"nodeSelector,image,sidecars,initContainers}}, {spec[1:].replace('/', '.')}."
        "{nodeSelector,image}",
    )


_CONNECT = (
    _SPARK + "api/v1alpha1/sparkconnect_types.go SparkConnectSpec (image; server, executor: "
    "SparkPodSpec.Template, a PodTemplateSpec); internal/controller/sparkconnect/"
)


ENTRIES: tuple[OperatorKind, ...] = (
    _spark("SparkApplication", "/spec", _ROLE_CITE),
    _spark(
        "ScheduledSparkApplication",
        "/spec/template",
        _ROLE_CITE + "; internal/controller/scheduledsparkapplication/controller.go "
        "createSparkApplication (a SparkApplication whose spec is spec.template)",
    ),
    # A SparkConnect: the server pod the operator creates from spec.server.template, and the
    # executors Spark (the server, in client mode) creates from spec.executor.template. The main
    # container of each runs its own image, else spec.image: spec.image is judged whenever set
    # (a pointer cannot tell whether the main container names an image).
    OperatorKind(
        "sparkoperator.k8s.io",
        "SparkConnect",
        (
            Placement(
                _p("/spec/server/template/spec"),
                (optional_image("/spec/image"),),
                creates=2,
                pod_spec=True,
                cites=_CONNECT + "reconciler.go mutateServerPod (the pod's spec is "
                "server.template.spec; its spark-kubernetes-driver container, else the first, "
                "added when there is none, runs its image, else spec.image)",
            ),
            Placement(
                _p("/spec/executor/template/spec"),
                (optional_image("/spec/image"),),
                creates=2,
                pod_spec=True,
                cites=_CONNECT + "options.go executorPodTemplateOption (spark.kubernetes."
                "executor.podTemplateFile: executor.template), imageOption (the executor image: "
                "the template's spark-kubernetes-executor container's, else the first's, else "
                "spec.image); apache/spark resource-managers/kubernetes/core/src/main/scala/org/"
                "apache/spark/deploy/k8s/KubernetesUtils.scala loadPodFromTemplate, "
                "selectSparkContainer (the executor pods are built on the template's pod)",
            ),
        ),
        cites="SparkConnect.spec.{server,executor}.template (PodTemplateSpecs), spec.image",
    ),
)
