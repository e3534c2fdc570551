"""MinIO operator (minio/operator): one placement per pool, the tenant's image."""

from __future__ import annotations

from kmultiarch.core.operators.catalogue.common import image_at, optional_image
from kmultiarch.core.operators.model import OperatorKind, Placement, _p

__all__ = ["ENTRIES"]


ENTRIES: tuple[OperatorKind, ...] = (
    # MinIO operator: one placement per pool, the tenant's image.
    OperatorKind(
        "minio.min.io",
        "Tenant",
        (
            Placement(
                _p("/spec/pools/*"),
                (
                    image_at("/spec/image"),
                    optional_image("/spec/sideCars/containers/*/image"),
                    optional_image("/spec/initContainers/*/image"),
                ),
                cites="minio/operator pkg/resources/statefulsets/minio-statefulset.go "
                "NewPool (Affinity, NodeSelector, Tolerations of the pool; spec.initContainers "
                "appended to every pool's pod); pkg/apis/minio.min.io/v2/types.go "
                "TenantSpec.initContainers",
            ),
        ),
        cites="Tenant.spec.pools[].{affinity,tolerations,nodeSelector}, spec.image",
        adds="its sidecar (the operator's) and an init container",
    ),
)
