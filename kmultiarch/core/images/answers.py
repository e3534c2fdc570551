"""The one check every answer about an image passes, whatever its source.

A registry (its headers and manifests), a lock file, the disk cache and the shared cache all say
the same three things: the digest a tag points to, and the platforms and media type of a digest.
Each source's reader hands what it read to the functions here before anything decides with it,
so a value planted in any of them (a digest ``sha256:zz``, a platform ``unknown/unknown``, a
media type with a line break) is refused by the same grammar: by a cache as a miss, by a lock
file as an error naming the entry, by a registry as a failed lookup.

Pure: plain values in, checked values or :class:`AnswerError` out.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from kmultiarch.core.images.digest import digest_problem
from kmultiarch.core.images.platform import Platform
from kmultiarch.errors import InvalidPlatformError

__all__ = [
    "MAX_PLATFORMS",
    "AnswerError",
    "checked_digest",
    "checked_media_type",
    "checked_platforms",
]

#: More platforms than any image has (the largest public indexes list about a dozen).
MAX_PLATFORMS = 256
#: A platform's text: os/architecture/variant:os.version, each part a short token.
_MAX_PLATFORM_TEXT = 128
# RFC 6838 media type: type "/" subtype, restricted-name characters, at most 127 each.
_MEDIA_TYPE = re.compile(
    r"[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]{0,126}/[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]{0,126}\Z"
)


class AnswerError(ValueError):
    """An answer that does not meet the grammar: ``field`` names the part, ``reason`` says
    what is wrong with it."""

    def __init__(self, field: str, reason: str) -> None:
        super().__init__(f"{field}: {reason}")
        self.field = field
        self.reason = reason


def checked_digest(value: object) -> str:
    """``value`` when it is a digest kmultiarch can verify (sha256 or sha512, lowercase hex)."""
    if value is None:
        raise AnswerError("digest", "missing")
    if not isinstance(value, str):
        raise AnswerError("digest", f"expected a string, found {type(value).__name__}")
    problem = digest_problem(value)
    if problem is not None:
        raise AnswerError("digest", problem)
    return value


def checked_platforms(values: object, *, metadata_only: bool = False) -> frozenset[Platform]:
    """The platforms ``values`` (texts or :class:`Platform` objects) name, each valid, known
    (not BuildKit's ``unknown/unknown`` attestation marker) and short.

    An empty set is an image with no platform to run on (an OLM bundle, an OCI artifact) only
    when the source says so (``metadata_only``); otherwise it is damage.
    """
    if isinstance(values, (str, bytes)) or not isinstance(values, Iterable):
        raise AnswerError("platforms", f"expected a list, found {type(values).__name__}")
    platforms: set[Platform] = set()
    for position, item in enumerate(values):
        if position >= MAX_PLATFORMS:
            raise AnswerError("platforms", f"more than {MAX_PLATFORMS}")
        text = str(item) if isinstance(item, Platform) else item
        if not isinstance(text, str):
            raise AnswerError(f"platforms[{position}]", "expected a string like linux/amd64")
        if len(text) > _MAX_PLATFORM_TEXT:
            raise AnswerError(
                f"platforms[{position}]", f"longer than {_MAX_PLATFORM_TEXT} characters"
            )
        try:
            platform = Platform.parse(text)
        except InvalidPlatformError as exc:
            raise AnswerError(f"platforms[{position}]", str(exc)) from exc
        if isinstance(item, Platform) and platform != item:
            raise AnswerError(f"platforms[{position}]", f"{item!r} is not a normalised platform")
        if platform.is_unknown:
            raise AnswerError(
                f"platforms[{position}]", f"{text!r} is not a platform an image runs on"
            )
        platforms.add(platform)
    if not platforms and not metadata_only:
        raise AnswerError("platforms", "empty, and the answer does not say the image has none")
    return frozenset(platforms)


def checked_media_type(value: object) -> str | None:
    """``value`` when it is absent (None) or a media type (``type/subtype``, RFC 6838)."""
    if value is None:
        return None
    if not isinstance(value, str) or not _MEDIA_TYPE.match(value):
        shown = value if isinstance(value, str) else type(value).__name__
        raise AnswerError("mediaType", f"{shown!r} is not a media type")
    return value
