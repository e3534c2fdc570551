"""The engine's decision on one pod, for the admission server (``kmultiarch admission serve``).

The server is an adapter: it hands the pod of an AdmissionReview here, and this module runs the
very engine ``kmultiarch mutate`` runs on it, as a one-document stream (a pod's JSON is YAML),
with the ``resolve`` function the server gives (its single-flight lookups over a
:class:`~kmultiarch.run.session.Session`). What comes back is the engine's: the RFC 6902
operations ``mutate --output patch`` prints for that document, and the run's findings. Nothing
here decides a placement; the Kyverno/Gatekeeper rule (one engine, two enforcement points).

An ephemeral container (``kubectl debug``) is added to a pod already bound to a node: the only
answer is to admit or deny, so :func:`ephemeral_mismatches` compares each new image's platforms
with the node's, read from its labels as ``policy init`` reads them (``core.cluster``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from kmultiarch.core.findings import Finding
from kmultiarch.core.images.platform import Platform, format_platforms
from kmultiarch.core.images.reference import ImageRef
from kmultiarch.core.patch import json_pointer
from kmultiarch.core.placement.cluster import node_sources
from kmultiarch.core.policy.model import Policy
from kmultiarch.core.resolution import References, Resolution, Resolve
from kmultiarch.engine import read_sources, run_documents
from kmultiarch.errors import InvalidReferenceError
from kmultiarch.yaml.stream import InputSource

__all__ = [
    "EphemeralMismatch",
    "PodLookups",
    "PodDecision",
    "decide_pod",
    "ephemeral_mismatches",
    "new_ephemeral_images",
    "node_platform",
]

#: The name the one-document stream is given: findings are about "the pod under review".
REVIEWED_POD = "<admission review>"


class PodLookups(Protocol):
    """Where a review's images are looked up: the engine's ``resolve``, and what the parts
    behind it had to say meanwhile (a :class:`~kmultiarch.run.session.Session` is one)."""

    def resolve(self, references: list[ImageRef]) -> Mapping[ImageRef, Resolution]: ...

    def findings(self) -> list[Finding]: ...


@dataclass(frozen=True)
class PodDecision:
    """The engine's answer for one pod: the RFC 6902 operations that ``mutate`` would apply
    to it (empty when it already carries its constraints), the run's findings, and whether the
    run failed (an ``error`` finding: under ``failurePolicy: Fail``, an image that cannot be
    resolved or a pod no node can run), which the server turns into a denial."""

    operations: list[dict[str, object]] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)

    @property
    def failed(self) -> bool:
        return any(finding.severity == "error" for finding in self.findings)


def decide_pod(
    pod: Mapping[str, object],
    policy: Policy,
    lookups: PodLookups,
    *,
    namespace: str,
    namespace_object: Mapping[str, object] | None = None,
) -> PodDecision:
    """The engine's decision on ``pod`` (a Pod object) in ``namespace`` (the review's: a pod
    created with ``generateName`` may name none itself). ``namespace_object``: the pod's
    Namespace as the API server has it, read with the pod as a stream's Namespace document is
    (``exclude.namespaceSelector``, ``mode: optIn`` on the namespace, the injections'
    ``namespaceLabels``)."""
    document = dict(pod)
    # The API server's request.object carries both; a pod without them would not be read as
    # a Pod by the engine.
    document.setdefault("apiVersion", "v1")
    document.setdefault("kind", "Pod")
    text = json.dumps(document)
    if namespace_object is not None:
        text = json.dumps(dict(namespace_object)) + "\n---\n" + text
    sources = [InputSource(REVIEWED_POD, text)]
    documents = read_sources(sources, policy.scope)
    result = run_documents(
        sources, documents, policy, lookups.resolve, edit=False, namespace=namespace or "default"
    )
    # As run_manifests does: the session's findings (a cache that could not be used) too.
    result.findings.extend(lookups.findings())
    operations: list[dict[str, object]] = []
    for outcome in result.documents[REVIEWED_POD]:
        operations.extend(operation.as_json() for operation in outcome.operations)
        # spec.repinDigests: the image field written with the index digest, as mutate's
        # --output patch writes it (cli/commands/mutate.py patches()).
        operations.extend(
            {"op": "replace", "path": json_pointer(path), "value": repinned}
            for path, _, repinned in outcome.repins
        )
    return PodDecision(operations, list(result.findings))


@dataclass(frozen=True)
class EphemeralMismatch:
    """An ephemeral container whose image cannot run on the pod's node, or whose platforms
    are not known (``reason`` then says why)."""

    container: str
    image: str
    platforms: frozenset[Platform] = frozenset()
    reason: str | None = None


def new_ephemeral_images(
    pod: Mapping[str, object], old_pod: Mapping[str, object] | None
) -> list[tuple[str, str]]:
    """(name, image) of the ephemeral containers ``pod`` has and ``old_pod`` had not: what a
    ``pods/ephemeralcontainers`` UPDATE adds (ephemeral containers cannot be changed or
    removed once added: kubernetes pkg/apis/core/validation/validation.go,
    ValidatePodEphemeralContainersUpdate)."""
    before = {
        str(container.get("name"))
        for container in _containers(old_pod or {})
        if isinstance(container, Mapping)
    }
    return [
        (str(container.get("name")), str(container.get("image", "")))
        for container in _containers(pod)
        if str(container.get("name")) not in before
    ]


def _containers(pod: Mapping[str, object]) -> list[Mapping[str, object]]:
    spec = pod.get("spec")
    listed = spec.get("ephemeralContainers") if isinstance(spec, Mapping) else None
    if not isinstance(listed, list):
        return []
    return [container for container in listed if isinstance(container, Mapping)]


def node_platform(node: Mapping[str, object]) -> Platform | None:
    """The platform of a Node object, from its ``kubernetes.io/os``/``arch`` labels (else its
    ``status.nodeInfo``), as ``policy init`` reads nodes; None when it says none."""
    for source in node_sources(node):
        if source.platforms:
            return source.platforms[0]
    return None


def ephemeral_mismatches(
    containers: Sequence[tuple[str, str]], node: Platform, resolve: Resolve
) -> list[EphemeralMismatch]:
    """The new ephemeral containers whose image does not run on ``node`` (the kubelet would
    start it and it would die with ``exec format error``), or whose platforms are unknown."""
    wanted: list[tuple[str, str, ImageRef | None, str | None]] = []
    for name, image in containers:
        try:
            wanted.append((name, image, ImageRef.parse(image), None))
        except InvalidReferenceError as exc:
            wanted.append((name, image, None, str(exc)))
    references = [reference for _, _, reference, _ in wanted if reference is not None]
    answers = resolve(References(references)) if references else {}
    found: list[EphemeralMismatch] = []
    for name, image, reference, problem in wanted:
        if reference is None:
            found.append(EphemeralMismatch(name, image, reason=problem))
            continue
        answer = answers.get(reference)
        if answer is None or answer.error is not None:
            reason = answer.error.reason if answer is not None and answer.error else "not resolved"
            found.append(EphemeralMismatch(name, image, reason=reason))
        elif answer.platforms and not any(p.runs_on(node) for p in answer.platforms):
            found.append(EphemeralMismatch(name, image, answer.platforms))
    return found


def mismatch_message(mismatch: EphemeralMismatch, node_name: str, node: Platform) -> str:
    """One sentence naming the image, the node and its platform, and why."""
    if mismatch.reason is not None:
        return (
            f"ephemeral container {mismatch.container!r}: the platforms of {mismatch.image} "
            f"are not known ({mismatch.reason}); node {node_name} is {node}"
        )
    return (
        f"ephemeral container {mismatch.container!r}: {mismatch.image} runs on "
        f"{format_platforms(mismatch.platforms)}, not on node {node_name} ({node}): it would "
        "die with exec format error"
    )
