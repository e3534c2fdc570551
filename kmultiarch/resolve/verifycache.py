"""Verification verdicts in the run's cache, by platform claim, for good.

A verdict answers "does manifest D run on platform P": an index may list one manifest under
two platforms (the classic ``docker manifest annotate`` lie), and each claim has its own
verdict. A manifest is content-addressed: what its layers hold, and so the verdict on a
claim, cannot change. Two kinds of entry live in the same levels as the platforms (the
disk, and the shared level when there is one), as JSON objects checked when read (a planted
or damaged entry, or one moved from another key, is a miss, as in
:mod:`kmultiarch.resolve.cache`):

- a claim's verdict, under ``verify:<digest>@<platform>``:
  ``{"v": 1, "kind": "claim", "result": {...}}`` (its digest and platform must be the key's);
- the platform manifests under a digest, under ``verify:<digest>``: ``{"v": 1, "kind":
  "index", "children": [{"platform", "digest"}, ...]}`` (an image manifest's is itself), so a
  warm run needs no request to know which claims to look up.

Only verdicts that belong to the image are stored (:attr:`PlatformVerification.cacheable`):
a budget, a deadline or a registry failure is this run's, and the next run tries again.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kmultiarch.core.images.answers import AnswerError, checked_digest, checked_platforms
from kmultiarch.core.images.platform import Platform
from kmultiarch.core.verification.verdicts import (
    PlatformVerification,
    claim_key,
    verification_from_json,
    verification_json,
)
from kmultiarch.resolve.cache import SCHEMA_VERSION, SHARED_DIGEST_RETENTION, ResolutionCache

__all__ = ["VERIFY_PREFIX", "IndexChild", "VerificationCache"]

VERIFY_PREFIX = "verify:"
#: More children than any index has; a record listing more is damage.
_MAX_CHILDREN = 256


@dataclass(frozen=True)
class IndexChild:
    """A runnable child of an index: its platform and manifest digest."""

    platform: Platform
    digest: str


class VerificationCache:
    """The ``verify:`` entries of a :class:`ResolutionCache`'s levels."""

    def __init__(self, cache: ResolutionCache) -> None:
        self.cache = cache

    def verdict(self, digest: str, platform: Platform) -> PlatformVerification | None:
        """The verdict on the claim that manifest ``digest`` runs on ``platform``."""
        key = claim_key(digest, platform)
        value = self._get(key, "claim")
        if value is None:
            return None
        try:
            result = verification_from_json(_mapping(value.get("result")))
            if result.digest != digest:
                raise AnswerError("digest", "not the digest it is stored under")
            if result.platform != platform:
                raise AnswerError("platform", "not the platform it is stored under")
        except ValueError as exc:
            self._forget(key, exc)
            return None
        return result

    def put_verdict(self, result: PlatformVerification) -> None:
        if result.cacheable:
            key = claim_key(result.digest, result.platform)
            self._put(key, {"kind": "claim", "result": verification_json(result)})

    def children(self, digest: str) -> tuple[IndexChild, ...] | None:
        value = self._get(digest, "index")
        if value is None:
            return None
        try:
            return _children(value.get("children"))
        except ValueError as exc:
            self._forget(digest, exc)
            return None

    def put_children(self, digest: str, children: tuple[IndexChild, ...]) -> None:
        if len(children) > _MAX_CHILDREN:
            return  # bounded on write as on read: such an index is listed again next run
        listed = [{"platform": str(c.platform), "digest": c.digest} for c in children]
        self._put(digest, {"kind": "index", "children": listed})

    # The levels: local first, then the shared one (its answer kept locally).

    def _get(self, name: str, kind: str) -> dict[str, Any] | None:
        key = VERIFY_PREFIX + name
        value = self.cache.backend.get(key)
        shared = self.cache.shared
        if value is None and shared is not None:
            value = shared.get(key)
            if value is not None and _valid(value, kind):
                self.cache.backend.set(key, value)
            elif value is not None:
                shared.garbage(key)
                return None
        if value is None or not _valid(value, kind):
            return None
        return value

    def _put(self, name: str, record: dict[str, Any]) -> None:
        key = VERIFY_PREFIX + name
        value = {"v": SCHEMA_VERSION, **record}
        self.cache.backend.set(key, value)
        if self.cache.shared is not None:
            self.cache.shared.set(key, value, expire=SHARED_DIGEST_RETENTION)

    def _forget(self, name: str, problem: Exception) -> None:
        key = VERIFY_PREFIX + name
        self.cache.backend.warnings.append(
            f"cache entry {key!r} is corrupted ({problem}); ignoring it"
        )
        self.cache.backend.delete(key)
        if self.cache.shared is not None:
            self.cache.shared.garbage(key)


def _valid(value: dict[str, Any], kind: str) -> bool:
    return value.get("v") == SCHEMA_VERSION and value.get("kind") == kind


def _mapping(value: object) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise AnswerError("result", "expected an object")
    return value


def _children(value: object) -> tuple[IndexChild, ...]:
    if not isinstance(value, list) or len(value) > _MAX_CHILDREN:
        raise AnswerError("children", "expected a list")
    children = []
    for position, item in enumerate(value):
        if not isinstance(item, dict):
            raise AnswerError(f"children[{position}]", "expected an object")
        (platform,) = checked_platforms([item.get("platform")])
        children.append(IndexChild(platform, checked_digest(item.get("digest"))))
    return tuple(children)
