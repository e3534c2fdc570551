"""``kmultiarch check --output gitlab``: GitLab's code quality report, a JSON array of issues
(``description``, ``check_name``, ``fingerprint``, ``severity``, ``location.path``,
``location.lines.begin``) that a job hands over with ``artifacts: reports: codequality:``.

Made from the same findings as every other format of ``check``. The fingerprint is how GitLab
tells a finding of this pipeline from one of the target branch's: it hashes what the finding is
about (rule, file, resource, field), never its line or its wording, so a finding stays the same
finding when lines move above it or a message is reworded."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from kmultiarch.assess.assessment import CheckResult
from kmultiarch.core.findings import NO_COMMON_PLATFORM, SCHEDULING_CONFLICT, Finding
from kmultiarch.output import display_path

#: GitLab's severities are info, minor, major, critical and blocker. An error fails the gate
#: and is major; a pod whose images run on no node it may land on cannot be fixed by
#: ``kmultiarch fix`` and is critical; a warning is minor.
SEVERITIES = {"error": "major", "warning": "minor", "info": "info"}
CRITICAL_RULES = frozenset({NO_COMMON_PLATFORM, SCHEDULING_CONFLICT})


def severity(problem: Finding) -> str:
    if problem.severity == "error" and problem.rule in CRITICAL_RULES:
        return "critical"
    return SEVERITIES[problem.severity]


def fingerprint_fields(problem: Finding) -> tuple[str, ...]:
    """What identifies a finding across runs: its rule, file, resource and field."""
    resource = problem.resource
    return (
        problem.rule,
        display_path(problem.source),
        resource.kind if resource else "",
        resource.namespace if resource else "",
        resource.shown_name if resource else "",
        problem.field_path or "",
    )


def format_gitlab(result: CheckResult) -> str:
    issues: list[dict[str, Any]] = []
    seen: dict[tuple[str, ...], int] = {}
    for problem in result.problems:
        if not problem.source:
            continue  # about no file (a cache, the run): GitLab drops an entry without a path
        fields = fingerprint_fields(problem)
        # Two findings about the same field (rare) stay two issues: the second and later are
        # numbered in the order check gives them, which is the same on every run.
        occurrence = seen.get(fields, 0)
        seen[fields] = occurrence + 1
        key = json.dumps([*fields, occurrence] if occurrence else list(fields))
        issues.append(
            {
                "description": problem.headline,
                "check_name": problem.rule,
                "fingerprint": hashlib.sha256(key.encode()).hexdigest(),
                "severity": severity(problem),
                "location": {
                    "path": display_path(problem.source),
                    "lines": {"begin": problem.line or 1},
                },
            }
        )
    return json.dumps(issues, indent=2) + "\n"
