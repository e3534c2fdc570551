"""Scheduling (issue 12) through the command line, against the real registry: the namespace of
resources that name none (``--namespace``, ``$KMULTIARCH_NAMESPACE``), and ``check`` naming
a constraint of several terms and warning about a pinned pod."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from support import SeededRegistry
from support.cli import clean_env, run_kmultiarch
from support.manifests import image, write_policy


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return clean_env(tmp_path)


def pod(reference: str, *, name: str = "p", extra: str = "") -> str:
    return (
        f"apiVersion: v1\nkind: Pod\nmetadata:\n  name: {name}\nspec:\n{extra}"
        f"  containers:\n  - name: c\n    image: {reference}\n"
    )


def test_resources_without_a_namespace_are_in_the_namespace_given(
    tmp_path: Path, registry: SeededRegistry, env: dict[str, str]
) -> None:
    config = write_policy(
        tmp_path / "policy.yaml", registry, {"exclude": {"namespaces": ["kube-*"]}}
    )
    manifest = tmp_path / "pod.yaml"
    manifest.write_text(pod(image(registry, "single-docker-amd64")))
    base = ["mutate", "--config", str(config), str(manifest)]

    default = run_kmultiarch(base, env=env)
    assert default.returncode == 0, default.stderr
    assert "affinity" in default.stdout  # in "default": not excluded

    for args, extra_env in (
        (["--namespace", "kube-system"], {}),
        (["-n", "kube-system"], {}),
        ([], {"KMULTIARCH_NAMESPACE": "kube-system"}),
    ):
        excluded = run_kmultiarch([*base, *args], env={**env, **extra_env})
        assert excluded.returncode == 0, excluded.stderr
        assert excluded.stdout == manifest.read_text(), args


def test_check_names_the_terms_of_a_pod_for_two_operating_systems(
    tmp_path: Path, registry: SeededRegistry, env: dict[str, str]
) -> None:
    # windows-linux: windows/amd64 (build 10.0.17763) and linux/amd64; the cluster also has
    # linux/arm64 nodes and Windows nodes of unknown builds.
    config = write_policy(
        tmp_path / "policy.yaml",
        registry,
        {"platforms": ["linux/amd64", "linux/arm64", "windows/amd64"], "tolerations": {}},
    )
    manifest = tmp_path / "pods.yaml"
    manifest.write_text(
        pod(image(registry, "windows-linux"), name="both")
        + "---\n"
        + pod(image(registry, "single-oci-arm64"), name="pinned", extra="  nodeName: node-7\n")
    )
    result = run_kmultiarch(["check", "--config", str(config), str(manifest)], env=env)
    assert result.returncode == 1, result.stderr
    assert (
        "require node affinity (kubernetes.io/arch In [amd64] and kubernetes.io/os In [linux]) "
        "or (kubernetes.io/arch In [amd64] and kubernetes.io/os In [windows] and "
        "node.kubernetes.io/windows-build In [10.0.17763])"
    ) in result.stdout + result.stderr
    assert "spec.nodeName pins the pod to node node-7" in result.stdout + result.stderr

    mutated = run_kmultiarch(["mutate", "--config", str(config), str(manifest)], env=env)
    assert mutated.returncode == 0, mutated.stderr
    assert "spec.nodeName pins the pod to node node-7" in mutated.stderr
    both, pinned = yaml.safe_load_all(mutated.stdout)
    assert "affinity" not in pinned["spec"]
    terms = both["spec"]["affinity"]["nodeAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"
    ]["nodeSelectorTerms"]
    assert len(terms) == 2
