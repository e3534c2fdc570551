"""Text that came from outside (resource names, file paths, image references, registry
answers, diff lines), made safe where it is printed: one place for every formatter and for the
warnings on stderr.

- Terminals and logs: control characters (C0 but tab, DEL, C1, the Unicode line and paragraph
  separators, the bidirectional overrides) are shown as escapes (``\\x1b``, ``\\n``), and so is
  each byte of a file name that is not UTF-8 (``\\xe9``), so no input can move the cursor,
  retitle a terminal, reorder what a reader sees, or start a line of its own.
- Copying: every other character that shows as nothing or as a blank other than the space
  (format characters such as U+200B, U+2060, U+FEFF, U+00AD; the separators but the space, such
  as U+00A0; private and unassigned code points: whatever ``str.isprintable`` refuses) is shown
  as its escape too (``\\u2060``), so what a reader copies holds no character they could not
  see (issue 36).
- CI logs: the GitHub Actions runner takes a line for a command when, past leading white
  space, it starts with ``::``, or when it holds ``##[`` anywhere (the runner's older form), on
  stdout and stderr alike; :func:`printable` breaks both (``\\x3a:``, ``#\\x23[``).
- GitHub workflow commands: message data and properties escaped per the runner's rules, and
  text that is not ours (diffs) printed between ``::stop-commands::TOKEN`` and ``::TOKEN::``
  with a fresh random token that does not occur in it.
"""

from __future__ import annotations

import re

_NAMED = {"\n": "\\n", "\r": "\\r", "\x1b": "\\x1b"}
#: The runner's first command form (``##[name props]data``), found anywhere in a line.
_OLD_COMMAND = "##["


def _escape_character(character: str) -> str:
    named = _NAMED.get(character)
    if named is not None:
        return named
    code = ord(character)
    if 0xDC80 <= code <= 0xDCFF:
        # A byte that is not UTF-8, kept by Python as a lone surrogate (file names, argv).
        return f"\\x{code - 0xDC00:02x}"
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def _escaped(character: str) -> str:
    """A character shown as itself when it is visible (or a tab), else as its escape."""
    return (
        character if character.isprintable() or character == "\t" else _escape_character(character)
    )


def _visible(text: str) -> str:
    """``text`` with each control or invisible character as its escape."""
    if text.isprintable():
        return text
    return "".join(_escaped(character) for character in text)


def printable(text: str) -> str:
    """``text`` made inert for a terminal or a CI log and visible to a reader: control and
    invisible characters and bytes that are not UTF-8 escaped (one line, nothing a terminal
    acts on, nothing copied unseen), and nothing the GitHub runner would take for a command.
    Applying it twice changes nothing more."""
    text = _visible(text)
    if _OLD_COMMAND in text:
        text = text.replace(_OLD_COMMAND, "#\\x23[")
    start = len(text) - len(text.lstrip())
    if text.startswith("::", start):
        text = f"{text[:start]}\\x3a{text[start + 1 :]}"
    return text


def github_data(text: str) -> str:
    """A workflow command's message (after ``::``): ``%``, CR and LF escaped."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def github_property(text: str) -> str:
    """A workflow command's property value: as data, and ``:`` and ``,`` too."""
    return github_data(text).replace(":", "%3A").replace(",", "%2C")


def github_verbatim(text: str) -> list[str]:
    """Lines of ``text`` that the runner prints as they are: no line of it, whatever it holds
    (``::add-mask::``, ``::stop-commands::``, ``##[error]``...), is taken for a command. The
    lines are cut where the runner cuts them (CR, LF, CRLF); the runner compares the token
    without case."""
    import secrets  # for GitHub annotations only: not a cost of every run

    token = secrets.token_hex(16)
    while token in text.lower():  # pragma: no cover - 128 random bits
        token = secrets.token_hex(16)
    lines = re.split(r"\r\n|\r|\n", text)
    if lines and lines[-1] == "":
        lines.pop()
    # Shown as they are but for what a log viewer would act on or cannot encode (ESC, bytes of
    # a file name that are not UTF-8) and what a reader would not see (U+200B...).
    shown = [_visible(line) for line in lines]
    return [f"::stop-commands::{token}", *shown, f"::{token}::"]


__all__ = ["github_data", "github_property", "github_verbatim", "printable"]
