"""``kmultiarch triage``: the cluster's failing pods joined with the manifests and the engine.

Plain data from a :class:`~kmultiarch.core.triage.clusterstate.ClusterState` (what was kept of the
dumps) and one :class:`~kmultiarch.engine.EngineResult`: the engine ran over the manifests *and*
over the failing pods themselves (:func:`cluster_source`, the pods as minimal API objects), so one
run resolved every image once and says both what ``mutate`` would add to each workload's
template and what it would add to the pod as it runs. No I/O, no formatting.

Each failing pod's owners are followed (Pod -> ReplicaSet -> Deployment, Job -> CronJob,
StatefulSet, DaemonSet, an operator's custom resource) through the objects of the dump; where a
link is missing, the Deployment is named from the ReplicaSet's name and the pod's
``pod-template-hash``, and a CronJob from its Job's name (``NAME-<minutes>``), when the
manifests hold one so named. The workload is the highest owner found in the manifests, located
as ``check`` locates it (file, line of the pod spec)."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

from kmultiarch.assess.assessment import PodVerdict, check, line_of
from kmultiarch.core.findings import ResourceRef
from kmultiarch.core.images.oci import INDEX_TYPES
from kmultiarch.core.images.reference import ImageRef
from kmultiarch.core.placement.scheduling import describe_changes
from kmultiarch.core.policy.model import Policy, SchedulingPolicy
from kmultiarch.core.resolution import Resolution
from kmultiarch.core.resources import DEFAULT_NAMESPACE, ResourcePath, resources_in
from kmultiarch.core.triage.clusterstate import ClusterState, OwnerRef, Pod
from kmultiarch.core.triage.diagnosis import (
    FAILURE_TEXT,
    CommandLine,
    Diagnosis,
    Evidence,
    ImageFacts,
    PodFailure,
    TemplateFacts,
    classify,
    plain_command,
)
from kmultiarch.engine import EngineResult, ImageOutcome, PodOutcome
from kmultiarch.errors import InvalidReferenceError
from kmultiarch.yaml.stream import InputSource, SourceDocument

#: The name of the source holding the failing pods for the engine (never a file's name).
CLUSTER_SOURCE = "<cluster>"
#: The engine's finding for a digest pinned to one platform's manifest (issue 30), when the
#: engine has it.
PINNED_DIGEST_RULE = "platform-pinned-digest"
_CRON_JOB_NAME = re.compile(r"(.+)-\d{8,}\Z")

Key = tuple[str, str, str, str]  # API group, kind, namespace, name


@dataclass(frozen=True)
class ImageRow:
    container: str
    image: str  # as the pod runs it
    platforms: tuple[str, ...] | None
    template_image: str | None = None  # as the manifests say, when they differ


@dataclass(frozen=True)
class TriagedFailure:
    """One architecture failure of one pod, traced and classified."""

    pod: str  # namespace/name
    node: str
    node_platform: str
    kind: str
    evidence: tuple[Evidence, ...]
    cause: str
    detail: str
    next_step: str
    #: The workload: found in the manifests (source, line set), or the highest owner known.
    workload: ResourceRef
    owners: tuple[str, ...]  # the chain, from the pod's owner up
    source: str = ""
    line: int | None = None
    images: tuple[ImageRow, ...] = ()
    cluster_file: str = ""
    #: Other pods of the workload failing alike (same failure, cause and next step): a
    #: DaemonSet on every arm64 node is one failure, not one per node.
    others: tuple[str, ...] = ()
    #: The command lines ``next_step`` holds, as printed (formatters show them as code).
    commands: tuple[str, ...] = ()

    @property
    def located(self) -> bool:
        return bool(self.source)

    @property
    def headline(self) -> str:
        return f"{self.workload.display_name}: {self.message}"

    @property
    def message(self) -> str:
        """The failure, its cause, the next step and the first evidence, in one line."""
        quote = self.evidence[0].text if self.evidence else ""
        return f"{self.short}; {self.detail}" + (f' (evidence: "{_short(quote)}")' if quote else "")

    @property
    def short(self) -> str:
        """``pod P: FAILURE on NODE (PLATFORM): CAUSE; next: STEP``."""
        return (
            f"pod {self.pod}: {FAILURE_TEXT.get(self.kind, self.kind)}"
            + (f" on {self.node} ({self.node_platform})" if self.node else "")
            + f": {self.cause}; next: {self.next_step}"
        )


@dataclass
class TriageResult:
    failures: list[TriagedFailure] = field(default_factory=list)
    pods: int = 0  # pods kept (not running, or that failed)
    objects: int = 0  # objects read from the dumps
    nodes: int = 0
    events: int = 0
    manifests_given: bool = False
    cluster_files: tuple[str, ...] = ()

    @property
    def failed(self) -> bool:
        return bool(self.failures)

    def by_workload(self) -> dict[str, list[TriagedFailure]]:
        grouped: dict[str, list[TriagedFailure]] = {}
        for failure in self.failures:
            grouped.setdefault(failure.workload.display_name, []).append(failure)
        return grouped

    def counts(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for failure in self.failures:
            counts[failure.cause] = counts.get(failure.cause, 0) + 1
        return counts


def _short(text: str, limit: int = 240) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def cluster_source(failing: Sequence[PodFailure]) -> InputSource:
    """The failing pods as one JSON ``List`` (JSON is YAML), for the engine to judge."""
    pods = {(f.pod.namespace, f.pod.name): f.pod for f in failing}
    document = {
        "apiVersion": "v1",
        "kind": "List",
        "items": [pod.as_object() for pod in pods.values()],
    }
    return InputSource(CLUSTER_SOURCE, json.dumps(document, indent=1) + "\n")


def pinned_tags(failing: Sequence[PodFailure]) -> dict[str, ImageRef]:
    """For each image of the failing pods pinned by digest with a tag (``NAME:TAG@sha256:D``),
    the tag alone: what it points to now says which index to pin instead."""
    found: dict[str, ImageRef] = {}
    for failure in failing:
        for container in failure.pod.containers:
            if "@" not in container.image or container.image in found:
                continue
            try:
                reference = ImageRef.parse(container.image)
            except InvalidReferenceError:
                continue
            if reference.tag is not None and reference.digest is not None:
                found[container.image] = ImageRef(
                    reference.registry, reference.repository, reference.tag
                )
    return found


def triage(
    state: ClusterState,
    failing: Sequence[PodFailure],
    result: EngineResult | None,
    policy: Policy,
    *,
    manifests_given: bool,
    namespace: str = DEFAULT_NAMESPACE,
    cluster_files: Sequence[str] = (),
    tags: Mapping[str, Resolution] | None = None,
    command: CommandLine = plain_command,
) -> TriageResult:
    """Trace and classify every failure (``failing``, from :func:`~kmultiarch.core.triage.diagnosis.
    failures`); ``result``: the engine over the manifests and :func:`cluster_source`;
    ``tags``: the answers for :func:`pinned_tags`, by image; ``command``: how the commands
    the user is told to run are written (the CLI's carry its options)."""
    chains = [owner_chain(failure.pod, state) for failure in failing]
    kinds = {key[1] for chain in chains for key, _ in chain} | {"Pod"}
    index = _ManifestIndex(result, policy, namespace or DEFAULT_NAMESPACE, kinds)
    cluster_architectures = frozenset(
        node.architecture for node in state.nodes.values() if node.architecture
    )
    versions = _OwnerVersions(state)
    found: list[TriagedFailure] = []
    for failure, chain in zip(failing, chains, strict=True):
        pod = failure.pod
        match = index.find(chain, pod)
        owner = _owner_name(pod, chain, state, versions)
        pod_outcome = index.pod_outcome(pod)
        template = index.template_facts(match) if match is not None else None
        pod_view = _facts(pod_outcome, None, policy.scheduling) if pod_outcome is not None else None
        images = _image_facts(pod, pod_outcome, failure, tags or {})
        written: list[str] = []
        diagnosis: Diagnosis | None = classify(
            failure,
            images,
            template,
            pod_view,
            manifests_given=manifests_given,
            owner=owner.display_name,
            cluster_architectures=cluster_architectures,
            command=_recording(command, written),
        )
        if diagnosis is None:
            continue
        node = failure.node
        found.append(
            TriagedFailure(
                pod=f"{pod.namespace}/{pod.name}" if pod.namespace else pod.name,
                node=pod.node_name,
                node_platform=str(node.platform) if node is not None and node.platform else "",
                kind=failure.kind,
                evidence=failure.evidence,
                cause=diagnosis.cause,
                detail=diagnosis.detail,
                next_step=diagnosis.next_step,
                workload=match.resource if match is not None else owner,
                owners=tuple(_key_text(key, inferred) for key, inferred in chain),
                source=match.source if match is not None else "",
                line=match.line if match is not None else None,
                images=_image_rows(pod, images, template),
                cluster_file=pod.source,
                commands=tuple(c for c in dict.fromkeys(written) if c in diagnosis.next_step),
            )
        )
    return TriageResult(
        _merged(found),
        pods=len(state.pods),
        objects=state.seen,
        nodes=len(state.nodes),
        events=len(state.events),
        manifests_given=manifests_given,
        cluster_files=tuple(cluster_files),
    )


def _recording(command: CommandLine, written: list[str]) -> CommandLine:
    """``command``, keeping each line it writes in ``written``."""

    def recorded(verb: Sequence[str], arguments: Sequence[str]) -> str:
        line = command(verb, arguments)
        written.append(line)
        return line

    return recorded


def _merged(found: Sequence[TriagedFailure]) -> list[TriagedFailure]:
    """Failures of one workload alike (failure, cause, detail, next step) as one, the first
    pod's evidence kept and the other pods named."""
    merged: dict[tuple[object, ...], TriagedFailure] = {}
    for failure in found:
        key = (
            failure.workload,
            failure.source,
            failure.line,
            failure.kind,
            failure.cause,
            failure.detail,
            failure.next_step,
        )
        first = merged.get(key)
        if first is None:
            merged[key] = failure
        else:
            merged[key] = replace(first, others=(*first.others, failure.pod))
    return list(merged.values())


# --- owners ---------------------------------------------------------------------------------


def owner_chain(pod: Pod, state: ClusterState) -> list[tuple[Key, bool]]:
    """The pod's owners, nearest first: (key, whether it was inferred from a name)."""
    chain: list[tuple[Key, bool]] = []
    owners = pod.owners
    namespace = pod.namespace
    seen: set[Key] = set()
    while owners:
        reference = next((o for o in owners if o.controller), owners[0])
        key = (reference.group, reference.kind, namespace, reference.name)
        if key in seen:
            break  # a cycle in hostile input
        seen.add(key)
        chain.append((key, False))
        info = (state.by_uid.get(reference.uid) if reference.uid else None) or state.objects.get(
            key
        )
        if info is None:
            inferred = _inferred_owner(reference, namespace, pod)
            if inferred is not None:
                chain.append((inferred, True))
            break
        namespace = info.namespace
        owners = info.owners
    return chain


def _inferred_owner(reference: OwnerRef, namespace: str, pod: Pod) -> Key | None:
    """The owner of a ReplicaSet or a Job the dump does not hold, from its name."""
    if reference.kind == "ReplicaSet" and reference.group == "apps":
        suffix = pod.labels.get("pod-template-hash")
        if suffix and reference.name.endswith(f"-{suffix}"):
            return ("apps", "Deployment", namespace, reference.name[: -len(suffix) - 1])
    if reference.kind == "Job" and reference.group == "batch":
        match = _CRON_JOB_NAME.fullmatch(reference.name)
        if match:
            return ("batch", "CronJob", namespace, match.group(1))
    return None


def _owner_name(
    pod: Pod, chain: Sequence[tuple[Key, bool]], state: ClusterState, versions: _OwnerVersions
) -> ResourceRef:
    """The highest owner (inferred from a name, when the dump lacks the link), or the pod
    itself when it has none."""
    if not chain:
        return ResourceRef("v1", "Pod", pod.name, pod.namespace)
    key, _ = chain[-1]
    _, kind, namespace, name = key
    return ResourceRef(_api_version_of(key, pod, state, versions), kind, name, namespace)


class _OwnerVersions:
    """The apiVersion each owner is referred to by in the dump's objects (the first reference
    to it), by (API group, kind, name): read once for all the failing pods, when one is first
    asked for. Looking through every object for each pod made 500 failing pods among 30,000
    objects take 12 s."""

    def __init__(self, state: ClusterState) -> None:
        self._state = state
        self._versions: dict[tuple[str, str, str], str] | None = None

    def get(self, key: tuple[str, str, str]) -> str | None:
        if self._versions is None:
            self._versions = {}
            for info in self._state.objects.values():
                for reference in info.owners:
                    found = (reference.group, reference.kind, reference.name)
                    self._versions.setdefault(found, reference.api_version)
        return self._versions.get(key)


def _api_version_of(key: Key, pod: Pod, state: ClusterState, versions: _OwnerVersions) -> str:
    """The apiVersion an owner is known by: its object, or a reference to it (the pod's own
    first, then the other objects')."""
    group, kind, _, name = key
    info = state.objects.get(key)
    if info is not None:
        return info.api_version
    for reference in pod.owners:
        if (reference.group, reference.kind, reference.name) == (group, kind, name):
            return reference.api_version
    found = versions.get((group, kind, name))
    if found is not None:
        return found
    return f"{group}/v1" if group else "v1"  # inferred: apps/v1 and batch/v1 are the kinds


def _key_text(key: Key, inferred: bool = False) -> str:
    _, kind, namespace, name = key
    where = f"{namespace}/" if namespace else ""
    return f"{kind} {where}{name}" + (" (inferred from its name)" if inferred else "")


# --- the manifests --------------------------------------------------------------------------


@dataclass(frozen=True)
class _Match:
    resource: ResourceRef
    source: str
    line: int
    verdict: PodVerdict | None
    outcome: PodOutcome | None


class _ManifestIndex:
    """The manifests' workloads (with the engine's verdicts) and every resource, by key."""

    def __init__(
        self, result: EngineResult | None, policy: Policy, namespace: str, kinds: set[str]
    ) -> None:
        """``kinds``: those of the owners looked for (documents of other kinds, proven so by
        their text, are not composed to be indexed)."""
        self._namespace = namespace
        self._verdicts: dict[Key, list[tuple[PodVerdict, PodOutcome]]] = {}
        self._resources: dict[Key, tuple[ResourceRef, str, SourceDocument, ResourcePath]] = {}
        self._pods: dict[tuple[str, str], PodOutcome] = {}
        self._pinned: dict[Key, list[str]] = {}
        self._scheduling = policy.scheduling
        if result is None:
            return
        checked = check(result, policy)
        for outcome, verdict in zip(result.pods, checked.pods, strict=True):
            if outcome.source == CLUSTER_SOURCE:
                workload = outcome.workload
                self._pods[(workload.namespace, workload.name)] = outcome
                continue
            self._verdicts.setdefault(self._key(outcome.resource), []).append((verdict, outcome))
            if not outcome.resource.namespace:
                self._verdicts.setdefault(self._unnamespaced(outcome.resource), []).append(
                    (verdict, outcome)
                )
        for finding in result.findings:
            if finding.rule == PINNED_DIGEST_RULE and finding.resource is not None:
                self._pinned.setdefault(self._key(finding.resource), []).append(finding.message)
        for source, outcomes in result.documents.items():
            if source == CLUSTER_SOURCE:
                continue
            for document_outcome in outcomes:
                document = document_outcome.document
                known = document.resource_type
                if known is not None and known[1] not in kinds and not known[1].endswith("List"):
                    continue
                if document.value is None:
                    continue
                for path, resource in resources_in(document.value):
                    api_version, kind = resource.get("apiVersion"), resource.get("kind")
                    metadata = resource.get("metadata")
                    if not isinstance(api_version, str) or kind not in kinds:
                        continue
                    if not isinstance(metadata, Mapping):
                        continue
                    name = metadata.get("name")
                    if not isinstance(name, str):
                        continue
                    namespace_value = metadata.get("namespace")
                    reference = ResourceRef(
                        api_version,
                        kind,
                        name,
                        namespace_value if isinstance(namespace_value, str) else "",
                    )
                    found = (reference, source, document, path)
                    self._resources.setdefault(self._key(reference), found)
                    if not reference.namespace:
                        self._resources.setdefault(self._unnamespaced(reference), found)

    def _key(self, resource: ResourceRef) -> Key:
        group = resource.api_version.rpartition("/")[0] if "/" in resource.api_version else ""
        return (group, resource.kind, resource.namespace or self._namespace, resource.name)

    def _lookup(self, key: Key) -> Key:
        group, kind, namespace, name = key
        return (group, kind, namespace or self._namespace, name)

    @staticmethod
    def _unnamespaced(resource: ResourceRef) -> Key:
        """Where a resource that names no namespace is found whatever the pod's namespace
        (``helm template`` names none; ``helm install -n NS`` puts it there)."""
        group = resource.api_version.rpartition("/")[0] if "/" in resource.api_version else ""
        return (group, resource.kind, "\0any", resource.name)

    def find(self, chain: Sequence[tuple[Key, bool]], pod: Pod) -> _Match | None:
        """The highest owner of the chain the manifests hold (the pod itself without owners):
        in the pod's namespace, else a resource of that kind and name that names none."""
        keys = [key for key, _ in chain] or [("", "Pod", pod.namespace, pod.name)]
        for owner in reversed(keys):
            group, kind, _, name = owner
            for key in (self._lookup(owner), (group, kind, "\0any", name)):
                verdicts = self._verdicts.get(key)
                if verdicts:
                    verdict, outcome = verdicts[0]
                    return _Match(verdict.resource, verdict.source, verdict.line, verdict, outcome)
                resource = self._resources.get(key)
                if resource is not None:
                    reference, source, document, path = resource
                    return _Match(reference, source, line_of(document, path), None, None)
        return None

    def pod_outcome(self, pod: Pod) -> PodOutcome | None:
        return self._pods.get((pod.namespace, pod.name))

    def template_facts(self, match: _Match) -> TemplateFacts | None:
        if match.outcome is None or match.verdict is None:
            return TemplateFacts(match.resource, "unknown", source=match.source, line=match.line)
        return _facts(
            match.outcome,
            match.verdict,
            self._scheduling,
            pinned=tuple(self._pinned.get(self._key(match.resource), ())),
        )


def _facts(
    outcome: PodOutcome,
    verdict: PodVerdict | None,
    scheduling: SchedulingPolicy,
    pinned: tuple[str, ...] = (),
) -> TemplateFacts:
    changes: tuple[str, ...] = ()
    problems: tuple[str, ...] = ()
    if verdict is not None:
        changes, problems = verdict.changes, verdict.problems
    elif outcome.plan is not None:
        problems = tuple(conflict.message for conflict in outcome.plan.conflicts)
        if outcome.writes:
            changes = tuple(describe_changes(outcome.plan, outcome.preferred, scheduling))
    return TemplateFacts(
        outcome.resource,
        outcome.status,
        changes,
        problems,
        source=verdict.source if verdict is not None else "",
        line=verdict.line if verdict is not None else None,
        images={image.container.name: image.container.image for image in outcome.images},
        pinned_digest_findings=pinned,
    )


def _image_facts(
    pod: Pod, outcome: PodOutcome | None, failure: PodFailure, tags: Mapping[str, Resolution]
) -> list[ImageFacts]:
    """Each container's image as the engine resolved it for the pod (what was pulled)."""
    by_name: dict[str, ImageOutcome] = {}
    if outcome is not None:
        by_name = {image.container.name: image for image in outcome.images}
    node = failure.node.platform if failure.node is not None else None
    facts: list[ImageFacts] = []
    for container in pod.containers:
        image = by_name.get(container.name)
        resolution = image.resolution if image is not None else None
        ok = resolution is not None and resolution.ok
        pinned = "@" in container.image
        verdict = ""
        if resolution is not None and resolution.verification is not None and node is not None:
            found = next(
                (
                    v
                    for v in resolution.verification.platforms
                    if v.platform.os == node.os and v.platform.architecture == node.architecture
                ),
                None,
            )
            if found is not None:
                verdict = found.status + (
                    f": {found.file} is built for {found.machine}"
                    if found.file and found.machine
                    else (f": {found.reason}" if found.reason else "")
                )
        tag = tags.get(container.image)
        index_reference = ""
        if tag is not None and tag.ok and tag.digest and tag.media_type in INDEX_TYPES:
            index_reference = f"{tag.reference}@{tag.digest}"
        facts.append(
            ImageFacts(
                container.name,
                container.image,
                resolution.platforms if ok and resolution is not None else None,
                pinned=pinned,
                index_reference=index_reference,
                index_platforms=tag.platforms
                if index_reference and tag is not None
                else frozenset(),
                single_manifest=bool(
                    resolution is not None
                    and resolution.media_type
                    and resolution.media_type not in INDEX_TYPES
                ),
                verification=verdict,
            )
        )
    return facts


def _image_rows(
    pod: Pod, facts: Sequence[ImageFacts], template: TemplateFacts | None
) -> tuple[ImageRow, ...]:
    rows = []
    for fact in facts:
        written = template.images.get(fact.container) if template is not None else None
        rows.append(
            ImageRow(
                fact.container,
                fact.image,
                tuple(sorted(str(p) for p in fact.platforms))
                if fact.platforms is not None
                else None,
                written if written is not None and written != fact.image else None,
            )
        )
    return tuple(rows)


def _sorted_platforms(fact: ImageFacts) -> tuple[str, ...] | None:
    if fact.platforms is None:
        return None
    return tuple(sorted(str(platform) for platform in fact.platforms))


__all__ = [
    "CLUSTER_SOURCE",
    "ImageRow",
    "TriageResult",
    "TriagedFailure",
    "cluster_source",
    "owner_chain",
    "pinned_tags",
    "triage",
]
