"""The worked examples in ``examples/`` run as their READMEs say, with the real tools, and come
out as their ``expected*.yaml`` files say, byte for byte.

Each example is copied to a temporary directory whose policy mirrors ``registry.test`` to the
test registry. Set ``KMULTIARCH_UPDATE_EXAMPLES=1`` to rewrite the expected files, then review
the diff.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml
from support import SeededRegistry
from support.cli import run_kmultiarch
from support.tools import (
    EXAMPLES,
    PLUGIN,
    assert_expected,
    helm_binary,
    kpt_binary,
    kubectl_binary,
    load_all,
    run_tool,
    succeeded,
    tool_env,
    write_mirrored_policy,
)


def copy_example(name: str, tmp_path: Path, registry: SeededRegistry, policy: str) -> Path:
    """The example in a scratch directory, its policy mirroring registry.test."""
    target = tmp_path / name
    shutil.copytree(EXAMPLES / name, target)
    write_mirrored_policy(target / policy, registry.url, source=target / policy)
    return target


# --- examples/kustomize-krm: the exec KRM function ------------------------------------------

KRM = EXAMPLES / "kustomize-krm"
FUNCTION_ANNOTATION = "config.kubernetes.io/function"


def test_krm_example_is_wired_for_kustomize_and_kpt() -> None:
    kustomization = yaml.safe_load((KRM / "kustomization.yaml").read_text())
    assert kustomization["transformers"] == ["multiarch.yaml"]
    config = yaml.safe_load((KRM / "multiarch.yaml").read_text())
    assert (config["apiVersion"], config["kind"]) == ("kmultiarch.dev/v1alpha1", "MultiArchPolicy")
    function = yaml.safe_load(config["metadata"]["annotations"][FUNCTION_ANNOTATION])
    assert function == {"exec": {"path": "kmultiarch-fn"}}
    kptfile = yaml.safe_load((KRM / "Kptfile").read_text())
    assert kptfile["pipeline"]["mutators"] == [
        {"exec": "kmultiarch-fn", "configPath": "multiarch.yaml"}
    ]


def test_krm_example_through_a_resource_list(registry: SeededRegistry, tmp_path: Path) -> None:
    """What kustomize --enable-exec sends: the resources as items, annotated with their file
    and index, and the transformer config as functionConfig."""
    example = copy_example("kustomize-krm", tmp_path, registry, "multiarch.yaml")
    items = load_all((example / "workloads.yaml").read_text())
    for index, item in enumerate(items):
        item["metadata"].setdefault("annotations", {}).update(
            {
                "config.kubernetes.io/path": "workloads.yaml",
                "config.kubernetes.io/index": str(index),
                "internal.config.kubernetes.io/path": "workloads.yaml",
                "internal.config.kubernetes.io/index": str(index),
            }
        )
    resource_list = {
        "apiVersion": "config.kubernetes.io/v1",
        "kind": "ResourceList",
        "items": items,
        "functionConfig": yaml.safe_load((example / "multiarch.yaml").read_text()),
    }
    result = run_kmultiarch(
        ["fn"], env=tool_env(tmp_path), stdin=yaml.safe_dump(resource_list, sort_keys=False)
    )
    output = yaml.safe_load(succeeded(result))
    for item in output["items"]:
        annotations = item["metadata"]["annotations"]
        assert annotations.pop("config.kubernetes.io/path") == "workloads.yaml"
        for key in list(annotations):
            if key.startswith(("config.kubernetes.io/", "internal.config.kubernetes.io/")):
                del annotations[key]
        if not annotations:
            del item["metadata"]["annotations"]
    assert output["items"] == load_all((KRM / "expected.yaml").read_text())
    assert output["results"] == [
        {
            "message": "kmultiarch: 2 pod specs, 2 changed; 3 images: 0 from cache or lock, "
            "3 looked up",
            "severity": "info",
        }
    ]


def test_krm_example_with_kpt_render(registry: SeededRegistry, tmp_path: Path) -> None:
    kpt = kpt_binary()
    example = copy_example("kustomize-krm", tmp_path, registry, "multiarch.yaml")
    (example / "expected.yaml").unlink()  # kpt would read it as part of the package
    succeeded(run_tool([kpt, "fn", "render", "--allow-exec", example], env=tool_env(tmp_path)))
    assert_expected((example / "workloads.yaml").read_text(), KRM / "expected.yaml")


def test_krm_example_expected_is_what_mutate_writes(
    registry: SeededRegistry, tmp_path: Path
) -> None:
    example = copy_example("kustomize-krm", tmp_path, registry, "multiarch.yaml")
    result = run_kmultiarch(
        [
            "mutate",
            "-q",
            "--config",
            str(example / "multiarch.yaml"),
            str(example / "workloads.yaml"),
        ],
        env=tool_env(tmp_path),
    )
    assert_expected(succeeded(result), KRM / "expected.yaml")


# --- examples/kustomize-overlay: the legacy exec plugin --------------------------------------

OVERLAY = EXAMPLES / "kustomize-overlay"


def test_overlay_example_with_kubectl_kustomize(registry: SeededRegistry, tmp_path: Path) -> None:
    example = copy_example("kustomize-overlay", tmp_path, registry, "overlays/prod/multiarch.yaml")
    env = tool_env(tmp_path, {"KUSTOMIZE_PLUGIN_HOME": str(PLUGIN / "kustomize")})
    result = run_tool(
        [kubectl_binary(), "kustomize", "--enable-alpha-plugins", example / "overlays" / "prod"],
        env=env,
    )
    assert_expected(succeeded(result), OVERLAY / "expected.yaml")

    # The README's pipe: the overlay without the transformer, through kmultiarch mutate.
    kustomization = example / "overlays" / "prod" / "kustomization.yaml"
    kustomization.write_text(
        kustomization.read_text().replace("transformers:\n- multiarch.yaml\n", "")
    )
    built = succeeded(
        run_tool([kubectl_binary(), "kustomize", example / "overlays" / "prod"], env=env)
    )
    piped = run_kmultiarch(
        ["mutate", "--config", str(example / "overlays" / "prod" / "multiarch.yaml")],
        env=env,
        stdin=built,
    )
    assert load_all(succeeded(piped)) == load_all((OVERLAY / "expected.yaml").read_text())


# --- examples/helm-chart: Helm 4 plugin, Helm 3 post-renderer, template pipe -----------------

HELM_CHART = EXAMPLES / "helm-chart"


@pytest.fixture
def chart_example(registry: SeededRegistry, tmp_path: Path) -> tuple[Path, dict[str, Any]]:
    example = copy_example("helm-chart", tmp_path, registry, "policy.yaml")
    home = tmp_path / "helm-home"
    env = tool_env(
        tmp_path,
        {
            "KMULTIARCH_CONFIG": str(example / "policy.yaml"),
            "HELM_DATA_HOME": str(home / "data"),
            "HELM_CONFIG_HOME": str(home / "config"),
            "HELM_CACHE_HOME": str(home / "cache"),
            "KUBECONFIG": str(tmp_path / "no-kubeconfig"),
        },
    )
    return example, env


def test_helm_chart_example_with_the_helm4_plugin(
    chart_example: tuple[Path, dict[str, Any]],
) -> None:
    example, env = chart_example
    helm4 = helm_binary(4)
    succeeded(run_tool([helm4, "plugin", "install", PLUGIN / "helm"], env=env))
    result = run_tool(
        [helm4, "template", "storefront", example / "chart", "--post-renderer", "kmultiarch"],
        env=env,
    )
    assert_expected(succeeded(result), HELM_CHART / "expected-helm4.yaml")


def test_helm_chart_example_with_the_helm3_post_renderer(
    chart_example: tuple[Path, dict[str, Any]],
) -> None:
    example, env = chart_example
    result = run_tool(
        [
            helm_binary(3),
            "template",
            "storefront",
            example / "chart",
            "--post-renderer",
            "kmultiarch",
            "--post-renderer-args",
            "mutate",
        ],
        env=env,
    )
    assert_expected(succeeded(result), HELM_CHART / "expected-helm3.yaml")


@pytest.mark.parametrize("major", [3, 4])
def test_helm_chart_example_through_a_pipe(
    chart_example: tuple[Path, dict[str, Any]], major: int
) -> None:
    example, env = chart_example
    rendered = succeeded(
        run_tool([helm_binary(major), "template", "storefront", example / "chart"], env=env)
    )
    result = run_kmultiarch(["mutate", "-q"], env=env, stdin=rendered)
    assert_expected(succeeded(result), HELM_CHART / "expected-template-pipe.yaml")


def test_every_example_has_its_expected_output() -> None:
    for example, expected in (
        ("kustomize-krm", ["expected.yaml"]),
        ("container-fn", ["expected.yaml"]),
        ("kustomize-overlay", ["expected.yaml"]),
        (
            "helm-chart",
            ["expected-helm4.yaml", "expected-helm3.yaml", "expected-template-pipe.yaml"],
        ),
    ):
        for name in expected:
            text = (EXAMPLES / example / name).read_text()
            assert "key: kubernetes.io/arch" in text, (example, name)
        assert (EXAMPLES / example / "README.md").exists()
