"""CloudNativePG (cloudnative-pg/cloudnative-pg): Cluster and Pooler."""

from __future__ import annotations

from kmultiarch.core.catalogue.common import image_at
from kmultiarch.core.operators import OperatorKind, Placement, _p

__all__ = ["ENTRIES"]


ENTRIES: tuple[OperatorKind, ...] = (
    # CloudNativePG: the instances are placed by spec.affinity (its own shape: nodeSelector,
    # tolerations and a bare nodeAffinity); the poolers by a pod template.
    OperatorKind(
        "postgresql.cnpg.io",
        "Cluster",
        (
            Placement(
                _p("/spec/affinity"),
                (image_at("/spec/imageName"),),
                creates=1,
                shape="node-affinity",
                cites="cloudnative-pg/cloudnative-pg pkg/specs/pods.go createPodSpec "
                "(Tolerations: spec.affinity.tolerations, NodeSelector: spec.affinity."
                "nodeSelector), CreateAffinitySection (NodeAffinity: spec.affinity."
                "nodeAffinity); api/v1/cluster_types.go AffinityConfiguration, imageName",
            ),
        ),
        cites="Cluster.spec.affinity.{nodeSelector,tolerations,nodeAffinity}, spec.imageName",
        adds="the bootstrap init container (the operator's image); the PostgreSQL image of "
        "spec.imageCatalogRef or the operator's default when spec.imageName is not set",
    ),
    OperatorKind(
        "postgresql.cnpg.io",
        "Pooler",
        (
            Placement(
                _p("/spec/template/spec"),
                (image_at("/spec/template/spec/containers/*/image"),),
                creates=2,
                pod_spec=True,
                cites="cloudnative-pg/cloudnative-pg pkg/specs/pgbouncer/deployments.go Deployment "
                "(podspec.NewFrom(spec.template), the pgbouncer container's image kept when set, "
                "else the operator's)",
            ),
        ),
        cites="Pooler.spec.template (a PodTemplateSpec)",
        adds="the bootstrap init container (the operator's image); pgbouncer's image when the "
        "template names none",
    ),
)
