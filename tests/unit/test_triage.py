"""The pure part of triage (kmultiarch/core/triage/diagnosis.py) and the owner chain
(kmultiarch/assess/triage.py): what is kept of an object, which messages are architecture
failures, and which cause each is.

The messages are those the components print (sources quoted where each is used): the
scheduler's plugins (pkg/scheduler/framework/plugins/tainttoleration: "node(s) had untolerated
taint {%s: %s}"; nodeaffinity: ErrReasonPod = "node(s) didn't match Pod's node
affinity/selector"; releases before 1.25 printed "node(s) had taint {%s: %s}, that the pod
didn't tolerate"), cluster-autoscaler (NotTriggerScaleUp, "pod didn't trigger scale-up: ..."),
containerd (core/images/image.go: "no match for platform in manifest: %w"), CRI-O through
containers/image (internal/manifest/oci_index.go: "no image found in image index for
architecture %q, variant %q, OS %q"; docker_list.go: "no image found in manifest list for
architecture ..."), Docker ("no matching manifest for linux/arm64/v8 in the manifest list
entries"), runc ("exec: \"/app\": exec format error"), and the multiarch-tuning-operator
(pkg/utils/const.go: label multiarch.openshift.io/exec-format-error, reason ExecFormatError).
"""

from __future__ import annotations

from typing import Any

import pytest

from kmultiarch.assess.triage import owner_chain, triage
from kmultiarch.core.findings import ResourceRef
from kmultiarch.core.images.platform import Platform
from kmultiarch.core.policy.model import Policy
from kmultiarch.core.triage.clusterstate import (
    ClusterState,
    DumpShapeError,
    Node,
    Taint,
    event_of,
    pod_of,
)
from kmultiarch.core.triage.diagnosis import (
    ImageFacts,
    PodFailure,
    TemplateFacts,
    classify,
    failures,
    required_architectures,
    scheduling_reasons,
    tolerated,
)

AMD64 = Platform("linux", "amd64")
ARM64 = Platform("linux", "arm64")
ARM_TAINT = Taint("kubernetes.io/arch", "arm64", "NoSchedule")


def pod(
    name: str = "web-6b8d5f7c9d-q4wzt",
    *,
    node: str = "",
    phase: str = "Running",
    labels: dict[str, str] | None = None,
    owners: list[dict[str, Any]] | None = None,
    state: dict[str, Any] | None = None,
    last_state: dict[str, Any] | None = None,
    spec: dict[str, Any] | None = None,
    conditions: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """A Pod as the API serves it (metadata, spec, status; core/v1 PodStatus)."""
    body: dict[str, Any] = {"containers": [{"name": "web", "image": "registry.example/web:1"}]}
    if node:
        body["nodeName"] = node
    body.update(spec or {})
    status: dict[str, Any] = {"phase": phase}
    if state is not None or last_state is not None:
        status["containerStatuses"] = [
            {
                "name": "web",
                "image": "registry.example/web:1",
                "imageID": "",
                "ready": False,
                "restartCount": 1,
                "state": state or {},
                "lastState": last_state or {},
            }
        ]
    if conditions:
        status["conditions"] = conditions
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": "shop",
            "uid": f"uid-{name}",
            "labels": labels or {},
            "ownerReferences": owners or [],
        },
        "spec": body,
        "status": status,
    }


def owner(api_version: str, kind: str, name: str) -> dict[str, Any]:
    return {
        "apiVersion": api_version,
        "kind": kind,
        "name": name,
        "uid": f"uid-{kind}-{name}",
        "controller": True,
        "blockOwnerDeletion": True,
    }


def core_event(pod_name: str, reason: str, message: str, kind: str = "Warning") -> dict[str, Any]:
    """A core/v1 Event: involvedObject, message, source.component, count."""
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": f"{pod_name}.1", "namespace": "shop"},
        "involvedObject": {
            "apiVersion": "v1",
            "kind": "Pod",
            "name": pod_name,
            "namespace": "shop",
            "uid": f"uid-{pod_name}",
        },
        "reason": reason,
        "message": message,
        "type": kind,
        "count": 4,
        "source": {"component": "kubelet"},
    }


def new_event(pod_name: str, reason: str, note: str, kind: str = "Warning") -> dict[str, Any]:
    """An events.k8s.io/v1 Event: regarding, note, reportingController, series."""
    return {
        "apiVersion": "events.k8s.io/v1",
        "kind": "Event",
        "metadata": {"name": f"{pod_name}.2", "namespace": "shop"},
        "regarding": {"apiVersion": "v1", "kind": "Pod", "name": pod_name, "namespace": "shop"},
        "reason": reason,
        "note": note,
        "type": kind,
        "reportingController": "default-scheduler",
        "series": {"count": 12, "lastObservedTime": "2026-11-27T09:41:12.000000Z"},
    }


def node(name: str, arch: str, taints: list[dict[str, str]] | None = None) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {"kubernetes.io/arch": arch, "kubernetes.io/os": "linux"},
        },
        "spec": {"taints": taints or []},
    }


def state_of(*items: dict[str, Any]) -> ClusterState:
    state = ClusterState()
    for item in items:
        state.add(item, "dump.json")
    return state


# --- what is kept ---------------------------------------------------------------------------


def test_a_running_pod_is_not_kept_a_failing_one_is() -> None:
    assert pod_of(pod(node="amd-1")) is None
    crashed = pod_of(
        pod(node="arm-1", last_state={"terminated": {"reason": "Error", "exitCode": 1}})
    )
    assert crashed is not None
    assert crashed.containers[0].states == (
        ("status.containerStatuses[0].lastState.terminated", "Error"),
    )
    assert pod_of(pod(phase="Pending")) is not None
    labelled = pod_of(pod(labels={"multiarch.openshift.io/exec-format-error": "true"}))
    assert labelled is not None


def test_events_of_both_api_groups_are_read_alike() -> None:
    message = (
        "0/2 nodes are available: 2 node(s) had untolerated taint {kubernetes.io/arch: arm64}."
    )
    old = event_of(core_event("p", "FailedScheduling", message))
    new = event_of(new_event("p", "FailedScheduling", message))
    assert old is not None and new is not None
    assert (old.object_kind, old.object_name, old.reason, old.message) == (
        new.object_kind,
        new.object_name,
        new.reason,
        new.message,
    )
    assert old.where == "event Warning FailedScheduling from kubelet (core/v1, x4)"
    assert new.where == (
        "event Warning FailedScheduling from default-scheduler (events.k8s.io/v1, x12)"
    )
    # Most events say nothing of an architecture: not kept.
    assert event_of(core_event("p", "Pulled", 'Successfully pulled image "x"')) is None
    assert event_of(new_event("p", "Scheduled", "Successfully assigned shop/p to n")) is None


def test_an_event_with_a_field_of_the_wrong_type_is_refused() -> None:
    bad = core_event("p", "FailedScheduling", "0/1 nodes")
    bad["involvedObject"] = ["Pod"]
    with pytest.raises(DumpShapeError, match="involvedObject is not an object"):
        event_of(bad)


# --- recognising ----------------------------------------------------------------------------

SCHEDULER_MESSAGES = [
    (
        "0/3 nodes are available: 1 node(s) didn't match Pod's node affinity/selector, 2 "
        "node(s) had untolerated taint {kubernetes.io/arch: arm64}. preemption: 0/3 nodes are "
        "available: 3 Preemption is not helpful for scheduling.",
        ((ARM_TAINT,), 0, 1),
    ),
    (
        "0/5 nodes are available: 5 node(s) had untolerated taint(s). preemption: 0/5 nodes "
        "are available: 5 Preemption is not helpful for scheduling.",
        ((), 5, 0),
    ),
    (
        "0/2 nodes are available: 2 node(s) had taint {kubernetes.io/arch: arm64}, that the "
        "pod didn't tolerate.",
        ((ARM_TAINT,), 0, 0),
    ),
    ("0/4 nodes are available: 4 node(s) didn't match node selector.", ((), 0, 4)),
    ("0/4 nodes are available: 4 Insufficient cpu.", ((), 0, 0)),
    (
        "pod didn't trigger scale-up: 1 node(s) didn't match Pod's node affinity/selector, 2 "
        "node(s) had untolerated taint {kubernetes.io/arch: arm64}",
        ((ARM_TAINT,), 0, 1),
    ),
]


@pytest.mark.parametrize(("message", "expected"), SCHEDULER_MESSAGES)
def test_scheduling_messages_are_read(
    message: str, expected: tuple[tuple[Taint, ...], int, int]
) -> None:
    reasons = scheduling_reasons(message)
    assert (reasons.untolerated, reasons.untolerated_unnamed, reasons.affinity) == expected


AFFINITY_ARCH = {
    "nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [
                {
                    "matchExpressions": [
                        {
                            "key": "kubernetes.io/arch",
                            "operator": "In",
                            "values": ["amd64", "arm64"],
                        }
                    ]
                }
            ]
        }
    }
}
AFFINITY_OTHER_TERM = {
    "nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [
                {
                    "matchExpressions": [
                        {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]}
                    ]
                },
                {"matchExpressions": [{"key": "disk", "operator": "In", "values": ["ssd"]}]},
            ]
        }
    }
}


@pytest.mark.parametrize(
    ("scheduling", "expected"),
    [
        ({}, None),
        ({"nodeSelector": {"kubernetes.io/arch": "arm64"}}, frozenset({"arm64"})),
        ({"affinity": AFFINITY_ARCH}, frozenset({"amd64", "arm64"})),
        (
            {"nodeSelector": {"kubernetes.io/arch": "arm64"}, "affinity": AFFINITY_ARCH},
            frozenset({"arm64"}),
        ),
        ({"affinity": AFFINITY_OTHER_TERM}, None),  # the second term allows any architecture
        ({"nodeSelector": {"disk": "ssd"}}, None),
    ],
)
def test_required_architectures(
    scheduling: dict[str, Any], expected: frozenset[str] | None
) -> None:
    assert required_architectures(scheduling) == expected


@pytest.mark.parametrize(
    ("tolerations", "expected"),
    [
        ([], False),
        ([{"operator": "Exists"}], True),
        ([{"key": "kubernetes.io/arch", "operator": "Exists"}], True),
        ([{"key": "kubernetes.io/arch", "value": "arm64", "effect": "NoSchedule"}], True),
        ([{"key": "kubernetes.io/arch", "value": "amd64"}], False),
        ([{"key": "kubernetes.io/arch", "operator": "Exists", "effect": "NoExecute"}], False),
    ],
)
def test_tolerated(tolerations: list[dict[str, Any]], expected: bool) -> None:
    assert tolerated(ARM_TAINT, tolerations) is expected


RUNC_START_ERROR = (
    "failed to create containerd task: failed to create shim task: OCI runtime create failed: "
    'runc create failed: unable to start container process: exec: "/usr/bin/web": exec format '
    "error: unknown"
)


@pytest.mark.parametrize(
    ("item", "events", "kind"),
    [
        # The message of a container whose logs are its termination message
        # (FallbackToLogsOnError): exec(3)'s ENOEXEC as Go prints it.
        (
            pod(
                node="arm-1",
                last_state={
                    "terminated": {"reason": "Error", "message": "exec /web: exec format error\n"}
                },
            ),
            [],
            "exec-format-error",
        ),
        # runc cannot start the process: the kubelet's StartError.
        (
            pod(
                node="arm-1",
                last_state={"terminated": {"reason": "StartError", "message": RUNC_START_ERROR}},
            ),
            [],
            "exec-format-error",
        ),
        # The event only, through the events.k8s.io API.
        (
            pod(node="arm-1", phase="Pending"),
            [new_event("web-6b8d5f7c9d-q4wzt", "Failed", f"Error: {RUNC_START_ERROR}")],
            "exec-format-error",
        ),
        # The multiarch-tuning-operator's label.
        (
            pod(node="arm-1", labels={"multiarch.openshift.io/exec-format-error": "true"}),
            [],
            "exec-format-error",
        ),
        # containerd's pull error, as the kubelet puts it in the waiting state.
        (
            pod(
                node="arm-1",
                phase="Pending",
                state={
                    "waiting": {
                        "reason": "ErrImagePull",
                        "message": "rpc error: code = NotFound desc = failed to pull and unpack "
                        'image "registry.example/web:1": no match for platform in manifest: '
                        "not found",
                    }
                },
            ),
            [],
            "image-platform",
        ),
        # CRI-O's (containers/image), in a core/v1 event of the kubelet.
        (
            pod(node="arm-1", phase="Pending"),
            [
                core_event(
                    "web-6b8d5f7c9d-q4wzt",
                    "Failed",
                    'Failed to pull image "registry.example/web:1": choosing image instance: '
                    'no image found in image index for architecture "arm64", variant "v8", OS '
                    '"linux"',
                )
            ],
            "image-platform",
        ),
    ],
)
def test_failures_are_recognised(item: dict[str, Any], events: list[Any], kind: str) -> None:
    found = failures(state_of(item, *events, node("arm-1", "arm64")))
    assert [failure.kind for failure in found] == [kind]
    assert found[0].node is not None and found[0].node.platform == ARM64
    assert found[0].evidence[0].text


def test_scheduling_failures_are_recognised_only_when_they_concern_the_architecture() -> None:
    pending = pod(phase="Pending")
    taint = "0/1 nodes are available: 1 node(s) had untolerated taint {kubernetes.io/arch: arm64}."
    assert [
        f.kind
        for f in failures(
            state_of(pending, core_event(pending["metadata"]["name"], "FailedScheduling", taint))
        )
    ] == ["unschedulable"]
    other_taint = "0/1 nodes are available: 1 node(s) had untolerated taint {dedicated: gpu}."
    assert (
        failures(
            state_of(pending, core_event("web-6b8d5f7c9d-q4wzt", "FailedScheduling", other_taint))
        )
        == []
    )
    # The policy's own per-platform taint counts as the architecture's.
    assert failures(
        state_of(pending, core_event("web-6b8d5f7c9d-q4wzt", "FailedScheduling", other_taint)),
        taint_keys=("dedicated",),
    )
    resources = "0/3 nodes are available: 3 Insufficient memory."
    assert (
        failures(
            state_of(pending, core_event("web-6b8d5f7c9d-q4wzt", "FailedScheduling", resources))
        )
        == []
    )
    # An affinity mismatch counts when the pod constrains the architecture.
    affinity = "0/3 nodes are available: 3 node(s) didn't match Pod's node affinity/selector."
    assert (
        failures(
            state_of(pending, core_event("web-6b8d5f7c9d-q4wzt", "FailedScheduling", affinity))
        )
        == []
    )
    selecting = pod(phase="Pending", spec={"nodeSelector": {"kubernetes.io/arch": "arm64"}})
    found = failures(
        state_of(
            selecting,
            new_event(
                "web-6b8d5f7c9d-q4wzt",
                "NotTriggerScaleUp",
                "pod didn't trigger scale-up: 1 node(s) didn't match Pod's node affinity/selector",
                kind="Normal",
            ),
        )
    )
    assert [f.kind for f in found] == ["no-scale-up"]
    assert found[0].required_architectures == frozenset({"arm64"})


def test_unnamed_untolerated_taints_are_read_from_the_nodes() -> None:
    pending = pod(phase="Pending")
    message = "0/2 nodes are available: 1 Insufficient cpu, 1 node(s) had untolerated taint(s)."
    found = failures(
        state_of(
            pending,
            core_event("web-6b8d5f7c9d-q4wzt", "FailedScheduling", message),
            node("amd-1", "amd64"),
            node(
                "arm-1",
                "arm64",
                [{"key": "kubernetes.io/arch", "value": "arm64", "effect": "NoSchedule"}],
            ),
        )
    )
    assert [f.untolerated for f in found] == [(ARM_TAINT,)]


# --- classifying ----------------------------------------------------------------------------

WEB = ResourceRef("apps/v1", "Deployment", "web", "shop")


def failure_of(kind: str, *, node_arch: str = "arm64", **extra: Any) -> PodFailure:
    kept = pod_of(pod(node="arm-1" if node_arch else "", phase="Pending"))
    assert kept is not None
    from kmultiarch.core.triage.diagnosis import Evidence

    return PodFailure(
        kept,
        kind,  # type: ignore[arg-type]
        (Evidence(kind, "somewhere", "text", "web"),),  # type: ignore[arg-type]
        node=Node("arm-1", {"kubernetes.io/arch": node_arch}) if node_arch else None,
        **extra,
    )


def image(platforms: set[Platform] | None, **extra: Any) -> ImageFacts:
    return ImageFacts(
        "web",
        "registry.example/web:1",
        frozenset(platforms) if platforms is not None else None,
        **extra,
    )


def template(status: str, **extra: Any) -> TemplateFacts:
    return TemplateFacts(WEB, status, source="deploy/web.yaml", line=14, **extra)


NEEDS_AFFINITY = template(
    "needs-change", changes=("require node affinity kubernetes.io/arch In [amd64]",)
)


@pytest.mark.parametrize(
    ("failure", "images", "manifest", "cause", "next_step"),
    [
        (
            failure_of("exec-format-error"),
            [image({AMD64})],
            NEEDS_AFFINITY,
            "missing-constraint",
            "kmultiarch fix deploy/web.yaml",
        ),
        (
            failure_of("exec-format-error"),
            [image({AMD64, ARM64}, verification="mismatch: /web is built for x86-64")],
            template("ok"),
            "image-lies",
            "kmultiarch verify registry.example/web:1",
        ),
        (
            failure_of("image-platform"),
            [image({AMD64}, pinned=True, single_manifest=True)],
            NEEDS_AFFINITY,
            "platform-pinned-digest",
            "pin the digest of the tag's index instead, then run `kmultiarch fix deploy/web.yaml`",
        ),
        (
            failure_of("unschedulable", node_arch="", required_architectures=frozenset({"arm64"})),
            [image({AMD64})],
            template("scheduling-conflict", problems=("nodeSelector asks for arm64",)),
            "over-constrained",
            "change the nodeSelector/affinity or the tolerations in deploy/web.yaml:14",
        ),
        (
            failure_of("unschedulable", node_arch="", untolerated=(ARM_TAINT,)),
            [image({AMD64, ARM64})],
            template(
                "needs-change", changes=("add toleration kubernetes.io/arch=arm64:NoSchedule",)
            ),
            "missing-constraint",
            "kmultiarch fix deploy/web.yaml",
        ),
        (
            # The taint is not tolerated though the images run there, and mutate would not
            # add the toleration (the policy does not know the taint): over-constrained.
            failure_of("unschedulable", node_arch="", untolerated=(ARM_TAINT,)),
            [image({AMD64, ARM64})],
            template("ok"),
            "over-constrained",
            "change the nodeSelector/affinity or the tolerations in deploy/web.yaml:14",
        ),
        (
            failure_of("exec-format-error"),
            [image(None)],
            None,
            "undetermined",
            "kmultiarch inspect registry.example/web:1",
        ),
    ],
)
def test_each_cause(
    failure: PodFailure,
    images: list[ImageFacts],
    manifest: TemplateFacts | None,
    cause: str,
    next_step: str,
) -> None:
    diagnosis = classify(
        failure, images, manifest, None, manifests_given=True, owner="Deployment shop/web"
    )
    assert diagnosis is not None
    assert (diagnosis.cause, diagnosis.next_step) == (cause, next_step)
    if cause == "image-lies":
        assert "verification: mismatch: /web is built for x86-64" in diagnosis.detail


PINNED_FINDING = (
    "image 'registry.example/web:1@sha256:aa' of container 'web' pins the linux/amd64 manifest "
    "of the index tag 1 names: every node pulls linux/amd64; pin the index sha256:bb instead"
)


@pytest.mark.parametrize(
    ("node_arch", "cause", "next_step"),
    [
        ("amd64", "image-lies", "kmultiarch verify registry.example/web:1"),
        ("arm64", "platform-pinned-digest", "pin the digest of the tag's index instead, then run"),
    ],
)
def test_a_pin_to_the_nodes_own_platform_is_not_the_cause_of_an_exec_format_error(
    node_arch: str, cause: str, next_step: str
) -> None:
    """Pinned to the index's linux/amd64 manifest (the engine's platform-pinned-digest), the
    template already required on amd64, the container dies with exec format error on an amd64
    node: it ran the platform pinned, so the image lies about it. Before: the pin was said."""
    diagnosis = classify(
        failure_of("exec-format-error", node_arch=node_arch),
        [image({AMD64}, pinned=True, single_manifest=True)],
        template("ok", pinned_digest_findings=(PINNED_FINDING,)),
        None,
        manifests_given=True,
        owner="Deployment shop/web",
    )
    assert diagnosis is not None
    assert diagnosis.cause == cause
    assert diagnosis.next_step.startswith(next_step)
    if cause == "image-lies":
        assert "lists linux/amd64, the node's platform" in diagnosis.detail


def test_not_in_manifests_names_the_owner_and_what_the_pod_lacks() -> None:
    pod_view = TemplateFacts(
        ResourceRef("v1", "Pod", "web-6b8d5f7c9d-q4wzt", "shop"),
        "needs-change",
        changes=("require node affinity kubernetes.io/arch In [amd64]",),
    )
    diagnosis = classify(
        failure_of("exec-format-error"),
        [image({AMD64})],
        None,
        pod_view,
        manifests_given=True,
        owner="Deployment shop/web",
    )
    assert diagnosis is not None and diagnosis.cause == "not-in-manifests"
    assert diagnosis.detail == (
        "Deployment shop/web is not in the manifests given; its pods lack what mutate would "
        "add: require node affinity kubernetes.io/arch In [amd64]"
    )
    # Without manifests: classified from the pod, the owner named.
    alone = classify(
        failure_of("exec-format-error"),
        [image({AMD64})],
        None,
        pod_view,
        manifests_given=False,
        owner="Deployment shop/web",
    )
    assert alone is not None and alone.cause == "missing-constraint"
    assert "Deployment shop/web" in alone.next_step


def test_a_scheduling_failure_that_is_not_the_architecture_is_dropped() -> None:
    # Nodes of arm64 are tainted and the images do not run there: not why the pod waits.
    diagnosis = classify(
        failure_of("unschedulable", node_arch="", untolerated=(ARM_TAINT,)),
        [image({AMD64})],
        template("ok"),
        None,
        manifests_given=True,
        owner="Deployment shop/web",
    )
    assert diagnosis is None


def test_no_node_of_the_required_architecture() -> None:
    diagnosis = classify(
        failure_of("unschedulable", node_arch="", required_architectures=frozenset({"arm64"})),
        [image({AMD64, ARM64})],
        template("ok"),
        None,
        manifests_given=True,
        owner="Deployment shop/web",
        cluster_architectures=frozenset({"amd64"}),
    )
    assert diagnosis is not None and diagnosis.cause == "over-constrained"
    assert "no node of the cluster has it" in diagnosis.detail


# --- owners ---------------------------------------------------------------------------------


def replica_set(name: str, deployment: str) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {
            "name": name,
            "namespace": "shop",
            "uid": f"uid-ReplicaSet-{name}",
            "ownerReferences": [owner("apps/v1", "Deployment", deployment)],
        },
    }


def chain_of(*items: dict[str, Any]) -> list[tuple[tuple[str, str, str, str], bool]]:
    state = state_of(*items)
    (kept,) = state.pods.values()
    return owner_chain(kept, state)


def test_pod_to_replica_set_to_deployment() -> None:
    failing = pod(
        phase="Pending",
        labels={"pod-template-hash": "6b8d5f7c9d"},
        owners=[owner("apps/v1", "ReplicaSet", "web-6b8d5f7c9d")],
    )
    expected = [
        (("apps", "ReplicaSet", "shop", "web-6b8d5f7c9d"), False),
        (("apps", "Deployment", "shop", "web"), False),
    ]
    assert chain_of(failing, replica_set("web-6b8d5f7c9d", "web")) == expected
    # Without the ReplicaSet in the dump: the Deployment from the pod-template-hash.
    assert chain_of(failing) == [expected[0], (expected[1][0], True)]


def test_pod_to_stateful_set() -> None:
    failing = pod("db-0", phase="Pending", owners=[owner("apps/v1", "StatefulSet", "db")])
    assert chain_of(failing) == [(("apps", "StatefulSet", "shop", "db"), False)]


def test_job_to_cron_job() -> None:
    failing = pod(
        "nightly-29403360-8kqfz",
        phase="Pending",
        owners=[owner("batch/v1", "Job", "nightly-29403360")],
    )
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": "nightly-29403360",
            "namespace": "shop",
            "uid": "uid-Job-nightly-29403360",
            "ownerReferences": [owner("batch/v1", "CronJob", "nightly")],
        },
    }
    assert chain_of(failing, job) == [
        (("batch", "Job", "shop", "nightly-29403360"), False),
        (("batch", "CronJob", "shop", "nightly"), False),
    ]
    assert chain_of(failing)[-1] == (("batch", "CronJob", "shop", "nightly"), True)


def test_a_custom_resource_owns_the_chain() -> None:
    failing = pod(
        "logs-kb-7c9f8d6b5-2xk4p",
        phase="Pending",
        labels={"pod-template-hash": "7c9f8d6b5"},
        owners=[owner("apps/v1", "ReplicaSet", "logs-kb-7c9f8d6b5")],
    )
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "name": "logs-kb",
            "namespace": "shop",
            "uid": "uid-Deployment-logs-kb",
            "ownerReferences": [owner("kibana.k8s.elastic.co/v1", "Kibana", "logs")],
        },
    }
    kibana = {
        "apiVersion": "kibana.k8s.elastic.co/v1",
        "kind": "Kibana",
        "metadata": {"name": "logs", "namespace": "shop", "uid": "uid-Kibana-logs"},
    }
    assert [
        key
        for key, _ in chain_of(
            failing, replica_set("logs-kb-7c9f8d6b5", "logs-kb"), deployment, kibana
        )
    ] == [
        ("apps", "ReplicaSet", "shop", "logs-kb-7c9f8d6b5"),
        ("apps", "Deployment", "shop", "logs-kb"),
        ("kibana.k8s.elastic.co", "Kibana", "shop", "logs"),
    ]


def test_an_owner_cycle_ends() -> None:
    failing = pod(phase="Pending", owners=[owner("example.com/v1", "Loop", "a")])
    loop = {
        "apiVersion": "example.com/v1",
        "kind": "Loop",
        "metadata": {
            "name": "a",
            "namespace": "shop",
            "uid": "uid-Loop-a",
            "ownerReferences": [owner("example.com/v1", "Loop", "a")],
        },
    }
    assert chain_of(failing, loop) == [(("example.com", "Loop", "shop", "a"), False)]


class CountedObjects(dict[Any, Any]):
    """The dump's objects, counting the walks through all of them."""

    walks = 0

    def values(self) -> Any:
        self.walks += 1
        return super().values()

    def items(self) -> Any:
        self.walks += 1
        return super().items()

    def __iter__(self) -> Any:
        self.walks += 1
        return super().__iter__()


def test_owner_lookups_read_the_dumps_objects_once_not_once_per_failing_pod() -> None:
    """Each failing pod's owner, inferred from a name (its ReplicaSet or Job not in the dump),
    took its apiVersion from a walk through every object of the dump: failing pods x objects
    (500 x 30,000: 12 s). The references are read once; the first still names it."""
    crash = {"terminated": {"reason": "Error", "message": "exec /app: exec format error"}}
    failing = [
        pod(
            f"web{index}-6b8d5f7c9d-q4wzt",
            node="arm-1",
            labels={"pod-template-hash": "6b8d5f7c9d"},
            owners=[owner("apps/v1", "ReplicaSet", f"web{index}-6b8d5f7c9d")],
            last_state=crash,
        )
        for index in range(30)
    ]
    nightly = pod(
        "nightly-29403360-8kqfz",
        node="arm-1",
        owners=[owner("batch/v1", "Job", "nightly-29403360")],
        last_state=crash,
    )
    # An older Job of the CronJob, in the dump: the CronJob as it refers to it.
    older_job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": "nightly-29403300",
            "namespace": "shop",
            "uid": "uid-Job-nightly-29403300",
            "ownerReferences": [owner("batch/v1beta1", "CronJob", "nightly")],
        },
    }
    others = [replica_set(f"other{index}-5f7d8c6b54", f"other{index}") for index in range(200)]
    state = state_of(*failing, nightly, older_job, *others, node("arm-1", "arm64"))
    counted = CountedObjects(state.objects)
    state.objects = counted
    result = triage(state, failures(state), None, Policy(), manifests_given=False)
    workloads = {f.workload.display_name: f.workload.api_version for f in result.failures}
    assert len(workloads) == 31
    assert workloads["Deployment shop/web7"] == "apps/v1"
    assert workloads["CronJob shop/nightly"] == "batch/v1beta1"
    assert counted.walks <= 1, counted.walks


POD_NEEDS_AFFINITY = TemplateFacts(
    ResourceRef("v1", "Pod", "web-6b8d5f7c9d-q4wzt", "shop"),
    "needs-change",
    changes=("require node affinity kubernetes.io/arch In [amd64]",),
)


@pytest.mark.parametrize(
    ("status", "detail", "next_step"),
    [
        (
            "unknown",
            "Deployment shop/web is of a kind kmultiarch does not place; its pods lack what "
            "mutate would add: require node affinity kubernetes.io/arch In [amd64]",
            "declare where its pods' scheduling fields go in the policy's spec.podSpecs "
            "(docs/operators.md), then run `kmultiarch fix deploy/web.yaml`",
        ),
        (
            "skipped",
            "Deployment shop/web is opted out (kmultiarch.dev/skip); its pods lack what mutate "
            "would add: require node affinity kubernetes.io/arch In [amd64]",
            "remove the annotation and run `kmultiarch fix deploy/web.yaml`, or add the "
            "constraint by hand",
        ),
        (
            "ok",
            "the manifests already keep the pod where its images run, the pod does not: the "
            "cluster runs another render than the files (its pods lack what mutate would add: "
            "require node affinity kubernetes.io/arch In [amd64])",
            "deploy deploy/web.yaml again (render and apply it)",
        ),
    ],
)
def test_templates_kmultiarch_leaves_or_the_cluster_does_not_run(
    status: str, detail: str, next_step: str
) -> None:
    diagnosis = classify(
        failure_of("exec-format-error"),
        [image({AMD64})],
        template(status),
        POD_NEEDS_AFFINITY,
        manifests_given=True,
        owner="Deployment shop/web",
    )
    assert diagnosis is not None
    assert (diagnosis.cause, diagnosis.detail, diagnosis.next_step) == (
        "missing-constraint",
        detail,
        next_step,
    )


def test_an_exec_format_error_where_every_constraint_holds_is_the_image() -> None:
    # The node is not in the dump; template and pod keep it where the registry says it runs.
    diagnosis = classify(
        failure_of("exec-format-error", node_arch=""),
        [image({AMD64})],
        template("ok"),
        None,
        manifests_given=True,
        owner="Deployment shop/web",
    )
    assert diagnosis is not None and diagnosis.cause == "image-lies"
    assert diagnosis.next_step == "kmultiarch verify registry.example/web:1"


def test_a_requirement_that_leaves_out_nodes_where_the_images_run() -> None:
    """arm64 nodes full, amd64 nodes with room, the images multi-arch: the pod waits for the
    architecture it asked for (the scheduler: "node(s) didn't match Pod's node
    affinity/selector" for the amd64 ones, "Insufficient cpu" for the others)."""
    waiting = pod(phase="Pending", spec={"nodeSelector": {"kubernetes.io/arch": "arm64"}})
    message = (
        "0/5 nodes are available: 2 Insufficient cpu, 3 node(s) didn't match Pod's node "
        "affinity/selector. preemption: 0/5 nodes are available: 2 No preemption victims "
        "found for incoming pod, 3 Preemption is not helpful for scheduling."
    )
    (found,) = failures(
        state_of(
            waiting,
            core_event("web-6b8d5f7c9d-q4wzt", "FailedScheduling", message),
            node("amd-1", "amd64"),
            node("arm-1", "arm64"),
        )
    )
    assert found.room == frozenset({"amd64"})
    diagnosis = classify(
        found,
        [image({AMD64, ARM64})],
        template("ok"),
        None,
        manifests_given=True,
        owner="Deployment shop/web",
        cluster_architectures=frozenset({"amd64", "arm64"}),
    )
    assert diagnosis is not None and diagnosis.cause == "over-constrained"
    assert diagnosis.detail == (
        "the pod requires kubernetes.io/arch in [arm64], whose nodes did not take it, and "
        "leaves out the nodes of amd64, where its images run too and whose taints it tolerates"
    )
    # Images that run on arm64 only: the requirement is theirs, not an over-constraint.
    assert (
        classify(
            found,
            [image({ARM64})],
            template("ok"),
            None,
            manifests_given=True,
            owner="Deployment shop/web",
            cluster_architectures=frozenset({"amd64", "arm64"}),
        )
        is None
    )
