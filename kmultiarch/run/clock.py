"""The time a run says it was made at: now, or ``$SOURCE_DATE_EPOCH`` for reproducible output
(reproducible-builds.org)."""

from __future__ import annotations

import os
from datetime import UTC, datetime

from kmultiarch.errors import InputError

__all__ = ["generated_at"]


def generated_at() -> str:
    """Now, or ``$SOURCE_DATE_EPOCH``, as UTC ISO 8601."""
    epoch = os.environ.get("SOURCE_DATE_EPOCH", "")
    if not epoch:
        return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    try:
        moment = datetime.fromtimestamp(int(epoch), UTC)
    except (ValueError, OverflowError, OSError):
        # A malformed value is an error, not a silent fallback (errors are neutralised when
        # printed, as every message is).
        raise InputError(
            f"SOURCE_DATE_EPOCH={epoch[:40]!r} is not a UNIX time kmultiarch can "
            "write (seconds since 1970, up to year 9999); fix or unset it"
        ) from None
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")
