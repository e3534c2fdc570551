"""Honest platforms in the pipeline (issue 24, part 2), against the real registry: the images
of ``test_verify`` (an honest multi-arch image, and the liar whose arm64 manifest starts the
amd64 BusyBox) used by Deployments, checked with ``--verify`` by check (text, JSON, GitHub
annotations, SARIF), mutate, fn, report and lock, and offline through the lock."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from support import SeededRegistry
from support.cli import Completed, clean_env, run_kmultiarch
from support.executables import honest_image, lying_image
from support.manifests import TEST_HOST, deployment, line_of, write_policy
from support.seed import Seeder

HONEST = f"{TEST_HOST}/pipeline/honest:1.0"
LIAR = f"{TEST_HOST}/pipeline/liar:1.0"
TOLERATION = (
    "      tolerations:\n"
    "      - {key: kubernetes.io/arch, operator: Equal, value: arm64, effect: NoSchedule}\n"
)
#: What check and mutate say of the liar (at the line of its container's image).
MISMATCH = (
    f"Deployment default/web: image '{LIAR}' of container 'c0' claims linux/arm64, but "
    "/bin/busybox is built for x86-64"
)


@pytest.fixture(scope="module")
def pushed(registry: SeededRegistry) -> None:
    with registry.client() as client:
        seeder = Seeder(client)
        seeder.push_manifest("pipeline/honest", honest_image(), "1.0")
        seeder.push_manifest("pipeline/liar", lying_image(), "1.0")


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return clean_env(tmp_path)


@pytest.fixture
def policy(tmp_path: Path, registry: SeededRegistry, pushed: None) -> Path:
    return write_policy(tmp_path / "policy.yaml", registry)


def manifests(path: Path, *, tolerated: bool = True) -> Path:
    """web runs the liar, ok the honest image; ``tolerated``: both already carry the arm64
    toleration, so that check passes when the registry is believed."""
    extra = TOLERATION if tolerated else ""
    path.write_text(
        deployment("web", [LIAR], extra_spec=extra)
        + "---\n"
        + deployment("ok", [HONEST], extra_spec=extra)
    )
    return path


def kmultiarch(
    args: list[str], policy: Path, env: dict[str, str], cwd: Path, stdin: str | None = None
) -> Completed:
    return run_kmultiarch([*args, "--config", str(policy)], env=env, cwd=cwd, stdin=stdin)


# -- check --verify warn -------------------------------------------------------------------


def test_check_warn_names_the_liar_in_every_format_and_keeps_the_exit_status(
    tmp_path: Path, policy: Path, env: dict[str, str]
) -> None:
    manifest = manifests(tmp_path / "app.yaml")
    line = line_of(manifest.read_text(), f"image: {LIAR}")
    believed = kmultiarch(["check", "app.yaml"], policy, env, tmp_path)
    assert believed.returncode == 0, believed.stdout + believed.stderr
    assert "platform-mismatch" not in believed.stdout + believed.stderr

    text = kmultiarch(["check", "--verify", "warn", "app.yaml"], policy, env, tmp_path)
    # Output bytes are unchanged, so the verdict is: a warning, not a failure.
    assert text.returncode == believed.returncode, text.stdout + text.stderr
    mismatches = [row for row in text.stdout.splitlines() if "[platform-mismatch]" in row]
    assert mismatches == [f"app.yaml:{line}: warning: {MISMATCH} [platform-mismatch]"]

    as_json = kmultiarch(
        ["check", "--verify", "warn", "-o", "json", "app.yaml"], policy, env, tmp_path
    )
    assert as_json.returncode == 0
    document = as_json.json()
    assert document["passed"] is True
    (problem,) = document["problems"]
    assert problem == {
        "rule": "platform-mismatch",
        "level": "warning",
        "message": MISMATCH,
        "source": "app.yaml",
        "line": line,
        "resource": {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "name": "web",
            "namespace": "default",
        },
        "fieldPath": "spec.template.spec.containers[0].image",
        "image": LIAR,
    }

    github = kmultiarch(
        ["check", "--verify", "warn", "app.yaml"],
        policy,
        {**env, "GITHUB_ACTIONS": "true"},
        tmp_path,
    )
    assert github.returncode == 0
    annotations = [row for row in github.stdout.splitlines() if row.startswith("::")]
    assert annotations == [
        f"::warning file=app.yaml,line={line},title=kmultiarch platform-mismatch::{MISMATCH}"
    ]

    sarif = kmultiarch(
        ["check", "--verify", "warn", "-o", "sarif", "app.yaml"], policy, env, tmp_path
    )
    assert sarif.returncode == 0
    (run,) = sarif.json()["runs"]
    rule_ids = [rule["id"] for rule in run["tool"]["driver"]["rules"]]
    (result,) = run["results"]
    assert result["ruleId"] == "platform-mismatch"
    assert rule_ids[result["ruleIndex"]] == "platform-mismatch"
    assert result["level"] == "warning"
    (location,) = result["locations"]
    assert location["physicalLocation"]["artifactLocation"]["uri"] == "app.yaml"
    assert location["physicalLocation"]["region"]["startLine"] == line


def test_a_warm_check_asks_the_registry_nothing(
    tmp_path: Path, registry: SeededRegistry, policy: Path, env: dict[str, str]
) -> None:
    manifests(tmp_path / "app.yaml")
    cold_log = registry.mark()
    started = time.monotonic()
    cold = kmultiarch(["check", "--verify", "warn", "app.yaml"], policy, env, tmp_path)
    cold_seconds = time.monotonic() - started
    cold_requests = cold_log.requests()
    assert any("/blobs/" in request.path for request in cold_requests), cold_requests
    warm_log = registry.mark()
    started = time.monotonic()
    warm = kmultiarch(["check", "--verify", "warn", "app.yaml"], policy, env, tmp_path)
    warm_seconds = time.monotonic() - started
    assert warm_log.requests() == []
    assert warm.stdout == cold.stdout and warm.returncode == cold.returncode == 0
    print(
        f"check --verify warn, 2 images: cold {len(cold_requests)} requests {cold_seconds:.2f} s, "
        f"warm 0 requests {warm_seconds:.2f} s"
    )


# -- mutate --verify enforce ---------------------------------------------------------------


def pod_spec(document: dict[str, Any]) -> dict[str, Any]:
    spec: dict[str, Any] = document["spec"]["template"]["spec"]
    return spec


def required_architectures(document: dict[str, Any]) -> list[list[str]]:
    """The ``kubernetes.io/arch In [...]`` values of each required node selector term."""
    terms = pod_spec(document)["affinity"]["nodeAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"
    ]["nodeSelectorTerms"]
    return [
        expression["values"]
        for term in terms
        for expression in term["matchExpressions"]
        if expression["key"] == "kubernetes.io/arch" and expression["operator"] == "In"
    ]


def test_mutate_enforce_keeps_the_liar_off_arm64(
    tmp_path: Path, policy: Path, env: dict[str, str]
) -> None:
    manifests(tmp_path / "app.yaml", tolerated=False)
    believed = kmultiarch(["mutate", "app.yaml"], policy, env, tmp_path)
    warned = kmultiarch(["mutate", "--verify", "warn", "app.yaml"], policy, env, tmp_path)
    assert warned.stdout == believed.stdout  # warn changes no byte
    assert "warning: app.yaml:" in warned.stderr and MISMATCH in warned.stderr

    enforced = kmultiarch(["mutate", "--verify", "enforce", "app.yaml"], policy, env, tmp_path)
    assert enforced.returncode == 0, enforced.stderr
    assert MISMATCH in enforced.stderr
    web, ok = yaml.safe_load_all(enforced.stdout)
    assert "tolerations" not in pod_spec(web)
    assert required_architectures(web) == [["amd64"]]
    # The honest image keeps every platform it claims: the toleration, as without --verify.
    assert pod_spec(ok) == pod_spec(list(yaml.safe_load_all(believed.stdout))[1])
    assert pod_spec(ok)["tolerations"][0]["value"] == "arm64"


def test_mutate_enforce_under_failure_policy_fail_writes_nothing(
    tmp_path: Path, registry: SeededRegistry, pushed: None, env: dict[str, str]
) -> None:
    policy = write_policy(
        tmp_path / "policy.yaml",
        registry,
        {"failurePolicy": "Fail", "verify": {"mode": "enforce"}},
    )
    manifests(tmp_path / "app.yaml", tolerated=False)
    result = kmultiarch(["mutate", "app.yaml"], policy, env, tmp_path)
    assert result.returncode == 1
    assert result.stdout == ""
    line = line_of((tmp_path / "app.yaml").read_text(), f"image: {LIAR}")
    assert f"kmultiarch: error: app.yaml:{line}: {MISMATCH}" in result.stderr
    assert "nothing was written" in result.stderr
    # The option wins over the policy: warn, the run passes.
    warned = kmultiarch(["mutate", "--verify", "warn", "app.yaml"], policy, env, tmp_path)
    assert warned.returncode == 0, warned.stderr


# -- fn ------------------------------------------------------------------------------------


def test_the_krm_function_gives_a_result(tmp_path: Path, policy: Path, env: dict[str, str]) -> None:
    items = list(yaml.safe_load_all(manifests(tmp_path / "app.yaml").read_text()))
    resource_list = {
        "apiVersion": "config.kubernetes.io/v1",
        "kind": "ResourceList",
        "items": items,
        # The function's policy is its functionConfig (the registry mirror); --verify wins.
        "functionConfig": yaml.safe_load(policy.read_text()),
    }
    result = kmultiarch(
        ["fn", "--verify", "warn"], policy, env, tmp_path, json.dumps(resource_list)
    )
    assert result.returncode == 0, result.stderr
    output = yaml.safe_load(result.stdout)
    (mismatch,) = [r for r in output["results"] if "claims linux/arm64" in r["message"]]
    assert mismatch == {
        "message": MISMATCH.removeprefix("Deployment default/web: "),
        "severity": "warning",
        "resourceRef": {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "name": "web",
            "namespace": "default",
        },
        "field": {"path": "spec.template.spec.containers[0].image"},
        "tags": {"image": LIAR},
    }
    assert output["items"] == items  # warn: no item changed
    enforced = kmultiarch(
        ["fn", "--verify", "enforce"], policy, env, tmp_path, json.dumps(resource_list)
    )
    web = yaml.safe_load(enforced.stdout)["items"][0]
    assert required_architectures(web) == [["amd64"]]


# -- report --------------------------------------------------------------------------------


def test_report_shows_each_image_verification(
    tmp_path: Path, policy: Path, env: dict[str, str]
) -> None:
    manifests(tmp_path / "app.yaml")
    plain = kmultiarch(["report", "app.yaml"], policy, env, tmp_path)
    assert "Verification" not in plain.stdout
    text = kmultiarch(["report", "--verify", "warn", "app.yaml"], policy, env, tmp_path)
    assert text.returncode == 0, text.stderr
    section = text.stdout[text.stdout.index("Verification") : text.stdout.index("Workloads")]
    lines = [row.split() for row in section.splitlines()[1:] if row.strip()]
    assert lines[0] == [HONEST]
    assert lines[1][:3] == ["linux/amd64", "verified", "/bin/busybox"]
    assert lines[-2][:3] == ["linux/amd64", "verified", "/bin/busybox"]
    assert lines[-1][:2] == ["linux/arm64", "MISMATCH"]
    as_json = kmultiarch(
        ["report", "--verify", "warn", "-o", "json", "app.yaml"], policy, env, tmp_path
    )
    images = {image["image"]: image for image in as_json.json()["images"]}
    liar = images[LIAR]["verification"]
    assert liar["error"] is None
    assert {p["platform"]: p["status"] for p in liar["platforms"]} == {
        "linux/amd64": "verified",
        "linux/arm64": "mismatch",
    }
    assert (
        "verification"
        not in kmultiarch(["report", "-o", "json", "app.yaml"], policy, env, tmp_path).json()[
            "images"
        ][0]
    )
    html = kmultiarch(
        ["report", "--verify", "warn", "-o", "html", "app.yaml"], policy, env, tmp_path
    )
    assert "<th>Verification</th>" in html.stdout
    assert '<span class="badge bad">linux/arm64 mismatch</span>' in html.stdout


# -- the lock, offline ---------------------------------------------------------------------


def test_offline_through_the_lock_asks_no_registry(
    tmp_path: Path, registry: SeededRegistry, policy: Path, env: dict[str, str]
) -> None:
    manifests(tmp_path / "app.yaml")
    made = kmultiarch(
        ["lock", "--verify", "warn", "app.yaml", "-o", "app.lock"], policy, env, tmp_path
    )
    assert made.returncode == 0, made.stderr
    assert f"mismatch: 1 ({LIAR} linux/arm64)" in made.stderr
    entries = yaml.safe_load((tmp_path / "app.lock").read_text())["images"]
    verdicts = entries[LIAR]["verified"]
    assert entries[LIAR]["platforms"] == ["linux/amd64", "linux/arm64"]  # the claim
    assert {platform: v["status"] for platform, v in verdicts.items()} == {
        "linux/amd64": "verified",
        "linux/arm64": "mismatch",
    }
    assert verdicts["linux/arm64"]["machine"] == "x86-64"

    # Another machine, no cache: the lock alone.
    offline_env = clean_env(tmp_path / "elsewhere")
    log = registry.mark()
    offline = ["--lock", "app.lock", "--offline", "app.yaml"]
    checked = kmultiarch(["check", "--verify", "warn", *offline], policy, offline_env, tmp_path)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    line = line_of((tmp_path / "app.yaml").read_text(), f"image: {LIAR}")
    assert f"app.yaml:{line}: warning: {MISMATCH} [platform-mismatch]" in checked.stdout
    enforced = kmultiarch(
        ["mutate", "--verify", "enforce", *offline], policy, offline_env, tmp_path
    )
    web = next(yaml.safe_load_all(enforced.stdout))
    assert required_architectures(web) == [["amd64"]]
    # Without --verify the recorded verdicts say nothing.
    believed = kmultiarch(["check", *offline], policy, offline_env, tmp_path)
    assert "platform-mismatch" not in believed.stdout
    assert log.requests() == []


def test_offline_without_recorded_verdicts_says_so(
    tmp_path: Path, registry: SeededRegistry, policy: Path, env: dict[str, str]
) -> None:
    manifests(tmp_path / "app.yaml")
    made = kmultiarch(["lock", "app.yaml", "-o", "app.lock"], policy, env, tmp_path)
    assert made.returncode == 0, made.stderr
    assert "verified:" not in (tmp_path / "app.lock").read_text()  # nothing with off
    log = registry.mark()
    checked = kmultiarch(
        ["check", "--verify", "warn", "--lock", "app.lock", "--offline", "app.yaml"],
        policy,
        env,
        tmp_path,
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "platform-mismatch" not in checked.stdout
    assert (
        "kmultiarch: warning: 2 images not verified "
        f"({HONEST}, {LIAR}): the lock records no verdict for them"
    ) in checked.stderr
    assert log.requests() == []


def test_lock_enforce_records_the_claim(tmp_path: Path, policy: Path, env: dict[str, str]) -> None:
    """The lock is what the registry says and what verifying found; each render that reads
    it decides under its own mode."""
    manifests(tmp_path / "app.yaml")
    made = kmultiarch(
        ["lock", "--verify", "enforce", "app.yaml", "-o", "app.lock"], policy, env, tmp_path
    )
    assert made.returncode == 0, made.stderr
    entries = yaml.safe_load((tmp_path / "app.lock").read_text())["images"]
    assert entries[LIAR]["platforms"] == ["linux/amd64", "linux/arm64"]
    assert entries[LIAR]["verified"]["linux/arm64"]["status"] == "mismatch"
