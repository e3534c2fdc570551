"""``kmultiarch check``: the CI gate, against the real registry, in every output format."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from support import SeededRegistry
from support.cli import clean_env, run_kmultiarch
from support.manifests import deployment, image, line_of, write_policy

TOLERATION = (
    "      tolerations:\n"
    "      - {key: kubernetes.io/arch, operator: Equal, value: arm64, effect: NoSchedule}\n"
)


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return clean_env(tmp_path)


@pytest.fixture
def policy(tmp_path: Path, registry: SeededRegistry) -> Path:
    return write_policy(tmp_path / "policy.yaml", registry)


def write(path: Path, *documents: str) -> Path:
    path.write_text("---\n".join(documents))
    return path


def test_a_manifest_that_needs_tolerations_fails_with_a_table(
    tmp_path: Path, registry: SeededRegistry, policy: Path, env: dict[str, str]
) -> None:
    manifest = write(
        tmp_path / "apps.yaml",
        deployment("web", [image(registry, "multiarch-oci")]),
        deployment("legacy", [image(registry, "single-docker-amd64")]),
        deployment("ready", [image(registry, "multiarch-oci")], extra_spec=TOLERATION),
    )
    result = run_kmultiarch(["check", "--config", str(policy), str(manifest)], env=env)
    assert result.returncode == 1, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].split() == ["WORKLOAD", "CONTAINER", "IMAGE", "PLATFORMS", "VERDICT"]
    web = next(line for line in lines if line.startswith("Deployment default/web "))
    assert "registry.test/multiarch-oci:1.0" in web
    assert "linux/amd64, linux/arm64" in web and "NEEDS CHANGE" in web
    ready = next(line for line in lines if line.startswith("Deployment default/ready "))
    assert ready.rstrip().endswith("ok")
    text = manifest.read_text()
    web_line = line_of(text, "    spec:", 1)
    assert (
        f"apps.yaml:{web_line}: error: Deployment default/web: add toleration "
        "kubernetes.io/arch=arm64:NoSchedule" in result.stdout
    )
    legacy_line = line_of(text, "    spec:", 2)
    assert (
        f"apps.yaml:{legacy_line}: error: Deployment default/legacy: require node affinity "
        "kubernetes.io/arch In [amd64]" in result.stdout
    )
    assert "[needs-scheduling]" in result.stdout
    assert result.stdout.rstrip().splitlines()[-1].startswith("check FAILED: 3 pod specs")
    assert manifest.read_text() == text, "check never writes"


def test_what_mutate_writes_passes(
    tmp_path: Path, registry: SeededRegistry, policy: Path, env: dict[str, str]
) -> None:
    manifest = write(
        tmp_path / "apps.yaml",
        deployment("web", [image(registry, "multiarch-oci")]),
        deployment("legacy", [image(registry, "single-docker-amd64")]),
    )
    mutated = run_kmultiarch(["mutate", "--config", str(policy), str(manifest)], env=env)
    assert mutated.returncode == 0, mutated.stderr
    fixed = write(tmp_path / "fixed.yaml", mutated.stdout)
    result = run_kmultiarch(["check", "--config", str(policy), str(fixed)], env=env)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "check passed: 2 pod specs, 2 ok; 0 errors, 0 warnings" in result.stdout


def test_no_common_platform_fails_whatever_the_failure_policy(
    tmp_path: Path, registry: SeededRegistry, env: dict[str, str]
) -> None:
    policy = write_policy(tmp_path / "policy.yaml", registry, {"failurePolicy": "Ignore"})
    manifest = write(
        tmp_path / "mixed.yaml",
        deployment(
            "mixed", [image(registry, "single-oci-arm64"), image(registry, "amd64-only-index")]
        ),
    )
    result = run_kmultiarch(
        ["check", "--config", str(policy), str(manifest), "-o", "json"], env=env
    )
    assert result.returncode == 1, result.stderr
    report = result.json()
    assert report["passed"] is False
    (pod,) = report["pods"]
    assert pod["verdict"] == "no-common-platform"
    assert [c["platforms"] for c in pod["containers"]] == [["linux/arm64"], ["linux/amd64"]]
    (problem,) = report["problems"]
    assert problem["rule"] == "no-common-platform" and problem["level"] == "error"
    assert problem["line"] == line_of(manifest.read_text(), "    spec:")


@pytest.mark.parametrize(("failure_policy", "code"), [("Ignore", 0), ("Fail", 1)])
def test_an_unresolvable_image_fails_only_under_failure_policy_fail(
    tmp_path: Path, registry: SeededRegistry, env: dict[str, str], failure_policy: str, code: int
) -> None:
    policy = write_policy(tmp_path / "policy.yaml", registry, {"failurePolicy": failure_policy})
    manifest = write(tmp_path / "m.yaml", deployment("ghost", ["registry.test/does-not/exist:1"]))
    result = run_kmultiarch(["check", "--config", str(policy), str(manifest)], env=env)
    assert result.returncode == code, result.stdout + result.stderr
    level = "error" if code else "warning"
    image_line = line_of(manifest.read_text(), "image: registry.test/does-not/exist:1")
    assert f"m.yaml:{image_line}: {level}: Deployment default/ghost: image " in result.stdout
    assert "[unresolved-image]" in result.stdout
    assert "UNRESOLVED" in result.stdout


def test_github_annotations_name_file_and_line(
    tmp_path: Path, registry: SeededRegistry, policy: Path
) -> None:
    manifest = write(
        tmp_path / "web.yaml",
        deployment("ok", [image(registry, "multiarch-oci")], extra_spec=TOLERATION),
        deployment("web", [image(registry, "multiarch-docker")]),
    )
    env = clean_env(tmp_path, {"GITHUB_ACTIONS": "true"})
    result = run_kmultiarch(["check", "--config", str(policy), "web.yaml"], env=env, cwd=tmp_path)
    assert result.returncode == 1, result.stderr
    annotations = [line for line in result.stdout.splitlines() if line.startswith("::")]
    spec_line = line_of(manifest.read_text(), "    spec:", 2)
    assert annotations == [
        f"::error file=web.yaml,line={spec_line},title=kmultiarch needs-scheduling::"
        "Deployment default/web: add toleration kubernetes.io/arch=arm64:NoSchedule (its images "
        "run on linux/amd64, linux/arm64); run `kmultiarch fix --config "
        f"{policy} web.yaml` to apply"
    ]
    # The default is text outside GitHub Actions; --output overrides the environment.
    text = run_kmultiarch(
        ["check", "--config", str(policy), "web.yaml", "-o", "text"], env=env, cwd=tmp_path
    )
    assert text.stdout.startswith("WORKLOAD")


def test_sarif_has_rules_results_and_locations(
    tmp_path: Path, registry: SeededRegistry, policy: Path, env: dict[str, str]
) -> None:
    (tmp_path / "deploy").mkdir()
    manifest = write(
        tmp_path / "deploy" / "app.yaml",
        deployment("web", [image(registry, "single-docker-amd64")]),
        deployment("broken", [image(registry, "armv7-only")]),
    )
    result = run_kmultiarch(
        ["check", "--config", str(policy), "-o", "sarif", "deploy"], env=env, cwd=tmp_path
    )
    assert result.returncode == 1, result.stderr
    log = json.loads(result.stdout)
    assert log["version"] == "2.1.0"
    assert log["$schema"].endswith("sarif-2.1.0.json")
    (run,) = log["runs"]
    rules = run["tool"]["driver"]["rules"]
    rule_ids = [rule["id"] for rule in rules]
    assert {"needs-scheduling", "no-common-platform", "unresolved-image"} <= set(rule_ids)
    assert all(rule["shortDescription"]["text"] and rule["help"]["text"] for rule in rules)
    results = run["results"]
    assert [r["ruleId"] for r in results] == ["needs-scheduling", "no-common-platform"]
    text = manifest.read_text()
    for result_entry, occurrence in zip(results, (1, 2), strict=True):
        assert rule_ids[result_entry["ruleIndex"]] == result_entry["ruleId"]
        assert result_entry["level"] == "error"
        assert result_entry["message"]["text"]
        (location,) = result_entry["locations"]
        physical = location["physicalLocation"]
        assert physical["artifactLocation"]["uri"] == "deploy/app.yaml"
        assert physical["region"]["startLine"] == line_of(text, "    spec:", occurrence)


def test_diff_is_what_mutate_would_apply(
    tmp_path: Path, registry: SeededRegistry, policy: Path, env: dict[str, str]
) -> None:
    manifest = write(tmp_path / "app.yaml", deployment("web", [image(registry, "multiarch-oci")]))
    untouched = write(
        tmp_path / "fine.yaml",
        deployment("fine", [image(registry, "multiarch-oci")], extra_spec=TOLERATION),
    )
    result = run_kmultiarch(
        ["check", "--config", str(policy), "--diff", "app.yaml", "fine.yaml"],
        env=env,
        cwd=tmp_path,
    )
    assert result.returncode == 1, result.stderr
    diff_text = result.stdout[result.stdout.index("--- a/app.yaml") :]
    diff_text = diff_text[: diff_text.index("\n\ncheck FAILED")] + "\n"
    assert "+++ b/app.yaml" in diff_text and "fine.yaml" not in diff_text
    as_json = run_kmultiarch(
        ["check", "--config", str(policy), "--diff", "-o", "json", "app.yaml"],
        env=env,
        cwd=tmp_path,
    )
    assert as_json.json()["diffs"]["app.yaml"].startswith("--- a/app.yaml")
    assert as_json.json()["diffs"]["app.yaml"] == diff_text
    # The diff, applied, gives exactly what mutate prints.
    mutated = run_kmultiarch(["mutate", "--config", str(policy), str(manifest)], env=env)
    (tmp_path / "change.diff").write_text(diff_text)
    # git apply works outside a repository, as patch(1) does (which a fresh machine may lack)
    subprocess.run(["git", "apply", "-p1", "change.diff"], cwd=tmp_path, check=True, timeout=30)
    assert manifest.read_text() == mutated.stdout
    assert untouched.read_text().count("tolerations") == 1

    refused = run_kmultiarch(
        ["check", "--config", str(policy), "--diff", "-o", "sarif", "app.yaml"],
        env=env,
        cwd=tmp_path,
    )
    assert refused.returncode == 2 and refused.stdout == ""


def test_stdin_and_bad_input(registry: SeededRegistry, policy: Path, env: dict[str, str]) -> None:
    ok = run_kmultiarch(
        ["check", "--config", str(policy)],
        env=env,
        stdin=deployment("web", [image(registry, "multiarch-oci")], extra_spec=TOLERATION),
    )
    assert ok.returncode == 0, ok.stderr
    bad = run_kmultiarch(["check", "--config", str(policy)], env=env, stdin="a: [\n")
    assert bad.returncode == 2
    assert bad.stdout == ""
    assert bad.stderr.startswith("kmultiarch: error: <stdin>:")
    assert len(bad.stderr.strip().splitlines()) == 1
