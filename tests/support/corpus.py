"""The real-world corpus: 43 rendered public charts and manifests in ``../shared/corpus``
(``SOURCES.md`` there says where each comes from). CI has it beside the checkout; elsewhere
``$KMULTIARCH_CORPUS`` may point at it. Missing: tests skip, except in CI where they fail."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from .tools import in_ci

REPO = Path(__file__).resolve().parents[2]


def corpus_dir() -> Path | None:
    configured = os.environ.get("KMULTIARCH_CORPUS")
    candidates = [Path(configured)] if configured else []
    candidates += [parent / "shared" / "corpus" for parent in REPO.parents]
    for candidate in candidates:
        if (candidate / "SOURCES.md").is_file():
            return candidate
    return None


def corpus_files() -> list[Path]:
    directory = corpus_dir()
    return sorted(directory.glob("*.yaml")) if directory is not None else []


def require_corpus() -> Path:
    directory = corpus_dir()
    if directory is None:
        if in_ci():
            pytest.fail("../shared/corpus is missing: CI must test against the real manifests")
        pytest.skip("../shared/corpus is not beside this checkout (set KMULTIARCH_CORPUS)")
    assert directory is not None
    return directory
