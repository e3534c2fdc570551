"""OT-Container-Kit redis-operator (OT-CONTAINER-KIT/redis-operator): a StatefulSet per
resource (per role for a cluster) placed by its own fields."""

from __future__ import annotations

from kmultiarch.core.operators.catalogue.common import image_at, optional_image
from kmultiarch.core.operators.model import ImageSource, OperatorKind, Placement, _p

__all__ = ["ENTRIES"]


_OPSTREE = "OT-CONTAINER-KIT/redis-operator "
#: Every Redis pod's containers: kubernetesConfig.image, the exporter when enabled, the init
#: container when enabled, the sidecars (internal/k8sutils/statefulset.go generateContainerDef,
#: generateInitContainerDef).
_OPSTREE_IMAGES = (
    image_at("/spec/kubernetesConfig/image"),
    ImageSource(
        (_p("/spec/redisExporter/image"),),
        required=False,
        when=((_p("/spec/redisExporter/enabled"), ("true",)),),
    ),
    ImageSource(
        (_p("/spec/initContainer/image"),),
        required=False,
        when=((_p("/spec/initContainer/enabled"), ("true",)),),
    ),
    optional_image("/spec/sidecars/*/image"),
)
_OPSTREE_CITE = (
    "; internal/k8sutils/statefulset.go generateStatefulSetsDef (NodeSelector, Affinity, "
    "Tolerations of the parameters), generateContainerDef (kubernetesConfig.image; the "
    "exporter's image when redisExporter.enabled; sidecars[].image), generateInitContainerDef "
    "(initContainer.image when initContainer.enabled)"
)


def _opstree(kind: str, module: str, *placements: tuple[str, str]) -> OperatorKind:
    return OperatorKind(
        "redis.redis.opstreelabs.in",
        kind,
        tuple(
            Placement(
                _p(path),
                _OPSTREE_IMAGES,
                # a cluster's role objects (RedisLeader, RedisFollower) are plain structs
                creates=0 if path == "/spec" else 1,
                cites=_OPSTREE + f"internal/k8sutils/{module}.go {function}" + _OPSTREE_CITE,
            )
            for path, function in placements
        ),
        cites=f"{kind}.{'/'.join(p for p, _ in placements)[1:].replace('/', '.')}."
        "{affinity,tolerations,nodeSelector}; spec.kubernetesConfig.image, "
        "spec.redisExporter.image, spec.initContainer.image, spec.sidecars[].image",
        adds="with the GenerateConfigInInitContainer feature, an init container of the "
        "operator's image",
    )


_OPSTREE_REDIS = (
    _opstree(
        "Redis",
        "redis-standalone",
        ("/spec", "generateRedisStandaloneParams (spec.nodeSelector, affinity, tolerations)"),
    ),
    _opstree(
        "RedisCluster",
        "redis-cluster",
        *(
            (
                f"/spec/{role}",
                f"CreateRedis{name} (spec.{role}.affinity, nodeSelector, tolerations: the "
                "role's alone; api/common/v1beta2/common_types.go Redis{name})",
            )
            for role, name in (("redisLeader", "Leader"), ("redisFollower", "Follower"))
        ),
    ),
    OperatorKind(
        "redis.redis.opstreelabs.in",
        "RedisReplication",
        (
            *_opstree(
                "RedisReplication",
                "redis-replication",
                (
                    "/spec",
                    "generateRedisReplicationParams (spec.nodeSelector, affinity, tolerations)",
                ),
            ).placements,
            # spec.sentinel: a Sentinel StatefulSet of its own, placed by its own fields.
            Placement(
                _p("/spec/sentinel"),
                (image_at("/spec/sentinel/image"),),
                cites=_OPSTREE + "internal/controller/redisreplication/"
                "redisreplication_sentinel.go buildSentinelPodTemplate (spec.sentinel."
                "{affinity,tolerations,nodeSelector}, Image: spec.sentinel.image); "
                "api/redisreplication/v1beta2/redisreplication_types.go Sentinel",
            ),
        ),
        cites="RedisReplication.spec.{affinity,tolerations,nodeSelector}, spec.sentinel."
        "{affinity,tolerations,nodeSelector,image}; spec.kubernetesConfig.image, "
        "spec.redisExporter.image, spec.initContainer.image, spec.sidecars[].image",
        adds="with the GenerateConfigInInitContainer feature, an init container of the "
        "operator's image",
    ),
    _opstree(
        "RedisSentinel",
        "redis-sentinel",
        ("/spec", "generateRedisSentinelParams (spec.nodeSelector, affinity, tolerations)"),
    ),
)


ENTRIES: tuple[OperatorKind, ...] = (
    # OT-Container-Kit redis-operator: a StatefulSet per resource (per role for a cluster)
    # placed by the spec's (or the role's) own fields, alone; its images the spec names.
    *_OPSTREE_REDIS,
)
