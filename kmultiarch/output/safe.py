"""Text that came from outside (resource names, file paths, image references, registry
answers, diff lines), made safe where it is printed: one place for every formatter and for the
warnings on stderr.

- Terminals and logs: control characters (C0 but tab, DEL, C1, and the Unicode line and
  paragraph separators) are shown as escapes (``\\x1b``, ``\\n``), so no input can move the
  cursor, retitle a terminal, or start a line that looks like kmultiarch's own or like a
  GitHub workflow command.
- GitHub Actions: message data and properties escaped per the workflow-command rules, and text
  that is not ours (diffs) printed between ``::stop-commands::TOKEN`` and ``::TOKEN::`` with a
  fresh random token that does not occur in it.
"""

from __future__ import annotations

import re
import secrets

_UNPRINTABLE = re.compile("[\x00-\x08\x0a-\x1f\x7f-\x9f\u2028\u2029]")
_NAMED = {"\n": "\\n", "\r": "\\r", "\x1b": "\\x1b"}


def _escape(match: re.Match[str]) -> str:
    character = match.group()
    named = _NAMED.get(character)
    if named is not None:
        return named
    code = ord(character)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def printable(text: str) -> str:
    """``text`` with its control characters escaped: one line, nothing a terminal acts on."""
    return _UNPRINTABLE.sub(_escape, text)


def github_data(text: str) -> str:
    """A workflow command's message (after ``::``): ``%``, CR and LF escaped."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def github_property(text: str) -> str:
    """A workflow command's property value: as data, and ``:`` and ``,`` too."""
    return github_data(text).replace(":", "%3A").replace(",", "%2C")


def github_verbatim(text: str) -> list[str]:
    """Lines of ``text`` that the runner prints as they are: no line of it, whatever it holds
    (``::add-mask::``, ``::stop-commands::``...), is taken for a command."""
    token = secrets.token_hex(16)
    while token in text:  # pragma: no cover - 128 random bits
        token = secrets.token_hex(16)
    return [f"::stop-commands::{token}", *text.splitlines(), f"::{token}::"]


__all__ = ["github_data", "github_property", "github_verbatim", "printable"]
