"""Dragonfly operator (dragonflydb/dragonfly-operator): a Dragonfly's StatefulSet, placed by
its spec."""

from __future__ import annotations

from kmultiarch.core.operators.catalogue.common import image_at, optional_image
from kmultiarch.core.operators.model import OperatorKind, Placement, _p

__all__ = ["ENTRIES"]


ENTRIES: tuple[OperatorKind, ...] = (
    OperatorKind(
        "dragonflydb.io",
        "Dragonfly",
        (
            Placement(
                _p("/spec"),
                (
                    # spec.image, else the operator's --dragonfly-image, else
                    # docker.dragonflydb.io/dragonflydb/dragonfly:<its Version>: its choice.
                    image_at("/spec/image"),
                    optional_image("/spec/additionalContainers/*/image"),
                    optional_image("/spec/initContainers/*/image"),
                ),
                cites="dragonflydb/dragonfly-operator internal/resources/resources.go "
                "GenerateDragonflyResources (the StatefulSet's pod: Affinity, NodeSelector and "
                "Tolerations from spec when set; the dragonfly container's image spec.image, else "
                "defaultDragonflyImage, else DragonflyImage:Version, const.go, version.go; "
                "InitContainers = spec.initContainers; spec.additionalContainers merged by name "
                "into the containers, mergeNamedSlices)",
            ),
        ),
        cites="Dragonfly.spec.{affinity,tolerations,nodeSelector,image,initContainers,"
        "additionalContainers}",
        adds="the dragonfly image of the operator's flag or version when spec.image is not set",
    ),
)
