"""The pre-commit hooks, run by pre-commit itself in a temporary git repository.

pre-commit clones a hook repository at a commit and builds the hook's Python environment with
``pip install .``. To stay hermetic and offline, the test commits this working tree's package
into a temporary hook repository, and the hook environment is built without any index:
``PYTHONPATH`` names the site-packages of the interpreter running the tests, so the new
virtualenv sees the dependencies already installed for them (whether that interpreter is a
virtualenv's or the system's: ``VIRTUALENV_SYSTEM_SITE_PACKAGES`` would expose the base
interpreter's, not a virtualenv's), ``PIP_NO_INDEX`` forbids downloads and
``PIP_NO_BUILD_ISOLATION=0`` builds with the installed setuptools. The published hooks
(``language: python``) are used unchanged.
"""

from __future__ import annotations

import os
import shutil
import site
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from support import SeededRegistry
from support.cli import clean_env
from support.manifests import deployment, image, line_of, write_policy

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "pre-commit"
PRE_COMMIT = shutil.which("pre-commit")
GIT_IDENTITY = {
    "GIT_AUTHOR_NAME": "kmultiarch tests",
    "GIT_AUTHOR_EMAIL": "tests@kmultiarch.invalid",
    "GIT_COMMITTER_NAME": "kmultiarch tests",
    "GIT_COMMITTER_EMAIL": "tests@kmultiarch.invalid",
}

pytestmark = pytest.mark.skipif(PRE_COMMIT is None, reason="pre-commit is not installed")


def _git(*args: str, cwd: Path, env: dict[str, str]) -> str:
    return subprocess.run(
        ["git", *args], cwd=cwd, env=env, capture_output=True, text=True, check=True, timeout=60
    ).stdout.strip()


def _project_files() -> list[str]:
    """What ``pip install .`` needs: the package (tracked and new files), pyproject, README,
    and the hooks manifest."""
    listed = subprocess.run(
        [
            "git",
            "ls-files",
            "--cached",
            "--others",
            "--exclude-standard",
            "kmultiarch",
            "pyproject.toml",
            "README.md",
            ".pre-commit-hooks.yaml",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout.split()
    return [name for name in listed if (ROOT / name).is_file()]


@pytest.fixture(scope="session")
def hook_repository(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, str]]:
    """A git repository holding this working tree's package, and its commit."""
    repository = tmp_path_factory.mktemp("hook-repo")
    for name in _project_files():
        target = repository / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, target)
    env = {**os.environ, **GIT_IDENTITY}
    _git("init", "-q", cwd=repository, env=env)
    _git("add", ".", cwd=repository, env=env)
    _git("commit", "-q", "-m", "kmultiarch under test", cwd=repository, env=env)
    yield repository, _git("rev-parse", "HEAD", cwd=repository, env=env)


@pytest.fixture(scope="session")
def pre_commit_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Shared by the tests of a session: the hook environment is built once."""
    return tmp_path_factory.mktemp("pre-commit-home")


def hook_env(home: Path, pre_commit_home: Path) -> dict[str, str]:
    return clean_env(
        home,
        {
            **GIT_IDENTITY,
            "PRE_COMMIT_HOME": str(pre_commit_home),
            "PRE_COMMIT_COLOR": "never",
            "PYTHONPATH": os.pathsep.join(site.getsitepackages()),
            "PIP_NO_INDEX": "1",
            "PIP_NO_BUILD_ISOLATION": "0",
            "PIP_DISABLE_PIP_VERSION_CHECK": "1",
        },
    )


def make_repository(
    destination: Path, source: Path, hook_repository: tuple[Path, str], env: dict[str, str]
) -> Path:
    """A git repository with ``source``'s files, its pre-commit config pointed at the hooks."""
    shutil.copytree(source, destination)
    config_path = destination / ".pre-commit-config.yaml"
    config = yaml.safe_load(config_path.read_text())
    for repo in config["repos"]:
        repo["repo"], repo["rev"] = str(hook_repository[0]), hook_repository[1]
    config_path.write_text(yaml.safe_dump(config, sort_keys=False))
    _git("init", "-q", cwd=destination, env=env)
    _git("add", ".", cwd=destination, env=env)
    return destination


def pre_commit(args: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    assert PRE_COMMIT is not None
    return subprocess.run(
        [PRE_COMMIT, *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


def snapshot(directory: Path) -> dict[str, bytes]:
    return {
        str(path.relative_to(directory)): path.read_bytes()
        for path in sorted(directory.rglob("*"))
        if path.is_file() and ".git" not in path.relative_to(directory).parts
    }


def test_the_example_repository_check_then_fix(
    tmp_path: Path, hook_repository: tuple[Path, str], pre_commit_home: Path
) -> None:
    env = hook_env(tmp_path, pre_commit_home)
    repo = make_repository(tmp_path / "repo", EXAMPLE, hook_repository, env)
    (repo / "notes.yaml").write_text("not: [valid yaml\n")  # does not parse: skipped too
    _git("add", "notes.yaml", cwd=repo, env=env)
    before = snapshot(repo)

    checked = pre_commit(["run", "kmultiarch-check", "--all-files"], repo, env)
    output = checked.stdout + checked.stderr
    assert checked.returncode == 1, output
    assert "kmultiarch check" in output and "Failed" in output
    assert "StatefulSet shop/db" in output and "NEEDS CHANGE" in output
    assert "deploy/web.yaml:14: error: Deployment shop/web: add toleration" in output
    assert "deploy/db.yaml:14: error: StatefulSet shop/db: require node affinity" in output
    for skipped in ("chart/", "kustomization", "notes.yaml", "ci.yaml", "Traceback"):
        assert skipped not in output, skipped
    assert snapshot(repo) == before, "check never writes"

    fixed = pre_commit(["run", "kmultiarch-fix", "--all-files"], repo, env)
    output = fixed.stdout + fixed.stderr
    assert fixed.returncode == 1, output
    assert "fixed deploy/db.yaml: added tolerations/affinity to 1 pod spec" in output
    assert "fixed deploy/web.yaml: added tolerations/affinity to 1 pod spec" in output
    assert "files were modified by this hook" in output
    after = snapshot(repo)
    changed = sorted(name for name in after if after[name] != before[name])
    assert changed == ["deploy/db.yaml", "deploy/web.yaml"]
    for name in changed:
        assert after[name] == (EXAMPLE / "expected" / name).read_bytes(), name

    _git("add", "-u", cwd=repo, env=env)
    for hook in ("kmultiarch-check", "kmultiarch-fix"):
        again = pre_commit(["run", hook, "--all-files"], repo, env)
        assert again.returncode == 0, again.stdout + again.stderr
        assert "Passed" in again.stdout
    assert snapshot(repo) == after


def test_the_hook_resolves_from_the_registry_on_commit(
    tmp_path: Path,
    registry: SeededRegistry,
    hook_repository: tuple[Path, str],
    pre_commit_home: Path,
) -> None:
    """No lock: the hook looks the images up at the (real) registry, on `git commit`."""
    env = hook_env(tmp_path, pre_commit_home)
    source = tmp_path / "source"
    source.mkdir()
    write_policy(source / "policy.yaml", registry)
    (source / "app.yaml").write_text(deployment("app", [image(registry, "single-docker-amd64")]))
    (source / "ok.yaml").write_text(
        deployment("ok", [image(registry, "multiarch-oci")]).replace(
            "      containers:\n",
            "      tolerations:\n"
            "      - {key: kubernetes.io/arch, operator: Exists}\n"
            "      containers:\n",
        )
    )
    (source / ".pre-commit-config.yaml").write_text(
        yaml.safe_dump(
            {
                "repos": [
                    {
                        "repo": "placeholder",
                        "rev": "placeholder",
                        "hooks": [{"id": "kmultiarch-check", "args": ["--config", "policy.yaml"]}],
                    }
                ]
            }
        )
    )
    repo = make_repository(tmp_path / "repo", source, hook_repository, env)
    installed = pre_commit(["install"], repo, env)
    assert installed.returncode == 0, installed.stderr

    log = registry.mark()
    commit = subprocess.run(
        ["git", "commit", "-m", "add app"],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    output = commit.stdout + commit.stderr
    assert commit.returncode != 0, output
    spec_line = line_of((repo / "app.yaml").read_text(), "    spec:")
    assert f"app.yaml:{spec_line}: error: Deployment default/app: require node affinity" in output
    assert "ok.yaml" not in output.split("check FAILED")[0].split("\n\n", 1)[-1]
    assert log.count("GET", "/single-docker-amd64/") >= 1

    fix = subprocess.run(
        [shutil.which("kmultiarch") or "kmultiarch", "fix", "--config", "policy.yaml", "app.yaml"],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert fix.returncode == 1, fix.stderr
    _git("add", "app.yaml", cwd=repo, env=env)
    commit = subprocess.run(
        ["git", "commit", "-q", "-m", "add app"],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert commit.returncode == 0, commit.stdout + commit.stderr


def test_the_fix_hook_applies_issue_14_policy_keys_across_files(
    tmp_path: Path,
    registry: SeededRegistry,
    hook_repository: tuple[Path, str],
    pre_commit_home: Path,
) -> None:
    """The hooks see every staged file in one run: a Namespace in one file opts the workloads
    of another in (mode: optIn); preferences and annotate shape what the fixer writes."""
    env = hook_env(tmp_path, pre_commit_home)
    source = tmp_path / "source"
    source.mkdir()
    write_policy(
        source / "policy.yaml",
        registry,
        {"mode": "optIn", "preferences": {"linux/arm64": 60}, "annotate": True},
    )
    (source / "ns.yaml").write_text(
        "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: shop\n"
        '  annotations:\n    kmultiarch.dev/enabled: "true"\n'
    )
    (source / "app.yaml").write_text(
        deployment("app", [image(registry, "multiarch-oci")], namespace="shop")
    )
    untouched = deployment("other", [image(registry, "multiarch-oci")], namespace="elsewhere")
    (source / "other.yaml").write_text(untouched)
    (source / ".pre-commit-config.yaml").write_text(
        yaml.safe_dump(
            {
                "repos": [
                    {
                        "repo": "placeholder",
                        "rev": "placeholder",
                        "hooks": [{"id": "kmultiarch-fix", "args": ["--config", "policy.yaml"]}],
                    }
                ]
            }
        )
    )
    repo = make_repository(tmp_path / "repo", source, hook_repository, env)
    installed = pre_commit(["install"], repo, env)
    assert installed.returncode == 0, installed.stderr
    commit = subprocess.run(
        ["git", "commit", "-m", "add app"],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert commit.returncode != 0, commit.stdout + commit.stderr  # the fixer changed a file
    fixed = yaml.safe_load((repo / "app.yaml").read_text())
    template = fixed["spec"]["template"]
    assert template["metadata"]["annotations"]["kmultiarch.dev/platforms"] == (
        "linux/amd64,linux/arm64"
    )
    preferred = template["spec"]["affinity"]["nodeAffinity"][
        "preferredDuringSchedulingIgnoredDuringExecution"
    ]
    assert preferred == [
        {
            "weight": 60,
            "preference": {
                "matchExpressions": [
                    {"key": "kubernetes.io/arch", "operator": "In", "values": ["arm64"]}
                ]
            },
        }
    ]
    assert (repo / "other.yaml").read_text() == untouched
