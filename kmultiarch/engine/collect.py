"""The engine's first step: the documents read, the pods in scope with their images, the related
resources an operator reads, the node pools of the stream, and the findings about documents
rather than pods (unknown kinds, injected sidecars, policy drift).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace as dataclass_replace
from typing import TYPE_CHECKING, Any

from kmultiarch.core.findings import (
    INJECTED_SIDECAR,
    MALFORMED_FIELD,
    POLICY_DRIFT,
    UNKNOWN_POD_KIND,
    Finding,
    PodStatus,
    ResourceRef,
)
from kmultiarch.core.images.reference import ImageRef
from kmultiarch.core.operators.model import api_group
from kmultiarch.core.operators.shapes import injection_hints
from kmultiarch.core.operators.unknownkinds import (
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
from kmultiarch.core.operators.workloads import (
    SKIP_ANNOTATION,
    ContainerImage,
    Operators,
    Related,
    Workload,
    find_workloads,
    is_skipped,
    may_hold_pods,
)
from kmultiarch.core.placement.cluster import (
    NodeSource,
    drift,
    may_describe_node_pools,
    may_describe_nodes,
    node_pool_rules,
    node_sources,
)
from kmultiarch.core.policy.model import Policy, SchedulingPolicy, ScopePolicy
from kmultiarch.core.policy.scope import (
    NamespaceInfo,
    is_enabled,
    namespace_excluded_by_glob,
    namespaces_in,
)
from kmultiarch.core.resources import DEFAULT_NAMESPACE, resources_in
from kmultiarch.engine.edit import ImageOutcome, PodOutcome, _Derived
from kmultiarch.errors import InvalidReferenceError, ManifestStreamError
from kmultiarch.yaml.edit import edit_hint
from kmultiarch.yaml.stream import InputSource, SourceDocument, read_stream

if TYPE_CHECKING:
    from yaml.nodes import Node


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
