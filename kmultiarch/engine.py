"""documents -> images -> resolve -> decide -> edit -> report.

The engine is I/O-free but for the ``resolve`` function it is given: adapters (CLI, KRM
function, pre-commit hooks) read the inputs, build the resolver and format the result. It
returns data: new document texts, per-pod outcomes and findings; it never prints.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from dataclasses import replace as dataclass_replace
from typing import TYPE_CHECKING, Any

from kmultiarch.core.annotate import annotation_operations
from kmultiarch.core.cluster import (
    NodeSource,
    drift,
    may_describe_node_pools,
    may_describe_nodes,
    node_pool_rules,
    node_sources,
)
from kmultiarch.core.findings import (
    COMMENTS_LOST,
    CONFLICTS,
    FALLBACK_PLATFORMS,
    IMAGE_CHOSEN_BY_OPERATOR,
    INJECTED_SIDECAR,
    MALFORMED_FIELD,
    NEEDS_SCHEDULING,
    PLATFORM_MISMATCH,
    PLATFORM_PINNED_DIGEST,
    POLICY_DRIFT,
    UNKNOWN_POD_KIND,
    UNRESOLVED_IMAGE,
    UNWRITABLE_CONSTRAINT,
    Finding,
    PodStatus,
    ResourceRef,
    Severity,
    count_of,
    unresolved_image_message,
)
from kmultiarch.core.operators import (
    api_group,
    in_shape,
    injection_hints,
    materialized,
    scheduling_view,
    written_field,
)
from kmultiarch.core.patch import Operation, joined
from kmultiarch.core.platform import Platform, format_platforms
from kmultiarch.core.policy import Policy, SchedulingPolicy, ScopePolicy
from kmultiarch.core.preferences import apply_terms, planned_view, preference_terms
from kmultiarch.core.reference import ImageRef
from kmultiarch.core.resolution import References, Resolution, Resolve, lines_left
from kmultiarch.core.scheduling import (
    PodPlan,
    any_windows_build,
    describe_changes,
    is_host_process,
    plan_pod_with_inherited,
    supported_platforms,
    windows_builds,
)
from kmultiarch.core.scope import (
    DEFAULT_NAMESPACE,
    NamespaceInfo,
    is_enabled,
    namespace_excluded_by_glob,
    namespaces_in,
    resources_in,
)
from kmultiarch.core.unknownkinds import (
    FieldScan,
    crd_schemas,
    is_crd,
    may_be_pod_shaped,
    may_define_kinds,
    needs_scan,
    scan_resource,
    scan_schema,
    schema_for,
    unknown_pod_kind,
)
from kmultiarch.core.workloads import (
    RUN_TIME_IMAGE,
    SKIP_ANNOTATION,
    ContainerImage,
    Operators,
    PodTarget,
    Related,
    Workload,
    find_workloads,
    is_skipped,
    may_hold_pods,
    value_at,
)
from kmultiarch.errors import InvalidReferenceError, ManifestStreamError
from kmultiarch.yaml.edit import EditHint, apply_operations, edit_hint
from kmultiarch.yaml.stream import InputSource, SourceDocument, cyclic_gc_paused, read_stream

if TYPE_CHECKING:
    from yaml.nodes import Node

from yaml.nodes import MappingNode, SequenceNode


@dataclass(frozen=True)
class ImageOutcome:
    container: ContainerImage
    reference: ImageRef | None
    resolution: Resolution | None
    problem: str | None = None

    @property
    def failure(self) -> str | None:
        """Why the image's platforms are unknown, in full (``reference: reason``), or None."""
        if self.problem is not None:
            return self.problem
        error = self.resolution.error if self.resolution is not None else None
        return str(error) if error is not None else None

    @property
    def failure_reason(self) -> str | None:
        """:attr:`failure` without the reference, for messages that name the image already."""
        if self.problem is not None:
            return self.problem
        error = self.resolution.error if self.resolution is not None else None
        return error.reason if error is not None else None


@dataclass(frozen=True)
class PodOutcome:
    """What happened to one pod spec."""

    source: str
    document_index: int
    line: int
    workload: Workload
    target: PodTarget
    images: tuple[ImageOutcome, ...]
    status: PodStatus
    plan: PodPlan | None = None
    #: Preferred node affinity terms added for spec.preferences (part of ``plan``).
    preferred: tuple[Mapping[str, object], ...] = ()
    #: The injections whose sidecars keep the pod off platforms its own images run on.
    narrowed_by: tuple[str, ...] = ()
    #: Decided on the images whose platforms are known while others are not (an unresolvable
    #: image, one the operator chooses): ``plan`` only narrows, never widens (no toleration).
    partial: bool = False

    @property
    def writes(self) -> bool:
        """Whether the pod's plan is applied: a change decided on all its images, or a
        narrowing decided on the known ones."""
        plan = self.plan
        if plan is None or not plan.changes or plan.conflicts:
            return False
        return self.status == "needs-change" or self.partial

    @property
    def resource(self) -> ResourceRef:
        return ResourceRef(
            self.workload.api_version,
            self.workload.kind,
            self.workload.name,
            self.workload.namespace,
            self.workload.generate_name,
        )


@dataclass
class DocumentOutcome:
    document: SourceDocument
    operations: list[Operation] = field(default_factory=list)
    new_text: str | None = None
    #: spec.repinDigests: (the image field's path, the reference as written, the same with the
    #: index digest): a ``replace`` of that field, made with the operations (the scalar keeps
    #: its quoting: nothing else on the line changes; an RFC 6902 replace in --output patch).
    #: Only image fields of pods in scope: other text writing the reference is left as it is.
    repins: list[tuple[tuple[str | int, ...], str, str]] = field(default_factory=list)

    @property
    def text(self) -> str:
        return self.new_text if self.new_text is not None else self.document.text


@dataclass
class EngineResult:
    sources: list[InputSource]
    documents: dict[str, list[DocumentOutcome]]
    pods: list[PodOutcome]
    findings: list[Finding]
    resolutions: Mapping[ImageRef, Resolution]

    @property
    def failed(self) -> bool:
        return any(finding.severity == "error" for finding in self.findings)

    def output_of(self, source: str) -> str:
        return "".join(outcome.text for outcome in self.documents[source])

    def changed_sources(self) -> list[str]:
        return [
            name
            for name, outcomes in self.documents.items()
            if any(outcome.new_text is not None for outcome in outcomes)
        ]

    def apply_edits(self) -> None:
        """Edit every document that has operations (fast text splice, round trip if needed);
        a document written anew without some of its comments is a warning naming them."""
        for source, document_outcomes in self.documents.items():
            for outcome in document_outcomes:
                repins = [Operation("replace", path, new) for path, _, new in outcome.repins]
                if outcome.operations or repins:
                    lost: list[int] = []
                    derived = outcome.document.derived
                    outcome.new_text = apply_operations(
                        outcome.document,
                        [*outcome.operations, *repins],
                        lost_comments=lost,
                        hint=derived.hint if isinstance(derived, _Derived) else None,
                    )
                    if lost:
                        self.findings.append(_comments_lost(source, outcome.document, lost))

    def stream(self) -> str:
        """Every source's output as one YAML stream, the way ``kubectl`` concatenates files."""
        return "".join(self.stream_chunks())

    def stream_chunks(self) -> Iterator[str]:
        """:meth:`stream` a document at a time, so that a large output is written without being
        built whole (one non-Latin-1 character makes a Python string four bytes a character)."""
        started = False
        ends_with_newline = True
        for source in self.sources:
            texts = [outcome.text for outcome in self.documents[source.name]]
            if all(not text.strip() for text in texts):
                continue
            if started:
                if not ends_with_newline:
                    yield "\n"
                if not _starts_with_marker(texts):
                    yield "---\n"
            started = True
            for text in texts:
                if text:
                    ends_with_newline = text.endswith("\n")
                    yield text


def _comments_lost(source: str, document: SourceDocument, lines: list[int]) -> Finding:
    value = document.value
    resource = ResourceRef.of(value) if isinstance(value, Mapping) else None
    shown = ", ".join(str(line) for line in lines[:10]) + (", ..." if len(lines) > 10 else "")
    return Finding(
        COMMENTS_LOST,
        "warning",
        f"the change was written without the comment{'s' if len(lines) > 1 else ''} on "
        f"line{'s' if len(lines) > 1 else ''} {shown} (kmultiarch could not keep them in "
        "this document's layout)",
        source=source,
        document_index=document.index,
        line=document.start_line,
        resource=resource,
    )


def _starts_with_marker(texts: list[str]) -> bool:
    head = ""
    for text in texts:
        head += text[:3]
        if len(head) >= 3:
            break
    return head.startswith("---")


def read_sources(
    sources: Iterable[InputSource], scope: ScopePolicy | None = None
) -> dict[str, list[SourceDocument]]:
    """Every document of every source. A document whose type its text proves is composed only
    when its value is asked for: the engine asks for those that may hold pod specs (or nodes,
    for policy-drift), so CRDs, RBAC, ConfigMaps... are never composed. A document with pod
    specs keeps, from that one composition, where new scheduling fields would go
    (:func:`~kmultiarch.yaml.edit.edit_hint`), so that editing it does not compose it again."""
    operators = (scope or ScopePolicy()).operators

    def derive(text: str, root: Node, value: object) -> _Derived:
        workloads = find_workloads(value, operators)
        paths = [target.path for workload in workloads for target in workload.targets]
        return _Derived(operators, workloads, edit_hint(text, root, paths) if paths else None)

    return {
        source.name: read_stream(source.text, source.name, lazy_types=_any_type, on_composed=derive)
        for source in sources
    }


@dataclass(frozen=True)
class _Derived:
    """What the engine takes from a document's one composition: its workloads (for the
    operators' kinds ``operators`` knows) and where an edit would go."""

    operators: Operators
    workloads: list[Workload]
    hint: EditHint | None


def _workloads(
    document: SourceDocument, operators: Operators, related: Related | None = None
) -> list[Workload]:
    """The document's workloads: those found when it was read, unless its kind takes images
    from other resources of the stream (they were not all read then)."""
    derived = document.derived
    known = document.resource_type
    # A list's items may take images from each other (a ResourceList's Kafka and its pools).
    takes_related = (
        related is not None
        and known is not None
        and (known[1].endswith("List") or _takes_related(operators, *known))
    )
    if isinstance(derived, _Derived) and derived.operators is operators and not takes_related:
        return derived.workloads
    return find_workloads(document.value, operators, related)


def _group_kind(api_version: str, kind: str) -> tuple[str, str]:
    return (api_group(api_version), kind)


def _takes_related(operators: Operators, api_version: str, kind: str) -> bool:
    entry = operators.get(_group_kind(api_version, kind))
    return entry is not None and any(
        source.related_kinds() for placement in entry.placements for source in placement.images
    )


def _related_index(
    documents: Mapping[str, list[SourceDocument]], operators: Operators
) -> Related | None:
    """Finds the resources of the stream that operators' kinds take images from (a Kafka for
    its KafkaNodePools, a KServe predictor's runtimes): by (API group, kind, namespace), or in
    every namespace. Nothing to find (and the
    catalogue not even loaded) when no document can be of an operators' kind."""
    if not any(
        document.resource_type is None
        or _group_kind(*document.resource_type) in operators
        or document.resource_type[1].endswith("List")
        for docs in documents.values()
        for document in docs
    ):
        return None
    wanted = {
        group_kind
        for entry in operators.values()
        for placement in entry.placements
        for source in placement.images
        for group_kind in source.related_kinds()
    }
    if not wanted:
        return None
    found: dict[tuple[str, str, str], list[Mapping[str, object]]] = {}
    for docs in documents.values():
        for document in docs:
            known = document.resource_type
            if known is None or not (_group_kind(*known) in wanted or known[1].endswith("List")):
                continue
            for _, resource in resources_in(document.value):
                api_version, kind = resource.get("apiVersion"), resource.get("kind")
                if not isinstance(api_version, str) or not isinstance(kind, str):
                    continue
                group_kind = _group_kind(api_version, kind)
                if group_kind not in wanted:
                    continue
                metadata = resource.get("metadata")
                metadata = metadata if isinstance(metadata, Mapping) else {}
                key = (*group_kind, str(metadata.get("namespace") or ""))
                found.setdefault(key, []).append(resource)

    def related(group: str, kind: str, namespace: str | None) -> list[Mapping[str, object]]:
        if namespace is not None:
            return found.get((group, kind, namespace), [])
        return [
            resource
            for (found_group, found_kind, _), resources in found.items()
            if (found_group, found_kind) == (group, kind)
            for resource in resources
        ]

    return related


def _any_type(api_version: str, kind: str) -> bool:
    return True


def run(
    sources: list[InputSource],
    policy: Policy,
    resolve: Resolve,
    *,
    namespace: str = DEFAULT_NAMESPACE,
) -> EngineResult:
    """Decide and edit every pod of every source. Raises ManifestStreamError on bad YAML
    before anything is resolved. ``namespace``: that of resources that name none."""
    return run_documents(
        sources, read_sources(sources, policy.scope), policy, resolve, namespace=namespace
    )


def run_documents(
    sources: list[InputSource],
    documents: Mapping[str, list[SourceDocument]],
    policy: Policy,
    resolve: Resolve,
    *,
    edit: bool = True,
    namespace: str = DEFAULT_NAMESPACE,
    checking: bool = False,
) -> EngineResult:
    """:func:`run` over documents already read. With ``edit=False`` the operations are
    decided but not applied: the caller adds its own and calls ``apply_edits``.

    ``checking``: the run is ``check``'s (or ``report``'s), which reports what ``mutate`` would
    change as ``needs-scheduling`` errors, and a pod its images cannot run as an error whatever
    the failure policy (a gate); otherwise the failure policy decides whether it fails the run.
    Every finding of the run is made here, once, and located on the line of the field it is
    about (the pod spec, the container's image)."""
    policy = with_node_pools(documents, policy)
    malformed_items: list[Finding] = []
    candidates = list(
        _candidate_pods(documents, policy.scope, namespace or DEFAULT_NAMESPACE, malformed_items)
    )
    references: list[ImageRef] = []
    volumes: set[ImageRef] = set()
    programs: set[ImageRef] = set()
    for pod in candidates:
        if pod.status in ("excluded", "skipped"):
            continue  # nothing is decided for them: no lookup, no credential helper, no retry
        for image in pod.images:
            if image.reference is not None:
                references.append(image.reference)
                (volumes if image.container.volume else programs).add(image.reference)
    # An image only volumes use starts no program: spec.verify reads none of its layers.
    volume_only = volumes - programs
    resolutions = resolve(References(references, volume_only)) if references else {}
    as_pinned = resolutions
    if policy.resolution.repin_digests:
        resolutions = _repinned(resolutions, resolve, volume_only)
    outcomes: dict[str, list[DocumentOutcome]] = {
        name: [DocumentOutcome(document) for document in docs] for name, docs in documents.items()
    }
    pods: list[PodOutcome] = []
    findings: list[Finding] = []
    severity: Severity = "error" if policy.failure_policy == "Fail" else "warning"
    for pod in candidates:
        document = documents[pod.source][pod.document_index]
        decided = _decide(pod, policy, _as_written(pod, document, resolutions, as_pinned))
        pods.append(decided)
        findings.extend(
            _findings_for(
                decided,
                severity,
                policy.resolution.fallback_platforms,
                conflicts="error" if checking else severity,
                needs_scheduling=checking,
                mismatch=severity if policy.resolution.verify.mode == "enforce" else "warning",
                describe=lambda pod: (
                    describe_changes(pod.plan, pod.preferred, policy.scheduling)
                    if pod.plan is not None
                    else ()
                ),
            )
        )
        outcomes[pod.source][pod.document_index].repins.extend(_repins(decided))
        if decided.writes:
            assert decided.plan is not None
            outcome = outcomes[pod.source][pod.document_index]
            outcome.operations[:] = joined(outcome.operations, decided.plan.operations)
            placement = pod.target.placement
            if (
                policy.scheduling.annotate
                and not decided.partial  # the platforms it runs on are not all known
                and (placement is None or placement.pod_spec)
            ):
                # A pod template's metadata holds the annotation; an operator's own shape has
                # none kmultiarch knows.
                outcome.operations.extend(
                    annotation_operations(
                        outcome.document.value,
                        pod.target.path,
                        decided.plan.supported,
                        policy.scheduling.platforms,
                    )
                )
    findings.extend(_pins_left_findings(sources, outcomes))
    findings.extend(malformed_items)
    findings.extend(drift_findings(documents, policy.scheduling))
    findings.extend(unknown_kind_findings(documents, policy.scope, namespace or DEFAULT_NAMESPACE))
    findings.extend(_injection_findings(documents, policy.scope, namespace or DEFAULT_NAMESPACE))
    result = EngineResult(sources, outcomes, pods, located(findings, documents), resolutions)
    if edit:
        result.apply_edits()
    return result


def _candidate_pods(
    documents: Mapping[str, list[SourceDocument]],
    scope: ScopePolicy,
    default_namespace: str = DEFAULT_NAMESPACE,
    malformed_items: list[Finding] | None = None,
) -> Iterable[PodOutcome]:
    """Every pod spec, with its images parsed; excluded and opted-out pods marked as such.
    The warnings of items that are no pod specs (core.workloads) go to ``malformed_items``."""
    operators = scope.operators
    namespaces = _namespaces(documents) if _needs_namespaces(scope) else {}
    related = _related_index(documents, operators)
    namespace_labels = _namespace_labels(documents, scope) if scope.injections else {}
    for source, docs in documents.items():
        for document in docs:
            known = document.resource_type
            if known is not None and not may_hold_pods(*known, operators):
                continue
            if document.value is None:
                continue
            for workload in _workloads(document, operators, related):
                if workload.malformed_items and malformed_items is not None:
                    in_scope = not _out_of_scope(
                        workload, {}, scope, namespaces, default_namespace
                    ) and not is_skipped(workload)
                    malformed_items.extend(
                        _malformed_item(source, document, workload, path, message)
                        for path, message in (workload.malformed_items if in_scope else ())
                    )
                for target in workload.targets:
                    status: PodStatus = "ok"
                    if _out_of_scope(
                        workload, target.annotations, scope, namespaces, default_namespace
                    ):
                        status = "excluded"
                    elif is_skipped(workload, target):
                        status = "skipped"
                    elif not target.placeable:
                        status = "malformed"
                    elif target.chosen_by_operator:
                        status = "chosen-by-operator"
                    containers = target.containers
                    if scope.injections and status == "ok":
                        containers += _injected(
                            scope,
                            namespace_labels.get(workload.namespace or default_namespace, {}),
                            target.labels,
                            {**workload.annotations, **target.annotations}
                            if target.placement is None
                            else target.annotations,
                        )
                    images = tuple(_parse_image(container) for container in containers)
                    yield PodOutcome(
                        source,
                        document.index,
                        document.start_line,
                        workload,
                        target,
                        images,
                        status,
                    )


def _malformed_item(
    source: str,
    document: SourceDocument,
    workload: Workload,
    path: tuple[str | int, ...],
    message: str,
) -> Finding:
    return Finding(
        MALFORMED_FIELD,
        "warning",
        message,
        path=path,
        source=source,
        document_index=document.index,
        line=document.start_line,
        resource=ResourceRef(
            workload.api_version, workload.kind, workload.name, workload.namespace
        ),
    )


def with_node_pools(documents: Mapping[str, list[SourceDocument]], policy: Policy) -> Policy:
    """The policy with node label entries for the Karpenter NodePools and GKE ComputeClasses
    of the stream (after the policy's own ``nodeLabels``): a pod selecting one by name lands on
    the platforms it offers (core.cluster.node_pool_rules)."""
    scheduling = policy.scheduling
    rules = node_pool_rules(
        (
            document.value
            for docs in documents.values()
            for document in docs
            if document.resource_type is None or may_describe_node_pools(*document.resource_type)
            if document.value is not None
        ),
        scheduling.node_labels,
    )
    if not rules:
        return policy
    node_labels = (*scheduling.node_labels, *rules)
    return dataclass_replace(
        policy, scheduling=dataclass_replace(scheduling, node_labels=node_labels)
    )


def unknown_kind_findings(
    documents: Mapping[str, list[SourceDocument]],
    scope: ScopePolicy,
    default_namespace: str = DEFAULT_NAMESPACE,
) -> list[Finding]:
    """``unknown-pod-kind`` warnings: resources of kinds neither built in nor known as an
    operator's that hold what pods are made of (core.unknownkinds), with the entry to declare
    their kind, read from them and from their kind's CRD when the stream carries it. Only such
    resources whose text names a pod-shaped key are composed, and only the CRDs that name one
    of their kinds: the common stream pays a substring search over its custom resources."""
    operators = scope.operators
    scanned: list[tuple[str, SourceDocument, tuple[str | int, ...], Mapping[str, Any]]] = []
    for source, docs in documents.items():
        for document in docs:
            known = document.resource_type
            if known is not None and not needs_scan(*known, operators):
                continue
            if known is not None and not may_be_pod_shaped(document.text):
                continue
            try:
                value = document.value
            except ManifestStreamError:
                continue  # a resource kmultiarch passes through unread fails no run here
            scanned.extend(
                (source, document, path, resource)
                for path, resource in resources_in(value)
                if _scanned_type(resource, operators, scope, default_namespace)
            )
    found_in = [(entry, scan_resource(entry[3])) for entry in scanned]
    found_in = [(entry, scan) for entry, scan in found_in if scan.fields or scan.stopped]
    kinds = sorted({str(resource["kind"]) for (*_, resource), _ in found_in})
    schemas = _crd_schemas(documents, kinds) if kinds else {}
    declared: dict[tuple[str, str, str], FieldScan] = {}
    findings: list[Finding] = []
    for (source, document, path, resource), scan in found_in:
        api_version, kind = str(resource["apiVersion"]), str(resource["kind"])
        group_kind = (api_group(api_version), kind)
        schema = schema_for(schemas[group_kind], api_version) if group_kind in schemas else None
        key = (*group_kind, api_version)
        if schema is not None and key not in declared:
            declared[key] = scan_schema(schema)
        schema_scan = declared.get(key, FieldScan(()))
        found = unknown_pod_kind(
            resource,
            scan.fields,
            schema_scan.fields,
            scans_stopped=[note for note in (scan.stopped, schema_scan.stopped) if note],
        )
        if found is None:
            continue
        findings.append(
            Finding(
                UNKNOWN_POD_KIND,
                "warning",
                found.message(path),
                source=source,
                document_index=document.index,
                line=document.start_line,
                resource=ResourceRef.of(resource),
                path=(*path, *(found.fields[0].path if found.fields else ())),
                suggestion=found.suggestion,
            )
        )
    return findings


def _injection_findings(
    documents: Mapping[str, list[SourceDocument]],
    scope: ScopePolicy,
    default_namespace: str = DEFAULT_NAMESPACE,
) -> list[Finding]:
    """An ``injected-sidecar`` warning for each resource of an operator's kind that is an
    injection rather than a maker of pods (an OpenTelemetryCollector in ``mode: sidecar``),
    with the ``spec.injections`` entry that declares it (core.operators.injection_hints)."""
    operators = scope.operators
    findings: list[Finding] = []
    for source, docs in documents.items():
        for document in docs:
            known = document.resource_type
            if known is None:
                continue
            group_kind = (api_group(known[0]), known[1])
            if group_kind not in operators or known[1] in scope.exclude.kinds:
                continue
            entry = operators[group_kind]
            if not any(placement.injected_by for placement in entry.placements):
                continue
            try:
                value = document.value
            except ManifestStreamError:
                continue
            for path, resource in resources_in(value):
                metadata = resource.get("metadata")
                metadata = metadata if isinstance(metadata, Mapping) else {}
                namespace = str(metadata.get("namespace") or default_namespace)
                annotations = metadata.get("annotations")
                skipped = (
                    annotations.get(SKIP_ANNOTATION) if isinstance(annotations, Mapping) else None
                )
                if str(skipped).lower() == "true" or namespace_excluded_by_glob(
                    namespace, scope.exclude.namespaces
                ):
                    continue  # out of scope, or opted out: as for unknown-pod-kind
                for pointer, message, suggestion in injection_hints(resource, entry):
                    findings.append(
                        Finding(
                            INJECTED_SIDECAR,
                            "warning",
                            message,
                            source=source,
                            document_index=document.index,
                            line=document.start_line,
                            resource=ResourceRef.of(resource),
                            path=(*path, *pointer),
                            suggestion=suggestion,
                        )
                    )
    return findings


def _scanned_type(
    resource: Mapping[str, Any], operators: Operators, scope: ScopePolicy, default_namespace: str
) -> bool:
    """A resource to scan for pod-shaped content: of a kind to scan, not excluded by kind or
    namespace, not opted out."""
    api_version, kind = resource.get("apiVersion"), resource.get("kind")
    if not isinstance(api_version, str) or not isinstance(kind, str):
        return False
    if not needs_scan(api_version, kind, operators) or kind in scope.exclude.kinds:
        return False
    metadata = resource.get("metadata")
    metadata = metadata if isinstance(metadata, Mapping) else {}
    namespace = str(metadata.get("namespace") or default_namespace)
    if namespace_excluded_by_glob(namespace, scope.exclude.namespaces):
        return False
    annotations = metadata.get("annotations")
    skipped = annotations.get(SKIP_ANNOTATION) if isinstance(annotations, Mapping) else None
    return str(skipped).lower() != "true"


def _crd_schemas(
    documents: Mapping[str, list[SourceDocument]], kinds: Sequence[str]
) -> dict[tuple[str, str], dict[str, Mapping[str, object]]]:
    """The openAPIV3Schema of the stream's CRDs that define one of ``kinds`` with pod-shaped
    properties (by API group and kind, then version). A CRD is composed only when its text
    names one of the kinds and a pod-shaped property."""
    schemas: dict[tuple[str, str], dict[str, Mapping[str, object]]] = {}
    for docs in documents.values():
        for document in docs:
            known = document.resource_type
            if known is not None and not is_crd(*known):
                continue
            if not may_define_kinds(document.text, kinds):
                continue
            for _, resource in resources_in(_value_apart(document)):
                api_version, kind = resource.get("apiVersion"), resource.get("kind")
                if (
                    isinstance(api_version, str)
                    and isinstance(kind, str)
                    and is_crd(api_version, kind)
                ):
                    schemas.update(crd_schemas(resource))
    return schemas


def _value_apart(document: SourceDocument) -> object:
    """A CRD's value, for its schema only: its outline (kmultiarch.yaml.outline), not kept and
    never failing the run (kmultiarch passes CRDs through unread), at a fraction of the time
    and memory of composing hundreds of KB."""
    if document.resource_type is None:
        return document.value  # composed when read
    from kmultiarch.yaml.outline import outline  # only streams with such CRDs pay for it

    return outline(document.text)


def drift_findings(
    documents: Mapping[str, list[SourceDocument]], policy: SchedulingPolicy
) -> list[Finding]:
    """``policy-drift`` warnings: what the Karpenter NodePools of the stream offer (platforms,
    taints to tolerate) and the policy lacks. Judged over every NodePool of the run at once: a
    taint is asked for only where no pool offers the platform untainted."""
    located: list[tuple[str, SourceDocument, NodeSource]] = [
        (name, document, source)
        for name, docs in documents.items()
        for document in docs
        if document.resource_type is None or may_describe_nodes(*document.resource_type)
        if document.value is not None
        for source in node_sources(document.value)
    ]
    problems = drift([source for _, _, source in located], policy)
    findings: list[Finding] = []
    for pool, message in problems:
        name, document = next((n, d) for n, d, s in located if s is pool)
        findings.append(
            Finding(
                POLICY_DRIFT,
                "warning",
                message,
                source=name,
                document_index=document.index,
                line=document.start_line,
                resource=ResourceRef(pool.api_version, pool.kind, pool.name, ""),
                path=(*pool.path, "spec", "template", "spec"),
            )
        )
    return findings


def _namespace_labels(
    documents: Mapping[str, list[SourceDocument]], scope: ScopePolicy
) -> dict[str, Mapping[str, str]]:
    """The labels of each namespace: the stream's Namespace documents, else the policy's
    ``spec.namespaceLabels`` (for namespaces the stream does not carry)."""
    labels: dict[str, Mapping[str, str]] = dict(scope.namespace_labels)
    labels.update({name: info.labels for name, info in _namespaces(documents).items()})
    return labels


def _injected(
    scope: ScopePolicy,
    namespace_labels: Mapping[str, object],
    pod_labels: Mapping[str, object],
    pod_annotations: Mapping[str, object],
) -> tuple[ContainerImage, ...]:
    """The containers the policy's injections add to a pod with these labels and annotations."""
    return tuple(
        ContainerImage(
            (), f"{injection.name} sidecar", image, added_by="injection", injection=injection.name
        )
        for injection in scope.injections
        if injection.applies(namespace_labels, pod_labels, pod_annotations)
        for image in injection.images
    )


def _needs_namespaces(scope: ScopePolicy) -> bool:
    return scope.exclude.namespace_selector is not None or scope.mode == "optIn"


def _namespaces(documents: Mapping[str, list[SourceDocument]]) -> dict[str, NamespaceInfo]:
    """The Namespace documents of the stream, by name (the last one wins, as kubectl apply)."""
    found: dict[str, NamespaceInfo] = {}
    for docs in documents.values():
        for document in docs:
            known = document.resource_type
            if known is not None and known != ("v1", "Namespace") and not known[1].endswith("List"):
                continue
            for namespace in namespaces_in(document.value):
                found[namespace.name] = namespace
    return found


def _out_of_scope(
    workload: Workload,
    template_annotations: Mapping[str, object],
    scope: ScopePolicy,
    namespaces: Mapping[str, NamespaceInfo],
    default_namespace: str = DEFAULT_NAMESPACE,
) -> bool:
    """Excluded by kind, by a namespace name or glob, by the namespace selector (Namespaces of
    the stream only), or, in optIn mode, not opted in. A resource without metadata.namespace
    is in ``default_namespace`` (``helm template`` output names none)."""
    if workload.kind in scope.exclude.kinds:
        return True
    namespace_name = workload.namespace or default_namespace
    if namespace_excluded_by_glob(namespace_name, scope.exclude.namespaces):
        return True
    namespace = namespaces.get(namespace_name)
    selector = scope.exclude.namespace_selector
    if selector is not None and namespace is not None and selector.matches(namespace.labels):
        return True
    if scope.mode == "optIn":
        return not is_enabled(
            workload.annotations,
            template_annotations,
            namespace.annotations if namespace is not None else {},
        )
    return False


def _parse_image(container: ContainerImage) -> ImageOutcome:
    try:
        reference = ImageRef.parse(container.image)
        if container.running_digest is not None:
            # A running Pod's status names what was pulled: the truth, whatever the tag says now.
            reference = reference.with_digest(container.running_digest)
        return ImageOutcome(container, reference, None)
    except InvalidReferenceError as exc:
        return ImageOutcome(container, None, None, str(exc))


def _decide(
    pod: PodOutcome, policy: Policy, resolutions: Mapping[ImageRef, Resolution]
) -> PodOutcome:
    images = tuple(
        ImageOutcome(
            image.container,
            image.reference,
            resolutions.get(image.reference) if image.reference else None,
            image.problem,
        )
        for image in pod.images
    )
    if pod.status in ("excluded", "skipped", "malformed"):
        return _replace(pod, images=images)
    if pod.status == "chosen-by-operator":
        return _partially_decided(_replace(pod, images=images), policy, None)
    if not images:
        return _replace(pod, images=images, status="ok")
    unresolved = [
        image
        for image in images
        if image.problem or image.resolution is None or not image.resolution.ok
    ]
    # spec.fallbackPlatforms stands in for images the registry could not answer for, never for
    # references that do not parse, and never under failurePolicy: Fail.
    fallback = (
        frozenset(policy.resolution.fallback_platforms)
        if policy.failure_policy == "Ignore"
        else None
    )
    if unresolved and (
        not fallback or any(image.problem or image.resolution is None for image in unresolved)
    ):
        unresolved_pod = _replace(pod, images=images, status="unresolved")
        if policy.failure_policy == "Fail":
            return unresolved_pod  # undecidable: the run fails
        return _partially_decided(unresolved_pod, policy, fallback)
    known = _known_platforms(images, fallback)
    scheduling = policy.scheduling
    supported = _supported(tuple(known), scheduling.platforms)
    narrowed_by = _narrowing_injections(images, supported, scheduling, fallback)
    plan, preferred = _plan(pod, known, scheduling)
    status: PodStatus = (
        plan.conflicts[0].rule  # type: ignore[assignment]
        if plan.conflicts
        else ("needs-change" if plan.changes else "ok")
    )
    return _replace(
        pod, images=images, status=status, plan=plan, preferred=preferred, narrowed_by=narrowed_by
    )


def _known_platforms(
    images: Sequence[ImageOutcome], fallback: frozenset[Platform] | None
) -> list[frozenset[Platform]]:
    """The platforms of each image of a pod whose platforms are known (the registry's answer,
    else spec.fallbackPlatforms for an image the registry could not answer for), for a
    HostProcess pod on any Windows build. Metadata-only images (OLM bundles, artifacts) run
    wherever the pod runs, and images with no answer are left out: the caller knows whether
    any is."""
    known = [
        _platforms(image) if image.resolution.ok else (fallback or None)
        for image in images
        if image.problem is None
        and image.resolution is not None
        and not image.resolution.metadata_only
    ]
    return [platforms for platforms in known if platforms is not None]


def _partially_decided(
    pod: PodOutcome, policy: Policy, fallback: frozenset[Platform] | None
) -> PodOutcome:
    """A pod some of whose images are unknown (unresolvable, chosen by the operator, named by
    a run-time parameter), decided on the images that are known: a required node affinity to
    the platforms every known image runs on never keeps the pod off a node it could run on, so
    it is written; a toleration (or a preference) could send it where an unknown image does not
    run, so none is. The pod keeps its status, and the warning about the unknown images stays
    (docs/scheduling.md, "Partial knowledge")."""
    known = _known_platforms(pod.images, fallback)
    if not known:
        return pod
    narrowing = dataclass_replace(policy.scheduling, tolerations={}, preferences={})
    plan, _ = _plan(pod, known, narrowing)
    return _replace(pod, plan=plan, partial=True)


@functools.lru_cache(maxsize=1024)
def _supported(
    known: tuple[frozenset[Platform], ...], cluster: tuple[Platform, ...]
) -> frozenset[Platform]:
    """:func:`supported_platforms`, computed once per set of image platforms: a stream's pods
    mostly share a few (a 2,000-resource stream asks twice for each of its 1,000 pods)."""
    return supported_platforms(known, cluster)


def _plan(
    pod: PodOutcome, known: list[frozenset[Platform]], scheduling: SchedulingPolicy
) -> tuple[PodPlan, tuple[dict[str, object], ...]]:
    """The plan for a pod whose images run on ``known`` (one set per image), and the preferred
    terms spec.preferences adds to it."""
    if is_host_process(pod.target.spec):
        known = any_windows_build(known)  # HostProcess containers run on any Windows build
    supported = _supported(tuple(known), scheduling.platforms)
    target = pod.target
    shape = target.placement.shape if target.placement is not None else "affinity"
    spec = scheduling_view(target.spec, shape)
    plan = plan_pod_with_inherited(
        spec,
        target.inherited,
        target.path,
        supported,
        scheduling,
        windows_builds(known, scheduling.platforms),
    )
    preferred: tuple[dict[str, object], ...] = ()
    if scheduling.preferences and not plan.conflicts:
        view = planned_view(spec, target.inherited, target.path, plan.operations)
        preferred = tuple(preference_terms(view, plan.reachable, scheduling))
        operations = apply_terms(
            view, target.inherited, spec, target.path, plan.operations, list(preferred)
        )
        plan = dataclass_replace(plan, operations=tuple(operations))
    if target.placement is not None:
        # Written in the placement's own shape, creating what it lacks.
        operations = in_shape(
            plan.operations,
            target.path,
            shape,
            target.read_only,
            target.affinity_defaults,
            target.spec,
        )
        withheld = _withheld_finding(plan, target, shape, operations)
        plan = dataclass_replace(
            plan,
            operations=tuple(materialized(operations, target.path, target.missing)),
            findings=(*plan.findings, *withheld),
        )
    return plan, preferred


def _withheld_finding(
    plan: PodPlan, target: PodTarget, shape: str, written: Sequence[Operation]
) -> tuple[Finding, ...]:
    """An ``unwritable-constraint`` warning when a constraint the pods need goes into a field
    the operator fills in itself (:attr:`PodTarget.withheld`): left out, it must be said."""
    if not target.withheld:
        return ()
    wanted = in_shape(
        plan.operations,
        target.path,
        shape,
        target.read_only - target.withheld,
        target.affinity_defaults,
        target.spec,
    )
    # A toleration left out keeps pods off nodes they could run on; an affinity left out lets
    # them onto nodes they cannot: that one is said.
    dropped = {
        written_field(str(operation.relative_to(target.path).path[0]), shape)
        for operation in wanted
        if operation not in written
        and operation.is_under(target.path)
        and operation.relative_to(target.path).path[:1]
    }
    withheld = sorted(dropped & {"affinity", "nodeAffinity"} & target.withheld)
    if not withheld:
        return ()
    fields = ", ".join(str(field) for field in withheld)
    where = target.field_path
    placement = target.placement
    if placement is not None and not placement.writes_affinity:
        return (
            Finding(
                UNWRITABLE_CONSTRAINT,
                "warning",
                f"its images run on {format_platforms(plan.supported)} only, but {where} has no "
                "field the operator copies into these pods' node affinity (it gives them its "
                "own): the constraint cannot be written. Keep the pods off the other "
                f"architectures with taints, or pin them with {where}.nodeSelector",
            ),
        )
    if placement is not None and placement.added_terms_when and not placement.default_affinity_when:
        return (
            Finding(
                UNWRITABLE_CONSTRAINT,
                "warning",
                f"its images run on {format_platforms(plan.supported)} only, but the operator "
                f"adds required node selector terms of its own beside those of {where}, and "
                "terms are ORed: an architecture term written there would not hold, so the "
                "constraint is not written. Keep the pods off the other architectures with "
                "taints, or drop the fields that add those terms",
            ),
        )
    return (
        Finding(
            UNWRITABLE_CONSTRAINT,
            "warning",
            f"its images run on {format_platforms(plan.supported)} only, but the operator gives "
            f"these pods an {fields} of its own when {where} has none, and one written there "
            f"would replace it: the constraint is not written. Give {where} an {fields} of its "
            "own (kmultiarch then writes the constraint into it), or keep the pods off the "
            "other architectures with taints",
        ),
    )


def _narrowing_injections(
    images: Sequence[ImageOutcome],
    supported: frozenset[Platform],
    policy: SchedulingPolicy,
    fallback: frozenset[Platform] | None,
) -> tuple[str, ...]:
    """The injections whose sidecars keep the pod off platforms its own images run on."""
    injected = [image for image in images if image.container.injection]
    if not injected:
        return ()
    own = [
        (_platforms(image) if image.resolution is not None and image.resolution.ok else fallback)
        for image in images
        if not image.container.injection
        and not (image.resolution is not None and image.resolution.metadata_only)
    ]
    own_supported = _supported(tuple(p for p in own if p is not None), policy.platforms)
    if own_supported <= supported:
        return ()
    return tuple(
        dict.fromkeys(
            image.container.injection
            for image in injected
            if image.resolution is not None
            and image.resolution.ok
            and not own_supported <= _supported((_platforms(image),), policy.platforms)
        )
    )


def _kept_to(pod: PodOutcome) -> str | None:
    """The platforms a partially decided pod is kept to, when its plan writes that."""
    if not pod.writes or not pod.partial or pod.plan is None:
        return None
    return format_platforms(pod.plan.reachable)


def _platforms_text(image: ImageOutcome, fallback: Sequence[Platform]) -> str:
    resolution = image.resolution
    if resolution is None or (not resolution.ok and not fallback):
        return "unknown"
    if resolution.metadata_only:
        return "metadata-only"
    if not resolution.ok:
        return f"{format_platforms(set(fallback))} (fallback)"
    return format_platforms(_platforms(image))


def _platforms(image: ImageOutcome) -> frozenset[Platform]:
    assert image.resolution is not None
    verification = image.resolution.verification
    if image.container.volume and verification is not None:
        # Nothing is started from an image volume: spec.verify's verdicts on the program a
        # platform would start do not narrow it.
        return image.resolution.platforms | verification.mismatched
    return image.resolution.platforms


def _replace(pod: PodOutcome, **changes: Any) -> PodOutcome:
    from dataclasses import replace

    return replace(pod, **changes)


def _findings_for(
    pod: PodOutcome,
    severity: Severity,
    fallback: Sequence[Platform] = (),
    *,
    conflicts: Severity = "error",
    needs_scheduling: bool = False,
    describe: Callable[[PodOutcome], Sequence[str]] | None = None,
    mismatch: Severity = "warning",
) -> list[Finding]:
    """The findings of one decided pod: each rule's message is made here or by the planner
    (its conflicts and warnings), and given where the pod is."""
    base: dict[str, Any] = {
        "source": pod.source,
        "document_index": pod.document_index,
        "line": pod.line,
        "resource": pod.resource,
    }
    findings: list[Finding] = []
    if pod.status not in ("excluded", "skipped"):
        findings.extend(
            Finding(MALFORMED_FIELD, "warning", message, path=field_path, **base)
            for field_path, message in pod.target.malformed
        )
        findings.extend(
            Finding(UNWRITABLE_CONSTRAINT, "warning", message, path=pod.target.path, **base)
            for message in pod.target.unwritable
        )
    kept_to = _kept_to(pod)
    if pod.status == "chosen-by-operator":
        fields = ", ".join(pod.target.chosen_by_operator)
        # A run-time variable's field says why itself; the others name no image.
        why = "" if RUN_TIME_IMAGE in fields else " (the resource names none)"
        left = (
            f"the pods it makes are kept to {kept_to}, where their other images run, and "
            "given no toleration"
            if kept_to
            else "the pods it makes are left as they are"
        )
        findings.append(
            Finding(
                IMAGE_CHOSEN_BY_OPERATOR,
                "warning",
                f"the operator chooses the image of {fields}{why}: {left}; name the image, "
                "or declare it as defaultImages of the kind in spec.podSpecs",
                path=pod.target.path,
                **base,
            )
        )
    if pod.status == "unresolved":
        for image in pod.images:
            reason = image.failure_reason
            if reason is None:
                continue
            if severity != "warning":
                consequence = "cannot be decided (failurePolicy: Fail)"
            elif kept_to:
                consequence = (
                    f"is kept to {kept_to}, where its other images run, and given no toleration"
                )
            else:
                consequence = "is left unchanged"
            findings.append(
                Finding(
                    UNRESOLVED_IMAGE,
                    severity,
                    unresolved_image_message(image.container.image, image.container.name, reason)
                    + f"; the pod {consequence}",
                    path=image.container.image_path,
                    image=image.container.image,
                    **base,
                )
            )
    if pod.status in ("needs-change", "ok", *CONFLICTS):
        for image in pod.images:
            if image.resolution is None or image.resolution.ok:
                continue
            findings.append(
                Finding(
                    FALLBACK_PLATFORMS,
                    "warning",
                    unresolved_image_message(
                        image.container.image, image.container.name, image.failure_reason or ""
                    )
                    + "; taken to run on "
                    + ", ".join(str(p) for p in fallback)
                    + " (spec.fallbackPlatforms)",
                    path=image.container.image_path,
                    image=image.container.image,
                    **base,
                )
            )
    if pod.status not in ("excluded", "skipped"):
        findings.extend(_mismatch_findings(pod, mismatch, base))
        findings.extend(_pin_findings(pod, conflicts, base))
    if pod.plan is None:
        return findings
    if pod.status in ("needs-change", "ok") or pod.writes:
        findings.extend(
            dataclass_replace(warning, path=pod.target.path, **base)
            for warning in pod.plan.findings
        )
    if pod.narrowed_by and pod.plan.changes:
        sidecars = [image for image in pod.images if image.container.injection in pod.narrowed_by]
        findings.append(
            Finding(
                INJECTED_SIDECAR,
                "warning",
                f"the pod is kept to {format_platforms(pod.plan.supported)} because of what "
                f"{', '.join(pod.narrowed_by)} inject{'s' if len(pod.narrowed_by) == 1 else ''}: "
                + "; ".join(
                    f"{image.container.image} ({_platforms_text(image, fallback)})"
                    for image in sidecars
                ),
                path=pod.target.path,
                **base,
            )
        )
    if (pod.status == "needs-change" or pod.writes) and needs_scheduling:
        runs_on = ", ".join(str(p) for p in sorted(pod.plan.supported)) or "no platform"
        changes = "; ".join(describe(pod) if describe is not None else ())
        findings.append(
            Finding(
                NEEDS_SCHEDULING,
                "error",
                f"{changes} (its images run on {runs_on}); run `kmultiarch fix` to apply",
                path=pod.target.path,
                **base,
            )
        )
    if pod.status in CONFLICTS or (pod.partial and pod.plan.conflicts):
        # A conflict of the known images is one whatever the unknown ones are.
        detail = "; ".join(
            f"{image.container.image}: {_platforms_text(image, fallback)}" for image in pod.images
        )
        findings.extend(
            dataclass_replace(
                conflict,
                severity=conflicts,
                message=f"{conflict.message} ({detail}); the pod is left unchanged",
                path=pod.target.path,
                **base,
            )
            for conflict in pod.plan.conflicts
        )
    return findings


def located(
    findings: Sequence[Finding], documents: Mapping[str, list[SourceDocument]]
) -> list[Finding]:
    """``findings`` on the source line of the field each is about (the key of a pod spec, a
    container's ``image:``). Findings come in document order: each document that has one is
    composed once, for all of its findings, and its node tree dropped at the next; a run
    without findings composes nothing."""
    found: list[Finding] = []
    current: tuple[str, int] | None = None
    locator = Locator(None, 0)
    with cyclic_gc_paused():
        for finding in findings:
            index = finding.document_index
            docs = documents.get(finding.source, [])
            if finding.path and index is not None and index < len(docs):
                if (finding.source, index) != current:
                    current = (finding.source, index)
                    locator = Locator(docs[index].node, docs[index].start_line)
                found.append(dataclass_replace(finding, line=locator.line_of(finding.path)))
            else:
                found.append(finding)
    return found


@dataclass(frozen=True)
class Locator:
    """Source lines of paths in one document (its composed root, and its first line)."""

    root: Node | None
    start_line: int

    def line_of(self, path: Sequence[str | int]) -> int:
        """The 1-based source line of the node at ``path`` (of its key, for a mapping value);
        the deepest line found when the path leaves the node tree (aliases, merge keys)."""
        node = self.root
        if node is None:
            return self.start_line
        line = node.start_mark.line
        for part in path:
            if isinstance(node, MappingNode) and isinstance(part, str):
                for key, value in node.value:
                    if getattr(key, "value", None) == part:
                        line, node = key.start_mark.line, value
                        break
                else:
                    break
            elif (
                isinstance(node, SequenceNode) and isinstance(part, int) and part < len(node.value)
            ):
                node = node.value[part]
                line = node.start_mark.line
            else:
                break
        return int(self.start_line + line)


def _repinned(
    resolutions: Mapping[ImageRef, Resolution],
    resolve: Resolve,
    volume_only: frozenset[ImageRef] | set[ImageRef] = frozenset(),
) -> Mapping[ImageRef, Resolution]:
    """``spec.repinDigests``: each reference pinned to one platform's manifest of its tag's
    index answered as the index is (the pod is decided on what it will pull once repinned)."""
    targets = {
        reference: reference.with_digest(resolution.pin.index_digest)
        for reference, resolution in resolutions.items()
        if resolution.pin is not None and not resolution.pin.moved
    }
    if not targets:
        return resolutions
    programs = {target for reference, target in targets.items() if reference not in volume_only}
    answers = resolve(References(targets.values(), set(targets.values()) - programs))
    updated = dict(resolutions)
    for reference, target in targets.items():
        answer, pin = answers.get(target), resolutions[reference].pin
        if answer is not None and answer.ok and pin is not None:
            updated[reference] = dataclass_replace(
                answer, reference=reference, pin=dataclass_replace(pin, repinned=True)
            )
    return updated


def _as_written(
    pod: PodOutcome,
    document: SourceDocument,
    resolutions: Mapping[ImageRef, Resolution],
    as_pinned: Mapping[ImageRef, Resolution],
) -> Mapping[ImageRef, Resolution]:
    """The answers ``pod`` is decided on: a pinned reference it names through other text than
    its image field (a Tekton step's ``$(params.image)``, whose parameter other steps may
    read; an operator's default) is not rewritten, so the pod pulls it as written, and its pin
    is said to be set elsewhere."""
    if pod.status in ("excluded", "skipped"):
        return resolutions
    elsewhere: dict[ImageRef, Resolution] = {}
    for image in pod.images:
        answer = as_pinned.get(image.reference) if image.reference is not None else None
        if answer is None or answer.pin is None or answer.pin.moved:
            continue
        path = image.container.image_path
        if path and value_at(document.value, path) == image.container.image:
            continue
        pin = dataclass_replace(answer.pin, elsewhere=True)
        elsewhere[answer.reference] = dataclass_replace(answer, pin=pin)
    return {**resolutions, **elsewhere} if elsewhere else resolutions


def _repins(pod: PodOutcome) -> list[tuple[tuple[str | int, ...], str, str]]:
    """The images ``spec.repinDigests`` rewrites to the index digest: (the field's path, as
    written, repinned). Only the image fields of a pod in scope (not of one skipped or
    excluded), each holding the reference itself."""
    if pod.status in ("excluded", "skipped"):
        return []
    repins = []
    for image in pod.images:
        pin = image.resolution.pin if image.resolution is not None else None
        digest = image.reference.digest if image.reference is not None else None
        path = image.container.image_path
        if pin is None or not pin.repinned or pin.elsewhere or digest is None or not path:
            continue
        repinned = image.container.image.replace(digest, pin.index_digest)
        repins.append((path, image.container.image, repinned))
    return repins


@dataclass(frozen=True)
class PinsLeft:
    """A pinned reference that a file still writes once its pods' image fields are repinned
    (a ConfigMap's data, a skipped workload, a comment): ``lines``, each left as it is."""

    source: str
    reference: str
    lines: tuple[int, ...]

    @property
    def message(self) -> str:
        one = len(self.lines) == 1
        where = ("line " if one else "lines ") + ", ".join(map(str, self.lines))
        return (
            f"{count_of(len(self.lines), 'other occurrence')} of {self.reference!r} left as "
            f"{'it is' if one else 'they are'} ({where}): only the image fields of the pods "
            "kmultiarch places are repinned, not other text (a ConfigMap's data, a skipped or "
            "excluded workload); change it yourself if it names the image to run"
        )


def pins_left(
    sources: Iterable[InputSource], documents: Mapping[str, Sequence[DocumentOutcome]]
) -> list[PinsLeft]:
    """Per file and reference repinned, the lines that still write the pinned reference."""
    found: list[PinsLeft] = []
    for source in sources:
        rewritten: dict[str, list[int]] = {}
        for outcome in documents.get(source.name, ()):
            if outcome.repins:
                locator = Locator(outcome.document.node, outcome.document.start_line)
                for path, written, _ in outcome.repins:
                    rewritten.setdefault(written, []).append(locator.line_of(path))
        for written, lines in rewritten.items():
            left = lines_left(source.text, written, lines)
            if left:
                found.append(PinsLeft(source.name, written, tuple(left)))
    return found


def _pins_left_findings(
    sources: Iterable[InputSource], documents: Mapping[str, Sequence[DocumentOutcome]]
) -> list[Finding]:
    return [
        Finding(
            PLATFORM_PINNED_DIGEST,
            "info",
            left.message,
            source=left.source,
            line=left.lines[0],
            image=left.reference,
        )
        for left in pins_left(sources, documents)
    ]


def _pin_findings(pod: PodOutcome, severity: Severity, base: Mapping[str, Any]) -> list[Finding]:
    """``platform-pinned-digest``: ``NAME:TAG@DIGEST`` whose digest is one platform's manifest
    of the index the tag names (every node pulls that platform: the decision used it, as the
    pin is real until fixed), with the index digest to pin instead (``suggestion``: the
    reference repinned, which ``fix --repin`` writes); a warning when the tag moved."""
    findings: list[Finding] = []
    for image in pod.images:
        pin = image.resolution.pin if image.resolution is not None else None
        if pin is None or image.reference is None or image.reference.digest is None:
            continue
        written = image.container.image
        pinned = image.reference.digest
        if pin.moved:
            findings.append(
                Finding(
                    PLATFORM_PINNED_DIGEST,
                    "warning",
                    f"image {written!r} of container {image.container.name!r}: tag "
                    f"{pin.tag} names {pin.index_digest} now, whose index does not list "
                    f"{pinned} (the tag moved): check which image you mean to run; not repinned",
                    path=image.container.image_path,
                    image=written,
                    **base,
                )
            )
            continue
        platform = str(pin.platform) if pin.platform is not None else "one platform"
        repinned = written.replace(pinned, pin.index_digest)
        if pin.elsewhere:
            done = (
                "change it where it is set: it is not written in an image field, so "
                "`kmultiarch fix --repin` and spec.repinDigests leave it"
            )
        elif pin.repinned:
            done = "spec.repinDigests rewrites it, and the pod is decided on the index"
        else:
            done = "`kmultiarch fix --repin` rewrites it"
        findings.append(
            Finding(
                PLATFORM_PINNED_DIGEST,
                severity,
                f"image {written!r} of container {image.container.name!r} pins the {platform} "
                f"manifest of the index tag {pin.tag} names: every node pulls {platform}; pin "
                f"the index {pin.index_digest} instead ({done})",
                path=image.container.image_path,
                image=written,
                suggestion=repinned,
                **base,
            )
        )
    return findings


def _mismatch_findings(
    pod: PodOutcome, severity: Severity, base: Mapping[str, Any]
) -> list[Finding]:
    """``platform-mismatch``: a platform the image's registry claims, whose start binary is of
    another machine (``spec.verify``). Under ``enforce`` the platform was already dropped from
    the image's platforms, so the pod is kept off it; the finding says why."""
    findings: list[Finding] = []
    for image in pod.images:
        verification = image.resolution.verification if image.resolution is not None else None
        if verification is None or image.container.volume:
            continue  # an image volume starts no program: nothing to verify
        for verdict in verification.platforms:
            if verdict.status != "mismatch":
                continue
            findings.append(
                Finding(
                    PLATFORM_MISMATCH,
                    severity,
                    f"image {image.container.image!r} of container {image.container.name!r} "
                    f"claims {verdict.platform}, but {verdict.file or 'the program it starts'} "
                    f"is built for {verdict.machine or 'another machine'}"
                    + (f" (started via {' -> '.join(verdict.via)})" if verdict.via else "")
                    # The reason says the same as the file and machine do, when both are known.
                    + (f" ({verdict.reason})" if not (verdict.file and verdict.machine) else ""),
                    path=image.container.image_path,
                    image=image.container.image,
                    **base,
                )
            )
    return findings


#: How mutate's summary line says the statuses ("1 changed, 3 unchanged").
_SUMMARY_WORDS = {"needs-change": "changed", "ok": "unchanged"}


def summarise(result: EngineResult) -> str:
    """``2 pod specs, 1 changed, 1 unchanged; 3 images: 1 from cache or lock, 2 looked up,
    1 failed`` (an image declared by the policy's overrides is counted as such; failed counts
    every image whose platforms are not known, however it was asked)."""
    counts: dict[str, int] = {}
    for pod in result.pods:
        counts[pod.status] = counts.get(pod.status, 0) + 1
    resolutions = result.resolutions.values()
    from_cache = sum(1 for r in resolutions if r.ok and r.source in ("cache", "lock"))
    looked_up = sum(1 for r in resolutions if r.source == "registry")
    declared = sum(1 for r in resolutions if r.source == "override")
    failed = sum(1 for r in resolutions if not r.ok)
    counts["conflict"] = sum(counts.pop(status, 0) for status in CONFLICTS)
    parts = [count_of(len(result.pods), "pod spec")]
    parts.extend(
        f"{counts[status]} {_SUMMARY_WORDS.get(status, status)}"
        for status in ("needs-change", "ok", "skipped", "excluded", "unresolved", "conflict")
        if counts.get(status)
    )
    images = [f"{from_cache} from cache or lock", f"{looked_up} looked up"]
    if declared:
        images.append(f"{declared} declared by overrides")
    if failed:
        images.append(f"{failed} failed")
    return f"{', '.join(parts)}; {count_of(len(result.resolutions), 'image')}: {', '.join(images)}"
    return (
        f"{', '.join(parts)}; {images} images ({from_cache} from cache/lock, "
        f"{images - from_cache} looked up or declared)"
    )
