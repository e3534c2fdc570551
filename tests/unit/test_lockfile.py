"""Lock files: format and parse round-trip, lookups consistent with digest pinning, bad input."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from kmultiarch.core.images.platform import Platform
from kmultiarch.core.images.reference import ImageRef
from kmultiarch.core.lock import ImageLock, LockEntry, LockFileError, format_lock
from kmultiarch.core.verification.verdicts import PlatformVerification
from kmultiarch.io.config import load_lock, parse_lock, write_lock


def digest(seed: str) -> str:
    return "sha256:" + hashlib.sha256(seed.encode()).hexdigest()


X, Y = digest("x"), digest("y")
HEAD = "apiVersion: kmultiarch.dev/v1alpha1\nkind: ImageLock\nimages:\n"
BOTH = frozenset({Platform("linux", "amd64"), Platform("linux", "arm64")})
AMD64 = frozenset({Platform("linux", "amd64")})


def entry(reference: str, value: str, platforms: frozenset[Platform] = BOTH) -> LockEntry:
    return LockEntry(ImageRef.parse(reference), value, platforms)


LOCK = ImageLock.of(
    [
        entry("nginx:1.27", X),
        entry("ghcr.io/acme/app:2.0", Y, AMD64),
        entry("quay.io/pinned/tool@" + Y, Y, AMD64),
    ],
    "test.lock",
)


def test_format_is_sorted_commented_and_parses_back() -> None:
    text = format_lock(LOCK, ["made by a test", "second line"])
    assert text.startswith("# made by a test\n# second line\napiVersion: kmultiarch.dev/v1alpha1\n")
    keys = [
        line.strip().rstrip(":")
        for line in text.splitlines()
        if line.startswith("  ") and not line.startswith("    ")
    ]
    assert keys == sorted(keys)
    assert keys[0].startswith("docker.io/library/nginx:1.27")
    parsed = parse_lock(text, "again")
    assert parsed.entries == LOCK.entries
    assert format_lock(parsed, ["made by a test", "second line"]) == text


def test_an_empty_lock() -> None:
    text = format_lock(ImageLock.of([]))
    assert "images: {}" in text
    assert len(parse_lock(text, "empty")) == 0


@pytest.mark.parametrize(
    ("reference", "expected"),
    [
        ("nginx:1.27", X),  # by tag: its own entry
        ("docker.io/library/nginx:1.27", X),  # normalised the same way
        (f"nginx@{X}", X),  # by digest: the tag locked to that digest describes it
        (f"nginx:1.27@{X}", X),  # tag and digest agreeing
        (f"nginx:1.27@{Y}", None),  # the tag is locked to other content: not this image
        (f"nginx@{Y}", None),
        ("nginx:1.26", None),
        (f"quay.io/pinned/tool@{Y}", Y),
        (f"quay.io/pinned/tool:3@{Y}", Y),  # the tag shown does not matter with a digest
        (f"ghcr.io/acme/other@{Y}", None),  # same digest, other repository: not used
    ],
)
def test_lookup_follows_digest_pinning(reference: str, expected: str | None) -> None:
    found = LOCK.lookup(ImageRef.parse(reference))
    assert (found.digest if found else None) == expected


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("a: [", "the lock file is not valid YAML"),
        ("kind: Other\n", "not a kmultiarch lock file"),
        ("apiVersion: v9\nkind: ImageLock\n", "unsupported lock apiVersion 'v9'"),
        (
            "apiVersion: kmultiarch.dev/v1alpha1\nkind: ImageLock\nimages: []\n",
            "images: expected a mapping",
        ),
        (
            HEAD + "  'Bad Ref': {}\n",
            "images.Bad Ref: invalid image reference",
        ),
        (
            HEAD + "  a:1: {digest: x}\n",
            "images.a:1.digest: expected a digest",
        ),
        (
            HEAD + f"  a:1: {{digest: '{X}'}}\n",
            "images.a:1.platforms: expected a list",
        ),
        (
            HEAD + f"  a:1: {{digest: '{X}', platforms: [linux]}}\n",
            "images.a:1.platforms[0]:",
        ),
        (
            HEAD + f"  a@{X}: {{digest: '{Y}', platforms: [linux/amd64]}}\n",
            "differs from the digest the reference pins",
        ),
        (
            HEAD + f"  a:1: {{digest: '{X}', platforms: [linux/amd64], size: 3}}\n",
            "unknown key 'size'",
        ),
    ],
)
def test_bad_locks_are_one_clear_line(text: str, message: str) -> None:
    with pytest.raises(LockFileError) as raised:
        parse_lock(text, "bad.lock")
    assert str(raised.value).startswith("bad.lock")
    assert message in str(raised.value)
    assert "\n" not in str(raised.value)


def test_load_and_write(tmp_path: Path) -> None:
    path = tmp_path / "k.lock"
    with pytest.raises(LockFileError, match="lock file not found; create it with `kmultiarch lock"):
        load_lock(path)
    write_lock(path, LOCK, ["header"])
    assert load_lock(path).entries == LOCK.entries
    assert [p.name for p in tmp_path.iterdir()] == ["k.lock"]


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ("nginx:1.27", "docker.io/library/nginx:1.27"),
        ("docker.io/library/nginx:1.27", "index.docker.io/nginx:1.27"),
        ("LOCALHOST:5000/app:1", "localhost:5000/app:1"),
    ],
)
def test_two_spellings_of_one_image_in_a_lock_are_refused(first: str, second: str) -> None:
    """Accepted silently before, the later entry deciding (and its platforms with it)."""
    text = (
        HEAD
        + f"  {first}: {{digest: '{X}', platforms: [linux/amd64]}}\n"
        + f"  {second}: {{digest: '{Y}', platforms: [linux/amd64, linux/arm64]}}\n"
    )
    with pytest.raises(LockFileError) as raised:
        parse_lock(text, "two.lock")
    message = str(raised.value)
    assert message.startswith(f"two.lock: images.{first} and images.{second} name the same image")
    assert "keep one" in message


def test_a_lock_entry_answers_a_reference_whose_host_is_spelt_in_another_case() -> None:
    lock = parse_lock(
        HEAD + f"  LOCALHOST:5000/app:1: {{digest: '{X}', platforms: [linux/amd64]}}\n", "l"
    )
    entry = lock.lookup(ImageRef.parse("localhost:5000/app:1"))
    assert entry is not None and entry.digest == X


# -- recorded verdicts (lock --verify, issue 24) ---------------------------------------------

ARM64 = Platform("linux", "arm64")
VERIFIED = PlatformVerification(
    Platform("linux", "amd64"), digest("amd64"), "verified", "/bin/busybox", "x86-64"
)
MISMATCH = PlatformVerification(
    ARM64,
    digest("arm64"),
    "mismatch",
    "/bin/busybox",
    "x86-64",
    "/bin/busybox is built for x86-64 (linux/amd64); the manifest claims linux/arm64",
    via=("/entrypoint.sh", "/bin/sh"),
)


def verdicts_entry(*verdicts: PlatformVerification) -> LockEntry:
    return LockEntry(ImageRef.parse("ghcr.io/acme/liar:1.0"), X, BOTH, None, verdicts)


def test_verdicts_are_written_by_platform_and_read_back() -> None:
    lock = ImageLock.of([verdicts_entry(MISMATCH, VERIFIED), entry("nginx:1.27", Y)])
    text = format_lock(lock)
    assert (
        "    verified:\n"
        "      linux/amd64:\n"
        "        status: verified\n"
        f"        digest: {digest('amd64')}\n"
        "        file: /bin/busybox\n"
        "        machine: x86-64\n"
        "      linux/arm64:\n"
        "        status: mismatch\n"
    ) in text
    assert '        reason: "/bin/busybox is built for x86-64 (linux/amd64); the manifest' in text
    assert "        via: [/entrypoint.sh, /bin/sh]\n" in text
    parsed = parse_lock(text, "again")
    liar = parsed.entries["ghcr.io/acme/liar:1.0"]
    assert liar.verified == (VERIFIED, MISMATCH)  # sorted by platform
    verification = liar.verification
    assert verification is not None and verification.mismatched == {ARM64}
    assert verification.digest == X
    # An entry made without --verify has none, and says nothing about it.
    nginx = parsed.entries["docker.io/library/nginx:1.27"]
    assert nginx.verified is None and nginx.verification is None
    assert format_lock(parsed) == text


def test_an_image_with_nothing_to_verify_is_recorded_as_such() -> None:
    lock = ImageLock.of([verdicts_entry()])
    text = format_lock(lock)
    assert "    verified: {}\n" in text
    assert parse_lock(text, "again").entries == lock.entries


@pytest.mark.parametrize(
    "text",
    [
        "/app/a file\nwith a line break\tand a tab",
        'quotes " and \\ backslashes',
        "no",  # YAML 1.1 would read a boolean
        "1.0",
        "é, 😀, \x85, \u2028, \ufeff, \x7f, \x00",
        "- [a, b]: {c}",
    ],
)
def test_verdict_texts_from_an_image_read_back_as_they_were(text: str) -> None:
    """Paths and reasons come from images: whatever they hold, the lock keeps them."""
    odd = PlatformVerification(ARM64, digest("odd"), "unverified", text, text, text, "not-found")
    lock = ImageLock.of([verdicts_entry(odd)])
    (verdict,) = parse_lock(format_lock(lock), "again").entries["ghcr.io/acme/liar:1.0"].verified
    assert verdict == odd


def test_a_byte_that_is_not_utf8_in_a_file_name_is_written_as_a_replacement() -> None:
    name = "/app/caf\udce9"  # as the tar reader keeps a Latin-1 name
    odd = PlatformVerification(ARM64, digest("odd"), "verified", name, "aarch64")
    (verdict,) = (
        parse_lock(format_lock(ImageLock.of([verdicts_entry(odd)])), "x")
        .entries["ghcr.io/acme/liar:1.0"]
        .verified
        or ()
    )
    assert verdict.file == "/app/caf\ufffd"


LIAR = (
    HEAD
    + f"  ghcr.io/acme/liar:1.0:\n    digest: '{X}'\n    platforms: [linux/amd64, linux/arm64]\n"
)


@pytest.mark.parametrize(
    ("verified", "message"),
    [
        ("[]", "verified: expected a mapping from platform to verdict"),
        ("{linux/arm64: mismatch}", "verified.linux/arm64: expected a mapping"),
        (
            f"{{linux: {{status: verified, digest: '{X}'}}}}",
            "verified.linux.platform:",
        ),
        (
            f"{{linux/s390x: {{status: verified, digest: '{X}'}}}}",
            "verified.linux/s390x: not one of the entry's platforms",
        ),
        (
            f"{{linux/arm64: {{status: fine, digest: '{X}'}}}}",
            "verified.linux/arm64.status: 'fine' is not one of",
        ),
        ("{linux/arm64: {status: verified, digest: x}}", "verified.linux/arm64.digest:"),
        ("{linux/arm64: {status: verified}}", "verified.linux/arm64.digest:"),
        (
            f"{{linux/arm64: {{status: unverified, digest: '{X}', code: bored}}}}",
            "verified.linux/arm64.code: 'bored' is not a known reason",
        ),
        (
            f"{{linux/arm64: {{status: verified, digest: '{X}', file: [a]}}}}",
            "verified.linux/arm64.file: expected a string",
        ),
        (
            f"{{linux/arm64: {{status: verified, digest: '{X}', via: /bin/sh}}}}",
            "verified.linux/arm64.via: expected a short list of paths",
        ),
        (
            f"{{linux/arm64: {{status: verified, digest: '{X}', bytes: 3}}}}",
            "verified.linux/arm64: unknown key 'bytes'",
        ),
        (
            f"{{linux/arm64: {{status: verified, digest: '{X}', platform: linux/arm64}}}}",
            "verified.linux/arm64: unknown key 'platform'",
        ),
        (
            f"{{linux/arm64: {{status: verified, digest: '{X}'}}, "
            f"linux/arm64/v8: {{status: verified, digest: '{X}'}}}}",
            "the platform has a verdict already",
        ),
    ],
)
def test_bad_verdicts_are_one_clear_line(verified: str, message: str) -> None:
    with pytest.raises(LockFileError) as raised:
        parse_lock(LIAR + f"    verified: {verified}\n", "bad.lock")
    assert str(raised.value).startswith("bad.lock: images.ghcr.io/acme/liar:1.0.verified")
    assert message in str(raised.value)
    assert "\n" not in str(raised.value)
