"""Flink Kubernetes operator (apache/flink-kubernetes-operator): the common pod template
merged with each role's, lists by position."""

from __future__ import annotations

from kmultiarch.core.operators.catalogue.common import image_at, optional_image
from kmultiarch.core.operators.model import ImageSource, Inheritance, OperatorKind, Placement, _p

__all__ = ["ENTRIES"]


_FLINK_MERGE = (
    "apache/flink-kubernetes-operator flink-kubernetes-operator/src/main/java/org/apache/flink/"
    "kubernetes/operator/config/FlinkConfigBuilder.java (a role's pod is mergePodTemplates("
    "spec.podTemplate, spec.<role>.podTemplate)); utils/FlinkUtils.java mergePodTemplates, "
    "mergeArray (lists merged by position unless kubernetes.operator.pod-template."
    "merge-arrays-by-name): the common template's containers run in every role's pods, and "
    "each role's in the pods the common template places"
)


def _flink_containers(*roles: str) -> tuple[ImageSource, ...]:
    """The containers of the other pod templates merged with this one (``""``: the common)."""
    return tuple(
        optional_image(f"/spec{'/' + role if role else ''}/podTemplate/spec/{group}/*/image")
        for role in roles
        for group in ("containers", "initContainers")
    )


ENTRIES: tuple[OperatorKind, ...] = (
    # Flink Kubernetes operator: pod templates for both roles.
    OperatorKind(
        "flink.apache.org",
        "FlinkDeployment",
        (
            Placement(
                _p("/spec/podTemplate/spec"),
                (image_at("/spec/image"), *_flink_containers("jobManager", "taskManager")),
                creates=2,
                pod_spec=True,
                cites=_FLINK_MERGE,
            ),
            *(
                Placement(
                    _p(f"/spec/{role}/podTemplate/spec"),
                    (image_at("/spec/image"), *_flink_containers("")),
                    creates=2,
                    pod_spec=True,
                    inherits=Inheritance(
                        _p("/spec/podTemplate/spec"),
                        (
                            ("tolerations", "by-position"),
                            ("affinity", "by-position"),
                            ("nodeSelector", "merge-by-key"),
                        ),
                    ),
                    cites=_FLINK_MERGE,
                )
                for role in ("jobManager", "taskManager")
            ),
        ),
        cites="FlinkDeployment.spec.{podTemplate,jobManager.podTemplate,taskManager.podTemplate} "
        "(Pod templates), spec.image",
    ),
)
