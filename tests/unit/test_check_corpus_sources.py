"""scripts/check-corpus-sources, which .ci/run runs before the tests: it passes on the corpora
in tests/corpus, and fails, naming the file, on a copy of them with a file missing, a file not
listed, a wrong size or a file without a licence."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from support.corpus import CORPUS_ROOT, REPO

SCRIPT = REPO / "scripts" / "check-corpus-sources"


def _run(root: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SCRIPT), *([str(root)] if root is not None else [])],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )


@pytest.fixture
def corpus_copy(tmp_path: Path) -> Path:
    root = tmp_path / "corpus-root"
    shutil.copytree(CORPUS_ROOT, root)
    assert _run(root).returncode == 0
    return root


def test_the_corpora_in_the_repository_match_their_sources() -> None:
    checked = _run()
    assert checked.returncode == 0, checked.stderr
    assert "corpus, corpus2 match their SOURCES.md" in checked.stdout


def test_a_listed_file_missing_fails(corpus_copy: Path) -> None:
    (corpus_copy / "corpus" / "grafana.yaml").unlink()
    checked = _run(corpus_copy)
    assert checked.returncode == 1
    assert "corpus/SOURCES.md lists grafana.yaml, which is not in the folder" in checked.stderr


def test_a_file_not_listed_fails(corpus_copy: Path) -> None:
    (corpus_copy / "corpus2" / "extra.yaml").write_text("apiVersion: v1\nkind: List\nitems: []\n")
    checked = _run(corpus_copy)
    assert checked.returncode == 1
    assert "corpus2/extra.yaml: not listed in SOURCES.md" in checked.stderr
    assert "corpus2/SOURCES.md: no licence named for extra.yaml" in checked.stderr


def test_a_changed_file_fails_on_its_size(corpus_copy: Path) -> None:
    path = corpus_copy / "corpus" / "alertmanager.yaml"
    path.write_bytes(path.read_bytes() + b"\n")
    checked = _run(corpus_copy)
    assert checked.returncode == 1
    assert "corpus/alertmanager.yaml: 9,786 bytes, SOURCES.md says 9,785" in checked.stderr


def test_a_file_without_a_licence_or_its_text_fails(corpus_copy: Path) -> None:
    sources = corpus_copy / "corpus2" / "SOURCES.md"
    text = sources.read_text(encoding="utf-8")
    licence_row = next(
        line for line in text.splitlines() if line.startswith("| velero.yaml | Apache-2.0 |")
    )
    sources.write_text(text.replace(licence_row + "\n", ""), encoding="utf-8")
    (corpus_copy / "LICENSES" / "Elastic-2.0.txt").unlink()
    checked = _run(corpus_copy)
    assert checked.returncode == 1
    assert "corpus2/SOURCES.md: no licence named for velero.yaml" in checked.stderr
    assert "the licence of elastic-eck.yaml ('Elastic-2.0') has no text" in checked.stderr
    assert "links to ../LICENSES/Elastic-2.0.txt, missing" in checked.stderr


def test_a_missing_corpus_root_fails(tmp_path: Path) -> None:
    checked = _run(tmp_path / "nowhere")
    assert checked.returncode == 1
    assert "no such directory" in checked.stderr
