"""AdmissionReview in, AdmissionReview out: the webhook's handler, a plain function.

What the API server sends and expects is k8s.io/api admission/v1 (types.go: AdmissionReview,
AdmissionRequest, AdmissionResponse): the response echoes ``request.uid``; ``allowed``;
``patchType: JSONPatch`` with ``patch`` the base64 of an RFC 6902 array; ``warnings`` (kubectl
prints each as ``Warning: ...``); a denial's ``status.message`` and ``code``. The decision is
the engine's (:func:`kmultiarch.run.admission.decide_pod`); this module only reads the review,
picks what to ask and writes the answer. No network here: the server gives it an
:class:`Admission` (the policy, and where lookups and Nodes come from), and tests give it theirs.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from kmultiarch.core.policy.model import Policy
from kmultiarch.errors import KmultiarchError
from kmultiarch.run.admission import (
    PodLookups,
    decide_pod,
    ephemeral_mismatches,
    mismatch_message,
    new_ephemeral_images,
    node_platform,
)

__all__ = ["Admission", "Answer", "MalformedReview", "answer_review", "read_review"]

REVIEW_VERSIONS = ("admission.k8s.io/v1", "admission.k8s.io/v1beta1")
#: kubectl prints every warning; "Warnings over 256 characters and large numbers of warnings
#: may be truncated" (k8s.io/api admission/v1 types.go, AdmissionResponse.Warnings): a longer
#: one is cut here, keeping its start, which names the image.
MAX_WARNING_CHARS = 250
#: A denial's message is shown by kubectl in full, but the API server's event and audit logs
#: carry it too: bounded.
MAX_DENIAL_CHARS = 2000
WARNING_PREFIX = "kmultiarch: "

#: What a review came to, for ``kmultiarch_admission_reviews_total{outcome}``: ``patched``
#: (constraints added), ``unchanged`` (nothing to add, or out of scope), ``warned`` (admitted
#: unchanged with warnings: failurePolicy Ignore), ``denied``, ``invalid`` (not a review).
Outcome = Literal["patched", "unchanged", "warned", "denied", "invalid"]


class MalformedReview(ValueError):
    """A request body that is not an AdmissionReview this server can answer (no uid to echo)."""


class Admission(Protocol):
    """What the handler is given: the policy, and the I/O it needs (lookups under the review's
    deadline, with the pod's credentials; the pod's Node)."""

    @property
    def policy(self) -> Policy: ...

    def lookups_for(self, pod: Mapping[str, Any], namespace: str) -> PodLookups:
        """Where this pod's images are looked up: with its pull secrets' credentials, within
        the review's deadline."""
        ...

    def node(self, name: str) -> Mapping[str, Any] | None:
        """The Node object named ``name`` (None: there is none)."""
        ...

    def namespace(self, name: str) -> Mapping[str, Any] | None:
        """The Namespace object named ``name`` (None: not known)."""
        ...


@dataclass
class Answer:
    """The response's AdmissionReview, and what the review came to."""

    review: dict[str, Any]
    outcome: Outcome
    warnings: list[str] = field(default_factory=list)

    def body(self) -> bytes:
        return json.dumps(self.review, separators=(",", ":")).encode()


def read_review(body: bytes) -> dict[str, Any]:
    """The AdmissionReview of a request body; :class:`MalformedReview` says why not."""
    try:
        review = json.loads(body)
    except (ValueError, UnicodeDecodeError) as exc:
        raise MalformedReview(f"the body is not JSON ({exc})") from None
    if not isinstance(review, dict):
        raise MalformedReview("the body is not a JSON object")
    if review.get("apiVersion") not in REVIEW_VERSIONS or review.get("kind") != "AdmissionReview":
        raise MalformedReview(
            f"expected an AdmissionReview of {REVIEW_VERSIONS[0]}, got "
            f"apiVersion {review.get('apiVersion')!r}, kind {review.get('kind')!r}"
        )
    request = review.get("request")
    if not isinstance(request, dict) or not isinstance(request.get("uid"), str):
        raise MalformedReview("the AdmissionReview has no request.uid")
    return review


def answer_review(body: bytes, admission: Admission) -> Answer:
    """The answer to one AdmissionReview. :class:`MalformedReview` when the body is not one
    (there is no uid to answer); anything wrong inside a review is answered as the failure
    policy says."""
    review = read_review(body)
    request: dict[str, Any] = review["request"]
    respond = _Responder(review, admission.policy)
    pod = request.get("object")
    if not isinstance(pod, dict):
        return respond.problem("the review carries no object")
    namespace = str(request.get("namespace") or "")
    sub_resource = request.get("subResource") or ""
    operation = request.get("operation")
    try:
        if operation == "CREATE" and not sub_resource:
            return _pod_created(pod, namespace, admission, respond)
        if operation == "UPDATE" and sub_resource == "ephemeralcontainers":
            old = request.get("oldObject")
            return _ephemeral_added(pod, old if isinstance(old, dict) else None, admission, respond)
    except KmultiarchError as exc:
        return respond.problem(str(exc))
    # Anything else the configuration did not ask for: admitted as it is.
    return respond.allow()


def _pod_created(
    pod: dict[str, Any], namespace: str, admission: Admission, respond: _Responder
) -> Answer:
    decision = decide_pod(
        pod,
        admission.policy,
        admission.lookups_for(pod, namespace),
        namespace=namespace,
        namespace_object=admission.namespace(namespace) if namespace else None,
    )
    warnings = [
        finding.message for finding in decision.findings if finding.severity in ("warning", "error")
    ]
    if decision.failed:
        errors = [finding.message for finding in decision.findings if finding.severity == "error"]
        return respond.deny("; ".join(errors), warnings)
    return respond.allow(decision.operations, warnings)


def _ephemeral_added(
    pod: dict[str, Any],
    old: dict[str, Any] | None,
    admission: Admission,
    respond: _Responder,
) -> Answer:
    added = new_ephemeral_images(pod, old)
    spec = pod.get("spec")
    node_name = spec.get("nodeName") if isinstance(spec, dict) else None
    if not added or not isinstance(node_name, str) or not node_name:
        return respond.allow()  # nothing new, or a pod not bound yet: the scheduler decides
    node = admission.node(node_name)
    platform = node_platform(node) if node is not None else None
    if platform is None:
        return respond.problem(
            f"the platform of node {node_name} is not known (no such node, or its labels name none)"
        )
    namespace = str(pod.get("metadata", {}).get("namespace") or "")
    mismatches = ephemeral_mismatches(
        added, platform, admission.lookups_for(pod, namespace).resolve
    )
    known = [m for m in mismatches if m.reason is None]
    unknown = [m for m in mismatches if m.reason is not None]
    messages = [mismatch_message(m, node_name, platform) for m in (*known, *unknown)]
    if known or (unknown and admission.policy.failure_policy == "Fail"):
        return respond.deny("; ".join(messages), [])
    return respond.allow([], messages)


class _Responder:
    """Writes the response AdmissionReview for one request."""

    def __init__(self, review: Mapping[str, Any], policy: Policy) -> None:
        self.version = str(review["apiVersion"])
        self.uid = str(review["request"]["uid"])
        self.policy = policy

    def _review(self, response: dict[str, Any]) -> dict[str, Any]:
        return {
            "apiVersion": self.version,
            "kind": "AdmissionReview",
            "response": {"uid": self.uid, **response},
        }

    def allow(
        self, operations: list[dict[str, object]] | None = None, warnings: list[str] | None = None
    ) -> Answer:
        response: dict[str, Any] = {"allowed": True}
        shown = _warnings(warnings or [])
        if operations:
            patch = json.dumps(operations, separators=(",", ":")).encode()
            response["patchType"] = "JSONPatch"
            response["patch"] = base64.b64encode(patch).decode()
        if shown:
            response["warnings"] = shown
        outcome: Outcome = "patched" if operations else ("warned" if shown else "unchanged")
        return Answer(self._review(response), outcome, shown)

    def deny(self, message: str, warnings: list[str]) -> Answer:
        text = f"{WARNING_PREFIX}{message}"
        if len(text) > MAX_DENIAL_CHARS:
            text = text[: MAX_DENIAL_CHARS - 1] + "…"
        response: dict[str, Any] = {
            "allowed": False,
            "status": {"status": "Failure", "message": text, "code": 403, "reason": "Forbidden"},
        }
        shown = _warnings([w for w in warnings if w not in message])
        if shown:
            response["warnings"] = shown
        return Answer(self._review(response), "denied", shown)

    def problem(self, message: str) -> Answer:
        """Something in the review could not be judged: the failure policy's answer (Fail:
        denied naming the problem; Ignore: admitted unchanged with it as a warning)."""
        if self.policy.failure_policy == "Fail":
            return self.deny(message, [])
        return self.allow([], [f"not judged: {message}"])


def _warnings(messages: list[str]) -> list[str]:
    shown: list[str] = []
    for message in messages:
        text = f"{WARNING_PREFIX}{' '.join(message.split())}"
        if len(text) > MAX_WARNING_CHARS:
            text = text[: MAX_WARNING_CHARS - 1] + "…"
        if text not in shown:
            shown.append(text)
    return shown
