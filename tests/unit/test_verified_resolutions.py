"""spec.verify in the pipeline, the pure half: what a verification does to a resolution
(``enforce`` drops the platforms whose program is of another machine), and the lock's recorded
verdicts answering an offline run only when verifying is asked for."""

from __future__ import annotations

import hashlib

import pytest

from kmultiarch.core.images.platform import Platform
from kmultiarch.core.images.reference import ImageRef
from kmultiarch.core.lock import ImageLock, LockEntry
from kmultiarch.core.policy.model import ResolutionPolicy, VerifyMode, VerifySettings
from kmultiarch.core.resolution import Resolution
from kmultiarch.core.verification.verdicts import (
    ImageVerification,
    PlatformVerification,
    VerifyStatus,
)
from kmultiarch.resolve.cache import MemoryCacheBackend, ResolutionCache
from kmultiarch.resolve.resolver import Resolver

AMD64, ARM64, ARM_V7 = (Platform.parse(p) for p in ("linux/amd64", "linux/arm64", "linux/arm/v7"))
REFERENCE = ImageRef.parse("registry.test/app:1.0")


def digest(seed: str) -> str:
    return "sha256:" + hashlib.sha256(seed.encode()).hexdigest()


def verdict(platform: Platform, status: VerifyStatus) -> PlatformVerification:
    code = "budget" if status == "unverified" else None
    return PlatformVerification(platform, digest(str(platform)), status, code=code)


def verification(**statuses: VerifyStatus) -> ImageVerification:
    platforms = {"amd64": AMD64, "arm64": ARM64, "armv7": ARM_V7}
    verdicts = tuple(verdict(platforms[name], status) for name, status in statuses.items())
    return ImageVerification(REFERENCE, digest("index"), verdicts)


CLAIMED = frozenset({AMD64, ARM64, ARM_V7})


@pytest.mark.parametrize(
    ("found", "enforce", "platforms"),
    [
        (verification(amd64="verified", arm64="mismatch"), False, CLAIMED),  # warn
        (verification(amd64="verified", arm64="mismatch"), True, {AMD64, ARM_V7}),
        (verification(arm64="mismatch", armv7="mismatch"), True, {AMD64}),
        (verification(amd64="unverified", arm64="unverified"), True, CLAIMED),
        (verification(amd64="verified", arm64="verified", armv7="verified"), True, CLAIMED),
        (ImageVerification(REFERENCE, None, error="the registry failed"), True, CLAIMED),
    ],
)
def test_enforce_drops_the_mismatched_platforms_and_nothing_else(
    found: ImageVerification, enforce: bool, platforms: frozenset[Platform]
) -> None:
    resolved = Resolution(REFERENCE, CLAIMED, digest("index"))
    answer = resolved.verified(found, enforce=enforce)
    assert answer.platforms == platforms
    assert answer.verification is found
    assert answer.ok and answer.digest == resolved.digest


def test_an_image_that_lies_about_every_platform_runs_nowhere() -> None:
    """An empty set would read as a metadata-only image, which runs anywhere: an error."""
    resolved = Resolution(REFERENCE, frozenset({ARM64}), digest("index"))
    answer = resolved.verified(verification(arm64="mismatch"), enforce=True)
    assert not answer.ok and answer.error is not None
    assert "every platform its registry lists (linux/arm64)" in answer.error.reason
    assert not answer.metadata_only
    assert resolved.verified(verification(arm64="mismatch"), enforce=False).ok


@pytest.mark.parametrize(("mode", "carried"), [("off", False), ("warn", True), ("enforce", True)])
def test_the_lock_answers_with_its_verdicts_when_verifying(mode: VerifyMode, carried: bool) -> None:
    recorded = verification(amd64="verified", arm64="mismatch").platforms
    entry = LockEntry(REFERENCE, digest("index"), frozenset({AMD64, ARM64}), None, recorded)
    policy = ResolutionPolicy(verify=VerifySettings(mode))
    cache = ResolutionCache(MemoryCacheBackend(), tag_ttl=60)
    resolver = Resolver(policy, cache, lock=ImageLock.of([entry]), offline=True)
    (answer,) = resolver.resolve([REFERENCE]).values()
    assert answer.source == "lock"
    # The resolver gives what the lock says; dropping is the run's (Session) decision.
    assert answer.platforms == {AMD64, ARM64}
    if carried:
        assert answer.verification == ImageVerification(REFERENCE, digest("index"), recorded)
    else:
        assert answer.verification is None
