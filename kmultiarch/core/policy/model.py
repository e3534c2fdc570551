"""The MultiArchPolicy model: what a run decides by, and its defaults.

A policy is a Kubernetes-style object (``apiVersion: kmultiarch.dev/v1alpha1``,
``kind: MultiArchPolicy``) so that the same file serves as CLI configuration, kustomize
transformer config and KRM functionConfig. Its keys are declared, read and validated in
:mod:`kmultiarch.core.policy.schema`; this module holds the values they are read into.
"""

from __future__ import annotations

import fnmatch
import functools
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from kmultiarch.core.images.platform import Platform
from kmultiarch.core.images.reference import ImageRef
from kmultiarch.core.lock import ImageLock
from kmultiarch.core.operators.catalogued import built_in_operators
from kmultiarch.core.operators.model import OperatorKind, catalogue_by_kind
from kmultiarch.core.policy.nodelabels import NodeLabelRule
from kmultiarch.core.policy.scope import LabelSelector

API_VERSION = "kmultiarch.dev/v1alpha1"
KIND = "MultiArchPolicy"
CONFIG_ENV = "KMULTIARCH_CONFIG"

NodeAffinityMode = Literal["required", "preferred", "none"]
FailurePolicy = Literal["Ignore", "Fail"]
NODE_AFFINITY_MODES: tuple[NodeAffinityMode, ...] = ("required", "preferred", "none")
FAILURE_POLICIES: tuple[FailurePolicy, ...] = ("Ignore", "Fail")
TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
TOLERATION_OPERATORS = ("Equal", "Exists")


#: A day: how long a cached tag answer may serve while its registry cannot be asked.
DEFAULT_STALE_IF_ERROR = 24 * 3600.0


@dataclass(frozen=True)
class Toleration:
    """A pod toleration, as the policy asks for it to be added."""

    key: str = ""
    operator: str = "Equal"
    value: str = ""
    effect: str = ""
    toleration_seconds: int | None = None

    def to_manifest(self) -> dict[str, object]:
        """The toleration as it is written into a pod spec (Kubernetes field names)."""
        manifest: dict[str, object] = {}
        if self.key:
            manifest["key"] = self.key
        manifest["operator"] = self.operator
        if self.operator != "Exists":
            manifest["value"] = self.value
        if self.effect:
            manifest["effect"] = self.effect
        if self.toleration_seconds is not None:
            manifest["tolerationSeconds"] = self.toleration_seconds
        return manifest


@dataclass(frozen=True)
class RegistrySettings:
    """How to reach one registry host, as image references name it."""

    mirror: str | None = None
    insecure: bool | None = None
    ca: Path | None = None


@dataclass(frozen=True)
class Override:
    """Platforms declared for images matching a glob, instead of looked up. ``image`` is the
    glob as references are normalised (``docker.io/library/nginx:*``); ``written``, as the
    policy gives it (``nginx:*``), for messages."""

    image: str
    platforms: frozenset[Platform]
    written: str = ""

    def matches(self, normalised_reference: str) -> bool:
        return fnmatch.fnmatchcase(normalised_reference, self.image)

    def matches_reference(self, reference: ImageRef) -> bool:
        """Whether the override answers ``reference``: by its text, or, pinned to a digest,
        by its name and tag alone (an override names a tag's images, not their digests)."""
        if self.matches(str(reference)):
            return True
        unpinned = ImageRef(reference.registry, reference.repository, reference.tag)
        return reference.digest is not None and self.matches(str(unpinned))


@dataclass(frozen=True)
class Exclusions:
    namespaces: frozenset[str] = frozenset()  # names or shell-style globs (kube-*)
    kinds: frozenset[str] = frozenset()
    #: Evaluated on the Namespace documents of the stream.
    namespace_selector: LabelSelector | None = None


Mode = Literal["optOut", "optIn"]
VerifyMode = Literal["off", "warn", "enforce"]
VERIFY_MODES: tuple[VerifyMode, ...] = ("off", "warn", "enforce")


@dataclass(frozen=True)
class VerifySettings:
    """``spec.verify``: whether the binaries an image starts are checked against the platforms
    its registry claims (``kmultiarch verify``, in the pipeline), and the bounds of the check
    per platform manifest. ``warn``: a mismatch is a ``platform-mismatch`` warning; ``enforce``:
    the platform is dropped from the image's platforms before the decision, and the finding is
    an error under ``failurePolicy: Fail``."""

    mode: VerifyMode = "off"
    max_bytes: int = 64 * 1024 * 1024
    max_expanded_bytes: int = 1024 * 1024 * 1024
    deadline: float = 30.0


MODES: tuple[Mode, ...] = ("optOut", "optIn")


@dataclass(frozen=True)
class Conditions:
    """Labels and annotations a pod (or its namespace) must carry: each map matches when every
    key is there with the value given (``"*"``: with any value)."""

    namespace_labels: Mapping[str, str] = field(default_factory=dict)
    pod_labels: Mapping[str, str] = field(default_factory=dict)
    pod_annotations: Mapping[str, str] = field(default_factory=dict)

    def matching(
        self,
        namespace_labels: Mapping[str, object],
        pod_labels: Mapping[str, object],
        pod_annotations: Mapping[str, object],
    ) -> bool:
        """Whether any of the maps given matches (as an injector acts on the namespace's label
        or the pod's)."""
        return any(
            wanted and all(_holds(found, key, value) for key, value in wanted.items())
            for wanted, found in (
                (self.namespace_labels, namespace_labels),
                (self.pod_labels, pod_labels),
                (self.pod_annotations, pod_annotations),
            )
        )

    def __bool__(self) -> bool:
        return bool(self.namespace_labels or self.pod_labels or self.pod_annotations)


def _holds(found: Mapping[str, object], key: str, value: str) -> bool:
    return key in found and (value == "*" or str(found[key]) == value)


@dataclass(frozen=True)
class Injection:
    """Containers an admission webhook injects into the pods it matches (Istio's proxy, Linkerd,
    OpenTelemetry auto-instrumentation, Vault agent): their images are judged with the pod's
    own. It applies when any condition of ``when`` matches (none given: every pod) and none
    of ``unless`` does."""

    name: str
    images: tuple[str, ...]
    when: Conditions = Conditions()
    unless: Conditions = Conditions()

    def applies(
        self,
        namespace_labels: Mapping[str, object],
        pod_labels: Mapping[str, object],
        pod_annotations: Mapping[str, object],
    ) -> bool:
        found = (namespace_labels, pod_labels, pod_annotations)
        return (not self.when or self.when.matching(*found)) and not (
            self.unless and self.unless.matching(*found)
        )


ARM64_TAINT_TOLERATION = Toleration(
    key="kubernetes.io/arch", operator="Equal", value="arm64", effect="NoSchedule"
)
DEFAULT_PLATFORMS = (Platform("linux", "amd64"), Platform("linux", "arm64"))


@dataclass(frozen=True)
class SchedulingPolicy:
    """What the planner decides a pod's tolerations and node affinity by (core.scheduling,
    core.preferences, core.cluster's drift): the cluster's node platforms, what a pod needs to
    reach each, and what it is given. The default is a GKE-style tainted cluster."""

    platforms: tuple[Platform, ...] = DEFAULT_PLATFORMS
    #: Node labels (beyond kubernetes.io/os and arch) that the nodes of a platform carry and
    #: others do not: ``platforms: [{platform: linux/arm/v7, nodeSelector: {...}}]``. They tell
    #: apart platforms the kubelet labels alike (arm variants).
    node_selectors: Mapping[Platform, Mapping[str, str]] = field(default_factory=dict)
    tolerations: Mapping[Platform, tuple[Toleration, ...]] = field(
        default_factory=lambda: {Platform("linux", "arm64"): (ARM64_TAINT_TOLERATION,)}
    )
    node_affinity: NodeAffinityMode = "required"
    #: Platform -> weight (1-100) of a preferred node affinity term for pods that run on it
    #: and elsewhere.
    preferences: Mapping[Platform, int] = field(default_factory=dict)
    #: Changed pod templates say why: ``kmultiarch.dev/platforms``, the platforms they run on.
    annotate: bool = False
    #: spec.nodeLabels (and the node pools of the stream, put first by the engine): node labels
    #: whose values fix the architecture, before the built-in table (core.nodelabels).
    node_labels: tuple[NodeLabelRule, ...] = ()


@dataclass(frozen=True)
class ScopePolicy:
    """Which pods a run looks at, and what runs in them besides their own containers (the
    engine's scoping): exclusions, the opt-in mode, the kinds that hold pods, and the sidecars
    admission webhooks inject."""

    exclude: Exclusions = Exclusions()
    #: optIn: only pods annotated kmultiarch.dev/enabled: "true" (on the workload, its pod
    #: template or its Namespace) are touched.
    mode: Mode = "optOut"
    #: spec.podSpecs: where kinds kmultiarch does not know (or knows, extended) place their
    #: pods, in the form of the operators' catalogue.
    pod_specs: tuple[OperatorKind, ...] = ()
    #: spec.injections: sidecars admission webhooks inject, judged with the pods they match.
    injections: tuple[Injection, ...] = ()
    #: spec.namespaceLabels: the labels of namespaces the stream does not carry (a Namespace
    #: document of the stream wins).
    namespace_labels: Mapping[str, Mapping[str, str]] = field(default_factory=dict)

    @functools.cached_property
    def operators(self) -> Mapping[tuple[str, str], OperatorKind]:
        """The operators' kinds of the built-in catalogue with ``spec.podSpecs`` merged in (an
        entry for a built-in kind extends it), by (API group, kind). Without podSpecs, the
        catalogue is imported only when a kind of it is asked for."""
        if not self.pod_specs:
            return built_in_operators()
        from kmultiarch.core.operators.catalogue import CATALOGUE

        return catalogue_by_kind((*CATALOGUE, *self.pod_specs))


@dataclass(frozen=True)
class CacheSettings:
    """``spec.cache``: a shared cache level (its URL, and a CA for rediss://) and what signs its
    entries (a key file, or the key: with the policy's URL only). The options win."""

    url: str | None = None
    ca: Path | None = None
    key_file: Path | None = None
    key: str | None = field(default=None, repr=False)
    #: Seconds a run may wait for the level, all operations together (None: the default).
    budget: float | None = None


@dataclass(frozen=True)
class ResolutionPolicy:
    """How each image's platforms are found (resolve.resolver, run.session): declared
    (overrides), locked, cached, looked up in its registry, verified; and, when they cannot be
    found, the platforms it is taken to run on."""

    overrides: tuple[Override, ...] = ()
    registries: Mapping[str, RegistrySettings] = field(default_factory=dict)
    lock: Path | None = None
    #: A lock written out in the policy itself (``spec.lock: {apiVersion, kind: ImageLock,
    #: images}``): for runners that give a function no files, such as a Kptfile pipeline.
    embedded_lock: ImageLock | None = None
    #: Seconds a cached tag answer may still serve when revalidating it fails (HTTP's
    #: stale-if-error, for tags); 0: never.
    stale_if_error: float = DEFAULT_STALE_IF_ERROR
    cache: CacheSettings = CacheSettings()
    verify: VerifySettings = VerifySettings()
    #: Where an image that cannot be resolved is taken to run (under failurePolicy: Ignore).
    fallback_platforms: tuple[Platform, ...] = ()
    #: spec.repinDigests: NAME:TAG@DIGEST pinned to one platform's manifest of the tag's index
    #: is written (and decided) with the index digest.
    repin_digests: bool = False

    def override_for(self, normalised_reference: str) -> Override | None:
        for override in self.overrides:
            if override.matches(normalised_reference):
                return override
        return None

    def override_of(self, reference: ImageRef) -> Override | None:
        """The override answering ``reference``: the first matching its text, else, pinned to
        a digest, the first matching its name and tag (see :meth:`Override.matches_reference`)."""
        found = self.override_for(str(reference))
        if found is None and reference.digest is not None:
            found = self.override_for(
                str(ImageRef(reference.registry, reference.repository, reference.tag))
            )
        return found

    def unused_overrides(self, references: Iterable[ImageRef]) -> list[tuple[int, Override]]:
        """The overrides (with their position) that answer none of ``references``: a glob
        written for no image of the run (or mistyped), which says nothing."""
        unused = dict(enumerate(self.overrides))
        for reference in references:
            for position, override in list(unused.items()):
                if override.matches_reference(reference):
                    del unused[position]
            if not unused:
                break
        return list(unused.items())

    def registry_settings(self, registry: str) -> RegistrySettings:
        return self.registries.get(registry, RegistrySettings())


@dataclass(frozen=True)
class Policy:
    """Everything a run decides by, in the sections each layer takes: ``scheduling`` (the
    planner), ``scope`` (which pods the engine looks at), ``resolution`` (the resolver and the
    run's session). ``failure_policy`` belongs to no layer below the engine: it says what the
    run's problems (an image that cannot be resolved, a pod no node can run, a platform its
    image lies about) do to the run's outcome, so it is the run's own. ``Policy()`` is the
    default."""

    scheduling: SchedulingPolicy = SchedulingPolicy()
    scope: ScopePolicy = ScopePolicy()
    resolution: ResolutionPolicy = ResolutionPolicy()
    failure_policy: FailurePolicy = "Ignore"
    source: str = "(defaults)"
