"""The real-world corpora: ``../shared/corpus`` (43 rendered public charts and manifests) and
``../shared/corpus2`` (25 more, rich in operators' custom resources, Windows and JSON files);
``SOURCES.md`` in each says where every file comes from, ``platforms.json`` gives each image a
platform set. CI has them beside the checkout; elsewhere ``$KMULTIARCH_CORPUS`` and
``$KMULTIARCH_CORPUS2`` may point at them. Missing: tests skip, except in CI where they fail."""

from __future__ import annotations

import json
import os
import zlib
from collections.abc import Callable, Mapping
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from kmultiarch.core.platform import Platform
from kmultiarch.core.reference import ImageRef
from kmultiarch.core.resolution import Resolution

from .tools import in_ci

REPO = Path(__file__).resolve().parents[2]
#: The corpora, by the name of their folder in ../shared, with the variable that may move them.
CORPORA = {"corpus": "KMULTIARCH_CORPUS", "corpus2": "KMULTIARCH_CORPUS2"}


def corpus_dir(name: str = "corpus") -> Path | None:
    configured = os.environ.get(CORPORA[name])
    candidates = [Path(configured)] if configured else []
    candidates += [parent / "shared" / name for parent in REPO.parents]
    for candidate in candidates:
        if (candidate / "SOURCES.md").is_file():
            return candidate
    return None


def corpus_files(name: str = "corpus") -> list[Path]:
    directory = corpus_dir(name)
    return sorted(directory.glob("*.yaml")) if directory is not None else []


def all_corpus_files() -> list[Path]:
    """Every file of both corpora."""
    return [path for name in CORPORA for path in corpus_files(name)]


def require_corpus(name: str = "corpus") -> Path:
    directory = corpus_dir(name)
    if directory is None:
        if in_ci():
            pytest.fail(f"../shared/{name} is missing: CI must test against the real manifests")
        pytest.skip(f"../shared/{name} is not beside this checkout (set {CORPORA[name]})")
    assert directory is not None
    return directory


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
