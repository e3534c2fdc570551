"""RabbitMQ cluster operator (rabbitmq/cluster-operator)."""

from __future__ import annotations

from kmultiarch.core.catalogue.common import image_at, optional_image
from kmultiarch.core.operators import OperatorKind, Placement, _p

__all__ = ["ENTRIES"]


ENTRIES: tuple[OperatorKind, ...] = (
    # RabbitMQ cluster operator: the StatefulSet's pod takes spec.affinity and tolerations.
    OperatorKind(
        "rabbitmq.com",
        "RabbitmqCluster",
        (
            Placement(
                _p("/spec"),
                (
                    image_at("/spec/image"),
                    optional_image("/spec/secretBackend/vault/defaultUserUpdaterImage"),
                    optional_image(
                        "/spec/override/statefulSet/spec/template/spec/containers/*/image"
                    ),
                    optional_image(
                        "/spec/override/statefulSet/spec/template/spec/initContainers/*/image"
                    ),
                ),
                cites="rabbitmq/cluster-operator internal/resource/statefulset.go (Affinity: "
                "spec.affinity, Tolerations: spec.tolerations, Image: spec.image; the "
                "default-user updater sidecar: secretBackend.vault.defaultUserUpdaterImage); "
                "api/v1beta1/rabbitmqcluster_types.go RabbitmqClusterSpec",
            ),
        ),
        cites="RabbitmqCluster.spec.{affinity,tolerations,image}",
        adds="the operator's default image when spec.image is not set (its defaulting); an "
        "override.statefulSet template's own affinity is patched over spec.affinity",
    ),
)
