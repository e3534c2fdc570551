"""``mutate --output kustomize --output-dir DIR`` never follows a symbolic link (issue 28, item
7): not the directory, not one above it, not a file in it. A link committed to a repository
could otherwise make a run write files outside DIR, or overwrite a file elsewhere that carries
kmultiarch's marker. Each is refused with exit 2, a message naming the link, and nothing
written anywhere."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from support.cli import Completed, clean_env, run_kmultiarch
from support.tools import EXAMPLES

from kmultiarch.output.flux import KUSTOMIZATION, MARKER

OPTIONS = ["--config", "policy.yaml", "--lock", "kmultiarch.lock", "--offline"]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    copy = tmp_path / "project"
    shutil.copytree(EXAMPLES / "demo", copy, ignore=shutil.ignore_patterns("expected"))
    return copy


def write(project: Path, directory: str) -> Completed:
    return run_kmultiarch(
        ["mutate", *OPTIONS, "--output", "kustomize", "--output-dir", directory, "manifests"],
        env=clean_env(project.parent),
        cwd=project,
    )


def snapshot(directory: Path) -> dict[str, bytes]:
    return {
        str(path.relative_to(directory)): path.read_bytes()
        for path in sorted(directory.rglob("*"))
        if path.is_file() and not path.is_symlink()
    }


def refused(result: Completed, link: str) -> None:
    assert result.returncode == 2, result.stderr
    assert link in result.stderr and "symbolic link" in result.stderr, result.stderr
    assert "nothing was written" in result.stderr


def test_output_dir_symlinked_file_overwrites_a_marked_file_outside_the_directory(
    project: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    victim = outside / "victim.yaml"
    victim.write_text(f"{MARKER}\nsomeone's file that looks like kmultiarch's\n")
    (project / "flux").mkdir()
    (project / "flux" / KUSTOMIZATION).symlink_to(victim)
    before = snapshot(tmp_path)
    refused(write(project, "flux"), str(Path("flux") / KUSTOMIZATION))
    assert snapshot(tmp_path) == before
    assert (project / "flux" / KUSTOMIZATION).is_symlink()


def test_output_dir_that_is_a_symlink_writes_files_outside_it(
    project: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (project / "flux").symlink_to(outside)
    refused(write(project, "flux"), "flux")
    assert list(outside.iterdir()) == []


def test_output_dir_below_a_symlinked_directory_writes_files_outside_it(
    project: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (project / "deploy").symlink_to(outside)
    refused(write(project, "deploy/flux"), "deploy")
    assert list(outside.iterdir()) == []


def test_output_dir_symlinked_patch_file_is_refused_and_a_dangling_one_too(
    project: Path, tmp_path: Path
) -> None:
    (project / "flux").mkdir()
    planted = project / "flux" / "deployment_shop_storefront.yaml"
    planted.symlink_to(tmp_path / "not-there.yaml")  # dangling: would be created by a write
    refused(write(project, "flux"), "deployment_shop_storefront.yaml")
    assert not (tmp_path / "not-there.yaml").exists()
    assert sorted(path.name for path in (project / "flux").iterdir()) == [planted.name]


def test_output_dir_leaves_an_unrelated_symlink_alone(project: Path, tmp_path: Path) -> None:
    """A link named as no file the Component has is neither read, nor followed, nor removed,
    even when it points at a file of an earlier run elsewhere."""
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    marked = outside / "old.yaml"
    marked.write_text(f"{MARKER}\nleft over elsewhere\n")
    (project / "flux").mkdir()
    (project / "flux" / "old.yaml").symlink_to(marked)
    result = write(project, "flux")
    assert result.returncode == 0, result.stderr
    assert (project / "flux" / "old.yaml").is_symlink()
    assert marked.read_text() == f"{MARKER}\nleft over elsewhere\n"
    assert (project / "flux" / KUSTOMIZATION).is_file()
    assert not (project / "flux" / KUSTOMIZATION).is_symlink()
