"""Custom resources of kinds kmultiarch does not know that look like they make pods.

A resource whose kind is neither built in (the pod-spec table of
:mod:`kmultiarch.core.operators.workloads`), nor an operator's kind of the catalogue or of the
policy's ``spec.podSpecs``, is left as it is. When it carries what pods are made of
(:func:`pod_shaped_fields`: a pod spec, an image field,
``affinity``/``tolerations``/``nodeSelector``), its operator probably makes pods from it that no
one judged: :func:`unknown_pod_kind` says so and proposes the ``spec.podSpecs`` entry that would
have them judged, read from the resource and, when the stream carries the kind's
CustomResourceDefinition, from its ``openAPIV3Schema`` (:func:`schema_fields`).

The entry is a proposal to check against the operator's documentation, in the policy's own
format (the reader accepts it as it is): each object holding scheduling fields is a placement;
an object that is a pod spec is a placement with ``podSpec: true``; image fields go with the
placements they sit above or below (with every placement when neither: more constraint, never
less). With images and nothing to hold the scheduling fields, the placement is a guess: the
deepest ``template/spec`` above an image (KubeVirt's VirtualMachine), else the object
naming the image.

A CRD in the stream whose schema is pod-shaped but no resource of its kind warns of nothing:
without a resource there are no pods. Pure: plain data in and out.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from kmultiarch.core.images.reference import ImageRef
from kmultiarch.core.operators.catalogued import MAKES_NO_PODS
from kmultiarch.core.operators.model import WILDCARD, Pointer, api_group
from kmultiarch.core.operators.workloads import (
    POD_SPEC_PATHS,
    WORKFLOW_SPEC_PATHS,
    WRAPPED_RESOURCES,
)
from kmultiarch.errors import InvalidReferenceError

__all__ = [
    "BUILT_IN_GROUPS",
    "MAX_ENTRY_PATHS",
    "MAX_SCANNED_NODES",
    "NOT_POD_MAKERS",
    "FieldScan",
    "PodShapedField",
    "UnknownPodKind",
    "crd_schemas",
    "entry_yaml",
    "is_crd",
    "may_be_pod_shaped",
    "may_define_kinds",
    "needs_scan",
    "pod_shaped_fields",
    "scan_resource",
    "scan_schema",
    "schema_fields",
    "schema_for",
    "suggested_entry",
    "unknown_pod_kind",
]

#: The API groups the Kubernetes API server serves itself: their kinds are built in, never an
#: operator's. (Groups ending in ``.k8s.io`` are not all built in: ``jobset.x-k8s.io``,
#: ``gateway.networking.k8s.io`` and ``sparkoperator.k8s.io`` are served by CRDs.)
BUILT_IN_GROUPS = frozenset(
    {
        "",
        "admissionregistration.k8s.io",
        "apiextensions.k8s.io",
        "apiregistration.k8s.io",
        "apps",
        "authentication.k8s.io",
        "authorization.k8s.io",
        "autoscaling",
        "batch",
        "certificates.k8s.io",
        "coordination.k8s.io",
        "discovery.k8s.io",
        "events.k8s.io",
        "extensions",
        "flowcontrol.apiserver.k8s.io",
        "internal.apiserver.k8s.io",
        "metrics.k8s.io",
        "networking.k8s.io",
        "node.k8s.io",
        "policy",
        "rbac.authorization.k8s.io",
        "resource.k8s.io",
        "scheduling.k8s.io",
        "storage.k8s.io",
        "storagemigration.k8s.io",
    }
)

#: Kinds that hold pod-shaped content but whose own pods, if any, are placed elsewhere: (API
#: group, kind) -> why. Never warned.
NOT_POD_MAKERS: Mapping[tuple[str, str], str] = {
    ("tekton.dev", "Task"): "run by TaskRuns, which the catalogue places",
    ("tekton.dev", "ClusterTask"): "run by TaskRuns, which the catalogue places",
    ("tekton.dev", "Pipeline"): "run by PipelineRuns, which the catalogue places",
    ("tekton.dev", "StepAction"): "steps of Tasks run by TaskRuns",
    ("opentelemetry.io", "Instrumentation"): "injects into other pods: spec.injections",
    ("caching.internal.knative.dev", "Image"): "an image for Knative to cache, not to run",
    ("kustomize.config.k8s.io", "Kustomization"): "kustomize's build input",
    ("kustomize.config.k8s.io", "Component"): "kustomize's build input",
    ("kpt.dev", "Kptfile"): "kpt's functions run where kpt runs",
    ("helm.toolkit.fluxcd.io", "HelmRelease"): "a chart's values: its pods are the chart's",
    ("argoproj.io", "Application"): "a chart's values: its pods are the chart's",
    ("argoproj.io", "ApplicationSet"): "a chart's values: its pods are the chart's",
    ("kyverno.io", "ClusterPolicy"): "patterns matched against other resources",
    ("kyverno.io", "Policy"): "patterns matched against other resources",
    ("kmultiarch.dev", "MultiArchPolicy"): "kmultiarch's own policy",
    ("kmultiarch.dev", "ImageLock"): "kmultiarch's own lock",
}

#: What a key of the resource is to the scan.
FieldKind = Literal[
    "pod-spec",
    "image",
    "affinity",
    "advanced-affinity",
    "nodeAffinity",
    "tolerations",
    "nodeSelector",
]
SCHEDULING_KEYS = ("affinity", "nodeAffinity", "tolerations", "nodeSelector")
_AFFINITY_KEYS = frozenset({"nodeAffinity", "podAffinity", "podAntiAffinity"})
_TOLERATION_KEYS = frozenset({"key", "operator", "value", "effect", "tolerationSeconds"})
_LABEL_SELECTOR_KEYS = frozenset({"matchLabels", "matchExpressions"})
_SKIPPED_TOP = frozenset({"apiVersion", "kind", "metadata", "status"})
#: Objects whose ``image`` is not a container's: a core RBD volume names a Ceph block image.
_NOT_CONTAINER_IMAGES = frozenset({"rbd"})
#: Deep enough for any real resource or schema; a bound on hostile nesting.
_MAX_DEPTH = 64
#: Nodes one scan of a resource (or of a CRD's schema) visits at most: about ten times the
#: largest object of the corpora (an Argo CD CRD, 23,629 nodes), so that a resource whose
#: aliases expand it (up to the reader's million visits) is not walked for seconds. The scan
#: stops there, and the warning says so.
MAX_SCANNED_NODES = 250_000
#: Distinct paths (placements and images, list items as ``*``) an entry is made of at most:
#: real ones have a few dozen; an image that goes with no placement is listed under every
#: one, so the entry grows as placements times images.
MAX_ENTRY_PATHS = 128

#: Text that any pod-shaped content has: a key named like one (quoted or not, YAML or JSON),
#: each pattern led by its word (a literal prefix the regular expression engine finds fast). A
#: document without any is not composed to be scanned.
_POD_SHAPED_KEYS = tuple(
    (word, re.compile(rf"{word}(?:Name)?[\"']?[ \t]*:"))
    for word in ("image", "Image", "containers", "ffinity", "tolerations", "nodeSelector")
)
_CRD_PROPERTY_TEXT = re.compile(
    r"\n[ \t]*[\"']?(?:image|imageName|containers|affinity|nodeAffinity|tolerations|nodeSelector"
    r"|[A-Za-z0-9]*Image(?:Name)?)[\"']?[ \t]*:"
)


def may_be_pod_shaped(text: str) -> bool:
    """Whether a document's text may hold pod-shaped content (a key named like one): a fast
    check before composing a document only to scan it (substrings first: a search for a
    literal is many times faster than for a pattern)."""
    return any(word in text and key.search(text) for word, key in _POD_SHAPED_KEYS)


def is_crd(api_version: str, kind: str) -> bool:
    return kind == "CustomResourceDefinition" and api_version == "apiextensions.k8s.io/v1"


def may_define_kinds(text: str, kinds: Sequence[str]) -> bool:
    """Whether a CRD's text may define one of ``kinds`` with a pod-shaped schema (the kind
    and a pod-shaped property named in it): a fast check before composing a CRD, mostly
    hundreds of KB."""
    if not kinds or not any(kind in text for kind in kinds):
        return False
    names = "|".join(re.escape(kind) for kind in kinds)
    defines = re.search(rf"\n[ \t]*kind:[ \t]*[\"']?(?:{names})[\"']?[ \t]*\r?\n", text)
    return defines is not None and _CRD_PROPERTY_TEXT.search(text) is not None


def needs_scan(api_version: str, kind: str, known: Mapping[tuple[str, str], object]) -> bool:
    """Whether a resource of this type is one to scan: not built in, not an operator's kind
    ``known`` holds (the catalogue with the policy's podSpecs), not one of
    :data:`NOT_POD_MAKERS` nor of the known operators' kinds that make no pods
    (:data:`kmultiarch.core.operators.catalogued.MAKES_NO_PODS`). A list's items are judged one by
    one."""
    group = api_group(api_version)
    if kind == "List":
        return True
    if kind.endswith("List") and len(kind) > 4:
        return needs_scan(api_version, kind.removesuffix("List"), known)  # a ConfigMapList's
    return not (
        group in BUILT_IN_GROUPS
        or (group, kind) in POD_SPEC_PATHS
        or (group, kind) in WORKFLOW_SPEC_PATHS
        or (group, kind) in WRAPPED_RESOURCES
        or (group, kind) in known
        or (group, kind) in NOT_POD_MAKERS
        or (group, kind) in MAKES_NO_PODS
    )


@dataclass(frozen=True)
class PodShapedField:
    """A field of a resource (or of its CRD's schema: then ``*`` for each item or value) that
    pods are made of. ``path``: from the resource's root; for a scheduling field, to the field
    itself (its holder is ``path[:-1]``); for ``pod-spec``, to the pod spec."""

    path: tuple[str | int, ...]
    kind: FieldKind


@dataclass(frozen=True)
class FieldScan:
    """The pod-shaped fields a scan found, in document order, and why it stopped before the
    end (:data:`MAX_SCANNED_NODES`), if it did."""

    fields: tuple[PodShapedField, ...]
    stopped: str | None = None


class _Budget:
    """The nodes a scan may still visit."""

    __slots__ = ("left",)

    def __init__(self) -> None:
        self.left = MAX_SCANNED_NODES

    def spend(self) -> bool:
        """Count a visit; False once the budget is spent."""
        self.left -= 1
        return self.left >= 0

    def stopped(self, what: str) -> str | None:
        if self.left >= 0:
            return None
        return f"the scan of {what} stopped after {MAX_SCANNED_NODES:,} nodes (aliases expand it)"


def pod_shaped_fields(resource: Mapping[str, object]) -> list[PodShapedField]:
    """The pod-shaped fields of a resource (:func:`scan_resource`'s)."""
    return list(scan_resource(resource).fields)


def scan_resource(resource: Mapping[str, object]) -> FieldScan:
    """The pod-shaped fields of a resource, in document order: pod specs (a ``containers``
    list of objects naming an ``image``, or a ``template.spec`` with ``containers``; its inside
    belongs to it and is not listed), image fields (a string that is an image reference, named
    ``image``, ``imageName``, ``*Image`` or ``*ImageName``), and the scheduling fields
    ``affinity`` (a core Affinity), a bare ``nodeAffinity``, ``tolerations`` (a list of
    tolerations) and ``nodeSelector`` (labels, not a label selector). ``metadata`` and
    ``status`` are not read. Each node is visited once (each path, when aliases share one),
    :data:`MAX_SCANNED_NODES` at most."""
    found: list[PodShapedField] = []
    budget = _Budget()
    for key, value in resource.items():
        if isinstance(key, str) and key not in _SKIPPED_TOP:
            _scan(key, value, (key,), found, 1, budget)
    return FieldScan(tuple(found), budget.stopped("the resource"))


def _scan(
    key: str,
    value: object,
    path: tuple[str | int, ...],
    found: list[PodShapedField],
    depth: int,
    budget: _Budget,
) -> None:
    if depth > _MAX_DEPTH or key in _NOT_CONTAINER_IMAGES or not budget.spend():
        return
    kind = _field_kind(key, value)
    if kind is not None:
        found.append(PodShapedField(path, kind))
        return
    if isinstance(value, Mapping):
        if _is_pod_spec(value, path):
            found.append(PodShapedField(path, "pod-spec"))
            return
        for child_key, child in value.items():
            if isinstance(child_key, str):
                _scan(child_key, child, (*path, child_key), found, depth + 1, budget)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            if isinstance(item, Mapping):
                _scan("", item, (*path, index), found, depth + 1, budget)


def _field_kind(key: str, value: object) -> FieldKind | None:
    if _is_image_key(key):
        return "image" if isinstance(value, str) and _is_image(value) else None
    if key == "affinity" and isinstance(value, Mapping) and set(value) <= _AFFINITY_KEYS:
        return "affinity"
    # Percona's affinity: an object of the operator's whose `advanced` is the pods' Affinity.
    advanced = value.get("advanced") if key == "affinity" and isinstance(value, Mapping) else None
    if isinstance(advanced, Mapping) and set(advanced) <= _AFFINITY_KEYS:
        return "advanced-affinity"
    # Met only outside a core Affinity (one is not scanned inside): a bare nodeAffinity, as in
    # Rook's placements or CloudNativePG's spec.affinity.
    if key == "nodeAffinity" and isinstance(value, Mapping):
        return "nodeAffinity"
    if key == "tolerations" and isinstance(value, list):
        tolerations = all(isinstance(t, Mapping) and set(t) <= _TOLERATION_KEYS for t in value)
        return "tolerations" if tolerations else None
    if (
        key == "nodeSelector"
        and isinstance(value, Mapping)
        and not set(value) & _LABEL_SELECTOR_KEYS
        and all(isinstance(label, str | None) for label in value.values())
    ):
        return "nodeSelector"
    return None


def _is_image_key(key: str) -> bool:
    return key in ("image", "imageName") or key.endswith(("Image", "ImageName"))


def _is_image(text: str) -> bool:
    try:
        ImageRef.parse(text)
    except InvalidReferenceError:
        return False
    return True


def _is_pod_spec(value: Mapping[str, object], path: tuple[str | int, ...]) -> bool:
    containers = value.get("containers")
    if not isinstance(containers, list) or not all(isinstance(c, Mapping) for c in containers):
        return False
    images = [c.get("image") for c in containers if isinstance(c, Mapping)]
    if any(isinstance(image, str) and _is_image(image) for image in images):
        return True
    return path[-2:] == ("template", "spec")


def is_substantial(fields: Sequence[PodShapedField], resource: Mapping[str, object]) -> bool:
    """Whether the fields show pods: a pod spec, an image, or a scheduling field that is not
    empty (an empty ``nodeSelector: {}`` alone is as often a label selector of all nodes)."""
    for found in fields:
        if found.kind in ("pod-spec", "image"):
            return True
        if _value_at(resource, found.path):
            return True
    return False


# --- CustomResourceDefinitions ---------------------------------------------------------------


def crd_schemas(
    crd: Mapping[str, object],
) -> dict[tuple[str, str], dict[str, Mapping[str, object]]]:
    """(API group, kind) -> version -> ``openAPIV3Schema``, of an apiextensions.k8s.io/v1
    CustomResourceDefinition; empty when it is not one."""
    spec = crd.get("spec")
    if not isinstance(spec, Mapping):
        return {}
    names = spec.get("names")
    group, kind = spec.get("group"), names.get("kind") if isinstance(names, Mapping) else None
    versions = spec.get("versions")
    if not isinstance(group, str) or not isinstance(kind, str) or not isinstance(versions, list):
        return {}
    schemas: dict[str, Mapping[str, object]] = {}
    for version in versions:
        if not isinstance(version, Mapping) or not isinstance(version.get("name"), str):
            continue
        schema = version.get("schema")
        openapi = schema.get("openAPIV3Schema") if isinstance(schema, Mapping) else None
        if isinstance(openapi, Mapping):
            schemas[str(version["name"])] = openapi
    return {(group, kind): schemas} if schemas else {}


def schema_for(
    schemas: Mapping[str, Mapping[str, object]], api_version: str
) -> Mapping[str, object] | None:
    """The schema of the resource's version, else of any version the CRD has."""
    version = api_version.rpartition("/")[2]
    if version in schemas:
        return schemas[version]
    return next(iter(schemas.values()), None)


def schema_fields(schema: Mapping[str, object]) -> list[PodShapedField]:
    """The pod-shaped properties of a CRD's schema (:func:`scan_schema`'s)."""
    return list(scan_schema(schema).fields)


def scan_schema(schema: Mapping[str, object]) -> FieldScan:
    """The pod-shaped properties of a CRD's ``openAPIV3Schema``, as patterns (``*`` for every
    item of an array or value of a map): objects shaped as a PodSpec (``containers``, an array
    of objects with an ``image``; their inside is the pod's), string properties named as
    images, ``affinity`` and bare ``nodeAffinity`` objects, ``tolerations`` arrays and
    ``nodeSelector`` maps. A subtree of unknown fields (``x-kubernetes-preserve-unknown-fields``
    without properties) shows nothing. :data:`MAX_SCANNED_NODES` visited at most."""
    found: list[PodShapedField] = []
    budget = _Budget()
    properties = schema.get("properties")
    if isinstance(properties, Mapping):
        for key, child in properties.items():
            if isinstance(key, str) and key not in _SKIPPED_TOP and isinstance(child, Mapping):
                _scan_schema(key, child, (key,), found, 1, budget)
    return FieldScan(tuple(found), budget.stopped("its CRD's schema"))


def _scan_schema(
    key: str,
    schema: Mapping[str, object],
    path: tuple[str | int, ...],
    found: list[PodShapedField],
    depth: int,
    budget: _Budget,
) -> None:
    if depth > _MAX_DEPTH or key in _NOT_CONTAINER_IMAGES or not budget.spend():
        return
    kind = _schema_field_kind(key, schema)
    if kind is not None:
        found.append(PodShapedField(path, kind))
        return
    properties = schema.get("properties")
    if isinstance(properties, Mapping):
        if _schema_is_pod_spec(properties):
            found.append(PodShapedField(path, "pod-spec"))
            return
        for child_key, child in properties.items():
            if isinstance(child_key, str) and isinstance(child, Mapping):
                _scan_schema(child_key, child, (*path, child_key), found, depth + 1, budget)
    for nested in ("items", "additionalProperties"):
        child = schema.get(nested)
        if isinstance(child, Mapping):
            _scan_schema("", child, (*path, WILDCARD), found, depth + 1, budget)


def _schema_field_kind(key: str, schema: Mapping[str, object]) -> FieldKind | None:
    properties = schema.get("properties")
    names = set(properties) if isinstance(properties, Mapping) else set()
    if _is_image_key(key):
        return "image" if schema.get("type") == "string" else None
    if key == "affinity" and schema.get("type") == "object" and names and names <= _AFFINITY_KEYS:
        return "affinity"
    advanced = properties.get("advanced") if isinstance(properties, Mapping) else None
    advanced_properties = advanced.get("properties") if isinstance(advanced, Mapping) else None
    if (
        key == "affinity"
        and isinstance(advanced_properties, Mapping)
        and advanced_properties
        and set(advanced_properties) <= _AFFINITY_KEYS
    ):
        return "advanced-affinity"
    if key == "nodeAffinity" and schema.get("type") == "object":
        return "nodeAffinity"
    if key == "tolerations" and schema.get("type") == "array":
        items = schema.get("items")
        item_properties = items.get("properties") if isinstance(items, Mapping) else None
        if isinstance(item_properties, Mapping) and {"key", "effect"} <= set(item_properties):
            return "tolerations"
        return None
    if key == "nodeSelector" and schema.get("type") == "object" and not names:
        values = schema.get("additionalProperties")
        if isinstance(values, Mapping) and values.get("type") == "string":
            return "nodeSelector"
    return None


def _schema_is_pod_spec(properties: Mapping[str, object]) -> bool:
    containers = properties.get("containers")
    if not isinstance(containers, Mapping) or containers.get("type") != "array":
        return False
    items = containers.get("items")
    item_properties = items.get("properties") if isinstance(items, Mapping) else None
    return isinstance(item_properties, Mapping) and "image" in item_properties


# --- the entry ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class UnknownPodKind:
    """A resource of a kind kmultiarch does not know that looks like it makes pods."""

    api_version: str
    kind: str
    #: What was found in the resource (concrete paths from its root).
    fields: tuple[PodShapedField, ...]
    #: The ``spec.podSpecs`` entry proposed, as the policy writes it.
    entry: Mapping[str, object]
    #: The entry's placement is a guess (images only: nothing shows where pods are placed).
    guessed: bool
    #: The kind's CRD in the stream contributed to the entry.
    from_schema: bool
    #: The bounds the scan or the entry met (:data:`MAX_SCANNED_NODES`,
    #: :data:`MAX_ENTRY_PATHS`): the entry may miss what lies beyond.
    bounds_met: tuple[str, ...] = ()

    @property
    def suggestion(self) -> str:
        """The entry in block style, to paste under ``spec.podSpecs``."""
        return entry_yaml(self.entry)

    def message(self, prefix: Sequence[str | int] = ()) -> str:
        """One line: what was found (JSON pointers from the document's root: ``prefix`` is
        the resource's path in it), that its pods are not judged, and the entry."""
        group = api_group(self.api_version) or "core"
        shown = list(iter_fields_text([_prefixed(f, prefix) for f in self.fields]))
        if not shown and not self.from_schema:
            found = "it may hold what pods are made of (a scan met its bound before it knew)"
        elif not shown:
            found = "its CRD in the stream declares what pods are made of"
        else:
            found = f"it holds what pods are made of ({', '.join(shown)})"
            if self.from_schema:
                found += ", as its CRD in the stream declares"
        guess = (
            " (the placement is a guess: nothing shows where the operator takes affinity, "
            "tolerations and nodeSelector from)"
            if self.guessed
            else ""
        )
        if self.bounds_met:
            guess += f" ({'; '.join(self.bounds_met)}: the entry may be incomplete)"
        return (
            f"{group} {self.kind} is a kind kmultiarch does not know (neither the operators' "
            f"catalogue nor spec.podSpecs), yet {found}: the pods its operator makes are left "
            f"as they are. List {self.kind} in exclude.kinds if it makes none; else declare it "
            f"in spec.podSpecs, checking the paths against the operator's documentation{guess}: "
            f"{entry_yaml(self.entry, flow=True)}"
        )


def _prefixed(found: PodShapedField, prefix: Sequence[str | int]) -> PodShapedField:
    return PodShapedField((*prefix, *found.path), found.kind) if prefix else found


def unknown_pod_kind(
    resource: Mapping[str, object],
    fields: Sequence[PodShapedField] | None = None,
    declared: Sequence[PodShapedField] = (),
    *,
    scans_stopped: Sequence[str] = (),
) -> UnknownPodKind | None:
    """What makes ``resource`` look like it makes pods, and the entry to declare its kind;
    None when nothing does. ``fields``: its :func:`scan_resource` fields, when known already
    (then ``scans_stopped`` says which scans met their bound); ``declared``: the
    :func:`scan_schema` fields of its kind's CRD, which add to the entry (a CRD alone warns of
    nothing: it is the resource that makes pods). The caller decides that its kind is one to
    scan (:func:`needs_scan`)."""
    api_version, kind = resource.get("apiVersion"), resource.get("kind")
    if not isinstance(api_version, str) or not isinstance(kind, str):
        return None
    metadata = resource.get("metadata")
    annotations = metadata.get("annotations") if isinstance(metadata, Mapping) else None
    if isinstance(annotations, Mapping) and (
        str(annotations.get("config.kubernetes.io/local-config", "")).lower() == "true"
    ):
        return None  # never applied to a cluster
    bounds_met = [*scans_stopped]
    if fields is None:
        scan = scan_resource(resource)
        fields = scan.fields
        bounds_met.extend(filter(None, [scan.stopped]))
    if not is_substantial(fields, resource) and not bounds_met:
        return None  # a scan that stopped short of any field still says so: it may miss them
    in_entry, paths = _within_entry_bound([*fields, *declared])
    if paths > MAX_ENTRY_PATHS:
        bounds_met.append(f"the entry holds the first {MAX_ENTRY_PATHS} of its {paths} paths")
    entry, guessed = suggested_entry(api_version, kind, in_entry)
    return UnknownPodKind(
        api_version, kind, tuple(fields), entry, guessed, bool(declared), tuple(bounds_met)
    )


def _within_entry_bound(fields: Sequence[PodShapedField]) -> tuple[list[PodShapedField], int]:
    """The fields that make the first :data:`MAX_ENTRY_PATHS` distinct paths of the entry
    (placements, and images, list items as ``*``), and how many distinct paths all make."""
    paths: dict[tuple[bool, Pointer], None] = {}
    kept: list[PodShapedField] = []
    for found in fields:
        pattern = _pattern(found.path)
        if found.kind not in ("pod-spec", "image"):
            pattern = pattern[:-1]  # a scheduling field: its holder is the placement
        paths.setdefault((found.kind == "image", pattern), None)
        if len(paths) <= MAX_ENTRY_PATHS:
            kept.append(found)
    return kept, len(paths)


def suggested_entry(
    api_version: str,
    kind: str,
    fields: Sequence[PodShapedField],
) -> tuple[dict[str, object], bool]:
    """The ``spec.podSpecs`` entry for these fields (concrete or patterns), and whether its
    placement is a guess. Linear in the fields and the entry (paths are at most
    ``_MAX_DEPTH`` long)."""
    placements: dict[Pointer, dict[str, object]] = {}
    images: dict[Pointer, None] = {}  # in order, each once
    for found in fields:
        pattern = _pattern(found.path)
        if found.kind == "pod-spec":
            placements.setdefault(pattern, {"podSpec": True})["podSpec"] = True
        elif found.kind == "image":
            images.setdefault(pattern, None)
        else:
            holder = placements.setdefault(pattern[:-1], {})
            if found.kind == "nodeAffinity":
                holder["bare"] = True
            elif found.kind == "affinity":
                holder["affinity"] = True
            elif found.kind == "advanced-affinity":
                holder["advanced"] = True
    guessed = not placements
    if guessed:
        placements.update((path, {}) for path in _guessed_placements(list(images)))
    attached = _attached_images(list(images), placements)
    entries: list[dict[str, object]] = []
    for path, traits in placements.items():
        placement: dict[str, object] = {"path": _pointer(path)}
        with_it = attached[path]
        if traits.get("podSpec"):
            placement["podSpec"] = True
            with_it = [image for image in with_it if image[: len(path)] != path]
        if with_it:
            placement["images"] = [_pointer(image) for image in with_it]
        # An object named affinity that holds tolerations or a nodeSelector is no core Affinity
        # (CloudNativePG's spec.affinity): its nodeAffinity is bare.
        bare = traits.get("bare") or path[-1:] == ("affinity",)
        if traits.get("advanced") and not traits.get("podSpec"):
            placement["shape"] = "advanced-affinity"
        elif bare and not traits.get("affinity") and not traits.get("podSpec"):
            placement["shape"] = "node-affinity"
        entries.append(placement)
    return {"apiVersion": api_version, "kind": kind, "placements": entries}, guessed


def _pattern(path: Sequence[str | int]) -> Pointer:
    return tuple(WILDCARD if isinstance(token, int) else token for token in path)


def _attached_images(
    images: Sequence[Pointer], placements: Mapping[Pointer, object]
) -> dict[Pointer, list[Pointer]]:
    """Placement -> the images that go with it, in the images' order. An image goes with a
    placement it sits above (``/spec/image`` for ``/spec/driver``) or below
    (``/spec/driver/image``); one that goes with no placement goes with every one.

    Placements are indexed by each of their prefixes, so that the placements below an image's
    holder are one lookup and those above it one per prefix of the holder: linear, where
    comparing every image with every placement (twice) was cubic."""
    below: dict[Pointer, list[Pointer]] = {}
    for path in placements:
        for end in range(len(path) + 1):
            below.setdefault(path[:end], []).append(path)
    related: dict[Pointer, list[int]] = {path: [] for path in placements}
    with_none: list[int] = []
    for position, image in enumerate(images):
        holder = image[:-1]
        goes_with = {holder[:end] for end in range(len(holder)) if holder[:end] in placements}
        goes_with.update(below.get(holder, ()))
        if not goes_with:
            with_none.append(position)
        for path in goes_with:
            related[path].append(position)
    return {
        path: [images[position] for position in sorted([*positions, *with_none])]
        for path, positions in related.items()
    }


def _guessed_placements(images: Sequence[Pointer]) -> list[Pointer]:
    """Where pods are placed when nothing shows it: the deepest ``template/spec`` above an
    image (a template of pods, as a VirtualMachine's), else the object naming the image (as a
    Prometheus ``spec`` names its image beside its affinity; Spark's ``driver``)."""
    guesses: list[Pointer] = []
    for image in images:
        guess = image[:-1]
        for end in range(len(image) - 1, 1, -1):
            if image[end - 2 : end] == ("template", "spec"):
                guess = image[:end]
                break
        guess = guess or ("spec",)
        if guess not in guesses:
            guesses.append(guess)
    return guesses or [("spec",)]


def _pointer(pattern: Sequence[str | int]) -> str:
    return "".join("/" + str(token).replace("~", "~0").replace("/", "~1") for token in pattern)


def field_pointer(path: Sequence[str | int]) -> str:
    """A concrete path as a JSON pointer (``/spec/nodeSets/0/podTemplate``)."""
    return _pointer(path)


def _value_at(value: object, path: Sequence[str | int]) -> object:
    for part in path:
        if isinstance(part, int) and isinstance(value, list) and part < len(value):
            value = value[part]
        elif isinstance(part, str) and isinstance(value, Mapping):
            value = value.get(part)
        else:
            return None
    return value


# --- as YAML -----------------------------------------------------------------------------------

_PLAIN = re.compile(r"[A-Za-z/][A-Za-z0-9_./*~-]*\Z")
#: Plain words a YAML 1.1 reader takes for something else than a string.
_YAML_WORDS = frozenset({"true", "false", "null", "yes", "no", "on", "off", "y", "n", "~"})


def _scalar(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    text = str(value)
    if _PLAIN.match(text) and text.lower() not in _YAML_WORDS:
        return text
    return json.dumps(text)  # a JSON string is a YAML double-quoted scalar


def _flow(value: object) -> str:
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{key}: {_flow(item)}" for key, item in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(_flow(item) for item in value) + "]"
    return _scalar(value)


def entry_yaml(entry: Mapping[str, object], *, flow: bool = False) -> str:
    """The entry as an item of ``spec.podSpecs``: ``- {apiVersion: ..., ...}`` on one line
    (for a message), or in block style, each placement on its lines, ending in a newline."""
    if flow:
        return "- " + _flow(entry)
    lines: list[str] = []
    for position, (key, value) in enumerate(entry.items()):
        lead = "- " if position == 0 else "  "
        if key != "placements" or not isinstance(value, list):
            lines.append(f"{lead}{key}: {_flow(value)}")
            continue
        lines.append(f"{lead}{key}:")
        for placement in value:
            assert isinstance(placement, Mapping)
            for index, (name, item) in enumerate(placement.items()):
                lines.append(f"  {'- ' if index == 0 else '  '}{name}: {_flow(item)}")
    return "\n".join(lines) + "\n"


def iter_fields_text(fields: Sequence[PodShapedField], shown: int = 6) -> Iterator[str]:
    """The fields as JSON pointers, at most ``shown`` of them and how many more."""
    for found in fields[:shown]:
        yield field_pointer(found.path)
    if len(fields) > shown:
        yield f"and {len(fields) - shown} more"
