"""``kmultiarch verify``'s output: a table per image (text) or a JSON document.

Every path, machine name and reason came from an image or a registry: shown through
:func:`~kmultiarch.output.safe.printable` in text, as JSON strings in JSON.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from kmultiarch.core.verification import (
    ImageVerification,
    PlatformVerification,
    verification_json,
)
from kmultiarch.output.safe import printable

__all__ = ["verification_document", "verification_text"]


def verification_document(
    results: Sequence[ImageVerification], downloaded: Mapping[str, int]
) -> str:
    """JSON: a list with one object per image; each platform with ``bytes``, the layer bytes
    this run downloaded for it (0 when the verdict came from the cache)."""
    images: list[dict[str, Any]] = []
    for result in results:
        platforms = []
        for verdict in result.platforms:
            document = verification_json(verdict)
            document["bytes"] = downloaded.get(verdict.digest, 0)
            platforms.append(document)
        images.append(
            {
                "image": str(result.reference),
                "digest": result.digest,
                "error": result.error,
                "platforms": platforms,
            }
        )
    return json.dumps(images, indent=2) + "\n"


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
            lines.append(f"  {verdict.platform!s:<{width}}  {_status(verdict)}")
    return "\n".join(lines) + ("\n" if lines else "")


def _status(verdict: PlatformVerification) -> str:
    if verdict.status == "verified":
        detail = f"{verdict.file} ({verdict.machine})"
        if verdict.via:
            detail += f" via {' -> '.join(verdict.via)}"
        return f"verified    {printable(detail)}"
    if verdict.status == "mismatch":
        detail = verdict.reason
        if verdict.via:
            detail += f" (via {' -> '.join(verdict.via)})"
        return f"MISMATCH    {printable(detail)}"
    return f"unverified  {printable(verdict.reason)}"
