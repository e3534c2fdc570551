"""Percona Operator for MySQL based on Percona XtraDB Cluster
(percona/percona-xtradb-cluster-operator) and Percona Operator for MongoDB
(percona/percona-server-mongodb-operator).

Both place each component's pods by the component's own ``nodeSelector`` and ``tolerations``,
and by ``affinity``, an object of their own (PodAffinity ``{antiAffinityTopologyKey,
advanced}``): ``advanced``, when set, is the pods' whole Affinity; else the operator requires
a pod anti-affinity across ``antiAffinityTopologyKey`` (``kubernetes.io/hostname`` when unset
or not one it accepts, none for ``none``) between the pods of the component's labels. An arch
constraint therefore goes into ``advanced`` (``shape="advanced-affinity"``), with that
anti-affinity beside it when kmultiarch creates ``advanced`` (:class:`AntiAffinityByKey`).
"""

from __future__ import annotations

from kmultiarch.core.operators.catalogue.common import image_at, optional_image
from kmultiarch.core.operators.model import (
    AntiAffinityByKey,
    Condition,
    ImageSource,
    OperatorKind,
    Placement,
    _p,
)

__all__ = ["ENTRIES"]


def _enabled(pointer: str) -> tuple[Condition, ...]:
    return ((_p(pointer), ("true",)),)


_APPLY = _p("/spec/upgradeOptions/apply")
#: With spec.upgradeOptions.apply other than disabled or never (compared lowercased; unset is
#: disabled), the operator asks Percona's version service which images to run and writes them
#: into the resource, on the first reconcile and by its schedule: the images the resource
#: names are not those the pods run (pxc controller.go Reconcile, version.go
#: versionUpgradeEnabled, ensurePXCVersion; psmdb psmdb_controller.go Reconcile, version.go
#: versionUpgradeEnabled, ensureVersion).
_VERSION_SERVICE = ImageSource(
    (),
    when=((_APPLY, ()),),
    unless=((_APPLY, ("", "disabled", "Disabled", "DISABLED", "never", "Never", "NEVER")),),
    operator_only="the images of Percona's version service (spec.upgradeOptions.apply is "
    "neither disabled nor never)",
    replaces_named=True,
)


# -- Percona XtraDB Cluster --------------------------------------------------------------------

_PXC = "percona/percona-xtradb-cluster-operator "
_PXC_AFFINITY_CITE = (
    "; pkg/pxc/statefulset.go StatefulSet (NodeSelector, Tolerations of the component's "
    "PodSpec; Affinity: PodAffinity(podSpec.Affinity, sfs)), PodAffinity (affinity.advanced "
    "as the pod's whole Affinity, else a required pod anti-affinity on "
    'affinity.antiAffinityTopologyKey matching app.Labels(), none for "none"); '
    "pkg/apis/pxc/v1/pxc_types.go PodAffinity, reconcileAffinityOpts (the key "
    "kubernetes.io/hostname when unset or not one of affinityValidTopologyKeys); "
    "pkg/naming/labels.go componentLabels (LabelsCluster and app.kubernetes.io/component); "
    "pkg/controller/pxc/version.go versionUpgradeEnabled, ensurePXCVersion (the version "
    "service's images replace spec's unless upgradeOptions.apply is disabled or never)"
)
#: The keys reconcileAffinityOpts keeps (affinityValidTopologyKeys); any other becomes
#: DefaultAffinityTopologyKey.
_PXC_TOPOLOGY_KEYS = (
    "none",
    "kubernetes.io/hostname",
    "failure-domain.beta.kubernetes.io/zone",
    "failure-domain.beta.kubernetes.io/region",
    "topology.kubernetes.io/zone",
    "topology.kubernetes.io/region",
)
#: The init container of every pod: spec.initContainer.image, else the deprecated
#: spec.initImage, else the operator's own image (tagged spec.crVersion when it differs from
#: the operator's version): pkg/k8s/utils.go GetInitImage.
_PXC_INIT = ImageSource(
    (_p("/spec/initContainer/image"), _p("/spec/initImage")),
    operator_only="the init container (the operator's own image, tagged spec.crVersion)",
)
_PXC_PMM = ImageSource((_p("/spec/pmm/image"),), required=False, when=_enabled("/spec/pmm/enabled"))


def _pxc_labels(component: str) -> tuple[tuple[str, str], ...]:
    """naming.LabelsPXC/LabelsHAProxy/LabelsProxySQL: componentLabels(cr, component)."""
    return (
        ("app.kubernetes.io/component", component),
        ("app.kubernetes.io/instance", "{/metadata/name}"),
        ("app.kubernetes.io/managed-by", "percona-xtradb-cluster-operator"),
        ("app.kubernetes.io/name", "percona-xtradb-cluster"),
        ("app.kubernetes.io/part-of", "percona-xtradb-cluster"),
    )


def _pxc_component(
    component: str, *images: ImageSource, when: tuple[Condition, ...] = (), cites: str
) -> Placement:
    path = f"/spec/{component}"
    return Placement(
        _p(path),
        (
            image_at(f"{path}/image"),
            _PXC_INIT,
            *images,
            _PXC_PMM,
            optional_image(f"{path}/sidecars/*/image"),
            _VERSION_SERVICE,
        ),
        shape="advanced-affinity",
        when=when,
        anti_affinity_by_key=AntiAffinityByKey(
            _p(f"{path}/affinity/antiAffinityTopologyKey"),
            "kubernetes.io/hostname",
            _PXC_TOPOLOGY_KEYS,
            labels=_pxc_labels(component),
        ),
        cites=_PXC + cites + _PXC_AFFINITY_CITE,
    )


_PXC_ENTRY = OperatorKind(
    "pxc.percona.com",
    "PerconaXtraDBCluster",
    (
        _pxc_component(
            "pxc",
            ImageSource(
                (_p("/spec/logcollector/image"),),
                required=False,
                when=_enabled("/spec/logcollector/enabled"),
            ),
            cites="pkg/pxc/app/statefulset/node.go AppContainer (spec.pxc.image), "
            "InitContainers (EntrypointInitContainer: the init image), LogCollectorContainer "
            "(spec.logcollector.image when enabled), PMMContainer (spec.pmm.image when "
            "enabled); pkg/pxc/statefulset.go (spec.pxc.sidecars)",
        ),
        _pxc_component(
            "haproxy",
            when=_enabled("/spec/haproxy/enabled"),
            cites="pkg/pxc/app/statefulset/haproxy.go AppContainer, SidecarContainers "
            "(pxc-monit: spec.haproxy.image), InitContainers (the init image, from crVersion "
            "1.13.0), PMMContainer; pkg/apis/pxc/v1/pxc_types.go HAProxyEnabled",
        ),
        _pxc_component(
            "proxysql",
            when=_enabled("/spec/proxysql/enabled"),
            cites="pkg/pxc/app/statefulset/proxysql.go AppContainer, SidecarContainers "
            "(pxc-monit, proxysql-monit: spec.proxysql.image), InitContainers (the init image, "
            "from crVersion 1.13.0), PMMContainer; pkg/apis/pxc/v1/pxc_types.go "
            "ProxySQLEnabled",
        ),
        Placement(
            _p("/spec/backup/storages/*"),
            (image_at("/spec/backup/image"), _PXC_INIT, _VERSION_SERVICE),
            when=((_p("/spec/backup"), ()),),
            cites=_PXC + "pkg/pxc/backup/job.go JobSpec (a backup Job's pod: Affinity, "
            "Tolerations, NodeSelector of spec.backup.storages[storageName]; Image: "
            "spec.backup.image; the init image from crVersion 1.15.0); "
            "pkg/pxc/app/binlogcollector/binlog-collector.go GetDeployment (the PITR "
            "collector: the same of spec.backup.storages[pitr.storageName]); "
            "pkg/apis/pxc/v1/pxc_types.go BackupStorageSpec (affinity: a core Affinity)",
        ),
    ),
    cites="PerconaXtraDBCluster.spec.{pxc,haproxy,proxysql}.{nodeSelector,tolerations,"
    "affinity.advanced,affinity.antiAffinityTopologyKey,image,sidecars}, "
    "spec.backup.storages.*.{nodeSelector,tolerations,affinity}, spec.backup.image, "
    "spec.initContainer.image, spec.initImage, spec.logcollector.image, spec.pmm.image",
    adds="the init container (the operator's own image unless spec.initContainer.image); "
    "the required pod anti-affinity on antiAffinityTopologyKey when affinity.advanced is not "
    "set (kept beside the constraint); the images of Percona's version service when "
    "spec.upgradeOptions.apply is neither disabled nor never; the xtrabackup sidecar only "
    "under the operator's XtrabackupSidecar feature gate (alpha, off)",
)


# -- Percona Server for MongoDB ----------------------------------------------------------------

_PSMDB = "percona/percona-server-mongodb-operator "
_PSMDB_AFFINITY_CITE = (
    "; pkg/psmdb/statefulset.go PodAffinity (affinity.advanced as the pod's whole Affinity, "
    "else a required pod anti-affinity on affinity.antiAffinityTopologyKey matching the pod's "
    'labels, none for "none"); pkg/apis/psmdb/v1/psmdb_defaults.go reconcileAffinityOpts '
    "(kubernetes.io/hostname when unset or not one of affinityValidTopologyKeys, crVersion "
    "1.16.0 on); pkg/naming/labels.go ClusterLabels; pkg/controller/perconaservermongodb/"
    "version.go versionUpgradeEnabled, ensureVersion (the version service's images replace "
    "spec's unless upgradeOptions.apply is disabled or never)"
)
_PSMDB_MEMBER_CITE = (
    "; pkg/psmdb/statefulset.go StatefulSpec (NodeSelector, Tolerations of the member's "
    "MultiAZ; Affinity: PodAffinity(cr, multiAZ.Affinity, customLabels): the member's "
    "labels, then MultiAZ.labels for other keys); pkg/naming/labels.go RSLabels "
    "(app.kubernetes.io/replset: the replset's name)"
)
_PSMDB_TOPOLOGY_KEYS = (
    "none",
    "kubernetes.io/hostname",
    "topology.kubernetes.io/zone",
    "topology.kubernetes.io/region",
)
#: The mongo-init container: spec.initImage, else the operator's own image (tagged
#: spec.crVersion when it differs): pkg/psmdb/init/init.go Containers.
_PSMDB_INIT = ImageSource(
    (_p("/spec/initImage"),),
    operator_only="the mongo-init container (the operator's own image, tagged spec.crVersion)",
)
_PSMDB_PMM = ImageSource(
    (_p("/spec/pmm/image"),), required=False, when=_enabled("/spec/pmm/enabled")
)
#: What a data-bearing member's pod runs beside mongod (not an arbiter's): the backup agent
#: when spec.backup.enabled, PMM when spec.pmm.enabled, the log collector and logrotate when
#: spec.logcollector.enabled.
_PSMDB_DATA_SIDECARS = (
    ImageSource((_p("/spec/backup/image"),), required=False, when=_enabled("/spec/backup/enabled")),
    _PSMDB_PMM,
    ImageSource(
        (_p("/spec/logcollector/image"),),
        required=False,
        when=_enabled("/spec/logcollector/enabled"),
    ),
)
_PSMDB_DATA_CITE = (
    "pkg/psmdb/container.go container (Image: spec.image), pkg/psmdb/init/init.go "
    "Containers; pkg/psmdb/statefulset.go StatefulSpec (multiAZ.WithSidecars; not for an "
    "arbiter: backupAgentContainer (spec.backup.image when spec.backup.enabled), "
    "pmm.Container (spec.pmm.image when enabled), logcollector.Containers "
    "(spec.logcollector.image when enabled))"
)
_PSMDB_CLUSTER_LABELS = (
    ("app.kubernetes.io/instance", "{/metadata/name}"),
    ("app.kubernetes.io/managed-by", "percona-server-mongodb-operator"),
    ("app.kubernetes.io/name", "percona-server-mongodb"),
    ("app.kubernetes.io/part-of", "percona-server-mongodb"),
)


def _psmdb_member(
    path: str,
    component: str,
    replset: str,
    *images: ImageSource,
    when: tuple[Condition, ...],
    cites: str,
) -> Placement:
    """A replica set's StatefulSet (mongod, arbiter, non-voting or hidden members)."""
    return Placement(
        _p(path),
        (
            image_at("/spec/image"),
            _PSMDB_INIT,
            *images,
            optional_image(f"{path}/sidecars/*/image"),
            _VERSION_SERVICE,
        ),
        shape="advanced-affinity",
        when=when,
        anti_affinity_by_key=AntiAffinityByKey(
            _p(f"{path}/affinity/antiAffinityTopologyKey"),
            "kubernetes.io/hostname",
            _PSMDB_TOPOLOGY_KEYS,
            labels=(
                ("app.kubernetes.io/component", component),
                *_PSMDB_CLUSTER_LABELS,
                ("app.kubernetes.io/replset", replset),
            ),
            own_labels=_p(f"{path}/labels"),
        ),
        cites=_PSMDB + cites + _PSMDB_MEMBER_CITE + _PSMDB_AFFINITY_CITE,
    )


_SHARDED = _enabled("/spec/sharding/enabled")

_PSMDB_ENTRY = OperatorKind(
    "psmdb.percona.com",
    "PerconaServerMongoDB",
    (
        _psmdb_member(
            "/spec/replsets/*",
            "mongod",
            "{/spec/replsets/*/name}",
            *_PSMDB_DATA_SIDECARS,
            when=(),
            cites="pkg/controller/perconaservermongodb/psmdb_controller.go reconcileReplset "
            "(MongodLabels); " + _PSMDB_DATA_CITE,
        ),
        _psmdb_member(
            "/spec/replsets/*/arbiter",
            "arbiter",
            "{/spec/replsets/*/name}",
            when=_enabled("/spec/replsets/*/arbiter/enabled"),
            cites="pkg/controller/perconaservermongodb/psmdb_controller.go reconcileReplset "
            "(ArbiterLabels when arbiter.enabled); pkg/psmdb/statefulset.go StatefulSpec "
            "(multiAZ = replset.Arbiter.MultiAZ; mongod's image, the init container, "
            "arbiter.sidecars)",
        ),
        *(
            _psmdb_member(
                f"/spec/replsets/*/{member}",
                component,
                "{/spec/replsets/*/name}",
                *_PSMDB_DATA_SIDECARS,
                when=_enabled(f"/spec/replsets/*/{member}/enabled"),
                cites="pkg/controller/perconaservermongodb/psmdb_controller.go "
                f"reconcileReplset ({labels} when {member}.enabled; multiAZ = "
                f"replset.{field}.MultiAZ); " + _PSMDB_DATA_CITE,
            )
            for member, component, labels, field in (
                ("nonvoting", "nonVoting", "NonVotingLabels", "NonVoting"),
                ("hidden", "hidden", "HiddenLabels", "Hidden"),
            )
        ),
        _psmdb_member(
            "/spec/sharding/configsvrReplSet",
            "mongod",
            "cfg",
            *_PSMDB_DATA_SIDECARS,
            when=_SHARDED,
            cites="pkg/apis/psmdb/v1/psmdb_defaults.go CheckNSetDefaults (the config "
            "replset's name: ConfigReplSetName, cfg); " + _PSMDB_DATA_CITE,
        ),
        Placement(
            _p("/spec/sharding/mongos"),
            (
                image_at("/spec/image"),
                _PSMDB_INIT,
                _PSMDB_PMM,
                optional_image("/spec/sharding/mongos/sidecars/*/image"),
                _VERSION_SERVICE,
            ),
            shape="advanced-affinity",
            when=_SHARDED,
            anti_affinity_by_key=AntiAffinityByKey(
                _p("/spec/sharding/mongos/affinity/antiAffinityTopologyKey"),
                "kubernetes.io/hostname",
                _PSMDB_TOPOLOGY_KEYS,
                labels=(("app.kubernetes.io/component", "mongos"), *_PSMDB_CLUSTER_LABELS),
                own_labels=_p("/spec/sharding/mongos/labels"),
                own_labels_win=True,
            ),
            cites=_PSMDB + "pkg/psmdb/mongos.go MongosTemplateSpec (ls: MongosLabels, "
            "mongos.labels over them; Affinity: PodAffinity(cr, mongos.affinity, ls), "
            "NodeSelector, Tolerations of mongos; mongosContainer: spec.image; the init "
            "container; mongos.sidecars); pkg/controller/perconaservermongodb/"
            "psmdb_controller.go (pmm.Container: spec.pmm.image when enabled)"
            + _PSMDB_AFFINITY_CITE,
        ),
    ),
    cites="PerconaServerMongoDB.spec.replsets[].{nodeSelector,tolerations,"
    "affinity.advanced,affinity.antiAffinityTopologyKey,labels,sidecars} and their "
    "arbiter, nonvoting, hidden; spec.sharding.configsvrReplSet, spec.sharding.mongos; "
    "spec.image, spec.initImage, spec.backup.image, spec.pmm.image, spec.logcollector.image",
    adds="the mongo-init container (the operator's own image unless spec.initImage); the "
    "required pod anti-affinity on antiAffinityTopologyKey when affinity.advanced is not set "
    "(kept beside the constraint); the images of Percona's version service when "
    "spec.upgradeOptions.apply is neither disabled nor never; the mongot (vector search) "
    "pods are not judged",
)

ENTRIES: tuple[OperatorKind, ...] = (_PXC_ENTRY, _PSMDB_ENTRY)
