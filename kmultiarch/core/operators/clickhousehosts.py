"""Which pod templates of an Altinity ClickHouseInstallation (or ClickHouseKeeperInstallation)
its hosts run, as the operator's normalizer chooses them (Altinity/clickhouse-operator): each
host's template names are its own, then those of its shard or replica, of its cluster, of
``spec.defaults`` (each level filling only the names still empty: TemplatesList
mergeFromFillEmptyValues), then of its host template; a name two pod templates share is the
last one's (PodTemplatesIndex.Set). A template no host names makes no pod; a ClickHouse host
whose templates name a log volume claim template also runs the operator's ``clickhouse-log``
container, unless its pod template has one.

Sources (pkg/apis/clickhouse.altinity.com/v1 and pkg/model/chi/normalizer): Cluster
InheritTemplatesFrom (from spec.defaults.templates), ChiShard and ChiReplica
InheritTemplatesFrom (from the cluster), normalizer-host.go normalizeHostStage2 (from the shard,
or from the replica when only replicas are listed: Cluster.SelectSettingsSourceFrom) and
createHostsField (a host listed under a shard, then under a replica: Host.MergeFrom), finalize
-> hostApplyHostTemplate (its host template's spec.templates); normalizer.go
normalizeClusterLayoutShardsCountAndReplicasCount (the layout's grid of hosts) and
ensureClusters (one default cluster when none is listed);
pkg/model/common/creator/stateful-set-application.go stsSetupLogContainer and
pkg/model/chi/creator/container.go ensureContainerSpecifiedClickHouseLog (the log container,
config/const.go DefaultUbiDockerImage). Templates from ClickHouseInstallationTemplates
(``spec.useTemplates``, or the operator's own) are not in the resource: not counted. Pure.
"""

from __future__ import annotations

from collections.abc import Mapping

__all__ = ["LOG_CONTAINER_IMAGE", "pod_templates_in_use"]

#: The image of the clickhouse-log container (pkg/model/chi/config/const.go
#: DefaultUbiDockerImage).
LOG_CONTAINER_IMAGE = "registry.access.redhat.com/ubi8/ubi-minimal:latest"
_LOG_CONTAINER = "clickhouse-log"
_NAMES = ("hostTemplate", "podTemplate", "logVolumeClaimTemplate")

Names = dict[str, str]


def _object(value: object) -> Mapping[str, object]:
    return value if isinstance(value, Mapping) else {}


def _list(value: object) -> list[Mapping[str, object]]:
    return [item for item in value if isinstance(item, Mapping)] if isinstance(value, list) else []


def _names(holder: Mapping[str, object]) -> Names:
    """The template names an object's ``templates`` gives (strings only)."""
    templates = _object(holder.get("templates"))
    return {key: str(templates[key]) for key in _NAMES if isinstance(templates.get(key), str)}


def _filled(own: Names, source: Names) -> Names:
    """``own``, its empty names filled from ``source`` (mergeFromFillEmptyValues)."""
    return {key: own.get(key) or source.get(key, "") for key in _NAMES}


def _count(declared: object) -> int:
    return declared if isinstance(declared, int) and declared > 0 else 0


def _hosts(cluster: Mapping[str, object], defaults: Names) -> list[Names]:
    """The template names of each host of a cluster's layout, before its host template."""
    cluster_names = _filled(_names(cluster), defaults)
    layout = _object(cluster.get("layout"))
    shards, replicas = _list(layout.get("shards")), _list(layout.get("replicas"))
    shards_count = max(
        _count(layout.get("shardsCount")) or 1,
        len(shards),
        *(_count(replica.get("shardsCount")) for replica in replicas),
        *(len(_list(replica.get("shards"))) for replica in replicas),
    )
    replicas_count = max(
        _count(layout.get("replicasCount")) or 1,
        len(replicas),
        *(_count(shard.get("replicasCount")) for shard in shards),
        *(len(_list(shard.get("replicas"))) for shard in shards),
    )
    # Cluster.isShardToBeUsedToInheritSettingsFrom: the shard, unless only replicas are listed.
    from_shard = bool(shards) or not replicas
    hosts: list[Names] = []
    for s in range(shards_count):
        shard = shards[s] if s < len(shards) else {}
        shard_names = _filled(_names(shard), cluster_names)
        in_shard = _list(shard.get("replicas"))
        for r in range(replicas_count):
            replica = replicas[r] if r < len(replicas) else {}
            in_replica = _list(replica.get("shards"))
            own = _filled(
                _names(in_shard[r]) if r < len(in_shard) else {},
                _names(in_replica[s]) if s < len(in_replica) else {},
            )
            source = shard_names if from_shard else _filled(_names(replica), cluster_names)
            hosts.append(_filled(own, source))
    return hosts


def pod_templates_in_use(
    resource: Mapping[str, object], log_container: bool
) -> dict[int, tuple[str, ...]]:
    """The index of each ``spec.templates.podTemplates`` item some host runs, with the images
    the operator adds to its pods (``log_container``: a ClickHouseInstallation's clickhouse-log
    container, for a host naming a log volume claim template)."""
    spec = _object(resource.get("spec"))
    templates = _object(spec.get("templates"))
    pod_templates = templates.get("podTemplates")
    pod_templates = pod_templates if isinstance(pod_templates, list) else []
    by_name: dict[str, int] = {}
    for index, template in enumerate(pod_templates):
        if isinstance(template, Mapping) and isinstance(template.get("name"), str):
            by_name[str(template["name"])] = index  # the last of a name wins
    host_templates = {
        str(item["name"]): _names(_object(item.get("spec")))
        for item in _list(templates.get("hostTemplates"))
        if isinstance(item.get("name"), str)
    }
    defaults = _names(_object(spec.get("defaults")))
    configuration = _object(spec.get("configuration"))
    used: dict[int, tuple[str, ...]] = {}
    # No cluster: the operator makes a default one (ensureClusters, CreateCluster), one host.
    for cluster in _list(configuration.get("clusters")) or [{}]:
        for own in _hosts(cluster, defaults):
            names = _filled(own, host_templates.get(own["hostTemplate"], {}))
            chosen = by_name.get(names["podTemplate"])
            if chosen is None:
                continue  # no template: the operator's default pod, which nothing places
            logs = log_container and bool(names["logVolumeClaimTemplate"])
            if logs and not _has_log_container(_object(pod_templates[chosen])):
                used[chosen] = (LOG_CONTAINER_IMAGE,)
            else:
                used.setdefault(chosen, ())
    return used


def _has_log_container(template: Mapping[str, object]) -> bool:
    containers = _list(_object(template.get("spec")).get("containers"))
    return any(container.get("name") == _LOG_CONTAINER for container in containers)
