"""Zalando postgres-operator (zalando/postgres-operator)."""

from __future__ import annotations

from kmultiarch.core.operators.catalogue.common import optional_image
from kmultiarch.core.operators.model import ImageSource, OperatorKind, Placement, _p

__all__ = ["ENTRIES"]


ENTRIES: tuple[OperatorKind, ...] = (
    # Zalando postgres-operator: spec.nodeAffinity (bare) and spec.tolerations place the
    # Postgres pods, the connection poolers' and (tolerations only) the logical backup's.
    OperatorKind(
        "acid.zalan.do",
        "postgresql",
        (
            Placement(
                _p("/spec"),
                (
                    ImageSource(
                        (_p("/spec/dockerImage"),),
                        operator_only="spilo (the operator's docker_image)",
                    ),
                    optional_image("/spec/sidecars/*/image"),
                    optional_image("/spec/initContainers/*/image"),
                    *(
                        ImageSource(
                            (_p("/spec/connectionPooler/dockerImage"),),
                            when=((_p(f"/spec/{flag}"), ("true",)),),
                            operator_only="the connection pooler's (the operator's "
                            "connection_pooler_image)",
                        )
                        for flag in ("enableConnectionPooler", "enableReplicaConnectionPooler")
                    ),
                    ImageSource(
                        (),
                        when=((_p("/spec/enableLogicalBackup"), ("true",)),),
                        operator_only="the logical backup's (the operator's "
                        "logical_backup_docker_image), whose pods take spec.tolerations",
                    ),
                ),
                shape="node-affinity",
                cites="zalando/postgres-operator pkg/cluster/k8sres.go generateStatefulSet "
                "(Image: util.Coalesce(spec.dockerImage, the operator's docker_image); "
                "tolerations(spec.tolerations, the operator's pod_toleration): the manifest's "
                "replace the operator's when set; nodeAffinity(the operator's "
                "node_readiness_label, spec.nodeAffinity); spec.sidecars, spec.initContainers), "
                "generateLogicalBackupJob (spec.tolerations, not spec.nodeAffinity); "
                "pkg/cluster/connection_pooler.go (spec.tolerations, spec.nodeAffinity; "
                "Image: spec.connectionPooler.dockerImage, else the operator's); "
                "pkg/apis/acid.zalan.do/v1/postgresql_type.go PostgresSpec",
            ),
        ),
        cites="postgresql.spec.{nodeAffinity,tolerations,dockerImage,sidecars,initContainers,"
        "connectionPooler.dockerImage}",
        adds="spilo (the operator's docker_image) when spec.dockerImage is not set; its global "
        "sidecars; spec.tolerations, once set, replace the operator's pod_toleration",
    ),
)
