"""documents -> images -> resolve -> decide -> edit -> report, one module per step.

The engine is I/O-free but for the ``resolve`` function it is given: adapters (CLI, KRM
function, admission server, pre-commit hooks) read the inputs, build the resolver and format
the result. It returns data: new document texts, per-pod outcomes and findings; it never
prints. ``pipeline`` runs the steps in order: ``collect`` (the pods and images of the
documents in scope, and the findings about the documents themselves), ``decide`` (a pod's
plan from its images' platforms), ``edit`` (the outcomes and the edits applied to the
texts) and ``locate`` (each finding on the line of the field it is about; digests
repinned). The public names are imported from here.
"""

from __future__ import annotations

from kmultiarch.engine.collect import (
    drift_findings,
    read_sources,
    unknown_kind_findings,
    with_node_pools,
)
from kmultiarch.engine.edit import (
    DocumentOutcome,
    EngineResult,
    ImageOutcome,
    PodOutcome,
    summarise,
)
from kmultiarch.engine.locate import Locator, located
from kmultiarch.engine.pipeline import PinsLeft, pins_left, run, run_documents

__all__ = [
    "DocumentOutcome",
    "EngineResult",
    "ImageOutcome",
    "Locator",
    "PinsLeft",
    "PodOutcome",
    "drift_findings",
    "located",
    "pins_left",
    "read_sources",
    "run",
    "run_documents",
    "summarise",
    "unknown_kind_findings",
    "with_node_pools",
]
