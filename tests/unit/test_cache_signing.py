"""Signed shared-cache entries (kmultiarch/resolve/signing.py): a record is used with a key only
when it was signed with that key for that Redis key; the key is never shown."""

from __future__ import annotations

import pytest

from kmultiarch.resolve.signing import (
    SIGNED_PREFIX,
    CacheKey,
    CacheKeyError,
    Verdict,
    seal,
    unseal,
)

KEY = CacheKey(b"0123456789abcdef-secret")
OTHER = CacheKey(b"fedcba9876543210-other!")
TAG = b"kmultiarch:v1:tag:docker.io/library/nginx:1.27"
RECORD = b'{"checkedAt": 1.0, "digest": "sha256:' + b"a" * 64 + b'", "v": 1}'


def test_a_sealed_record_is_the_record_behind_a_signature() -> None:
    stored = seal(KEY, TAG, RECORD)
    assert stored.startswith(SIGNED_PREFIX) and stored.endswith(b"\n" + RECORD)
    assert seal(None, TAG, RECORD) == RECORD


CASES = [
    # (key reading, how it was stored, expected record, verdict)
    (KEY, seal(KEY, TAG, RECORD), RECORD, Verdict.ACCEPTED),
    (KEY, RECORD, None, Verdict.UNSIGNED),
    (KEY, seal(OTHER, TAG, RECORD), None, Verdict.FORGED),
    (KEY, seal(KEY, TAG + b"x", RECORD), None, Verdict.FORGED),  # copied from another key
    (KEY, seal(KEY, TAG, RECORD).replace(b"1}", b"2}"), None, Verdict.FORGED),  # changed
    (KEY, SIGNED_PREFIX + b"zz\n" + RECORD, None, Verdict.UNSIGNED),  # a broken header
    (None, seal(OTHER, TAG, RECORD), RECORD, Verdict.ACCEPTED),  # no key: any record
    (None, RECORD, RECORD, Verdict.ACCEPTED),
]


@pytest.mark.parametrize(("key", "stored", "record", "verdict"), CASES)
def test_with_a_key_only_records_signed_with_it_for_that_entry_are_used(
    key: CacheKey | None, stored: bytes, record: bytes | None, verdict: Verdict
) -> None:
    assert unseal(key, TAG, stored) == (record, verdict)


def test_the_key_is_never_shown_and_must_be_long_enough() -> None:
    assert "secret" not in repr(KEY) and "secret" not in str(KEY) and "secret" not in f"{KEY}"
    with pytest.raises(CacheKeyError, match="shorter than 16 bytes") as refused:
        CacheKey(b"short-secret\n")
    assert "short-secret" not in str(refused.value)
    assert CacheKey(b"  0123456789abcdef-secret\n").signature(TAG, RECORD) == KEY.signature(
        TAG, RECORD
    )
