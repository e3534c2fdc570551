"""``kmultiarch verify``'s output: a table per image (text) or a JSON document.

Every path, machine name and reason came from an image or a registry: shown through
:func:`~kmultiarch.output.safe.printable` in text, as JSON strings in JSON.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from kmultiarch.core.verification.verdicts import (
    ImageVerification,
    PlatformVerification,
    claim_key,
    verification_json,
)
from kmultiarch.output.safe import printable

__all__ = [
    "image_json",
    "verdict_detail",
    "verdict_text",
    "verification_document",
    "verification_text",
]


def verification_document(
    results: Sequence[ImageVerification], downloaded: Mapping[str, int]
) -> str:
    """JSON: a list with one object per image; each platform with ``bytes``, the layer bytes
    this run downloaded for it (0 when the verdict came from the cache)."""
    return json.dumps([image_json(result, downloaded) for result in results], indent=2) + "\n"


def image_json(
    result: ImageVerification, downloaded: Mapping[str, int] | None = None
) -> dict[str, Any]:
    """One image's verification as JSON (``image``, ``digest``, ``error``, ``platforms``);
    with ``downloaded``, each platform's ``bytes``."""
    platforms = []
    for verdict in result.platforms:
        document = verification_json(verdict)
        if downloaded is not None:
            document["bytes"] = downloaded.get(claim_key(verdict.digest, verdict.platform), 0)
        platforms.append(document)
    return {
        "image": str(result.reference),
        "digest": result.digest,
        "error": result.error,
        "platforms": platforms,
    }


def verification_text(results: Sequence[ImageVerification]) -> str:
    """A block per image: a line per platform manifest, its status, then the file and its
    machine (verified), or the reason (mismatch, unverified)."""
    lines: list[str] = []
    for result in results:
        if result.error is not None:
            continue
        lines.append(printable(str(result.reference)))
        if not result.platforms:
            lines.append("  (no platform to run on: nothing to verify)")
        width = max((len(str(v.platform)) for v in result.platforms), default=0)
        for verdict in result.platforms:
            lines.append(f"  {verdict.platform!s:<{width}}  {verdict_text(verdict)}")
    return "\n".join(lines) + ("\n" if lines else "")


def verdict_text(verdict: PlatformVerification) -> str:
    """``verified    /bin/app (x86-64)``, ``MISMATCH    ...``, ``unverified  why``."""
    label = {"verified": "verified", "mismatch": "MISMATCH"}.get(verdict.status, verdict.status)
    return f"{label:<10}  {printable(verdict_detail(verdict))}"


def verdict_detail(verdict: PlatformVerification) -> str:
    """The file and its machine (verified), or the reason (mismatch, unverified); not made
    printable (the caller escapes for where it goes)."""
    if verdict.status == "verified":
        detail = f"{verdict.file} ({verdict.machine})"
        if verdict.via:
            detail += f" via {' -> '.join(verdict.via)}"
        return detail
    if verdict.status == "mismatch" and verdict.via:
        return f"{verdict.reason} (via {' -> '.join(verdict.via)})"
    return verdict.reason
