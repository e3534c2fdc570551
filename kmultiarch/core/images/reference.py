"""Image references: parse, normalise and format them as docker/distribution does.

Pure: no network, no disk. ``ImageRef.parse(str(ref)) == ref`` for every normalised reference.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from kmultiarch.core.images.digest import digest_problem
from kmultiarch.errors import InvalidReferenceError

DOCKER_HUB = "docker.io"
DOCKER_HUB_ALIASES = frozenset({"docker.io", "index.docker.io", "registry-1.docker.io"})
DEFAULT_TAG = "latest"
MAX_NAME_LENGTH = 255


def canonical_registry(host: str) -> str:
    """The registry ``host`` names, in lower case where it stays a host (host names are
    case-insensitive: ``LOCALHOST:5000`` and ``localhost:5000`` are one registry, one cache
    entry and one lock entry); Docker Hub's aliases all mean ``docker.io`` (the one alias
    table; credentials and API hosts derive from it)."""
    folded = host.lower()
    if folded in DOCKER_HUB_ALIASES:
        return DOCKER_HUB
    # ``Intranet`` is a host only because of its capital (distribution's rule): folded, it
    # would read as a Docker Hub namespace, so it stays as written.
    return folded if any(c in folded for c in ".:") or folded == "localhost" else host


_DOMAIN_COMPONENT = r"(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])"
_DOMAIN = re.compile(
    rf"(?:{_DOMAIN_COMPONENT}(?:\.{_DOMAIN_COMPONENT})*|\[[a-fA-F0-9:]+\])(?::[0-9]+)?\Z"
)
_PATH_COMPONENT = re.compile(r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*\Z")
_TAG = re.compile(r"[\w][\w.-]{0,127}\Z", re.ASCII)
_HEX64 = re.compile(r"[a-f0-9]{64}\Z")
#: References already parsed, by their text (bounded: a stream names a few hundred at most).
_PARSED: dict[str, ImageRef] = {}
_PARSED_KEPT = 4096


def is_tag(text: str) -> bool:
    """Whether ``text`` is a tag as :meth:`ImageRef.parse` takes one (distribution's grammar:
    ASCII letters, digits, ``_``, ``.``, ``-``; at most 128; not starting with ``.`` or ``-``)."""
    return _TAG.match(text) is not None


@dataclass(frozen=True, order=True)
class ImageRef:
    """A normalised image reference: ``registry/repository[:tag][@digest]``.

    ``tag`` is ``latest`` when neither a tag nor a digest was given. When both are given the
    digest decides what is resolved (as docker does); the tag is kept for display.
    """

    registry: str
    repository: str
    tag: str | None = None
    digest: str | None = None

    @classmethod
    def parse(cls, text: str) -> ImageRef:
        """Parse and normalise ``text``; raise :class:`InvalidReferenceError` naming it."""
        if cls is ImageRef:
            # A stream names the same few images in every pod: each text is parsed once (the
            # result is immutable; refusals are not kept, they raise again).
            known = _PARSED.get(text) if isinstance(text, str) else None
            if known is not None:
                return known
            parsed = cls._parse(text)
            if len(_PARSED) < _PARSED_KEPT:
                _PARSED[text] = parsed
            return parsed
        return cls._parse(text)

    @classmethod
    def _parse(cls, text: str) -> ImageRef:
        if not isinstance(text, str) or not text:
            raise InvalidReferenceError(f"invalid image reference {text!r}: it is empty")
        if text != text.strip() or any(c.isspace() for c in text):
            raise InvalidReferenceError(
                f"invalid image reference {text!r}: it contains white space"
            )
        remainder, at, digest = text.partition("@")
        if at and not digest:
            raise InvalidReferenceError(f"invalid image reference {text!r}: no digest after '@'")
        if "@" in digest:
            raise InvalidReferenceError(f"invalid image reference {text!r}: more than one '@'")
        name, tag = _split_tag(remainder)
        if digest:
            problem = digest_problem(digest)
            if problem is not None:
                raise InvalidReferenceError(f"invalid image reference {text!r}: {problem}")
        if tag is not None and not is_tag(tag):
            raise InvalidReferenceError(
                f"invalid image reference {text!r}: tag {tag!r} is not valid "
                "(letters, digits, '_', '.', '-'; at most 128; not starting with '.' or '-')"
            )
        registry, repository = _split_registry(name, text)
        if len(repository) + len(registry) + 1 > MAX_NAME_LENGTH:
            raise InvalidReferenceError(
                f"invalid image reference {text!r}: the name is longer than {MAX_NAME_LENGTH}"
            )
        if not digest and tag is None:
            tag = DEFAULT_TAG
        return cls(registry, repository, tag, digest or None)

    @property
    def name(self) -> str:
        """``registry/repository``, without tag or digest."""
        return f"{self.registry}/{self.repository}"

    @property
    def api_reference(self) -> str:
        """What the registry API is asked for: the digest when there is one, else the tag."""
        return self.digest or self.tag or DEFAULT_TAG

    @property
    def is_pinned(self) -> bool:
        """True when the reference names a digest: its content can never change."""
        return self.digest is not None

    def with_digest(self, digest: str) -> ImageRef:
        return ImageRef(self.registry, self.repository, self.tag, digest)

    def __str__(self) -> str:
        text = self.name
        if self.tag is not None:
            text += f":{self.tag}"
        if self.digest is not None:
            text += f"@{self.digest}"
        return text


_GLOB_CHARACTERS = frozenset("*?[")


def normalised_glob(pattern: str) -> str:
    """An image glob (``spec.overrides``) written as references are normalised, so that it
    matches them as users mean it: ``acme/app:1.0`` -> ``docker.io/acme/app:1.0``,
    ``nginx:*`` -> ``docker.io/library/nginx:*``, ``Docker.io/nginx`` ->
    ``docker.io/library/nginx:latest``. A glob that starts with a glob character (``*``,
    ``*/acme/*``) may match any registry and is left as written; a name with no tag, no digest
    and no glob character in its last component gets ``:latest``, as a reference does."""
    if not pattern or pattern[0] in _GLOB_CHARACTERS:
        return pattern
    remainder, at, digest = pattern.partition("@")
    name, tag = _split_tag(remainder)
    first, slash, rest = name.partition("/")
    if slash and (any(c in first for c in ".:") or first == "localhost" or first.lower() != first):
        registry, path = canonical_registry(first), rest
    else:
        registry, path = DOCKER_HUB, name
    if registry == DOCKER_HUB and "/" not in path and path[:1] not in _GLOB_CHARACTERS:
        path = f"library/{path}"
    last = path.rpartition("/")[2]
    if tag is None and not at and not _GLOB_CHARACTERS & set(last):
        tag = DEFAULT_TAG
    return f"{registry}/{path}" + (f":{tag}" if tag is not None else "") + at + digest


def _split_tag(remainder: str) -> tuple[str, str | None]:
    """Split ``name[:tag]``: a ':' after the last '/' starts the tag."""
    slash = remainder.rfind("/")
    colon = remainder.rfind(":")
    if colon > slash:
        return remainder[:colon], remainder[colon + 1 :]
    return remainder, None


def _split_registry(name: str, original: str) -> tuple[str, str]:
    first, slash, rest = name.partition("/")
    # The first component names a registry only if it looks like a host (distribution's rule).
    if slash and (any(c in first for c in ".:") or first == "localhost" or first.lower() != first):
        registry, path = first, rest
        if not _DOMAIN.match(registry):
            raise InvalidReferenceError(
                f"invalid image reference {original!r}: {registry!r} is not a valid registry host"
            )
        port = registry.rpartition(":")[2] if not registry.endswith("]") else ""
        if ":" in registry and port.isdigit() and not 0 < int(port) <= 65535:
            raise InvalidReferenceError(
                f"invalid image reference {original!r}: port {port} is not a TCP port (1-65535)"
            )
    else:
        registry, path = DOCKER_HUB, name
    registry = canonical_registry(registry)
    if registry == DOCKER_HUB and "/" not in path:
        path = f"library/{path}"
    if not path:
        raise InvalidReferenceError(f"invalid image reference {original!r}: no repository name")
    if _HEX64.match(path.removeprefix("library/")) and registry == DOCKER_HUB and "/" not in name:
        raise InvalidReferenceError(
            f"invalid image reference {original!r}: a 64-digit hex string is an image ID, "
            "not a repository name"
        )
    for component in path.split("/"):
        if not _PATH_COMPONENT.match(component):
            hint = " (repository names must be lowercase)" if component.lower() != component else ""
            raise InvalidReferenceError(
                f"invalid image reference {original!r}: {component!r} is not a valid "
                f"repository path component{hint}"
            )
    return registry, path
