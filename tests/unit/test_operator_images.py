"""Images exactly as the operators compute them (issue 29, item 3), and the Jaeger components'
affinity (item 1): each case names the operator's function it mirrors."""

from __future__ import annotations

import pytest
import yaml
from support.operators import ARCH_IN_AMD64, resolve

from kmultiarch.api import mutate_text
from kmultiarch.core.findings import IMAGE_CHOSEN_BY_OPERATOR
from kmultiarch.engine import EngineResult


def _run(text: str) -> tuple[list[dict[str, object]], EngineResult]:
    result = mutate_text(text, resolve=resolve)
    return list(yaml.safe_load_all(result.stream())), result


def _images(text: str) -> set[str]:
    return {str(reference) for reference in _run(text)[1].resolutions}


# -- the Prometheus Operator: BuildImagePath ---------------------------------------------------


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        # makeStatefulSetSpec: "v" + the semver of spec.version
        ("version: 2.45.0", "quay.io/prometheus/prometheus:v2.45.0"),
        ("version: v2.45.0", "quay.io/prometheus/prometheus:v2.45.0"),
        # the deprecated baseImage, tag and sha: sha before tag before version
        ("{version: 2.45.0, tag: v2.44.1}", "quay.io/prometheus/prometheus:v2.44.1"),
        (
            "{version: 2.45.0, tag: v2.44.1, sha: " + "a" * 64 + "}",
            "quay.io/prometheus/prometheus@sha256:" + "a" * 64,
        ),
        (
            "{version: 2.45.0, baseImage: mirror.test/prom}",
            "mirror.test/prom:v2.45.0",
        ),
        ("{version: 2.45.0, image: 'registry.test/prom:1'}", "registry.test/prom:1"),
    ],
)
def test_a_prometheus_runs_the_image_build_image_path_makes(spec: str, expected: str) -> None:
    text = (
        "apiVersion: monitoring.coreos.com/v1\nkind: Prometheus\nmetadata: {name: p}\n"
        f"spec: {spec if spec.startswith('{') else '{' + spec + '}'}\n"
    )
    assert _images(text) == {expected}


def test_a_prometheus_with_thanos_runs_the_thanos_sidecar_too() -> None:
    """createThanosContainer: spec.thanos adds a sidecar, thanos.image else
    quay.io/thanos/thanos:<thanos.version>; an amd64-only sidecar keeps the pods on amd64."""
    (prometheus,), result = _run(
        "apiVersion: monitoring.coreos.com/v1\nkind: Prometheus\nmetadata: {name: p}\n"
        "spec:\n  version: v2.45.0\n  thanos: {image: registry.test/thanos-amd64:0.36}\n"
    )
    assert {str(r) for r in result.resolutions} == {
        "quay.io/prometheus/prometheus:v2.45.0",
        "registry.test/thanos-amd64:0.36",
    }
    assert prometheus["spec"]["affinity"] == ARCH_IN_AMD64  # type: ignore[index]
    assert _images(
        "apiVersion: monitoring.coreos.com/v1\nkind: Prometheus\nmetadata: {name: p}\n"
        "spec: {version: v2.45.0, thanos: {version: v0.36.1}}\n"
    ) == {"quay.io/prometheus/prometheus:v2.45.0", "quay.io/thanos/thanos:v0.36.1"}


def test_a_thanos_sidecar_of_the_operators_default_version_is_chosen_by_the_operator() -> None:
    _, result = _run(
        "apiVersion: monitoring.coreos.com/v1\nkind: Prometheus\nmetadata: {name: p}\n"
        "spec: {version: v2.45.0, thanos: {}}\n"
    )
    (finding,) = result.findings
    assert finding.rule == IMAGE_CHOSEN_BY_OPERATOR and "spec.thanos.image" in finding.message


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ("{version: v0.27.0}", "quay.io/prometheus/alertmanager:v0.27.0"),
        ("{version: v0.27.0, tag: v0.26.0}", "quay.io/prometheus/alertmanager:v0.26.0"),
        ("{version: v0.27.0, baseImage: mirror.test/am}", "mirror.test/am:v0.27.0"),
    ],
)
def test_an_alertmanager_honours_base_image_tag_and_sha(spec: str, expected: str) -> None:
    text = (
        "apiVersion: monitoring.coreos.com/v1\nkind: Alertmanager\nmetadata: {name: a}\n"
        f"spec: {spec}\n"
    )
    assert _images(text) == {expected}


# -- ECK: container.go ImageRepository ------------------------------------------------------------


@pytest.mark.parametrize(
    ("kind", "version", "expected"),
    [
        ("Agent", "8.15.0", "docker.elastic.co/beats/elastic-agent:8.15.0"),
        ("Agent", "9.1.0", "docker.elastic.co/elastic-agent/elastic-agent:9.1.0"),
        (
            "ElasticMapsServer",
            "8.15.0",
            "docker.elastic.co/elastic-maps-service/elastic-maps-server-ubi:8.15.0",
        ),
        (
            "ElasticMapsServer",
            "8.11.0",
            "docker.elastic.co/elastic-maps-service/elastic-maps-server-ubi8:8.11.0",
        ),
        (
            "ElasticMapsServer",
            "7.17.10",
            "docker.elastic.co/elastic-maps-service/elastic-maps-server-ubi8:7.17.10",
        ),
        (
            "ElasticMapsServer",
            "8.16.0",
            "docker.elastic.co/elastic-maps-service/elastic-maps-server:8.16.0",
        ),
        (
            "PackageRegistry",
            "8.17.0",
            "docker.elastic.co/package-registry/distribution:lite-8.17.0",
        ),
    ],
)
def test_an_eck_resource_runs_the_image_container_go_names(
    kind: str, version: str, expected: str
) -> None:
    group = {
        "Agent": "agent.k8s.elastic.co/v1alpha1",
        "ElasticMapsServer": "maps.k8s.elastic.co/v1alpha1",
        "PackageRegistry": "packageregistry.k8s.elastic.co/v1alpha1",
    }[kind]
    workload = "  deployment: {}\n" if kind == "Agent" else ""
    text = (
        f"apiVersion: {group}\nkind: {kind}\nmetadata: {{name: x}}\n"
        f"spec:\n  version: {version}\n{workload}"
    )
    assert _images(text) == {expected}


# -- OpenTelemetry: initContainers, the target allocator, sidecar mode -------------------------


def test_an_otel_collectors_init_containers_are_judged() -> None:
    (collector,), _ = _run(
        "apiVersion: opentelemetry.io/v1beta1\nkind: OpenTelemetryCollector\n"
        "metadata: {name: c}\nspec:\n  image: registry.test/otelcol:1\n"
        "  initContainers: [{name: init, image: registry.test/init-amd64:1}]\n"
    )
    assert collector["spec"]["affinity"] == ARCH_IN_AMD64  # type: ignore[index]


def test_an_otel_target_allocator_is_placed_by_its_own_fields() -> None:
    """targetallocator.go: its Deployment takes spec.targetAllocator.{nodeSelector,affinity,
    tolerations,image}, when enabled."""
    text = (
        "apiVersion: opentelemetry.io/v1beta1\nkind: OpenTelemetryCollector\n"
        "metadata: {name: c}\nspec:\n  mode: statefulset\n  image: registry.test/otelcol:1\n"
        "  targetAllocator:\n    enabled: true\n    image: registry.test/ta-amd64:1\n"
    )
    (collector,), _ = _run(text)
    assert collector["spec"]["targetAllocator"]["affinity"] == ARCH_IN_AMD64  # type: ignore[index]
    assert "affinity" not in collector["spec"]  # type: ignore[operator]
    disabled = text.replace("enabled: true", "enabled: false")
    (collector,), _ = _run(disabled)
    assert collector["spec"]["targetAllocator"] == {  # type: ignore[index]
        "enabled": False,
        "image": "registry.test/ta-amd64:1",
    }


def test_an_otel_collector_in_sidecar_mode_places_nothing() -> None:
    """collector.go Build: mode sidecar builds no workload (the collector is injected)."""
    text = (
        "apiVersion: opentelemetry.io/v1beta1\nkind: OpenTelemetryCollector\n"
        "metadata: {name: c}\nspec:\n  mode: sidecar\n  image: registry.test/otelcol-amd64:1\n"
    )
    (collector,), result = _run(text)
    assert collector == yaml.safe_load(text)
    assert result.pods == []


# -- Jaeger: a component's affinity replaces spec.affinity ------------------------------------


def test_a_jaeger_component_with_its_own_affinity_gets_the_constraint_there_too() -> None:
    """util.Merge: the component's affinity wins over spec.affinity; tolerations append."""
    (jaeger,), _ = _run(
        "apiVersion: jaegertracing.io/v1\nkind: Jaeger\nmetadata: {name: j}\nspec:\n"
        "  strategy: production\n  collector:\n    image: registry.test/collector-amd64:1\n"
        "    affinity:\n      podAntiAffinity:\n"
        "        preferredDuringSchedulingIgnoredDuringExecution: []\n"
        "  query: {tolerations: [{key: q, operator: Exists}]}\n"
    )
    spec = jaeger["spec"]  # type: ignore[index]
    assert spec["affinity"] == ARCH_IN_AMD64
    assert spec["collector"]["affinity"]["nodeAffinity"] == ARCH_IN_AMD64["nodeAffinity"]
    assert "podAntiAffinity" in spec["collector"]["affinity"]
    assert spec["query"] == {"tolerations": [{"key": "q", "operator": "Exists"}]}


def test_jaegers_agent_and_storage_job_images_are_judged() -> None:
    assert _images(
        "apiVersion: jaegertracing.io/v1\nkind: Jaeger\nmetadata: {name: j}\nspec:\n"
        "  agent: {strategy: DaemonSet, image: registry.test/agent:1}\n"
        "  storage:\n    esIndexCleaner: {image: registry.test/cleaner:1}\n"
        "    esRollover: {image: registry.test/rollover:1}\n"
        "    dependencies: {image: registry.test/deps:1}\n"
    ) == {
        "registry.test/agent:1",
        "registry.test/cleaner:1",
        "registry.test/rollover:1",
        "registry.test/deps:1",
    }


def test_a_policy_says_templates_and_conditions_as_the_built_in_entries_do() -> None:
    from kmultiarch.io.config import parse_policy_text

    policy = parse_policy_text(
        "apiVersion: kmultiarch.dev/v1alpha1\nkind: MultiArchPolicy\nmetadata: {name: p}\n"
        "spec:\n  podSpecs:\n  - apiVersion: example.com/v1\n    kind: Db\n    placements:\n"
        "    - path: /spec\n      unless: {/spec/mode: external}\n      images:\n"
        "      - [/spec/image, 'registry.test/db:{/spec/version|v}']\n"
        "      - {image: [/spec/backup/image, 'registry.test/backup-amd64:{/spec/version}'],"
        " when: {/spec/backup: null}}\n",
        "policy.yaml",
    )
    text = "apiVersion: example.com/v1\nkind: Db\nmetadata: {name: d}\nspec: {version: '1.2'}\n"
    result = mutate_text(text, policy, resolve=resolve)
    assert {str(r) for r in result.resolutions} == {"registry.test/db:v1.2"}
    result = mutate_text(text.replace("}\n", ", backup: {}}\n"), policy, resolve=resolve)
    assert {str(r) for r in result.resolutions} == {
        "registry.test/db:v1.2",
        "registry.test/backup-amd64:1.2",
    }
    result = mutate_text(text.replace("}\n", ", mode: external}\n"), policy, resolve=resolve)
    assert result.pods == []


def test_eck_stack_monitoring_sidecars_are_judged() -> None:
    """stackmon/sidecar.go: Metricbeat and Filebeat sidecars of the resource's version when
    its metrics or logs go to an Elasticsearch."""
    assert _images(
        "apiVersion: logstash.k8s.elastic.co/v1alpha1\nkind: Logstash\nmetadata: {name: l}\n"
        "spec:\n  version: 8.15.0\n  monitoring:\n"
        "    metrics: {elasticsearchRefs: [{name: monitoring}]}\n"
    ) == {
        "docker.elastic.co/logstash/logstash:8.15.0",
        "docker.elastic.co/beats/metricbeat:8.15.0",
    }


def test_a_flink_role_pod_runs_the_common_templates_sidecars() -> None:
    """FlinkConfigBuilder: a role's pod is the common template merged with the role's: an
    amd64-only sidecar of the common template keeps the JobManager on amd64 too (through the
    common template, which the JobManager's, setting no scheduling field, takes)."""
    (flink,), _ = _run(
        "apiVersion: flink.apache.org/v1beta1\nkind: FlinkDeployment\nmetadata: {name: f}\n"
        "spec:\n  image: registry.test/flink:1.20\n  podTemplate:\n    spec:\n"
        "      containers: [{name: sidecar, image: registry.test/sidecar-amd64:1}]\n"
        "  jobManager:\n    podTemplate:\n      spec:\n"
        "        containers: [{name: flink-main-container}]\n"
    )
    spec = flink["spec"]  # type: ignore[index]
    assert spec["podTemplate"]["spec"]["affinity"] == ARCH_IN_AMD64
    # The JobManager's template sets no scheduling field: its pods take the common one's.
    assert "affinity" not in spec["jobManager"]["podTemplate"]["spec"]


def test_an_elasticsearch_keeps_ecks_default_anti_affinity_when_affinity_is_written() -> None:
    """podtemplate.go WithAffinity sets DefaultAffinity (prefer one pod of the cluster per
    host) only when the pod template has no affinity: writing the arch constraint alone would
    cost the user that default, so it is written beside it."""
    (es,), _ = _run(
        "apiVersion: elasticsearch.k8s.elastic.co/v1\nkind: Elasticsearch\n"
        "metadata: {name: quickstart}\nspec:\n  version: 8.15.0\n"
        "  image: registry.test/es-amd64:8.15.0\n  nodeSets:\n  - {name: default, count: 3}\n"
    )
    affinity = es["spec"]["nodeSets"][0]["podTemplate"]["spec"]["affinity"]  # type: ignore[index]
    assert affinity["nodeAffinity"] == ARCH_IN_AMD64["nodeAffinity"]
    assert affinity["podAntiAffinity"] == {
        "preferredDuringSchedulingIgnoredDuringExecution": [
            {
                "weight": 100,
                "podAffinityTerm": {
                    "labelSelector": {
                        "matchLabels": {"elasticsearch.k8s.elastic.co/cluster-name": "quickstart"}
                    },
                    "topologyKey": "kubernetes.io/hostname",
                },
            }
        ]
    }
    # A template with an affinity of its own already replaced the default: left as it is.
    (es,), _ = _run(
        "apiVersion: elasticsearch.k8s.elastic.co/v1\nkind: Elasticsearch\n"
        "metadata: {name: quickstart}\nspec:\n  version: 8.15.0\n"
        "  image: registry.test/es-amd64:8.15.0\n  nodeSets:\n  - name: default\n"
        "    podTemplate: {spec: {affinity: {}}}\n"
    )
    affinity = es["spec"]["nodeSets"][0]["podTemplate"]["spec"]["affinity"]  # type: ignore[index]
    assert "podAntiAffinity" not in affinity
