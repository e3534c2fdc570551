"""Content digests (OCI image-spec, "Digests"): the one grammar references, lock files and
manifests are checked against.

``algorithm ":" encoded``, where kmultiarch accepts the registered algorithms it can verify:
``sha256`` (64 lowercase hex digits) and ``sha512`` (128). distribution's reference grammar
admits other algorithms, but no registry serves them and no answer could be verified.
"""

from __future__ import annotations

import hashlib

ALGORITHMS = {"sha256": hashlib.sha256, "sha512": hashlib.sha512}
#: Hex digits of each algorithm's encoded part.
HEX_LENGTH = {"sha256": 64, "sha512": 128}
_HEX = frozenset("0123456789abcdef")
EXAMPLE = "sha256:<64 hex digits>"


def digest_problem(value: str) -> str | None:
    """None when ``value`` is a digest kmultiarch can verify, else what is wrong with it."""
    algorithm, colon, encoded = value.partition(":")
    if not colon:
        return f"{value!r} is not a digest (expected algorithm:hex, e.g. {EXAMPLE})"
    length = HEX_LENGTH.get(algorithm)
    if length is None:
        return f"unsupported digest algorithm {algorithm!r} (sha256 or sha512)"
    if len(encoded) != length or not _HEX.issuperset(encoded):
        return f"a {algorithm} digest has {length} lowercase hex digits"
    return None


def is_digest(value: object) -> bool:
    return isinstance(value, str) and digest_problem(value) is None


def compute_digest(body: bytes, algorithm: str = "sha256") -> str:
    """The digest of ``body``; ValueError for an algorithm kmultiarch does not know."""
    hasher = ALGORITHMS.get(algorithm)
    if hasher is None:
        raise ValueError(f"unsupported digest algorithm {algorithm!r}")
    return f"{algorithm}:{hasher(body).hexdigest()}"
