"""Findings located on the line of the field they are about, and digests repinned to the index the
registry serves now (with the findings of a pin that no longer holds).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from dataclasses import replace as dataclass_replace
from typing import TYPE_CHECKING, Any

from yaml.nodes import MappingNode, SequenceNode

from kmultiarch.core.findings import PLATFORM_MISMATCH, PLATFORM_PINNED_DIGEST, Finding, Severity
from kmultiarch.core.images.reference import ImageRef
from kmultiarch.core.resolution import References, Resolution, Resolve
from kmultiarch.yaml.stream import SourceDocument, cyclic_gc_paused

if TYPE_CHECKING:
    from yaml.nodes import Node

    from kmultiarch.engine.edit import PodOutcome


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
