"""Markdown job summaries never turn input into a link (issue 28, item 8).

A resource named ``www.evil-login.example`` became a clickable link in the job summary of
``check --output markdown``: GitHub links ``www.`` domains, URLs and e-mail addresses found in
plain text (GFM's autolink extension), with no syntax a backslash escape could stop. The
summaries are rendered here with cmark-gfm, the C library GitHub's own Markdown is built on
(``cmarkgfm`` binds it), with its autolink extension on, and no ``<a`` may come out. Such
words are code spans (issue 36): an invisible U+2060 before their dots, as before, made what a
reader copied name another file or image."""

from __future__ import annotations

import html as html_module
import re

import cmarkgfm
import pytest
from cmarkgfm.cmark import Options

from kmultiarch.assess.assessment import CheckResult
from kmultiarch.core.findings import Finding, ResourceRef
from kmultiarch.output.markdown import format_markdown, markdown_text

HOSTILE = [
    "www.evil-login.example",
    "WWW.EVIL-LOGIN.EXAMPLE",
    "(www.evil-login.example)",
    "*www.evil-login.example*",
    "_www.evil-login.example_",
    "~www.evil-login.example~",
    "evil.example",
    "login.evil.example/reset?x=1",
    "https://evil.example/login",
    "http://evil.example",
    "ftp://evil.example",
    "HTTPS://EVIL.EXAMPLE",
    "user@evil.example",
    "first.last+tag@evil-login.example",
    "mailto:user@evil.example",
    "xmpp:user@evil.example",
    "<https://evil.example>",
    "<user@evil.example>",
    "[x](https://evil.example)",
    "web-www.evil.example.com",
    "évil.example",
]


def rendered(markdown: str) -> str:
    """HTML as GitHub's Markdown library renders it: tables, strikethrough, autolinks, and
    the tag filter."""
    return cmarkgfm.github_flavored_markdown_to_html(markdown, options=Options.CMARK_OPT_UNSAFE)


def shown_text(html: str) -> str:
    """What a reader sees (and copies): the text of the HTML, entities decoded."""
    import html as html_module

    return html_module.unescape(re.sub(r"<[^>]*>", "", html))


def test_the_renderer_links_what_github_links() -> None:
    """The test's renderer is the real one: without kmultiarch's escaping, each links."""
    for text in ("www.evil-login.example", "https://evil.example", "user@evil.example"):
        assert "<a " in rendered(text)


@pytest.mark.parametrize("name", HOSTILE)
def test_markdown_summary_resource_named_like_a_domain_is_not_a_clickable_link(
    name: str,
) -> None:
    finding = Finding(
        "needs-scheduling",
        "error",
        f"image {name} of container {name} is amd64 only",
        source=f"deploy/{name}.yaml",
        line=3,
        resource=ResourceRef("apps/v1", "Deployment", name, name),
        path=("spec", "template", "spec"),
    )
    summary = format_markdown(
        CheckResult([], [finding], diffs={f"deploy/{name}.yaml": f"-a {name}\n+b {name}\n"})
    )
    html = rendered(summary)
    assert "<a " not in html, html
    # Reads as it was: the name, whole, in the table.
    assert name in shown_text(html)


@pytest.mark.parametrize("name", HOSTILE)
def test_markdown_text_of_a_domain_or_address_is_not_linked_and_reads_the_same(
    name: str,
) -> None:
    for line in (name, f"see {name} now", f"{name}, {name}"):
        html = rendered(markdown_text(line))
        assert "<a " not in html, (line, html)
        assert shown_text(html).strip() == line


def test_markdown_text_leaves_no_domain_email_or_url_outside_code_spans() -> None:
    """Whatever renderer reads it (GitHub's filters after cmark-gfm, a merge request's), no
    ``www.``, ``host.tld``, ``a@b`` nor ``scheme://`` is left in text a renderer reads as
    text: each is in a code span, and nothing invisible is added to it."""
    for name in HOSTILE:
        html = rendered(markdown_text(f"see {name} now"))
        outside = re.sub(r"<code>.*?</code>", "", html)
        assert not re.search(r"[\w-]\.[\w-]|\w@|://", outside), html
        assert shown_text(html).strip() == f"see {name} now", html


def test_a_command_copied_from_the_markdown_summary_names_the_files() -> None:
    """Issue 36: the summary wrote ``kmultiarch⁠.lock`` and ``deploy/node-agent⁠.yaml`` (a
    U+2060 before each dot); copied, the command named files that do not exist. Now the
    command is a code span and a fenced block, copied exactly; nothing invisible anywhere."""
    command = "kmultiarch fix --lock kmultiarch.lock --offline deploy/node-agent.yaml"
    finding = Finding(
        "needs-scheduling",
        "error",
        f"require node affinity kubernetes.io/arch In [amd64]; run `{command}` to apply",
        source="deploy/node-agent.yaml",
        line=14,
        resource=ResourceRef("apps/v1", "DaemonSet", "node-agent", "shop"),
        image="registry.example/shop/node-agent:1.4",
        command=command,
    )
    summary = format_markdown(CheckResult([], [finding], fix_command=command))
    assert "\u2060" not in summary and summary.isascii()
    html = rendered(summary)
    spans = re.findall(r"<code[^>]*>(.*?)</code>", html, re.DOTALL)
    codes = [html_module.unescape(span).rstrip("\n") for span in spans]
    assert codes.count(command) == 2  # in the table, and the block for every file
    assert "deploy/node-agent.yaml:14" in codes and "DaemonSet shop/node-agent" in codes


def test_markdown_text_of_a_long_word_takes_linear_time() -> None:
    """A quoted container message is up to kilobytes of anything: a word of punctuation runs
    with a letter between them is read once, not once per character."""
    import time

    word = ("." * 200_000 + "x.y") * 2
    started = time.monotonic()
    shown = markdown_text(f"see {word} now", in_table=True)
    assert time.monotonic() - started < 2
    assert shown.startswith("see `") and shown.endswith("` now")
