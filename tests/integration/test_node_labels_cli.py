"""Node labels that fix the architecture (issue 30), through the command line against the real
registry: each shape of the issue's "Why" (a pod that selects Graviton nodes by instance type,
GKE's Arm compute class or machine family, Karpenter's CPU manufacturer or instance family, a
NodePool of the stream) with an amd64-only image is a scheduling-conflict that ``check``
fails on, in every output format, and that ``mutate`` leaves unchanged with a warning naming
the label, its value and what it means; before, each got ``kubernetes.io/arch In [amd64]``
(a pod no node can take) and exit 0. A multi-arch image on such nodes gets the toleration only
where they are arm64, and no arch expression; a policy's ``nodeLabels`` extend the table."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from support import SeededRegistry
from support.cli import clean_env, run_kmultiarch
from support.manifests import deployment, image, write_policy

GRAVITON_POOL = """---
apiVersion: karpenter.sh/v1
kind: NodePool
metadata:
  name: graviton
spec:
  template:
    spec:
      requirements:
      - key: kubernetes.io/arch
        operator: In
        values: [arm64]
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
"""

ARM_CLASS = """---
apiVersion: cloud.google.com/v1
kind: ComputeClass
metadata:
  name: axion
spec:
  priorities:
  - machineFamily: c4a
  - machineFamily: t2a
"""

#: (label, value, what the message says it means, documents the stream adds)
SHAPES = [
    ("node.kubernetes.io/instance-type", "m7g.large", "arm64 nodes (an AWS Graviton", ""),
    ("cloud.google.com/compute-class", "autopilot-arm", "arm64 nodes (GKE's built-in Arm", ""),
    ("cloud.google.com/machine-family", "c4a", "arm64 nodes (a Google Cloud Arm", ""),
    ("karpenter.k8s.aws/instance-cpu-manufacturer", "aws", "arm64 nodes (AWS Graviton", ""),
    ("karpenter.k8s.aws/instance-family", "c7g", "arm64 nodes (an AWS Graviton", ""),
    (
        "karpenter.sh/nodepool",
        "graviton",
        "linux/arm64 nodes (the NodePool graviton",
        GRAVITON_POOL,
    ),
    ("cloud.google.com/compute-class", "axion", "arm64 nodes (the ComputeClass axion", ARM_CLASS),
]


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return clean_env(tmp_path)


def _selecting(reference: str, label: str, value: str, extra: str = "") -> str:
    return (
        deployment(
            "web", [reference], extra_spec=f"      nodeSelector:\n        {label}: {value}\n"
        )
        + extra
    )


@pytest.mark.parametrize(("label", "value", "means", "extra"), SHAPES, ids=[s[1] for s in SHAPES])
def test_an_amd64_only_pod_on_nodes_a_label_makes_arm64_is_a_conflict(
    tmp_path: Path,
    registry: SeededRegistry,
    env: dict[str, str],
    label: str,
    value: str,
    means: str,
    extra: str,
) -> None:
    config = write_policy(tmp_path / "policy.yaml", registry)
    manifest = tmp_path / "web.yaml"
    manifest.write_text(_selecting(image(registry, "single-docker-amd64"), label, value, extra))

    mutated = run_kmultiarch(["mutate", "--config", str(config), str(manifest)], env=env)
    assert mutated.returncode == 0, mutated.stderr
    assert mutated.stdout == manifest.read_text()  # left unchanged
    assert f"nodeSelector {label}={value} means {means}" in mutated.stderr
    assert "the images run only on linux/amd64" in mutated.stderr

    checked = run_kmultiarch(["check", "--config", str(config), str(manifest)], env=env)
    assert checked.returncode == 1, checked.stdout + checked.stderr
    assert "[scheduling-conflict]" in checked.stdout + checked.stderr
    assert f"{label}={value} means {means}" in checked.stdout + checked.stderr

    for output in ("json", "sarif", "github", "gitlab", "markdown"):
        formatted = run_kmultiarch(
            ["check", "-o", output, "--config", str(config), str(manifest)], env=env
        )
        assert formatted.returncode == 1, (output, formatted.stderr)
        # Markdown puts a word joiner after dots, so that no name becomes a link
        shown = formatted.stdout.replace("\u2060", "")
        assert "scheduling-conflict" in shown, output
        assert f"{label}={value}" in shown, output


def test_a_multi_arch_pod_on_nodes_a_label_fixes_gets_the_toleration_only_for_arm64(
    tmp_path: Path, registry: SeededRegistry, env: dict[str, str]
) -> None:
    config = write_policy(tmp_path / "policy.yaml", registry)
    reference = image(registry, "multiarch-oci")
    on_intel = tmp_path / "intel.yaml"
    on_intel.write_text(_selecting(reference, "node.kubernetes.io/instance-type", "m6i.large"))
    on_graviton = tmp_path / "graviton.yaml"
    on_graviton.write_text(_selecting(reference, "node.kubernetes.io/instance-type", "m7g.large"))

    intel = run_kmultiarch(["mutate", "--config", str(config), str(on_intel)], env=env)
    assert intel.returncode == 0, intel.stderr
    assert intel.stdout == on_intel.read_text()  # no arm64 node reachable: no toleration
    assert (
        run_kmultiarch(["check", "--config", str(config), str(on_intel)], env=env).returncode == 0
    )

    graviton = run_kmultiarch(["mutate", "--config", str(config), str(on_graviton)], env=env)
    assert graviton.returncode == 0, graviton.stderr
    spec = yaml.safe_load(graviton.stdout)["spec"]["template"]["spec"]
    assert spec["tolerations"] == [
        {"key": "kubernetes.io/arch", "operator": "Equal", "value": "arm64", "effect": "NoSchedule"}
    ]
    assert "affinity" not in spec  # the instance type already allows only arm64


def test_a_policys_node_labels_extend_and_override_the_table(
    tmp_path: Path, registry: SeededRegistry, env: dict[str, str]
) -> None:
    config = write_policy(
        tmp_path / "policy.yaml",
        registry,
        {
            "nodeLabels": [
                {"key": "example.com/pool", "values": ["legacy"], "platforms": ["linux/amd64"]},
                # a value the table knows, said otherwise (an arm64 lookalike in a private cloud)
                {"key": "node.kubernetes.io/instance-type", "values": ["m7g.*"], "platforms": []},
            ]
        },
    )
    arm = image(registry, "single-oci-arm64")
    manifest = tmp_path / "web.yaml"
    manifest.write_text(_selecting(arm, "example.com/pool", "legacy"))
    checked = run_kmultiarch(["check", "--config", str(config), str(manifest)], env=env)
    assert checked.returncode == 1
    assert "nodeSelector example.com/pool=legacy means linux/amd64 nodes" in checked.stdout

    amd = image(registry, "single-docker-amd64")
    manifest.write_text(_selecting(amd, "node.kubernetes.io/instance-type", "m7g.large"))
    mutated = run_kmultiarch(["mutate", "--config", str(config), str(manifest)], env=env)
    assert mutated.returncode == 0, mutated.stderr
    terms = yaml.safe_load(mutated.stdout)["spec"]["template"]["spec"]["affinity"]
    assert "amd64" in str(terms)  # the value says nothing now: today's rule


def _node(name: str, arch: str, **labels: str) -> str:
    extra = "".join(f"      {key}: {value}\n" for key, value in labels.items())
    return (
        f"- apiVersion: v1\n  kind: Node\n  metadata:\n    name: {name}\n    labels:\n"
        f"      kubernetes.io/arch: {arch}\n      kubernetes.io/os: linux\n"
        f"      kubernetes.io/hostname: {name}\n{extra}"
    )


def test_policy_init_writes_the_labels_that_split_the_cluster_and_mutate_uses_them(
    tmp_path: Path, registry: SeededRegistry, env: dict[str, str]
) -> None:
    nodes = "apiVersion: v1\nkind: List\nitems:\n" + "".join(
        [
            _node(
                "a1", "amd64", **{"example.com/pool": "general", "topology.kubernetes.io/zone": "a"}
            ),
            _node(
                "a2", "amd64", **{"example.com/pool": "general", "topology.kubernetes.io/zone": "a"}
            ),
            _node(
                "b1",
                "arm64",
                **{"example.com/pool": "graviton", "topology.kubernetes.io/zone": "b"},
            ),
            _node(
                "b2",
                "arm64",
                **{"example.com/pool": "graviton", "topology.kubernetes.io/zone": "b"},
            ),
        ]
    )
    result = run_kmultiarch(["policy", "init"], env=env, stdin=nodes)
    assert result.returncode == 0, result.stderr
    policy = yaml.safe_load(result.stdout)
    # the zone splits this cluster too, by chance: never written
    assert policy["spec"]["nodeLabels"] == [
        {"key": "example.com/pool", "values": ["general"], "platforms": ["linux/amd64"]},
        {"key": "example.com/pool", "values": ["graviton"], "platforms": ["linux/arm64"]},
    ]
    policy["spec"]["registries"] = {"registry.test": {"mirror": registry.url}}
    config = tmp_path / "policy.yaml"
    config.write_text(yaml.safe_dump(policy))
    manifest = tmp_path / "web.yaml"
    manifest.write_text(
        _selecting(image(registry, "single-docker-amd64"), "example.com/pool", "graviton")
    )
    checked = run_kmultiarch(["check", "--config", str(config), str(manifest)], env=env)
    assert checked.returncode == 1
    assert "nodeSelector example.com/pool=graviton means linux/arm64 nodes" in checked.stdout


def test_the_krm_function_reports_the_conflict_and_leaves_the_item(
    tmp_path: Path, registry: SeededRegistry, env: dict[str, str]
) -> None:
    config = write_policy(tmp_path / "policy.yaml", registry)
    item = yaml.safe_load(
        _selecting(
            image(registry, "single-docker-amd64"), "node.kubernetes.io/instance-type", "m7g.large"
        )
    )
    resource_list = {
        "apiVersion": "config.kubernetes.io/v1",
        "kind": "ResourceList",
        "items": [item],
        "functionConfig": yaml.safe_load(config.read_text()),
    }
    ran = run_kmultiarch(["fn"], env=env, stdin=yaml.safe_dump(resource_list))
    out = yaml.safe_load(ran.stdout)
    assert out["items"] == [item]
    assert any(
        "node.kubernetes.io/instance-type=m7g.large means arm64 nodes" in result["message"]
        for result in out["results"]
    ), out["results"]
