"""The webhook's handler (issue 37), without a network: an AdmissionReview in, the engine's
decision out as the review's JSONPatch, warnings or denial.

The property test is the issue's rule "one engine, two enforcement points": for generated pods,
the webhook's patch applied to the pod is the pod ``kmultiarch mutate`` writes under the same
policy (and the webhook denies exactly when mutate fails)."""

from __future__ import annotations

import base64
import contextlib
import io
import json
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import jsonpatch
import pytest
import yaml
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from support.admission import ARM_TOLERATION

from kmultiarch.admission.review import MalformedReview, answer_review
from kmultiarch.cli.app import run as run_cli
from kmultiarch.core.policy.model import Policy
from kmultiarch.io.config import load_policy
from kmultiarch.run.config import RunRequest, configure
from kmultiarch.run.session import Session

OVERRIDES = {
    "registry.test/both:1": ["linux/amd64", "linux/arm64"],
    "registry.test/amd:1": ["linux/amd64"],
    "registry.test/arm:1": ["linux/arm64"],
    "registry.test/all:1": ["linux/amd64", "linux/arm64", "linux/s390x"],
}
#: Not in the overrides: offline, nothing answers for it (an unresolvable image).
UNKNOWN = "registry.test/unknown:1"


def write_policy(directory: Path, **spec: Any) -> Path:
    document = {
        "apiVersion": "kmultiarch.dev/v1alpha1",
        "kind": "MultiArchPolicy",
        "metadata": {"name": "admission"},
        "spec": {
            "platforms": ["linux/amd64", "linux/arm64"],
            "tolerations": {"linux/arm64": [ARM_TOLERATION]},
            "overrides": [
                {"image": image, "platforms": platforms} for image, platforms in OVERRIDES.items()
            ],
            "exclude": {"namespaces": ["kube-system", "legacy-*"]},
            **spec,
        },
    }
    path = directory / "policy.yaml"
    path.write_text(yaml.safe_dump(document, sort_keys=False))
    return path


class Offline:
    """The handler's Admission over the run's own session (offline: overrides answer)."""

    def __init__(self, policy_file: Path, nodes: Mapping[str, dict[str, Any]] | None = None):
        self.policy: Policy = load_policy(str(policy_file))
        self.session = Session(configure(self.policy, RunRequest(offline=True, no_cache=True)))
        self.nodes = dict(nodes or {})

    def lookups_for(self, pod: Mapping[str, Any], namespace: str) -> Session:
        return self.session

    def node(self, name: str) -> Mapping[str, Any] | None:
        return self.nodes.get(name)

    def namespace(self, name: str) -> Mapping[str, Any] | None:
        return None


def review(
    pod: dict[str, Any],
    namespace: str = "default",
    *,
    operation: str = "CREATE",
    sub_resource: str | None = None,
    old: dict[str, Any] | None = None,
) -> bytes:
    request: dict[str, Any] = {
        "uid": str(uuid.uuid4()),
        "kind": {"group": "", "version": "v1", "kind": "Pod"},
        "resource": {"group": "", "version": "v1", "resource": "pods"},
        "namespace": namespace,
        "operation": operation,
        "object": pod,
        "dryRun": False,
    }
    if sub_resource:
        request["subResource"] = sub_resource
    if old is not None:
        request["oldObject"] = old
    return json.dumps(
        {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request}
    ).encode()


def pod_of(*images: str, init: tuple[str, ...] = (), **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "web"},
        "spec": {
            **spec,
            **(
                {"initContainers": [_container(f"i{n}", i) for n, i in enumerate(init)]}
                if init
                else {}
            ),
            "containers": [_container(f"c{n}", image) for n, image in enumerate(images)],
        },
    }


def _container(name: str, image: str) -> dict[str, Any]:
    return {"name": name, "image": image}


def patched(pod: dict[str, Any], response: Mapping[str, Any]) -> dict[str, Any]:
    if "patch" not in response:
        return pod
    assert response["patchType"] == "JSONPatch"
    operations = json.loads(base64.b64decode(response["patch"]))
    return jsonpatch.apply_patch(pod, operations)


# The handler ------------------------------------------------------------------------------


def test_a_pod_gets_the_engines_constraints_as_a_json_patch(tmp_path: Path) -> None:
    admission = Offline(write_policy(tmp_path))
    pod = pod_of("registry.test/arm:1", init=("registry.test/both:1",))
    answer = answer_review(review(pod), admission)
    response = answer.review["response"]
    assert response["allowed"] is True
    assert answer.outcome == "patched"
    result = patched(pod, response)
    assert ARM_TOLERATION in result["spec"]["tolerations"]
    terms = result["spec"]["affinity"]["nodeAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"
    ]["nodeSelectorTerms"]
    assert {"key": "kubernetes.io/arch", "operator": "In", "values": ["arm64"]} in terms[0][
        "matchExpressions"
    ]


def test_the_response_echoes_the_uid_and_version(tmp_path: Path) -> None:
    admission = Offline(write_policy(tmp_path))
    body = review(pod_of("registry.test/both:1"))
    answer = answer_review(body, admission)
    assert answer.review["apiVersion"] == "admission.k8s.io/v1"
    assert answer.review["kind"] == "AdmissionReview"
    assert answer.review["response"]["uid"] == json.loads(body)["request"]["uid"]


def test_a_pod_already_carrying_its_constraints_gets_an_empty_patch(tmp_path: Path) -> None:
    admission = Offline(write_policy(tmp_path))
    pod = pod_of("registry.test/arm:1")
    first = patched(pod, answer_review(review(pod), admission).review["response"])
    # Reinvocation (reinvocationPolicy IfNeeded) and a pod mutated at build time alike.
    again = answer_review(review(first), admission)
    assert again.outcome == "unchanged"
    assert "patch" not in again.review["response"]


def test_an_unresolvable_image_is_a_warning_and_the_pod_unchanged_under_ignore(
    tmp_path: Path,
) -> None:
    admission = Offline(write_policy(tmp_path))
    answer = answer_review(review(pod_of(UNKNOWN)), admission)
    response = answer.review["response"]
    assert response["allowed"] is True
    assert "patch" not in response
    assert any(UNKNOWN in warning for warning in response["warnings"])
    assert answer.outcome == "warned"


def test_beside_an_unresolvable_image_the_known_ones_only_narrow_the_pod(tmp_path: Path) -> None:
    """The engine's partial knowledge (docs/scheduling.md): the unknown image is never dropped
    from the decision; the pod is kept to where its known images run (a required affinity can
    only keep it off nodes) and given no toleration (which could send it where the unknown image
    does not run)."""
    admission = Offline(write_policy(tmp_path))
    pod = pod_of("registry.test/arm:1", UNKNOWN)
    response = answer_review(review(pod), admission).review["response"]
    assert response["allowed"] is True
    result = patched(pod, response)
    assert "tolerations" not in result["spec"]
    terms = result["spec"]["affinity"]["nodeAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"
    ]["nodeSelectorTerms"]
    assert terms[0]["matchExpressions"][0]["values"] == ["arm64"]
    assert any(UNKNOWN in warning for warning in response["warnings"])


def test_an_unresolvable_image_denies_the_pod_under_fail_naming_it(tmp_path: Path) -> None:
    admission = Offline(write_policy(tmp_path, failurePolicy="Fail"))
    answer = answer_review(review(pod_of(UNKNOWN)), admission)
    response = answer.review["response"]
    assert response["allowed"] is False
    assert UNKNOWN in response["status"]["message"]
    assert "--offline" in response["status"]["message"]  # why
    assert response["status"]["code"] == 403
    assert answer.outcome == "denied"


def test_a_conflict_is_a_warning(tmp_path: Path) -> None:
    admission = Offline(write_policy(tmp_path))
    answer = answer_review(review(pod_of("registry.test/arm:1", "registry.test/amd:1")), admission)
    response = answer.review["response"]
    assert response["allowed"] is True
    assert response["warnings"], response
    assert all(len(w) <= 250 for w in response["warnings"])


def test_an_image_volume_counts_as_the_pods_containers_do(tmp_path: Path) -> None:
    """Image volumes (spec.volumes[].image.reference, KEP-4639) are pulled for the node's
    platform: v1.20's API server has none, so this path is a review posted directly."""
    admission = Offline(write_policy(tmp_path))
    pod = pod_of("registry.test/both:1")
    pod["spec"]["volumes"] = [{"name": "models", "image": {"reference": "registry.test/arm:1"}}]
    response = answer_review(review(pod), admission).review["response"]
    result = patched(pod, response)
    assert ARM_TOLERATION in result["spec"]["tolerations"]
    terms = result["spec"]["affinity"]["nodeAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"
    ]["nodeSelectorTerms"]
    assert terms[0]["matchExpressions"][0]["values"] == ["arm64"]


@pytest.mark.parametrize("namespace", ["kube-system", "legacy-billing"])
def test_excluded_namespaces_are_left_alone(tmp_path: Path, namespace: str) -> None:
    admission = Offline(write_policy(tmp_path))
    answer = answer_review(review(pod_of("registry.test/arm:1"), namespace), admission)
    assert answer.outcome == "unchanged"
    assert "patch" not in answer.review["response"]


def test_opt_in_mode_judges_only_pods_that_ask(tmp_path: Path) -> None:
    admission = Offline(write_policy(tmp_path, mode="optIn"))
    plain = pod_of("registry.test/arm:1")
    assert answer_review(review(plain), admission).outcome == "unchanged"
    asking = pod_of("registry.test/arm:1")
    asking["metadata"]["annotations"] = {"kmultiarch.dev/enabled": "true"}
    assert answer_review(review(asking), admission).outcome == "patched"


@pytest.mark.parametrize(
    "body",
    [
        b"not json",
        b"[]",
        b'{"apiVersion": "v1", "kind": "Pod"}',
        b'{"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {}}',
    ],
)
def test_a_malformed_review_is_refused_with_the_reason(tmp_path: Path, body: bytes) -> None:
    with pytest.raises(MalformedReview):
        answer_review(body, Offline(write_policy(tmp_path)))


def test_a_review_without_an_object_gets_the_failure_policys_answer(tmp_path: Path) -> None:
    body = json.loads(review(pod_of("registry.test/arm:1")))
    del body["request"]["object"]
    ignore = answer_review(json.dumps(body).encode(), Offline(write_policy(tmp_path)))
    assert ignore.review["response"]["allowed"] is True
    assert ignore.review["response"]["warnings"]
    fail = answer_review(
        json.dumps(body).encode(), Offline(write_policy(tmp_path, failurePolicy="Fail"))
    )
    assert fail.review["response"]["allowed"] is False


# Ephemeral containers ---------------------------------------------------------------------

ARM_NODE = {
    "apiVersion": "v1",
    "kind": "Node",
    "metadata": {
        "name": "arm-1",
        "labels": {"kubernetes.io/arch": "arm64", "kubernetes.io/os": "linux"},
    },
}


def _bound(pod: dict[str, Any], *ephemeral: str) -> dict[str, Any]:
    pod = json.loads(json.dumps(pod))
    pod["metadata"]["namespace"] = "default"
    pod["spec"]["nodeName"] = "arm-1"
    if ephemeral:
        pod["spec"]["ephemeralContainers"] = [
            {"name": f"debugger-{n}", "image": image} for n, image in enumerate(ephemeral)
        ]
    return pod


def test_an_ephemeral_container_whose_image_cannot_run_on_the_node_is_denied(
    tmp_path: Path,
) -> None:
    admission = Offline(write_policy(tmp_path), {"arm-1": ARM_NODE})
    old = _bound(pod_of("registry.test/arm:1"))
    new = _bound(pod_of("registry.test/arm:1"), "registry.test/amd:1")
    answer = answer_review(
        review(new, operation="UPDATE", sub_resource="ephemeralcontainers", old=old), admission
    )
    response = answer.review["response"]
    assert response["allowed"] is False
    message = response["status"]["message"]
    assert "registry.test/amd:1" in message
    assert "arm-1" in message
    assert "linux/arm64" in message
    assert "exec format error" in message


def test_an_ephemeral_container_that_runs_on_the_node_is_admitted(tmp_path: Path) -> None:
    admission = Offline(write_policy(tmp_path), {"arm-1": ARM_NODE})
    old = _bound(pod_of("registry.test/arm:1"), "registry.test/amd:1")
    # The first debugger was admitted earlier (say, before the policy): only new ones count.
    new = _bound(pod_of("registry.test/arm:1"), "registry.test/amd:1", "registry.test/both:1")
    new["spec"]["ephemeralContainers"][0]["name"] = "debugger-0"
    answer = answer_review(
        review(new, operation="UPDATE", sub_resource="ephemeralcontainers", old=old), admission
    )
    assert answer.review["response"]["allowed"] is True


def test_an_ephemeral_container_of_unknown_platforms_follows_the_failure_policy(
    tmp_path: Path,
) -> None:
    old = _bound(pod_of("registry.test/arm:1"))
    new = _bound(pod_of("registry.test/arm:1"), UNKNOWN)
    body = review(new, operation="UPDATE", sub_resource="ephemeralcontainers", old=old)
    ignore = answer_review(body, Offline(write_policy(tmp_path), {"arm-1": ARM_NODE}))
    assert ignore.review["response"]["allowed"] is True
    assert UNKNOWN in ignore.review["response"]["warnings"][0]
    fail = answer_review(
        body, Offline(write_policy(tmp_path, failurePolicy="Fail"), {"arm-1": ARM_NODE})
    )
    assert fail.review["response"]["allowed"] is False


# One engine: the webhook's patch is mutate's change ---------------------------------------

IMAGES = st.sampled_from([*OVERRIDES, UNKNOWN])


@st.composite
def pods(draw: st.DrawFn) -> tuple[dict[str, Any], str]:
    images = draw(st.lists(IMAGES, min_size=1, max_size=3))
    init = tuple(draw(st.lists(IMAGES, max_size=2)))
    spec: dict[str, Any] = {}
    if draw(st.booleans()):
        spec["nodeSelector"] = draw(
            st.sampled_from([{"kubernetes.io/arch": "amd64"}, {"disk": "ssd"}])
        )
    if draw(st.booleans()):
        spec["tolerations"] = [
            draw(st.sampled_from([ARM_TOLERATION, {"key": "gpu", "operator": "Exists"}]))
        ]
    if draw(st.booleans()):
        spec["affinity"] = {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}
                    ]
                }
            }
        }
    pod = pod_of(*images, init=init, **spec)
    if draw(st.booleans()):
        pod["metadata"]["annotations"] = {"team": "web"}
    namespace = draw(st.sampled_from(["default", "shop", "kube-system", "legacy-x"]))
    return pod, namespace


def mutated_by_cli(pod: dict[str, Any], namespace: str, policy: Path, directory: Path) -> Any:
    """What ``kmultiarch mutate --offline`` writes for the pod (None: it failed)."""
    manifest = directory / "pod.yaml"
    manifest.write_text(yaml.safe_dump(pod, sort_keys=False))
    stdout, stderr = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        code = run_cli(
            [
                "mutate",
                "--quiet",
                "--offline",
                "--no-cache",
                "--config",
                str(policy),
                "--namespace",
                namespace,
                str(manifest),
            ]
        )
    if code != 0:
        return None
    return yaml.safe_load(stdout.getvalue())


@pytest.fixture(scope="module", params=["Ignore", "Fail"])
def policy_pair(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory):
    directory = tmp_path_factory.mktemp(f"policy-{request.param}")
    path = write_policy(directory, failurePolicy=request.param, annotate=True)
    return path, Offline(path), directory


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(case=pods())
def test_the_webhooks_patch_is_mutates_change(
    case: tuple[dict[str, Any], str], policy_pair
) -> None:
    pod, namespace = case
    policy, admission, directory = policy_pair
    answer = answer_review(review(pod, namespace), admission)
    response = answer.review["response"]
    expected = mutated_by_cli(pod, namespace, policy, directory)
    event(answer.outcome)
    if expected is None:
        assert response["allowed"] is False, "mutate failed: the webhook must deny"
        return
    assert response["allowed"] is True
    assert patched(pod, response) == expected
