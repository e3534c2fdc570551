"""Signed entries in the shared cache level: who may write it decides scheduling, so with a key
(``--cache-key-file``, ``$KMULTIARCH_CACHE_KEY``, ``spec.cache.keyFile``) every entry written is
signed, and an entry that is not signed with that key is a miss.

A signed value is ``kmultiarch-hmac-sha256:<64 hex>\\n<record>``: HMAC-SHA256 over the Redis key
(length first, so that no key and record pair can pose as another) and the record's exact
bytes. The key binds a record to the entry it was written for: a record copied to another key
does not verify. Without a key, a signed value is read as its record (a runner without the key
trusts the store anyway) and plain records are read as before.
"""

from __future__ import annotations

import hashlib
import hmac
from enum import Enum

SIGNED_PREFIX = b"kmultiarch-hmac-sha256:"
_DIGEST_HEX = 64
#: A shorter key could be guessed; `openssl rand -hex 32` gives 64 characters.
MIN_KEY_BYTES = 16
MAX_KEY_BYTES = 4096


class CacheKeyError(ValueError):
    """A key that cannot be used; the message never quotes it."""


class CacheKey:
    """The shared secret of the runners that may write the shared level. Its text is never
    shown: ``repr`` and ``str`` say only that there is one."""

    __slots__ = ("_secret",)

    def __init__(self, secret: bytes) -> None:
        secret = secret.strip()
        if len(secret) < MIN_KEY_BYTES:
            raise CacheKeyError(
                f"the cache key is shorter than {MIN_KEY_BYTES} bytes (make one with "
                "`openssl rand -hex 32`)"
            )
        if len(secret) > MAX_KEY_BYTES:
            raise CacheKeyError(f"the cache key is longer than {MAX_KEY_BYTES} bytes")
        self._secret = secret

    def __repr__(self) -> str:
        return "CacheKey(***)"

    __str__ = __repr__

    def signature(self, redis_key: bytes, record: bytes) -> bytes:
        message = len(redis_key).to_bytes(8, "big") + redis_key + record
        return hmac.new(self._secret, message, hashlib.sha256).hexdigest().encode()


class Verdict(Enum):
    ACCEPTED = "accepted"
    UNSIGNED = "not signed"
    FORGED = "signed with another key, or for another entry"


def seal(key: CacheKey | None, redis_key: bytes, record: bytes) -> bytes:
    """The value to store for ``record``: signed with ``key``, plain without one."""
    if key is None:
        return record
    return SIGNED_PREFIX + key.signature(redis_key, record) + b"\n" + record


def unseal(key: CacheKey | None, redis_key: bytes, stored: bytes) -> tuple[bytes | None, Verdict]:
    """The record in a stored value, and whether it may be used: with a key, only a record
    signed with it for this Redis key; without one, any."""
    signature, record = _split(stored)
    if key is None:
        return record, Verdict.ACCEPTED
    if signature is None:
        return None, Verdict.UNSIGNED
    if not hmac.compare_digest(signature, key.signature(redis_key, record)):
        return None, Verdict.FORGED
    return record, Verdict.ACCEPTED


def _split(stored: bytes) -> tuple[bytes | None, bytes]:
    """(signature, record); no signature when the value does not start with a whole header."""
    if not stored.startswith(SIGNED_PREFIX):
        return None, stored
    header_end = len(SIGNED_PREFIX) + _DIGEST_HEX
    signature = stored[len(SIGNED_PREFIX) : header_end]
    if stored[header_end : header_end + 1] != b"\n" or len(signature) != _DIGEST_HEX:
        return None, stored
    return signature, stored[header_end + 1 :]
