"""``mutate --output kustomize --output-dir DIR``, ``--output helmrelease-patches`` and ``check
--component DIR`` through the real command line: what is written and removed in DIR, what is
refused (with nothing written), and when check says the committed Component is stale. The
demo's manifests, policy and lock, offline."""

from __future__ import annotations

import json
import shlex
import shutil
from pathlib import Path

import pytest
import yaml
from support.cli import Completed, clean_env, run_kmultiarch
from support.tools import EXAMPLES

from kmultiarch.output.flux import KUSTOMIZATION, MARKER

DEMO = EXAMPLES / "demo"
OPTIONS = ["--config", "policy.yaml", "--lock", "kmultiarch.lock", "--offline"]
#: The demo's changed workloads, as the Component names their patch files.
DEMO_PATCHES = {
    "cronjob_shop_orders-backup.yaml",
    "daemonset_monitoring_node-exporter.yaml",
    "deployment_ingress-nginx_ingress-nginx-controller.yaml",
    "deployment_shop_storefront.yaml",
    "statefulset_shop_orders-db.yaml",
}


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A copy of the demo: manifests/, policy.yaml, kmultiarch.lock."""
    copy = tmp_path / "project"
    shutil.copytree(DEMO, copy, ignore=shutil.ignore_patterns("expected"))
    return copy


def kmultiarch(project: Path, *args: str, stdin: str | None = None) -> Completed:
    return run_kmultiarch(args, env=clean_env(project.parent), cwd=project, stdin=stdin)


def write(project: Path, *paths: str) -> Completed:
    return kmultiarch(
        project, "mutate", *OPTIONS, "--output", "kustomize", "--output-dir", "flux", *paths
    )


def check(project: Path, *args: str) -> Completed:
    return kmultiarch(project, "check", *OPTIONS, "--component", "flux", *args)


def tree(directory: Path) -> dict[str, tuple[bytes, int]]:
    """Every file below ``directory`` with its bytes and modification time."""
    return {
        str(path.relative_to(directory)): (path.read_bytes(), path.stat().st_mtime_ns)
        for path in sorted(directory.rglob("*"))
        if path.is_file()
    }


# mutate --output kustomize -------------------------------------------------------------------


def test_the_component_is_written_once_and_again_changes_nothing(project: Path) -> None:
    result = write(project, "manifests")
    assert result.returncode == 0, result.stderr
    assert result.stdout == ""
    component = project / "flux"
    assert {path.name for path in component.iterdir()} == DEMO_PATCHES | {KUSTOMIZATION}
    assert "flux: a Component of 5 patches (6 files written, 0 removed)" in result.stderr
    kustomization = yaml.safe_load((component / KUSTOMIZATION).read_text())
    assert kustomization["kind"] == "Component"
    assert {entry["path"] for entry in kustomization["patches"]} == DEMO_PATCHES
    before = tree(component)
    again = write(project, "manifests")
    assert again.returncode == 0, again.stderr
    assert "(0 files written, 0 removed)" in again.stderr
    assert tree(component) == before  # not even rewritten with the same bytes
    # From stdin, the same files: names come from the resources, never the sources.
    stream = "---\n".join(path.read_text() for path in sorted((project / "manifests").iterdir()))
    piped = kmultiarch(
        project, "mutate", *OPTIONS, "--output", "kustomize", "--output-dir", "flux", stdin=stream
    )
    assert piped.returncode == 0, piped.stderr
    assert tree(component) == before


def test_files_of_an_earlier_run_are_removed_and_no_other(project: Path) -> None:
    assert write(project, "manifests").returncode == 0
    component = project / "flux"
    (component / "README.md").write_text("ours\n")
    (component / "notes.yaml").write_text("# ours\nkey: value\n")
    (component / "sub").mkdir()
    (component / "sub" / "x.yaml").write_text(f"{MARKER}\n")
    (project / "manifests" / "jobs.yaml").unlink()
    result = write(project, "manifests")
    assert result.returncode == 0, result.stderr
    assert "a Component of 4 patches (1 file written, 1 removed)" in result.stderr
    names = {path.name for path in component.iterdir()}
    assert names == (DEMO_PATCHES - {"cronjob_shop_orders-backup.yaml"}) | {
        KUSTOMIZATION,
        "README.md",
        "notes.yaml",
        "sub",
    }
    assert (component / "notes.yaml").read_text() == "# ours\nkey: value\n"
    assert (component / "sub" / "x.yaml").read_text() == f"{MARKER}\n"


def test_nothing_to_change_is_a_component_without_patches(project: Path) -> None:
    result = write(project, "manifests/cache.yaml")
    assert result.returncode == 0, result.stderr
    assert [path.name for path in (project / "flux").iterdir()] == [KUSTOMIZATION]
    kustomization = yaml.safe_load((project / "flux" / KUSTOMIZATION).read_text())
    assert kustomization["patches"] == []
    assert check(project, "manifests/cache.yaml").returncode == 0


@pytest.mark.parametrize(
    ("prepare", "message"),
    [
        pytest.param(
            lambda d: (d / KUSTOMIZATION).write_text("resources: [app.yaml]\n"),
            "flux: kustomization.yaml exists and was not written by kmultiarch; nothing was "
            "written: remove it, or choose another --output-dir",
            id="someone else's kustomization",
        ),
        pytest.param(
            lambda d: (d / "deployment_shop_storefront.yaml").write_text("- op: add\n"),
            "flux: deployment_shop_storefront.yaml exists and was not written by kmultiarch",
            id="someone else's file of a patch's name",
        ),
        pytest.param(
            lambda d: (d / "kustomization.yml").write_text("resources: []\n"),
            "flux: kustomization.yml is a kustomization too (kustomize refuses two in one "
            "directory)",
            id="another kustomization name",
        ),
        pytest.param(
            lambda d: (d / "statefulset_shop_orders-db.yaml").mkdir(),
            "flux: statefulset_shop_orders-db.yaml is in the way (not a file); nothing was written",
            id="a directory in the way",
        ),
    ],
)
def test_a_directory_holding_files_kmultiarch_did_not_write_is_left_as_it_is(
    project: Path, prepare: object, message: str
) -> None:
    component = project / "flux"
    component.mkdir()
    prepare(component)  # type: ignore[operator]
    before = tree(component), sorted(p.name for p in component.iterdir())
    result = write(project, "manifests")
    assert result.returncode == 2
    assert f"kmultiarch: error: {message}" in result.stderr
    assert (tree(component), sorted(p.name for p in component.iterdir())) == before


DUPLICATE = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: storefront, namespace: shop}
spec:
  template:
    spec:
      containers: [{name: web, image: "mysql:5.7"}]
"""


@pytest.mark.parametrize("output", ["kustomize", "helmrelease-patches"])
def test_a_resource_no_target_can_select_alone_writes_nothing(project: Path, output: str) -> None:
    (project / "manifests" / "again.yaml").write_text(DUPLICATE)
    args = ["--output-dir", "flux"] if output == "kustomize" else []
    result = kmultiarch(project, "mutate", *OPTIONS, "--output", output, *args, "manifests")
    assert result.returncode == 2
    assert result.stdout == ""
    assert not (project / "flux").exists()
    (line,) = [line for line in result.stderr.splitlines() if "error" in line]
    assert line.startswith("kmultiarch: error: manifests/")
    assert (
        "apps/v1 Deployment shop/storefront cannot be selected alone: kustomize's target " in line
    )
    assert "also selects apps/v1 Deployment shop/storefront at manifests/" in line


def test_a_failed_run_writes_no_component(project: Path) -> None:
    (project / "manifests" / "unknown.yaml").write_text(
        DUPLICATE.replace("storefront", "unknown").replace("mysql:5.7", "registry.test/no:1")
    )
    result = write(project, "manifests")
    assert result.returncode == 1
    assert "nothing was written" in result.stderr
    assert not (project / "flux").exists()


def test_an_output_dir_that_is_a_file_is_refused(project: Path) -> None:
    (project / "flux").write_text("a file\n")
    result = write(project, "manifests")
    assert result.returncode == 2
    assert "kmultiarch: error: flux: not a directory" in result.stderr
    assert (project / "flux").read_text() == "a file\n"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--output", "kustomize"], "--output kustomize and --output-dir DIR go together"),
        (["--output-dir", "flux"], "--output kustomize and --output-dir DIR go together"),
        (["--output", "patch", "--output-dir", "flux"], "go together"),
        (
            ["--output", "kustomize", "--output-dir", "flux", "--in-place"],
            "--in-place cannot be combined with --output kustomize",
        ),
        (
            ["--output", "helmrelease-patches", "--in-place"],
            "--in-place cannot be combined with --output helmrelease-patches",
        ),
    ],
)
def test_options_that_do_not_go_together_are_usage_errors(
    project: Path, args: list[str], message: str
) -> None:
    result = kmultiarch(project, "mutate", *OPTIONS, *args, "manifests")
    assert result.returncode == 2
    assert message in result.stderr
    assert not (project / "flux").exists()


# mutate --output helmrelease-patches ---------------------------------------------------------


def test_the_helmrelease_patches_are_the_components_inline(project: Path) -> None:
    assert write(project, "manifests").returncode == 0
    result = kmultiarch(project, "mutate", *OPTIONS, "--output", "helmrelease-patches", "manifests")
    assert result.returncode == 0, result.stderr
    document = yaml.safe_load(result.stdout)
    assert list(document) == ["postRenderers"]
    (renderer,) = document["postRenderers"]
    inline = renderer["kustomize"]["patches"]
    kustomization = yaml.safe_load((project / "flux" / KUSTOMIZATION).read_text())
    assert [p["target"] for p in inline] == [p["target"] for p in kustomization["patches"]]
    for entry, patch in zip(kustomization["patches"], inline, strict=True):
        assert yaml.safe_load(patch["patch"]) == yaml.safe_load(
            (project / "flux" / entry["path"]).read_text()
        )
    assert "6 pod specs, 5 changed" in result.stderr


# check --component ---------------------------------------------------------------------------


def test_check_passes_with_the_fresh_component_that_makes_its_changes(project: Path) -> None:
    without = kmultiarch(project, "check", *OPTIONS, "manifests")
    assert without.returncode == 1
    assert "[needs-scheduling]" in without.stdout
    assert write(project, "manifests").returncode == 0
    result = check(project, "manifests")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "[needs-scheduling]" not in result.stdout
    assert "check passed" in result.stdout
    assert "kmultiarch: flux: the Component is up to date (5 patches)" in result.stderr


def test_a_stale_component_fails_check_naming_its_files_and_the_command(project: Path) -> None:
    assert write(project, "manifests").returncode == 0
    component = project / "flux"
    (component / "deployment_shop_storefront.yaml").write_text(f"{MARKER}\n- edited\n")
    (component / "cronjob_shop_orders-backup.yaml").unlink()
    (component / "old_web.yaml").write_text(f"{MARKER}\n")
    result = check(project, "--output", "json", "manifests")
    assert result.returncode == 1
    report = json.loads(result.stdout)  # the report is whole; the Component is said on stderr
    assert not [p for p in report["problems"] if p["rule"] == "needs-scheduling"]
    (line,) = [line for line in result.stderr.splitlines() if "error" in line]
    expected = (
        "kmultiarch: error: flux: the Component is stale: deployment_shop_storefront.yaml "
        "differs, cronjob_shop_orders-backup.yaml is missing, old_web.yaml is left over (no "
        "longer written); refresh it with: kmultiarch mutate --config policy.yaml --lock "
        "kmultiarch.lock --offline --output kustomize --output-dir flux manifests"
    )
    assert line == expected
    # The command it gives refreshes the Component, and check passes again.
    command = shlex.split(line.partition("refresh it with: ")[2])
    assert command[0] == "kmultiarch"
    assert kmultiarch(project, *command[1:]).returncode == 0
    assert not (component / "old_web.yaml").exists()
    assert check(project, "manifests").returncode == 0


def test_a_component_of_other_manifests_is_stale(project: Path) -> None:
    assert write(project, "manifests/jobs.yaml").returncode == 0
    result = check(project, "manifests")
    assert result.returncode == 1
    assert "kustomization.yaml differs, daemonset_monitoring_node-exporter.yaml is missing" in (
        result.stderr
    )


def test_a_missing_component_is_stale_and_stdin_is_named_in_the_command(project: Path) -> None:
    stream = (project / "manifests" / "jobs.yaml").read_text()
    result = kmultiarch(project, "check", *OPTIONS, "--component", "flux", stdin=stream)
    assert result.returncode == 1
    assert (
        "flux: the Component is stale: cronjob_shop_orders-backup.yaml is missing, "
        "kustomization.yaml is missing; refresh it with: kmultiarch mutate --config policy.yaml "
        "--lock kmultiarch.lock --offline --output kustomize --output-dir flux < MANIFESTS"
    ) in result.stderr
    assert not (project / "flux").exists()  # check writes nothing


def test_check_component_refuses_what_mutate_refuses(project: Path) -> None:
    (project / "manifests" / "again.yaml").write_text(DUPLICATE)
    result = check(project, "manifests")
    assert result.returncode == 2
    assert "cannot be selected alone" in result.stderr
    assert result.stdout == ""
