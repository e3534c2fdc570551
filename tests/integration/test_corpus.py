"""The real-world corpus (../shared/corpus: 43 rendered public charts and manifests) through the
engine, for three clusters of images: every image amd64-only, every image multi-arch, and a
mix. Every file must come out semantically identical but for the scheduling fields of its pod
specs, idempotent, with unchanged documents byte for byte."""

from __future__ import annotations

import copy
import zlib
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest
from support.corpus import corpus_files, require_corpus

from kmultiarch.api import mutate_text
from kmultiarch.core.platform import Platform
from kmultiarch.core.policy import Policy
from kmultiarch.core.reference import ImageRef
from kmultiarch.core.resolution import Resolution
from kmultiarch.core.workloads import SCHEDULING_FIELDS, find_workloads
from kmultiarch.errors import ManifestStreamError
from kmultiarch.yaml.stream import read_stream

AMD64 = Platform("linux", "amd64")
ARM64 = Platform("linux", "arm64")


def _resolver(choose: Callable[[ImageRef], frozenset[Platform]]) -> Callable[..., Any]:
    def resolve(references: list[ImageRef]) -> Mapping[ImageRef, Resolution]:
        return {
            reference: Resolution(reference, choose(reference), "sha256:" + "0" * 64)
            for reference in references
        }

    return resolve


CLUSTERS = {
    "amd64-only": _resolver(lambda _: frozenset({AMD64})),
    "multi-arch": _resolver(lambda _: frozenset({AMD64, ARM64})),
    # A stable mix: about a third of the images lack arm64.
    "mixed": _resolver(
        lambda ref: frozenset({AMD64} if zlib.crc32(str(ref).encode()) % 3 == 0 else {AMD64, ARM64})
    ),
}


def _without_scheduling(value: object) -> object:
    """``value`` with the scheduling fields of every pod spec (and pod-template annotations
    kmultiarch may add) removed."""
    stripped = copy.deepcopy(value)
    for workload in find_workloads(stripped):
        for target in workload.targets:
            holder = stripped
            for part in target.path:
                holder = holder[part]  # type: ignore[index]
            assert isinstance(holder, dict)
            for field in SCHEDULING_FIELDS:
                holder.pop(field, None)
    return stripped


FILES = corpus_files()


@pytest.mark.parametrize("path", FILES, ids=[path.name for path in FILES])
@pytest.mark.parametrize("cluster", list(CLUSTERS))
def test_corpus_file(path: Path, cluster: str) -> None:
    require_corpus()
    text = path.read_text(encoding="utf-8")
    resolve = CLUSTERS[cluster]
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
    edited = [
        outcome
        for outcome in result.documents[path.name]
        if outcome.new_text is not None and outcome.new_text != outcome.document.text
    ]
    assert changed == len(edited)
    assert {pod.document_index for pod in result.pods if pod.status == "changed"} == {
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
    require_corpus()
    changed_pods = 0
    for path in FILES:
        if "duplicate" in path.name:
            continue
        result = mutate_text(path.read_text(encoding="utf-8"), Policy(), resolve=CLUSTERS[cluster])
        for pod in result.pods:
            if pod.status == "changed":
                assert pod.plan is not None
                assert any(added in str(op["path"]) for op in pod.plan.operations)
                changed_pods += 1
    assert changed_pods > 300
