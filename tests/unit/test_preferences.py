"""``spec.preferences``: which pods get a preferred node affinity term, and how it is written
next to what the scheduling plan adds."""

from __future__ import annotations

from typing import Any

from kmultiarch.core.images.platform import Platform
from kmultiarch.core.patch import apply_patch
from kmultiarch.core.placement.preferences import preference_terms, with_preferences
from kmultiarch.core.placement.scheduling import plan_pod_with_inherited
from kmultiarch.core.policy.model import SchedulingPolicy

AMD64, ARM64, S390X = (
    Platform("linux", "amd64"),
    Platform("linux", "arm64"),
    Platform("linux", "s390x"),
)
PREFERRED = "preferredDuringSchedulingIgnoredDuringExecution"
REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"
ARM_TERM = {
    "weight": 80,
    "preference": {
        "matchExpressions": [{"key": "kubernetes.io/arch", "operator": "In", "values": ["arm64"]}]
    },
}


def policy(**changes: Any) -> SchedulingPolicy:
    return SchedulingPolicy(preferences={ARM64: 80}, tolerations={}, **changes)


def plan_and_prefer(
    spec: dict[str, Any], supported: frozenset[Platform], chosen: SchedulingPolicy
) -> Any:
    document = {"spec": {"template": {"spec": spec}}}
    path = ("spec", "template", "spec")
    plan = plan_pod_with_inherited(spec, {}, path, supported, chosen)
    operations = with_preferences(spec, {}, path, plan.operations, supported, chosen)
    return apply_patch(document, operations)["spec"]["template"]["spec"], operations  # type: ignore[index]


def test_a_pod_running_on_both_gets_the_term() -> None:
    assert preference_terms({}, frozenset({AMD64, ARM64}), policy()) == [ARM_TERM]


def test_never_for_a_pod_running_on_the_preferred_platform_only_or_not_at_all() -> None:
    assert preference_terms({}, frozenset({ARM64}), policy()) == []
    assert preference_terms({}, frozenset({AMD64}), policy()) == []


def test_not_when_the_pod_already_prefers_it_or_pins_the_architecture() -> None:
    prefers = {"affinity": {"nodeAffinity": {PREFERRED: [{**ARM_TERM, "weight": 5}]}}}
    assert preference_terms(prefers, frozenset({AMD64, ARM64}), policy()) == []
    pinned = {"nodeSelector": {"kubernetes.io/arch": "amd64"}}
    assert preference_terms(pinned, frozenset({AMD64, ARM64}), policy()) == []


def test_folded_into_the_affinity_the_plan_adds() -> None:
    three = policy(platforms=(AMD64, ARM64, S390X))
    spec, operations = plan_and_prefer({"containers": []}, frozenset({AMD64, ARM64}), three)
    assert len(operations) == 1  # one `add /affinity`, holding both
    node_affinity = spec["affinity"]["nodeAffinity"]
    assert node_affinity[PREFERRED] == [ARM_TERM]
    expressions = node_affinity[REQUIRED]["nodeSelectorTerms"][0]["matchExpressions"]
    assert expressions == [
        {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64", "arm64"]}
    ]


def test_appended_to_existing_preferred_terms() -> None:
    other = {
        "weight": 10,
        "preference": {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]},
    }
    spec, _ = plan_and_prefer(
        {"affinity": {"nodeAffinity": {PREFERRED: [other]}}}, frozenset({AMD64, ARM64}), policy()
    )
    assert spec["affinity"]["nodeAffinity"][PREFERRED] == [other, ARM_TERM]


def test_os_is_named_when_the_cluster_has_several() -> None:
    windows = Platform("windows", "amd64")
    chosen = policy(platforms=(AMD64, ARM64, windows))
    (term,) = preference_terms({}, frozenset({AMD64, ARM64}), chosen)
    assert term["preference"]["matchExpressions"][1] == {  # type: ignore[index]
        "key": "kubernetes.io/os",
        "operator": "In",
        "values": ["linux"],
    }


def test_an_inherited_affinity_is_written_whole() -> None:
    inherited = {"affinity": {"podAntiAffinity": {"x": 1}}}
    template: dict[str, Any] = {"name": "t", "container": {"image": "i"}}
    path = ("spec", "templates", 0)
    operations = with_preferences(
        template, inherited, path, [], frozenset({AMD64, ARM64}), policy()
    )
    assert [operation.as_json() for operation in operations] == [
        {
            "op": "add",
            "path": "/spec/templates/0/affinity",
            "value": {"podAntiAffinity": {"x": 1}, "nodeAffinity": {PREFERRED: [ARM_TERM]}},
        }
    ]


def test_malformed_existing_terms_do_not_break_the_check() -> None:
    odd = {
        "affinity": {
            "nodeAffinity": {
                PREFERRED: [
                    {
                        "preference": {
                            "matchExpressions": [
                                {"key": "kubernetes.io/arch", "operator": "In", "values": 5}
                            ]
                        }
                    },
                    "not a term",
                ]
            }
        }
    }
    assert preference_terms(odd, frozenset({AMD64, ARM64}), policy()) == [ARM_TERM]
