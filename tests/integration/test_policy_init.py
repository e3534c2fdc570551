"""``kmultiarch policy init`` on Node and NodePool fixtures, and the ``policy-drift`` warning of
``check``, ``mutate`` and the KRM function when a NodePool in the stream offers more than the
policy knows."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from support import SeededRegistry
from support.cli import clean_env, run_kmultiarch
from support.manifests import TEST_HOST, deployment, image, write_policy

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "cluster"
S390X_POOL = """\
apiVersion: karpenter.sh/v1
kind: NodePool
metadata:
  name: mainframe
spec:
  template:
    spec:
      requirements:
      - key: kubernetes.io/arch
        operator: In
        values: [s390x]
      taints:
      - {key: arch, value: s390x, effect: NoSchedule}
"""


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return clean_env(tmp_path)


def test_policy_from_a_nodes_snapshot_drives_mutate(
    tmp_path: Path, registry: SeededRegistry, env: dict[str, str]
) -> None:
    result = run_kmultiarch(["policy", "init", str(FIXTURES / "nodes.yaml")], env=env)
    assert result.returncode == 0, result.stderr
    assert "#   Node ip-10-0-2-40.ec2.internal: linux/arm64; taints kubernetes.io/arch=arm64" in (
        result.stdout
    )
    policy = yaml.safe_load(result.stdout)
    assert policy["spec"]["platforms"] == ["linux/amd64", "linux/arm64", "windows/amd64:10.0.17763"]
    assert policy["spec"]["tolerations"] == {
        "linux/arm64": [
            {
                "key": "kubernetes.io/arch",
                "operator": "Equal",
                "value": "arm64",
                "effect": "NoSchedule",
            }
        ],
        "windows/amd64:10.0.17763": [
            {"key": "os", "operator": "Equal", "value": "windows", "effect": "NoSchedule"}
        ],
    }
    policy["spec"]["registries"] = {TEST_HOST: {"mirror": registry.url}}
    config = tmp_path / "policy.yaml"
    config.write_text(yaml.safe_dump(policy))
    manifest = tmp_path / "app.yaml"
    manifest.write_text(deployment("web", [image(registry, "multiarch-oci")]))
    mutated = run_kmultiarch(["mutate", "--config", str(config), str(manifest)], env=env)
    assert mutated.returncode == 0, mutated.stderr
    pod = yaml.safe_load(mutated.stdout)["spec"]["template"]["spec"]
    assert pod["tolerations"] == policy["spec"]["tolerations"]["linux/arm64"]
    required = pod["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert required["nodeSelectorTerms"][0]["matchExpressions"] == [
        {"key": "kubernetes.io/os", "operator": "In", "values": ["linux"]}
    ]


def test_policy_from_nodepools_on_stdin(env: dict[str, str]) -> None:
    text = (FIXTURES / "nodepools.yaml").read_text()
    result = run_kmultiarch(["policy", "init", "--name", "prod"], env=env, stdin=text)
    assert result.returncode == 0, result.stderr
    policy = yaml.safe_load(result.stdout)
    assert policy["metadata"] == {"name": "prod"}
    assert policy["spec"] == {
        "platforms": ["linux/amd64", "linux/arm64"],
        # graviton-gpu's nvidia.com/gpu taint is not needed: graviton offers arm64 without it
        "tolerations": {
            "linux/arm64": [
                {
                    "key": "kubernetes.io/arch",
                    "operator": "Equal",
                    "value": "arm64",
                    "effect": "NoSchedule",
                }
            ]
        },
    }


def test_policy_init_without_nodes_is_a_clear_error(tmp_path: Path, env: dict[str, str]) -> None:
    manifest = tmp_path / "app.yaml"
    manifest.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n")
    result = run_kmultiarch(["policy", "init", str(manifest)], env=env)
    assert result.returncode == 2
    assert f"{manifest}: no Node (kubectl get nodes -o yaml) and no Karpenter NodePool" in (
        result.stderr
    )


def test_check_mutate_and_fn_warn_of_a_nodepool_the_policy_lacks(
    tmp_path: Path, registry: SeededRegistry, env: dict[str, str]
) -> None:
    config = write_policy(tmp_path / "policy.yaml", registry)
    manifest = tmp_path / "cluster.yaml"
    app = deployment(
        "web",
        [image(registry, "multiarch-oci")],
        extra_spec="      tolerations:\n"
        "      - {key: kubernetes.io/arch, operator: Equal, value: arm64, effect: NoSchedule}\n",
    )
    manifest.write_text(f"{app}---\n{S390X_POOL}")
    checked = run_kmultiarch(
        ["check", "-o", "json", "--config", str(config), str(manifest)], env=env
    )
    assert checked.returncode == 0, checked.stdout  # a warning does not fail the gate
    problems = [p for p in checked.json()["problems"] if p["rule"] == "policy-drift"]
    messages = [p["message"] for p in problems]
    assert messages == [
        "NodePool mainframe: offers linux/s390x, which spec.platforms of the policy "
        "(linux/amd64, linux/arm64) lacks"
    ]
    assert problems[0]["level"] == "warning"

    mutated = run_kmultiarch(["mutate", "--config", str(config), str(manifest)], env=env)
    assert mutated.returncode == 0
    assert "NodePool mainframe: offers linux/s390x" in mutated.stderr

    resource_list = {
        "apiVersion": "config.kubernetes.io/v1",
        "kind": "ResourceList",
        "items": [yaml.safe_load(S390X_POOL)],
        "functionConfig": yaml.safe_load(config.read_text()),
    }
    krm = run_kmultiarch(["fn"], env=env, stdin=json.dumps(resource_list))
    assert krm.returncode == 0, krm.stderr
    results = yaml.safe_load(krm.stdout)["results"]
    drift = [r for r in results if "linux/s390x" in r["message"]]
    assert drift and drift[0]["severity"] == "warning"
    assert drift[0]["resourceRef"]["kind"] == "NodePool"
    assert drift[0]["field"] == {"path": "spec.template.spec"}


def _node(name: str, arch: str, taints: list[dict[str, str]] | None = None) -> dict[str, object]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {"kubernetes.io/os": "linux", "kubernetes.io/arch": arch},
        },
        "spec": {"taints": taints or []},
    }


#: A node name that ends the header comment line, writes a policy of its own, and opens a
#: single-quoted scalar that a later taint effect holding ``'`` closes, swallowing the rest.
FORGING_NAME = (
    "n\napiVersion: kmultiarch.dev/v1alpha1\nkind: MultiArchPolicy\n"
    "spec: {platforms: [linux/arm64], tolerations: {linux/arm64: [{operator: Exists}]}}\n"
    "metadata: '"
)


def test_a_node_name_with_line_breaks_cannot_rewrite_the_printed_policy(
    tmp_path: Path, env: dict[str, str]
) -> None:
    """Node names and taint text were copied raw into the header comment: this name, closed by
    the effect x' of a taint in the YAML below it, made the printed policy tolerate everything
    on linux/arm64 only ({operator: Exists}), and kmultiarch loaded it."""
    nodes = {
        "apiVersion": "v1",
        "kind": "List",
        "items": [
            _node("gpu", "arm64", [{"key": "k", "value": "v", "effect": "x'"}]),
            _node(FORGING_NAME, "amd64"),
        ],
    }
    source = tmp_path / "nodes.json"
    source.write_text(json.dumps(nodes))
    result = run_kmultiarch(["policy", "init", str(source)], env=env)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[:4] == [
        "# Written by `kmultiarch policy init` from:",
        "#   Node gpu: linux/arm64",
        "#   Node n\\napiVersion: kmultiarch.dev/v1alpha1\\nkind: MultiArchPolicy\\nspec: "
        "{platforms: [linux/arm64], tolerations: {linux/arm64: [{operator: Exists}]}}\\n"
        "metadata: ': linux/amd64",
        "apiVersion: kmultiarch.dev/v1alpha1",
    ]
    assert "taint k=v:x' left out" in result.stderr
    printed = tmp_path / "policy.yaml"
    printed.write_text(result.stdout)
    assert yaml.safe_load(result.stdout)["spec"] == {
        "platforms": ["linux/amd64", "linux/arm64"],
        "tolerations": {},
    }
    manifest = tmp_path / "app.yaml"
    manifest.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n")
    loaded = run_kmultiarch(["mutate", "--config", str(printed), str(manifest)], env=env)
    assert loaded.returncode == 0, loaded.stderr


def test_a_taint_effect_kubernetes_does_not_have_is_left_out_with_a_warning(
    tmp_path: Path, env: dict[str, str]
) -> None:
    """A taint effect NoSchedul was copied into the policy, which kmultiarch itself then
    refused (exit 2)."""
    nodes = {
        "apiVersion": "v1",
        "kind": "List",
        "items": [
            _node("amd", "amd64"),
            _node(
                "arm",
                "arm64",
                [
                    {"key": "kubernetes.io/arch", "value": "arm64", "effect": "NoSchedule"},
                    {"key": "dedicated", "value": "batch", "effect": "NoSchedul"},
                ],
            ),
        ],
    }
    source = tmp_path / "nodes.json"
    source.write_text(json.dumps(nodes))
    result = run_kmultiarch(["policy", "init", str(source)], env=env)
    assert result.returncode == 0, result.stderr
    assert result.stderr.splitlines() == [
        "kmultiarch: warning: Node arm: taint dedicated=batch:NoSchedul left out: Kubernetes "
        "has no taint effect 'NoSchedul' (NoSchedule, PreferNoSchedule, NoExecute)"
    ]
    printed = tmp_path / "policy.yaml"
    printed.write_text(result.stdout)
    assert yaml.safe_load(result.stdout)["spec"]["tolerations"] == {
        "linux/arm64": [
            {
                "key": "kubernetes.io/arch",
                "operator": "Equal",
                "value": "arm64",
                "effect": "NoSchedule",
            }
        ]
    }
    manifest = tmp_path / "app.yaml"
    manifest.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n")
    loaded = run_kmultiarch(["mutate", "--config", str(printed), str(manifest)], env=env)
    assert loaded.returncode == 0, loaded.stderr
