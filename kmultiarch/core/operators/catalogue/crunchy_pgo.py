"""Crunchy Postgres for Kubernetes, PGO (CrunchyData/postgres-operator): a PostgresCluster's
instance sets, PgBouncer, the pgBackRest repo host, its backup and restore Jobs."""

from __future__ import annotations

from kmultiarch.core.operators.catalogue.common import optional_image
from kmultiarch.core.operators.model import Condition, ImageSource, OperatorKind, Placement, _p

__all__ = ["ENTRIES"]


_PGO = "CrunchyData/postgres-operator "
#: internal/config/config.go: each image is the resource's field, else the operator's
#: RELATED_IMAGE_* environment (PostgresContainerImage by spec.postgresVersion and
#: postGISVersion, PGBackRestContainerImage, PGBouncerContainerImage, PGExporterContainerImage,
#: CollectorContainerImage).
_IMAGES = (
    "internal/config/config.go PostgresContainerImage (spec.image, else RELATED_IMAGE_POSTGRES_"
    "<postgresVersion>[_GIS_<postGISVersion>]), PGBackRestContainerImage, "
    "PGBouncerContainerImage, PGExporterContainerImage, CollectorContainerImage"
)
_BACKUPS: Condition = (_p("/spec/backups/pgbackrest"), ())
_POSTGRES = ImageSource((_p("/spec/image"),))
_PGBACKREST = ImageSource((_p("/spec/backups/pgbackrest/image"),))
#: The OpenTelemetry collector the operator adds for spec.instrumentation (internal/collector
#: instance.go AddToPod), when its OpenTelemetryLogs or OpenTelemetryMetrics gate is on (an
#: operator setting): judged whenever instrumentation is set.
_COLLECTOR = ImageSource(
    (_p("/spec/instrumentation/image"),), when=((_p("/spec/instrumentation"), ()),)
)


def _restore_job(path: str, source: str) -> Placement:
    """A restore Job's pod, run with the cluster's Postgres image and placed by the data
    source's affinity and tolerations (pgbackrest.go generateRestoreJobIntent)."""
    return Placement(
        _p(path),
        (_POSTGRES,),
        when=((_p(f"{path}/enabled"), ("true",)),) if path.endswith("/restore") else (),
        cites=_PGO + "internal/controller/postgrescluster/pgbackrest.go generateRestoreJobIntent "
        f"(Affinity, Tolerations: the data source's; Image: PostgresContainerImage), {source}",
    )


ENTRIES: tuple[OperatorKind, ...] = (
    OperatorKind(
        "postgres-operator.crunchydata.com",
        "PostgresCluster",
        (
            Placement(
                _p("/spec/instances/*"),
                (
                    _POSTGRES,
                    ImageSource((_p("/spec/backups/pgbackrest/image"),), when=(_BACKUPS,)),
                    ImageSource(
                        (_p("/spec/monitoring/pgmonitor/exporter/image"),),
                        when=((_p("/spec/monitoring/pgmonitor/exporter"), ()),),
                    ),
                    _COLLECTOR,
                    optional_image("/spec/instances/*/containers/*/image"),
                ),
                cites=_PGO + "internal/controller/postgrescluster/instance.go "
                "generateInstanceStatefulSetIntent (Affinity, Tolerations: the instance set's), "
                "reconcileInstance (pgbackrest.AddServerToInstancePod when backups are "
                "specified, addPGMonitorExporterToInstancePodSpec, collector.AddToPod, the "
                "set's containers); internal/postgres/reconcile.go InstancePod; " + _IMAGES,
            ),
            Placement(
                _p("/spec/proxy/pgBouncer"),
                (
                    ImageSource((_p("/spec/proxy/pgBouncer/image"),)),
                    optional_image("/spec/proxy/pgBouncer/containers/*/image"),
                    _COLLECTOR,
                ),
                cites=_PGO + "internal/controller/postgrescluster/pgbouncer.go "
                "generatePGBouncerDeployment (Affinity, Tolerations: spec.proxy.pgBouncer's); "
                "internal/pgbouncer/reconcile.go Pod (pgbouncer and its reloader: "
                "PGBouncerContainerImage; spec.proxy.pgBouncer.containers)",
            ),
            Placement(
                _p("/spec/backups/pgbackrest/repoHost"),
                (_PGBACKREST, _COLLECTOR),
                creates=1,
                when=((_p("/spec/backups/pgbackrest/repos/*/volume"), ()),),
                cites=_PGO + "internal/controller/postgrescluster/pgbackrest.go "
                "generateRepoHostIntent (Affinity, Tolerations: repoHost's, when set), "
                "reconcileDedicatedRepoHost (only when a repo has a volume: internal/pgbackrest/"
                "util.go RepoHostVolumeDefined); internal/pgbackrest/reconcile.go (its "
                "PGBackRestContainerImage)",
            ),
            Placement(
                _p("/spec/backups/pgbackrest/jobs"),
                (_PGBACKREST,),
                creates=1,
                cites=_PGO + "internal/controller/postgrescluster/pgbackrest.go "
                "generateBackupJobSpecIntent (Image: PGBackRestContainerImage; Tolerations, "
                "Affinity: spec.backups.pgbackrest.jobs', when set): the replica-create, manual "
                "and scheduled backups (reconcileReplicaCreateBackup, reconcileManualBackup, "
                "reconcilePGBackRestCronJob)",
            ),
            _restore_job(
                "/spec/backups/pgbackrest/restore",
                "reconcilePGBackRest (an in-place restore when restore.enabled)",
            ),
            _restore_job("/spec/dataSource/postgresCluster", "reconcilePostgresClusterDataSource"),
            _restore_job("/spec/dataSource/pgbackrest", "reconcileCloudBasedDataSource"),
        ),
        cites="PostgresCluster.spec.instances[].{affinity,tolerations,containers}, "
        "spec.proxy.pgBouncer.{affinity,tolerations,image,containers}, "
        "spec.backups.pgbackrest.{repoHost,jobs,restore}.{affinity,tolerations}, "
        "spec.dataSource.{postgresCluster,pgbackrest}.{affinity,tolerations}; spec.image, "
        "spec.backups.pgbackrest.image, spec.monitoring.pgmonitor.exporter.image, "
        "spec.instrumentation.image",
        adds="each image the resource does not name is the operator's RELATED_IMAGE_* (declare "
        "them as defaultImages); pgBackRest's sidecar in the instances when backups are set",
    ),
)
