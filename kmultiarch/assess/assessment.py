"""What ``check`` and ``report`` tell: verdicts per pod, problems with their source lines, and the
image inventory. Plain data built from an :class:`~kmultiarch.engine.EngineResult`; no I/O and
no formatting (``kmultiarch.output`` formats, as yamllint's CLI alone formats its problems).

Rules of ``check`` (each problem names one):

========================  ===============================================================
``needs-scheduling``      ``mutate`` would add tolerations or node affinity to the pod
``no-common-platform``    no platform of the cluster runs every image of the pod
``scheduling-conflict``   the pod's nodeSelector or affinity contradicts its images
``unresolved-image``      an image's platforms could not be resolved (an error under
                          ``failurePolicy: Fail``, else a warning)
``fallback-platforms``    an unresolvable image was taken to run on spec.fallbackPlatforms
                          (a warning)
``policy-drift``          a Karpenter NodePool in the stream offers a platform or a taint
                          the policy lacks (a warning)
========================  ===============================================================
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from kmultiarch.core.findings import UNKNOWN_POD_KIND, Finding, PodStatus, ResourceRef
from kmultiarch.core.images.platform import Platform
from kmultiarch.core.placement.scheduling import describe_changes, supported_platforms
from kmultiarch.core.policy.model import Policy, SchedulingPolicy
from kmultiarch.engine import EngineResult, ImageOutcome, Locator, PodOutcome
from kmultiarch.yaml.stream import SourceDocument, cyclic_gc_paused

if TYPE_CHECKING:
    from kmultiarch.core.verification.verdicts import ImageVerification

#: A pod's verdict is its status in the engine's one vocabulary.
Verdict = PodStatus


@dataclass(frozen=True)
class ContainerRow:
    name: str
    image: str
    line: int
    reference: str | None
    platforms: tuple[str, ...] | None  # None when not resolved
    digest: str | None
    resolved_from: str | None
    error: str | None
    reason: str | None = None  # the error without the reference
    verification: ImageVerification | None = None  # spec.verify's verdicts, when asked


@dataclass(frozen=True)
class PodVerdict:
    source: str
    line: int
    resource: ResourceRef
    field_path: str
    verdict: Verdict
    containers: tuple[ContainerRow, ...]
    supported: tuple[str, ...]
    changes: tuple[str, ...] = ()
    problems: tuple[str, ...] = ()

    @property
    def workload(self) -> str:
        return self.resource.display_name


@dataclass
class CheckResult:
    pods: list[PodVerdict]
    problems: list[Finding]
    diffs: dict[str, str] = field(default_factory=dict)
    cluster: tuple[str, ...] = ()
    #: The command that adds what is missing, as the user can paste it (the options that
    #: shaped this check included); empty when nothing needs scheduling in a file.
    fix_command: str = ""

    @property
    def failed(self) -> bool:
        return any(problem.severity == "error" for problem in self.problems)

    def counts(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for pod in self.pods:
            counts[pod.verdict] = counts.get(pod.verdict, 0) + 1
        return counts


def check(result: EngineResult, policy: Policy, *, with_diff: bool = False) -> CheckResult:
    """Verdicts for every pod the engine saw, and the run's findings as its problems (from a
    run with ``checking=True``: what ``mutate`` would change is a ``needs-scheduling`` error)."""
    pods: list[PodVerdict] = []
    # A document's node tree is composed on each access (yamlstream keeps none): once per
    # document here, for all the lines asked of it, and dropped when the next document starts
    # (pods come in document order; node trees are some 30 times the size of their text).
    current: tuple[str, int] | None = None
    locator = Locator(None, 0)
    with cyclic_gc_paused():
        for pod in result.pods:
            if (pod.source, pod.document_index) != current:
                current = (pod.source, pod.document_index)
                document = result.documents[pod.source][pod.document_index].document
                locator = Locator(document.node, document.start_line)
            pods.append(_verdict(pod, locator, policy.scheduling))
    diffs = unified_diffs(result) if with_diff else {}
    # Findings about the manifests; those about no file (a cache that could not be used) are
    # the run's, said on stderr, not problems of the manifests.
    problems = [finding for finding in result.findings if finding.source]
    return CheckResult(pods, problems, diffs, tuple(str(p) for p in policy.scheduling.platforms))


def unified_diffs(result: EngineResult) -> dict[str, str]:
    """Per changed source, the unified diff of what ``mutate`` would write."""
    diffs: dict[str, str] = {}
    originals = {source.name: source.text for source in result.sources}
    for name in result.changed_sources():
        label = name.removeprefix("./")
        lines = difflib.unified_diff(
            originals[name].splitlines(keepends=True),
            result.output_of(name).splitlines(keepends=True),
            fromfile=f"a/{label}",
            tofile=f"b/{label}",
        )
        # A last line without a line break gets the marker patch and git apply expect.
        diffs[name] = "".join(
            line if line.endswith("\n") else f"{line}\n\\ No newline at end of file\n"
            for line in lines
        )
    return diffs


def _verdict(pod: PodOutcome, document: Locator, policy: SchedulingPolicy) -> PodVerdict:
    containers = tuple(_container_row(image, document) for image in pod.images)
    plan = pod.plan
    supported = tuple(str(p) for p in policy.platforms if plan and p in plan.supported)
    return PodVerdict(
        source=pod.source,
        line=document.line_of(pod.target.path),
        resource=pod.resource,
        field_path=pod.target.field_path,
        verdict=pod.status,
        containers=containers,
        supported=supported,
        changes=describe_changes(plan, pod.preferred, policy)
        if plan is not None and pod.writes
        else (),
        problems=tuple(conflict.message for conflict in plan.conflicts) if plan else (),
    )


def _container_row(image: ImageOutcome, document: Locator) -> ContainerRow:
    resolution = image.resolution
    ok = resolution is not None and resolution.ok
    return ContainerRow(
        name=image.container.name,
        image=image.container.image,
        line=document.line_of(image.container.image_path),
        reference=str(image.reference) if image.reference is not None else None,
        platforms=tuple(sorted(str(p) for p in resolution.platforms))
        if ok and resolution is not None
        else None,
        digest=resolution.digest if resolution is not None else None,
        resolved_from=resolution.source if ok and resolution is not None else None,
        error=image.failure,
        reason=image.failure_reason,
        verification=resolution.verification if resolution is not None else None,
    )


# --- report ---------------------------------------------------------------------------------

ARM64 = Platform("linux", "arm64")
AMD64 = Platform("linux", "amd64")


@dataclass(frozen=True)
class WorkloadUse:
    resource: ResourceRef
    source: str
    line: int
    container: str

    @property
    def workload(self) -> str:
        return self.resource.display_name


@dataclass(frozen=True)
class ImageEntry:
    reference: str  # normalised; the text as written when it does not parse
    written_as: tuple[str, ...]
    platforms: tuple[str, ...] | None
    digest: str | None
    resolved_from: str | None
    error: str | None
    used_by: tuple[WorkloadUse, ...]
    verification: ImageVerification | None = None


@dataclass(frozen=True)
class WorkloadEntry:
    resource: ResourceRef
    source: str
    line: int
    field_path: str
    category: (
        str  # multi-arch, arm64-only, amd64-only, <arch>-only, no-common-platform, unresolvable,
        # chosen-by-operator (an operator's resource naming no image)
    )
    platforms: tuple[str, ...]  # where every image runs (among the cluster's and amd64/arm64)
    images: tuple[str, ...]
    verdict: Verdict

    @property
    def workload(self) -> str:
        return self.resource.display_name


@dataclass(frozen=True)
class UpgradeSuggestion:
    """``report --suggest-upgrades``: for an image lacking cluster platforms, the nearest newer
    tag that has them (``tag``, ``reference``, ``platforms``), or ``note`` saying why none."""

    image: str
    lacking: tuple[str, ...]
    tag: str | None
    reference: str | None
    platforms: tuple[str, ...]
    note: str = ""


@dataclass
class Inventory:
    images: list[ImageEntry]
    workloads: list[WorkloadEntry]
    cluster: tuple[str, ...]
    #: Set by ``--suggest-upgrades`` only (None: not asked for).
    upgrades: list[UpgradeSuggestion] | None = None
    #: Resources of kinds kmultiarch does not know that hold what pods are made of (their
    #: ``unknown-pod-kind`` findings, each with the spec.podSpecs entry to declare the kind).
    unknown_kinds: list[Finding] = field(default_factory=list)

    def summary(self) -> dict[str, int]:
        counts = {
            "workloads": len(self.workloads),
            "images": len(self.images),
            "multi-arch": 0,
            "arm64-only": 0,
            "amd64-only": 0,
            "no-common-platform": 0,
            "unresolvable": 0,
        }
        for workload in self.workloads:
            counts[workload.category] = counts.get(workload.category, 0) + 1
        return counts


@dataclass
class _ImageUses:
    row: ContainerRow
    written_as: dict[str, None] = field(default_factory=dict)
    used_by: list[WorkloadUse] = field(default_factory=list)


def inventory(result: EngineResult, policy: Policy) -> Inventory:
    """Every image with its platforms and users; every pod spec with its category."""
    checked = check(result, policy)
    candidates = tuple(dict.fromkeys([*policy.scheduling.platforms, AMD64, ARM64]))
    images: dict[str, _ImageUses] = {}
    workloads: list[WorkloadEntry] = []
    for pod, verdict in zip(result.pods, checked.pods, strict=True):
        for row in verdict.containers:
            uses = images.setdefault(row.reference or row.image, _ImageUses(row))
            uses.written_as[row.image] = None
            uses.used_by.append(
                WorkloadUse(verdict.resource, verdict.source, verdict.line, row.name)
            )
        workloads.append(_workload_entry(pod, verdict, candidates))
    entries = [
        ImageEntry(
            reference=key,
            written_as=tuple(uses.written_as),
            platforms=uses.row.platforms,
            digest=uses.row.digest,
            resolved_from=uses.row.resolved_from,
            error=uses.row.error,
            used_by=tuple(uses.used_by),
            verification=uses.row.verification,
        )
        for key, uses in sorted(images.items())
    ]
    unknown = [finding for finding in result.findings if finding.rule == UNKNOWN_POD_KIND]
    return Inventory(
        entries,
        workloads,
        tuple(str(p) for p in policy.scheduling.platforms),
        unknown_kinds=unknown,
    )


def _workload_entry(
    pod: PodOutcome, verdict: PodVerdict, candidates: Sequence[Platform]
) -> WorkloadEntry:
    def entry(category: str, platforms: tuple[str, ...] = ()) -> WorkloadEntry:
        return WorkloadEntry(
            verdict.resource,
            verdict.source,
            verdict.line,
            verdict.field_path,
            category,
            platforms,
            tuple(row.image for row in verdict.containers),
            verdict.verdict,
        )

    if pod.status == "chosen-by-operator":
        # An operator's placement whose images the operator picks: report lists it as such.
        return entry("chosen-by-operator")
    resolved = [image.resolution for image in pod.images]
    if not resolved:
        return entry("no-images")
    platform_sets = [r.platforms for r in resolved if r is not None and r.ok]
    if len(platform_sets) != len(resolved):
        return entry("unresolvable")
    # metadata-only images (empty sets) run wherever the pod runs
    supported = supported_platforms([p for p in platform_sets if p], candidates)
    architectures = list(dict.fromkeys(p.architecture for p in candidates if p in supported))
    if not architectures:
        category = "no-common-platform"
    elif len(architectures) > 1:
        category = "multi-arch"
    else:
        category = f"{architectures[0]}-only"
    return entry(category, tuple(str(p) for p in candidates if p in supported))


# --- source lines ---------------------------------------------------------------------------


def line_of(document: SourceDocument, path: Sequence[str | int]) -> int:
    """The 1-based source line of the node at ``path`` (of its key, for a mapping value)."""
    return Locator(document.node, document.start_line).line_of(path)


__all__ = [
    "CheckResult",
    "ImageEntry",
    "Inventory",
    "PodVerdict",
    "UpgradeSuggestion",
    "WorkloadEntry",
    "check",
    "inventory",
    "line_of",
    "unified_diffs",
]
