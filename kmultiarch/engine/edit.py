"""The engine's outcomes and the edit step: what was decided for each image, pod and document, and
the edits applied to the documents' texts (:class:`EngineResult`).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

from kmultiarch.core.findings import (
    COMMENTS_LOST,
    CONFLICTS,
    Finding,
    PodStatus,
    ResourceRef,
    count_of,
)
from kmultiarch.core.images.reference import ImageRef
from kmultiarch.core.operators.workloads import ContainerImage, Operators, PodTarget, Workload
from kmultiarch.core.patch import Operation
from kmultiarch.core.placement.scheduling import PodPlan
from kmultiarch.core.resolution import Resolution
from kmultiarch.yaml.edit import EditHint, apply_operations
from kmultiarch.yaml.stream import InputSource, SourceDocument


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


@dataclass(frozen=True)
class _Derived:
    """What the engine takes from a document's one composition: its workloads (for the
    operators' kinds ``operators`` knows) and where an edit would go."""

    operators: Operators
    workloads: list[Workload]
    hint: EditHint | None


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
