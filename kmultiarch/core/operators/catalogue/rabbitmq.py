"""RabbitMQ cluster operator (rabbitmq/cluster-operator)."""

from __future__ import annotations

from kmultiarch.core.operators.catalogue.common import image_at, optional_image
from kmultiarch.core.operators.model import Inheritance, OperatorKind, Placement, _p

__all__ = ["ENTRIES"]

_OVERRIDE = "/spec/override/statefulSet/spec/template/spec"
#: Every pod of the cluster runs these: the main image, the default-user updater, and the
#: containers an override adds (merged by name with the operator's).
_IMAGES = (
    image_at("/spec/image"),
    optional_image("/spec/secretBackend/vault/defaultUserUpdaterImage"),
    optional_image(f"{_OVERRIDE}/containers/*/image"),
    optional_image(f"{_OVERRIDE}/initContainers/*/image"),
)

ENTRIES: tuple[OperatorKind, ...] = (
    # RabbitMQ cluster operator: the StatefulSet's pod takes spec.affinity and tolerations;
    # an override's pod spec is patched over it.
    OperatorKind(
        "rabbitmq.com",
        "RabbitmqCluster",
        (
            Placement(
                _p("/spec"),
                _IMAGES,
                cites="rabbitmq/cluster-operator internal/resource/statefulset.go (Affinity: "
                "spec.affinity, Tolerations: spec.tolerations, Image: spec.image; the "
                "default-user updater sidecar: secretBackend.vault.defaultUserUpdaterImage); "
                "api/v1beta1/rabbitmqcluster_types.go RabbitmqClusterSpec",
            ),
            # A strategic merge patch replaces lists without a merge key (tolerations, an
            # affinity's nodeSelectorTerms): an override that sets them is what the pods get.
            Placement(
                _p(_OVERRIDE),
                _IMAGES,
                inherits=Inheritance(
                    _p("/spec"), (("affinity", "replace"), ("tolerations", "replace"))
                ),
                cites="rabbitmq/cluster-operator internal/resource/statefulset.go Update -> "
                "applyStsOverride -> patchPodSpec (strategicpatch.StrategicMergePatch of "
                "spec.override.statefulSet.spec.template.spec over the pod spec built from "
                "spec.affinity and spec.tolerations: core/v1 PodSpec.tolerations and "
                "NodeSelector.nodeSelectorTerms carry no patch strategy, so the override's "
                "replace them)",
            ),
        ),
        cites="RabbitmqCluster.spec.{affinity,tolerations,image}, spec.override.statefulSet."
        "spec.template.spec",
        adds="the operator's default image when spec.image is not set (its defaulting)",
    ),
)
