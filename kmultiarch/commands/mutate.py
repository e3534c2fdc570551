"""``kmultiarch mutate [PATH...]``: the transformed stream on stdout, or the patches."""

from __future__ import annotations

import json
import re
import sys
from dataclasses import replace
from typing import TYPE_CHECKING

from kmultiarch.engine import EngineResult, Finding, run, summarise
from kmultiarch.inputs import STDIN_NAME, collect_inputs, write_atomically
from kmultiarch.reference import ImageRef

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

    from kmultiarch.cache import ResolutionCache
    from kmultiarch.cli import RunOptions
    from kmultiarch.engine import InputSource
    from kmultiarch.policy import Policy
    from kmultiarch.resolver import Resolution


def resolve_and_run(
    options: RunOptions, sources: list[InputSource], policy: Policy, *, edit: bool = True
) -> EngineResult:
    """Run the engine with the resolver the options describe; report cache warnings. With
    ``edit=False`` the changes are decided but no document is edited (check, report)."""
    from kmultiarch.cli import warn
    from kmultiarch.engine import read_sources, run_documents

    cache = options.open_cache()
    try:
        resolve = resolve_function(options, policy, cache)
        result = (
            run(sources, policy, resolve)
            if edit
            else run_documents(sources, read_sources(sources), policy, resolve, edit=False)
        )
        if not options.quiet:
            for message in cache.warnings:
                warn(message)
    finally:
        cache.close()
    return result


def resolve_function(
    options: RunOptions, policy: Policy, cache: ResolutionCache
) -> Callable[[list[ImageRef]], Mapping[ImageRef, Resolution]]:
    """The engine's ``resolve``: the options' resolver, with a progress line on a terminal."""
    from kmultiarch.progress import progress_line

    resolver = options.resolver(policy, cache)

    def resolve(references: list[ImageRef]) -> Mapping[ImageRef, Resolution]:
        progress = progress_line(
            options.quiet, lambda: resolver.stats.cache_hits + resolver.stats.locked
        )
        try:
            return resolver.resolve(references, progress)
        finally:
            if progress is not None:
                progress.finish()

    return resolve


def report_findings(result: EngineResult, options: RunOptions) -> None:
    from kmultiarch.cli import fail, warn

    for finding in result.findings:
        line = f"{finding_location(result, finding)}: {finding.message}"
        if finding.severity == "error":
            fail(line)
        elif not options.quiet:
            warn(line)


#: Helm 4 names each post-rendered document's template in this annotation; Helm 3 and
#: ``helm template`` write a ``# Source: <template>`` comment before each document.
HELM_FILENAME_ANNOTATION = "postrenderer.helm.sh/postrender-filename"
_HELM_SOURCE_COMMENT = re.compile(r"^# Source: (\S.*?)\s*$", re.MULTILINE)


def finding_location(result: EngineResult, finding: Finding) -> str:
    """Where a finding is: ``FILE:LINE: Kind name``; for a Helm stream on stdin, the chart
    template it came from instead of ``<stdin>:LINE``."""
    if finding.source == STDIN_NAME and finding.document_index is not None:
        template = helm_template_of(result, finding.source, finding.document_index)
        if template:
            return replace(finding, source=template, line=None).location()
    return finding.location()


def helm_template_of(result: EngineResult, source: str, index: int) -> str | None:
    outcomes = result.documents.get(source, [])
    if index >= len(outcomes):
        return None
    document = outcomes[index].document
    value = document.value
    metadata = value.get("metadata") if isinstance(value, dict) else None
    annotations = metadata.get("annotations") if isinstance(metadata, dict) else None
    if isinstance(annotations, dict) and isinstance(annotations.get(HELM_FILENAME_ANNOTATION), str):
        return str(annotations[HELM_FILENAME_ANNOTATION])
    match = _HELM_SOURCE_COMMENT.search(document.text)
    return match.group(1) if match else None


def mutate(options: RunOptions, paths: list[str], output: str, in_place: bool) -> int:
    from kmultiarch.cli import fail

    policy = options.load_policy()
    sources = collect_inputs(paths)
    result = resolve_and_run(options, sources, policy)
    report_findings(result, options)
    if result.failed:
        fail("nothing was written: fix the errors above or set failurePolicy: Ignore")
        return 1
    if output == "patch":
        sys.stdout.write(json.dumps(patches(result), indent=2) + "\n")
    elif in_place:
        for name in result.changed_sources():
            write_atomically(name, result.output_of(name))
    else:
        sys.stdout.write(result.stream())
    sys.stdout.flush()
    if not options.quiet:
        from kmultiarch.cli import note

        note(summarise(result))
    return 0


def patches(result: EngineResult) -> list[dict[str, object]]:
    """One entry per changed document: its identity and its RFC 6902 operations."""
    entries: list[dict[str, object]] = []
    for source, outcomes in result.documents.items():
        for outcome in outcomes:
            if not outcome.operations:
                continue
            value = outcome.document.value
            metadata = value.get("metadata", {}) if isinstance(value, dict) else {}
            entries.append(
                {
                    "source": source,
                    "document": outcome.document.index,
                    "apiVersion": value.get("apiVersion") if isinstance(value, dict) else None,
                    "kind": value.get("kind") if isinstance(value, dict) else None,
                    "name": metadata.get("name") if isinstance(metadata, dict) else None,
                    "namespace": metadata.get("namespace") if isinstance(metadata, dict) else None,
                    "patch": outcome.operations,
                }
            )
    return entries
