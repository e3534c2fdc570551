"""Spark operator (kubeflow/spark-operator): driver and executor, each with its image or the
application's, and the application's nodeSelector under their own; a ScheduledSparkApplication
makes the same from its template."""

from __future__ import annotations

from kmultiarch.core.catalogue.common import image_at, optional_image
from kmultiarch.core.operators import Inheritance, OperatorKind, Placement, _p

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


ENTRIES: tuple[OperatorKind, ...] = (
    _spark("SparkApplication", "/spec", _ROLE_CITE),
    _spark(
        "ScheduledSparkApplication",
        "/spec/template",
        _ROLE_CITE + "; internal/controller/scheduledsparkapplication/controller.go "
        "createSparkApplication (a SparkApplication whose spec is spec.template)",
    ),
)
