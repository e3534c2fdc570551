"""Command lines kmultiarch prints for a user to paste into a shell: one quoting, the same in
every output format, that keeps each argument one word and is safe to show as it is.

- A word of printable characters is quoted as POSIX ``sh`` reads it (:func:`shlex.quote`:
  ``'a b.yaml'``, ``'it'"'"'s'``).
- A word holding a character a terminal, a log or a reader would not show as itself (a control
  character such as a newline, an invisible one such as U+2060 or U+00A0, a lone surrogate that
  stands for a byte of a file name that is not UTF-8) is written in ANSI-C quoting,
  ``$'...'``, with such characters as ``\\n``, ``\\t``, ``\\r`` or the ``\\xHH`` escapes of
  their bytes: ``$'a\\nb.yaml'``, ``$'caf\\xe9.yaml'``. bash, zsh and ksh93 read it (it is
  POSIX.1-2024's "dollar-single-quotes"; older ``sh`` such as dash may not). ``\\xHH`` gives
  the byte itself, so the word names the file whatever the locale.
- ``##[`` (the GitHub runner's older command form, acted on anywhere in a log line) is never
  written as such: ``$'#\\x23['``. So a printed command goes through ``output.safe.printable``
  unchanged, and a CI log shows the command that runs.
- An operand that starts with ``-`` is written ``./-agent.yaml``: click would take it for an
  option (``No such option: -a``).
"""

from __future__ import annotations

import shlex
from collections.abc import Iterable

__all__ = ["file_operand", "shell_join", "shell_quote"]

#: The GitHub runner takes a line holding this for a command (output/safe.py says more).
_RUNNER_COMMAND = "##["
#: In ANSI-C quoting a backslash and a quote are escaped; every other printable character is
#: itself (bash's ansicstr reads only the escapes after a backslash).
_ANSI_C_ESCAPES = {"\\": "\\\\", "'": "\\'", "\n": "\\n", "\t": "\\t", "\r": "\\r"}


def shell_quote(word: str) -> str:
    """``word`` as one shell word that reads back as ``word`` and shows as it runs."""
    if word.isprintable() and _RUNNER_COMMAND not in word:
        return shlex.quote(word)
    return "$'" + _ansi_c_body(word) + "'"


def _ansi_c_body(word: str) -> str:
    parts: list[str] = []
    for position, character in enumerate(word):
        if character in _ANSI_C_ESCAPES:
            parts.append(_ANSI_C_ESCAPES[character])
        elif not character.isprintable() or (
            character == "#" and word.startswith("[", position + 1) and parts[-1:] == ["#"]
        ):
            # The bytes a file name holds: UTF-8, and a surrogateescape'd byte as itself.
            encoded = character.encode("utf-8", "surrogateescape")
            parts.extend(f"\\x{byte:02x}" for byte in encoded)
        else:
            parts.append(character)
    return "".join(parts)


def shell_join(words: Iterable[str]) -> str:
    """The words as one command line, each quoted by :func:`shell_quote`."""
    return " ".join(shell_quote(word) for word in words)


def file_operand(path: str) -> str:
    """A file named on a command line: ``./-agent.yaml`` for a relative name that starts with
    ``-`` (an option to click otherwise); ``-`` itself means standard input and is kept."""
    return f"./{path}" if path.startswith("-") and path != "-" else path
