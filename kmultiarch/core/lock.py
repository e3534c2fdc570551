"""The lock file: normalised image reference -> digest -> platforms, so renders need no network.

Pure: the model, its validation from plain data and its text form (reading and writing the
file is :mod:`kmultiarch.io.config`). The format is YAML, sorted by reference, with a header
comment saying how and when it was made::

    # kmultiarch lock file: ...
    apiVersion: kmultiarch.dev/v1alpha1
    kind: ImageLock
    images:
      docker.io/library/nginx:1.27:
        digest: sha256:...
        platforms: [linux/amd64, linux/arm64]
        verified:                    # lock --verify: each platform's verdict (verify.md)
          linux/amd64: {status: verified, digest: sha256:..., file: /bin/busybox, ...}

Lookups are consistent with digest pinning: a reference that names a digest is answered only by
an entry with that digest (its own entry, or a tag of the same repository locked to it); a
reference by tag only by its own entry.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from kmultiarch.core.images.answers import (
    AnswerError,
    checked_digest,
    checked_media_type,
    checked_platforms,
)
from kmultiarch.core.images.digest import EXAMPLE
from kmultiarch.core.images.platform import Platform
from kmultiarch.core.images.reference import ImageRef
from kmultiarch.errors import InputError, InvalidReferenceError

if TYPE_CHECKING:
    # Verification (and the layer and binary readers under it) is imported by the runs that
    # meet a verdict, not by every run that reads a lock.
    from kmultiarch.core.verification.verdicts import ImageVerification, PlatformVerification

API_VERSION = "kmultiarch.dev/v1alpha1"
KIND = "ImageLock"


class LockFileError(InputError):
    """A lock file that cannot be read or does not validate."""


@dataclass(frozen=True)
class LockEntry:
    reference: ImageRef
    digest: str
    platforms: frozenset[Platform]
    media_type: str | None = None
    #: ``lock --verify``: the verdict on each platform manifest (``verified:``, keyed by
    #: platform); None when the lock was made without verifying.
    verified: tuple[PlatformVerification, ...] | None = None

    @property
    def verification(self) -> ImageVerification | None:
        """The recorded verdicts as a run's verification of the image (offline renders)."""
        if self.verified is None:
            return None
        from kmultiarch.core.verification.verdicts import ImageVerification

        return ImageVerification(self.reference, self.digest, self.verified)


@dataclass(frozen=True)
class ImageLock:
    """The entries of a lock file, keyed by normalised reference."""

    entries: Mapping[str, LockEntry] = field(default_factory=dict)
    source: str = "(no lock)"

    @classmethod
    def of(cls, entries: Iterable[LockEntry], source: str = "(new lock)") -> ImageLock:
        return cls({str(entry.reference): entry for entry in entries}, source)

    def lookup(self, reference: ImageRef) -> LockEntry | None:
        """The entry that describes exactly the image ``reference`` names, if any."""
        entry = self.entries.get(str(reference))
        if reference.digest is None:
            return entry
        if entry is not None and entry.digest == reference.digest:
            return entry
        # A digest names content: any locked reference of the repository with that digest
        # describes it, whatever tag the reference shows.
        for candidate in self.entries.values():
            if candidate.reference.name == reference.name and candidate.digest == reference.digest:
                return candidate
        return None

    def __len__(self) -> int:
        return len(self.entries)


def lock_from_object(document: object, source: str) -> ImageLock:
    """The lock a parsed lock file describes; :class:`LockFileError` if it does not validate."""
    if not isinstance(document, Mapping) or document.get("kind") != KIND:
        raise LockFileError(
            f"{source}: not a kmultiarch lock file (expected apiVersion: {API_VERSION}, "
            f"kind: {KIND}); regenerate it with kmultiarch lock"
        )
    if document.get("apiVersion") != API_VERSION:
        raise LockFileError(
            f"{source}: unsupported lock apiVersion {document.get('apiVersion')!r} "
            f"(this kmultiarch reads {API_VERSION})"
        )
    images = document.get("images")
    if images is None:
        images = {}
    if not isinstance(images, Mapping):
        raise LockFileError(f"{source}: images: expected a mapping from image reference")
    entries: dict[str, LockEntry] = {}
    spellings: dict[str, object] = {}
    for key, value in images.items():
        entry = _entry(key, value, source)
        normalised = str(entry.reference)
        if normalised in entries:
            # Two spellings of one image (nginx:1.27, docker.io/library/nginx:1.27): which one
            # decides must not depend on their order in the file.
            raise LockFileError(
                f"{source}: images.{spellings[normalised]} and images.{key} name the same "
                f"image ({normalised}); keep one, or regenerate the lock with kmultiarch lock"
            )
        entries[normalised] = entry
        spellings[normalised] = key
    return ImageLock(entries, source)


def _entry(key: object, value: object, source: str) -> LockEntry:
    where = f"{source}: images.{key}"
    if not isinstance(key, str):
        raise LockFileError(f"{where}: expected an image reference as key")
    try:
        reference = ImageRef.parse(key)
    except InvalidReferenceError as exc:
        raise LockFileError(f"{where}: {exc}") from exc
    if not isinstance(value, Mapping):
        raise LockFileError(f"{where}: expected a mapping with digest and platforms")
    unknown = set(value) - {"digest", "platforms", "mediaType", "verified"}
    if unknown:
        raise LockFileError(f"{where}: unknown key {sorted(unknown)[0]!r}")
    try:
        digest = checked_digest(value.get("digest"))
    except AnswerError as exc:
        raise LockFileError(
            f"{where}.digest: expected a digest like {EXAMPLE} ({exc.reason})"
        ) from exc
    if reference.digest is not None and reference.digest != digest:
        raise LockFileError(
            f"{where}.digest: {digest} differs from the digest the reference pins; "
            "regenerate the lock with kmultiarch lock"
        )
    raw_platforms = value.get("platforms")
    if not isinstance(raw_platforms, list):
        raise LockFileError(f"{where}.platforms: expected a list like [linux/amd64]")
    try:
        # An empty list is a metadata-only image (an OLM bundle, an OCI artifact): it runs
        # nowhere by itself and does not narrow its pod.
        platforms = checked_platforms(raw_platforms, metadata_only=True)
        media_type = checked_media_type(value.get("mediaType"))
    except AnswerError as exc:
        raise LockFileError(f"{where}.{exc.field}: {exc.reason}") from exc
    verified = _verdicts(value.get("verified"), platforms, where) if "verified" in value else None
    return LockEntry(reference, digest, platforms, media_type, verified)


#: The keys of a recorded verdict: core/verification/verdicts's JSON form without its platform (the
#: key).
_VERDICT_KEYS = frozenset({"status", "digest", "file", "machine", "reason", "code", "via"})


def _verdicts(
    value: object, platforms: frozenset[Platform], where: str
) -> tuple[PlatformVerification, ...]:
    """``verified:``: platform -> verdict, each checked as the caches check theirs, and of a
    platform the entry lists (a verdict on another would decide nothing, or the wrong thing)."""
    if not isinstance(value, Mapping):
        raise LockFileError(
            f"{where}.verified: expected a mapping from platform to verdict, like "
            "{linux/arm64: {status: verified, digest: ..., file: /bin/app, machine: aarch64}}"
        )
    verdicts: dict[Platform, PlatformVerification] = {}
    for key, item in value.items():
        here = f"{where}.verified.{key}"
        if not isinstance(item, Mapping):
            raise LockFileError(f"{here}: expected a mapping with status and digest")
        unknown = set(item) - _VERDICT_KEYS
        if unknown:
            raise LockFileError(f"{here}: unknown key {sorted(unknown, key=str)[0]!r}")
        if "platform" in item or not isinstance(key, str):
            raise LockFileError(f"{here}: expected a platform as key")
        try:
            from kmultiarch.core.verification.verdicts import verification_from_json

            verdict = verification_from_json({**item, "platform": key})
        except AnswerError as exc:
            raise LockFileError(f"{here}.{exc.field}: {exc.reason}") from exc
        if verdict.platform not in platforms:
            raise LockFileError(f"{here}: not one of the entry's platforms")
        if verdict.platform in verdicts:
            raise LockFileError(f"{here}: the platform has a verdict already")
        verdicts[verdict.platform] = verdict
    return tuple(verdicts.values())


def format_lock(lock: ImageLock, header: Iterable[str] = ()) -> str:
    """The lock as YAML: header comment lines, then the entries sorted by reference."""
    lines = [f"# {line}".rstrip() for line in header]
    lines += [f"apiVersion: {API_VERSION}", f"kind: {KIND}"]
    if not lock.entries:
        lines.append("images: {}")
    else:
        lines.append("images:")
    for key in sorted(lock.entries):
        entry = lock.entries[key]
        lines.append(f"  {_quoted(key)}:")
        lines.append(f"    digest: {_quoted(entry.digest)}")
        if entry.media_type:
            lines.append(f"    mediaType: {_quoted(entry.media_type)}")
        platforms = ", ".join(_quoted(str(p)) for p in sorted(entry.platforms, key=str))
        lines.append(f"    platforms: [{platforms}]")
        if entry.verified is not None:
            lines.extend(_verdict_lines(entry.verified))
    return "\n".join(lines) + "\n"


def _verdict_lines(verdicts: Iterable[PlatformVerification]) -> list[str]:
    ordered = sorted(verdicts, key=lambda verdict: str(verdict.platform))
    if not ordered:
        return ["    verified: {}"]
    lines = ["    verified:"]
    for verdict in ordered:
        lines.append(f"      {_quoted(str(verdict.platform))}:")
        from kmultiarch.core.verification.verdicts import verification_json

        document = verification_json(verdict)
        for key in ("status", "digest", "code", "file", "machine", "reason"):
            if document.get(key) is not None:
                lines.append(f"        {key}: {_quoted(document[key])}")
        if verdict.via:
            lines.append(f"        via: [{', '.join(_quoted(step) for step in verdict.via)}]")
    return lines


def _quoted(text: str) -> str:
    """References, digests and platforms are plain-safe; what else a lock holds (a verdict's
    file, machine and reason, read from an image) is double-quoted with every character YAML
    would not keep as it is escaped, so that the lock reads back to the same text."""
    if (
        _PLAIN.fullmatch(text)
        and ": " not in text
        and not text.endswith(":")  # "reason: A:" would be a mapping
        # Not a word or number YAML 1.1 reads as something else (no, on, null, 1.0, 1:20).
        and ("/" in text or (text[0].isalpha() and text.lower() not in _YAML_WORDS))
    ):
        return text
    return '"' + "".join(_escaped(character) for character in text) + '"'


_PLAIN = re.compile(r"[A-Za-z0-9/][A-Za-z0-9._/:@+-]*")
_YAML_WORDS = frozenset({"y", "yes", "n", "no", "true", "false", "on", "off", "null"})


def _escaped(character: str) -> str:
    if character in '"\\':
        return "\\" + character
    code = ord(character)
    # What may stand unescaped in a double-quoted YAML scalar: the printable characters (as
    # libyaml and PyYAML read them), without line breaks, tabs (a quoted scalar folds them) and
    # BOM. Compared by code point rather than with a compiled character class: compiling it cost
    # every run that imports the lock 3 ms, and only a lock written with such a name reads it.
    if (
        0x20 <= code <= 0x7E
        or 0xA0 <= code <= 0x2027
        or 0x202A <= code <= 0xD7FF
        or 0xE000 <= code <= 0xFEFE
        or 0xFF00 <= code <= 0xFFFD
        or code >= 0x10000
    ):
        return character
    if 0xD800 <= code <= 0xDFFF:
        # A byte of a file name that was not UTF-8 (kept as a lone surrogate): YAML has no
        # escape for it, and the lock records the name for people.
        return "\ufffd"
    if code < 0x100:
        return f"\\x{code:02x}"
    if code < 0x10000:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"
