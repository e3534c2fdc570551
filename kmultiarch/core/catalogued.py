"""Which kinds the built-in catalogue holds, and the catalogue by kind, loaded on demand.

The catalogue (:mod:`kmultiarch.core.catalogue`) is hundreds of entries of data; most streams
hold none of its kinds. :data:`CATALOGUE_KINDS` writes out its (API group, kind) pairs, so
that :func:`built_in_operators` answers "is this kind catalogued?" without importing it, and
imports it for the first kind that is (tests/unit/test_operators.py holds the two equal).
Apart from :mod:`kmultiarch.core.operators` (the model), which the catalogue imports: no
import cycle, lazy or not.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from kmultiarch.core.operators import OperatorKind, catalogue_by_kind

__all__ = ["CATALOGUE_KINDS", "built_in_operators"]

#: The (API group, kind) of every entry of the built-in catalogue
#: (:data:`kmultiarch.core.catalogue.CATALOGUE`), written out so that asking whether a kind is
#: catalogued never imports the catalogue (tests/unit/test_operators.py holds the two equal).
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
        ("elasticsearch.k8s.elastic.co", ("Elasticsearch",)),
        ("enterprisesearch.k8s.elastic.co", ("EnterpriseSearch",)),
        ("extensions.agents.x-k8s.io", ("SandboxTemplate",)),
        ("flink.apache.org", ("FlinkDeployment",)),
        ("flow.volcano.sh", ("JobTemplate",)),
        ("jaegertracing.io", ("Jaeger",)),
        ("jobset.x-k8s.io", ("JobSet",)),
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
        ("scylla.scylladb.com", ("ScyllaCluster",)),
        ("sparkoperator.k8s.io", ("ScheduledSparkApplication", "SparkApplication", "SparkConnect")),
        ("starrocks.com", ("StarRocksCluster",)),
        ("tekton.dev", ("PipelineRun", "TaskRun")),
    )
    for kind in kinds
)


class _BuiltInOperators(Mapping[tuple[str, str], OperatorKind]):
    """The built-in catalogue by (API group, kind), loaded on the first question a membership
    test cannot answer: a run whose stream holds no catalogued kind never imports it."""

    def __init__(self) -> None:
        self._table: dict[tuple[str, str], OperatorKind] | None = None

    def _loaded(self) -> dict[tuple[str, str], OperatorKind]:
        if self._table is None:
            from kmultiarch.core.catalogue import CATALOGUE

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
