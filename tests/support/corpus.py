"""The real-world corpora, in this repository: ``tests/corpus/corpus`` (43 rendered public charts
and manifests) and ``tests/corpus/corpus2`` (25 more, rich in operators' custom resources, Windows
and JSON files). ``SOURCES.md`` in each says how every file was made (repository, commit, the
``helm template`` or ``kubectl kustomize`` command) and under which licence, ``platforms.json``
gives each image a platform set; tests/corpus/README.md tells the rest. The tests read them from
the checkout only: a corpus that is missing or empty fails the tests that use it, never skips."""

from __future__ import annotations

import json
import zlib
from collections.abc import Callable, Mapping
from functools import cache
from pathlib import Path
from typing import Any

from kmultiarch.core.images.platform import Platform
from kmultiarch.core.images.reference import ImageRef
from kmultiarch.core.resolution import Resolution

REPO = Path(__file__).resolve().parents[2]
#: Where the corpora are: one folder each, by name.
CORPUS_ROOT = REPO / "tests" / "corpus"
CORPORA = ("corpus", "corpus2")


class MissingCorpusError(RuntimeError):
    """A corpus folder of the checkout is missing or empty: the checkout is incomplete."""


def corpus_dir(name: str = "corpus") -> Path:
    """The folder of a corpus in this checkout; raises when it is not there."""
    if name not in CORPORA:
        raise KeyError(f"no corpus {name!r}: the corpora are {', '.join(CORPORA)}")
    directory = CORPUS_ROOT / name
    if not (directory / "SOURCES.md").is_file():
        raise MissingCorpusError(
            f"{directory} is missing: the corpora are part of the repository (tests/corpus/)"
        )
    return directory


def corpus_files(name: str = "corpus") -> list[Path]:
    """The manifests of a corpus, sorted; raises when there are none."""
    files = sorted(corpus_dir(name).glob("*.yaml"))
    if not files:
        raise MissingCorpusError(f"{CORPUS_ROOT / name} holds no manifests")
    return files


def all_corpus_files() -> list[Path]:
    """Every file of both corpora."""
    return [path for name in CORPORA for path in corpus_files(name)]


@cache
def declared_platforms(directory: Path) -> dict[str, list[str]]:
    """``platforms.json`` of a corpus: normalised image reference -> platforms."""
    document = json.loads((directory / "platforms.json").read_text(encoding="utf-8"))
    return {image: entry["platforms"] for image, entry in document["images"].items()}


AMD64 = Platform("linux", "amd64")
ARM64 = Platform("linux", "arm64")


def synthetic_resolver(
    choose: Callable[[ImageRef], frozenset[Platform]],
) -> Callable[[list[ImageRef]], Mapping[ImageRef, Resolution]]:
    """A resolver giving every image the platforms ``choose`` picks for it."""

    def resolve(references: list[ImageRef]) -> Mapping[ImageRef, Resolution]:
        return {
            reference: Resolution(reference, choose(reference), "sha256:" + "0" * 64)
            for reference in references
        }

    return resolve


#: Synthetic clusters for the corpora: every image single-arch, every image multi-arch, and a
#: stable mix where about a third of the images lack arm64.
CLUSTERS: dict[str, Callable[..., Any]] = {
    "amd64-only": synthetic_resolver(lambda _: frozenset({AMD64})),
    "multi-arch": synthetic_resolver(lambda _: frozenset({AMD64, ARM64})),
    "mixed": synthetic_resolver(
        lambda ref: frozenset({AMD64} if zlib.crc32(str(ref).encode()) % 3 == 0 else {AMD64, ARM64})
    ),
}
