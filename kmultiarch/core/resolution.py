"""What resolving an image yields, and the shape of a resolver as the engine sees it.

Plain data: the engine takes a :data:`Resolve` function and never knows whether the answers came
from overrides, a lock file, a cache or a registry (:mod:`kmultiarch.resolve`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Literal

from kmultiarch.core.images.platform import Platform
from kmultiarch.core.images.reference import ImageRef
from kmultiarch.errors import ResolutionError

if TYPE_CHECKING:
    from kmultiarch.core.verification.verdicts import ImageVerification

ResolutionSource = Literal["registry", "cache", "override", "lock"]


@dataclass(frozen=True)
class DigestPin:
    """What the tag of a ``NAME:TAG@DIGEST`` reference names now, when the digest is not it:
    the tag's index (``index_digest``) and, when the pinned digest is one of its platform
    manifests, that platform (every node pulls it); ``moved``: the digest is not in the tag's
    index any more (the tag was pushed again)."""

    tag: str
    index_digest: str
    platform: Platform | None = None
    moved: bool = False
    #: spec.repinDigests: the answer is the index's, and mutate writes the index digest.
    repinned: bool = False
    #: The pod names the reference through other text than its image field (a Tekton step's
    #: ``$(params.image)``, an operator's default): no image field to rewrite, so the pin is
    #: left as it is (and the pod decided on it) and is to be changed where it is set.
    elsewhere: bool = False


@dataclass(frozen=True)
class Resolution:
    """What is known of one image: its platforms, or why they could not be resolved."""

    reference: ImageRef
    platforms: frozenset[Platform] = frozenset()
    digest: str | None = None
    media_type: str | None = None
    source: ResolutionSource = "registry"
    error: ResolutionError | None = None
    #: Whether the binaries the image starts are built for the platforms claimed
    #: (``spec.verify``); None when not checked. Under ``enforce`` the mismatched platforms
    #: are already left out of ``platforms``.
    verification: ImageVerification | None = None
    #: For ``NAME:TAG@DIGEST`` whose digest is not the tag's index: what the tag names.
    pin: DigestPin | None = None

    @property
    def ok(self) -> bool:
        return self.error is None

    @property
    def metadata_only(self) -> bool:
        """Resolved, with no platform to run on: an OLM bundle image or an OCI artifact. Such
        an image does not narrow where its pod runs."""
        return self.error is None and not self.platforms

    def verified(self, verification: ImageVerification, *, enforce: bool) -> Resolution:
        """This answer with ``verification``; ``enforce``: without the platforms whose program
        is of another machine. An image left with none runs nowhere it claims: an error (an
        empty set would say it runs anywhere, as a metadata-only image)."""
        dropped = self.platforms & verification.mismatched if enforce else frozenset()
        if not dropped:
            return replace(self, verification=verification)
        if dropped != self.platforms:
            return replace(self, platforms=self.platforms - dropped, verification=verification)
        claimed = ", ".join(sorted(str(platform) for platform in dropped))
        error = ResolutionError(
            str(self.reference),
            f"every platform its registry lists ({claimed}) starts a program of another machine "
            "(spec.verify: enforce)",
        )
        return replace(self, platforms=frozenset(), verification=verification, error=error)


#: The engine's view of a resolver: every distinct reference of a run in, an answer for each out.
Resolve = Callable[[list[ImageRef]], Mapping[ImageRef, Resolution]]


class References(list[ImageRef]):
    """The references the engine hands a :data:`Resolve` (a list, as any resolver takes), and
    which of them the run uses only as image volumes (``spec.volumes[].image``): nothing is
    started from those, so ``spec.verify`` reads none of their layers. A resolver that does
    not care reads the list."""

    def __init__(self, references: Iterable[ImageRef] = (), volumes: Iterable[ImageRef] = ()):
        super().__init__(references)
        self.volumes: frozenset[ImageRef] = frozenset(volumes)


#: Called with (done, total) as lookups finish, for a progress line.
ProgressCallback = Callable[[int, int], None]


def reference_lines(text: str, reference: str) -> list[int]:
    """The 1-based line of each place ``text`` writes ``reference`` alone (not as a part of a
    longer name or reference), in order: where a pinned reference is written."""
    pattern = re.compile(r"(?<![\w./:@-])" + re.escape(reference) + r"(?![\w./:@-])")
    lines: list[int] = []
    line, counted = 1, 0
    for match in pattern.finditer(text):
        line += text.count("\n", counted, match.start())
        counted = match.start()
        lines.append(line)
    return lines


def lines_left(text: str, reference: str, rewritten: Iterable[int]) -> list[int]:
    """The lines of ``text`` still writing ``reference`` once the fields at ``rewritten`` (the
    lines of their keys: a value may follow on a later line) are written anew: for each, the
    first occurrence at or after its line is taken away. What ``spec.repinDigests`` and
    ``fix --repin`` leave as it is (a ConfigMap's data, a skipped workload's image)."""
    left = reference_lines(text, reference)
    for line in sorted(rewritten):
        taken = next((i for i, found in enumerate(left) if found >= line), None)
        if taken is not None:
            del left[taken]
    return left


def tag_key(reference: ImageRef) -> str:
    return f"{reference.name}:{reference.tag}"
