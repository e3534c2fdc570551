"""Images as the operators compute them (issue 39, item 1), each test from the operator's own
sample (repository, path and commit in the test), the sample's image swapped for one the test
registry table knows (tests/support/operators: a name holding "amd64" runs on amd64 only)."""

from __future__ import annotations

import yaml
from support.operators import ARCH_IN_AMD64, ARM64_TOLERATION, resolve

from kmultiarch.api import mutate_text
from kmultiarch.engine import EngineResult


def _run(text: str) -> tuple[list[dict[str, object]], EngineResult]:
    result = mutate_text(text, resolve=resolve)
    return list(yaml.safe_load_all(result.stream())), result


def _rules(result: EngineResult) -> list[str]:
    return [finding.rule for finding in result.findings]


# -- Prometheus Operator: BuildImagePath ------------------------------------------------------

#: prometheus-operator/prometheus-operator example/user-guides/alerting/alertmanager-example.yaml
#: (commit 6adcebc5076c34f4f55f8f5f7b1e528929373ac7).
ALERTMANAGER_EXAMPLE = """\
apiVersion: monitoring.coreos.com/v1
kind: Alertmanager
metadata:
  name: example
spec:
  replicas: 3
"""


def test_an_alertmanager_base_image_with_a_tag_is_used_as_it_is_not_suffixed_with_spec_tag() -> (
    None
):
    """pkg/operator/image.go BuildImagePath: a baseImage that is ref.Tagged or ref.Digested is
    returned as it is, before sha and tag are read; kmultiarch judged
    quay.io/acme/am-amd64:v9:v0.27.0, an invalid reference, and left the pods unconstrained."""
    text = ALERTMANAGER_EXAMPLE + "  baseImage: quay.io/acme/am-amd64:v9\n  tag: v0.27.0\n"
    (alertmanager,), result = _run(text)
    assert alertmanager["spec"]["affinity"] == ARCH_IN_AMD64  # type: ignore[index]
    assert _rules(result) == []


def test_a_prometheus_base_image_with_a_digest_is_used_as_it_is() -> None:
    digest = "sha256:" + "a" * 64
    text = (
        "apiVersion: monitoring.coreos.com/v1\nkind: Prometheus\nmetadata: {name: p}\nspec:\n"
        f"  baseImage: registry.test:5000/prom-amd64@{digest}\n  sha: {'b' * 64}\n"
        "  version: v2.45.0\n"
    )
    (prometheus,), result = _run(text)
    assert prometheus["spec"]["affinity"] == ARCH_IN_AMD64  # type: ignore[index]
    judged = [image.container.image for pod in result.pods for image in pod.images]
    assert judged == [f"registry.test:5000/prom-amd64@{digest}"]


def test_a_base_image_without_a_tag_still_takes_spec_tag_and_a_registry_port_is_no_tag() -> None:
    text = ALERTMANAGER_EXAMPLE + "  baseImage: registry.test:5000/am-amd64\n  tag: v0.27.0\n"
    (alertmanager,), result = _run(text)
    assert alertmanager["spec"]["affinity"] == ARCH_IN_AMD64  # type: ignore[index]
    judged = [image.container.image for pod in result.pods for image in pod.images]
    assert judged == ["registry.test:5000/am-amd64:v0.27.0"]


# -- Jaeger operator: the grpc-plugin storage's init container --------------------------------

#: jaegertracing/jaeger-operator examples/with-grpc-storage-plugin.yaml
#: (commit 87d8ae049d910a65015a14c409dbdd1a8e561099), its leading comments left out.
JAEGER_GRPC_PLUGIN_EXAMPLE = """\
apiVersion: jaegertracing.io/v1
kind: Jaeger
metadata:
  name: clickhouse-grpc-plugin
spec:
  storage:
    type: grpc-plugin
    grpcPlugin:
      image: ghcr.io/pavolloffay/jaeger-clickhouse:0.4.1
    options:
      grpc-storage-plugin:
        binary: /plugin/jaeger-clickhouse
        configuration-file: /plugin-config/config.yaml
        log-level: debug
  volumeMounts:
    - name: plugin-config
      mountPath: /plugin-config
  volumes:
    - name: plugin-config
      configMap:
        name: jaeger-clickhouse
"""
AMD64_PLUGIN = "registry.test/jaeger-clickhouse-amd64:0.4.1"


def test_a_jaeger_grpc_storage_plugin_image_is_judged_for_the_pods_that_run_it() -> None:
    """pkg/storage/grpc_plugin.go GetGRPCPluginInitContainers: the plugin's image is the
    install-plugin init container of the all-in-one pod (the example's strategy); it was not
    judged (nor locked), and the amd64-only plugin's pods were left unconstrained."""
    text = JAEGER_GRPC_PLUGIN_EXAMPLE.replace(
        "ghcr.io/pavolloffay/jaeger-clickhouse:0.4.1", AMD64_PLUGIN
    )
    (jaeger,), result = _run(text)
    assert jaeger["spec"]["affinity"] == ARCH_IN_AMD64  # type: ignore[index]
    judged = {image.container.image for pod in result.pods for image in pod.images}
    assert AMD64_PLUGIN in judged


def test_a_production_jaegers_collector_and_query_run_the_plugin_and_the_agent_does_not() -> None:
    """collector.go, query.go and ingester.go add the init container; agent.go does not."""
    text = JAEGER_GRPC_PLUGIN_EXAMPLE.replace(
        "ghcr.io/pavolloffay/jaeger-clickhouse:0.4.1", AMD64_PLUGIN
    ).replace("spec:\n", "spec:\n  strategy: production\n  collector: {replicas: 2}\n", 1)
    text += "  agent: {strategy: DaemonSet, affinity: {}}\n  query: {affinity: {}}\n"
    (jaeger,), _ = _run(text)
    spec = jaeger["spec"]
    assert spec["affinity"] == ARCH_IN_AMD64  # type: ignore[index]
    assert spec["query"]["affinity"] == ARCH_IN_AMD64  # type: ignore[index]
    assert spec["agent"]["affinity"] == {}  # type: ignore[index]


def test_the_plugin_image_is_not_judged_when_the_storage_is_not_grpc_plugin() -> None:
    text = JAEGER_GRPC_PLUGIN_EXAMPLE.replace(
        "ghcr.io/pavolloffay/jaeger-clickhouse:0.4.1", AMD64_PLUGIN
    ).replace("type: grpc-plugin", "type: memory")
    (jaeger,), _ = _run(text)
    assert "affinity" not in jaeger["spec"]  # type: ignore[operator]


# -- CloudNativePG: image catalogs, a Pooler's pgbouncer image --------------------------------


def _fixture(name: str) -> str:
    from pathlib import Path

    return (Path(__file__).resolve().parents[1] / "fixtures" / "operators" / name).read_text(
        encoding="utf-8"
    )


def test_a_cnpg_cluster_runs_its_image_catalogs_image_for_major_from_the_stream() -> None:
    """cluster_image.go getRequestedImageInfo: spec.imageCatalogRef names an ImageCatalog; the
    pods run its image for major (FindImageForMajor). kmultiarch warned
    image-chosen-by-operator and called the catalog an unknown pod kind (the sample:
    cloudnative-pg docs/src/samples/cluster-example-catalog.yaml)."""
    text = _fixture("cnpg-cluster-example-catalog.yaml").replace(
        "ghcr.io/cloudnative-pg/postgresql:15", "registry.test/postgresql-amd64:15"
    )
    (_catalog, cluster), result = _run(text)
    assert cluster["spec"]["affinity"] == {  # type: ignore[index]
        "nodeAffinity": ARCH_IN_AMD64["nodeAffinity"]
    }
    assert _rules(result) == []
    judged = [image.container.image for pod in result.pods for image in pod.images]
    assert judged == ["registry.test/postgresql-amd64:15"]  # major 15's, not 16's


def test_a_cnpg_cluster_whose_catalog_is_not_in_the_stream_stays_the_operators_choice() -> None:
    text = _fixture("cnpg-cluster-example-catalog.yaml").split("---\n", 1)[1]
    (cluster,), result = _run(text)
    assert "affinity" not in cluster["spec"]  # type: ignore[operator]
    (finding,) = result.findings
    assert finding.rule == "image-chosen-by-operator"
    assert "ImageCatalog image-catalog-example, major 15, not in the stream" in finding.message


def test_a_cnpg_cluster_image_catalog_is_read_cluster_wide() -> None:
    text = _fixture("cnpg-cluster-example-catalog.yaml").replace(
        "kind: ImageCatalog", "kind: ClusterImageCatalog"
    )
    text = text.replace("ghcr.io/cloudnative-pg/postgresql:15", "registry.test/pg-amd64:15")
    text = text.replace("name: cluster-example\n", "name: cluster-example\n  namespace: db\n")
    (_, cluster), result = _run(text)
    assert "nodeAffinity" in cluster["spec"]["affinity"]  # type: ignore[index]
    assert _rules(result) == []


def test_a_poolers_pgbouncer_image_is_judged_over_the_operators_default() -> None:
    """pooler_image.go resolvePoolerImage: spec.pgbouncer.image wins over the catalog and the
    default; it was ignored and the pooler warned image-chosen-by-operator (the sample:
    docs/src/samples/pooler-example-explicit-image.yaml)."""
    text = _fixture("cnpg-pooler-example-explicit-image.yaml").replace(
        "ghcr.io/cloudnative-pg/pgbouncer:1.25.1", "registry.test/pgbouncer-amd64:1.25.1"
    )
    (_, pooler), result = _run(text)
    spec = pooler["spec"]["template"]["spec"]  # type: ignore[index]
    assert spec["affinity"] == ARCH_IN_AMD64
    assert _rules(result) == []


def test_a_poolers_catalog_component_image_is_judged() -> None:
    """resolveImageFromCatalog: the catalog's componentImages entry of the reference's key
    (docs/src/samples/pooler-example-image-catalog.yaml)."""
    text = _fixture("cnpg-pooler-example-image-catalog.yaml").replace(
        "ghcr.io/cloudnative-pg/pgbouncer:1.25.1", "registry.test/pgbouncer-amd64:1.25.1"
    )
    (_, cluster, pooler), result = _run(text)
    assert pooler["spec"]["template"]["spec"]["affinity"] == ARCH_IN_AMD64  # type: ignore[index]
    # PostgreSQL 18's image runs on both: the instances are tolerated on arm64, not required.
    assert "nodeAffinity" not in cluster["spec"]["affinity"]  # type: ignore[index]
    assert cluster["spec"]["affinity"]["tolerations"] == [ARM64_TOLERATION]  # type: ignore[index]
    assert _rules(result) == []


def test_a_pgbouncer_container_in_the_pooler_template_wins_over_spec_pgbouncer_image() -> None:
    text = _fixture("cnpg-pooler-example-explicit-image.yaml").replace(
        "ghcr.io/cloudnative-pg/pgbouncer:1.25.1", "registry.test/pgbouncer-amd64:1.25.1"
    )
    text += (
        "  template:\n    spec:\n      containers:\n"
        "      - {name: pgbouncer, image: registry.test/pgbouncer:1}\n"
    )
    (_, pooler), result = _run(text)
    assert "affinity" not in pooler["spec"]["template"]["spec"]  # type: ignore[index]
    judged = [image.container.image for pod in result.pods for image in pod.images]
    assert "registry.test/pgbouncer-amd64:1.25.1" not in judged


# -- Strimzi: a KafkaConnect with spec.build --------------------------------------------------

CONNECT_BUILD = "strimzi-kafka-connect-build.yaml"
BUILT = "ttl.sh/strimzi-connect-example-4.3.0:24h"


def test_a_kafka_connect_build_gives_no_arm64_toleration_from_the_image_pushed_before() -> None:
    """ConnectBuildOperator.java kubernetesBuildWaitForFinish: the Connect pods run
    output.image@<the digest just built>, made by Kaniko in the build pod for its node's
    architecture alone (KafkaConnectBuild.java generateBuilderPod). kmultiarch judged
    build.output.image as the registry held it before: a multi-arch push there tolerated arm64
    for pods whose next image may be amd64-only. Now nothing is written, and said."""
    text = _fixture(CONNECT_BUILD).replace(BUILT, "registry.test/connect-built:24h")
    (connect,), result = _run(text)
    assert "template" not in connect["spec"]  # type: ignore[operator]
    unwritable = [f for f in result.findings if f.rule == "unwritable-constraint"]
    (finding,) = unwritable
    assert finding.path == ("spec", "template", "pod")
    assert "spec.template.buildPod" in finding.message
    assert "nodeSelector kubernetes.io/arch" in finding.message
    judged = [image.container.image for pod in result.pods for image in pod.images]
    assert "registry.test/connect-built:24h" not in judged


def test_a_kafka_connect_build_pinned_to_one_architecture_on_both_templates_is_not_warned() -> None:
    text = _fixture(CONNECT_BUILD).replace(
        "  build:\n",
        "  template:\n    pod: {nodeSelector: {kubernetes.io/arch: arm64}}\n"
        "    buildPod: {nodeSelector: {kubernetes.io/arch: arm64}}\n  build:\n",
    )
    _, result = _run(text)
    assert [f.rule for f in result.findings] == ["image-chosen-by-operator"]  # Kaniko's


def test_a_kafka_connect_build_pinned_to_two_architectures_is_warned() -> None:
    text = _fixture(CONNECT_BUILD).replace(
        "  build:\n",
        "  template:\n    pod: {nodeSelector: {kubernetes.io/arch: arm64}}\n"
        "    buildPod: {nodeSelector: {kubernetes.io/arch: amd64}}\n  build:\n",
    )
    _, result = _run(text)
    assert "unwritable-constraint" in [f.rule for f in result.findings]


# -- Altinity clickhouse-operator: the pod templates the hosts run ----------------------------


def _templates(chi: dict[str, object]) -> list[dict[str, object]]:
    return chi["spec"]["templates"]["podTemplates"]  # type: ignore[index,no-any-return]


def test_a_clickhouse_pod_template_no_host_runs_is_left_as_it_is() -> None:
    """The hosts name clickhouse:23.8, which no template is: they run the operator's default
    pod, and clickhouse:24.8 makes none (docs/chi-examples/
    08-clickhouse-version-update-03-apply-update-all.yaml). kmultiarch wrote into it."""
    text = _fixture("altinity-08-clickhouse-version-update-03-apply-update-all.yaml").replace(
        "clickhouse/clickhouse-server:24.8", "registry.test/clickhouse-amd64:24.8"
    )
    (chi,), result = _run(text)
    assert chi == yaml.safe_load(text)
    assert result.pods == []


def test_a_hosts_own_pod_template_wins_over_its_clusters() -> None:
    """08-clickhouse-version-update-02-apply-update-one.yaml: the third replica names
    clickhouse:24.8, the others take the cluster's clickhouse:24.3 (Host InheritTemplatesFrom:
    the host's own names first)."""
    text = _fixture("altinity-08-clickhouse-version-update-02-apply-update-one.yaml").replace(
        "clickhouse/clickhouse-server:24.8", "registry.test/clickhouse-amd64:24.8"
    )
    (chi,), _ = _run(text)
    old, new = _templates(chi)
    assert new["spec"]["affinity"] == ARCH_IN_AMD64  # type: ignore[index]
    assert old["spec"]["tolerations"] == [ARM64_TOLERATION]  # type: ignore[index]


def test_of_two_clickhouse_pod_templates_with_one_name_only_the_last_is_run() -> None:
    """normalizer.go normalizePodTemplate: PodTemplatesIndex.Set(name), the last of a name
    wins (docs/chi-examples/99-clickhouseinstallation-max.yaml has two clickhouse-v23.8, the
    first with a zone); kmultiarch wrote tolerations into the first and warned of it."""
    text = _fixture("altinity-99-clickhouseinstallation-max.yaml")
    (chi,), result = _run(text)
    first, last = _templates(chi)
    assert first == _templates(yaml.safe_load(text))[0]
    assert last["spec"]["tolerations"] == [ARM64_TOLERATION]  # type: ignore[index]
    assert "unwritable-constraint" not in _rules(result)


def test_a_referenced_clickhouse_pod_template_without_a_spec_gets_one() -> None:
    """A template that is a name only is an empty pod spec to the operator, whose app
    container it adds (creator/container.go EnsureAppContainer): its pods got nothing, and no
    warning. From 08-clickhouse-version-update-01-initial-position.yaml, the template's spec
    left out."""
    text = (
        _fixture("altinity-08-clickhouse-version-update-02-apply-update-one.yaml")
        .split("  templates:\n    podTemplates:\n", 1)[0]
        .replace("podTemplate: clickhouse:24.8", "podTemplate: clickhouse:24.3")
    )
    text += "  templates:\n    podTemplates:\n      - name: clickhouse:24.3\n"
    (chi,), result = _run(text)
    (template,) = _templates(chi)
    assert template["spec"] == {"tolerations": [ARM64_TOLERATION]}
    judged = [image.container.image for pod in result.pods for image in pod.images]
    assert judged == ["clickhouse/clickhouse-server:latest"]


def test_a_host_with_a_log_volume_claim_template_runs_the_clickhouse_log_container() -> None:
    """stateful-set-application.go stsSetupLogContainer: a host whose templates name a
    logVolumeClaimTemplate gets clickhouse-log, registry.access.redhat.com/ubi8/
    ubi-minimal:latest, unless its pod template has one (docs/chi-examples/
    02-templates-04-sidecar.yaml); it was not judged."""
    text = _fixture("altinity-02-templates-04-sidecar.yaml").replace(
        "image: busybox", "image: registry.test/busybox:1"
    )
    _, result = _run(text)
    judged = {image.container.image for pod in result.pods for image in pod.images}
    assert "registry.access.redhat.com/ubi8/ubi-minimal:latest" in judged
    # The 99 example's template has its own clickhouse-log: no other is added.
    _, result = _run(_fixture("altinity-99-clickhouseinstallation-max.yaml"))
    judged = {image.container.image for pod in result.pods for image in pod.images}
    assert judged == {"clickhouse/clickhouse-server:23.8"}
