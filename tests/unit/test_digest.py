"""One digest grammar: references, lock files and manifests accept exactly the same digests."""

from __future__ import annotations

import hashlib
import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kmultiarch.core.images.digest import EXAMPLE, compute_digest, digest_problem, is_digest
from kmultiarch.core.images.oci import parse_manifest
from kmultiarch.core.images.reference import ImageRef
from kmultiarch.core.lock import LockFileError, lock_from_object
from kmultiarch.errors import InvalidReferenceError, ManifestError

SHA256 = "sha256:" + "a" * 64
SHA512 = "sha512:" + "0123456789abcdef" * 8


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        (SHA256, None),
        (SHA512, None),
        ("sha256:" + "A" * 64, "a sha256 digest has 64 lowercase hex digits"),
        ("sha256:" + "a" * 63, "a sha256 digest has 64 lowercase hex digits"),
        ("sha512:" + "a" * 64, "a sha512 digest has 128 lowercase hex digits"),
        ("sha384:" + "a" * 96, "unsupported digest algorithm 'sha384' (sha256 or sha512)"),
        (
            "a" * 64,
            f"{'a' * 64!r} is not a digest (expected algorithm:hex, e.g. {EXAMPLE})",
        ),
        ("sha256:" + "g" * 64, "a sha256 digest has 64 lowercase hex digits"),
    ],
)
def test_digest_grammar(value: str, problem: str | None) -> None:
    assert digest_problem(value) == problem
    assert is_digest(value) is (problem is None)


def test_compute_digest_matches_hashlib() -> None:
    assert compute_digest(b"x") == "sha256:" + hashlib.sha256(b"x").hexdigest()
    assert compute_digest(b"x", "sha512") == "sha512:" + hashlib.sha512(b"x").hexdigest()
    with pytest.raises(ValueError, match="unsupported digest algorithm"):
        compute_digest(b"x", "md5")


def _reference_accepts(value: str) -> bool:
    try:
        ImageRef.parse(f"example.com/app@{value}")
    except InvalidReferenceError:
        return False
    return True


def _lock_accepts(value: str) -> bool:
    document = {
        "apiVersion": "kmultiarch.dev/v1alpha1",
        "kind": "ImageLock",
        "images": {"example.com/app:1": {"digest": value, "platforms": ["linux/amd64"]}},
    }
    try:
        lock_from_object(document, "test.lock")
    except LockFileError:
        return False
    return True


def _manifest_accepts(value: str) -> bool:
    body = json.dumps(
        {
            "schemaVersion": 2,
            "mediaType": "application/vnd.oci.image.manifest.v1+json",
            "config": {"mediaType": "application/vnd.oci.image.config.v1+json", "digest": value},
            "layers": [],
        }
    ).encode()
    try:
        parse_manifest(body, None, source="test")
    except ManifestError:
        return False
    return True


_ALPHABET = "sha2561:0123456789abcdefABCDEF-_.+="


@given(
    st.one_of(
        st.text(_ALPHABET, max_size=140),
        st.sampled_from(["sha256", "sha512", "SHA256", "sha384"]).flatmap(
            lambda algorithm: st.text("0123456789abcdefA", min_size=60, max_size=130).map(
                lambda encoded: f"{algorithm}:{encoded}"
            )
        ),
    )
)
def test_references_locks_and_manifests_share_one_grammar(value: str) -> None:
    expected = is_digest(value)
    assert _reference_accepts(value) is expected
    assert _lock_accepts(value) is expected
    assert _manifest_accepts(value) is expected
