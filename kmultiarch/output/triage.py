"""``kmultiarch triage`` output, in ``check``'s formats: text grouped per workload, JSON,
Markdown (a job summary), SARIF 2.1.0 and GitHub annotations, located on the manifests' lines.

Everything quoted from the cluster (names, messages, images) is outside text: made printable
for terminals and logs, escaped for Markdown and workflow commands, as ``check`` does."""

from __future__ import annotations

import json
from typing import Any

from kmultiarch.assess.triage import TriagedFailure, TriageResult
from kmultiarch.core.findings import count_of
from kmultiarch.core.triage.diagnosis import CAUSES, FAILURE_TEXT
from kmultiarch.output import display_path
from kmultiarch.output.check import sarif_log, sarif_rule
from kmultiarch.output.markdown import code_span, markdown_text
from kmultiarch.output.safe import github_data, github_property, printable


def summary_line(result: TriageResult) -> str:
    read = (
        f"read {count_of(result.objects, 'object')} "
        f"({count_of(result.pods, 'pod')} not running or failed, "
        f"{count_of(result.nodes, 'node')}, {count_of(result.events, 'event')} kept)"
    )
    if not result.failures:
        return f"triage found no architecture failure; {read}"
    causes = ", ".join(f"{count} {cause}" for cause, count in result.counts().items())
    pods = sum(1 + len(failure.others) for failure in result.failures)
    return (
        f"triage FAILED: {count_of(len(result.failures), 'architecture failure')} "
        f"({count_of(pods, 'pod')}) in {count_of(len(result.by_workload()), 'workload')} "
        f"({causes}); {read}"
    )


def _clipped(text: str, limit: int = 200) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _where(failure: TriagedFailure) -> str:
    if failure.source:
        return f"{display_path(failure.source)}:{failure.line}"
    return ""


def format_text(result: TriageResult) -> str:
    lines: list[str] = []
    for workload, failures in result.by_workload().items():
        first = failures[0]
        where = _where(first)
        if where:
            lines.append(f"{workload}  {where}")
        else:
            state = "not in the manifests" if result.manifests_given else "no manifests given"
            chain = " <- ".join(reversed(first.owners))
            lines.append(f"{workload}  ({state}{'; owners: ' + chain if chain else ''})")
        for failure in failures:
            on = f" on {failure.node} ({failure.node_platform or 'platform unknown'})"
            lines.append(
                f"  pod {failure.pod}{on if failure.node else ''}: "
                f"{FAILURE_TEXT.get(failure.kind, failure.kind)}"
            )
            if failure.others:
                shown = ", ".join(failure.others[:5])
                more = f" (+{len(failure.others) - 5} more)" if len(failure.others) > 5 else ""
                lines.append(f"    alike:    {shown}{more}")
            lines.append(f"    cause:    {failure.cause}: {failure.detail}")
            lines.append(f"    next:     {failure.next_step}")
            for evidence in failure.evidence:
                # Quoted whole in JSON and SARIF; here, what a line can show.
                lines.append(f'    evidence: {evidence.where}: "{_clipped(evidence.text)}"')
            for row in failure.images:
                platforms = ", ".join(row.platforms) if row.platforms is not None else "?"
                lines.append(f"    image:    {row.container}: {row.image} ({platforms})")
                if row.template_image:
                    lines.append(
                        f"              the manifests say {row.template_image}: the cluster "
                        "runs another render than the files"
                    )
        lines.append("")
    for failure in result.failures:
        where = _where(failure) or (failure.cluster_file or "<cluster>")
        lines.append(
            f"{where}: error: {failure.workload.display_name}: {failure.short} [{failure.cause}]"
        )
    if result.failures:
        lines.append("")
    lines.append(summary_line(result))
    return "\n".join(printable(line) for line in lines) + "\n"


def _failure_json(failure: TriagedFailure) -> dict[str, Any]:
    return {
        "workload": failure.workload.as_dict(),
        "source": display_path(failure.source) if failure.source else None,
        "line": failure.line,
        "owners": list(failure.owners),
        "pod": failure.pod,
        "otherPods": list(failure.others),
        "node": failure.node or None,
        "nodePlatform": failure.node_platform or None,
        "failure": failure.kind,
        "cause": failure.cause,
        "detail": failure.detail,
        "next": failure.next_step,
        "commands": list(failure.commands),
        "evidence": [
            {"where": e.where, "text": e.text, "container": e.container or None}
            for e in failure.evidence
        ],
        "images": [
            {
                "container": row.container,
                "image": row.image,
                "platforms": list(row.platforms) if row.platforms is not None else None,
                "manifestImage": row.template_image,
            }
            for row in failure.images
        ],
        "clusterFile": failure.cluster_file,
    }


def format_json(result: TriageResult) -> str:
    document = {
        "failed": result.failed,
        "summary": {
            "failures": len(result.failures),
            "workloads": len(result.by_workload()),
            "causes": result.counts(),
            "objectsRead": result.objects,
            "podsKept": result.pods,
            "nodes": result.nodes,
            "events": result.events,
        },
        "failures": [_failure_json(failure) for failure in result.failures],
    }
    return json.dumps(document, indent=2) + "\n"


def format_github(result: TriageResult) -> str:
    """One ``::error`` per failure, on the manifest's line when the workload is there."""
    lines = []
    for failure in result.failures:
        properties = {"title": f"kmultiarch triage {failure.cause}"}
        if failure.source and not failure.source.startswith("<"):
            properties = {
                "file": display_path(failure.source),
                "line": str(failure.line),
                **properties,
            }
        rendered = ",".join(
            f"{key}={github_property(printable(value))}" for key, value in properties.items()
        )
        lines.append(f"::error {rendered}::{github_data(printable(failure.headline))}")
    lines.append(printable(summary_line(result)))
    return "\n".join(lines) + "\n"


def format_sarif(result: TriageResult) -> str:
    rule_ids = list(CAUSES)
    rules = [sarif_rule(rule, "error") for rule in CAUSES.values()]
    results = []
    for failure in result.failures:
        logical = _logical_name(failure)
        location: dict[str, Any] = {
            "logicalLocations": [{"fullyQualifiedName": logical, "kind": "resource"}]
        }
        artifact = _artifact(failure)
        if artifact is not None:
            physical: dict[str, Any] = {"artifactLocation": {"uri": artifact}}
            if failure.source and failure.line is not None:
                physical["region"] = {"startLine": failure.line}
            location["physicalLocation"] = physical
        results.append(
            {
                "ruleId": failure.cause,
                "ruleIndex": rule_ids.index(failure.cause),
                "level": "error",
                "message": {"text": failure.headline},
                "locations": [location],
                "partialFingerprints": {
                    "kmultiarch/triage/v1": f"{failure.cause}:{logical}:{failure.kind}"
                },
                "properties": {
                    "pod": failure.pod,
                    "otherPods": list(failure.others),
                    "failure": failure.kind,
                },
            }
        )
    return sarif_log(rules, results)


def _artifact(failure: TriagedFailure) -> str | None:
    from urllib.parse import quote

    source = failure.source or failure.cluster_file
    if not source or source.startswith("<"):
        return None
    return quote(display_path(source), safe="/", errors="surrogateescape")


def _logical_name(failure: TriagedFailure) -> str:
    workload = failure.workload
    namespace = f"{workload.namespace}/" if workload.namespace else ""
    return f"{workload.kind}/{namespace}{workload.shown_name}"


def format_markdown(result: TriageResult) -> str:
    verdict = "failed" if result.failed else "passed"
    lines = [f"## kmultiarch triage {verdict}", "", markdown_text(summary_line(result)), ""]
    if result.failures:
        lines += [
            "| workload | where | pod | failure | cause | next |",
            "|---|---|---|---|---|---|",
        ]
        for failure in result.failures:
            where = _where(failure)
            lines.append(
                f"| {code_span(failure.workload.display_name, in_table=True)} "
                f"| {code_span(where, in_table=True) if where else 'not in the manifests'} "
                f"| {code_span(failure.pod, in_table=True)} "
                f"| {markdown_text(FAILURE_TEXT.get(failure.kind, failure.kind), in_table=True)} "
                f"| {markdown_text(failure.cause, in_table=True)} "
                f"| {markdown_text(failure.next_step, in_table=True, code=failure.commands)} |"
            )
        lines.append("")
        lines += ["### Evidence", ""]
        for failure in result.failures:
            lines.append(f"- {code_span(failure.pod)}: {markdown_text(failure.detail)}")
            for evidence in failure.evidence:
                lines.append(
                    f"  - {markdown_text(evidence.where)}: "
                    f"{markdown_text(chr(34) + evidence.text + chr(34))}"
                )
        lines.append("")
        lines += ["### What to do", ""]
        for cause in dict.fromkeys(failure.cause for failure in result.failures):
            # The rule's help is kmultiarch's own Markdown (code spans for commands).
            lines.append(f"- {markdown_text(cause)}: {CAUSES[cause].help}")
        lines.append("")
    return "\n".join(lines).rstrip("\n") + "\n"


FORMATTERS = {
    "text": format_text,
    "json": format_json,
    "github": format_github,
    "sarif": format_sarif,
    "markdown": format_markdown,
}

__all__ = ["FORMATTERS", "summary_line"]
