"""``kmultiarch mutate [PATH...]``: the transformed stream on stdout, or the patches."""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING

from kmultiarch.cli.pipeline import report_findings, resolve_and_run
from kmultiarch.engine import EngineResult, summarise
from kmultiarch.io.inputs import collect_inputs, write_all_atomically

if TYPE_CHECKING:
    from kmultiarch.cli.session import RunOptions


def mutate(options: RunOptions, paths: list[str], output: str, in_place: bool) -> int:
    from kmultiarch.cli.session import fail

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
        write_all_atomically({name: result.output_of(name) for name in result.changed_sources()})
    else:
        for chunk in result.stream_chunks():
            sys.stdout.write(chunk)
    sys.stdout.flush()
    if not options.quiet:
        from kmultiarch.cli.session import note

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
                    "patch": [operation.as_json() for operation in outcome.operations],
                }
            )
    return entries
