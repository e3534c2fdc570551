"""``kmultiarch check --output markdown``: a job summary (GitHub's ``$GITHUB_STEP_SUMMARY``, a
merge request note): the verdict, the pod specs counted by verdict, a table of the problems,
and what to run about them.

Everything that came from the manifests or a registry is text here, never Markdown or HTML: it
is made printable (``safe.printable``) and then every character Markdown or HTML would act on
is escaped, so a resource name cannot open a link, an image, a table cell or a tag. Commands
and diffs go in fenced blocks whose fence is longer than any run of backticks they hold.

Nor can it become a link by itself: GitHub links ``www.`` domains, ``http(s)://`` URLs and
e-mail addresses found in text (GFM's autolink extension, cmark-gfm's ``autolink.c``; other
renderers, and GitHub's own filters after it, also link bare domains and ``@mentions``), with
no syntax a backslash could escape. So what could be taken for one (a word with a dot inside
it, an ``@`` or ``://``: a host, an image reference, a file name, an address) is put in a code
span, in which no renderer links anything, and so are the commands, paths, resources and
references a reader may copy. No invisible character is added anywhere: what is copied from the
rendered summary is what the text says (issue 36; an earlier U+2060 WORD JOINER before each dot
made copied commands name files that do not exist). A code span's fence is longer than any run
of backticks it holds, padded with a space when the text starts or ends with one (CommonMark's
code spans), and in a table a ``|`` is written ``\\|``, which GFM reads as a pipe of the cell's
text even inside a code span."""

from __future__ import annotations

import html
import re
from collections.abc import Sequence

from kmultiarch.assess.assessment import CheckResult
from kmultiarch.core.findings import RULES, Finding
from kmultiarch.output import display_path
from kmultiarch.output.check import VERDICT_TEXT, summary_line
from kmultiarch.output.safe import printable

#: The punctuation that opens or closes a construct of GitHub's Markdown wherever it stands
#: (emphasis, links and images, code, table cells, headings, strikethrough, math); with the
#: brackets escaped no link or image can form, and HTML's three are written as entities.
_MARKDOWN_PUNCTUATION = re.compile(r"([\\`*_\[\]|~#$])")
_SEVERITY_TEXT = {"error": "error", "warning": "warning", "info": "info"}
#: A word a renderer could link by itself: a dot inside a name (``www.``, a host name), an
#: ``@`` (an e-mail address, a mention), a ``://``.
_MAY_LINK = re.compile(r"[\w-]\.[\w-]|@|://")
#: Punctuation around a word that belongs to the sentence, not to the word.
_OPENING = "([\"'"
_CLOSING = ")]\"',;:.!?"


def code_span(text: str, *, in_table: bool = False) -> str:
    """``text`` as an inline code span, shown exactly as it is (made printable first): no
    renderer links, escapes or interprets anything in it. Empty text is nothing."""
    shown = printable(text)
    if not shown:
        return ""
    longest = max((len(run) for run in re.findall(r"`+", shown)), default=0)
    fence = "`" * (longest + 1)
    if shown.strip(" ") and (shown[0] in "` " or shown[-1] in "` "):
        shown = f" {shown} "  # CommonMark strips one space from each side of such a span
    if in_table:
        shown = shown.replace("|", "\\|")
    return f"{fence}{shown}{fence}"


def markdown_text(text: str, *, in_table: bool = False, code: Sequence[str] = ()) -> str:
    """``text`` shown as itself in Markdown: one printable line, nothing Markdown or HTML acts
    on (``[x](y)``, ``<img>``, ``|`` in a table, ``*``, ``$math$``...), and each word a
    renderer would link by itself (``www.evil.example``, ``https://…``, ``a@evil.example``)
    in a code span. ``code``: parts of ``text`` to show as code spans whole (the commands
    kmultiarch put in it, each with the backticks that set it off in plain text)."""
    shown = printable(text)
    parts = [printable(part) for part in code if part]
    pieces: list[str] = []
    while parts:
        found = [(shown.find(part), part) for part in parts if part in shown]
        if not found:
            break
        at, part = min(found, key=lambda item: (item[0], -len(item[1])))
        start, end = at, at + len(part)
        if shown[start - 1 : start] == "`" and shown[end : end + 1] == "`":
            start, end = start - 1, end + 1  # the plain text's delimiters: the span's own
        pieces += [_prose(shown[:start], in_table), code_span(part, in_table=in_table)]
        shown = shown[end:]
    pieces.append(_prose(shown, in_table))
    return "".join(pieces)


def _prose(text: str, in_table: bool) -> str:
    pieces: list[str] = []
    for token in re.split(r"(\s+)", text):
        word = token.lstrip(_OPENING)
        before = token[: len(token) - len(word)]
        kept = word.rstrip(_CLOSING)
        after = word[len(kept) :]
        if kept and _MAY_LINK.search(kept):
            pieces += [_escaped(before), code_span(kept, in_table=in_table), _escaped(after)]
        else:
            pieces.append(_escaped(token))
    return "".join(pieces)


def _escaped(text: str) -> str:
    return _MARKDOWN_PUNCTUATION.sub(r"\\\1", html.escape(text, quote=False))


def _fence(body: str) -> str:
    longest = max((len(run) for run in re.findall(r"`+", body)), default=0)
    return "`" * max(3, longest + 1)


def _fenced(body: str, language: str = "") -> list[str]:
    fence = _fence(body)
    return [f"{fence}{language}", *body.splitlines(), fence]


def _location(problem: Finding) -> str:
    where = display_path(problem.source)
    if problem.line is not None:
        where += f":{problem.line}"
    return code_span(where, in_table=True)


def format_markdown(result: CheckResult) -> str:
    verdict = "failed" if result.failed else "passed"
    lines = [f"## kmultiarch check {verdict}", "", markdown_text(summary_line(result)), ""]

    counts = result.counts()
    if counts:
        lines += ["| verdict | pod specs |", "|---|--:|"]
        lines += [
            f"| {markdown_text(VERDICT_TEXT[key])} | {counts[key]} |"
            for key in VERDICT_TEXT
            if counts.get(key)
        ]
        lines.append("")

    if result.problems:
        lines += [
            "### Problems",
            "",
            "| severity | where | resource | problem | rule |",
            "|---|---|---|---|---|",
        ]
        for problem in result.problems:
            resource = problem.resource.display_name if problem.resource else ""
            lines.append(
                f"| {_SEVERITY_TEXT[problem.severity]} | {_location(problem)} "
                f"| {code_span(resource, in_table=True)} "
                f"| {markdown_text(problem.message, in_table=True, code=[problem.command or ''])} "
                f"| {markdown_text(problem.rule, in_table=True)} |"
            )
        lines.append("")
        lines += _what_to_run(result.problems, result.fix_command)

    for source, diff in result.diffs.items():
        lines += [
            # An HTML block: Markdown is not read in it (nor are links made), HTML is.
            "<details><summary>diff of <code>"
            + html.escape(printable(display_path(source)))
            + "</code></summary>",
            "",
            *_fenced("\n".join(printable(line) for line in diff.splitlines()), "diff"),
            "",
            "</details>",
            "",
        ]
    return "\n".join(lines).rstrip("\n") + "\n"


def _what_to_run(problems: list[Finding], fix_command: str) -> list[str]:
    """Per rule found, its help (core/findings holds it, once); for pods that need
    scheduling, the ``kmultiarch fix`` command line for their files."""
    lines = ["### What to do", ""]
    for rule_id in dict.fromkeys(problem.rule for problem in problems):
        rule = RULES.get(rule_id)
        found = sum(1 for problem in problems if problem.rule == rule_id)
        # The help is kmultiarch's own Markdown (code spans for commands), not input.
        help_text = rule.help if rule else ""
        lines.append(f"- {markdown_text(rule_id)} ({found}): {help_text}")
    if fix_command:
        lines += [
            "",
            "Add what is missing (the command carries this check's options) and commit the result:",
            "",
            *_fenced(printable(fix_command), "sh"),
        ]
    lines.append("")
    return lines
