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
no syntax a backslash could escape. A WORD JOINER (U+2060, invisible, not a space) goes before
every ``.`` that joins two parts of a name and every ``@``, and after the ``:`` of ``://``: no
``www.``, ``name@host.tld``, ``scheme://`` nor ``host.tld`` is left in the text, which reads
exactly as before. (After the dot would not do: cmark-gfm takes any non-ASCII character for
part of a domain, so ``www.`` followed by it still links.)"""

from __future__ import annotations

import html
import re

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
#: Where a link could form without any Markdown syntax: a dot inside a name (``www.``, a host
#: name), an ``@`` (an e-mail address, a mention) and the ``:`` of ``://``.
_AUTOLINK_JOINTS = re.compile(r"(?<=[\w-])(?=\.[\w-])|(?=@)|(?<=:)(?=//)")
WORD_JOINER = "\u2060"


def markdown_text(text: str) -> str:
    """``text`` shown as itself in Markdown: one printable line, nothing Markdown or HTML acts
    on (``[x](y)``, ``<img>``, ``|`` in a table, ``*``, ``$math$``...), nothing a renderer
    would link by itself (``www.evil.example``, ``https://…``, ``a@evil.example``)."""
    escaped = html.escape(printable(text), quote=False)
    escaped = _MARKDOWN_PUNCTUATION.sub(r"\\\1", escaped)
    return _AUTOLINK_JOINTS.sub(WORD_JOINER, escaped)


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
    return markdown_text(where)


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
                f"| {markdown_text(resource)} | {markdown_text(problem.message)} "
                f"| {markdown_text(problem.rule)} |"
            )
        lines.append("")
        lines += _what_to_run(result.problems, result.fix_command)

    for source, diff in result.diffs.items():
        lines += [
            "<details><summary>" + markdown_text(f"diff of {display_path(source)}") + "</summary>",
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
