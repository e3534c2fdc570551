"""The engine's steps in order: collect, decide, edit, locate (:func:`run`,
:func:`run_documents`)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from dataclasses import replace as dataclass_replace
from typing import TYPE_CHECKING

from kmultiarch.core.findings import PLATFORM_PINNED_DIGEST, Finding, Severity, count_of
from kmultiarch.core.images.reference import ImageRef
from kmultiarch.core.operators.workloads import value_at
from kmultiarch.core.patch import joined
from kmultiarch.core.placement.annotate import annotation_operations
from kmultiarch.core.placement.scheduling import describe_changes
from kmultiarch.core.policy.model import Policy
from kmultiarch.core.resolution import References, Resolution, Resolve, lines_left
from kmultiarch.core.resources import DEFAULT_NAMESPACE
from kmultiarch.engine.collect import (
    _candidate_pods,
    _injection_findings,
    drift_findings,
    read_sources,
    unknown_kind_findings,
    with_node_pools,
)
from kmultiarch.engine.decide import _decide, _findings_for
from kmultiarch.engine.edit import DocumentOutcome, EngineResult
from kmultiarch.engine.locate import Locator, _repinned, _repins, located
from kmultiarch.yaml.stream import InputSource, SourceDocument

if TYPE_CHECKING:
    from kmultiarch.engine.edit import PodOutcome


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
