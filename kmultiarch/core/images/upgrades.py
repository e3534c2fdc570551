"""Which newer tag of an image runs on the platforms it lacks: the pure half of
``kmultiarch report --suggest-upgrades`` (the registry's tag list and the lookups are the
adapter's).

Tags are compared as versions: ``[v]N[.N...][-suffix]``. Only tags of the same shape are
candidates for an image tagged like that: the same ``v`` prefix and the same suffix
(``1.2-alpine`` is another variant of the image, not a newer ``1.1``); ``latest`` and other
words are never candidates. Newer means a greater version, numbers compared left to right with
missing parts as 0 (``1.10`` is newer than ``1.9``).

Tags come from a registry, so the parser trusts nothing: only ASCII digits are numbers (``5.``
then an Arabic-Indic one is no version, and no tag either); a number has at most
:data:`MAX_NUMBER_DIGITS` digits, so ``int()`` never meets Python's limit on long integer
strings; a tag the reference grammar refuses is never a candidate.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from kmultiarch.core.images.platform import Platform
from kmultiarch.core.images.reference import is_tag

#: Digits of one version number at most: dates and build numbers (20240131, 1706659200) fit.
MAX_NUMBER_DIGITS = 18
_NUMBER = f"[0-9]{{1,{MAX_NUMBER_DIGITS}}}"
_VERSION = re.compile(
    rf"(v?)({_NUMBER}(?:\.{_NUMBER}){{0,3}})(?:-([0-9A-Za-z][0-9A-Za-z.-]*))?\Z", re.ASCII
)
#: Newer tags looked up per image at most, nearest first: an old tag of a busy repository may
#: have hundreds of newer ones, and the nearest that fits is what is asked for.
MAX_CANDIDATES = 20


@dataclass(frozen=True, order=True)
class VersionTag:
    numbers: tuple[int, ...]
    prefix: str
    suffix: str
    text: str

    @classmethod
    def parse(cls, tag: str) -> VersionTag | None:
        """The version ``tag`` is, or None: never raises, whatever the registry sent."""
        if not is_tag(tag):
            return None
        match = _VERSION.match(tag)
        if match is None:
            return None
        numbers = tuple(int(part) for part in match.group(2).split("."))
        return cls(numbers, match.group(1), match.group(3) or "", tag)

    def same_shape(self, other: VersionTag) -> bool:
        return self.prefix == other.prefix and self.suffix == other.suffix

    def newer_than(self, other: VersionTag) -> bool:
        width = max(len(self.numbers), len(other.numbers))
        mine = self.numbers + (0,) * (width - len(self.numbers))
        theirs = other.numbers + (0,) * (width - len(other.numbers))
        return mine > theirs


def newer_tags(current: str, tags: Iterable[str], limit: int = MAX_CANDIDATES) -> list[str]:
    """Tags of the same shape newer than ``current``, nearest first; none when ``current`` is
    not a version tag."""
    base = VersionTag.parse(current)
    if base is None:
        return []
    candidates = [
        version
        for version in (VersionTag.parse(tag) for tag in dict.fromkeys(tags))
        if version is not None and version.same_shape(base) and version.newer_than(base)
    ]
    candidates.sort(key=lambda version: (version.numbers, version.text))
    return [version.text for version in candidates[:limit]]


def lacking_platforms(
    image_platforms: Iterable[Platform], cluster: Sequence[Platform]
) -> tuple[Platform, ...]:
    """The cluster platforms on which an image with these platforms does not run."""
    platforms = list(image_platforms)
    return tuple(node for node in cluster if not any(p.runs_on(node) for p in platforms))
