"""``kmultiarch check`` output: a text table, JSON, GitHub workflow annotations, SARIF 2.1.0."""

from __future__ import annotations

import json
import re
from typing import Any

from kmultiarch.assess.assessment import CheckResult, PodVerdict
from kmultiarch.core.findings import RULES, Finding, Rule, count_of
from kmultiarch.output import display_path, table
from kmultiarch.output.safe import github_data, github_property, github_verbatim, printable
from kmultiarch.version import __version__

VERDICT_TEXT = {
    "ok": "ok",
    "needs-change": "NEEDS CHANGE",
    "no-common-platform": "NO COMMON PLATFORM",
    "scheduling-conflict": "CONFLICT",
    "unresolved": "UNRESOLVED",
    "chosen-by-operator": "IMAGE CHOSEN BY OPERATOR",
    "malformed": "MALFORMED FIELD",
    "skipped": "skipped (annotation)",
    "excluded": "excluded (policy)",
}
SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"


def summary_line(result: CheckResult) -> str:
    counts = result.counts()
    parts = [count_of(len(result.pods), "pod spec")]
    parts += [f"{counts[key]} {key}" for key in VERDICT_TEXT if counts.get(key)]
    errors = sum(1 for p in result.problems if p.severity == "error")
    warnings = len(result.problems) - errors
    verdict = "FAILED" if result.failed else "passed"
    return (
        f"check {verdict}: {', '.join(parts)}; {count_of(errors, 'error')}, "
        f"{count_of(warnings, 'warning')}"
    )


def format_text(result: CheckResult) -> str:
    rows: list[tuple[str, ...]] = []
    for pod in result.pods:
        verdict = VERDICT_TEXT[pod.verdict]
        containers = pod.containers or ()
        if not containers:
            rows.append((pod.workload, "-", "-", "-", verdict))
        for position, row in enumerate(containers):
            platforms = _cluster_platforms(row.platforms, result.cluster)
            rows.append(
                (
                    pod.workload if position == 0 else "",
                    row.name or "-",
                    row.image,
                    platforms,
                    verdict if position == 0 else "",
                )
            )
    lines = table(rows, ("WORKLOAD", "CONTAINER", "IMAGE", "PLATFORMS", "VERDICT")) if rows else []
    if result.problems:
        lines.append("")
    for problem in result.problems:
        lines.append(
            f"{display_path(problem.source)}:{problem.line}: {problem.severity}: "
            f"{problem.headline} [{problem.rule}]"
        )
    for diff in result.diffs.values():
        lines.append("")
        # The manifests' own lines, shown for reading (JSON gives the patch byte for byte).
        lines.extend(re.split(r"\r\n|\r|\n", diff.rstrip("\n")))
    lines.append("")
    lines.append(summary_line(result))
    return "\n".join(printable(line) for line in lines) + "\n"


def _cluster_platforms(platforms: tuple[str, ...] | None, cluster: tuple[str, ...]) -> str:
    """The image's platforms that the cluster has, and how many others (JSON lists them all)."""
    if platforms is None:
        return "?"
    shown = [p for p in platforms if p in cluster] if cluster else list(platforms)
    others = len(platforms) - len(shown)
    text = ", ".join(shown) or "none of the cluster's"
    return f"{text} (+{others} more)" if others else text


def format_json(result: CheckResult) -> str:
    document: dict[str, Any] = {
        "passed": not result.failed,
        "summary": {"podSpecs": len(result.pods), **result.counts()},
        "pods": [_pod_json(pod) for pod in result.pods],
        "problems": [_problem_json(problem) for problem in result.problems],
    }
    if result.diffs:
        document["diffs"] = {display_path(k): v for k, v in result.diffs.items()}
    return json.dumps(document, indent=2) + "\n"


def _pod_json(pod: PodVerdict) -> dict[str, Any]:
    return {
        "source": display_path(pod.source),
        "line": pod.line,
        **pod.resource.as_dict(),
        "fieldPath": pod.field_path,
        "verdict": pod.verdict,
        "platforms": list(pod.supported),
        "changes": list(pod.changes),
        "problems": list(pod.problems),
        "containers": [
            {
                "name": row.name,
                "image": row.image,
                "reference": row.reference,
                "line": row.line,
                "platforms": list(row.platforms) if row.platforms is not None else None,
                "digest": row.digest,
                "resolvedFrom": row.resolved_from,
                "error": row.error,
            }
            for row in pod.containers
        ],
    }


def _problem_json(problem: Finding) -> dict[str, Any]:
    return {
        "rule": problem.rule,
        "level": problem.severity,
        "message": problem.headline,
        "source": display_path(problem.source),
        "line": problem.line,
        "resource": problem.resource.as_dict() if problem.resource else None,
        "fieldPath": problem.field_path,
        "image": problem.image,
        **({"suggestion": problem.suggestion} if problem.suggestion else {}),
        **({"command": problem.command} if problem.command else {}),
    }


def format_github(result: CheckResult) -> str:
    """Workflow commands (``::error file=F,line=L,title=T::message``), one per problem, then
    the diffs and a plain summary line for the log."""
    lines = []
    for problem in result.problems:
        properties = {
            "file": display_path(problem.source),
            "line": str(problem.line),
            "title": f"kmultiarch {problem.rule}",
        }
        if problem.source.startswith("<"):
            del properties["file"], properties["line"]
        rendered = ",".join(
            f"{key}={github_property(printable(value))}" for key, value in properties.items()
        )
        lines.append(f"::{problem.severity} {rendered}::{github_data(printable(problem.headline))}")
    for diff in result.diffs.values():
        # Diff lines are the manifests' own text: printed verbatim, never as commands.
        lines.extend(github_verbatim(diff))
    lines.append(summary_line(result))
    return "\n".join(lines) + "\n"


#: Rules whose findings are warnings unless the policy makes them errors (SARIF's default level).
_WARNING_RULES = frozenset(
    {"unresolved-image", "policy-drift", "fallback-platforms", "comments-lost", "unknown-pod-kind"}
)


def sarif_rule(rule: Rule, level: str) -> dict[str, Any]:
    """A SARIF reportingDescriptor for one of kmultiarch's rules (check's, triage's)."""
    return {
        "id": rule.id,
        "name": rule.name,
        "shortDescription": {"text": rule.summary},
        "fullDescription": {"text": f"{rule.summary}. {rule.help}"},
        "help": {"text": rule.help},
        "defaultConfiguration": {"level": level},
    }


def format_sarif(result: CheckResult) -> str:
    rule_ids = list(RULES)
    rules = [
        sarif_rule(rule, "warning" if rule.id in _WARNING_RULES else "error")
        for rule in RULES.values()
    ]
    results = []
    for problem in result.problems:
        location: dict[str, Any] = {
            "physicalLocation": {
                "artifactLocation": {"uri": _uri(problem.source)},
                "region": {"startLine": problem.line},
            },
            "logicalLocations": [
                {
                    "fullyQualifiedName": _logical_name(problem),
                    "kind": "resource",
                }
            ],
        }
        entry: dict[str, Any] = {
            "ruleId": problem.rule,
            "ruleIndex": rule_ids.index(problem.rule),
            "level": problem.severity,
            "message": {"text": problem.headline},
            "locations": [location],
            "partialFingerprints": {
                "kmultiarch/v1": f"{problem.rule}:{_logical_name(problem)}:{problem.image or ''}"
            },
        }
        if problem.image:
            entry["properties"] = {"image": problem.image}
        if problem.suggestion:
            entry["properties"] = {**entry.get("properties", {}), "suggestion": problem.suggestion}
        if problem.command:
            entry["properties"] = {**entry.get("properties", {}), "command": problem.command}
        results.append(entry)
    return sarif_log(rules, results)


def _uri(source: str) -> str:
    from urllib.parse import quote

    if source.startswith("<"):
        return "stdin"
    # A byte of a file name that is not UTF-8 is percent-encoded as itself.
    return quote(display_path(source), safe="/", errors="surrogateescape")


def _logical_name(problem: Finding) -> str:
    resource = problem.resource
    if resource is None:
        return str(problem.field_path)
    namespace = f"{resource.namespace}/" if resource.namespace else ""
    return f"{resource.kind}/{namespace}{resource.shown_name}/{problem.field_path}"


FORMATTERS = {
    "text": format_text,
    "json": format_json,
    "github": format_github,
    "sarif": format_sarif,
}


def sarif_log(rules: list[dict[str, Any]], results: list[dict[str, Any]]) -> str:
    """A SARIF 2.1.0 log of one kmultiarch run: its rules and results (check's, triage's)."""
    log = {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "kmultiarch",
                        "version": __version__,
                        "semanticVersion": __version__,
                        "rules": rules,
                    }
                },
                "results": results,
                "columnKind": "unicodeCodePoints",
            }
        ],
    }
    return json.dumps(log, indent=2) + "\n"
