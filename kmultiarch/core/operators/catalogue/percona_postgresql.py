"""Percona Operator for PostgreSQL v2 (percona/percona-postgresql-operator)."""

from __future__ import annotations

from kmultiarch.core.operators.catalogue.common import image_at, optional_image
from kmultiarch.core.operators.model import ImageSource, OperatorKind, Placement, _p

__all__ = ["ENTRIES"]


ENTRIES: tuple[OperatorKind, ...] = (
    # Percona Operator for PostgreSQL (v2): each instance set's pods, and PgBouncer's, placed
    # by their own affinity and tolerations (Crunchy's PostgresCluster underneath).
    OperatorKind(
        "pgv2.percona.com",
        "PerconaPGCluster",
        (
            Placement(
                _p("/spec/instances/*"),
                (
                    image_at("/spec/image"),
                    ImageSource(
                        (
                            _p("/spec/instances/*/initContainer/image"),
                            _p("/spec/initContainer/image"),
                        ),
                        operator_only="the init container (the operator's own image)",
                    ),
                    # pgBackRest's sidecar (stricter than needed when backups are disabled)
                    ImageSource(
                        (_p("/spec/backups/pgbackrest/image"),),
                        operator_only="pgBackRest (the operator's RELATED_IMAGE_PGBACKREST)",
                    ),
                    ImageSource(
                        (_p("/spec/pmm/image"),),
                        required=False,
                        when=((_p("/spec/pmm/enabled"), ("true",)),),
                    ),
                    ImageSource(
                        (_p("/spec/logcollector/image"),),
                        required=False,
                        when=((_p("/spec/logcollector/enabled"), ("true",)),),
                    ),
                    optional_image("/spec/instances/*/sidecars/*/image"),
                    optional_image("/spec/instances/*/initContainers/*/image"),
                ),
                cites="percona/percona-postgresql-operator pkg/apis/pgv2.percona.com/v2/"
                "perconapgcluster_types.go PGInstanceSetSpec.ToCrunchy (Affinity, "
                "Tolerations, Containers: sidecars, InitContainers), ToCrunchy (Image: "
                "spec.image; the PMM sidecar when spec.pmm.enabled); percona/k8s/util.go "
                "InitImage (instances[].initContainer.image, else spec.initContainer.image, "
                "else the operator's own image); percona/logcollector/logcollector.go "
                "logContainer (spec.logcollector.image when enabled)",
            ),
            Placement(
                _p("/spec/proxy/pgBouncer"),
                (
                    ImageSource(
                        (_p("/spec/proxy/pgBouncer/image"),),
                        operator_only="PgBouncer (the operator's RELATED_IMAGE_PGBOUNCER)",
                    ),
                    optional_image("/spec/proxy/pgBouncer/sidecars/*/image"),
                ),
                cites="percona/percona-postgresql-operator pkg/apis/pgv2.percona.com/v2/"
                "perconapgcluster_types.go PGBouncerSpec (affinity, tolerations, image, "
                "sidecars) and its ToCrunchy",
            ),
        ),
        cites="PerconaPGCluster.spec.instances[].{affinity,tolerations,sidecars,initContainers,"
        "initContainer.image}, spec.proxy.pgBouncer.{affinity,tolerations,image}, spec.image, "
        "spec.backups.pgbackrest.image, spec.pmm.image",
        adds="the init container (the operator's image) and pgBackRest's sidecar; the "
        "pgBackRest repo host and backup jobs are placed by spec.backups, not written",
    ),
)
