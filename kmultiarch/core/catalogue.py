"""The built-in catalogue of operators' kinds (:data:`CATALOGUE`): data, each entry citing the
operator's code it follows (repository, file, function or field). The model it is written in,
and every function that reads it, is :mod:`kmultiarch.core.operators`.

Kept apart so that a run whose stream holds no catalogued kind never imports it:
:func:`kmultiarch.core.operators.built_in_operators` answers "is this kind catalogued?" from
:data:`kmultiarch.core.operators.CATALOGUE_KINDS` and loads this module only for a kind that
is (a test holds the two equal).
"""

from __future__ import annotations

from collections.abc import Mapping

from kmultiarch.core.operators import (
    ImageSource,
    Inheritance,
    OperatorKind,
    Placement,
    _p,
)

__all__ = ["CATALOGUE"]


def _image(*pointers: str, required: bool = True) -> ImageSource:
    return ImageSource(tuple(_p(pointer) for pointer in pointers), required)


def _extra(pointer: str) -> ImageSource:
    return _image(pointer, required=False)


def _pod_template_kind(
    group: str,
    kind: str,
    path: str,
    cites: str,
    *templates: str,
    creates: int = 2,
) -> OperatorKind:
    """An ECK-style kind: a pod template whose spec the operator merges into its own; the main
    container runs spec.image, else the image ECK computes for spec.version (``templates``)."""
    monitored = kind in ("Elasticsearch", "Kibana", "Logstash")
    default_affinity = _ES_DEFAULT_AFFINITY if kind == "Elasticsearch" else None
    return OperatorKind(
        group,
        kind,
        (
            Placement(
                _p(path),
                (
                    ImageSource((_p("/spec/image"),), templates=templates),
                    *(_ECK_MONITORING_SIDECARS if monitored else ()),
                ),
                creates=creates,
                pod_spec=True,
                cites=_ECK_IMAGE_CITE
                + (_ECK_MONITORING_CITE if monitored else "")
                + (_ES_AFFINITY_CITE if default_affinity else "")
                if templates
                else "",
                default_affinity=default_affinity,
            ),
        ),
        cites=cites,
        adds="the main container (image from spec.image, else the operator's default for "
        "spec.version)",
    )


_ECK_IMAGE_CITE = (
    "elastic/cloud-on-k8s pkg/controller/common/container/container.go ImageRepository "
    "(docker.elastic.co/<image><suffix>:<version>; the Maps server below 8.16.0 with -ubi, "
    "-ubi8 below 7.17.16 and 8.12.0 (getUBISuffix); AgentImageFor: beats/elastic-agent "
    "below 9.0.0; getPackageRegistryImage: lite-<version>); an operator started with "
    "--container-registry, --container-repository, --container-suffix or --ubi-only runs "
    "others: declare them as defaultImages"
)


#: Elasticsearch's pods prefer nodes without another pod of the cluster, unless the pod
#: template has an affinity of its own.
_ES_DEFAULT_AFFINITY: Mapping[str, object] = {
    "podAntiAffinity": {
        "preferredDuringSchedulingIgnoredDuringExecution": [
            {
                "weight": 100,
                "podAffinityTerm": {
                    "labelSelector": {
                        "matchLabels": {
                            "elasticsearch.k8s.elastic.co/cluster-name": "{/metadata/name}"
                        }
                    },
                    "topologyKey": "kubernetes.io/hostname",
                },
            }
        ]
    }
}
_ES_AFFINITY_CITE = (
    "; default affinity: pkg/controller/elasticsearch/nodespec/defaults.go DefaultAffinity "
    "(preferred pod anti-affinity by cluster name on kubernetes.io/hostname), applied by "
    "podtemplate.go WithAffinity only when the template has none"
)
#: Stack monitoring: a Metricbeat and a Filebeat sidecar of the resource's version when its
#: metrics or logs are shipped to an Elasticsearch.
_ECK_MONITORING_SIDECARS = tuple(
    ImageSource(
        (),
        templates=(f"docker.elastic.co/beats/{beat}:{{/spec/version}}",),
        when=((_p(f"/spec/monitoring/{signal}/elasticsearchRefs"), ()),),
        operator_only=f"the {beat} sidecar",
    )
    for beat, signal in (("metricbeat", "metrics"), ("filebeat", "logs"))
)
_ECK_MONITORING_CITE = (
    "; stack monitoring: pkg/controller/common/stackmon/sidecar.go NewMetricBeatSidecar, "
    "NewFileBeatSidecar (ImageRepository(MetricbeatImage or FilebeatImage, version)), added "
    "when spec.monitoring.{metrics,logs}.elasticsearchRefs are set (elasticsearch/stackmon, "
    "kibana/stackmon, logstash/stackmon)"
)


def _build_image_path(
    spec: str, default_base: str, version: str, deprecated: bool
) -> tuple[str, ...]:
    """prometheus-operator pkg/operator/image.go BuildImagePath as templates: the base image
    (``baseImage``, else the operator's) with ``sha``, else ``tag``, else the version."""
    bases = ("{" + spec + "/baseImage}", default_base) if deprecated else (default_base,)
    templates: list[str] = []
    if deprecated:
        templates += [base + "@sha256:{" + spec + "/sha}" for base in bases]
        templates += [base + ":{" + spec + "/tag}" for base in bases]
    templates += [base + ":" + version for base in bases]
    return tuple(templates)


_MONITORING_EXTRAS = (_extra("/spec/containers/*/image"), _extra("/spec/initContainers/*/image"))


def _monitoring(kind: str, *images: ImageSource, cites: str) -> OperatorKind:
    return OperatorKind(
        "monitoring.coreos.com",
        kind,
        (Placement(_p("/spec"), (*images, *_MONITORING_EXTRAS), cites=cites),),
        cites=f"{kind}.spec.{{affinity,tolerations,nodeSelector,image,containers,initContainers}}",
        adds="the config-reloader sidecar (the operator's --prometheus-config-reloader image)",
    )


_PROMETHEUS_OPERATOR = "prometheus-operator/prometheus-operator "
#: The Prometheus main image: spec.image, else BuildImagePath(baseImage or quay.io/prometheus/
#: prometheus, "v" + the semver of spec.version, tag, sha).
_PROMETHEUS_IMAGE = ImageSource(
    (_p("/spec/image"),),
    templates=_build_image_path(
        "/spec", "quay.io/prometheus/prometheus", "{/spec/version|v}", True
    ),
)
#: The Thanos sidecar spec.thanos adds: thanos.image, else BuildImagePath(thanos.baseImage or
#: quay.io/thanos/thanos, thanos.version (the operator's default when unset), tag, sha).
_THANOS_SIDECAR = ImageSource(
    (_p("/spec/thanos/image"),),
    templates=_build_image_path(
        "/spec/thanos", "quay.io/thanos/thanos", "{/spec/thanos/version}", True
    ),
    when=((_p("/spec/thanos"), ()),),
)


def _kubeflow(kind: str, replicas: str) -> OperatorKind:
    return OperatorKind(
        "kubeflow.org",
        kind,
        (Placement(_p(f"/spec/{replicas}/*/template/spec"), pod_spec=True),),
        cites=f"{kind}.spec.{replicas}.<role>.template (a PodTemplateSpec)",
    )


def _ray(kind: str, cluster: str) -> OperatorKind:
    return OperatorKind(
        "ray.io",
        kind,
        (
            Placement(_p(f"{cluster}/headGroupSpec/template/spec"), pod_spec=True),
            Placement(_p(f"{cluster}/workerGroupSpecs/*/template/spec"), pod_spec=True),
        ),
        cites=f"{kind}{cluster.replace('/', '.')}.headGroupSpec.template, "
        "workerGroupSpecs[].template (PodTemplateSpecs)",
    )


_JAEGER_COMPONENTS = (
    "allInOne",
    "collector",
    "query",
    "ingester",
    "agent",
    "storage/esIndexCleaner",
    "storage/esRollover",
    "storage/dependencies",
)
#: Each component's image, named or the operator's (its flags: --jaeger-agent-image...): the
#: common placement holds for every one, so is decided on all.
_JAEGER_IMAGES = tuple(
    _image(f"/spec/{component}/image", required=False) for component in _JAEGER_COMPONENTS
)

_FLINK_MERGE = (
    "apache/flink-kubernetes-operator flink-kubernetes-operator/src/main/java/org/apache/flink/"
    "kubernetes/operator/config/FlinkConfigBuilder.java (a role's pod is mergePodTemplates("
    "spec.podTemplate, spec.<role>.podTemplate)); utils/FlinkUtils.java mergePodTemplates, "
    "mergeArray (lists merged by position unless kubernetes.operator.pod-template."
    "merge-arrays-by-name): the common template's containers run in every role's pods, and "
    "each role's in the pods the common template places"
)


def _flink_containers(*roles: str) -> tuple[ImageSource, ...]:
    """The containers of the other pod templates merged with this one (``""``: the common)."""
    return tuple(
        _extra(f"/spec{'/' + role if role else ''}/podTemplate/spec/{group}/*/image")
        for role in roles
        for group in ("containers", "initContainers")
    )


def _by_reference(pointer: str, what: str) -> ImageSource:
    """Pods whose images a reference gives (a Task by taskRef, a StepAction by a step's ref),
    resolved by the controller at run time: not in the stream, so the pods sharing the
    placement cannot be decided on the images that are (tektoncd/pipeline pkg/reconciler/
    taskrun/resources/taskref.go, stepaction resolution)."""
    return ImageSource((), when=((_p(pointer), ()),), operator_only=what)


_TEKTON_PIPELINE_IMAGES = (
    _extra("/spec/pipelineSpec/tasks/*/taskSpec/steps/*/image"),
    _extra("/spec/pipelineSpec/tasks/*/taskSpec/sidecars/*/image"),
    _extra("/spec/pipelineSpec/finally/*/taskSpec/steps/*/image"),
    _extra("/spec/pipelineSpec/finally/*/taskSpec/sidecars/*/image"),
    *(
        _by_reference(f"/spec/pipelineSpec/{part}/*/{ref}", f"{part}[].{ref}")
        for part in ("tasks", "finally")
        for ref in ("taskRef", "pipelineRef", "pipelineSpec")
    ),
    *(
        _by_reference(f"/spec/pipelineSpec/{part}/*/taskSpec/steps/*/ref", f"{part}[] steps' ref")
        for part in ("tasks", "finally")
    ),
)


def _tekton_pipeline_run(
    version: str, template: str, task_template: str, creates: int
) -> tuple[Placement, Placement]:
    """A PipelineRun's pod template for every task's pod, and a task's own (taskRunSpecs[]),
    whose nodeSelector, tolerations and affinity replace the run's when set. The images of
    every task are judged for both (a task's own template is decided on them too: safe, if
    stricter than its own images need)."""
    source = (
        f"tektoncd/pipeline pkg/apis/pipeline/{version}/pipelinerun_types.go "
        f"PipelineRunSpec ({template}), GetTaskRunSpec: pod.MergePodTemplateWithDefault("
        f"taskRunSpecs[].{task_template}, the run's); pkg/apis/pipeline/pod/template.go "
        "MergePodTemplateWithDefault: a field of the task's template replaces the run's when "
        "not nil"
    )
    return (
        Placement(
            _p(template),
            _TEKTON_PIPELINE_IMAGES,
            creates=creates,
            versions=(version,),
            cites=source,
        ),
        Placement(
            _p(f"/spec/taskRunSpecs/*/{task_template}"),
            _TEKTON_PIPELINE_IMAGES,
            versions=(version,),
            inherits=Inheritance(
                _p(template),
                (("nodeSelector", "replace"), ("tolerations", "replace"), ("affinity", "replace")),
            ),
            cites=source,
        ),
    )


def _strimzi_pod(component: str, *images: ImageSource) -> Placement:
    return Placement(_p(f"/spec/{component}/template/pod"), (*images,), creates=2)


#: ECK kinds: pod template, and the image the operator runs for spec.version (ECK's
#: container registry and repositories by default; an operator configured with another
#: registry serves the same images).
_MAPS = "docker.elastic.co/elastic-maps-service/elastic-maps-server"
_ECK: tuple[tuple[str, str, str, tuple[str, ...]], ...] = (
    (
        "elasticsearch.k8s.elastic.co",
        "Elasticsearch",
        "/spec/nodeSets/*/podTemplate/spec",
        ("docker.elastic.co/elasticsearch/elasticsearch:{/spec/version}",),
    ),
    (
        "kibana.k8s.elastic.co",
        "Kibana",
        "/spec/podTemplate/spec",
        ("docker.elastic.co/kibana/kibana:{/spec/version}",),
    ),
    (
        "apm.k8s.elastic.co",
        "ApmServer",
        "/spec/podTemplate/spec",
        ("docker.elastic.co/apm/apm-server:{/spec/version}",),
    ),
    (
        "enterprisesearch.k8s.elastic.co",
        "EnterpriseSearch",
        "/spec/podTemplate/spec",
        ("docker.elastic.co/enterprise-search/enterprise-search:{/spec/version}",),
    ),
    (
        "maps.k8s.elastic.co",
        "ElasticMapsServer",
        "/spec/podTemplate/spec",
        (
            _MAPS + ":{/spec/version|>=8.16.0}",
            _MAPS + "-ubi:{/spec/version|>=8.12.0,<8.16.0}",
            _MAPS + "-ubi8:{/spec/version|>=8.0.0,<8.12.0}",
            _MAPS + "-ubi:{/spec/version|>=7.17.16,<8.0.0}",
            _MAPS + "-ubi8:{/spec/version|<7.17.16}",
        ),
    ),
    (
        "logstash.k8s.elastic.co",
        "Logstash",
        "/spec/podTemplate/spec",
        ("docker.elastic.co/logstash/logstash:{/spec/version}",),
    ),
    (
        "packageregistry.k8s.elastic.co",
        "PackageRegistry",
        "/spec/podTemplate/spec",
        ("docker.elastic.co/package-registry/distribution:lite-{/spec/version}",),
    ),
)

_OPSTREE = "OT-CONTAINER-KIT/redis-operator "
#: Every Redis pod's containers: kubernetesConfig.image, the exporter when enabled, the init
#: container when enabled, the sidecars (internal/k8sutils/statefulset.go generateContainerDef,
#: generateInitContainerDef).
_OPSTREE_IMAGES = (
    _image("/spec/kubernetesConfig/image"),
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
    _extra("/spec/sidecars/*/image"),
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
                (_image("/spec/sentinel/image"),),
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

_ALTINITY = "Altinity/clickhouse-operator "


def _altinity(group: str, kind: str, default_image: str, model: str) -> OperatorKind:
    """A ClickHouse (or Keeper) installation: each podTemplates[] item's spec is the pod spec
    of the hosts that name it; its app container, when the template has none, runs the
    operator's default image."""
    path = "/spec/templates/podTemplates/*/spec"
    return OperatorKind(
        group,
        kind,
        (
            Placement(
                _p(path),
                (ImageSource((_p(f"{path}/containers/*/image"),), templates=(default_image,)),),
                pod_spec=True,
                # A template's zone (zone.values) adds a node selector term the operator
                # appends to the template's own (an OR): a constraint written in the template
                # would not hold for it.
                unless=((_p("/spec/templates/podTemplates/*/zone/values/*"), ()),),
                cites=_ALTINITY + "pkg/apis/clickhouse.altinity.com/v1/type_templates.go "
                "PodTemplate.Spec (a core PodSpec); pkg/model/common/normalizer/templates/"
                "pod.go NormalizePodTemplate (Spec.Affinity = affinity.Merge(the template's, "
                "Make(template)): zone.values add a nodeSelectorTerm, appended, "
                "affinity/node-affinity.go mergeNodeAffinity); pkg/model/" + model + "/creator/"
                "container.go EnsureAppContainer, NewDefaultAppContainer (the default image "
                "when the template has no app container: pkg/model/" + model + "/config/"
                "const.go)",
            ),
        ),
        cites=f"{kind}.spec.templates.podTemplates[].spec (PodSpecs), zone",
        adds=f"{default_image} when a template names no app container; pods of hosts naming "
        "no pod template run that image, placed by nothing kmultiarch writes",
    )


#: The built-in catalogue: (group, kind) -> how its operator places its pods.
CATALOGUE: tuple[OperatorKind, ...] = (
    # Prometheus Operator: the pod follows the resource's spec.
    _monitoring(
        "Prometheus",
        _PROMETHEUS_IMAGE,
        _THANOS_SIDECAR,
        cites=_PROMETHEUS_OPERATOR + "pkg/prometheus/server/statefulset.go makeStatefulSetSpec "
        '(BuildImagePath(spec.image, spec.baseImage, "v"+version, spec.tag, spec.sha)), '
        "createThanosContainer (spec.thanos: the Thanos sidecar); pkg/operator/image.go "
        "BuildImagePath (sha before tag before version)",
    ),
    _monitoring(
        "Alertmanager",
        ImageSource(
            (_p("/spec/image"),),
            templates=_build_image_path(
                "/spec", "quay.io/prometheus/alertmanager", "{/spec/version}", True
            ),
        ),
        cites=_PROMETHEUS_OPERATOR + "pkg/alertmanager/statefulset.go makeStatefulSetSpec "
        "(BuildImagePath(spec.image, spec.baseImage, spec.version, spec.tag, spec.sha))",
    ),
    _monitoring(
        "ThanosRuler",
        ImageSource(
            (_p("/spec/image"),),
            templates=_build_image_path("/spec", "quay.io/thanos/thanos", "{/spec/version}", False),
        ),
        cites=_PROMETHEUS_OPERATOR + "pkg/thanos/statefulset.go makeStatefulSetSpec "
        "(BuildImagePath(spec.image, the operator's base, spec.version, '', ''))",
    ),
    _monitoring(
        "PrometheusAgent",
        ImageSource(
            (_p("/spec/image"),),
            templates=_build_image_path(
                "/spec", "quay.io/prometheus/prometheus", "{/spec/version|v}", False
            ),
        ),
        cites=_PROMETHEUS_OPERATOR + "pkg/prometheus/agent/statefulset.go "
        '(BuildImagePathForAgent(spec.image, the operator\'s base, "v"+version))',
    ),
    # ECK: a pod template merged into the operator's.
    *(
        _pod_template_kind(
            group,
            kind,
            path,
            f"{kind}.{path[1:].replace('/', '.')}, spec.image, spec.version",
            *templates,
        )
        for group, kind, path, templates in _ECK
    ),
    *(
        _pod_template_kind(
            group,
            kind,
            f"/spec/{workload}/podTemplate/spec",
            f"{kind}.spec.{workload}.podTemplate, spec.image, spec.version",
            *templates,
        )
        for group, kind, templates in (
            (
                "beat.k8s.elastic.co",
                "Beat",
                ("docker.elastic.co/beats/{/spec/type}:{/spec/version}",),
            ),
            (
                "agent.k8s.elastic.co",
                "Agent",
                (
                    "docker.elastic.co/beats/elastic-agent:{/spec/version|<9.0.0}",
                    "docker.elastic.co/elastic-agent/elastic-agent:{/spec/version|>=9.0.0}",
                ),
            ),
        )
        for workload in ("daemonSet", "deployment", "statefulSet")
    ),
    # Strimzi: template.pod of each component (a pool's template overrides the Kafka's; the
    # images of a pool are those of its Kafka, named by the strimzi.io/cluster label).
    OperatorKind(
        "kafka.strimzi.io",
        "Kafka",
        (
            _strimzi_pod("kafka", _image("/spec/kafka/image")),
            _strimzi_pod("zookeeper", _image("/spec/zookeeper/image")),
            _strimzi_pod(
                "entityOperator",
                _image("/spec/entityOperator/topicOperator/image", required=False),
                _image("/spec/entityOperator/userOperator/image", required=False),
            ),
            _strimzi_pod("cruiseControl", _image("/spec/cruiseControl/image")),
            _strimzi_pod("kafkaExporter", _image("/spec/kafkaExporter/image")),
        ),
        cites="Kafka.spec.{kafka,zookeeper,entityOperator,cruiseControl,kafkaExporter}."
        "template.pod.{affinity,tolerations}; images spec.<component>.image",
        adds="the images of the Kafka version (spec.kafka.version) when no image is named",
    ),
    OperatorKind(
        "kafka.strimzi.io",
        "KafkaNodePool",
        (
            Placement(
                _p("/spec/template/pod"),
                (
                    ImageSource(
                        (_p("/spec/kafka/image"),),
                        related=("kafka.strimzi.io", "Kafka", "strimzi.io/cluster"),
                    ),
                ),
                # Never created: a pool without its own pod template takes the Kafka's
                # spec.kafka.template.pod, which one on the pool would replace whole (its
                # volumes, security context...); that one is written instead.
                creates=2,
                judged_only_when_missing=True,
                cites="strimzi/strimzi-kafka-operator cluster-operator/src/main/java/io/"
                "strimzi/operator/cluster/model/nodepools/KafkaPool.java fromCrd "
                "(templatePod = spec.template.pod of the pool, replacing the Kafka's "
                "spec.kafka.template.pod when set)",
            ),
        ),
        cites="KafkaNodePool.spec.template.pod.{affinity,tolerations}; images of the Kafka "
        "its strimzi.io/cluster label names (spec.kafka.image)",
    ),
    *(
        OperatorKind(
            "kafka.strimzi.io",
            kind,
            (Placement(_p("/spec/template/pod"), (_image("/spec/image"),), creates=2),),
            cites=f"{kind}.spec.template.pod.{{affinity,tolerations}}, spec.image",
        )
        for kind in ("KafkaConnect", "KafkaMirrorMaker2", "KafkaBridge")
    ),
    # KubeRay: pod templates per group.
    _ray("RayCluster", "/spec"),
    _ray("RayJob", "/spec/rayClusterSpec"),
    _ray("RayService", "/spec/rayClusterConfig"),
    # Kubeflow training operator: one pod template per replica type.
    _kubeflow("PyTorchJob", "pytorchReplicaSpecs"),
    _kubeflow("TFJob", "tfReplicaSpecs"),
    _kubeflow("MPIJob", "mpiReplicaSpecs"),
    _kubeflow("XGBoostJob", "xgbReplicaSpecs"),
    _kubeflow("PaddleJob", "paddleReplicaSpecs"),
    _kubeflow("MXJob", "mxReplicaSpecs"),
    _kubeflow("JAXJob", "jaxReplicaSpecs"),
    # Spark operator: driver and executor, each with its image or the application's, and the
    # application's nodeSelector under their own.
    OperatorKind(
        "sparkoperator.k8s.io",
        "SparkApplication",
        tuple(
            Placement(
                _p(f"/spec/{role}"),
                (
                    _image(f"/spec/{role}/image", "/spec/image"),
                    _extra(f"/spec/{role}/sidecars/*/image"),
                    _extra(f"/spec/{role}/initContainers/*/image"),
                ),
                inherits=Inheritance(_p("/spec"), (("nodeSelector", "merge-by-key"),)),
                cites="kubeflow/spark-operator internal/controller/sparkapplication/"
                "submission.go nodeSelectorOption (spec.nodeSelector as "
                "spark.kubernetes.node.selector.*: driver and executor pods), "
                "internal/webhook/sparkpod_defaulter.go addNodeSelectors (the role's "
                "nodeSelector copied over it key by key), addAffinity (the role's affinity), "
                "addTolerations (the role's tolerations)",
            )
            for role in ("driver", "executor")
        ),
        cites="SparkApplication.spec.{driver,executor}.{affinity,tolerations,nodeSelector,"
        "image,sidecars,initContainers}, spec.nodeSelector, spec.image",
    ),
    # Tekton: a pod template applied to every step's pod; the images are the steps'.
    OperatorKind(
        "tekton.dev",
        "TaskRun",
        (
            Placement(
                _p("/spec/podTemplate"),
                (
                    _extra("/spec/taskSpec/steps/*/image"),
                    _extra("/spec/taskSpec/sidecars/*/image"),
                    _by_reference("/spec/taskSpec/steps/*/ref", "steps' ref (StepActions)"),
                ),
                creates=1,
            ),
        ),
        cites="TaskRun.spec.podTemplate.{affinity,tolerations,nodeSelector}; images "
        "spec.taskSpec.{steps,sidecars}[].image (a taskRef's are the referenced Task's)",
        adds="its init and entrypoint images",
    ),
    OperatorKind(
        "tekton.dev",
        "PipelineRun",
        (
            *_tekton_pipeline_run("v1", "/spec/taskRunTemplate/podTemplate", "podTemplate", 2),
            *_tekton_pipeline_run("v1beta1", "/spec/podTemplate", "taskPodTemplate", 1),
        ),
        cites="PipelineRun (v1) spec.taskRunTemplate.podTemplate, spec.taskRunSpecs[]."
        "podTemplate; (v1beta1) spec.podTemplate, spec.taskRunSpecs[].taskPodTemplate; images "
        "spec.pipelineSpec.{tasks,finally}[].taskSpec.{steps,sidecars}[].image",
        adds="its init and entrypoint images",
    ),
    # OpenTelemetry operator: the collector's pods follow its spec (no pod in sidecar mode:
    # the collector is injected into other pods); the target allocator is its own Deployment.
    OperatorKind(
        "opentelemetry.io",
        "OpenTelemetryCollector",
        (
            Placement(
                _p("/spec"),
                (
                    _image("/spec/image"),
                    _extra("/spec/additionalContainers/*/image"),
                    _extra("/spec/initContainers/*/image"),
                ),
                unless=((_p("/spec/mode"), ("sidecar",)),),
                injected_by="sidecar.opentelemetry.io/inject",
                cites="open-telemetry/opentelemetry-operator internal/manifests/collector/"
                "collector.go Build (mode sidecar: no workload), deployment.go, daemonset.go, "
                "statefulset.go (spec.initContainers, spec.additionalContainers); "
                "pkg/sidecar/annotation.go (mode sidecar: injected into the pods annotated "
                "sidecar.opentelemetry.io/inject, true or the collector's name, or whose "
                "namespace is)",
            ),
            Placement(
                _p("/spec/targetAllocator"),
                (_image("/spec/targetAllocator/image"),),
                when=((_p("/spec/targetAllocator/enabled"), ("true",)),),
                cites="open-telemetry/opentelemetry-operator internal/manifests/collector/"
                "targetallocator.go TargetAllocator (spec.targetAllocator.{nodeSelector,"
                "affinity,tolerations,image} when enabled); internal/manifests/targetallocator/"
                "container.go (the operator's --target-allocator-image when image is unset)",
            ),
        ),
        cites="OpenTelemetryCollector.spec.{affinity,tolerations,nodeSelector,image,"
        "initContainers,additionalContainers,mode}, spec.targetAllocator",
        adds="the collector image of the operator's version when spec.image is not set",
    ),
    # Jaeger operator: the common placement in spec, merged under each component's own.
    OperatorKind(
        "jaegertracing.io",
        "Jaeger",
        (
            Placement(
                _p("/spec"),
                _JAEGER_IMAGES,
                # The simplest Jaeger has no spec at all: the operator chooses everything.
                creates=1,
            ),
            *(
                Placement(
                    _p(f"/spec/{component}"),
                    _JAEGER_IMAGES,
                    inherits=Inheritance(
                        _p("/spec"), (("affinity", "replace"), ("tolerations", "append"))
                    ),
                    cites="jaegertracing/jaeger-operator pkg/util/util.go Merge([component's "
                    "JaegerCommonSpec, spec's]): the first affinity set wins (the component's), "
                    "tolerations are appended; pkg/deployment/{all_in_one,collector,query,"
                    "ingester,agent}.go, pkg/cronjob/{es_index_cleaner,es_rollover,"
                    "spark_dependencies}.go",
                )
                for component in _JAEGER_COMPONENTS
            ),
        ),
        cites="Jaeger.spec.{affinity,tolerations}, spec.<component>.{affinity,tolerations}; "
        "images spec.<component>.image",
        adds="the image of each component of the operator's version when none is named",
    ),
    # MinIO operator: one placement per pool, the tenant's image.
    OperatorKind(
        "minio.min.io",
        "Tenant",
        (
            Placement(
                _p("/spec/pools/*"),
                (
                    _image("/spec/image"),
                    _extra("/spec/sideCars/containers/*/image"),
                    _extra("/spec/initContainers/*/image"),
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
    # Rook: placement.all with a bare nodeAffinity, merged under each daemon's; the Ceph
    # daemons run the ceph image.
    OperatorKind(
        "ceph.rook.io",
        "CephCluster",
        (
            Placement(
                _p("/spec/placement/all"),
                (_image("/spec/cephVersion/image"),),
                creates=2,
                shape="node-affinity",
            ),
            *(
                Placement(
                    _p(f"/spec/placement/{daemon}"),
                    (_image("/spec/cephVersion/image"),),
                    shape="node-affinity",
                    inherits=Inheritance(
                        _p("/spec/placement/all"),
                        (("nodeAffinity", "replace"), ("tolerations", "append")),
                    ),
                    cites=f"rook/rook pkg/apis/ceph.rook.io/v1/placement.go Get{getter}Placement: "
                    "p.All().Merge(p[daemon]); Merge: the daemon's nodeAffinity replaces all's "
                    "when set, its tolerations are appended to all's (mergeTolerations)",
                )
                for daemon, getter in (("mon", "Mon"), ("mgr", "Mgr"), ("osd", "OSD"))
            ),
            # A stretch cluster's arbiter mon takes placement.arbiter alone when it sets
            # anything (an empty one falls back to the mons'): one placement per field that
            # makes it non-empty, the first that holds is the one (the same path once).
            *(
                Placement(
                    _p("/spec/placement/arbiter"),
                    (_image("/spec/cephVersion/image"),),
                    shape="node-affinity",
                    when=((_p(f"/spec/placement/arbiter/{field}"), ()),),
                    cites="rook/rook pkg/apis/ceph.rook.io/v1/placement.go "
                    "GetArbiterPlacement (p[arbiter], not merged with all); "
                    "pkg/operator/ceph/cluster/mon/mon.go getMonPlacement (used for the "
                    "arbiter zone's mon when not empty, else the mons' placement)",
                )
                for field in (
                    "nodeAffinity",
                    "tolerations",
                    "podAffinity",
                    "podAntiAffinity",
                    "topologySpreadConstraints",
                )
            ),
        ),
        cites="CephCluster.spec.placement.all.{nodeAffinity,tolerations}, spec.cephVersion.image",
        adds="the CSI and Rook images of the operator for the pods it runs beside the daemons",
    ),
    # Flink Kubernetes operator: pod templates for both roles.
    OperatorKind(
        "flink.apache.org",
        "FlinkDeployment",
        (
            Placement(
                _p("/spec/podTemplate/spec"),
                (_image("/spec/image"), *_flink_containers("jobManager", "taskManager")),
                creates=2,
                pod_spec=True,
                cites=_FLINK_MERGE,
            ),
            *(
                Placement(
                    _p(f"/spec/{role}/podTemplate/spec"),
                    (_image("/spec/image"), *_flink_containers("")),
                    creates=2,
                    pod_spec=True,
                    inherits=Inheritance(
                        _p("/spec/podTemplate/spec"),
                        (
                            ("tolerations", "by-position"),
                            ("affinity", "by-position"),
                            ("nodeSelector", "merge-by-key"),
                        ),
                    ),
                    cites=_FLINK_MERGE,
                )
                for role in ("jobManager", "taskManager")
            ),
        ),
        cites="FlinkDeployment.spec.{podTemplate,jobManager.podTemplate,taskManager.podTemplate} "
        "(Pod templates), spec.image",
    ),
    # Volcano: one pod template per task.
    OperatorKind(
        "batch.volcano.sh",
        "Job",
        (Placement(_p("/spec/tasks/*/template/spec"), pod_spec=True),),
        cites="Job.spec.tasks[].template (a PodTemplateSpec)",
    ),
    # Altinity clickhouse-operator: pod templates by name.
    _altinity(
        "clickhouse.altinity.com",
        "ClickHouseInstallation",
        "clickhouse/clickhouse-server:latest",
        "chi",
    ),
    _altinity(
        "clickhouse-keeper.altinity.com",
        "ClickHouseKeeperInstallation",
        "clickhouse/clickhouse-keeper:latest",
        "chk",
    ),
    # Percona Operator for PostgreSQL (v2): each instance set's pods, and PgBouncer's, placed
    # by their own affinity and tolerations (Crunchy's PostgresCluster underneath).
    OperatorKind(
        "pgv2.percona.com",
        "PerconaPGCluster",
        (
            Placement(
                _p("/spec/instances/*"),
                (
                    _image("/spec/image"),
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
                    _extra("/spec/instances/*/sidecars/*/image"),
                    _extra("/spec/instances/*/initContainers/*/image"),
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
                    _extra("/spec/proxy/pgBouncer/sidecars/*/image"),
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
    # MongoDB Community operator: spec.statefulSet.spec is merged over the StatefulSet the
    # operator builds (its pod template's placement kept); mongod, the agent and the init
    # containers run images of the operator's environment.
    OperatorKind(
        "mongodbcommunity.mongodb.com",
        "MongoDBCommunity",
        (
            Placement(
                _p("/spec/statefulSet/spec/template/spec"),
                (
                    ImageSource(
                        (),
                        operator_only="mongod (the operator's MONGODB_REPO_URL/MONGODB_IMAGE "
                        "for spec.version)",
                    ),
                    ImageSource(
                        (),
                        operator_only="the mongodb-agent and its init containers (the "
                        "operator's AGENT_IMAGE, VERSION_UPGRADE_HOOK_IMAGE, "
                        "READINESS_PROBE_IMAGE)",
                    ),
                ),
                creates=4,
                pod_spec=True,
                cites="mongodb/mongodb-kubernetes-operator controllers/replica_set_controller.go "
                "(statefulset.WithCustomSpecs(spec.statefulSet.spec): merged over the "
                "operator's; getMongoDBImage(repoUrl, mongodbImage, type, spec.version)); "
                "controllers/construct/mongodbstatefulset.go "
                "BuildMongoDBReplicaSetStatefulSetModificationFunction (mongodbImage, "
                "agentImage, versionUpgradeHookImage, readinessProbeImage from the operator's "
                "MONGODB_IMAGE, AGENT_IMAGE... environment); api/v1/mongodbcommunity_types.go "
                "StatefulSetConfiguration",
            ),
        ),
        cites="MongoDBCommunity.spec.statefulSet.spec.template (merged over the operator's "
        "StatefulSet)",
        adds="mongod, the mongodb-agent, the version upgrade hook and readiness probe (the "
        "operator's images: declare them as defaultImages)",
    ),
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
                    _extra("/spec/sidecars/*/image"),
                    _extra("/spec/initContainers/*/image"),
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
    # Volcano: a CronJob's Jobs are its spec.jobTemplate.spec (cronjob_controller_util.go
    # getJobFromTemplate: JobTemplate.Spec.DeepCopyInto(&job.Spec)); a flow JobTemplate's spec
    # is a Job's spec (flow/v1alpha1/jobtemplate_types.go JobTemplate.Spec v1alpha1.JobSpec).
    OperatorKind(
        "batch.volcano.sh",
        "CronJob",
        (
            Placement(
                _p("/spec/jobTemplate/spec/tasks/*/template/spec"),
                pod_spec=True,
                cites="volcano-sh/volcano staging/src/volcano.sh/apis/pkg/apis/batch/v1alpha1/"
                "job.go CronJobSpec.JobTemplate (JobTemplateSpec: a JobSpec, tasks[].template "
                "a PodTemplateSpec); pkg/controllers/cronjob/cronjob_controller_util.go "
                "(cj.Spec.JobTemplate.Spec.DeepCopyInto(&job.Spec))",
            ),
        ),
        cites="CronJob.spec.jobTemplate.spec.tasks[].template (PodTemplateSpecs)",
    ),
    OperatorKind(
        "flow.volcano.sh",
        "JobTemplate",
        (
            Placement(
                _p("/spec/tasks/*/template/spec"),
                pod_spec=True,
                cites="volcano-sh/volcano staging/src/volcano.sh/apis/pkg/apis/flow/v1alpha1/"
                "jobtemplate_types.go JobTemplate.Spec (a batch.volcano.sh JobSpec, made a "
                "Job by a JobFlow)",
            ),
        ),
        cites="JobTemplate.spec.tasks[].template (PodTemplateSpecs)",
    ),
    # OT-Container-Kit redis-operator: a StatefulSet per resource (per role for a cluster)
    # placed by the spec's (or the role's) own fields, alone; its images the spec names.
    *_OPSTREE_REDIS,
    # Crossplane: the provider's deployment; its image is the package's.
    OperatorKind(
        "pkg.crossplane.io",
        "DeploymentRuntimeConfig",
        (
            Placement(
                _p("/spec/deploymentTemplate/spec/template/spec"),
                (_image("/spec/deploymentTemplate/spec/template/spec/containers/*/image"),),
                creates=4,
                pod_spec=True,
            ),
        ),
        cites="DeploymentRuntimeConfig.spec.deploymentTemplate.spec.template (a Deployment's)",
        adds="the provider's container (the package's image) when the template names none",
    ),
    # CloudNativePG: the instances are placed by spec.affinity (its own shape: nodeSelector,
    # tolerations and a bare nodeAffinity); the poolers by a pod template.
    OperatorKind(
        "postgresql.cnpg.io",
        "Cluster",
        (
            Placement(
                _p("/spec/affinity"),
                (_image("/spec/imageName"),),
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
                (_image("/spec/template/spec/containers/*/image"),),
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
    # RabbitMQ cluster operator: the StatefulSet's pod takes spec.affinity and tolerations.
    OperatorKind(
        "rabbitmq.com",
        "RabbitmqCluster",
        (
            Placement(
                _p("/spec"),
                (
                    _image("/spec/image"),
                    _extra("/spec/secretBackend/vault/defaultUserUpdaterImage"),
                    _extra("/spec/override/statefulSet/spec/template/spec/containers/*/image"),
                    _extra("/spec/override/statefulSet/spec/template/spec/initContainers/*/image"),
                ),
                cites="rabbitmq/cluster-operator internal/resource/statefulset.go (Affinity: "
                "spec.affinity, Tolerations: spec.tolerations, Image: spec.image; the "
                "default-user updater sidecar: secretBackend.vault.defaultUserUpdaterImage); "
                "api/v1beta1/rabbitmqcluster_types.go RabbitmqClusterSpec",
            ),
        ),
        cites="RabbitmqCluster.spec.{affinity,tolerations,image}",
        adds="the operator's default image when spec.image is not set (its defaulting); an "
        "override.statefulSet template's own affinity is patched over spec.affinity",
    ),
    # JobSet: a Job template per replicated job.
    OperatorKind(
        "jobset.x-k8s.io",
        "JobSet",
        (
            Placement(
                _p("/spec/replicatedJobs/*/template/spec/template/spec"),
                pod_spec=True,
                cites="kubernetes-sigs/jobset api/jobset/v1alpha2/jobset_types.go "
                "ReplicatedJob.Template (a batch/v1 JobTemplateSpec)",
            ),
        ),
        cites="JobSet.spec.replicatedJobs[].template.spec.template (PodTemplateSpecs)",
    ),
    # Argo Events: the Sensor's and EventSource's Deployment, placed by spec.template, runs the
    # controller's image.
    *(
        OperatorKind(
            "argoproj.io",
            kind,
            (
                Placement(
                    _p("/spec/template"),
                    (ImageSource((), operator_only=f"the {kind}'s (the controller's image)"),),
                    creates=1,
                    cites="argoproj/argo-events pkg/apis/events/v1alpha1/template.go Template "
                    "(nodeSelector, tolerations, affinity); pkg/reconciler/"
                    f"{kind.lower()}/resource.go (Image: the controller's args.Image)",
                ),
            ),
            cites=f"{kind}.spec.template.{{nodeSelector,tolerations,affinity}}",
            adds="its container, running the controller's image (declare it as defaultImages)",
        )
        for kind in ("Sensor", "EventSource")
    ),
    # KubeVirt: the virt-launcher pod of a VM is placed by its VMI template's spec.
    *(
        OperatorKind(
            "kubevirt.io",
            kind,
            (
                Placement(
                    _p(path),
                    (
                        ImageSource((), operator_only="virt-launcher (the operator's image)"),
                        _extra(f"{path}/volumes/*/containerDisk/image"),
                    ),
                    creates=0,
                    node_selector_from=(("kubernetes.io/arch", _p(f"{path}/architecture")),),
                    cites="kubevirt/kubevirt staging/src/kubevirt.io/api/core/v1/types.go "
                    "VirtualMachineInstanceSpec (nodeSelector, affinity, tolerations, "
                    "architecture, volumes[].containerDisk.image); pkg/virt-controller/"
                    "services/template.go (the launcher pod runs virt-launcher, the operator's "
                    "image; newNodeSelectorRenderer: no architecture selector when the "
                    "cluster enables cross-architecture virtualization); "
                    "nodeselectorrenderer.go NewNodeSelectorRenderer (kubernetes.io/arch: "
                    "lower(spec.architecture), under the cluster's and the VMI's nodeSelector, "
                    "whose keys win)",
                ),
            ),
            cites=f"{kind}.{path[1:].replace('/', '.')}.{{nodeSelector,affinity,tolerations}}",
            adds="virt-launcher (the operator's image; declare it as defaultImages)",
        )
        for kind, path in (
            ("VirtualMachine", "/spec/template/spec"),
            ("VirtualMachineInstance", "/spec"),
        )
    ),
)
