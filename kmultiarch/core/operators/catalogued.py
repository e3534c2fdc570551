"""Which kinds the built-in catalogue holds, and the catalogue by kind, loaded on demand.

The catalogue (:mod:`kmultiarch.core.operators.catalogue`) is hundreds of entries of data; most
streams hold none of its kinds. :data:`CATALOGUE_KINDS` writes out its (API group, kind) pairs, so
that :func:`built_in_operators` answers "is this kind catalogued?" without importing it, and
imports it for the first kind that is (tests/unit/test_operators.py holds the two equal).
Apart from :mod:`kmultiarch.core.operators.model` (the model), which the catalogue imports: no
import cycle, lazy or not.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from kmultiarch.core.operators.model import OperatorKind, catalogue_by_kind

__all__ = ["CATALOGUE_KINDS", "MAKES_NO_PODS", "built_in_operators"]

#: The (API group, kind) of every entry of the built-in catalogue
#: (:data:`kmultiarch.core.operators.catalogue.CATALOGUE`), written out so that asking whether a
#: kind is catalogued never imports the catalogue (tests/unit/test_operators.py holds the two
#: equal).
CATALOGUE_KINDS: frozenset[tuple[str, str]] = frozenset(
    (group, kind)
    for group, kinds in (
        ("acid.zalan.do", ("postgresql",)),
        ("agent.k8s.elastic.co", ("Agent",)),
        ("agents.x-k8s.io", ("Sandbox",)),
        ("apm.k8s.elastic.co", ("ApmServer",)),
        (
            "argoproj.io",
            ("AnalysisTemplate", "ClusterAnalysisTemplate", "EventSource", "Experiment", "Sensor"),
        ),
        ("batch.volcano.sh", ("CronJob", "Job")),
        ("beat.k8s.elastic.co", ("Beat",)),
        ("cassandra.datastax.com", ("CassandraDatacenter",)),
        ("ceph.rook.io", ("CephCluster",)),
        ("clickhouse-keeper.altinity.com", ("ClickHouseKeeperInstallation",)),
        ("clickhouse.altinity.com", ("ClickHouseInstallation",)),
        ("dragonflydb.io", ("Dragonfly",)),
        ("elasticsearch.k8s.elastic.co", ("Elasticsearch",)),
        ("enterprisesearch.k8s.elastic.co", ("EnterpriseSearch",)),
        ("extensions.agents.x-k8s.io", ("SandboxTemplate",)),
        ("flink.apache.org", ("FlinkDeployment",)),
        ("flow.volcano.sh", ("JobTemplate",)),
        ("grafana.integreatly.org", ("Grafana",)),
        ("jaegertracing.io", ("Jaeger",)),
        ("jobset.x-k8s.io", ("JobSet",)),
        ("k8ssandra.io", ("K8ssandraCluster",)),
        (
            "kafka.strimzi.io",
            ("Kafka", "KafkaBridge", "KafkaConnect", "KafkaMirrorMaker2", "KafkaNodePool"),
        ),
        ("kibana.k8s.elastic.co", ("Kibana",)),
        (
            "kubeflow.org",
            ("JAXJob", "MPIJob", "MXJob", "PaddleJob", "PyTorchJob", "TFJob", "XGBoostJob"),
        ),
        ("kubevirt.io", ("VirtualMachine", "VirtualMachineInstance")),
        ("leaderworkerset.x-k8s.io", ("LeaderWorkerSet",)),
        ("logstash.k8s.elastic.co", ("Logstash",)),
        ("loki.grafana.com", ("LokiStack",)),
        ("maps.k8s.elastic.co", ("ElasticMapsServer",)),
        ("minio.min.io", ("Tenant",)),
        ("mongodbcommunity.mongodb.com", ("MongoDBCommunity",)),
        ("monitoring.coreos.com", ("Alertmanager", "Prometheus", "PrometheusAgent", "ThanosRuler")),
        ("opentelemetry.io", ("OpAMPBridge", "OpenTelemetryCollector")),
        ("operator.tigera.io", ("Installation",)),
        ("packageregistry.k8s.elastic.co", ("PackageRegistry",)),
        ("pgv2.percona.com", ("PerconaPGCluster",)),
        ("pkg.crossplane.io", ("DeploymentRuntimeConfig",)),
        ("planetscale.com", ("VitessCluster",)),
        ("postgres-operator.crunchydata.com", ("PostgresCluster",)),
        ("postgresql.cnpg.io", ("Cluster", "Pooler")),
        ("psmdb.percona.com", ("PerconaServerMongoDB",)),
        ("pxc.percona.com", ("PerconaXtraDBCluster",)),
        ("rabbitmq.com", ("RabbitmqCluster",)),
        ("serving.kserve.io", ("InferenceService",)),
        ("ray.io", ("RayCluster", "RayCronJob", "RayJob", "RayService")),
        (
            "redis.redis.opstreelabs.in",
            ("Redis", "RedisCluster", "RedisReplication", "RedisSentinel"),
        ),
        ("scylla.scylladb.com", ("ScyllaCluster", "ScyllaDBCluster")),
        ("sparkoperator.k8s.io", ("ScheduledSparkApplication", "SparkApplication", "SparkConnect")),
        ("starrocks.com", ("StarRocksCluster",)),
        ("tekton.dev", ("PipelineRun", "TaskRun")),
    )
    for kind in kinds
)


#: Kinds of the operators kmultiarch knows that make no pods of their own, though they hold
#: what pods are made of (images, tolerations, a nodeSelector, containers): (API group, kind)
#: -> why, from the operator's code. Known, so never warned ``unknown-pod-kind`` (nothing to
#: declare in ``spec.podSpecs``); docs/operators.md lists them. Some are read as the image
#: sources of a catalogued kind (an ImageCatalog for a CloudNativePG Cluster).
MAKES_NO_PODS: Mapping[tuple[str, str], str] = {
    ("kueue.x-k8s.io", "ResourceFlavor"): "Kueue copies a flavor's nodeLabels and tolerations "
    "into the pods of the workloads it admits on it (kubernetes-sigs/kueue pkg/podset/podset.go "
    "FromAssignment): those pods are their own workloads'",
    ("kueue.x-k8s.io", "ClusterQueue"): "a quota of flavors that admits workloads "
    "(kubernetes-sigs/kueue apis/kueue/v1beta1/clusterqueue_types.go)",
    ("kueue.x-k8s.io", "LocalQueue"): "a namespace's queue to a ClusterQueue "
    "(kubernetes-sigs/kueue apis/kueue/v1beta1/localqueue_types.go)",
    ("postgresql.cnpg.io", "ImageCatalog"): "the images a Cluster's spec.imageCatalogRef picks "
    "by major, a Pooler's spec.pgbouncer.imageCatalogRef by key (cloudnative-pg/cloudnative-pg "
    "internal/controller/cluster_image.go getRequestedImageInfo, pooler_image.go "
    "resolveImageFromCatalog): read for those pods",
    ("postgresql.cnpg.io", "ClusterImageCatalog"): "as ImageCatalog, cluster-wide",
    ("sriovnetwork.openshift.io", "SriovNetworkNodePolicy"): "its nodeSelector chooses the nodes "
    "whose network devices the operator's config daemon sets up (k8snetworkplumbingwg/"
    "sriov-network-operator controllers/sriovnetworknodepolicy_controller.go: "
    "SriovNetworkNodeStates, no pod)",
    ("serving.kserve.io", "ServingRuntime"): "the containers an InferenceService's predictor "
    "runs when its model format picks this runtime (kserve/kserve pkg/apis/serving/v1alpha1/"
    "servingruntime_types.go; pkg/controller/v1beta1/inferenceservice/components/"
    "predictor.go): the InferenceService's pods",
    ("serving.kserve.io", "ClusterServingRuntime"): "as ServingRuntime, cluster-wide",
}


class _BuiltInOperators(Mapping[tuple[str, str], OperatorKind]):
    """The built-in catalogue by (API group, kind), loaded on the first question a membership
    test cannot answer: a run whose stream holds no catalogued kind never imports it."""

    def __init__(self) -> None:
        self._table: dict[tuple[str, str], OperatorKind] | None = None

    def _loaded(self) -> dict[tuple[str, str], OperatorKind]:
        if self._table is None:
            from kmultiarch.core.operators.catalogue import CATALOGUE

            self._table = catalogue_by_kind(CATALOGUE)
        return self._table

    def __contains__(self, key: object) -> bool:
        return key in CATALOGUE_KINDS

    def __getitem__(self, key: tuple[str, str]) -> OperatorKind:
        if key not in CATALOGUE_KINDS:
            raise KeyError(key)
        return self._loaded()[key]

    def __iter__(self) -> Iterator[tuple[str, str]]:
        return iter(self._loaded())

    def __len__(self) -> int:
        return len(CATALOGUE_KINDS)


_BUILT_IN = _BuiltInOperators()


def built_in_operators() -> Mapping[tuple[str, str], OperatorKind]:
    """The built-in catalogue by (API group, kind), loaded lazily (one shared mapping)."""
    return _BUILT_IN
