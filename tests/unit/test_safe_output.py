"""kmultiarch.output.safe: outside text made inert for terminals, CI logs and workflow commands,
checked with the runner's own reading (support.workflow_commands)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from support.workflow_commands import runner_lines, workflow_commands

from kmultiarch.output.safe import github_data, github_property, github_verbatim, printable


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("plain name", "plain name"),
        ("tab\there", "tab\there"),
        ("two\nlines\r", "two\\nlines\\r"),
        ("\x1b]0;pwned\x07", "\\x1b]0;pwned\\x07"),
        ("c1 \x85 \x9b", "c1 \\x85 \\x9b"),
        ("line\u2028separator", "line\\u2028separator"),
        ("bidi \u202eevil\u2066", "bidi \\u202eevil\\u2066"),
        ("caf\udce9.yaml", "caf\\xe9.yaml"),
        ("::error::x", "\\x3a:error::x"),
        ("   ::add-mask::x", "   \\x3a:add-mask::x"),
        # Blanks other than the space are escaped: the line no longer starts with "::".
        ("\u00a0\u3000::warning::x", "\\xa0\\u3000::warning::x"),
        (
            "zero\u200bwidth \u2060joiner \ufeffbom soft\u00adhyphen",
            "zero\\u200bwidth \\u2060joiner \\ufeffbom soft\\xadhyphen",
        ),
        ("tag \U000e0041", "tag \\U000e0041"),
        ("name ##[add-mask]x", "name #\\x23[add-mask]x"),
        ("a::b", "a::b"),
        ("# [x] ## [y]", "# [x] ## [y]"),
        ("é ✓ 日本", "é ✓ 日本"),
    ],
)
def test_printable(text: str, shown: str) -> None:
    assert printable(text) == shown
    assert printable(shown) == shown


@given(st.text())
def test_printable_text_is_one_inert_line(text: str) -> None:
    shown = printable(text)
    assert runner_lines(shown + "\n") == [shown]
    assert workflow_commands(shown) == []
    assert not any(ord(c) < 0x20 and c != "\t" for c in shown)
    shown.encode("utf-8")  # never a lone surrogate
    assert printable(shown) == shown


@given(st.text(), st.text(min_size=1))  # the runner drops a property whose value is empty
def test_github_escapes_round_trip_through_the_runner(message: str, title: str) -> None:
    line = f"::error title={github_property(title)},line=3::{github_data(message)}"
    [command] = workflow_commands(line)
    assert command.data == message and command.properties["title"] == title


@given(st.lists(st.text(), max_size=8))
def test_verbatim_text_never_acts(lines: list[str]) -> None:
    text = "\n".join(["  ::add-mask::x", "##[error]y", "::stop-commands::z", *lines])
    printed = "\n".join([*github_verbatim(text), "::warning::after"])
    assert [c.name for c in workflow_commands(printed)] == ["warning"]


def test_verbatim_tokens_are_fresh_and_absent_from_the_text() -> None:
    first, second = github_verbatim("a"), github_verbatim("a")
    assert first[0] != second[0]
    token = first[0].removeprefix("::stop-commands::")
    assert first[-1] == f"::{token}::" and first[1:-1] == ["a"]
    # The runner compares the token without case: the upper-case form in the text must end
    # nothing early (the random token cannot be guessed; the check is what matters).
    assert github_verbatim(f"::{token.upper()}::")[0] != first[0]


def test_verbatim_lines_show_invisible_characters_as_escapes() -> None:
    """A diff line is the manifest's own, shown as it is but for what a reader could not see
    or a log could not show (issue 36)."""
    (_, shown, _) = github_verbatim("name: web\u200b\u00a0x \udce9 ::kept\n")
    assert shown == "name: web\\u200b\\xa0x \\xe9 ::kept"
