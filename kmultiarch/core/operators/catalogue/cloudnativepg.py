"""CloudNativePG (cloudnative-pg/cloudnative-pg): Cluster and Pooler; their images named, or
picked from an ImageCatalog or ClusterImageCatalog of the stream."""

from __future__ import annotations

from kmultiarch.core.operators.imagecatalogs import CatalogImage
from kmultiarch.core.operators.model import ImageSource, OperatorKind, Placement, _p

__all__ = ["ENTRIES"]

_CNPG = "cloudnative-pg/cloudnative-pg "
_GROUP = "postgresql.cnpg.io"
#: The catalogs a reference may name: an ImageCatalog in the resource's namespace, a
#: ClusterImageCatalog cluster-wide (pkg/utils/imagecatalog/catalog.go Get; pooler_image.go
#: resolveImageFromCatalog).
_CATALOGS = (("ImageCatalog", False), ("ClusterImageCatalog", True))

#: The PostgreSQL image: spec.imageName, else the catalog's image for spec.imageCatalogRef.major
#: (the two are exclusive; cluster_image.go getRequestedImageInfo, imagecatalog_funcs.go
#: FindImageForMajor), else the operator's default.
_POSTGRES_IMAGE = ImageSource(
    (_p("/spec/imageName"),),
    catalog=CatalogImage(
        _GROUP, _CATALOGS, ("spec", "imageCatalogRef"), "major", ("spec", "images"), "major"
    ),
)
#: pgbouncer's image, unless the pod template's pgbouncer container names one (kept by the
#: builder: pgbouncer/deployments.go WithContainerImage(..., false), and then judged with the
#: template's containers): spec.pgbouncer.image, else the catalog's component image for
#: spec.pgbouncer.imageCatalogRef.key, else the operator's default (pooler_image.go
#: resolvePoolerImage, podTemplatePgbouncerImage).
_PGBOUNCER_IMAGE = ImageSource(
    (_p("/spec/pgbouncer/image"),),
    catalog=CatalogImage(
        _GROUP,
        _CATALOGS,
        ("spec", "pgbouncer", "imageCatalogRef"),
        "key",
        ("spec", "componentImages"),
        "key",
    ),
    unless=((_p("/spec/template/spec/containers/*[name=pgbouncer]/image"), ()),),
)


ENTRIES: tuple[OperatorKind, ...] = (
    # CloudNativePG: the instances are placed by spec.affinity (its own shape: nodeSelector,
    # tolerations and a bare nodeAffinity); the poolers by a pod template.
    OperatorKind(
        _GROUP,
        "Cluster",
        (
            Placement(
                _p("/spec/affinity"),
                (_POSTGRES_IMAGE,),
                creates=1,
                shape="node-affinity",
                cites=_CNPG + "pkg/specs/pods.go createPodSpec "
                "(Tolerations: spec.affinity.tolerations, NodeSelector: spec.affinity."
                "nodeSelector), CreateAffinitySection (NodeAffinity: spec.affinity."
                "nodeAffinity); api/v1/cluster_types.go AffinityConfiguration, imageName; "
                "internal/controller/cluster_image.go getRequestedImageInfo (imageCatalogRef: "
                "the catalog's image for major)",
            ),
        ),
        cites="Cluster.spec.affinity.{nodeSelector,tolerations,nodeAffinity}, spec.imageName, "
        "spec.imageCatalogRef",
        adds="the bootstrap init container (the operator's image); the PostgreSQL image of the "
        "operator's default when spec.imageName is not set and no catalog is named",
    ),
    OperatorKind(
        _GROUP,
        "Pooler",
        (
            Placement(
                _p("/spec/template/spec"),
                (_PGBOUNCER_IMAGE,),
                creates=2,
                pod_spec=True,
                cites=_CNPG + "pkg/specs/pgbouncer/deployments.go Deployment "
                "(podspec.NewFrom(spec.template), the pgbouncer container's image kept when set, "
                "else status.image); internal/controller/pooler_image.go resolvePoolerImage "
                "(the template's, else spec.pgbouncer.image, else the catalog's for "
                "spec.pgbouncer.imageCatalogRef.key, else the operator's)",
            ),
        ),
        cites="Pooler.spec.template (a PodTemplateSpec), spec.pgbouncer.image, "
        "spec.pgbouncer.imageCatalogRef",
        adds="the bootstrap init container (the operator's image); pgbouncer's default image "
        "when neither the template, spec.pgbouncer nor a catalog names one",
    ),
)
