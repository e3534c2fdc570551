"""The real-world corpora, in the repository (tests/corpus/corpus: 43 rendered public charts and
manifests; tests/corpus/corpus2: 25 more, rich in operators' custom resources, Windows and JSON
files; each folder's SOURCES.md gives every file's repository, commit, rendering command and
licence, tests/corpus/README.md the rest), through the engine for four clusters of images:
every image amd64-only, every image multi-arch, a mix, and the platforms each corpus's
platforms.json declares. Every file must come out semantically identical but for the scheduling
fields of its pod specs, idempotent, with unchanged documents byte for byte, and changed
documents keep every line they had but those of the scheduling fields (JSON included: only the
new lines, and a comma, are added)."""

from __future__ import annotations

import copy
import difflib
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest
from support.corpus import (
    CLUSTERS,
    CORPORA,
    corpus_dir,
    corpus_files,
    declared_platforms,
)
from yaml.nodes import MappingNode, Node, SequenceNode

from kmultiarch.api import mutate_text
from kmultiarch.core.images.platform import Platform
from kmultiarch.core.images.reference import ImageRef
from kmultiarch.core.operators.workloads import SCHEDULING_FIELDS, find_workloads
from kmultiarch.core.policy.model import Policy
from kmultiarch.core.resolution import Resolution
from kmultiarch.errors import ManifestStreamError, ResolutionError
from kmultiarch.yaml.stream import SourceDocument, read_stream


def _declared(corpus: str) -> Callable[..., Any]:
    """The platforms the corpus's platforms.json gives each image."""

    def resolve(references: list[ImageRef]) -> Mapping[ImageRef, Resolution]:
        declared = declared_platforms(corpus_dir(corpus))
        answers = {}
        for reference in references:
            platforms = declared.get(str(reference))
            answers[reference] = (
                Resolution(
                    reference,
                    frozenset(Platform.parse(p) for p in platforms),
                    "sha256:" + "0" * 64,
                )
                if platforms is not None
                else Resolution(
                    reference, error=ResolutionError(str(reference), "not in platforms.json")
                )
            )
        return answers

    return resolve


def _without_scheduling(value: object) -> object:
    """``value`` with the scheduling fields of every pod spec and operator's placement (Rook's
    bare ``nodeAffinity`` too) removed, and the mappings along a placement's path that are then
    empty (kmultiarch creates a missing ``template.pod``): what mutate may add and nothing
    else."""
    stripped = copy.deepcopy(value)
    for workload in find_workloads(stripped):
        for target in workload.targets:
            chain: list[tuple[object, str | int]] = []
            holder: object = stripped
            for part in target.path:
                if not isinstance(holder, dict | list):
                    break
                try:
                    chain.append((holder, part))
                    holder = holder[part]  # type: ignore[index]
                except (KeyError, IndexError):
                    break
            else:
                assert isinstance(holder, dict)
                for field in (*SCHEDULING_FIELDS, "nodeAffinity"):
                    holder.pop(field, None)
                for parent, part in reversed(chain[len(chain) - target.missing - 2 :]):
                    if isinstance(parent, dict) and parent.get(part) == {}:
                        del parent[part]
    return stripped


def _scheduling_lines(document: SourceDocument) -> set[int]:
    """Lines (0-based, in the document's text) of the scheduling fields of its pod specs and
    placements, and of an empty mapping a missing placement is created under (``daemonSet:
    {}`` becomes a block holding ``podTemplate``)."""
    lines: set[int] = set()
    root = document.node
    for workload in find_workloads(document.value):
        for target in workload.targets:
            node: Node | None = root
            for part in target.path[: len(target.path) - target.missing]:
                node = _child(node, part)
            if target.missing and isinstance(node, MappingNode) and not node.value:
                lines.update(range(node.start_mark.line, node.end_mark.line + 1))
            if target.missing or not isinstance(node, MappingNode):
                continue
            for key, value in node.value:
                if key.value in (*SCHEDULING_FIELDS, "nodeAffinity"):
                    lines.update(range(key.start_mark.line, value.end_mark.line + 1))
    return lines


def _child(node: Node | None, part: str | int) -> Node | None:
    if isinstance(node, MappingNode):
        return next((value for key, value in node.value if key.value == part), None)
    if isinstance(node, SequenceNode) and isinstance(part, int):
        return node.value[part]  # type: ignore[no-any-return]
    return None


def _lost_lines(old: str, new: str) -> list[int]:
    """Lines (0-based) of ``old`` that ``new`` does not keep as they were; a JSON member that
    gained a comma (a sibling now follows it) counts as kept."""
    old_lines, new_lines = old.splitlines(), new.splitlines()
    lost = []
    matcher = difflib.SequenceMatcher(None, old_lines, new_lines, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag in ("replace", "delete"):
            gained_comma = {line[:-1] for line in new_lines[j1:j2] if line.endswith(",")}
            lost.extend(i for i in range(i1, i2) if old_lines[i] not in gained_comma)
    return lost


FILES = [(name, path) for name in CORPORA for path in corpus_files(name)]


@pytest.mark.parametrize(("corpus", "path"), FILES, ids=[f"{c}/{p.name}" for c, p in FILES])
@pytest.mark.parametrize("cluster", [*CLUSTERS, "declared"])
def test_corpus_file(corpus: str, path: Path, cluster: str) -> None:
    text = path.read_text(encoding="utf-8")
    resolve = CLUSTERS[cluster] if cluster != "declared" else _declared(corpus)
    try:
        result = mutate_text(text, Policy(), resolve=resolve, source=path.name)
    except ManifestStreamError as exc:
        # The corpus' two files with duplicate keys are refused, naming file and line.
        assert "duplicate" in path.name, exc
        assert f"{path.name}:" in str(exc) and "duplicate key" in str(exc)
        return
    output = result.stream()
    before = read_stream(text, "before")
    after = read_stream(output, "after")
    assert len(before) == len(after)
    changed = 0
    for old, new in zip(before, after, strict=True):
        if old.text == new.text:
            continue
        changed += 1
        assert _without_scheduling(new.value) == _without_scheduling(old.value), old.start_line
        lost = set(_lost_lines(old.text, new.text)) - _scheduling_lines(old)
        assert not lost, (old.start_line, [old.text.splitlines()[i] for i in sorted(lost)][:5])
    edited = [
        outcome
        for outcome in result.documents[path.name]
        if outcome.new_text is not None and outcome.new_text != outcome.document.text
    ]
    assert changed == len(edited)
    assert {pod.document_index for pod in result.pods if pod.writes} == {
        outcome.document.index for outcome in edited
    }
    again = mutate_text(output, Policy(), resolve=resolve, source=path.name)
    assert again.stream() == output, "idempotent"
    assert again.changed_sources() == []


@pytest.mark.parametrize(
    ("cluster", "added"), [("amd64-only", "affinity"), ("multi-arch", "tolerations")]
)
def test_the_corpus_exercises_each_decision(cluster: str, added: str) -> None:
    """Not vacuous: across the corpus, hundreds of pod specs get the field this cluster needs."""
    changed_pods = 0
    for _, path in FILES:
        if "duplicate" in path.name:
            continue
        result = mutate_text(path.read_text(encoding="utf-8"), Policy(), resolve=CLUSTERS[cluster])
        for pod in result.pods:
            if pod.status == "needs-change":
                assert pod.plan is not None
                assert any(added in str(op.as_json()).lower() for op in pod.plan.operations)
                changed_pods += 1
    assert changed_pods > 300
