"""core/shellwords: every word kmultiarch prints in a command reads back, in bash, as the
word (the file name's very bytes), and shows as it runs: nothing a terminal, a CI log or a reader
would change or miss (issue 36, items 2 and 3)."""

from __future__ import annotations

import os
import subprocess

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kmultiarch.core.shellwords import file_operand, shell_join, shell_quote
from kmultiarch.output.safe import printable

WORDS = [
    "plain.yaml",
    "a b.yaml",
    'it\'s "q".yaml',
    "$(touch pwned) `id` ${HOME} !x",
    "new\nline.yaml",
    "tab\tand\rcr.yaml",
    os.fsdecode(b"caf\xe9.yaml"),
    "café.yaml",
    "zero\u200bwidth\u2060joiner\u00a0nbsp.yaml",
    "bidi\u202eevil.yaml",
    "back\\slash\\n.yaml",
    "x##[group]y",
    "###[",
    "::error::x",
    "\U000e0041tag",
    "",
]


@pytest.mark.parametrize("word", WORDS)
def test_a_quoted_word_reads_back_in_bash_as_its_bytes(word: str) -> None:
    quoted = shell_quote(word)
    ran = subprocess.run(
        ["bash", "-c", f"printf %s {quoted}"], capture_output=True, check=True, env={}
    )
    assert ran.stdout == os.fsencode(word)


@pytest.mark.parametrize("word", WORDS)
def test_a_quoted_word_shows_as_it_runs(word: str) -> None:
    """What the formatters do to a printed line changes nothing in a command, and what it
    shows is visible: no control, invisible or surrogate character."""
    command = shell_join(["kmultiarch", "fix", word])  # a command never starts with a word
    assert printable(command) == command
    assert command.isprintable()
    assert "##[" not in command


def test_a_path_holding_a_newline_is_printed_as_one_word_that_names_it() -> None:
    """Before, the shell-quoted ``'deploy/node\\nagent.yaml'`` was escaped for the terminal
    afterwards and, as printed, named a file with a backslash in its name."""
    assert shell_quote("deploy/node\nagent.yaml") == "$'deploy/node\\nagent.yaml'"
    assert shell_quote(os.fsdecode(b"deploy/caf\xe9.yaml")) == "$'deploy/caf\\xe9.yaml'"
    assert shell_quote("deploy/a b.yaml") == "'deploy/a b.yaml'"  # POSIX quoting otherwise


def test_a_manifest_named_with_a_leading_dash_is_no_option() -> None:
    """``kmultiarch fix -agent.yaml`` fails with ``No such option: -a``."""
    assert shell_join(["kmultiarch", "fix", file_operand("-agent.yaml")]) == (
        "kmultiarch fix ./-agent.yaml"
    )
    assert file_operand("-") == "-" and file_operand("deploy/-a.yaml") == "deploy/-a.yaml"


@given(st.text())
def test_every_word_is_quoted_printable(word: str) -> None:
    command = shell_join(["kmultiarch", "fix", word])
    assert command.isprintable() and printable(command) == command and "##[" not in command
