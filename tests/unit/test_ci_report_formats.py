"""``check --output gitlab`` (GitLab's code quality report) and ``--output markdown`` (a job
summary): pure formatters over a CheckResult."""

from __future__ import annotations

import json
from dataclasses import replace

import cmarkgfm
import pytest
from support.schemas import validate_gitlab_report

from kmultiarch.assess.assessment import CheckResult
from kmultiarch.core.findings import Finding, ResourceRef
from kmultiarch.core.shellwords import shell_join
from kmultiarch.output.gitlab import format_gitlab
from kmultiarch.output.markdown import format_markdown, markdown_text

WEB = ResourceRef("apps/v1", "Deployment", "web", "shop")
DB = ResourceRef("apps/v1", "StatefulSet", "db", "shop")
SPEC = ("spec", "template", "spec")

NEEDS = Finding(
    "needs-scheduling",
    "error",
    "add toleration kubernetes.io/arch=arm64:NoSchedule",
    source="deploy/web.yaml",
    line=18,
    resource=WEB,
    path=SPEC,
)
CONFLICT = Finding(
    "no-common-platform",
    "error",
    "no platform runs every image",
    source="deploy/db.yaml",
    line=9,
    resource=DB,
    path=SPEC,
)
UNRESOLVED = Finding(
    "unresolved-image",
    "warning",
    "image 'registry.test/x:1' of container 'x' could not be resolved: not found",
    source="deploy/web.yaml",
    line=22,
    resource=WEB,
    path=(*SPEC, "containers", 1, "image"),
    image="registry.test/x:1",
)


def gitlab(*problems: Finding) -> list[dict[str, object]]:
    return validate_gitlab_report(format_gitlab(CheckResult([], list(problems))))


def test_gitlab_report_is_valid_and_maps_severities() -> None:
    entries = gitlab(NEEDS, CONFLICT, UNRESOLVED)
    assert [(e["check_name"], e["severity"]) for e in entries] == [
        ("needs-scheduling", "major"),
        ("no-common-platform", "critical"),
        ("unresolved-image", "minor"),
    ]
    assert entries[0]["description"] == (
        "Deployment shop/web: add toleration kubernetes.io/arch=arm64:NoSchedule"
    )
    assert entries[0]["location"] == {"path": "deploy/web.yaml", "lines": {"begin": 18}}
    assert len({e["fingerprint"] for e in entries}) == 3


def test_gitlab_report_of_a_passing_check_is_an_empty_array() -> None:
    assert gitlab() == []
    assert format_gitlab(CheckResult([], [])) == "[]\n"


def test_gitlab_fingerprint_ignores_line_and_message() -> None:
    """GitLab compares fingerprints between the branch and its target: a finding whose lines
    moved, or whose wording changed, is the same finding."""
    (before,) = gitlab(NEEDS)
    (moved,) = gitlab(replace(NEEDS, line=40, message="require node affinity ..."))
    assert moved["fingerprint"] == before["fingerprint"]


@pytest.mark.parametrize(
    "changed",
    [
        replace(NEEDS, rule="scheduling-conflict"),
        replace(NEEDS, source="deploy/other.yaml"),
        replace(NEEDS, resource=replace(WEB, name="web2")),
        replace(NEEDS, resource=replace(WEB, namespace="prod")),
        replace(NEEDS, resource=replace(WEB, kind="StatefulSet")),
        replace(NEEDS, path=(*SPEC, "containers", 0, "image")),
    ],
)
def test_gitlab_fingerprint_follows_rule_file_resource_and_field(changed: Finding) -> None:
    assert gitlab(changed)[0]["fingerprint"] != gitlab(NEEDS)[0]["fingerprint"]


def test_gitlab_findings_about_the_same_field_stay_apart() -> None:
    entries = gitlab(NEEDS, replace(NEEDS, message="and something else"))
    assert len({e["fingerprint"] for e in entries}) == 2
    assert entries == gitlab(NEEDS, replace(NEEDS, message="and something else"))


def test_gitlab_report_without_a_line_or_a_file() -> None:
    """A finding with no line is put on line 1; one about no file at all (the log has it) is
    left out: GitLab drops an entry without a path."""
    (entry,) = gitlab(replace(NEEDS, line=None), Finding("cache-problem", "warning", "full"))
    assert entry["location"] == {"path": "deploy/web.yaml", "lines": {"begin": 1}}


def test_markdown_summary_has_verdict_counts_problems_and_what_to_run() -> None:
    command = "kmultiarch fix --config 'my policy.yaml' deploy/web.yaml"
    summary = format_markdown(CheckResult([], [NEEDS, UNRESOLVED], fix_command=command))
    assert summary.startswith("## kmultiarch check failed\n")
    assert "| severity | where | resource | problem | rule |" in summary
    # Paths and resources are code spans: copied as they are, never links (issues 28, 36).
    assert "| error | `deploy/web.yaml:18` | `Deployment shop/web` |" in summary
    assert "- needs-scheduling (1): Run `kmultiarch fix FILE`" in summary
    assert "- unresolved-image (1): Check that the image exists" in summary
    assert f"```sh\n{command}\n```" in summary, "the command as check made it"
    assert "check FAILED" in summary


def test_markdown_summary_of_a_passing_check() -> None:
    summary = format_markdown(CheckResult([], []))
    assert summary.startswith("## kmultiarch check passed\n")
    assert "Problems" not in summary and "What to do" not in summary


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        # A word a renderer would link by itself is a code span (issues 28, 36).
        ("[click](https://evil.example)", "\\[`click](https://evil.example`)"),
        ("![x](https://evil.example/p.png)", "`![x](https://evil.example/p.png`)"),
        ("see www.evil.example, now", "see `www.evil.example`, now"),
        ("<img src=x onerror=alert(1)>", "&lt;img src=x onerror=alert(1)&gt;"),
        ("a|b", r"a\|b"),
        (
            "**bold** _em_ ~~gone~~ `code` $x$ # h",
            r"\*\*bold\*\* \_em\_ \~\~gone\~\~ \`code\` \$x\$ \# h",
        ),
        ("line\nbreak", r"line\\nbreak"),
        ("\x1b[31mred", r"\\x1b\[31mred"),
    ],
)
def test_markdown_shows_input_as_text(text: str, shown: str) -> None:
    assert markdown_text(text) == shown


def test_markdown_fences_outlast_backticks_in_file_names() -> None:
    hostile = replace(NEEDS, source="deploy/```\n<script>.yaml")
    command = shell_join(["kmultiarch", "fix", hostile.source])  # as check's CLI makes it
    summary = format_markdown(CheckResult([], [hostile], fix_command=command))
    fence = next(line for line in summary.splitlines() if line.startswith("````"))
    assert fence == "````sh"
    assert "````deploy/```\\n<script>.yaml:18````" in summary  # a code span, shown as it is
    html = cmarkgfm.github_flavored_markdown_to_html(summary)
    assert "<script" not in html and "<code>deploy/```\\n&lt;script&gt;.yaml:18</code>" in html
    assert json.dumps(summary)  # one string, nothing binary
