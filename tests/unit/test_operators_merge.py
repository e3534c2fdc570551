"""Operators as they really run (issue 29): the effective placement of each pod after the
operator's merge. The three reproduced failures: a SparkApplication's ``spec.nodeSelector``
(driver and executor pods), Tekton PipelineRun v1beta1 vs v1 and a task's own pod template, and
Rook's ``placement.all`` under a daemon's own ``nodeAffinity``."""

from __future__ import annotations

from collections.abc import Mapping

import pytest
import yaml
from support.operators import (
    ARCH_IN_AMD64,
    ARM64_TOLERATION,
    resolve,
)

from kmultiarch.api import mutate_text
from kmultiarch.core.findings import NEEDS_SCHEDULING, SCHEDULING_CONFLICT
from kmultiarch.core.policy.model import Policy
from kmultiarch.engine import EngineResult, read_sources, run_documents
from kmultiarch.errors import PolicyError
from kmultiarch.yaml.stream import InputSource


def _mutate(text: str) -> tuple[list[dict[str, object]], EngineResult]:
    result = mutate_text(text, resolve=resolve)
    return list(yaml.safe_load_all(result.stream())), result


def _check(text: str) -> EngineResult:
    sources = [InputSource("<text>", text)]
    policy = Policy()
    return run_documents(
        sources, read_sources(sources, policy.scope), policy, resolve, edit=False, checking=True
    )


# -- Spark: spec.nodeSelector applies to driver and executor ------------------------------------

SPARK_ARM64_SELECTOR_AMD64_IMAGE = """\
apiVersion: sparkoperator.k8s.io/v1beta2
kind: SparkApplication
metadata: {name: pi, namespace: spark}
spec:
  type: Scala
  mode: cluster
  image: registry.test/spark-amd64:3.5
  nodeSelector: {kubernetes.io/arch: arm64}
  driver: {cores: 1}
  executor: {instances: 2}
"""


def test_spark_node_selector_contradicting_the_image_is_a_conflict_not_an_amd64_constraint() -> (
    None
):
    """spec.nodeSelector is set on driver and executor pods (submission.go nodeSelectorOption):
    an arm64 selector with an amd64-only image is a pod no node takes. mutate warns and
    changes nothing; it used to write In [amd64] into both, silently."""
    (app,), result = _mutate(SPARK_ARM64_SELECTOR_AMD64_IMAGE)
    assert app == yaml.safe_load(SPARK_ARM64_SELECTOR_AMD64_IMAGE)
    conflicts = [f for f in result.findings if f.rule == SCHEDULING_CONFLICT]
    assert [f.field_path for f in conflicts] == ["spec.driver", "spec.executor"]
    assert all(f.severity == "warning" for f in conflicts)
    assert "nodeSelector kubernetes.io/arch=arm64" in conflicts[0].message
    assert [pod.status for pod in result.pods] == [SCHEDULING_CONFLICT] * 2


def test_spark_node_selector_conflict_is_an_error_in_check() -> None:
    result = _check(SPARK_ARM64_SELECTOR_AMD64_IMAGE)
    conflicts = [f for f in result.findings if f.rule == SCHEDULING_CONFLICT]
    assert len(conflicts) == 2 and all(f.severity == "error" for f in conflicts)
    assert not [f for f in result.findings if f.rule == NEEDS_SCHEDULING]


def test_spark_role_node_selector_wins_key_by_key_over_the_applications() -> None:
    """addNodeSelectors copies the role's nodeSelector over the application's, key by key: an
    executor choosing amd64 itself runs there, the driver keeps the application's arm64."""
    text = SPARK_ARM64_SELECTOR_AMD64_IMAGE.replace(
        "executor: {instances: 2}",
        "executor: {instances: 2, nodeSelector: {kubernetes.io/arch: amd64}}",
    )
    (app,), result = _mutate(text)
    # The executor's own amd64 selector already keeps it where its image runs.
    assert [pod.status for pod in result.pods] == [SCHEDULING_CONFLICT, "ok"]
    assert app == yaml.safe_load(text)


def test_spark_node_selector_on_other_labels_keeps_the_usual_decision() -> None:
    text = SPARK_ARM64_SELECTOR_AMD64_IMAGE.replace("{kubernetes.io/arch: arm64}", "{pool: spark}")
    (app,), result = _mutate(text)
    assert app["spec"]["driver"]["affinity"] == ARCH_IN_AMD64  # type: ignore[index]
    assert app["spec"]["nodeSelector"] == {"pool": "spark"}  # type: ignore[index]
    assert not [f for f in result.findings if f.rule == SCHEDULING_CONFLICT]


def test_a_scheduled_spark_application_places_the_applications_it_makes() -> None:
    """scheduledsparkapplication/controller.go createSparkApplication: each run is a
    SparkApplication whose spec is spec.template. It passed with an unknown-pod-kind warning."""
    text = (
        SPARK_ARM64_SELECTOR_AMD64_IMAGE.replace(
            "kind: SparkApplication", "kind: ScheduledSparkApplication"
        )
        .replace("spec:\n  type:", "spec:\n  schedule: '@every 5m'\n  template:\n    type:")
        .replace("\n  mode:", "\n    mode:")
        .replace("\n  image:", "\n    image:")
        .replace("\n  nodeSelector: {kubernetes.io/arch: arm64}", "")
        .replace("\n  driver:", "\n    driver:")
        .replace("\n  executor:", "\n    executor:")
    )
    (scheduled,), result = _mutate(text)
    template = scheduled["spec"]["template"]  # type: ignore[index]
    assert template["driver"] == {"cores": 1, "affinity": ARCH_IN_AMD64}
    assert template["executor"] == {"instances": 2, "affinity": ARCH_IN_AMD64}
    assert result.findings == []


def test_a_v1beta1_spark_application_judges_its_init_container_image() -> None:
    """v1beta1 types.go: spec.initContainerImage runs in driver and executor pods."""
    text = (
        SPARK_ARM64_SELECTOR_AMD64_IMAGE.replace("v1beta2", "v1beta1")
        .replace("spark-amd64:3.5", "spark:2.4")
        .replace(
            "  nodeSelector: {kubernetes.io/arch: arm64}\n",
            "  initContainerImage: registry.test/init-amd64:1\n",
        )
    )
    (app,), _ = _mutate(text)
    assert app["spec"]["driver"] == {"cores": 1, "affinity": ARCH_IN_AMD64}  # type: ignore[index]


# -- Tekton: v1beta1 spec.podTemplate vs v1 spec.taskRunTemplate.podTemplate --------------------

PIPELINE_RUN = """\
apiVersion: tekton.dev/{version}
kind: PipelineRun
metadata: {{name: build}}
spec:
  pipelineSpec:
    tasks:
    - name: compile
      taskSpec:
        steps:
        - {{name: make, image: registry.test/builder-amd64:1}}
    - name: test
      taskSpec:
        steps:
        - {{name: run, image: registry.test/tester:1}}
"""


def test_a_v1beta1_pipeline_run_is_placed_by_spec_pod_template_the_field_v1beta1_has() -> None:
    """v1beta1's PipelineRunSpec has podTemplate, not taskRunTemplate (which v1beta1 prunes):
    kmultiarch used to write the v1 field into v1beta1 resources."""
    (run,), _ = _mutate(PIPELINE_RUN.format(version="v1beta1"))
    assert run["spec"]["podTemplate"] == {"affinity": ARCH_IN_AMD64}  # type: ignore[index]
    assert "taskRunTemplate" not in run["spec"]  # type: ignore[operator]


def test_a_v1_pipeline_run_is_placed_by_spec_task_run_template_pod_template() -> None:
    (run,), _ = _mutate(PIPELINE_RUN.format(version="v1"))
    assert run["spec"]["taskRunTemplate"] == {"podTemplate": {"affinity": ARCH_IN_AMD64}}  # type: ignore[index]
    assert "podTemplate" not in run["spec"]  # type: ignore[operator]


def test_a_tasks_own_pod_template_setting_affinity_is_written_too_as_it_replaces_the_runs() -> None:
    """MergePodTemplateWithDefault: a taskRunSpecs[] pod template's affinity replaces the
    run's; the constraint goes into both, and the task's own term is kept."""
    text = PIPELINE_RUN.format(version="v1") + (
        "  taskRunSpecs:\n  - pipelineTaskName: compile\n    podTemplate:\n"
        "      affinity:\n        nodeAffinity:\n"
        "          requiredDuringSchedulingIgnoredDuringExecution:\n"
        "            nodeSelectorTerms:\n            - matchExpressions:\n"
        "              - {key: pool, operator: In, values: [build]}\n"
        "      tolerations: [{key: build, operator: Exists}]\n"
    )
    (run,), _ = _mutate(text)
    spec = run["spec"]  # type: ignore[index]
    assert spec["taskRunTemplate"] == {"podTemplate": {"affinity": ARCH_IN_AMD64}}
    own = spec["taskRunSpecs"][0]["podTemplate"]
    terms = own["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
        "nodeSelectorTerms"
    ]
    assert terms == [
        {
            "matchExpressions": [
                {"key": "pool", "operator": "In", "values": ["build"]},
                {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]},
            ]
        }
    ]
    assert own["tolerations"] == [{"key": "build", "operator": "Exists"}]  # nothing to add


def test_a_v1beta1_tasks_own_pod_template_is_task_pod_template() -> None:
    text = PIPELINE_RUN.format(version="v1beta1").replace(
        "registry.test/builder-amd64:1", "registry.test/builder:1"
    ) + (
        "  taskRunSpecs:\n  - pipelineTaskName: compile\n    taskPodTemplate:\n"
        "      tolerations: [{key: build, operator: Exists}]\n"
    )
    (run,), _ = _mutate(text)
    spec = run["spec"]  # type: ignore[index]
    # The task's tolerations replace the run's: the arm64 toleration goes into both.
    assert spec["podTemplate"] == {"tolerations": [ARM64_TOLERATION]}
    assert spec["taskRunSpecs"][0]["taskPodTemplate"]["tolerations"] == [
        {"key": "build", "operator": "Exists"},
        ARM64_TOLERATION,
    ]
    assert "podTemplate" not in spec["taskRunSpecs"][0]


def test_a_tasks_own_pod_template_setting_nothing_it_replaces_is_left_alone() -> None:
    text = PIPELINE_RUN.format(version="v1") + (
        "  taskRunSpecs:\n  - pipelineTaskName: compile\n    podTemplate: {schedulerName: s}\n"
    )
    (run,), result = _mutate(text)
    assert run["spec"]["taskRunSpecs"][0]["podTemplate"] == {"schedulerName": "s"}  # type: ignore[index]
    assert len(result.pods) == 1


# -- Rook: placement.all merged under each daemon's own --------------------------------------

CEPH = """\
apiVersion: ceph.rook.io/v1
kind: CephCluster
metadata: {name: ceph, namespace: rook-ceph}
spec:
  cephVersion: {image: registry.test/ceph-amd64:v19}
  placement:
    all:
      tolerations: [{key: storage, operator: Exists}]
    mon:
      nodeAffinity:
        requiredDuringSchedulingIgnoredDuringExecution:
          nodeSelectorTerms:
          - matchExpressions:
            - {key: role, operator: In, values: [mon]}
    mgr:
      tolerations: [{key: mgr, operator: Exists}]
"""


def test_a_rook_daemon_with_its_own_node_affinity_gets_the_constraint_there_too() -> None:
    """Placement.Merge: mon's nodeAffinity replaces all's, so the arch term written into all
    alone was dropped for the mons."""
    (ceph,), result = _mutate(CEPH)
    placement = ceph["spec"]["placement"]  # type: ignore[index]
    assert placement["all"] == {
        "tolerations": [{"key": "storage", "operator": "Exists"}],
        **ARCH_IN_AMD64,
    }
    terms = placement["mon"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
        "nodeSelectorTerms"
    ]
    assert terms == [
        {
            "matchExpressions": [
                {"key": "role", "operator": "In", "values": ["mon"]},
                {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]},
            ]
        }
    ]
    # mgr's own tolerations are appended to all's, and its nodeAffinity is all's: unchanged.
    assert placement["mgr"] == {"tolerations": [{"key": "mgr", "operator": "Exists"}]}
    assert sorted(str(pod.target.field_path) for pod in result.pods) == [
        "spec.placement.all",
        "spec.placement.mon",
    ]


def test_a_rook_daemon_toleration_is_written_once_into_all_as_rook_appends_them() -> None:
    text = CEPH.replace("ceph-amd64:v19", "ceph:v19")
    (ceph,), _ = _mutate(text)
    placement = ceph["spec"]["placement"]  # type: ignore[index]
    assert placement["all"]["tolerations"] == [
        {"key": "storage", "operator": "Exists"},
        ARM64_TOLERATION,
    ]
    assert "tolerations" not in placement["mon"]
    assert placement["mgr"]["tolerations"] == [{"key": "mgr", "operator": "Exists"}]


def test_a_rook_daemon_node_affinity_contradicting_the_image_is_a_conflict() -> None:
    text = CEPH.replace(
        "{key: role, operator: In, values: [mon]}",
        "{key: kubernetes.io/arch, operator: In, values: [arm64]}",
    )
    (ceph,), result = _mutate(text)
    mon = [pod for pod in result.pods if pod.target.field_path == "spec.placement.mon"]
    assert [pod.status for pod in mon] == [SCHEDULING_CONFLICT]
    assert ceph["spec"]["placement"]["mon"] == yaml.safe_load(text)["spec"]["placement"]["mon"]  # type: ignore[index]


# -- the same rules from a policy ------------------------------------------------------------

STORE_POLICY = """\
  podSpecs:
  - apiVersion: example.com/v2
    kind: Store
    placements:
    - {path: /spec/placement/all, creates: 2, shape: node-affinity, images: [[/spec/image]]}
    - path: /spec/placement/primary
      shape: node-affinity
      images: [[/spec/image]]
      versions: [v2]
      inherits:
        path: /spec/placement/all
        fields: {nodeAffinity: replace, tolerations: append}
"""


def _policy(spec: str) -> Policy:
    from kmultiarch.io.config import parse_policy_text

    return parse_policy_text(
        "apiVersion: kmultiarch.dev/v1alpha1\nkind: MultiArchPolicy\nmetadata: {name: p}\n"
        f"spec:\n{spec}",
        "policy.yaml",
    )


def test_a_policy_placement_says_what_a_built_in_one_does_inherits_and_versions() -> None:
    policy = _policy(STORE_POLICY)
    store = (
        "apiVersion: example.com/{version}\nkind: Store\nmetadata: {{name: s}}\n"
        "spec:\n  image: registry.test/store-amd64:1\n  placement:\n    primary:\n"
        "      nodeAffinity:\n        requiredDuringSchedulingIgnoredDuringExecution:\n"
        "          nodeSelectorTerms:\n          - matchExpressions:\n            - key: disk\n"
        "              operator: Exists\n"
    )
    (v2,) = yaml.safe_load_all(
        mutate_text(store.format(version="v2"), policy, resolve=resolve).stream()
    )
    terms = v2["spec"]["placement"]["primary"]["nodeAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"
    ]["nodeSelectorTerms"]
    assert terms[0]["matchExpressions"][-1]["key"] == "kubernetes.io/arch"
    assert v2["spec"]["placement"]["all"] == ARCH_IN_AMD64
    (v1,) = yaml.safe_load_all(
        mutate_text(store.format(version="v1"), policy, resolve=resolve).stream()
    )
    # v1 has no primary placement: only all is written.
    assert (
        v1["spec"]["placement"]["primary"]
        == yaml.safe_load(store.format(version="v1"))["spec"]["placement"]["primary"]
    )


@pytest.mark.parametrize(
    ("inherits", "message"),
    [
        ("{path: /spec/a/*, fields: {tolerations: append}}", r"inherits: .*without `\*`"),
        ("{path: /spec/a, fields: {tolerations: zip}}", r"inherits\.fields\.tolerations: "),
        ("{path: /spec/a, fields: {hostname: replace}}", r"inherits\.fields\.hostname: "),
        ("{path: /spec/a}", r"inherits\.fields: "),
    ],
)
def test_bad_inherits_name_the_key(inherits: str, message: str) -> None:
    with pytest.raises(PolicyError, match=message):
        _policy(
            "  podSpecs:\n  - apiVersion: x/v1\n    kind: X\n"
            f"    placements: [{{path: /spec/b, inherits: {inherits}}}]\n"
        )


# -- Flink: role templates merged over the common one by position ---------------------------

FLINK = """\
apiVersion: flink.apache.org/v1beta1
kind: FlinkDeployment
metadata: {name: f}
spec:
  image: registry.test/flink:1.20
  podTemplate:
    spec:
      tolerations: [{key: dedicated, operator: Equal, value: flink, effect: NoSchedule}]
  jobManager:
    podTemplate:
      spec:
        tolerations: [{key: jm, operator: Exists}]
  taskManager: {resource: {cpu: 1}}
"""


def _flink_merge(to: object, source: object) -> object:
    """The oracle: FlinkUtils.mergeInto / mergeArray (merge-arrays-by-name off), written
    apart from the code under test."""
    if isinstance(to, dict) and isinstance(source, dict):
        out = dict(to)
        for key, value in source.items():
            if isinstance(out.get(key), list) and isinstance(value, list):
                items = list(out[key])
                for i, item in enumerate(value):
                    if i >= len(items):
                        items.append(item)
                    elif isinstance(items[i], dict) and isinstance(item, dict):
                        items[i] = _flink_merge(items[i], item)
                out[key] = items
            elif isinstance(out.get(key), dict):
                out[key] = _flink_merge(out[key], value) if isinstance(value, dict) else out[key]
            else:
                out[key] = value
        return out
    return source


def _flink_effective(spec: Mapping[str, object], role: str) -> object:
    common = spec.get("podTemplate", {}).get("spec", {})  # type: ignore[attr-defined]
    own = spec.get(role, {}).get("podTemplate", {}).get("spec")  # type: ignore[attr-defined]
    return _flink_merge(common, own) if own is not None else common


def test_a_flink_toleration_never_lands_on_a_position_a_role_merges_onto() -> None:
    """FlinkUtils mergeArray: the JobManager's tolerations are merged onto the common ones
    item by item; appending to the common list would put the arm64 toleration where the
    JobManager's second one would be merged onto it, and a toleration written into the role
    template alone overwrote the common template's first one. Each pod ends with every
    toleration the user wrote (as Flink merges them) and the arm64 one."""
    (flink,), result = _mutate(FLINK)
    spec = flink["spec"]  # type: ignore[index]
    jm = _flink_effective(spec, "jobManager")["tolerations"]  # type: ignore[index]
    tm = _flink_effective(spec, "taskManager")["tolerations"]  # type: ignore[index]
    dedicated = {"key": "dedicated", "operator": "Equal", "value": "flink", "effect": "NoSchedule"}
    # Flink itself merges the JobManager's first toleration onto the common first one.
    assert jm == [{**dedicated, "key": "jm", "operator": "Exists"}, ARM64_TOLERATION]
    assert tm == [dedicated, ARM64_TOLERATION]
    # The common list was not appended to (the JobManager's list sets that position).
    assert spec["podTemplate"]["spec"]["tolerations"] == [dedicated]
    again, _ = _mutate(result.stream())
    assert again == [flink]


def test_a_flink_role_with_its_own_node_affinity_and_the_role_without_both_get_the_term() -> None:
    text = (
        "apiVersion: flink.apache.org/v1beta1\nkind: FlinkDeployment\nmetadata: {name: f}\n"
        "spec:\n  image: registry.test/flink-amd64:1.20\n  jobManager:\n    podTemplate:\n"
        "      spec:\n        affinity:\n          nodeAffinity:\n"
        "            requiredDuringSchedulingIgnoredDuringExecution:\n"
        "              nodeSelectorTerms:\n              - matchExpressions:\n"
        "                - {key: disk, operator: Exists}\n  taskManager: {replicas: 2}\n"
    )
    (flink,), _ = _mutate(text)
    spec = flink["spec"]  # type: ignore[index]
    for role in ("jobManager", "taskManager"):
        terms = _flink_effective(spec, role)["affinity"]["nodeAffinity"][  # type: ignore[index]
            "requiredDuringSchedulingIgnoredDuringExecution"
        ]["nodeSelectorTerms"]
        assert all(
            {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]}
            in term["matchExpressions"]
            for term in terms
        ), role
    jm_terms = spec["jobManager"]["podTemplate"]["spec"]["affinity"]["nodeAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"
    ]["nodeSelectorTerms"]
    assert jm_terms[0]["matchExpressions"][0] == {"key": "disk", "operator": "Exists"}


def test_a_pipeline_run_with_a_task_by_reference_is_not_decided_on_the_inline_ones_alone() -> None:
    """The run's pod template applies to the pods of every task, the referenced Task's too,
    whose images the controller resolves at run time: an arm64 toleration decided on the
    inline multi-arch images alone would let an amd64-only referenced task onto arm64."""
    text = PIPELINE_RUN.format(version="v1").replace(
        "registry.test/builder-amd64:1", "registry.test/builder:1"
    ) + ("    - name: deploy\n      taskRef: {name: kubectl-deploy}\n")
    (run,), result = _mutate(text)
    assert run == yaml.safe_load(text)
    (finding,) = result.findings
    assert finding.rule == "image-chosen-by-operator" and "taskRef" in finding.message


def test_a_rook_arbiter_placement_that_sets_anything_is_placed_alone() -> None:
    """GetArbiterPlacement: the arbiter mon takes placement.arbiter alone, not merged with
    all, when it is not empty: the constraint goes there too; an empty one is left empty (it
    would otherwise replace the mons' placement for the arbiter)."""
    text = CEPH + ("    arbiter:\n      tolerations: [{key: arbiter, operator: Exists}]\n")
    (ceph,), _ = _mutate(text)
    arbiter = ceph["spec"]["placement"]["arbiter"]  # type: ignore[index]
    assert arbiter["tolerations"] == [{"key": "arbiter", "operator": "Exists"}]
    assert arbiter["nodeAffinity"] == ARCH_IN_AMD64["nodeAffinity"]
    (ceph,), _ = _mutate(CEPH + "    arbiter: {}\n")
    assert ceph["spec"]["placement"]["arbiter"] == {}  # type: ignore[index]


EXTERNAL_CEPH = """\
apiVersion: ceph.rook.io/v1
kind: CephCluster
metadata: {name: external, namespace: rook-ceph-external}
spec:
  external: {enable: true}
  crashCollector: {disable: true}
  placement:
    mgr:
      tolerations: [{key: mgr, operator: Exists}]
"""


def test_an_external_rook_cluster_without_an_image_runs_no_pod() -> None:
    """cluster_external.go configureExternalCephCluster: no daemon, and no version job without
    spec.cephVersion.image; it used to be an image-chosen-by-operator warning and a pod."""
    (ceph,), result = _mutate(EXTERNAL_CEPH)
    assert ceph["spec"] == yaml.safe_load(EXTERNAL_CEPH)["spec"]
    assert result.pods == []
    assert result.findings == []


def test_an_external_rook_cluster_with_an_image_places_only_its_version_job() -> None:
    """version.go detectCephVersion: the job running spec.cephVersion.image takes the mons'
    placement (all merged with mon); mgr and osd run nowhere."""
    text = EXTERNAL_CEPH.replace(
        "  external:", "  cephVersion: {image: registry.test/ceph-amd64:v19}\n  external:"
    )
    (ceph,), result = _mutate(text)
    placement = ceph["spec"]["placement"]  # type: ignore[index]
    assert placement["all"] == ARCH_IN_AMD64
    assert placement["mgr"] == {"tolerations": [{"key": "mgr", "operator": "Exists"}]}
    assert [str(pod.target.field_path) for pod in result.pods] == ["spec.placement.all"]


# -- RabbitMQ: an override's pod spec patched over spec's -------------------------------------

RABBITMQ = """\
apiVersion: rabbitmq.com/v1beta1
kind: RabbitmqCluster
metadata: {name: rabbit}
spec:
  image: registry.test/rabbitmq-amd64:4
  affinity:
    podAntiAffinity:
      preferredDuringSchedulingIgnoredDuringExecution: []
  override:
    statefulSet:
      spec:
        template:
          spec:
            affinity:
              nodeAffinity:
                requiredDuringSchedulingIgnoredDuringExecution:
                  nodeSelectorTerms:
                  - matchExpressions:
                    - {key: pool, operator: In, values: [queues]}
            containers: []
"""


def test_a_rabbitmq_override_affinity_replaces_the_node_selector_terms_so_it_gets_the_term() -> (
    None
):
    """patchPodSpec (a strategic merge patch): the override's nodeSelectorTerms replace those
    of spec.affinity, so the term written only there was dropped from the pods."""
    (rabbit,), _ = _mutate(RABBITMQ)
    spec = rabbit["spec"]
    override = spec["override"]["statefulSet"]["spec"]["template"]["spec"]  # type: ignore[index]
    terms = override["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
        "nodeSelectorTerms"
    ]
    assert terms == [
        {
            "matchExpressions": [
                {"key": "pool", "operator": "In", "values": ["queues"]},
                {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]},
            ]
        }
    ]
    assert spec["affinity"]["nodeAffinity"] == ARCH_IN_AMD64["nodeAffinity"]  # type: ignore[index]
    assert "tolerations" not in override


def test_a_rabbitmq_override_without_placement_fields_takes_spec_alone() -> None:
    text = RABBITMQ.split("            affinity:\n", 1)[0] + "            containers: []\n"
    (rabbit,), result = _mutate(text)
    override = rabbit["spec"]["override"]["statefulSet"]["spec"]["template"]["spec"]  # type: ignore[index]
    assert override == {"containers": []}
    assert [str(pod.target.field_path) for pod in result.pods] == ["spec"]
