"""One model for what kmultiarch tells its users: mutate's warnings, check's problems, SARIF
and GitHub annotations, KRM results. Like yamllint's rules: each finding names a rule of the
registry :data:`RULES`, which says what it means and how to act on it; formatters only render.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from kmultiarch.errors import format_field_path

Severity = Literal["error", "warning", "info"]

#: What happened to a pod spec, in one vocabulary for every view (mutate's summary, check's
#: verdicts, report's table, the KRM results).
PodStatus = Literal[
    "ok",  # nothing to change
    "needs-change",  # tolerations or node affinity added
    "no-common-platform",  # no platform of the cluster runs every image
    "scheduling-conflict",  # the pod's own constraints exclude where its images run
    "unresolved",  # an image's platforms are unknown: left as it is
    "chosen-by-operator",  # an operator's resource names no image: left as it is
    "malformed",  # an operator's placement holds a value of the wrong type: left as it is
    "skipped",  # opted out (kmultiarch.dev/skip)
    "excluded",  # out of the policy's scope
]
CONFLICTS: tuple[PodStatus, ...] = ("no-common-platform", "scheduling-conflict")


def count_of(number: int, noun: str) -> str:
    """``1 pod spec``, ``3 pod specs``, ``0 errors``: a count with its noun, for messages."""
    return f"{number} {noun}{'' if number == 1 else 's'}"


def shown_name(name: str, generate_name: str) -> str:
    """How a resource's name is shown: its ``metadata.name``, else, for a resource named only
    by ``metadata.generateName`` (an Argo Workflow, a Job made by ``kubectl create``), that
    prefix followed by ``*``: the API server names it the prefix and five random characters
    (k8s.io/apiserver pkg/storage/names/generate.go, SimpleNameGenerator), and until then
    kubectl has no name to show either. Plain ASCII, visible, copied as it is shown."""
    if name or not generate_name:
        return name
    return f"{generate_name}*"


@dataclass(frozen=True)
class ResourceRef:
    api_version: str
    kind: str
    name: str
    namespace: str
    #: ``metadata.generateName``, for a resource that has no ``metadata.name``.
    generate_name: str = ""

    @classmethod
    def of(cls, resource: Mapping[str, object]) -> ResourceRef:
        """The reference of a resource as its document holds it (any field may be missing)."""
        metadata = resource.get("metadata")
        metadata = metadata if isinstance(metadata, Mapping) else {}
        name = metadata.get("name")
        return cls(
            str(resource.get("apiVersion") or ""),
            str(resource.get("kind") or ""),
            str(name or ""),
            str(metadata.get("namespace") or ""),
            "" if name else str(metadata.get("generateName") or ""),
        )

    @property
    def shown_name(self) -> str:
        """The name, or ``generateName*`` for a resource named only by its prefix."""
        return shown_name(self.name, self.generate_name)

    @property
    def display_name(self) -> str:
        """``Kind namespace/name``: how messages and tables name a resource."""
        namespace = f"{self.namespace}/" if self.namespace else ""
        return f"{self.kind} {namespace}{self.shown_name}"

    def as_dict(self) -> dict[str, str]:
        ref = {"apiVersion": self.api_version, "kind": self.kind, "name": self.name}
        if self.generate_name:
            ref["generateName"] = self.generate_name
        if self.namespace:
            ref["namespace"] = self.namespace
        return ref


@dataclass(frozen=True)
class Rule:
    id: str
    name: str
    summary: str
    help: str


CACHE_PROBLEM = "cache-problem"
COMMENTS_LOST = "comments-lost"
INVALID_INPUT = "invalid-input"
RUN_SUMMARY = "run-summary"
IMAGE_CHOSEN_BY_OPERATOR = "image-chosen-by-operator"
MALFORMED_FIELD = "malformed-field"
INDISTINGUISHABLE_PLATFORMS = "indistinguishable-platforms"
INJECTED_SIDECAR = "injected-sidecar"
NEEDS_SCHEDULING = "needs-scheduling"
NO_COMMON_PLATFORM = "no-common-platform"
PLATFORM_MISMATCH = "platform-mismatch"
UNVERIFIED_IMAGE = "unverified-image"
FALLBACK_PLATFORMS = "fallback-platforms"
PINNED_POD = "pinned-pod"
PLATFORM_PINNED_DIGEST = "platform-pinned-digest"
POLICY_DRIFT = "policy-drift"
SCHEDULING_CONFLICT = "scheduling-conflict"
UNRESOLVED_IMAGE = "unresolved-image"
UNKNOWN_POD_KIND = "unknown-pod-kind"
UNWRITABLE_CONSTRAINT = "unwritable-constraint"

RULES: dict[str, Rule] = {
    rule.id: rule
    for rule in (
        Rule(
            NEEDS_SCHEDULING,
            "MissingTolerationsOrAffinity",
            "A pod lacks the tolerations or node affinity its images need",
            "Run `kmultiarch fix FILE` (or `kmultiarch mutate --in-place FILE`) to add them, or "
            'annotate the workload kmultiarch.dev/skip: "true" to opt out.',
        ),
        Rule(
            NO_COMMON_PLATFORM,
            "NoCommonPlatform",
            "No node platform of the cluster runs every image of the pod",
            "Use images built for a common platform (a multi-arch build), or add the platform "
            "they share to spec.platforms of the policy if the cluster has such nodes.",
        ),
        Rule(
            FALLBACK_PLATFORMS,
            "FallbackPlatforms",
            "An image whose platforms could not be resolved was taken to run on "
            "spec.fallbackPlatforms",
            "Check that the image exists and that the registry is reachable; declare its "
            "platforms under spec.overrides, or lock them (`kmultiarch lock`), to stop guessing.",
        ),
        Rule(
            PLATFORM_MISMATCH,
            "PlatformMismatch",
            "An image's registry claims a platform its binaries are not built for",
            "The program the container starts is of another machine (a cross-build that copied "
            "the host's binary): pods on that platform die with exec format error. Rebuild the "
            "image for the platform, or run it where it is honest (spec.verify: {mode: "
            "enforce} keeps its pods off that platform).",
        ),
        Rule(
            UNVERIFIED_IMAGE,
            "UnverifiedImage",
            "spec.verify asks for an image's binaries to be checked, and they were not",
            "Its platforms were used as the registry lists them. Offline, record the verdicts "
            "in the lock (`kmultiarch lock --verify warn`); otherwise the message says what "
            "failed (a registry, a manifest): run again, or see `kmultiarch verify IMAGE`.",
        ),
        Rule(
            PINNED_POD,
            "PinnedPod",
            "A pod names its node (spec.nodeName) and does not run on every platform",
            "spec.nodeName bypasses the scheduler, so kmultiarch adds no toleration or affinity: "
            "make sure the node is of a platform the pod's images run on, or drop nodeName.",
        ),
        Rule(
            PLATFORM_PINNED_DIGEST,
            "PlatformPinnedDigest",
            "An image is pinned to the digest of one platform's manifest of its tag's index: "
            "every node pulls that platform",
            "Pin the index instead: `kmultiarch fix --repin FILE` rewrites the digest to the "
            "index digest the message names, changing nothing else on the line. When the tag "
            "moved (the digest is in its index no more), check which image you mean to run.",
        ),
        Rule(
            IMAGE_CHOSEN_BY_OPERATOR,
            "ImageChosenByOperator",
            "A custom resource names no image for the pods its operator makes: the operator "
            "runs its own choice (the default for the resource's version)",
            "Name the image in the resource (spec.image), or declare what the operator runs as "
            "defaultImages of the kind in the policy's spec.podSpecs; until then kmultiarch "
            "leaves its placement as it is.",
        ),
        Rule(
            MALFORMED_FIELD,
            "MalformedField",
            "A custom resource's placement or image field holds a value of the wrong type (a "
            "string where the operator reads an object)",
            "Fix the field the message names (the operator's CRD says its type); until then "
            "kmultiarch cannot judge or place the pods it would make from it.",
        ),
        Rule(
            INDISTINGUISHABLE_PLATFORMS,
            "IndistinguishablePlatforms",
            "The images run on one platform of the cluster but not on another that node "
            "labels cannot tell apart (arm variants)",
            "Name the node label that tells them apart in the policy: platforms: "
            "[{platform: linux/arm/v7, nodeSelector: {example.com/arm-variant: v7}}].",
        ),
        Rule(
            POLICY_DRIFT,
            "PolicyDrift",
            "A Karpenter NodePool in the manifests offers a platform or a taint the policy lacks",
            "Regenerate the policy from the NodePools (`kmultiarch policy init NODEPOOLS.yaml`), "
            "or add the platform to spec.platforms and the toleration to spec.tolerations.",
        ),
        Rule(
            SCHEDULING_CONFLICT,
            "SchedulingConflict",
            "The pod's nodeSelector or node affinity contradicts the platforms of its images",
            "Change the nodeSelector or affinity to an architecture every image of the pod "
            "supports, or use images built for it.",
        ),
        Rule(
            COMMENTS_LOST,
            "CommentsLost",
            "A changed document had to be written anew, without some of its comments",
            "kmultiarch could not splice its change into this document's text (flow style, "
            "anchors, an unusual layout) and wrote the document from its data: values and key "
            "order are kept, the comments named are not. Write the pod spec in block style "
            "without anchors to keep them, and please report the document.",
        ),
        Rule(
            CACHE_PROBLEM,
            "CacheProblem",
            "A cache level could not be used as it is (unreadable, full, unreachable, entries "
            "that are not kmultiarch's)",
            "The run went on without it (a cache is an accelerator); the message says what to "
            "fix. Nothing was decided from an entry kmultiarch refused.",
        ),
        Rule(
            UNWRITABLE_CONSTRAINT,
            "UnwritableConstraint",
            "An operator's pods need an architecture constraint that kmultiarch cannot write "
            "where the operator reads it without dropping a rule of the operator's own",
            "Give the placement the message names an affinity of its own (the constraint is then "
            "written into it), or keep the pods off the other architectures with taints; until "
            "then they may land where their images do not run.",
        ),
        Rule(
            INJECTED_SIDECAR,
            "InjectedSidecar",
            "A sidecar an admission webhook injects (spec.injections) runs on fewer platforms "
            "than the pod's own images: the pod is kept to those",
            "Use a multi-arch build of the injected image (configure the injector), or opt the "
            "pod out of the injection; until then the pod is constrained where the sidecar runs.",
        ),
        Rule(
            INVALID_INPUT,
            "InvalidInput",
            "A KRM function's ResourceList or functionConfig cannot be used",
            "Fix the functionConfig (a MultiArchPolicy, or a ConfigMap of strings) or the "
            "ResourceList the message names; nothing is changed until then.",
        ),
        Rule(
            RUN_SUMMARY,
            "RunSummary",
            "What a run did: pod specs changed, images looked up",
            "Information only.",
        ),
        Rule(
            UNKNOWN_POD_KIND,
            "UnknownPodKind",
            "A custom resource of a kind kmultiarch does not know holds what pods are made of "
            "(a pod spec, images, affinity, tolerations, nodeSelector): the pods its operator "
            "makes are not judged",
            "Declare the kind in the policy's spec.podSpecs: the message (and `suggestion` in "
            "JSON) gives an entry to check against the operator's documentation and paste. "
            "If its operator makes no pods, list the kind in exclude.kinds.",
        ),
        Rule(
            UNRESOLVED_IMAGE,
            "UnresolvedImage",
            "The platforms of an image could not be resolved",
            "Check that the image exists and that the registry is reachable with your "
            "credentials; add it to the lock file (`kmultiarch lock`), or declare its platforms "
            "under spec.overrides of the policy.",
        ),
    )
}


@dataclass(frozen=True)
class Finding:
    """Something a user should know about one resource: ``message`` says what, the other
    fields where (formatters put them together)."""

    rule: str
    severity: Severity
    message: str
    source: str = ""
    document_index: int | None = None
    line: int | None = None
    resource: ResourceRef | None = None
    #: The field it is about, from the document's root (a pod spec, a container's image).
    path: tuple[str | int, ...] = ()
    image: str | None = None
    #: Text to paste that would settle it (unknown-pod-kind: a spec.podSpecs entry as YAML).
    suggestion: str | None = None
    #: The command line the message tells the user to run (set off by backticks in it), as
    #: printed: formatters show it as code (a Markdown code span), machines read it here.
    command: str | None = None

    @property
    def field_path(self) -> str | None:
        """``spec.template.spec.containers[0].image``, or None when about no field."""
        return format_field_path(self.path) if self.path else None

    def location(self) -> str:
        """``FILE:LINE: Kind namespace/name``."""
        where = self.source
        if self.line is not None:
            where += f":{self.line}"
        if self.resource is not None:
            where += f": {self.resource.display_name}"
        return where

    @property
    def headline(self) -> str:
        """The message prefixed with the resource it is about: ``Kind ns/name: message``."""
        if self.resource is None:
            return self.message
        return f"{self.resource.display_name}: {self.message}"


def unresolved_image_message(image: str, container: str, reason: str) -> str:
    return f"image {image!r} of container {container!r} could not be resolved: {reason}"


def conflict_rule(supported_any: bool) -> str:
    """A pod with no platform at all for its images, or one whose own constraints exclude it."""
    return SCHEDULING_CONFLICT if supported_any else NO_COMMON_PLATFORM
