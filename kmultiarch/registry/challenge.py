"""The ``WWW-Authenticate`` challenge a registry answers 401 with, and the scopes it names.

Pure parsing, no I/O: ``Bearer realm="...",service="...",scope="..."`` or ``Basic realm="..."``
(distribution's token specification).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class Challenge:
    """A parsed ``WWW-Authenticate`` header: ``Bearer`` or ``Basic`` with its parameters."""

    scheme: str
    params: Mapping[str, str]

    @property
    def realm(self) -> str:
        return self.params.get("realm", "")

    @property
    def service(self) -> str:
        return self.params.get("service", "")

    @property
    def scope(self) -> str:
        return self.params.get("scope", "")


_CHALLENGE_PARAM = re.compile(r'\s*([A-Za-z0-9_.-]+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^,\s]*))\s*,?')


def parse_challenge(header: str | None) -> Challenge | None:
    """Parse ``Bearer realm="...",service="...",scope="..."`` (or ``Basic realm="..."``)."""
    if not header:
        return None
    scheme, _, rest = header.strip().partition(" ")
    if not scheme:
        return None
    params: dict[str, str] = {}
    position = 0
    while position < len(rest):
        match = _CHALLENGE_PARAM.match(rest, position)
        if not match or match.end() == position:
            break
        value = match.group(2) if match.group(2) is not None else match.group(3)
        params[match.group(1).lower()] = re.sub(r"\\(.)", r"\1", value)
        position = match.end()
    return Challenge(scheme.lower(), params)


def repository_scope(repository: str) -> str:
    """The scope a pull of ``repository`` needs: ``repository:<name>:pull``."""
    return f"repository:{repository}:pull"
