"""Issue 36 item 15 (and issue 39's partial knowledge): a pod some of whose images are unknown
(unresolvable, chosen by the operator, named by a run-time parameter) is kept to the platforms
its known images run on (a required node affinity never keeps it off a node it could run on)
and given no toleration (which could send it where an unknown image does not run); the warning
about the unknown images stays. Before, such a pod was left unchanged even when a known image
ran on amd64 only, and could land on an arm64 node."""

from __future__ import annotations

from collections.abc import Mapping

import pytest
import yaml
from support.operators import AMD64, ARCH_IN_AMD64, ARM64, resolve

from kmultiarch.api import mutate_text
from kmultiarch.core.findings import (
    IMAGE_CHOSEN_BY_OPERATOR,
    NEEDS_SCHEDULING,
    SCHEDULING_CONFLICT,
    UNRESOLVED_IMAGE,
)
from kmultiarch.core.images.reference import ImageRef
from kmultiarch.core.resolution import Resolution
from kmultiarch.engine import run_documents
from kmultiarch.errors import ResolutionError
from kmultiarch.io.config import parse_policy_text
from kmultiarch.yaml.stream import InputSource, read_stream


def _resolve_some(references: list[ImageRef]) -> Mapping[ImageRef, Resolution]:
    """As support.operators.resolve, but an image whose name has "missing" is not found."""
    answers = dict(resolve(references))
    for reference in references:
        if "missing" in str(reference):
            answers[reference] = Resolution(
                reference, error=ResolutionError(str(reference), "manifest unknown", status=404)
            )
    return answers


def _policy(spec: str = "  failurePolicy: Ignore\n") -> object:
    return parse_policy_text(
        "apiVersion: kmultiarch.dev/v1alpha1\nkind: MultiArchPolicy\nmetadata: {name: p}\n"
        f"spec:\n{spec}",
        "policy.yaml",
    )


def _deployment(*images: str, extra: str = "") -> str:
    containers = "".join(
        f"      - {{name: c{i}, image: {image}}}\n" for i, image in enumerate(images)
    )
    return (
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web, namespace: shop}\n"
        "spec:\n  template:\n    spec:\n"
        f"{extra}"
        f"      containers:\n{containers}"
    )


def _pod_spec(text: str) -> dict[str, object]:
    (document,) = yaml.safe_load_all(text)
    return document["spec"]["template"]["spec"]  # type: ignore[no-any-return]


def test_a_pod_with_an_unresolvable_image_and_an_amd64_only_one_is_kept_to_amd64() -> None:
    text = _deployment("registry.test/app-amd64:1", "registry.test/missing-sidecar:1")
    result = mutate_text(text, _policy(), resolve=_resolve_some)  # type: ignore[arg-type]
    spec = _pod_spec(result.stream())
    assert spec["affinity"] == ARCH_IN_AMD64
    assert "tolerations" not in spec
    (finding,) = [f for f in result.findings if f.rule == UNRESOLVED_IMAGE]
    assert finding.severity == "warning"
    assert "missing-sidecar" in finding.message
    assert "kept to linux/amd64" in finding.message and "no toleration" in finding.message
    (pod,) = result.pods
    assert pod.status == "unresolved" and pod.partial and pod.writes


def test_partial_knowledge_never_widens_a_pod_whose_known_images_run_everywhere() -> None:
    """The known image runs on arm64 too, but the unknown one may not: no toleration."""
    text = _deployment("registry.test/app:1", "registry.test/missing-sidecar:1")
    result = mutate_text(text, _policy(), resolve=_resolve_some)  # type: ignore[arg-type]
    assert result.stream() == text  # byte for byte
    (finding,) = [f for f in result.findings if f.rule == UNRESOLVED_IMAGE]
    assert "is left unchanged" in finding.message
    (pod,) = result.pods
    assert not pod.writes


def test_partial_knowledge_is_idempotent() -> None:
    text = _deployment("registry.test/app-amd64:1", "registry.test/missing-sidecar:1")
    once = mutate_text(text, _policy(), resolve=_resolve_some).stream()  # type: ignore[arg-type]
    twice = mutate_text(once, _policy(), resolve=_resolve_some).stream()  # type: ignore[arg-type]
    assert twice == once
    (pod,) = mutate_text(once, _policy(), resolve=_resolve_some).pods  # type: ignore[arg-type]
    assert not pod.writes


def test_under_failure_policy_fail_a_partially_known_pod_is_not_decided() -> None:
    text = _deployment("registry.test/app-amd64:1", "registry.test/missing-sidecar:1")
    result = mutate_text(text, _policy("  failurePolicy: Fail\n"), resolve=_resolve_some)  # type: ignore[arg-type]
    assert result.failed
    (pod,) = result.pods
    assert pod.status == "unresolved" and not pod.writes


def test_an_unparsable_reference_beside_an_amd64_only_image_still_narrows() -> None:
    text = _deployment("registry.test/app-amd64:1", "'registry.test/Bad Name:1'")
    result = mutate_text(text, _policy(), resolve=_resolve_some)  # type: ignore[arg-type]
    assert _pod_spec(result.stream())["affinity"] == ARCH_IN_AMD64


def test_check_reports_the_narrowing_a_partially_known_pod_needs() -> None:
    text = _deployment("registry.test/app-amd64:1", "registry.test/missing-sidecar:1")
    source = InputSource("deploy.yaml", text)
    documents = {"deploy.yaml": read_stream(text, "deploy.yaml")}
    result = run_documents(
        [source],
        documents,
        _policy(),  # type: ignore[arg-type]
        _resolve_some,
        edit=False,
        checking=True,
    )
    rules = {f.rule for f in result.findings}
    assert NEEDS_SCHEDULING in rules and UNRESOLVED_IMAGE in rules


def test_a_known_image_conflicting_with_the_pods_own_selector_is_a_conflict() -> None:
    text = _deployment(
        "registry.test/app-amd64:1",
        "registry.test/missing-sidecar:1",
        extra="      nodeSelector: {kubernetes.io/arch: arm64}\n",
    )
    result = mutate_text(text, _policy(), resolve=_resolve_some)  # type: ignore[arg-type]
    assert result.stream() == text
    conflicts = [f for f in result.findings if f.rule == SCHEDULING_CONFLICT]
    assert conflicts and "missing-sidecar:1: unknown" in conflicts[0].message


_MONGODB = """\
apiVersion: mongodbcommunity.mongodb.com/v1
kind: MongoDBCommunity
metadata: {name: example-mongodb}
spec:
  members: 3
  type: ReplicaSet
  version: "6.0.5"
  statefulSet:
    spec:
      template:
        spec:
          containers:
          - name: mongod
            image: registry.test/mongodb-server-amd64:6.0.5
"""


def test_a_mongodb_community_whose_mongod_runs_on_amd64_only_is_kept_off_arm64() -> None:
    """The issue's case: mongod (a container of spec.statefulSet.spec.template, merged over
    the operator's StatefulSet: mongodb/mongodb-kubernetes-operator
    controllers/replica_set_controller.go, statefulset.WithCustomSpecs) runs on amd64 only,
    and the agent images are the operator's: its pods may land on arm64 unless kept off."""
    result = mutate_text(_MONGODB, _policy(), resolve=resolve)  # type: ignore[arg-type]
    (mongodb,) = yaml.safe_load_all(result.stream())
    pod = mongodb["spec"]["statefulSet"]["spec"]["template"]["spec"]
    assert pod["affinity"] == ARCH_IN_AMD64
    assert "tolerations" not in pod
    (warning,) = [f for f in result.findings if f.rule == IMAGE_CHOSEN_BY_OPERATOR]
    assert "kept to linux/amd64" in warning.message
    assert {pod.status for pod in result.pods} == {"chosen-by-operator"}


@pytest.mark.parametrize(
    ("known", "written"),
    [
        ({AMD64}, True),
        ({AMD64, ARM64}, False),
    ],
)
def test_the_narrowing_is_the_intersection_of_the_known_images_only(
    known: set[object], written: bool
) -> None:
    image = "registry.test/app-amd64:1" if known == {AMD64} else "registry.test/app:1"
    text = _MONGODB.replace("registry.test/mongodb-server-amd64:6.0.5", image)
    result = mutate_text(text, _policy(), resolve=resolve)  # type: ignore[arg-type]
    assert (result.stream() != text) is written
