"""Vitess operator (planetscale/vitess-operator): a VitessCluster's components, each placed by
its own affinity and tolerations (no nodeSelector anywhere in the API), running the cluster's
images (spec.images), a keyspace's own (keyspaces[].images) first for its tablets and vtorc."""

from __future__ import annotations

from kmultiarch.core.operators.catalogue.common import optional_image
from kmultiarch.core.operators.model import (
    Condition,
    ImageSource,
    Inheritance,
    OperatorKind,
    Placement,
    _p,
)

__all__ = ["ENTRIES"]


_VITESS = "planetscale/vitess-operator "

#: The operator's default for vtctld, vtgate, vttablet, vtorc and vtbackup
#: (pkg/apis/planetscale/v2/defaults.go DefaultImages: defaultVitessLiteImage), and for mysqld
#: (defaultMySQLImage), filled in by DefaultVitessImages when spec.images names none.
_VITESS_LITE = "vitess/lite:latest"
_MYSQL = "mysql:8.0.40"

#: Any cell with a zone: the operator then gives a component with no affinity of its own a
#: required node affinity to that zone (vtctld, vtadmin, vtorc: one Deployment per cell;
#: vttablet: its pool's cell), which an affinity kmultiarch created would replace: none is
#: created. A cell's gateway and etcd, its own, get it written beside the constraint.
_ZONED = ((_p("/spec/cells/*/zone"), ()),)


def _zone_affinity(zone: str) -> dict[str, object]:
    """The operator's node affinity to a cell's zone (k8s.ZoneFailureDomainLabel), ``zone`` a
    template read in the resource."""
    term = {
        "matchExpressions": [
            {"key": "failure-domain.beta.kubernetes.io/zone", "operator": "In", "values": [zone]}
        ]
    }
    required = {"nodeSelectorTerms": [term]}
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": required}}


def _images(component: str, keyspace: bool = False, default: str = _VITESS_LITE) -> ImageSource:
    """spec.images.<component> (a keyspace's images.<component> first), else the default."""
    pointers = (f"/spec/keyspaces/*/images/{component}",) if keyspace else ()
    return ImageSource(
        tuple(_p(pointer) for pointer in (*pointers, f"/spec/images/{component}")),
        templates=(default,),
    )


def _extra(path: str) -> tuple[ImageSource, ...]:
    """A component's initContainers and sidecarContainers, added to its pods."""
    return (
        optional_image(f"{path}/initContainers/*/image"),
        optional_image(f"{path}/sidecarContainers/*/image"),
    )


#: mysqld: MysqldImage.Image(), the first flavor set (a keyspace's images.mysqld replaces the
#: cluster's MySQL flavors: MergeVitessKeyspaceTemplateImages).
_MYSQLD = ImageSource(
    tuple(
        _p(pointer)
        for pointer in (
            "/spec/keyspaces/*/images/mysqld/mysql56Compatible",
            "/spec/keyspaces/*/images/mysqld/mysql80Compatible",
            "/spec/images/mysqld/mysql56Compatible",
            "/spec/images/mysqld/mysql80Compatible",
            "/spec/images/mysqld/mariadbCompatible",
            "/spec/images/mysqld/mariadb103Compatible",
        )
    ),
    templates=(_MYSQL,),
)
_MYSQLD_EXPORTER = ImageSource(
    (_p("/spec/keyspaces/*/images/mysqldExporter"), _p("/spec/images/mysqldExporter")),
    operator_only="mysqld-exporter (the operator's --default_mysqld_exporter_image)",
)
#: The vtbackup pod that seeds a shard's first backup takes its shard's first tablet pool's
#: affinity and tolerations (reconcile_backup_job.go vtbackupSpec): judged with every pool.
_VTBACKUP = ImageSource(
    (_p("/spec/keyspaces/*/images/vtbackup"), _p("/spec/images/vtbackup")),
    templates=(_VITESS_LITE,),
    when=((_p("/spec/backup"), ()),),
)

_DEFAULTED = (
    "pkg/apis/planetscale/v2/vitesscluster_defaults.go DefaultVitessImages (spec.images, "
    "else defaults.go DefaultImages)"
)
_ZONE_DEFAULT = "; with no affinity: a node affinity to its cell's zone when the cell has one"


def _tablet_pool(path: str) -> Placement:
    return Placement(
        _p(path),
        (
            _images("vttablet", keyspace=True),
            _MYSQLD,
            _MYSQLD_EXPORTER,
            _VTBACKUP,
            *_extra(path),
        ),
        default_affinity_when=_ZONED,
        cites=_VITESS + "pkg/operator/vttablet/pod.go UpdatePod (Tolerations: "
        "update.Tolerations(pool.tolerations); Affinity: pool.affinity when set, else a "
        "preferred pod anti-affinity by shard and pool, and a node affinity to the cell's zone "
        "when it has one; containers vttablet (Images.Vttablet), mysqld (Images.Mysqld.Image()), "
        "mysqld-exporter (Images.MysqldExporter, when set), the pool's initContainers and "
        "sidecarContainers); pkg/controller/vitesscluster/reconcile_keyspaces.go (images: "
        "DefaultVitessKeyspaceImages(the cluster's), then MergeVitessKeyspaceTemplateImages("
        "keyspace.images): a keyspace's image wins); " + _DEFAULTED,
    )


def _component(
    path: str,
    component: str,
    cites: str,
    *,
    keyspace: bool = False,
    creates: int = 0,
    when: tuple[Condition, ...] = (),
    cell_zone: str = "",
) -> Placement:
    """A component's Deployment; ``cell_zone``: the template of its one cell's zone (the
    operator's affinity then written beside the constraint), else any cell's zone keeps it."""
    return Placement(
        _p(path),
        (_images(component, keyspace=keyspace), *_extra(path)),
        creates=creates,
        when=when,
        default_affinity=_zone_affinity(cell_zone) if cell_zone else None,
        default_affinity_when=() if cell_zone else _ZONED,
        cites=_VITESS + cites + _ZONE_DEFAULT + "; " + _DEFAULTED,
    )


def _etcd(
    path: str,
    creates: int,
    unless: tuple[Condition, ...] = (),
    cell_zone: str = "",
) -> Placement:
    """An etcd lockserver's pods; ``cell_zone``: the template of its cell's zone."""
    return Placement(
        _p(path),
        (
            ImageSource(
                (_p(f"{path}/image"),),
                operator_only="etcd (the operator's --default_etcd_image)",
            ),
            *_extra(path),
        ),
        creates=creates,
        unless=unless,
        default_affinity=_zone_affinity(cell_zone) if cell_zone else None,
        cites=_VITESS + "pkg/operator/etcd/pod.go UpdatePod (Tolerations: "
        "update.Tolerations(spec.tolerations); Affinity: spec.affinity when set, else a "
        "preferred pod anti-affinity, and a node affinity to the zone of a cell's lockserver; "
        "Image: spec.image, else etcdlockserver_defaults.go DefaultEtcdImage, the "
        "--default_etcd_image flag)",
    )


ENTRIES: tuple[OperatorKind, ...] = (
    OperatorKind(
        "planetscale.com",
        "VitessCluster",
        (
            _tablet_pool("/spec/keyspaces/*/partitionings/*/equal/shardTemplate/tabletPools/*"),
            _tablet_pool("/spec/keyspaces/*/partitionings/*/custom/shards/*/tabletPools/*"),
            _component(
                "/spec/cells/*/gateway",
                "vtgate",
                "pkg/operator/vtgate/deployment.go UpdateDeployment (Tolerations: "
                "gateway.tolerations; Affinity: gateway.affinity; Image: Cell.Images.Vtgate, "
                "the cluster's spec.images.vtgate)",
                creates=1,
                cell_zone="{/spec/cells/*/zone}",
            ),
            _component(
                "/spec/vitessDashboard",
                "vtctld",
                "pkg/operator/vtctld/deployment.go UpdateDeployment, pkg/controller/"
                "vitesscluster/reconcile_vtctld.go (Affinity, Tolerations: "
                "spec.vitessDashboard's, deployed in each of its cells; Image: "
                "spec.images.vtctld; DefaultVitessDashboard makes it when missing)",
                creates=1,
            ),
            _component(
                "/spec/vtadmin",
                "vtadmin",
                "pkg/controller/vitesscluster/reconcile_vtadmin.go (deployed only when "
                "spec.vtadmin and spec.images.vtadmin are set; Affinity, Tolerations: "
                "spec.vtadmin's); pkg/operator/vtadmin/deployment.go UpdateDeployment (Image: "
                "spec.images.vtadmin for vtadmin-api and vtadmin-web)",
                when=((_p("/spec/images/vtadmin"), ()),),
            ),
            _component(
                "/spec/keyspaces/*/vitessOrchestrator",
                "vtorc",
                "pkg/operator/vtorc/deployment.go UpdateDeployment (Tolerations, Affinity: the "
                "keyspace's vitessOrchestrator; Image: the keyspace's images.vtorc, else the "
                "cluster's; vitesskeyspace_defaults.go DefaultVitessOrchestrator makes it when "
                "missing)",
                keyspace=True,
                creates=1,
            ),
            # The global lockserver, an etcd the operator deploys unless spec.globalLockserver
            # names an external one (defaultGlobalLockserver); no zone.
            _etcd(
                "/spec/globalLockserver/etcd",
                2,
                unless=((_p("/spec/globalLockserver/external"), ()),),
            ),
            # A cell's own lockserver, only when cells[].lockserver.etcd is set; in the cell's
            # zone (lockserver/etcd.go: vtc.Spec.Zone), kept beside the constraint.
            _etcd("/spec/cells/*/lockserver/etcd", 0, cell_zone="{/spec/cells/*/zone}"),
            # A backup schedule taking its backups by vtctldclient: a Job running the vtctld
            # image, its pods placed by the schedule's affinity, and by its tolerations when
            # set, else the dashboard's. (A vtbackup schedule's pods, the default, take the
            # tolerations of the tablet pool of the shard its strategy names: not catalogued.)
            Placement(
                _p("/spec/backup/schedules/*"),
                (_images("vtctld"),),
                inherits=Inheritance(_p("/spec/vitessDashboard"), (("tolerations", "replace"),)),
                when=((_p("/spec/backup/schedules/*/backupMethod"), ("vtctldclient",)),),
                cites=_VITESS + "pkg/controller/vitessbackupschedule/"
                "vitessbackupschedule_controller.go createVtctldclientJobPod (Affinity: the "
                "schedule's; Tolerations: resolveBackupJobTolerations(the schedule's, when set, "
                "else getVtctldclientJobPodConfig: spec.vitessDashboard.tolerations); Image: "
                "the schedule's, pkg/operator/vitessbackup/schedule.go: spec.images.vtctld); "
                "vitessbackupschedule_types.go BackupMethod (vtbackup by default)",
            ),
        ),
        cites="VitessCluster.spec.keyspaces[].partitionings[].{equal.shardTemplate,"
        "custom.shards[]}.tabletPools[], spec.cells[].gateway, spec.vitessDashboard, "
        "spec.vtadmin, spec.keyspaces[].vitessOrchestrator, spec.globalLockserver.etcd, "
        "spec.cells[].lockserver.etcd, spec.backup.schedules[] (vtctldclient): "
        "{affinity,tolerations}; spec.images, "
        "spec.keyspaces[].images",
        adds="its images' defaults (vitess/lite:latest, mysql:8.0.40) when spec.images names "
        "none; etcd and mysqld-exporter by the operator's flags (declare them as "
        "defaultImages); an affinity created drops the preferred anti-affinity the operator "
        "gives tablets and etcd members without one; none is created while a cell has a zone",
    ),
)
