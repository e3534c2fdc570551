"""The built-in table of node labels that fix the architecture (issue 30): both sides of each
provider, values it does not know saying nothing, the policy's entries first, node pools of a
stream."""

from __future__ import annotations

import pytest

from kmultiarch.core.images.platform import Platform
from kmultiarch.core.placement.cluster import node_pool_rules
from kmultiarch.core.policy.nodelabels import BUILTIN, BUILTIN_ENTRIES, read_node_labels, rule_for
from kmultiarch.core.policy.reading import Where
from kmultiarch.errors import PolicyError

TYPE = "node.kubernetes.io/instance-type"
BETA_TYPE = "beta.kubernetes.io/instance-type"


@pytest.mark.parametrize(
    ("key", "value", "architecture"),
    [
        # AWS: a g right after the generation digit is Graviton; a leading g is the GPU family
        (TYPE, "m7g.large", "arm64"),
        (TYPE, "c7gn.xlarge", "arm64"),
        (TYPE, "r6gd.2xlarge", "arm64"),
        (TYPE, "x2gd.medium", "arm64"),
        (TYPE, "im4gn.large", "arm64"),
        (TYPE, "is4gen.xlarge", "arm64"),
        (TYPE, "i4g.large", "arm64"),
        (TYPE, "g5g.xlarge", "arm64"),
        (TYPE, "hpc7g.4xlarge", "arm64"),
        (TYPE, "t4g.micro", "arm64"),
        (TYPE, "a1.large", "arm64"),
        (TYPE, "m8g.48xlarge", "arm64"),
        (TYPE, "x8g.metal-24xl", "arm64"),
        (BETA_TYPE, "c6g.large", "arm64"),
        (TYPE, "m6i.large", "amd64"),
        (TYPE, "m6a.large", "amd64"),
        (TYPE, "g4dn.xlarge", "amd64"),
        (TYPE, "p5.48xlarge", "amd64"),
        (TYPE, "c5.large", "amd64"),
        (TYPE, "m7i-flex.large", "amd64"),
        (TYPE, "inf2.xlarge", "amd64"),
        (TYPE, "u7i-12tb.224xlarge", "amd64"),
        (TYPE, "mac2.metal", None),
        # Google Cloud
        (TYPE, "t2a-standard-4", "arm64"),
        (TYPE, "c4a-highmem-8-lssd", "arm64"),
        (TYPE, "n4a-standard-2", "arm64"),
        (TYPE, "a4x-highgpu-4g", "arm64"),
        (TYPE, "n2-standard-4", "amd64"),
        (TYPE, "c4-standard-8", "amd64"),
        (TYPE, "e2-medium", "amd64"),
        (TYPE, "a4-highgpu-8g", "amd64"),
        ("cloud.google.com/machine-family", "c4a", "arm64"),
        ("cloud.google.com/machine-family", "n2d", "amd64"),
        ("cloud.google.com/machine-family", "ek", None),
        ("cloud.google.com/compute-class", "autopilot-arm", "arm64"),
        ("cloud.google.com/compute-class", "autopilot", "amd64"),
        ("cloud.google.com/compute-class", "Scale-Out", None),
        # Azure: p among the feature letters
        (TYPE, "Standard_D4ps_v5", "arm64"),
        (TYPE, "Standard_E8pds_v6", "arm64"),
        (TYPE, "Standard_B2pts_v2", "arm64"),
        (TYPE, "Standard_D16plds_v5", "arm64"),
        (TYPE, "Standard_ND128isr_GB200_v6", "arm64"),
        (TYPE, "Standard_D4s_v5", "amd64"),
        (TYPE, "Standard_E8ads_v5", "amd64"),
        # Oracle, Hetzner, Alibaba
        (TYPE, "VM.Standard.A1.Flex", "arm64"),
        (TYPE, "VM.Standard.A2.Flex", "arm64"),
        (TYPE, "BM.Standard.A4.48", "arm64"),
        (TYPE, "VM.Standard.E4.Flex", "amd64"),
        (TYPE, "VM.Standard3.Flex", "amd64"),
        (TYPE, "cax21", "arm64"),
        (TYPE, "cpx31", "amd64"),
        (TYPE, "ccx13", "amd64"),
        (TYPE, "ecs.g8y.large", "arm64"),
        (TYPE, "ecs.c8y.xlarge", "arm64"),
        (TYPE, "ecs.g7.large", "amd64"),
        (TYPE, "ecs.g8i.large", "amd64"),
        # Karpenter and EKS Auto Mode
        ("karpenter.k8s.aws/instance-family", "c7g", "arm64"),
        ("karpenter.k8s.aws/instance-family", "m6i", "amd64"),
        ("karpenter.k8s.aws/instance-cpu-manufacturer", "aws", "arm64"),
        ("karpenter.k8s.aws/instance-cpu-manufacturer", "intel", "amd64"),
        ("karpenter.k8s.aws/instance-cpu-manufacturer", "amd", "amd64"),
        ("eks.amazonaws.com/instance-cpu-manufacturer", "aws", "arm64"),
        ("eks.amazonaws.com/instance-family", "r8g", "arm64"),
        # values the table does not know say nothing
        (TYPE, "bare-metal-7", None),
        (TYPE, "custom", None),
        ("example.com/pool", "legacy", None),
    ],
)
def test_the_table_knows_both_sides_and_says_nothing_of_the_rest(
    key: str, value: str, architecture: str | None
) -> None:
    rule = rule_for(key, value, ())
    assert (rule.architectures if rule is not None else None) == (
        (architecture,) if architecture else None
    )


def test_every_built_in_entry_cites_its_source() -> None:
    assert len(BUILTIN) == len(BUILTIN_ENTRIES)
    assert all(rule.source.startswith("https://") and rule.note for rule in BUILTIN)


def test_a_policys_entries_come_first_and_may_say_nothing() -> None:
    rules = read_node_labels(
        [
            {"key": "example.com/pool", "values": ["legacy*"], "platforms": ["linux/amd64"]},
            {"key": TYPE, "values": ["m7g.*"], "platforms": []},
        ],
        Where("policy.yaml", ("spec", "nodeLabels")),
    )
    pool = rule_for("example.com/pool", "legacy-2", rules)
    assert pool is not None and pool.platforms == (Platform("linux", "amd64"),)
    assert pool.covers(Platform("linux", "amd64"))
    assert not pool.covers(Platform("windows", "amd64"))
    assert rule_for(TYPE, "m7g.large", rules) is None
    assert rule_for(TYPE, "c7g.large", rules) is not None


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ({"key": "k", "values": ["v"]}, "give platforms"),
        ({"key": "k", "values": [], "platforms": []}, "expected a list of values"),
        ({"key": "", "values": ["v"], "platforms": []}, "expected a node label key"),
        ({"key": "k", "values": ["v"], "platforms": ["linux"]}, "invalid platform"),
        ({"key": "k", "values": ["v"], "platforms": [], "architectures": []}, "not both"),
        ({"key": "k", "values": ["v"], "platform": []}, "unknown key"),
    ],
)
def test_a_bad_entry_is_refused_where_it_is(entry: dict[str, object], message: str) -> None:
    with pytest.raises(PolicyError, match=message) as raised:
        read_node_labels([entry], Where("policy.yaml", ("spec", "nodeLabels")))
    assert raised.value.source == "policy.yaml"


def test_node_pools_of_the_stream_say_what_they_launch() -> None:
    pool = {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodePool",
        "metadata": {"name": "graviton"},
        "spec": {
            "template": {
                "spec": {
                    "requirements": [
                        {
                            "key": "karpenter.k8s.aws/instance-family",
                            "operator": "In",
                            "values": ["c7g", "m7g"],
                        }
                    ]
                }
            }
        },
    }
    any_pool = {**pool, "metadata": {"name": "any"}, "spec": {}}
    classes = {
        "apiVersion": "v1",
        "kind": "List",
        "items": [
            {
                "apiVersion": "cloud.google.com/v1",
                "kind": "ComputeClass",
                "metadata": {"name": "axion"},
                "spec": {
                    "priorities": [{"machineFamily": "c4a"}, {"machineType": "t2a-standard-4"}]
                },
            },
            {
                "apiVersion": "cloud.google.com/v1",
                "kind": "ComputeClass",
                "metadata": {"name": "mixed"},
                "spec": {"priorities": [{"machineFamily": "c4a"}, {"nodepools": ["x"]}]},
            },
        ],
    }
    rules = node_pool_rules([pool, any_pool, classes])
    graviton = rule_for("karpenter.sh/nodepool", "graviton", rules)
    assert graviton is not None and graviton.platforms == (Platform("linux", "arm64"),)
    anything = rule_for("karpenter.sh/nodepool", "any", rules)
    assert anything is not None and set(anything.platforms) == {
        Platform("linux", "amd64"),
        Platform("linux", "arm64"),
    }
    axion = rule_for("cloud.google.com/compute-class", "axion", rules)
    assert axion is not None and axion.architectures == ("arm64",)
    assert rule_for("cloud.google.com/compute-class", "mixed", rules) is None


def test_a_label_the_node_pools_put_on_their_nodes_means_their_platforms() -> None:
    def pool(name: str, arch: str, labels: dict[str, str]) -> dict[str, object]:
        return {
            "apiVersion": "karpenter.sh/v1",
            "kind": "NodePool",
            "metadata": {"name": name},
            "spec": {
                "template": {
                    "metadata": {"labels": labels},
                    "spec": {
                        "requirements": [
                            {"key": "kubernetes.io/arch", "operator": "In", "values": [arch]}
                        ]
                    },
                }
            },
        }

    rules = node_pool_rules(
        [
            pool("graviton", "arm64", {"example.com/fleet": "arm", "team": "ml"}),
            pool("general", "amd64", {"example.com/fleet": "x86", "team": "ml"}),
        ]
    )
    arm = rule_for("example.com/fleet", "arm", rules)
    assert arm is not None and arm.platforms == (Platform("linux", "arm64"),)
    team = rule_for("team", "ml", rules)
    assert team is not None and set(team.platforms) == {
        Platform("linux", "arm64"),
        Platform("linux", "amd64"),
    }


def test_a_pod_the_labels_keep_on_arm64_gets_no_preference_for_it() -> None:
    """spec.preferences steer a pod that may run on several platforms; one whose nodeSelector
    names a Graviton instance type reaches arm64 only: the toleration, no preferred term."""
    from kmultiarch.api import mutate_text
    from kmultiarch.core.policy.model import Policy, SchedulingPolicy
    from kmultiarch.core.resolution import Resolution

    def resolve(references):  # type: ignore[no-untyped-def]
        both = frozenset({Platform("linux", "amd64"), Platform("linux", "arm64")})
        return {r: Resolution(r, both, "sha256:" + "2" * 64) for r in references}

    text = (
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n"
        "  nodeSelector: {node.kubernetes.io/instance-type: m7g.large}\n"
        "  containers:\n  - {name: c, image: example.com/app:1}\n"
    )
    policy = Policy(scheduling=SchedulingPolicy(preferences={Platform("linux", "arm64"): 80}))
    out = mutate_text(text, policy, resolve=resolve).stream()
    assert "tolerations" in out
    assert "preferredDuringScheduling" not in out
