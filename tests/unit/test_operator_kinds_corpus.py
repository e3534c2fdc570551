"""The kinds the corpora warned of as unknown pod makers (issue 29, "no pod-making kind in
silence"), from the operators' own samples (tests/fixtures/operators: each file names its
repository, path and commit). Each used to get an ``unknown-pod-kind`` warning and nothing
written."""

from __future__ import annotations

import copy
from pathlib import Path

import yaml
from support.operators import ARCH_IN_AMD64, ARM64_TOLERATION, resolve

from kmultiarch.api import mutate_text
from kmultiarch.core.findings import IMAGE_CHOSEN_BY_OPERATOR
from kmultiarch.engine import EngineResult

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "operators"


def _run(text: str) -> tuple[list[dict[str, object]], EngineResult]:
    result = mutate_text(text, resolve=resolve)
    return list(yaml.safe_load_all(result.stream())), result


def _fixture(name: str) -> str:
    return (FIXTURES / name).read_text(encoding="utf-8")


def _with(document: dict[str, object], *paths: tuple[str | int, ...]) -> dict[str, object]:
    """``document`` with the amd64 node affinity at each of ``paths`` (a pod spec's, or an
    object's that the operator copies ``affinity`` from)."""
    expected = copy.deepcopy(document)
    for path in paths:
        node: object = expected
        for token in path:
            assert isinstance(node, dict | list)
            node = node[token]  # type: ignore[index]
        assert isinstance(node, dict)
        node["affinity"] = ARCH_IN_AMD64
    return expected


# -- KubeRay: RayCronJob (ray.io) --------------------------------------------------------------


def test_a_ray_cronjob_sample_places_its_job_templates_head_and_workers() -> None:
    """raycronjob_controller.go constructRayJob: each RayJob's spec is spec.jobTemplate, whose
    rayClusterSpec's head and worker templates place the pods."""
    text = _fixture("kuberay-raycronjob.yaml").replace(
        "rayproject/ray:2.52.0", "registry.test/ray-amd64:2.52.0"
    )
    cronjob, config_map = yaml.safe_load_all(text)
    output, result = _run(text)
    cluster = ("spec", "jobTemplate", "rayClusterSpec")
    assert output == [
        _with(
            cronjob,
            (*cluster, "headGroupSpec", "template", "spec"),
            (*cluster, "workerGroupSpecs", 0, "template", "spec"),
        ),
        config_map,
    ]
    assert not result.findings


# -- Spark operator: SparkConnect (sparkoperator.k8s.io) ---------------------------------------


def test_a_spark_connect_sample_places_its_server_and_executor_templates() -> None:
    """sparkconnect reconciler.go mutateServerPod: the server pod's spec is server.template's;
    options.go executorPodTemplateOption: executor.template is the executors' pod template."""
    text = _fixture("spark-connect.yaml").replace(
        "docker.io/apache/spark:4.0.4", "registry.test/spark-amd64:4.0.4"
    )
    (connect,) = yaml.safe_load_all(text)
    output, result = _run(text)
    assert output == [
        _with(
            connect,
            ("spec", "server", "template", "spec"),
            ("spec", "executor", "template", "spec"),
        )
    ]
    assert not result.findings


def test_a_spark_connect_without_templates_gets_them_for_spec_image() -> None:
    """Without templates, the operator's server container and Spark's executor container run
    spec.image: the templates are created with the constraint (an empty container list is
    filled in: mutateServerPod, Spark's selectSparkContainer)."""
    (connect,), _ = _run(
        "apiVersion: sparkoperator.k8s.io/v1alpha1\nkind: SparkConnect\nmetadata: {name: c}\n"
        "spec:\n  sparkVersion: 4.0.4\n  image: registry.test/spark-amd64:4.0.4\n"
        "  server: {}\n  executor: {instances: 1}\n"
    )
    spec = connect["spec"]
    assert spec["server"] == {"template": {"spec": {"affinity": ARCH_IN_AMD64}}}  # type: ignore[index]
    assert spec["executor"] == {  # type: ignore[index]
        "instances": 1,
        "template": {"spec": {"affinity": ARCH_IN_AMD64}},
    }


# -- OpenTelemetry operator: OpAMPBridge (opentelemetry.io) ------------------------------------


def test_an_opamp_bridge_sample_is_placed_by_its_spec_on_spec_image() -> None:
    """opampbridge deployment.go Deployment: the pod's affinity, tolerations and nodeSelector
    are spec's; container.go Container: its one container runs spec.image."""
    text = _fixture("opentelemetry-opampbridge.yaml").replace(
        "spec:\n", "spec:\n  image: registry.test/opamp-bridge-amd64:0.1\n", 1
    )
    (bridge,) = yaml.safe_load_all(text)
    output, result = _run(text)
    assert output == [_with(bridge, ("spec",))]
    assert not result.findings


def test_an_opamp_bridge_sample_without_an_image_runs_the_operators_choice() -> None:
    """container.go Container: without spec.image, the operator's
    --operator-opamp-bridge-image: said, nothing written."""
    text = _fixture("opentelemetry-opampbridge.yaml")
    output, result = _run(text)
    assert output == list(yaml.safe_load_all(text))
    assert [f.rule for f in result.findings] == [IMAGE_CHOSEN_BY_OPERATOR]


# -- Argo Rollouts: Experiment, AnalysisTemplate, ClusterAnalysisTemplate (argoproj.io) --------


def test_an_argo_experiment_sample_places_each_templates_replica_set() -> None:
    """experiments/replicaset.go newReplicaSetFromTemplate: a ReplicaSet per spec.templates[]
    item, its pod template a copy of the item's."""
    text = _fixture("argo-rollouts-experiment-with-analysis.yaml").replace(
        "argoproj/rollouts-demo:purple", "registry.test/rollouts-demo-amd64:purple"
    )
    (experiment,) = yaml.safe_load_all(text)
    output, result = _run(text)
    expected = _with(experiment, ("spec", "templates", 0, "template", "spec"))
    orange = expected["spec"]["templates"][1]["template"]["spec"]  # type: ignore[index]
    orange["tolerations"] = [ARM64_TOLERATION]  # its image runs on arm64 too
    assert output == [expected]
    assert not result.findings


def test_argo_analysis_template_samples_place_their_job_metrics_pods() -> None:
    """metricproviders/job/job.go newMetricJob: a job metric's Job spec is
    spec.metrics[].provider.job.spec as it is."""
    text = _fixture("argo-rollouts-analysis-templates.yaml").replace(
        "alpine:3.8", "registry.test/alpine-amd64:3.8"
    )
    templates = list(yaml.safe_load_all(text))
    output, result = _run(text)
    pod = ("spec", "metrics", 0, "provider", "job", "spec", "template", "spec")
    assert output == [_with(template, pod) for template in templates]
    assert not result.findings


def test_an_argo_cluster_analysis_template_sample_places_its_job_metrics_pods() -> None:
    text = _fixture("argo-rollouts-cluster-analysis-templates.yaml").replace(
        "alpine:3.8", "registry.test/alpine-amd64:3.8"
    )
    (template,) = yaml.safe_load_all(text)
    output, result = _run(text)
    pod = ("spec", "metrics", 0, "provider", "job", "spec", "template", "spec")
    assert output == [_with(template, pod)]
    assert not result.findings


# -- Agent Sandbox: Sandbox (agents.x-k8s.io), SandboxTemplate (extensions.agents.x-k8s.io) ----


def test_an_agent_sandbox_template_sample_places_its_sandboxes_pods() -> None:
    """sandboxclaim_controller.go: a Sandbox's blueprint is a copy of the template's;
    sandbox_controller.go reconcilePod: its pod's spec is spec.podTemplate.spec."""
    text = _fixture("agent-sandbox-template.yaml").replace(
        "nginx:alpine", "registry.test/nginx-amd64:alpine"
    )
    (template,) = yaml.safe_load_all(text)
    output, result = _run(text)
    assert output == [_with(template, ("spec", "podTemplate", "spec"))]
    assert not result.findings


def test_an_agent_sandbox_sample_places_its_pod() -> None:
    text = _fixture("agent-sandbox-aio.yaml").replace(
        "ghcr.io/agent-infra/sandbox:1.0.0.152", "registry.test/sandbox-amd64:1.0.0.152"
    )
    (sandbox,) = yaml.safe_load_all(text)
    output, result = _run(text)
    assert output == [_with(sandbox, ("spec", "podTemplate", "spec"))]
    assert not result.findings
