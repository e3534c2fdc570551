"""``kmultiarch fix``: the pre-commit fixer contract, against the real registry."""

from __future__ import annotations

from pathlib import Path

import pytest
from support import SeededRegistry
from support.cli import clean_env, run_kmultiarch
from support.manifests import deployment, image, write_policy

TOLERATION = (
    "      tolerations:\n"
    "      - {key: kubernetes.io/arch, operator: Equal, value: arm64, effect: NoSchedule}\n"
)
HELM_TEMPLATE = (
    "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {{ .Release.Name }}\n"
    "spec:\n  template:\n    spec:\n      containers:\n      - name: app\n"
    "        image: {{ .Values.image }}\n"
)


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return clean_env(tmp_path)


@pytest.fixture
def policy(tmp_path: Path, registry: SeededRegistry) -> Path:
    return write_policy(tmp_path / "policy.yaml", registry)


def test_fix_rewrites_changed_files_and_exits_1(
    tmp_path: Path, registry: SeededRegistry, policy: Path, env: dict[str, str]
) -> None:
    deploy = tmp_path / "deploy"
    deploy.mkdir()
    needs = deploy / "needs.yaml"
    needs.write_text(deployment("web", [image(registry, "multiarch-oci")]))
    needs.chmod(0o640)
    fine = deploy / "fine.yaml"
    fine.write_text(deployment("ok", [image(registry, "multiarch-oci")], extra_spec=TOLERATION))
    fine_stat = fine.stat()
    expected = run_kmultiarch(["mutate", "--config", str(policy), str(needs)], env=env).stdout

    result = run_kmultiarch(["fix", "--config", str(policy), "deploy"], env=env, cwd=tmp_path)
    assert result.returncode == 1, result.stderr
    assert result.stdout == "fixed deploy/needs.yaml: added tolerations/affinity to 1 pod spec\n"
    assert needs.read_text() == expected
    assert needs.stat().st_mode & 0o777 == 0o640, "the file keeps its mode"
    assert fine.stat().st_mtime_ns == fine_stat.st_mtime_ns, "unchanged files are not written"
    assert sorted(p.name for p in deploy.iterdir()) == ["fine.yaml", "needs.yaml"]

    again = run_kmultiarch(["fix", "--config", str(policy), "deploy"], env=env, cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert again.stdout == ""


def test_fix_writes_nothing_when_the_policy_fails(
    tmp_path: Path, registry: SeededRegistry, env: dict[str, str]
) -> None:
    strict = write_policy(tmp_path / "strict.yaml", registry, {"failurePolicy": "Fail"})
    good = tmp_path / "good.yaml"
    good.write_text(deployment("web", [image(registry, "multiarch-oci")]))
    bad = tmp_path / "bad.yaml"
    bad.write_text(deployment("ghost", ["registry.test/ghost/app:1"]))
    before = good.read_text()
    result = run_kmultiarch(["fix", "--config", str(strict), str(good), str(bad)], env=env)
    assert result.returncode == 1
    assert result.stdout == ""
    assert "no file was rewritten" in result.stderr
    assert "bad.yaml" in result.stderr and "registry.test/ghost/app:1" in result.stderr
    assert good.read_text() == before


def test_non_manifests_fail_unless_skipped(
    tmp_path: Path, registry: SeededRegistry, policy: Path, env: dict[str, str]
) -> None:
    manifest = tmp_path / "app.yaml"
    manifest.write_text(deployment("web", [image(registry, "multiarch-oci")]))
    template = tmp_path / "template.yaml"
    template.write_text(HELM_TEMPLATE)
    binary = tmp_path / "blob.yaml"
    binary.write_bytes(b"\x00\x01\x02binary")
    broken = tmp_path / "broken.yaml"
    broken.write_text("key: [unclosed\n")

    for path in (template, binary, broken):
        strict = run_kmultiarch(["check", "--config", str(policy), str(path)], env=env)
        assert strict.returncode == 2, (path, strict.stderr)
        assert strict.stdout == ""
        assert strict.stderr.startswith(f"kmultiarch: error: {path}:")

    files = [str(p) for p in (manifest, template, binary, broken)]
    checked = run_kmultiarch(
        ["check", "--skip-non-manifests", "--config", str(policy), *files], env=env
    )
    assert checked.returncode == 1, checked.stderr
    assert "Deployment default/web" in checked.stdout and "template.yaml" not in checked.stdout
    assert checked.stderr == ""
    verbose = run_kmultiarch(
        ["fix", "--skip-non-manifests", "-v", "--config", str(policy), *files], env=env
    )
    assert verbose.returncode == 1
    assert f"{template}: skipped: a template" in verbose.stderr
    assert f"{binary}: skipped: not UTF-8 YAML text" in verbose.stderr
    assert f"{broken}: skipped: not valid YAML" in verbose.stderr
    assert template.read_text() == HELM_TEMPLATE


def test_fix_refuses_stdin(policy: Path, env: dict[str, str]) -> None:
    result = run_kmultiarch(["fix", "--config", str(policy), "-"], env=env, stdin="")
    assert result.returncode == 2
    assert "fix rewrites files" in result.stderr
