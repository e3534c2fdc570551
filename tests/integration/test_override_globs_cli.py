"""Overrides written as users write image names, through the real CLI (issue 36, item 16):
``{image: acme/app:1.0}`` and ``nginx:*`` answer ``acme/app:1.0`` and ``nginx:1.25`` (offline:
nothing else could), in check, mutate and the KRM function; an override that matches no image
of the run is a warning naming it and the policy file. Before, both images "could not be
resolved" and nothing pointed at the overrides."""

from __future__ import annotations

from pathlib import Path

import yaml
from support.cli import clean_env, run_kmultiarch
from support.manifests import deployment

POLICY = """\
apiVersion: kmultiarch.dev/v1alpha1
kind: MultiArchPolicy
metadata: {name: overrides}
spec:
  overrides:
  - {image: acme/app:1.0, platforms: [linux/amd64]}
  - {image: "nginx:*", platforms: [linux/amd64, linux/arm64]}
  - {image: "acme/typo:*", platforms: [linux/arm64]}
"""
TYPO = "spec.overrides[2] {image: 'acme/typo:*'}"


def test_overrides_written_as_users_write_image_names_match_and_an_unused_one_is_said(
    tmp_path: Path,
) -> None:
    env = clean_env(tmp_path)
    policy = tmp_path / "policy.yaml"
    policy.write_text(POLICY)
    manifest = tmp_path / "web.yaml"
    manifest.write_text(deployment("web", ["acme/app:1.0", "nginx:1.25"]))

    checked = run_kmultiarch(
        ["check", "-o", "json", "--offline", "--config", str(policy), str(manifest)], env=env
    )
    report = checked.json()
    assert [p["rule"] for p in report["problems"]] == ["needs-scheduling"], checked.stdout
    assert "could not be resolved" not in checked.stdout + checked.stderr
    assert f"the override {TYPO} of the policy {policy} matched no image" in checked.stderr
    # only the typo is said
    assert checked.stderr.count("matched no image") == 1

    mutated = run_kmultiarch(
        ["mutate", "--offline", "--config", str(policy), str(manifest)], env=env
    )
    assert mutated.returncode == 0, mutated.stderr
    pod = yaml.safe_load(mutated.stdout)["spec"]["template"]["spec"]
    required = pod["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert required["nodeSelectorTerms"][0]["matchExpressions"][0]["values"] == ["amd64"]
    assert "2 declared by overrides" in mutated.stderr
    assert TYPO in mutated.stderr

    resource_list = {
        "apiVersion": "config.kubernetes.io/v1",
        "kind": "ResourceList",
        "items": [yaml.safe_load(manifest.read_text())],
        "functionConfig": yaml.safe_load(POLICY),
    }
    ran = run_kmultiarch(["fn"], env=env, stdin=yaml.safe_dump(resource_list))
    assert ran.returncode == 0, ran.stderr
    results = yaml.safe_load(ran.stdout)["results"]
    assert any(TYPO in r["message"] and r["severity"] == "warning" for r in results), results
    assert not any("could not be resolved" in r["message"] for r in results)
