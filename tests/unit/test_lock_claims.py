"""Verdicts per platform claim (issue 28, item 5): an index may list one manifest under
several platforms, or several manifests under one; each claim is judged once (the first
manifest listed for a platform, as runtimes pull), cached under its own key, and the lock
keeps one verdict per platform and reads back what it writes. A property over generated
indexes, and the cache refusing a verdict moved to another claim."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from kmultiarch.core.images.platform import Platform
from kmultiarch.core.images.reference import ImageRef
from kmultiarch.core.lock import ImageLock, LockEntry, format_lock
from kmultiarch.core.verification.verdicts import PlatformVerification, claim_key
from kmultiarch.io.config import parse_lock
from kmultiarch.resolve.cache import MemoryCacheBackend, ResolutionCache
from kmultiarch.resolve.verify import first_per_platform
from kmultiarch.resolve.verifycache import VERIFY_PREFIX, IndexChild, VerificationCache

PLATFORMS = [
    Platform.parse(text)
    for text in ("linux/amd64", "linux/arm64", "linux/arm/v7", "linux/s390x", "windows/amd64")
]
DIGESTS = [f"sha256:{n:064x}" for n in range(1, 5)]
#: Texts an image may hold in a file name or a reason (read back exactly, or as U+FFFD).
TEXT = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",), max_codepoint=0x2FFF), max_size=30
) | st.sampled_from(["/" + "a" * 4200, "\u00e9" * 4097])  # past what a verdict may hold


@st.composite
def verdicts_for(draw: st.DrawFn, child: IndexChild) -> PlatformVerification:
    status = draw(st.sampled_from(["verified", "mismatch", "unverified"]))
    code = (
        draw(st.sampled_from(["not-found", "ambiguous", "digest"]))
        if status == "unverified"
        else None
    )
    return PlatformVerification(
        child.platform,
        child.digest,
        status,  # type: ignore[arg-type]
        file=draw(TEXT),
        machine=draw(TEXT),
        reason=draw(TEXT),
        code=code,  # type: ignore[arg-type]
        via=tuple(draw(st.lists(TEXT, max_size=3) | st.just(["/x"] * 70))),
    )


INDEXES = st.lists(
    st.builds(IndexChild, st.sampled_from(PLATFORMS), st.sampled_from(DIGESTS)),
    min_size=1,
    max_size=8,
)


@settings(max_examples=60, deadline=None)
@given(listed=INDEXES, data=st.data())
def test_the_lock_keeps_one_verdict_per_platform_claim_and_reads_back_what_it_writes(
    listed: list[IndexChild], data: st.DataObject
) -> None:
    cache = VerificationCache(ResolutionCache(MemoryCacheBackend()))
    claims = first_per_platform(listed)
    assert [c.platform for c in claims] == list(dict.fromkeys(c.platform for c in listed))
    verdicts = []
    for child in claims:
        known = cache.verdict(child.digest, child.platform)
        verdict = known or data.draw(verdicts_for(child))
        cache.put_verdict(verdict)
        verdicts.append(verdict)
    # Every claim's verdict is its own, whatever else the index lists under that manifest.
    for child, verdict in zip(claims, verdicts, strict=True):
        assert (verdict.platform, verdict.digest) == (child.platform, child.digest)
    entry = LockEntry(
        ImageRef.parse("registry.test/app:1.0"),
        DIGESTS[0],
        frozenset(c.platform for c in listed),
        verified=tuple(verdicts),
    )
    text = format_lock(ImageLock.of([entry]))
    for platform in entry.platforms:
        assert text.count(f'"{platform}":') + text.count(f" {platform}:\n") == 1, text
    (read,) = parse_lock(text, "test.lock").entries.values()
    assert read.platforms == entry.platforms
    assert {v.platform: v for v in read.verified or ()} == {v.platform: v for v in verdicts}


def test_one_manifest_under_two_platforms_is_two_claims_with_two_verdicts() -> None:
    cache = VerificationCache(ResolutionCache(MemoryCacheBackend()))
    amd64, arm64 = PLATFORMS[0], PLATFORMS[1]
    digest = DIGESTS[0]
    cache.put_verdict(PlatformVerification(amd64, digest, "verified", "/app", "x86-64"))
    assert cache.verdict(digest, arm64) is None  # the arm64 claim is not judged yet
    cache.put_verdict(PlatformVerification(arm64, digest, "mismatch", "/app", "x86-64"))
    found = cache.verdict(digest, arm64)
    assert found is not None and found.status == "mismatch"


def test_a_verdict_moved_to_another_claims_key_is_refused() -> None:
    backend = MemoryCacheBackend()
    cache = VerificationCache(ResolutionCache(backend))
    amd64, arm64 = PLATFORMS[0], PLATFORMS[1]
    digest = DIGESTS[0]
    cache.put_verdict(PlatformVerification(amd64, digest, "verified", "/app", "x86-64"))
    moved = backend.get(VERIFY_PREFIX + claim_key(digest, amd64))
    assert moved is not None
    backend.set(VERIFY_PREFIX + claim_key(digest, arm64), moved)
    assert cache.verdict(digest, arm64) is None
    assert any("not the platform it is stored under" in w for w in backend.warnings)


def test_an_index_of_300_platform_manifests_is_not_cached_as_damage() -> None:
    backend = MemoryCacheBackend()
    cache = VerificationCache(ResolutionCache(backend))
    children = tuple(
        IndexChild(Platform.create("linux", "amd64", os_version=f"1.{n}"), DIGESTS[0])
        for n in range(300)
    )
    cache.put_children(DIGESTS[1], children)
    assert cache.children(DIGESTS[1]) is None
    assert backend.warnings == []


def test_a_verdict_naming_a_path_longer_than_a_verdict_holds_reads_back() -> None:
    cache = VerificationCache(ResolutionCache(MemoryCacheBackend()))
    long_path = "/" + "a" * 10_000
    verdict = PlatformVerification(PLATFORMS[1], DIGESTS[0], "mismatch", long_path, "x86-64")
    cache.put_verdict(verdict)
    assert cache.verdict(DIGESTS[0], PLATFORMS[1]) == verdict
    assert len(verdict.file) == 4096 and verdict.file.endswith("\u2026")


def test_a_verdict_text_ending_with_a_colon_reads_back() -> None:
    # Found by the property above: "reason: A:" was written plain, a YAML mapping.
    verdict = PlatformVerification(PLATFORMS[0], DIGESTS[0], "mismatch", "/x:", "A:", "A:")
    entry = LockEntry(
        ImageRef.parse("registry.test/app:1.0"),
        DIGESTS[0],
        frozenset({PLATFORMS[0]}),
        None,
        (verdict,),
    )
    (read,) = parse_lock(format_lock(ImageLock.of([entry])), "test.lock").entries.values()
    assert read.verified == (verdict,)
