"""Scheduling decisions: supported platforms, ToleratesTaint, node affinity as RFC 6902 operations.

Plans are checked by applying their operations with ``jsonpatch`` and looking at the pod that
results, and by planning that pod again: a second run must change nothing.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

import jsonpatch
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kmultiarch.core.images.platform import Platform
from kmultiarch.core.placement.scheduling import (
    PodPlan,
    plan_pod,
    supported_platforms,
    toleration_covers,
)
from kmultiarch.core.policy.model import SchedulingPolicy, Toleration

ARCH = "kubernetes.io/arch"
BETA_ARCH = "beta.kubernetes.io/arch"
OS = "kubernetes.io/os"
REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"
PREFERRED = "preferredDuringSchedulingIgnoredDuringExecution"

AMD64 = Platform("linux", "amd64")
ARM64 = Platform("linux", "arm64")
S390X = Platform("linux", "s390x")
ARM_V7 = Platform("linux", "arm", "v7")
WIN = Platform("windows", "amd64")

GKE_ARM64 = {"key": ARCH, "operator": "Equal", "value": "arm64", "effect": "NoSchedule"}
DEFAULT = SchedulingPolicy()
S390X_TOLERATION = Toleration("s390x", "Exists", "", "NoSchedule")
THREE = SchedulingPolicy(
    platforms=(AMD64, ARM64, S390X),
    tolerations={
        ARM64: (Toleration(ARCH, "Equal", "arm64", "NoSchedule"),),
        S390X: (S390X_TOLERATION,),
    },
)
PREFER = SchedulingPolicy(node_affinity="preferred")
NONE = SchedulingPolicy(node_affinity="none")
MIXED_OS = SchedulingPolicy(platforms=(AMD64, ARM64, WIN), tolerations={})


def arch_in(*values: str) -> dict[str, Any]:
    return {"key": ARCH, "operator": "In", "values": list(values)}


def required(*terms: object) -> dict[str, Any]:
    return {"nodeAffinity": {REQUIRED: {"nodeSelectorTerms": list(terms)}}}


def ops(plan: PodPlan) -> tuple[dict[str, object], ...]:
    """The plan's operations as RFC 6902 objects."""
    return tuple(operation.as_json() for operation in plan.operations)


def apply(spec: Mapping[str, Any], plan: PodPlan) -> dict[str, Any]:
    """The pod after the plan, as a Pod document; the input is left untouched."""
    document = {"apiVersion": "v1", "kind": "Pod", "spec": copy.deepcopy(dict(spec))}
    result: dict[str, Any] = jsonpatch.apply_patch(document, list(ops(plan)))
    pod: dict[str, Any] = result["spec"]
    return pod


def plan(
    spec: Mapping[str, Any], supported: set[Platform], policy: SchedulingPolicy = DEFAULT
) -> PodPlan:
    return plan_pod(spec, ("spec",), frozenset(supported), policy)


def planned(
    spec: Mapping[str, Any], supported: set[Platform], policy: SchedulingPolicy = DEFAULT
) -> dict[str, Any]:
    """Plan, check there is no problem, apply, check a second plan changes nothing."""
    before = copy.deepcopy(spec)
    first = plan(spec, supported, policy)
    assert first.conflicts == ()
    assert spec == before, "plan_pod must not modify its input"
    after = apply(spec, first)
    second = plan(after, supported, policy)
    assert second.operations == () and second.conflicts == ()
    return after


def terms_of(spec: Mapping[str, Any]) -> list[dict[str, Any]]:
    terms: list[dict[str, Any]] = spec["affinity"]["nodeAffinity"][REQUIRED]["nodeSelectorTerms"]
    return terms


# -- supported platforms ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("images", "cluster", "expected"),
    [
        ([{AMD64, ARM64}], (AMD64, ARM64), {AMD64, ARM64}),
        ([{AMD64}], (AMD64, ARM64), {AMD64}),
        ([{AMD64, ARM64}, {ARM64, S390X}], (AMD64, ARM64), {ARM64}),
        ([{AMD64}, {ARM64}], (AMD64, ARM64), set()),
        ([{ARM_V7}], (AMD64, ARM64), set()),  # arm/v7 is not arm64
        ([{Platform("linux", "arm", "v6")}], (AMD64, ARM_V7), {ARM_V7}),
        ([{Platform("linux", "amd64", "v3")}], (AMD64, ARM64), {AMD64}),
        ([{WIN}], (AMD64, ARM64), set()),
        ([set()], (AMD64, ARM64), set()),
        ([], (AMD64, ARM64), {AMD64, ARM64}),
    ],
)
def test_supported_platforms(
    images: list[set[Platform]], cluster: tuple[Platform, ...], expected: set[Platform]
) -> None:
    assert supported_platforms([frozenset(i) for i in images], cluster) == expected


# -- ToleratesTaint, generalised to "tolerates everything the wanted toleration does" -----------

WANTED = Toleration(ARCH, "Equal", "arm64", "NoSchedule")


@pytest.mark.parametrize(
    ("existing", "wanted", "covers"),
    [
        (GKE_ARM64, WANTED, True),
        ({"key": ARCH, "operator": "Equal", "value": "arm64"}, WANTED, True),  # any effect
        ({"key": ARCH, "value": "arm64", "effect": "NoSchedule"}, WANTED, True),  # Equal default
        ({"key": ARCH, "operator": "Exists"}, WANTED, True),
        ({"key": ARCH, "operator": "Exists", "effect": "NoSchedule"}, WANTED, True),
        ({"operator": "Exists"}, WANTED, True),  # empty key + Exists: everything
        ({"key": "", "operator": "Exists", "effect": "NoSchedule"}, WANTED, True),
        ({"operator": "Exists", "effect": "NoExecute"}, WANTED, False),
        ({"key": ARCH, "operator": "Exists", "effect": "PreferNoSchedule"}, WANTED, False),
        ({**GKE_ARM64, "effect": "NoExecute"}, WANTED, False),
        ({**GKE_ARM64, "value": "amd64"}, WANTED, False),
        ({**GKE_ARM64, "key": "other"}, WANTED, False),
        ({**GKE_ARM64, "key": BETA_ARCH}, WANTED, False),
        ({"operator": "Equal", "value": "arm64"}, WANTED, False),  # empty key needs Exists
        ({"key": ARCH, "operator": "Equal", "value": None, "effect": "NoSchedule"}, WANTED, False),
        ({}, WANTED, False),
        # a wanted Exists tolerates every value: an Equal does not cover it
        (GKE_ARM64, Toleration(ARCH, "Exists", "", "NoSchedule"), False),
        ({"key": ARCH, "operator": "Exists"}, Toleration(ARCH, "Exists", "", "NoSchedule"), True),
        # a wanted empty effect tolerates every effect
        (GKE_ARM64, Toleration(ARCH, "Equal", "arm64", ""), False),
        ({"key": ARCH, "operator": "Exists"}, Toleration(ARCH, "Equal", "arm64", ""), True),
        # a wanted empty key with Exists tolerates every taint
        ({"key": ARCH, "operator": "Exists"}, Toleration("", "Exists"), False),
        ({"operator": "Exists"}, Toleration("", "Exists"), True),
    ],
)
def test_toleration_covers(existing: dict[str, Any], wanted: Toleration, covers: bool) -> None:
    assert toleration_covers(existing, wanted) is covers


def test_tolerations_are_never_duplicated() -> None:
    same = Toleration(ARCH, "Exists", "", "NoSchedule")
    policy = SchedulingPolicy(
        platforms=(AMD64, ARM64), tolerations={AMD64: (same,), ARM64: (same, WANTED)}
    )
    added = plan_pod({"tolerations": []}, (), frozenset({AMD64, ARM64}), policy)
    assert added.added_tolerations == ({"key": ARCH, "operator": "Exists", "effect": "NoSchedule"},)
    covered = plan_pod(
        {"tolerations": ["junk", {"operator": "Exists"}]}, (), frozenset({ARM64}), policy
    )
    assert covered.added_tolerations == ()


# -- required labels --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("supported", "policy", "expected"),
    [
        ({AMD64, ARM64}, DEFAULT, {}),
        ({ARM64}, DEFAULT, {ARCH: ("arm64",)}),
        ({AMD64}, DEFAULT, {ARCH: ("amd64",)}),
        ({ARM64, AMD64}, THREE, {ARCH: ("amd64", "arm64")}),  # in the policy's order
        ({S390X}, THREE, {ARCH: ("s390x",)}),
        ({AMD64, ARM64}, MIXED_OS, {OS: ("linux",)}),
        ({WIN}, MIXED_OS, {ARCH: ("amd64",), OS: ("windows",)}),
    ],
)
def test_required_labels(
    supported: set[Platform], policy: SchedulingPolicy, expected: dict[str, tuple[str, ...]]
) -> None:
    labels = plan_pod({}, (), frozenset(supported), policy).required_labels
    assert labels == expected
    assert list(labels) == list(expected)  # the architecture first


# -- plan_pod: tolerations --------------------------------------------------------------------


def test_multi_arch_pod_gets_the_arm64_toleration_and_no_affinity() -> None:
    result = plan({}, {AMD64, ARM64})
    assert ops(result) == ({"op": "add", "path": "/spec/tolerations", "value": [GKE_ARM64]},)
    assert result.added_tolerations == (GKE_ARM64,)
    assert result.required_labels == {}
    assert result.changes
    assert planned({}, {AMD64, ARM64}) == {"tolerations": [GKE_ARM64]}


@pytest.mark.parametrize(
    "existing",
    [
        [GKE_ARM64],
        [{"operator": "Exists"}],
        [{"key": ARCH, "operator": "Exists"}],
        [{"key": "gpu", "operator": "Exists"}, {"key": ARCH, "value": "arm64"}],
    ],
)
def test_a_covering_toleration_is_not_added_again(existing: list[dict[str, Any]]) -> None:
    result = plan({"tolerations": existing}, {AMD64, ARM64})
    assert ops(result) == () and not result.changes


@pytest.mark.parametrize(
    "existing",
    [
        [{"key": "gpu", "operator": "Exists"}],
        [{"operator": "Exists", "effect": "NoExecute"}],
        [{**GKE_ARM64, "value": "amd64"}],
    ],
)
def test_tolerations_are_appended_after_existing_ones(existing: list[dict[str, Any]]) -> None:
    result = plan({"tolerations": existing}, {AMD64, ARM64})
    assert ops(result) == ({"op": "add", "path": "/spec/tolerations/-", "value": GKE_ARM64},)
    assert planned({"tolerations": existing}, {AMD64, ARM64})["tolerations"] == [
        *existing,
        GKE_ARM64,
    ]


def test_null_tolerations_are_replaced() -> None:
    result = plan({"tolerations": None}, {AMD64, ARM64})
    assert ops(result)[0]["op"] == "replace"
    assert planned({"tolerations": None}, {AMD64, ARM64}) == {"tolerations": [GKE_ARM64]}


def test_amd64_only_pod_gets_no_arm64_toleration() -> None:
    assert "tolerations" not in planned({}, {AMD64})


def test_every_supported_platform_brings_its_tolerations() -> None:
    after = planned({}, {ARM64, S390X}, THREE)
    assert after["tolerations"] == [GKE_ARM64, S390X_TOLERATION.to_manifest()]


# -- plan_pod: required node affinity ---------------------------------------------------------


@pytest.mark.parametrize(("supported", "values"), [({AMD64}, ["amd64"]), ({ARM64}, ["arm64"])])
def test_narrower_set_creates_required_affinity(
    supported: set[Platform], values: list[str]
) -> None:
    after = planned({"containers": [{"name": "a", "image": "x"}]}, supported)
    assert terms_of(after) == [{"matchExpressions": [arch_in(*values)]}]
    assert after["containers"] == [{"name": "a", "image": "x"}]


@pytest.mark.parametrize(
    "affinity",
    [
        None,
        {},
        {"podAntiAffinity": {"x": 1}},
        {"nodeAffinity": None},
        {"nodeAffinity": {PREFERRED: [{"weight": 1, "preference": {"matchExpressions": []}}]}},
        {"nodeAffinity": {REQUIRED: None}},
        {"nodeAffinity": {REQUIRED: {}}},
        {"nodeAffinity": {REQUIRED: {"nodeSelectorTerms": []}}},
        {"nodeAffinity": {REQUIRED: {"nodeSelectorTerms": None}}},
    ],
)
def test_missing_structure_is_created_and_the_rest_kept(affinity: dict[str, Any] | None) -> None:
    after = planned({"affinity": affinity}, {ARM64})
    assert terms_of(after) == [{"matchExpressions": [arch_in("arm64")]}]
    for key, value in (affinity or {}).items():
        if key != "nodeAffinity":
            assert after["affinity"][key] == value
    old_node_affinity = (affinity or {}).get("nodeAffinity") or {}
    if PREFERRED in old_node_affinity:
        assert after["affinity"]["nodeAffinity"][PREFERRED] == old_node_affinity[PREFERRED]


ZONE_A = {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["a"]}
ZONE_B = {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["b"]}
BY_NAME = {"key": "metadata.name", "operator": "In", "values": ["node-1"]}


def test_every_term_is_constrained_and_no_term_is_added() -> None:
    spec = {
        "affinity": required(
            {"matchExpressions": [ZONE_A]},
            {"matchExpressions": [ZONE_B], "matchFields": [BY_NAME]},
            {"matchFields": [BY_NAME]},
            {"matchExpressions": None, "matchFields": [BY_NAME]},
        )
    }
    after = planned(spec, {ARM64})
    assert terms_of(after) == [
        {"matchExpressions": [ZONE_A, arch_in("arm64")]},
        {"matchExpressions": [ZONE_B, arch_in("arm64")], "matchFields": [BY_NAME]},
        {"matchFields": [BY_NAME], "matchExpressions": [arch_in("arm64")]},
        {"matchExpressions": [arch_in("arm64")], "matchFields": [BY_NAME]},
    ]


def test_an_existing_arch_in_is_intersected_in_place() -> None:
    spec = {"affinity": required({"matchExpressions": [ZONE_A, arch_in("amd64", "arm64")]})}
    result = plan(spec, {ARM64})
    affinity_ops = [op for op in ops(result) if "affinity" in op["path"]]
    assert affinity_ops == [
        {
            "op": "replace",
            "path": f"/spec/affinity/nodeAffinity/{REQUIRED}/nodeSelectorTerms/0"
            "/matchExpressions/1/values",
            "value": ["arm64"],
        }
    ]
    assert terms_of(planned(spec, {ARM64})) == [{"matchExpressions": [ZONE_A, arch_in("arm64")]}]


def test_intersection_keeps_the_existing_order_and_drops_unknown_architectures() -> None:
    spec = {
        "affinity": required({"matchExpressions": [arch_in("s390x", "arm64", "riscv64", "amd64")]})
    }
    after = planned(spec, {AMD64, ARM64}, THREE)
    assert terms_of(after) == [{"matchExpressions": [arch_in("arm64", "amd64")]}]


@pytest.mark.parametrize(
    "expression",
    [
        arch_in("arm64"),
        arch_in("arm64", "s390x"),  # s390x is not a node of this cluster
        {"key": ARCH, "operator": "NotIn", "values": ["amd64"]},
        {"key": BETA_ARCH, "operator": "In", "values": ["arm64"]},
    ],
)
def test_a_term_that_already_allows_only_supported_architectures_is_left_alone(
    expression: dict[str, Any],
) -> None:
    spec = {"affinity": required({"matchExpressions": [expression]})}
    result = plan(spec, {ARM64})
    assert [op for op in ops(result) if "affinity" in op["path"]] == []


@pytest.mark.parametrize(
    "expression",
    [
        {"key": ARCH, "operator": "Exists"},
        {"key": ARCH, "operator": "NotIn", "values": ["s390x"]},
        {"key": BETA_ARCH, "operator": "In", "values": ["amd64", "arm64"]},
    ],
)
def test_other_arch_expressions_get_an_in_expression_beside_them(
    expression: dict[str, Any],
) -> None:
    spec = {"affinity": required({"matchExpressions": [expression]})}
    after = planned(spec, {ARM64})
    assert terms_of(after) == [{"matchExpressions": [expression, arch_in("arm64")]}]


@pytest.mark.parametrize(
    "expressions",
    [
        [arch_in("amd64")],
        [{"key": ARCH, "operator": "NotIn", "values": ["arm64"]}],
        [{"key": ARCH, "operator": "DoesNotExist"}],
        [{"key": BETA_ARCH, "operator": "In", "values": ["amd64"]}],
        [arch_in("arm64", "amd64"), {"key": ARCH, "operator": "NotIn", "values": ["arm64"]}],
        [arch_in("s390x")],
        [{"key": ARCH, "operator": "In"}],  # In without values: the selector fails to parse
        [{"key": ARCH, "operator": "Gt", "values": ["1"]}],  # arm64 is not a number
        [
            {"key": "topology.kubernetes.io/zone", "operator": "Exists"},
            {"key": OS, "operator": "Bogus"},
        ],
    ],
)
def test_an_empty_intersection_is_a_problem_and_nothing_is_written(
    expressions: list[dict[str, Any]],
) -> None:
    spec = {"affinity": required({}, {"matchExpressions": expressions})}
    result = plan(spec, {ARM64})
    assert ops(result) == ()
    assert len(result.conflicts) == 1
    assert "nodeSelectorTerms[1]" in result.conflicts[0].message


@pytest.mark.parametrize(
    "expressions",
    [
        [arch_in("amd64")],
        [{"key": ARCH, "operator": "NotIn", "values": ["arm64"]}],
        [{"key": BETA_ARCH, "operator": "In", "values": ["amd64"]}],
        [{"key": ARCH, "operator": "In"}],
    ],
)
def test_a_term_that_can_only_match_unsupported_nodes_is_removed_when_others_remain(
    expressions: list[dict[str, Any]],
) -> None:
    spec = {"affinity": required({"matchExpressions": expressions}, {"matchExpressions": [ZONE_A]})}
    result = plan(spec, {ARM64})
    assert [op for op in ops(result) if "affinity" in op["path"]] == [
        {
            "op": "replace",
            "path": f"/spec/affinity/nodeAffinity/{REQUIRED}/nodeSelectorTerms",
            "value": [{"matchExpressions": [ZONE_A, arch_in("arm64")]}],
        },
    ]
    assert terms_of(planned(spec, {ARM64})) == [{"matchExpressions": [ZONE_A, arch_in("arm64")]}]


def test_an_empty_term_matches_nothing_and_stays_so() -> None:
    # k8s: "A null or empty node selector term matches no objects." Constraining it would make
    # it match arm64 nodes: a loosening of the rule, not a narrowing.
    spec = {"affinity": required({}, {"matchExpressions": []}, {"matchExpressions": [ZONE_A]})}
    after = planned(spec, {ARM64})
    assert terms_of(after) == [
        {},
        {"matchExpressions": []},
        {"matchExpressions": [ZONE_A, arch_in("arm64")]},
    ]


def test_a_term_that_is_not_a_mapping_is_a_problem() -> None:
    result = plan({"affinity": required({"matchExpressions": [ZONE_A]}, "junk")}, {ARM64})
    assert ops(result) == ()
    assert result.conflicts and "nodeSelectorTerms[1]" in result.conflicts[0].message


# -- plan_pod: nodeSelector, empty set --------------------------------------------------------


@pytest.mark.parametrize("label", [ARCH, BETA_ARCH])
def test_a_contradicting_node_selector_is_a_problem(label: str) -> None:
    result = plan({"nodeSelector": {label: "amd64"}}, {ARM64})
    assert ops(result) == ()
    assert len(result.conflicts) == 1
    assert f"{label}=amd64" in result.conflicts[0].message


@pytest.mark.parametrize("selector", [{ARCH: "arm64"}, {BETA_ARCH: "arm64"}])
def test_an_agreeing_arch_node_selector_needs_no_affinity(selector: dict[str, str]) -> None:
    after = planned({"nodeSelector": selector}, {ARM64})
    assert after["nodeSelector"] == selector
    assert "affinity" not in after
    assert after["tolerations"] == [GKE_ARM64]


def test_an_unrelated_node_selector_is_kept_and_affinity_added() -> None:
    after = planned({"nodeSelector": {"disk": "ssd"}}, {ARM64})
    assert after["nodeSelector"] == {"disk": "ssd"}
    assert terms_of(after) == [{"matchExpressions": [arch_in("arm64")]}]


def test_an_empty_supported_set_is_a_problem() -> None:
    result = plan({"tolerations": []}, set())
    assert ops(result) == ()
    assert result.conflicts and "linux/amd64, linux/arm64" in result.conflicts[0].message
    assert not result.changes


# -- plan_pod: preferred and none -------------------------------------------------------------

PREFERRED_ARM64 = {"weight": 100, "preference": {"matchExpressions": [arch_in("arm64")]}}


@pytest.mark.parametrize(
    ("affinity", "expected_node_affinity"),
    [
        (None, {PREFERRED: [PREFERRED_ARM64]}),
        ({"podAffinity": {}}, {PREFERRED: [PREFERRED_ARM64]}),
        (
            {"nodeAffinity": required({"matchExpressions": [ZONE_A]})["nodeAffinity"]},
            {
                REQUIRED: {"nodeSelectorTerms": [{"matchExpressions": [ZONE_A]}]},
                PREFERRED: [PREFERRED_ARM64],
            },
        ),
        (
            {
                "nodeAffinity": {
                    PREFERRED: [{"weight": 5, "preference": {"matchExpressions": [ZONE_A]}}]
                }
            },
            {
                PREFERRED: [
                    {"weight": 5, "preference": {"matchExpressions": [ZONE_A]}},
                    PREFERRED_ARM64,
                ]
            },
        ),
    ],
)
def test_preferred_adds_one_weighted_term(
    affinity: dict[str, Any] | None, expected_node_affinity: dict[str, Any]
) -> None:
    after = planned({"affinity": affinity}, {ARM64}, PREFER)
    assert after["affinity"]["nodeAffinity"] == expected_node_affinity
    assert after["tolerations"] == [GKE_ARM64]


def test_preferred_recognises_an_existing_equivalent_term() -> None:
    spec = {
        "affinity": {
            "nodeAffinity": {
                PREFERRED: [
                    {"weight": 7, "preference": {"matchExpressions": [ZONE_A, arch_in("arm64")]}}
                ]
            }
        }
    }
    result = plan(spec, {ARM64}, PREFER)
    assert [op for op in ops(result) if "affinity" in op["path"]] == []


def test_none_adds_tolerations_only() -> None:
    assert planned({}, {ARM64}, NONE) == {"tolerations": [GKE_ARM64]}
    assert plan({}, {AMD64}, NONE).operations == ()


# -- paths ------------------------------------------------------------------------------------


def test_operations_are_rooted_at_the_pod_spec_path() -> None:
    deployment: dict[str, Any] = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "spec": {"template": {"spec": {"containers": [{"name": "a", "image": "x"}]}}},
    }
    path = ("spec", "template", "spec")
    result = plan_pod(deployment["spec"]["template"]["spec"], path, frozenset({ARM64}), DEFAULT)
    assert ops(result)
    assert all(op["path"].startswith("/spec/template/spec/") for op in ops(result))
    patched = jsonpatch.apply_patch(deployment, list(ops(result)))
    pod = patched["spec"]["template"]["spec"]
    assert pod["tolerations"] == [GKE_ARM64]
    assert terms_of(pod) == [{"matchExpressions": [arch_in("arm64")]}]


def test_os_is_required_alongside_architecture() -> None:
    after = planned({}, {WIN}, MIXED_OS)
    assert terms_of(after) == [
        {
            "matchExpressions": [
                arch_in("amd64"),
                {"key": OS, "operator": "In", "values": ["windows"]},
            ]
        }
    ]


def test_os_and_arch_pairs_get_one_term_per_os() -> None:
    # linux/arm64 and windows/amd64, not linux/amd64: no single term of separate OS and
    # architecture lists says it (Skaffold writes one term per pair for this reason).
    after = planned({}, {ARM64, WIN}, MIXED_OS)
    assert terms_of(after) == [
        {
            "matchExpressions": [
                arch_in("arm64"),
                {"key": OS, "operator": "In", "values": ["linux"]},
            ]
        },
        {
            "matchExpressions": [
                arch_in("amd64"),
                {"key": OS, "operator": "In", "values": ["windows"]},
            ]
        },
    ]


def test_each_existing_term_is_crossed_with_each_os_term() -> None:
    spec = {"affinity": required({"matchExpressions": [ZONE_A]}, {"matchFields": [BY_NAME]})}
    after = planned(spec, {ARM64, WIN}, MIXED_OS)
    linux = [arch_in("arm64"), {"key": OS, "operator": "In", "values": ["linux"]}]
    windows = [arch_in("amd64"), {"key": OS, "operator": "In", "values": ["windows"]}]
    assert terms_of(after) == [
        {"matchExpressions": [ZONE_A, *linux]},
        {"matchExpressions": [ZONE_A, *windows]},
        {"matchFields": [BY_NAME], "matchExpressions": linux},
        {"matchFields": [BY_NAME], "matchExpressions": windows},
    ]


# -- property: plans are idempotent and never loosen ------------------------------------------

POLICIES = [DEFAULT, THREE, PREFER, NONE, MIXED_OS]
_arch_value = st.sampled_from(["amd64", "arm64", "s390x", "riscv64"])
_toleration = st.fixed_dictionaries(
    {},
    optional={
        "key": st.sampled_from(["", ARCH, "s390x", "gpu"]),
        "operator": st.sampled_from(["Equal", "Exists"]),
        "value": st.sampled_from(["", "arm64", "amd64"]),
        "effect": st.sampled_from(["", "NoSchedule", "NoExecute", "PreferNoSchedule"]),
    },
)
_expression = st.builds(
    lambda key, operator, values: (
        {"key": key, "operator": operator, "values": values}
        if operator in ("In", "NotIn")
        else {"key": key, "operator": operator}
    ),
    # mostly labels other than the architecture, so that most plans have no problem
    st.sampled_from([ARCH, BETA_ARCH, OS, *["topology.kubernetes.io/zone"] * 3]),
    st.sampled_from(["In", "In", "NotIn", "Exists", "DoesNotExist"]),
    st.lists(_arch_value | st.sampled_from(["linux", "windows", "a"]), max_size=3, unique=True),
)
_term = st.fixed_dictionaries(
    {},
    optional={
        "matchExpressions": st.lists(_expression, max_size=3) | st.none(),
        "matchFields": st.just([BY_NAME]),
    },
)
_node_affinity = st.fixed_dictionaries(
    {},
    optional={
        REQUIRED: st.fixed_dictionaries({"nodeSelectorTerms": st.lists(_term, max_size=3)})
        | st.sampled_from([None, {}]),
        PREFERRED: st.lists(
            st.builds(
                lambda e: {"weight": 10, "preference": {"matchExpressions": e}},
                st.lists(_expression, max_size=2),
            ),
            max_size=2,
        ),
    },
)
_spec: st.SearchStrategy[dict[str, Any]] = st.fixed_dictionaries(
    {},
    optional={
        "tolerations": st.lists(_toleration, max_size=3) | st.none(),
        "affinity": st.fixed_dictionaries(
            {"nodeAffinity": _node_affinity}, optional={"podAntiAffinity": st.just({})}
        )
        | st.sampled_from([None, {}, {"nodeAffinity": None}]),
        "nodeSelector": st.dictionaries(
            st.sampled_from([ARCH, BETA_ARCH, "disk"]), _arch_value, max_size=1
        ),
    },
)


@st.composite
def _case(draw: st.DrawFn) -> tuple[dict[str, Any], frozenset[Platform], SchedulingPolicy]:
    policy = draw(st.sampled_from(POLICIES))
    supported = frozenset(draw(st.sets(st.sampled_from(policy.platforms), min_size=1)))
    return draw(_spec), supported, policy


def _allowed_architectures(term: Mapping[str, Any], universe: set[str]) -> set[str]:
    """The architectures a node may have to match ``term`` (its arch expressions only)."""
    allowed = set(universe)
    for expression in term.get("matchExpressions") or []:
        if expression.get("key") not in (ARCH, BETA_ARCH):
            continue
        values = set(expression.get("values") or [])
        operator = expression["operator"]
        if operator == "In":
            allowed &= values
        elif operator == "NotIn":
            allowed -= values
        elif operator == "DoesNotExist":
            allowed = set()
    return allowed


@settings(max_examples=400, deadline=None)
@given(_case())
def test_plans_are_idempotent_and_never_loosen(
    case: tuple[dict[str, Any], frozenset[Platform], SchedulingPolicy],
) -> None:
    spec, supported, policy = case
    before = copy.deepcopy(spec)
    first = plan_pod(spec, ("spec",), supported, policy)
    assert spec == before
    if first.conflicts:
        assert first.operations == ()
        return
    after = apply(spec, first)
    second = plan_pod(after, ("spec",), supported, policy)
    assert second.operations == ()
    assert second.conflicts == ()

    # existing tolerations are kept first; every wanted toleration is now covered
    old_tolerations = spec.get("tolerations") or []
    assert (after.get("tolerations") or [])[: len(old_tolerations)] == old_tolerations
    own_constraints = spec.get("nodeSelector") or (
        ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(REQUIRED)
    )
    for platform in supported if not own_constraints else ():  # (else: see the model test)
        for wanted in policy.tolerations.get(platform, ()):
            assert any(toleration_covers(t, wanted) for t in after.get("tolerations") or [])

    if policy.node_affinity != "required" or ARCH not in first.required_labels:
        return
    universe = {p.architecture for p in policy.platforms}
    terms = terms_of(after)
    old_terms = (((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(REQUIRED) or {}).get(
        "nodeSelectorTerms"
    ) or []
    for new in terms:
        if new.get("matchExpressions") or new.get("matchFields"):
            assert _allowed_architectures(new, universe) <= set(first.required_labels[ARCH])
        else:
            assert new in old_terms  # an empty term matches nothing and must stay so
    # (what the terms allow, node by node, is checked against a scheduler model in
    # test_scheduler_model.py)
