"""Where pod specs live in each kind, List items, Argo Workflows templates, the skip annotation."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from jsonpointer import JsonPointer  # type: ignore[import-untyped]

from kmultiarch.core.operators.model import OperatorKind, Placement, catalogue_by_kind
from kmultiarch.core.operators.workloads import (
    POD_SPEC_PATHS,
    WORKFLOW_SPEC_PATHS,
    Workload,
    find_workloads,
    format_field_path,
    is_skipped,
)
from kmultiarch.core.patch import json_pointer

SKIP = "kmultiarch.dev/skip"


def pod_spec(prefix: str = "app") -> dict[str, Any]:
    return {
        "initContainers": [{"name": "init", "image": f"{prefix}-init:1"}],
        "containers": [
            {"name": "main", "image": f"{prefix}:1"},
            {"name": "sidecar", "image": f"{prefix}-sidecar:1"},
        ],
        "ephemeralContainers": [{"name": "debug", "image": "busybox"}],
    }


def nest(path: tuple[str, ...], value: Any) -> dict[str, Any]:
    for part in reversed(path):
        value = {part: value}
    return value  # type: ignore[no-any-return]


# apiVersion, kind, path to the pod spec: REFERENCE.md section 2, written out independently of
# the module's table (which this test also checks is covered entirely).
KINDS = [
    ("v1", "Pod", ("spec",)),
    ("v1", "PodTemplate", ("template", "spec")),
    ("v1", "ReplicationController", ("spec", "template", "spec")),
    ("apps/v1", "Deployment", ("spec", "template", "spec")),
    ("apps/v1", "StatefulSet", ("spec", "template", "spec")),
    ("apps/v1", "DaemonSet", ("spec", "template", "spec")),
    ("apps/v1", "ReplicaSet", ("spec", "template", "spec")),
    ("extensions/v1beta1", "Deployment", ("spec", "template", "spec")),
    ("extensions/v1beta1", "DaemonSet", ("spec", "template", "spec")),
    ("extensions/v1beta1", "ReplicaSet", ("spec", "template", "spec")),
    ("batch/v1", "Job", ("spec", "template", "spec")),
    ("batch/v1", "CronJob", ("spec", "jobTemplate", "spec", "template", "spec")),
    ("batch/v1beta1", "CronJob", ("spec", "jobTemplate", "spec", "template", "spec")),
    ("argoproj.io/v1alpha1", "Rollout", ("spec", "template", "spec")),
    ("serving.knative.dev/v1", "Service", ("spec", "template", "spec")),
    ("serving.knative.dev/v1", "Configuration", ("spec", "template", "spec")),
    ("keda.sh/v1alpha1", "ScaledJob", ("spec", "jobTargetRef", "template", "spec")),
]


def _group(api_version: str) -> str:
    return api_version.rpartition("/")[0]


def test_every_kind_in_the_table_is_tested() -> None:
    assert {(_group(v), k) for v, k, _ in KINDS} == set(POD_SPEC_PATHS)


@pytest.mark.parametrize(("api_version", "kind", "path"), KINDS)
def test_pod_spec_of_each_kind(api_version: str, kind: str, path: tuple[str, ...]) -> None:
    resource = {
        "apiVersion": api_version,
        "kind": kind,
        "metadata": {"name": "web", "namespace": "shop", "annotations": {"a": "b"}},
        **nest(path, pod_spec()),
    }
    (workload,) = find_workloads(resource)
    assert (workload.path, workload.api_version, workload.kind) == ((), api_version, kind)
    assert (workload.name, workload.namespace) == ("web", "shop")
    assert workload.display_name == f"{kind} shop/web"
    assert workload.annotations == {"a": "b"}
    (target,) = workload.targets
    assert target.path == path
    assert target.spec is resource_at(resource, path)
    assert target.field_path == ".".join(path)
    assert [(c.path, c.name, c.image) for c in target.containers] == [
        ((*path, "initContainers", 0), "init", "app-init:1"),
        ((*path, "containers", 0), "main", "app:1"),
        ((*path, "containers", 1), "sidecar", "app-sidecar:1"),
        ((*path, "ephemeralContainers", 0), "debug", "busybox"),
    ]


def resource_at(resource: Any, path: tuple[str | int, ...]) -> Any:
    for part in path:
        resource = resource[part]
    return resource


@pytest.mark.parametrize(
    "document",
    [
        None,
        "text",
        [{"apiVersion": "v1", "kind": "Pod", "spec": pod_spec()}],
        {"kind": "Pod", "spec": pod_spec()},  # no apiVersion
        {"apiVersion": "v1", "spec": pod_spec()},  # no kind
        {"apiVersion": "v1", "kind": "ConfigMap", "data": {"image": "x"}},
        {"apiVersion": "v1", "kind": "Service", "spec": {"template": {"spec": pod_spec()}}},
        {"apiVersion": "apps/v1", "kind": "Pod", "spec": pod_spec()},  # not the core group
        {
            "apiVersion": "example.com/v1",
            "kind": "Deployment",
            "spec": {"template": {"spec": pod_spec()}},
        },
        {"apiVersion": "apps/v1", "kind": "Deployment", "spec": {"template": {"spec": None}}},
        {"apiVersion": "apps/v1", "kind": "Deployment", "spec": {"template": "x"}},
        {
            "apiVersion": "argoproj.io/v1alpha1",
            "kind": "Rollout",
            "spec": {"workloadRef": {"kind": "Deployment", "name": "web"}},
        },
    ],
)
def test_documents_without_pod_specs(document: object) -> None:
    assert find_workloads(document) == []


def test_containers_without_an_image_are_not_images() -> None:
    spec = {
        "containers": [
            {"name": "a"},
            "junk",
            {"name": "b", "image": 5},
            {"name": "c", "image": "c:1"},
        ],
        "initContainers": None,
    }
    (workload,) = find_workloads({"apiVersion": "v1", "kind": "Pod", "spec": spec})
    assert [c.image for c in workload.targets[0].containers] == ["c:1"]
    assert workload.targets[0].containers[0].path == ("spec", "containers", 3)


def test_a_pod_spec_without_containers_is_still_a_target() -> None:
    (workload,) = find_workloads({"apiVersion": "v1", "kind": "Pod", "spec": {}})
    assert workload.targets[0].containers == ()


def test_list_items_are_walked_with_their_paths() -> None:
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "d"},
        "spec": {"template": {"spec": pod_spec("d")}},
    }
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": pod_spec("p")}
    document = {
        "apiVersion": "v1",
        "kind": "List",
        "items": [
            {"apiVersion": "v1", "kind": "ConfigMap"},
            deployment,
            {"apiVersion": "v1", "kind": "PodList", "items": [pod]},
        ],
    }
    workloads = find_workloads(document)
    assert [(w.path, w.name) for w in workloads] == [
        (("items", 1), "d"),
        (("items", 2, "items", 0), "p"),
    ]
    assert workloads[0].targets[0].path == ("items", 1, "spec", "template", "spec")
    assert workloads[1].targets[0].containers[0].path == (
        "items",
        2,
        "items",
        0,
        "spec",
        "initContainers",
        0,
    )


@pytest.mark.parametrize("items", [None, "x", {}])
def test_a_list_without_items_has_no_workloads(items: object) -> None:
    assert find_workloads({"apiVersion": "v1", "kind": "List", "items": items}) == []


# -- Argo Workflows ---------------------------------------------------------------------------


def workflow_spec() -> dict[str, Any]:
    return {
        "entrypoint": "main",
        "tolerations": [{"key": "pool", "operator": "Exists"}],
        "templates": [
            {"name": "main", "steps": [[{"name": "a", "template": "build"}]]},  # no pod
            {
                "name": "build",
                "container": {"image": "golang:1.22"},
                "metadata": {"annotations": {SKIP: "true"}},
            },
            {"name": "report", "script": {"image": "python:3.12", "source": "print(1)"}},
            {
                "name": "set",
                "containerSet": {
                    "containers": [
                        {"name": "one", "image": "alpine:3"},
                        {"name": "two", "image": "debian:12"},
                    ]
                },
            },
            {
                "name": "withsidecar",
                "container": {"name": "c", "image": "app:1"},
                "initContainers": [{"name": "i", "image": "init:1"}],
                "sidecars": [{"name": "s", "image": "envoy:1"}],
            },
            "junk",
            {"name": "resource", "resource": {"action": "create", "manifest": "x"}},
        ],
    }


@pytest.mark.parametrize(
    ("kind", "spec_path"),
    [
        ("Workflow", ("spec",)),
        ("WorkflowTemplate", ("spec",)),
        ("ClusterWorkflowTemplate", ("spec",)),
        ("CronWorkflow", ("spec", "workflowSpec")),
    ],
)
def test_argo_workflow_templates_are_pods(kind: str, spec_path: tuple[str, ...]) -> None:
    resource = {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": kind,
        "metadata": {"name": "wf"},
        **nest(spec_path, workflow_spec()),
    }
    (workload,) = find_workloads(resource)
    targets = {t.path: t for t in workload.targets}
    templates = (*spec_path, "templates")
    assert list(targets) == [(*templates, i) for i in (1, 2, 3, 4)]
    build, report, container_set, with_sidecar = targets.values()
    # the template itself holds tolerations/affinity/nodeSelector for its pod
    assert build.spec is resource_at(resource, (*templates, 1))
    assert [(c.path, c.name, c.image) for c in build.containers] == [
        ((*templates, 1, "container"), "build", "golang:1.22")  # named after the template
    ]
    assert [c.image for c in report.containers] == ["python:3.12"]
    assert [(c.path, c.name) for c in container_set.containers] == [
        ((*templates, 3, "containerSet", "containers", 0), "one"),
        ((*templates, 3, "containerSet", "containers", 1), "two"),
    ]
    assert [(c.name, c.image) for c in with_sidecar.containers] == [
        ("c", "app:1"),
        ("i", "init:1"),
        ("s", "envoy:1"),
    ]
    assert is_skipped(workload, build)
    assert not is_skipped(workload, report)


def test_workflow_kinds_table_is_covered() -> None:
    assert set(WORKFLOW_SPEC_PATHS) == {
        ("argoproj.io", k)
        for k in ("Workflow", "WorkflowTemplate", "ClusterWorkflowTemplate", "CronWorkflow")
    }


def test_a_workflow_without_pods_is_not_a_workload() -> None:
    resource = {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "Workflow",
        "spec": {"templates": [{"name": "s", "steps": []}]},
    }
    assert find_workloads(resource) == []


# -- skip annotation --------------------------------------------------------------------------


def _deployment(
    workload_annotations: object = None, template_annotations: object = None
) -> dict[str, Any]:
    resource: dict[str, Any] = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web"},
        "spec": {"template": {"metadata": {}, "spec": pod_spec()}},
    }
    if workload_annotations is not None:
        resource["metadata"]["annotations"] = workload_annotations
    if template_annotations is not None:
        resource["spec"]["template"]["metadata"]["annotations"] = template_annotations
    return resource


@pytest.mark.parametrize(
    ("workload_annotations", "template_annotations", "skipped"),
    [
        (None, None, False),
        ({SKIP: "true"}, None, True),
        ({SKIP: "True"}, None, True),
        ({SKIP: True}, None, True),  # an unquoted YAML boolean
        (None, {SKIP: "true"}, True),
        ({SKIP: "false"}, None, False),
        ({SKIP: "yes"}, None, False),
        ({SKIP: ""}, {"other": "true"}, False),
        ({"kmultiarch.dev/skipped": "true"}, None, False),
        ("not-a-mapping", ["x"], False),
    ],
)
def test_skip_annotation(
    workload_annotations: object, template_annotations: object, skipped: bool
) -> None:
    (workload,) = find_workloads(_deployment(workload_annotations, template_annotations))
    assert is_skipped(workload, workload.targets[0]) is skipped


def test_a_pod_is_skipped_by_its_own_annotation() -> None:
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "annotations": {SKIP: "true"}},
        "spec": pod_spec(),
    }
    (workload,) = find_workloads(pod)
    assert workload.targets[0].annotations == {}
    assert is_skipped(workload, workload.targets[0])


def test_find_workloads_does_not_modify_the_document() -> None:
    document = _deployment({SKIP: "true"})
    before = copy.deepcopy(document)
    find_workloads(document)
    assert document == before


def test_display_name_without_namespace() -> None:
    workload = Workload((), "v1", "Pod", "p", "", {}, ())
    assert workload.display_name == "Pod p"


# -- paths ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "field", "pointer"),
    [
        ((), "", ""),
        (("spec",), "spec", "/spec"),
        (
            ("spec", "containers", 0, "image"),
            "spec.containers[0].image",
            "/spec/containers/0/image",
        ),
        (("items", 2, "spec"), "items[2].spec", "/items/2/spec"),
        ((0, "a"), "[0].a", "/0/a"),
        (
            ("metadata", "annotations", "kmultiarch.dev/skip"),
            "metadata.annotations.kmultiarch.dev/skip",
            "/metadata/annotations/kmultiarch.dev~1skip",
        ),
        (("a~b", "c/d~1"), "a~b.c/d~1", "/a~0b/c~1d~01"),
        (("spec", "tolerations", "-"), "spec.tolerations.-", "/spec/tolerations/-"),
    ],
)
def test_field_path_and_json_pointer(path: tuple[str | int, ...], field: str, pointer: str) -> None:
    assert format_field_path(path) == field
    assert json_pointer(path) == pointer


@given(st.lists(st.text(max_size=6) | st.integers(0, 99), max_size=5))
def test_json_pointer_agrees_with_jsonpointer(path: list[str | int]) -> None:
    assert json_pointer(path) == JsonPointer.from_parts(path).path


def test_extra_pod_spec_paths_add_kinds_and_index_lists() -> None:
    resource = {
        "apiVersion": "example.com/v1",
        "kind": "Fleet",
        "metadata": {"name": "f"},
        "spec": {
            "pools": [
                {"template": {"metadata": {"annotations": {"a": "1"}}, "spec": _pod("x:1")}},
                {"template": {"spec": _pod("y:1")}},
            ]
        },
    }
    assert find_workloads(resource) == []
    operators = catalogue_by_kind(
        [
            OperatorKind(
                "example.com",
                "Fleet",
                (
                    Placement(("spec", "pools", "0", "template", "spec"), pod_spec=True),
                    Placement(("spec", "pools", "1", "template", "spec"), pod_spec=True),
                ),
            )
        ]
    )
    (workload,) = find_workloads(resource, operators)
    assert [t.containers[0].image for t in workload.targets] == ["x:1", "y:1"]
    assert workload.targets[0].annotations == {"a": "1"}
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "spec": {"template": {"spec": _pod("z:1")}},
    }
    # a path the built-in table has already is not visited twice
    restated = catalogue_by_kind(
        [
            OperatorKind(
                "apps", "Deployment", (Placement(("spec", "template", "spec"), pod_spec=True),)
            )
        ]
    )
    (same,) = find_workloads(deployment, restated)
    assert len(same.targets) == 1


def _pod(image: str) -> dict[str, object]:
    return {"containers": [{"name": "c", "image": image}]}


@pytest.mark.parametrize(
    ("image_id", "expected"),
    [
        ("docker.io/library/nginx@sha256:" + "a" * 64, "sha256:" + "a" * 64),
        ("docker-pullable://nginx@sha256:" + "b" * 64, "sha256:" + "b" * 64),
        ("sha256:" + "c" * 64, None),  # a local image ID, not a registry digest
        ("nginx@sha256:short", None),
        ("", None),
    ],
)
def test_a_running_pod_names_the_digest_it_runs(image_id: str, expected: str | None) -> None:
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "ns"},
        "spec": {
            "initContainers": [{"name": "init", "image": "busybox:1"}],
            "containers": [{"name": "app", "image": "nginx:1.27"}],
        },
        "status": {
            "containerStatuses": [{"name": "app", "image": "nginx:1.27", "imageID": image_id}],
            "initContainerStatuses": [{"name": "app", "imageID": "x@sha256:" + "d" * 64}],
        },
    }
    (workload,) = find_workloads(pod)
    init, app = workload.targets[0].containers
    assert app.running_digest == expected
    assert init.running_digest is None  # statuses are matched by group and name
