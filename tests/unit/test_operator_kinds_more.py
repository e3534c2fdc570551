"""More kinds of the catalogue (issue 29, item 4), from the operators' own samples
(tests/fixtures/operators: each file names its repository and commit). Each used to pass in
silence ("check passed")."""

from __future__ import annotations

from pathlib import Path

import yaml
from support.operators import ARCH_IN_AMD64, ARM64_TOLERATION, resolve

from kmultiarch.api import mutate_text
from kmultiarch.core.findings import (
    IMAGE_CHOSEN_BY_OPERATOR,
    SCHEDULING_CONFLICT,
    UNWRITABLE_CONSTRAINT,
)
from kmultiarch.engine import EngineResult
from kmultiarch.io.config import parse_policy_text

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "operators"


def _run(text: str) -> tuple[list[dict[str, object]], EngineResult]:
    result = mutate_text(text, resolve=resolve)
    return list(yaml.safe_load_all(result.stream())), result


def _fixture(name: str) -> str:
    return (FIXTURES / name).read_text(encoding="utf-8")


# -- Volcano: CronJob (batch.volcano.sh), JobTemplate (flow.volcano.sh) -----------------------


def test_a_volcano_cronjob_sample_places_its_job_templates_tasks() -> None:
    """cronjob_controller_util.go: the Job's spec is spec.jobTemplate.spec."""
    text = _fixture("volcano-cronjob.yaml").replace("busybox:latest", "registry.test/bb-amd64:1")
    (cronjob,), _ = _run(text)
    task = cronjob["spec"]["jobTemplate"]["spec"]["tasks"][0]  # type: ignore[index]
    assert task["template"]["spec"]["affinity"] == ARCH_IN_AMD64


def test_a_volcano_flow_job_template_is_a_jobs_spec() -> None:
    """flow/v1alpha1/jobtemplate_types.go: JobTemplate.spec is a batch.volcano.sh JobSpec."""
    (template,), _ = _run(
        "apiVersion: flow.volcano.sh/v1alpha1\nkind: JobTemplate\nmetadata: {name: a}\nspec:\n"
        "  minAvailable: 1\n  tasks:\n  - name: t\n    replicas: 1\n    template:\n"
        "      spec:\n        containers: [{name: c, image: registry.test/a-amd64:1}]\n"
    )
    spec = template["spec"]["tasks"][0]["template"]["spec"]  # type: ignore[index]
    assert spec["affinity"] == ARCH_IN_AMD64


# -- OT-Container-Kit redis-operator -----------------------------------------------------------


def test_a_redis_standalone_sample_is_placed_by_its_spec() -> None:
    """redis-standalone.go generateRedisStandaloneParams: spec.{nodeSelector,affinity,
    tolerations}; the exporter (disabled in the sample) is not judged."""
    text = _fixture("opstree-redis-standalone.yaml").replace(
        "quay.io/opstree/redis-exporter:latest", "registry.test/exporter-amd64:1"
    )
    (redis,), _ = _run(text)
    assert redis["spec"]["tolerations"] == [ARM64_TOLERATION]  # type: ignore[index]
    assert "affinity" not in redis["spec"]  # type: ignore[operator]
    (redis,), _ = _run(text.replace("enabled: false", "enabled: true"))
    assert redis["spec"]["affinity"] == ARCH_IN_AMD64  # type: ignore[index]


def test_a_redis_cluster_sample_places_leader_and_follower_by_their_own_fields() -> None:
    """redis-cluster.go CreateRedisLeader/CreateRedisFollower: spec.redisLeader.{affinity,
    nodeSelector,tolerations}, spec.redisFollower's; RedisCluster has no spec.affinity."""
    text = _fixture("opstree-redis-cluster.yaml").replace(
        "quay.io/opstree/redis:latest", "registry.test/redis-amd64:7"
    )
    (cluster,), _ = _run(text)
    spec = cluster["spec"]
    assert spec["redisLeader"] == {"affinity": ARCH_IN_AMD64}  # type: ignore[index]
    assert spec["redisFollower"] == {"affinity": ARCH_IN_AMD64}  # type: ignore[index]
    assert "affinity" not in spec  # type: ignore[operator]


def test_a_redis_sentinel_sample_selecting_arm64_for_an_amd64_image_is_a_conflict() -> None:
    text = _fixture("opstree-redis-sentinel.yaml").replace(
        "quay.io/opstree/redis-sentinel:latest", "registry.test/sentinel-amd64:7"
    )
    text = text.replace("spec:\n", "spec:\n  nodeSelector: {kubernetes.io/arch: arm64}\n", 1)
    (sentinel,), result = _run(text)
    assert sentinel == yaml.safe_load(text.split("\n", 1)[1])
    assert [f.rule for f in result.findings] == [SCHEDULING_CONFLICT]


def test_a_redis_replications_sentinel_is_placed_by_spec_sentinel_on_its_own_image() -> None:
    """redisreplication_sentinel.go buildSentinelPodTemplate: spec.sentinel.{affinity,
    tolerations,nodeSelector}, Image: spec.sentinel.image."""
    text = _fixture("opstree-redis-replication-sentinel.yaml").replace(
        "quay.io/opstree/redis-sentinel:latest", "registry.test/sentinel-amd64:7"
    )
    (replication,), _ = _run(text)
    spec = replication["spec"]
    assert spec["tolerations"] == [ARM64_TOLERATION]  # type: ignore[index]
    sentinel_affinity = spec["sentinel"]["affinity"]  # type: ignore[index]
    assert sentinel_affinity["nodeAffinity"] == ARCH_IN_AMD64["nodeAffinity"]
    assert "podAntiAffinity" in sentinel_affinity  # the sample's own rule kept


# -- Altinity clickhouse-operator --------------------------------------------------------------


def test_a_clickhouse_installation_samples_pod_template_is_its_pods_spec() -> None:
    """type_templates.go PodTemplate.Spec: a PodSpec, the pod spec of the hosts naming it."""
    text = _fixture("altinity-chi-pod-template.yaml").replace(
        "clickhouse/clickhouse-server:24.8", "registry.test/clickhouse-amd64:24.8"
    )
    (chi,), _ = _run(text)
    template = chi["spec"]["templates"]["podTemplates"][0]  # type: ignore[index]
    assert template["spec"]["affinity"] == ARCH_IN_AMD64


def test_a_clickhouse_pod_template_without_its_container_runs_the_default_image() -> None:
    """container.go EnsureAppContainer: clickhouse/clickhouse-server:latest is added."""
    _, result = _run(
        "apiVersion: clickhouse.altinity.com/v1\nkind: ClickHouseInstallation\n"
        "metadata: {name: c}\nspec:\n  defaults: {templates: {podTemplate: p}}\n"
        "  templates:\n    podTemplates:\n"
        "    - name: p\n      spec: {nodeSelector: {disk: ssd}}\n"
    )
    assert {str(r) for r in result.resolutions} == {"docker.io/clickhouse/clickhouse-server:latest"}


def test_a_clickhouse_pod_template_with_a_zone_gets_no_affinity_and_a_warning() -> None:
    """pod.go NormalizePodTemplate: zone.values add a node selector term ORed with the
    template's own; an arch term written there would not hold. It used to pass in silence;
    now the template is judged (a multi-arch one gets its toleration) and an amd64-only one
    is an unwritable-constraint warning naming the template."""
    text = (
        "apiVersion: clickhouse.altinity.com/v1\nkind: ClickHouseInstallation\n"
        "metadata: {name: c}\nspec:\n  configuration:\n    clusters:\n"
        "    - {name: a, templates: {podTemplate: p}}\n"
        "    - {name: b, templates: {podTemplate: q}}\n"
        "  templates:\n    podTemplates:\n    - name: p\n"
        "      zone: {values: [us-east-1a]}\n      spec:\n        containers:\n"
        "        - {name: clickhouse, image: registry.test/clickhouse-amd64:24.8}\n"
        "    - name: q\n      spec:\n        containers:\n"
        "        - {name: clickhouse, image: registry.test/clickhouse-amd64:24.8}\n"
    )
    (chi,), result = _run(text)
    zoned, plain = chi["spec"]["templates"]["podTemplates"]  # type: ignore[index]
    assert zoned == yaml.safe_load(text)["spec"]["templates"]["podTemplates"][0]
    assert plain["spec"]["affinity"] == ARCH_IN_AMD64  # the zone is the template's own
    (finding,) = result.findings
    assert finding.rule == UNWRITABLE_CONSTRAINT
    assert "spec.templates.podTemplates[0].spec" in finding.message
    (chi,), result = _run(text.replace("clickhouse-amd64", "clickhouse"))
    zoned = chi["spec"]["templates"]["podTemplates"][0]  # type: ignore[index]
    assert zoned["spec"]["tolerations"] == [ARM64_TOLERATION]
    assert result.findings == []


def test_a_clickhouse_keeper_samples_template_keeps_its_anti_affinity() -> None:
    text = _fixture("altinity-chk-extended-3-nodes.yaml").replace(
        '"clickhouse/clickhouse-keeper:latest"', "registry.test/keeper-amd64:24"
    )
    (chk,), _ = _run(text)
    affinity = chk["spec"]["templates"]["podTemplates"][0]["spec"]["affinity"]  # type: ignore[index]
    assert affinity["nodeAffinity"] == ARCH_IN_AMD64["nodeAffinity"]
    assert "podAntiAffinity" in affinity


# -- Zalando postgres-operator ----------------------------------------------------------------


def test_a_zalando_postgresql_sample_gets_a_bare_node_affinity_for_its_images() -> None:
    """k8sres.go generateStatefulSet: Image spec.dockerImage; nodeAffinity(node readiness
    label, spec.nodeAffinity): a bare NodeAffinity; initContainers run in the pod."""
    text = _fixture("zalando-complete-postgres-manifest.yaml").replace(
        "image: busybox", "image: registry.test/busybox-amd64:1"
    )
    (postgresql,), _ = _run(text)
    assert postgresql["spec"]["nodeAffinity"] == ARCH_IN_AMD64["nodeAffinity"]  # type: ignore[index]


def test_a_zalando_postgresql_without_docker_image_runs_the_operators_spilo() -> None:
    text = (
        "apiVersion: acid.zalan.do/v1\nkind: postgresql\nmetadata: {name: acid-minimal}\n"
        "spec: {teamId: acid, numberOfInstances: 2, postgresql: {version: '17'}}\n"
    )
    (postgresql,), result = _run(text)
    assert postgresql == yaml.safe_load(text)
    (finding,) = result.findings
    assert finding.rule == IMAGE_CHOSEN_BY_OPERATOR and "spec.dockerImage" in finding.message


def test_a_zalando_pooler_or_logical_backup_runs_an_image_of_the_operators() -> None:
    """connection_pooler.go and generateLogicalBackupJob: their pods take spec.tolerations."""
    base = (
        "apiVersion: acid.zalan.do/v1\nkind: postgresql\nmetadata: {name: a}\n"
        "spec: {dockerImage: 'registry.test/spilo:4', enableLogicalBackup: true}\n"
    )
    (postgresql,), result = _run(base)
    assert [f.rule for f in result.findings] == [IMAGE_CHOSEN_BY_OPERATOR]
    assert "tolerations" not in postgresql["spec"]  # type: ignore[operator]


# -- MongoDB Community operator ---------------------------------------------------------------

_MONGODB_IMAGES = (
    "  podSpecs:\n  - apiVersion: mongodbcommunity.mongodb.com/v1\n    kind: MongoDBCommunity\n"
    "    defaultImages: [quay.io/mongodb/mongodb-community-server:7.0.12-ubi8,"
    " quay.io/mongodb/mongodb-agent-amd64:108.0.2]\n"
)


def test_a_mongodb_community_samples_agent_is_chosen_by_the_operator_until_declared() -> None:
    """mongodbstatefulset.go: mongod and the agent run the operator's MONGODB_IMAGE and
    AGENT_IMAGE; spec.statefulSet.spec is merged over its StatefulSet."""
    text = _fixture("mongodb-community-hostpath.yaml")
    documents, result = _run(text)
    assert documents[0] == next(yaml.safe_load_all(text))
    messages = [f.message for f in result.findings if f.rule == IMAGE_CHOSEN_BY_OPERATOR]
    assert any("mongodb-agent" in message for message in messages)
    policy = parse_policy_text(
        "apiVersion: kmultiarch.dev/v1alpha1\nkind: MultiArchPolicy\nmetadata: {name: p}\n"
        f"spec:\n{_MONGODB_IMAGES}",
        "policy.yaml",
    )
    result = mutate_text(text, policy, resolve=resolve)
    mongodb = next(yaml.safe_load_all(result.stream()))
    pod = mongodb["spec"]["statefulSet"]["spec"]["template"]["spec"]
    assert pod["affinity"] == ARCH_IN_AMD64
    assert pod["initContainers"][0]["image"] == "busybox"  # the sample's own, kept


# -- Percona Operator for PostgreSQL ----------------------------------------------------------


def test_a_percona_pg_samples_init_container_is_the_operators_until_named() -> None:
    """percona/k8s/util.go InitImage: the operator's own image unless initContainer.image."""
    text = _fixture("percona-pg-cr.yaml")
    (cluster,), result = _run(text)
    assert cluster["spec"]["instances"] == yaml.safe_load(text)["spec"]["instances"]  # type: ignore[index]
    assert any(
        f.rule == IMAGE_CHOSEN_BY_OPERATOR and "initContainer.image" in f.message
        for f in result.findings
    )


def test_a_percona_pg_samples_instances_and_pgbouncer_are_placed_by_their_own_fields() -> None:
    """PGInstanceSetSpec.ToCrunchy: instances[].affinity, tolerations; PGBouncerSpec's."""
    text = _fixture("percona-pg-cr.yaml").replace(
        "  image: docker.io/perconalab/percona-postgresql-operator:main-ppg18-postgres",
        "  image: registry.test/postgres-amd64:18\n"
        "  initContainer: {image: 'registry.test/pg-operator:2'}",
    )
    (cluster,), _ = _run(text)
    instance_affinity = cluster["spec"]["instances"][0]["affinity"]  # type: ignore[index]
    assert instance_affinity["nodeAffinity"] == ARCH_IN_AMD64["nodeAffinity"]
    assert "podAntiAffinity" in instance_affinity  # the sample's own, kept
    bouncer = cluster["spec"]["proxy"]["pgBouncer"]  # type: ignore[index]
    assert bouncer["tolerations"] == [ARM64_TOLERATION]


# -- KubeVirt: spec.architecture ---------------------------------------------------------------

_VIRT_LAUNCHER = (
    "  podSpecs:\n  - apiVersion: kubevirt.io/v1\n    kind: VirtualMachine\n"
    "    defaultImages: [quay.io/kubevirt/virt-launcher:v1.5.0]\n"
)


def _vm(
    architecture: str, disk: str, policy: str = _VIRT_LAUNCHER
) -> tuple[list[dict[str, object]], EngineResult]:
    text = (
        "apiVersion: kubevirt.io/v1\nkind: VirtualMachine\nmetadata: {name: vm}\nspec:\n"
        "  runStrategy: Always\n  template:\n    spec:\n"
        f"      architecture: {architecture}\n"
        "      domain: {devices: {disks: [{name: d, disk: {bus: virtio}}]}}\n"
        f"      volumes: [{{name: d, containerDisk: {{image: '{disk}'}}}}]\n"
    )
    chosen = parse_policy_text(
        "apiVersion: kmultiarch.dev/v1alpha1\nkind: MultiArchPolicy\nmetadata: {name: p}\n"
        f"spec:\n{policy}",
        "policy.yaml",
    )
    result = mutate_text(text, chosen, resolve=resolve)
    return list(yaml.safe_load_all(result.stream())), result


def test_a_vm_naming_an_architecture_its_disk_does_not_run_on_is_a_conflict() -> None:
    """nodeselectorrenderer.go: the launcher pod selects kubernetes.io/arch:
    lower(spec.architecture); an amd64-only container disk cannot run there."""
    (vm,), result = _vm("arm64", "registry.test/disk-amd64:1")
    assert "affinity" not in vm["spec"]["template"]["spec"]  # type: ignore[index]
    assert [f.rule for f in result.findings] == [SCHEDULING_CONFLICT]


def test_a_vm_on_arm64_gets_the_arm64_toleration_only() -> None:
    """The architecture selects arm64 nodes: the toleration lets the pod onto them; no amd64
    constraint, and the selector the operator adds is not written."""
    (vm,), result = _vm("ARM64", "registry.test/disk:1")
    spec = vm["spec"]["template"]["spec"]  # type: ignore[index]
    assert spec["tolerations"] == [ARM64_TOLERATION]
    assert "nodeSelector" not in spec and "affinity" not in spec
    assert result.findings == []


# -- Strimzi KafkaConnect with spec.build -----------------------------------------------------

#: After strimzi/strimzi-kafka-operator packaging/examples/connect/kafka-connect-build.yaml.
_CONNECT_BUILD = """\
apiVersion: kafka.strimzi.io/v1beta2
kind: KafkaConnect
metadata: {name: my-connect-cluster}
spec:
  version: 4.0.0
  replicas: 1
  image: registry.test/kafka-connect:4.0.0
  bootstrapServers: my-cluster-kafka-bootstrap:9093
  build:
    output: {type: docker, image: registry.test/connect-built-amd64:latest}
    plugins:
    - name: camel-timer
      artifacts:
      - {type: tgz, url: 'https://repo.example/camel-timer.tgz'}
"""


def test_a_kafka_connect_with_a_build_is_not_judged_on_its_output_image_as_pushed_before() -> None:
    """ConnectBuildOperator: the Connect pods run output.image@<the new build's digest>, built
    for the build pod's node's architecture (tests/unit/test_operator_computed.py holds the
    rule); the image the registry holds now says nothing of it."""
    (connect,), result = _run(_CONNECT_BUILD)
    assert connect == yaml.safe_load(_CONNECT_BUILD)
    # The build pod runs Kaniko, the operator's image: not decided, said; the Connect pods'
    # architecture is the build's: said.
    assert sorted(f.rule for f in result.findings) == [
        IMAGE_CHOSEN_BY_OPERATOR,
        UNWRITABLE_CONSTRAINT,
    ]


def test_a_kafka_connect_without_a_build_runs_its_image_and_has_no_build_pod() -> None:
    text = _CONNECT_BUILD.split("  build:", maxsplit=1)[0]
    (connect,), result = _run(text)
    assert connect["spec"]["template"] == {"pod": {"tolerations": [ARM64_TOLERATION]}}  # type: ignore[index]
    assert result.findings == []


# -- KubeRay: a RayJob's submitter pod ----------------------------------------------------------

#: After ray-project/kuberay ray-operator/config/samples/ray-job.custom-head-svc.yaml's shape:
#: a RayJob whose submitter pod template is its own.
_RAY_JOB = """\
apiVersion: ray.io/v1
kind: RayJob
metadata: {name: rayjob-sample}
spec:
  entrypoint: python /home/ray/samples/sample_code.py
  rayClusterSpec:
    headGroupSpec:
      rayStartParams: {}
      template:
        spec:
          containers: [{name: ray-head, image: registry.test/ray:2.41}]
  submitterPodTemplate:
    spec:
      restartPolicy: Never
      containers: [{name: my-submitter, image: registry.test/submitter-amd64:1}]
"""


def test_a_ray_jobs_own_submitter_pod_template_is_placed() -> None:
    """rayjob_controller.go getSubmitterTemplate: the submitter Job's pod is
    spec.submitterPodTemplate (K8sJobMode, the default); it was not judged at all."""
    (job,), result = _run(_RAY_JOB)
    submitter = job["spec"]["submitterPodTemplate"]["spec"]  # type: ignore[index]
    assert submitter["affinity"] == ARCH_IN_AMD64
    head = job["spec"]["rayClusterSpec"]["headGroupSpec"]["template"]["spec"]  # type: ignore[index]
    assert head["tolerations"] == [ARM64_TOLERATION]
    assert result.findings == []


def test_a_ray_job_submitted_over_http_makes_no_submitter_pod() -> None:
    text = _RAY_JOB.replace("  entrypoint:", "  submissionMode: HTTPMode\n  entrypoint:")
    (job,), _ = _run(text)
    assert "affinity" not in job["spec"]["submitterPodTemplate"]["spec"]  # type: ignore[index]
