"""kmultiarch judged by what the scheduler will do.

A small model of the scheduler's filters, written from the Kubernetes documentation and the
behaviour the component-helpers tests pin down (``scheduling/corev1``: ToleratesTaint,
FindMatchingUntoleratedTaint; ``nodeaffinity``: GetRequiredNodeAffinity(pod).Match(node)) and
the taint manager (the first toleration matching a NoExecute taint bounds the stay). A table of
cases checks the model; then hypothesis builds random clusters, images and pods and checks the
rule kmultiarch promises:

    nodes P may run on after kmultiarch
        == {nodes P's own constraints allowed} & {nodes whose platform runs every image of P}

(the policy's taints aside: tolerating them is kmultiarch's job). Where that set is empty the
pod must be reported (a problem) and left unchanged.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import jsonpatch
import pytest
from hypothesis import HealthCheck, assume, event, given, settings
from hypothesis import strategies as st

from kmultiarch.core.findings import INDISTINGUISHABLE_PLATFORMS
from kmultiarch.core.images.platform import Platform
from kmultiarch.core.patch import PatchOperation
from kmultiarch.core.placement.scheduling import plan_pod, supported_platforms, windows_builds
from kmultiarch.core.policy.model import SchedulingPolicy, Toleration

ARCH = "kubernetes.io/arch"
OS = "kubernetes.io/os"
BETA_ARCH = "beta.kubernetes.io/arch"
BETA_OS = "beta.kubernetes.io/os"
BUILD = "node.kubernetes.io/windows-build"
ZONE = "topology.kubernetes.io/zone"
VARIANT = "example.com/arm-variant"
REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"
PREFERRED = "preferredDuringSchedulingIgnoredDuringExecution"


# -- the model --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Taint:
    key: str
    value: str
    effect: str


@dataclass(frozen=True)
class Node:
    name: str
    labels: Mapping[str, str]
    taints: tuple[Taint, ...] = ()
    platform: Platform = field(default_factory=lambda: Platform("linux", "amd64"))
    policy_taints: tuple[Taint, ...] = field(default=(), compare=False)


def tolerates(toleration: Mapping[str, Any], taint: Taint) -> bool:
    """ToleratesTaint: effect empty or equal; key empty or equal; Exists any value, Equal
    (or no operator) the same value."""
    effect = toleration.get("effect") or ""
    if effect and effect != taint.effect:
        return False
    key = toleration.get("key") or ""
    if key and key != taint.key:
        return False
    operator = toleration.get("operator") or "Equal"
    if operator == "Equal":
        return (toleration.get("value") or "") == taint.value
    return operator == "Exists"


def untolerated(taints: Sequence[Taint], tolerations: Sequence[Mapping[str, Any]]) -> Taint | None:
    """FindMatchingUntoleratedTaint over NoSchedule and NoExecute taints."""
    for taint in taints:
        if taint.effect not in ("NoSchedule", "NoExecute"):
            continue
        if not any(tolerates(t, taint) for t in tolerations):
            return taint
    return None


def stays(taints: Sequence[Taint], tolerations: Sequence[Mapping[str, Any]]) -> bool:
    """The taint manager: for each NoExecute taint the first toleration that tolerates it is
    used; any used toleration with tolerationSeconds evicts the pod in the end."""
    for taint in taints:
        if taint.effect != "NoExecute":
            continue
        first = next((t for t in tolerations if tolerates(t, taint)), None)
        if first is not None and first.get("tolerationSeconds") is not None:
            return False
    return True


def requirement_matches(requirement: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    operator = requirement.get("operator")
    values = list(requirement.get("values") or [])
    key = requirement.get("key")
    if operator in ("In", "NotIn") and not values:
        return False  # "values set can't be empty": the selector does not parse
    if operator in ("Exists", "DoesNotExist") and values:
        return False
    present = key in labels
    if operator == "In":
        return present and labels[key] in values
    if operator == "NotIn":
        return not present or labels[key] not in values
    if operator == "Exists":
        return present
    if operator == "DoesNotExist":
        return not present
    if operator in ("Gt", "Lt") and len(values) == 1 and present:
        try:
            number, bound = int(labels[key]), int(values[0])
        except ValueError:
            return False
        return number > bound if operator == "Gt" else number < bound
    return False


def field_matches(requirement: Mapping[str, Any], node: Node) -> bool:
    values = list(requirement.get("values") or [])
    if requirement.get("key") != "metadata.name" or len(values) != 1:
        return False
    if requirement.get("operator") == "In":
        return node.name == values[0]
    if requirement.get("operator") == "NotIn":
        return node.name != values[0]
    return False


def term_matches(term: Mapping[str, Any], node: Node) -> bool:
    """A null or empty term matches no objects; requirements are ANDed."""
    expressions = term.get("matchExpressions") or []
    fields = term.get("matchFields") or []
    if not expressions and not fields:
        return False
    return all(requirement_matches(e, node.labels) for e in expressions) and all(
        field_matches(f, node) for f in fields
    )


def affinity_matches(spec: Mapping[str, Any], node: Node) -> bool:
    """GetRequiredNodeAffinity(pod).Match(node): the nodeSelector AND any required term."""
    selector = spec.get("nodeSelector") or {}
    if any(node.labels.get(key) != value for key, value in selector.items()):
        return False
    required = ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(REQUIRED)
    if required is None:
        return True
    return any(term_matches(term, node) for term in required.get("nodeSelectorTerms") or [])


def may_run(spec: Mapping[str, Any], node: Node, *, ignore: Sequence[Taint] = ()) -> bool:
    """The scheduler may place the pod on the node, and the pod may stay there."""
    taints = [taint for taint in node.taints if taint not in ignore]
    tolerations = spec.get("tolerations") or []
    return (
        affinity_matches(spec, node)
        and untolerated(taints, tolerations) is None
        and stays(taints, tolerations)
    )


# -- the model against the documentation and the component-helpers tests ----------------------

LABELLED = Node("host_1", {"foo": "bar", "GPU": "NVIDIA-GRID-K1", "kernel-version": "0206"})


def _required(*terms: Mapping[str, Any]) -> dict[str, Any]:
    return {"affinity": {"nodeAffinity": {REQUIRED: {"nodeSelectorTerms": list(terms)}}}}


def _expr(key: str, operator: str, *values: str) -> dict[str, Any]:
    expression: dict[str, Any] = {"key": key, "operator": operator}
    if values:
        expression["values"] = list(values)
    return expression


NAME_IN = {"key": "metadata.name", "operator": "In", "values": ["host_1"]}


@pytest.mark.parametrize(
    ("spec", "node", "expected"),
    [
        ({}, LABELLED, True),  # no selector
        ({"nodeSelector": {"foo": "bar"}}, Node("n", {}), False),  # missing labels
        ({"nodeSelector": {"foo": "bar"}}, LABELLED, True),  # node labels are a superset
        ({"nodeSelector": {"foo": "bar", "baz": "blah"}}, LABELLED, False),  # a subset
        (_required({"matchExpressions": [_expr("foo", "In", "bar", "value2")]}), LABELLED, True),
        (_required({"matchExpressions": [_expr("kernel-version", "Gt", "0204")]}), LABELLED, True),
        (
            _required({"matchExpressions": [_expr("mem-type", "NotIn", "DDR", "DDR2")]}),
            LABELLED,
            True,
        ),
        (_required({"matchExpressions": [_expr("GPU", "Exists")]}), LABELLED, True),
        (
            _required({"matchExpressions": [_expr("foo", "In", "value1", "value2")]}),
            LABELLED,
            False,
        ),
        ({"affinity": {"nodeAffinity": {REQUIRED: {"nodeSelectorTerms": None}}}}, LABELLED, False),
        (_required(), LABELLED, False),  # an empty list of terms matches nothing
        (_required({"matchExpressions": []}), LABELLED, False),  # an empty term: nothing
        ({"affinity": {"nodeAffinity": {REQUIRED: None}}}, LABELLED, True),
        (
            _required({"matchExpressions": [_expr("GPU", "Exists"), _expr("GPU", "NotIn", "AMD")]}),
            LABELLED,
            True,
        ),
        (
            _required({"matchExpressions": [_expr("GPU", "Exists"), _expr("GPU", "In", "AMD")]}),
            LABELLED,
            False,
        ),
        (  # terms are ORed
            _required(
                {"matchExpressions": [_expr("foo", "In", "bar", "value2")]},
                {"matchExpressions": [_expr("diffkey", "In", "wrong")]},
            ),
            LABELLED,
            True,
        ),
        (  # nodeSelector and affinity must both hold
            {
                "nodeSelector": {"foo": "bar"},
                **_required({"matchExpressions": [_expr("foo", "Exists")]}),
            },
            Node("n", {"foo": "barrrrrr"}),
            False,
        ),
        (_required({"matchFields": [NAME_IN]}), LABELLED, True),
        (_required({"matchFields": [NAME_IN]}), Node("host_2", {}), False),
        (  # one term: fields and expressions are ANDed
            _required({"matchFields": [NAME_IN], "matchExpressions": [_expr("foo", "In", "bar")]}),
            Node("host_2", {"foo": "bar"}),
            False,
        ),
        (
            _required(
                {"matchFields": [NAME_IN]}, {"matchExpressions": [_expr("foo", "In", "bar")]}
            ),
            Node("host_2", {"foo": "bar"}),
            True,
        ),
        (_required({"matchExpressions": [_expr("foo", "In")]}), LABELLED, False),  # In needs values
        (_required({"matchExpressions": [_expr("foo", "Exists", "bar")]}), LABELLED, False),
    ],
)
def test_required_node_affinity_model(spec: dict[str, Any], node: Node, expected: bool) -> None:
    assert affinity_matches(spec, node) is expected


ARM_TAINT = Taint(ARCH, "arm64", "NoSchedule")


@pytest.mark.parametrize(
    ("toleration", "taint", "expected"),
    [
        (
            {"key": ARCH, "operator": "Equal", "value": "arm64", "effect": "NoSchedule"},
            ARM_TAINT,
            True,
        ),
        ({"key": ARCH, "value": "arm64", "effect": "NoSchedule"}, ARM_TAINT, True),  # Equal default
        ({"key": ARCH, "operator": "Exists", "effect": "NoSchedule"}, ARM_TAINT, True),
        ({"key": ARCH, "operator": "Exists"}, ARM_TAINT, True),  # empty effect: all effects
        ({"operator": "Exists"}, ARM_TAINT, True),  # Exists without key: every taint
        ({"operator": "Exists", "effect": "NoExecute"}, ARM_TAINT, False),
        ({"key": ARCH, "operator": "Equal", "value": "amd64"}, ARM_TAINT, False),
        ({"key": "other", "operator": "Exists"}, ARM_TAINT, False),
        ({"key": ARCH, "operator": "Bogus", "value": "arm64"}, ARM_TAINT, False),
    ],
)
def test_tolerates_taint_model(toleration: dict[str, Any], taint: Taint, expected: bool) -> None:
    assert tolerates(toleration, taint) is expected


def test_only_no_schedule_and_no_execute_taints_filter() -> None:
    prefer = Taint("dedicated", "x", "PreferNoSchedule")
    assert untolerated([prefer], []) is None
    assert untolerated([prefer, ARM_TAINT], []) == ARM_TAINT


def test_the_first_matching_toleration_bounds_the_stay() -> None:
    evicting = Taint(ARCH, "arm64", "NoExecute")
    limited = {"key": ARCH, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 30}
    forever = {"key": ARCH, "operator": "Equal", "value": "arm64", "effect": "NoExecute"}
    assert untolerated([evicting], [limited]) is None  # scheduled...
    assert not stays([evicting], [limited])  # ...and evicted after 30 s
    assert stays([evicting], [forever, limited])
    assert not stays([evicting], [limited, forever])
    assert stays([ARM_TAINT], [{"operator": "Exists", "tolerationSeconds": 5}])  # NoSchedule


# -- clusters, images and pods ----------------------------------------------------------------

AMD64 = Platform("linux", "amd64")
ARM64 = Platform("linux", "arm64")
S390X = Platform("linux", "s390x")
ARM_V6 = Platform("linux", "arm", "v6")
ARM_V7 = Platform("linux", "arm", "v7")
WINDOWS = Platform("windows", "amd64")
LTSC2019 = Platform("windows", "amd64", os_version="10.0.17763")
LTSC2022 = Platform("windows", "amd64", os_version="10.0.20348")
BUILDS = ("10.0.17763", "10.0.20348")


def _tainted(value: str, effect: str = "NoSchedule") -> tuple[Toleration, ...]:
    return (Toleration(ARCH, "Equal", value, effect),)


POLICIES = {
    "two-arch": SchedulingPolicy(),
    "three-arch, s390x NoExecute": SchedulingPolicy(
        platforms=(AMD64, ARM64, S390X),
        tolerations={ARM64: _tainted("arm64"), S390X: _tainted("s390x", "NoExecute")},
    ),
    "four with Windows builds": SchedulingPolicy(
        platforms=(AMD64, ARM64, LTSC2019, LTSC2022),
        tolerations={
            ARM64: _tainted("arm64"),
            LTSC2019: (Toleration("os", "Equal", "windows", "NoSchedule"),),
            LTSC2022: (Toleration("os", "Equal", "windows", "NoSchedule"),),
        },
    ),
    "Windows of unknown builds": SchedulingPolicy(
        platforms=(AMD64, ARM64, WINDOWS),
        tolerations={WINDOWS: (Toleration("os", "Equal", "windows", "NoExecute"),)},
    ),
    "arm variants told apart": SchedulingPolicy(
        platforms=(AMD64, ARM64, ARM_V6, ARM_V7),
        tolerations={ARM64: _tainted("arm64"), ARM_V6: _tainted("arm"), ARM_V7: _tainted("arm")},
        node_selectors={ARM_V6: {VARIANT: "v6"}, ARM_V7: {VARIANT: "v7"}},
    ),
    "arm variants alike": SchedulingPolicy(platforms=(AMD64, ARM_V6, ARM_V7), tolerations={}),
}

IMAGE_PLATFORMS = [
    AMD64,
    ARM64,
    S390X,
    ARM_V6,
    ARM_V7,
    Platform("linux", "ppc64le"),
    Platform("windows", "amd64", os_version="10.0.17763.6659"),
    Platform("windows", "amd64", os_version="10.0.20348.2227"),
]


def policy_taints(policy: SchedulingPolicy, platform: Platform) -> tuple[Taint, ...]:
    """A taint each policy toleration of the platform is there for."""
    return tuple(
        Taint(t.key, t.value if t.operator == "Equal" else "x", t.effect or "NoSchedule")
        for t in policy.tolerations.get(platform, ())
    )


@st.composite
def clusters(draw: st.DrawFn, policy: SchedulingPolicy) -> list[Node]:
    nodes: list[Node] = []
    for platform in policy.platforms:
        for _ in range(draw(st.integers(1, 2))):
            build = platform.build
            if platform.os == "windows" and not build:
                build = draw(st.sampled_from(BUILDS))
            labels = {
                ARCH: platform.architecture,
                OS: platform.os,
                BETA_ARCH: platform.architecture,
                BETA_OS: platform.os,
                ZONE: draw(st.sampled_from(["a", "b"])),
                **policy.node_selectors.get(platform, {}),
            }
            if build:
                labels[BUILD] = build
            own = policy_taints(policy, platform)
            extra = (Taint("dedicated", "ci", "NoSchedule"),) if draw(st.booleans()) else ()
            node_platform = Platform(
                platform.os, platform.architecture, platform.variant, build or ""
            )
            nodes.append(Node(f"node-{len(nodes)}", labels, own + extra, node_platform, own))
    return nodes


_values = {
    ARCH: ["amd64", "arm64", "s390x", "arm"],
    BETA_ARCH: ["amd64", "arm64", "arm"],
    OS: ["linux", "windows"],
    ZONE: ["a", "b"],
    BUILD: list(BUILDS),
    VARIANT: ["v6", "v7"],
}


@st.composite
def expressions(draw: st.DrawFn) -> dict[str, Any]:
    key = draw(st.sampled_from([ARCH, ARCH, OS, BETA_ARCH, ZONE, ZONE, BUILD, VARIANT]))
    operator = draw(st.sampled_from(["In", "In", "NotIn", "Exists", "DoesNotExist"]))
    if operator in ("Exists", "DoesNotExist"):
        return {"key": key, "operator": operator}
    values = draw(st.lists(st.sampled_from(_values[key]), min_size=1, max_size=2, unique=True))
    return {"key": key, "operator": operator, "values": values}


_term = st.one_of(
    st.fixed_dictionaries({"matchExpressions": st.lists(expressions(), min_size=1, max_size=3)}),
    st.fixed_dictionaries(
        {
            "matchExpressions": st.lists(expressions(), max_size=2),
            "matchFields": st.just(
                [{"key": "metadata.name", "operator": "In", "values": ["node-1"]}]
            ),
        }
    ),
    st.just({}),
)


@st.composite
def tolerations(draw: st.DrawFn) -> dict[str, Any]:
    key = draw(st.sampled_from(["", ARCH, ARCH, "os", "dedicated"]))
    operator = "Exists" if not key else draw(st.sampled_from(["Equal", "Exists"]))
    toleration: dict[str, Any] = {"operator": operator}
    if key:
        toleration["key"] = key
    if operator == "Equal":
        toleration["value"] = draw(st.sampled_from(["arm64", "s390x", "arm", "windows", "ci"]))
    effect = draw(st.sampled_from(["", "NoSchedule", "NoExecute", "NoExecute", "PreferNoSchedule"]))
    if effect:
        toleration["effect"] = effect
    if effect == "NoExecute" and draw(st.booleans()):
        toleration["tolerationSeconds"] = draw(st.sampled_from([0, 30, 3600]))
    return toleration


@st.composite
def pods(draw: st.DrawFn) -> dict[str, Any]:
    spec: dict[str, Any] = {}
    if draw(st.booleans()):
        spec["nodeSelector"] = draw(
            st.dictionaries(
                st.sampled_from([ARCH, OS, ZONE, BETA_ARCH, VARIANT]),
                st.sampled_from(["amd64", "arm64", "arm", "linux", "windows", "a", "v7"]),
                max_size=2,
            )
        )
    if draw(st.booleans()):
        spec["tolerations"] = draw(st.lists(tolerations(), max_size=3))
    if draw(st.booleans()):
        node_affinity: dict[str, Any] = {
            REQUIRED: {"nodeSelectorTerms": draw(st.lists(_term, min_size=1, max_size=3))}
        }
        if draw(st.booleans()):
            node_affinity[PREFERRED] = [
                {"weight": 5, "preference": {"matchExpressions": [draw(expressions())]}}
            ]
        spec["affinity"] = {"nodeAffinity": node_affinity}
    return spec


@st.composite
def scenarios(
    draw: st.DrawFn,
) -> tuple[str, SchedulingPolicy, list[Node], list[frozenset[Platform]], dict[str, Any]]:
    name = draw(st.sampled_from(sorted(POLICIES)))
    policy = POLICIES[name]
    images = draw(
        st.lists(
            st.frozensets(st.sampled_from(IMAGE_PLATFORMS), min_size=1, max_size=4),
            min_size=1,
            max_size=3,
        )
    )
    return name, policy, draw(clusters(policy)), images, draw(pods())


def image_runs(images: Sequence[frozenset[Platform]], node: Node) -> bool:
    return all(any(p.runs_on(node.platform) for p in image) for image in images)


def applied(spec: Mapping[str, Any], operations: Sequence[PatchOperation]) -> dict[str, Any]:
    document = {"spec": copy.deepcopy(dict(spec))}
    result: dict[str, Any] = jsonpatch.apply_patch(
        document, [operation.as_json() for operation in operations]
    )
    patched: dict[str, Any] = result["spec"]
    return patched


@settings(
    max_examples=1500,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(scenarios())
def test_the_pod_may_run_exactly_where_its_constraints_and_its_images_allow(
    scenario: tuple[str, SchedulingPolicy, list[Node], list[frozenset[Platform]], dict[str, Any]],
) -> None:
    name, policy, nodes, images, spec = scenario
    supported = supported_platforms(images, policy.platforms)
    builds = windows_builds(images, policy.platforms)
    plan = plan_pod(spec, ("spec",), supported, policy, builds)
    expected = {
        node.name
        for node in nodes
        if may_run(spec, node, ignore=node.policy_taints) and image_runs(images, node)
    }
    event("problem" if plan.conflicts else ("changed" if plan.operations else "unchanged"))
    if plan.conflicts:
        assert plan.operations == ()
        assert expected == set(), (name, plan.conflicts)
        return
    after = applied(spec, plan.operations)
    allowed = {node.name for node in nodes if may_run(after, node)}
    if any(f.rule == INDISTINGUISHABLE_PLATFORMS for f in plan.findings):
        assert expected <= allowed  # the pod may land on the look-alike platform too
        return
    assert allowed == expected, (name, plan.node_terms)
    # and a second run changes nothing
    again = plan_pod(after, ("spec",), supported, policy, builds)
    assert again.operations == () and again.conflicts == ()


def test_look_alike_variants_are_warned_about() -> None:
    policy = POLICIES["arm variants alike"]
    images = [frozenset({ARM_V7})]
    plan = plan_pod({}, ("spec",), supported_platforms(images, policy.platforms), policy)
    assert [f.rule for f in plan.findings] == [INDISTINGUISHABLE_PLATFORMS]
    assert "linux/arm/v6" in plan.findings[0].message


# -- nodes labelled as the providers label them (issue 30) ------------------------------------

INSTANCE_TYPE = "node.kubernetes.io/instance-type"
FAMILY = "karpenter.k8s.aws/instance-family"
MANUFACTURER = "karpenter.k8s.aws/instance-cpu-manufacturer"
MACHINE_FAMILY = "cloud.google.com/machine-family"
COMPUTE_CLASS = "cloud.google.com/compute-class"
NODEPOOL = "karpenter.sh/nodepool"
POOL = "example.com/pool"

#: Per architecture, the labels a provider's node of that architecture carries (the label
#: sets drawn from: AWS with and without Karpenter's labels, GKE, Azure, Oracle, Hetzner,
#: Alibaba, and values the table does not know).
PROVIDER_LABELS: dict[str, list[dict[str, str]]] = {
    "amd64": [
        {INSTANCE_TYPE: "m6i.large"},
        {INSTANCE_TYPE: "g4dn.xlarge", FAMILY: "g4dn", MANUFACTURER: "intel", NODEPOOL: "mixed"},
        {INSTANCE_TYPE: "m6a.large", FAMILY: "m6a", MANUFACTURER: "amd", NODEPOOL: "mixed"},
        {INSTANCE_TYPE: "n2-standard-4", MACHINE_FAMILY: "n2", COMPUTE_CLASS: "autopilot"},
        {INSTANCE_TYPE: "Standard_D4s_v5"},
        {INSTANCE_TYPE: "VM.Standard.E4.Flex"},
        {INSTANCE_TYPE: "cpx31"},
        {INSTANCE_TYPE: "ecs.g7.large"},
        {INSTANCE_TYPE: "bare-metal-7", FAMILY: "custom", MACHINE_FAMILY: "custom", POOL: "x"},
        {POOL: "legacy"},
        # a value of each open label that no pod names: a NotIn never excludes every value
        {INSTANCE_TYPE: "hidden-9", FAMILY: "hidden", MACHINE_FAMILY: "hidden", POOL: "hidden"},
    ],
    "arm64": [
        {INSTANCE_TYPE: "m7g.large"},
        {INSTANCE_TYPE: "c7gn.xlarge", FAMILY: "c7gn", MANUFACTURER: "aws", NODEPOOL: "graviton"},
        {INSTANCE_TYPE: "x2gd.large", FAMILY: "x2gd", MANUFACTURER: "aws", NODEPOOL: "mixed"},
        {INSTANCE_TYPE: "c4a-standard-4", MACHINE_FAMILY: "c4a", COMPUTE_CLASS: "autopilot-arm"},
        {INSTANCE_TYPE: "t2a-standard-2", MACHINE_FAMILY: "t2a"},
        {INSTANCE_TYPE: "Standard_D4ps_v5"},
        {INSTANCE_TYPE: "VM.Standard.A1.Flex"},
        {INSTANCE_TYPE: "cax21"},
        {INSTANCE_TYPE: "ecs.g8y.large"},
        {INSTANCE_TYPE: "bare-metal-7", FAMILY: "custom", MACHINE_FAMILY: "custom", POOL: "x"},
        {},
        # a value of each open label that no pod names: a NotIn never excludes every value
        {INSTANCE_TYPE: "hidden-9", FAMILY: "hidden", MACHINE_FAMILY: "hidden", POOL: "hidden"},
    ],
}
_provider_values: dict[str, list[str]] = {}
for _label_sets in PROVIDER_LABELS.values():
    for _labels in _label_sets:
        for _key, _value in _labels.items():
            _provider_values.setdefault(_key, [])
            if _value not in _provider_values[_key]:
                _provider_values[_key].append(_value)
_provider_values[NODEPOOL].append("elsewhere")
_provider_values[COMPUTE_CLASS].append("Scale-Out")


def _labelled_policy() -> SchedulingPolicy:
    from kmultiarch.core.policy.nodelabels import read_node_labels, stream_rules
    from kmultiarch.core.policy.reading import Where

    own = read_node_labels(
        [{"key": POOL, "values": ["legacy"], "platforms": ["linux/amd64"]}],
        Where("policy.yaml", ("spec", "nodeLabels")),
    )
    return SchedulingPolicy(node_labels=(*own, *stream_rules([("graviton", [ARM64])], [])))


LABELLED_POLICY = _labelled_policy()


@st.composite
def labelled_clusters(draw: st.DrawFn) -> list[Node]:
    nodes: list[Node] = []
    policy = LABELLED_POLICY
    for platform in policy.platforms:
        for _ in range(draw(st.integers(1, 3))):
            labels = {
                ARCH: platform.architecture,
                OS: platform.os,
                ZONE: draw(st.sampled_from(["a", "b"])),
                **draw(st.sampled_from(PROVIDER_LABELS[platform.architecture])),
            }
            own = policy_taints(policy, platform)
            nodes.append(Node(f"node-{len(nodes)}", labels, own, platform, own))
    return nodes


@st.composite
def labelled_expressions(draw: st.DrawFn) -> dict[str, Any]:
    keys = [INSTANCE_TYPE, FAMILY, MANUFACTURER, MACHINE_FAMILY, COMPUTE_CLASS, NODEPOOL, POOL]
    key = draw(st.sampled_from([*keys, *keys, ARCH, ZONE]))
    operator = draw(st.sampled_from(["In", "In", "In", "NotIn", "Exists", "DoesNotExist"]))
    if operator in ("Exists", "DoesNotExist"):
        return {"key": key, "operator": operator}
    choices = _provider_values.get(key) or _values[key]
    values = draw(st.lists(st.sampled_from(choices), min_size=1, max_size=2, unique=True))
    return {"key": key, "operator": operator, "values": values}


@st.composite
def labelled_pods(draw: st.DrawFn) -> dict[str, Any]:
    spec: dict[str, Any] = {}
    if draw(st.booleans()):
        selector: dict[str, str] = {}
        for _ in range(draw(st.integers(1, 2))):
            key = draw(
                st.sampled_from([INSTANCE_TYPE, MANUFACTURER, COMPUTE_CLASS, NODEPOOL, POOL])
            )
            selector[key] = draw(st.sampled_from(_provider_values[key]))
        spec["nodeSelector"] = selector
    if draw(st.booleans()):
        terms = draw(
            st.lists(
                st.fixed_dictionaries(
                    {"matchExpressions": st.lists(labelled_expressions(), min_size=1, max_size=3)}
                ),
                min_size=1,
                max_size=3,
            )
        )
        spec["affinity"] = {"nodeAffinity": {REQUIRED: {"nodeSelectorTerms": terms}}}
    return spec


@settings(
    max_examples=1500,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(
    labelled_clusters(),
    st.lists(st.frozensets(st.sampled_from([AMD64, ARM64]), min_size=1), min_size=1, max_size=2),
    labelled_pods(),
)
def test_terms_kept_and_dropped_agree_with_nodes_labelled_as_providers_label_them(
    nodes: list[Node], images: list[frozenset[Platform]], spec: dict[str, Any]
) -> None:
    """Over nodes labelled by their providers (instance types, Karpenter's and GKE's labels, a
    policy's nodeLabels, a NodePool of the stream), the pod may run exactly where its
    constraints and its images allow; a pod no such node exists for is reported."""
    policy = LABELLED_POLICY
    supported = supported_platforms(images, policy.platforms)
    plan = plan_pod(spec, ("spec",), supported, policy)
    expected = {
        node.name
        for node in nodes
        if may_run(spec, node, ignore=node.policy_taints) and image_runs(images, node)
    }
    event("problem" if plan.conflicts else ("changed" if plan.operations else "unchanged"))
    if plan.conflicts:
        assert plan.operations == ()
        assert expected == set(), plan.conflicts
        return
    after = applied(spec, plan.operations)
    allowed = {node.name for node in nodes if may_run(after, node)}
    assert allowed == expected, plan.node_terms
    again = plan_pod(after, ("spec",), supported, policy)
    assert again.operations == () and again.conflicts == ()


#: Every node a provider may have: each label set of each architecture, in each zone.
FULL_LABELLED_CLUSTER = [
    Node(
        f"full-{index}",
        {ARCH: platform.architecture, OS: platform.os, ZONE: zone, **labels},
        policy_taints(LABELLED_POLICY, platform),
        platform,
        policy_taints(LABELLED_POLICY, platform),
    )
    for index, (platform, labels, zone) in enumerate(
        (platform, labels, zone)
        for platform in LABELLED_POLICY.platforms
        for labels in PROVIDER_LABELS[platform.architecture]
        for zone in ("a", "b")
    )
]


@st.composite
def one_label_pods(draw: st.DrawFn) -> dict[str, Any]:
    """Pods constrained by one label of the table (and kubernetes.io/arch), on values some node
    holds."""
    key = draw(st.sampled_from([INSTANCE_TYPE, FAMILY, MANUFACTURER, MACHINE_FAMILY, POOL]))
    held = [
        v
        for v in _provider_values[key]
        if v not in ("elsewhere", "Scale-Out") and not v.startswith("hidden")
    ]

    def expression(label: str) -> st.SearchStrategy[dict[str, Any]]:
        choices = held if label == key else _values[label]
        operator = st.sampled_from(["In", "In", "NotIn", "Exists", "DoesNotExist"])
        return operator.flatmap(
            lambda op: (
                st.just({"key": label, "operator": op})
                if op in ("Exists", "DoesNotExist")
                else st.lists(st.sampled_from(choices), min_size=1, max_size=2, unique=True).map(
                    lambda values: {"key": label, "operator": op, "values": values}
                )
            )
        )

    spec: dict[str, Any] = {}
    if draw(st.booleans()):
        spec["nodeSelector"] = {key: draw(st.sampled_from(held))}
    if draw(st.booleans()) or not spec:
        labels = st.sampled_from([key, key, key, ARCH]).flatmap(expression)
        terms = draw(
            st.lists(
                st.fixed_dictionaries(
                    {"matchExpressions": st.lists(labels, min_size=1, max_size=3)}
                ),
                min_size=1,
                max_size=3,
            )
        )
        spec["affinity"] = {"nodeAffinity": {REQUIRED: {"nodeSelectorTerms": terms}}}
    return spec


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(st.frozensets(st.sampled_from([AMD64, ARM64]), min_size=1), min_size=1, max_size=2),
    one_label_pods(),
)
def test_a_pod_the_labels_keep_off_every_node_its_images_run_on_is_reported(
    images: list[frozenset[Platform]], spec: dict[str, Any]
) -> None:
    """Where the pod's constraints reach nodes, but none of a platform its images run on, the
    pod is a scheduling-conflict (before issue 30: an arch expression no node satisfies, exit
    0); where they reach some, the arm64 toleration is added exactly when an arm64 node is
    among them."""
    policy = LABELLED_POLICY
    supported = supported_platforms(images, policy.platforms)
    reach = {
        node.platform
        for node in FULL_LABELLED_CLUSTER
        if may_run(spec, node, ignore=node.policy_taints)
    }
    assume(reach)
    plan = plan_pod(spec, ("spec",), supported, policy)
    event("problem" if plan.conflicts else ("changed" if plan.operations else "unchanged"))
    assert bool(plan.conflicts) is not bool(reach & supported), (reach, plan.conflicts)
    if not plan.conflicts:
        assert bool(plan.added_tolerations) is (ARM64 in reach & supported)
