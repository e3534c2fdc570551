"""Spark operator (kubeflow/spark-operator): driver and executor, each with its image or the
application's, and the application's nodeSelector under their own."""

from __future__ import annotations

from kmultiarch.core.catalogue.common import image_at, optional_image
from kmultiarch.core.operators import Inheritance, OperatorKind, Placement, _p

__all__ = ["ENTRIES"]


ENTRIES: tuple[OperatorKind, ...] = (
    # Spark operator: driver and executor, each with its image or the application's, and the
    # application's nodeSelector under their own.
    OperatorKind(
        "sparkoperator.k8s.io",
        "SparkApplication",
        tuple(
            Placement(
                _p(f"/spec/{role}"),
                (
                    image_at(f"/spec/{role}/image", "/spec/image"),
                    optional_image(f"/spec/{role}/sidecars/*/image"),
                    optional_image(f"/spec/{role}/initContainers/*/image"),
                ),
                inherits=Inheritance(_p("/spec"), (("nodeSelector", "merge-by-key"),)),
                cites="kubeflow/spark-operator internal/controller/sparkapplication/"
                "submission.go nodeSelectorOption (spec.nodeSelector as "
                "spark.kubernetes.node.selector.*: driver and executor pods), "
                "internal/webhook/sparkpod_defaulter.go addNodeSelectors (the role's "
                "nodeSelector copied over it key by key), addAffinity (the role's affinity), "
                "addTolerations (the role's tolerations)",
            )
            for role in ("driver", "executor")
        ),
        cites="SparkApplication.spec.{driver,executor}.{affinity,tolerations,nodeSelector,"
        "image,sidecars,initContainers}, spec.nodeSelector, spec.image",
    ),
)
