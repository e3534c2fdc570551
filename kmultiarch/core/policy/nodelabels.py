"""Node labels whose values fix a node's CPU architecture, as data: the built-in table, how a
policy's ``nodeLabels`` extend and override it, and the node pools of a stream.

Clusters pick CPUs by more than ``kubernetes.io/arch``: a pod that selects
``node.kubernetes.io/instance-type: m7g.large`` lands on a Graviton (arm64) node whatever its
affinity says, and ``karpenter.k8s.aws/instance-cpu-manufacturer: aws``,
``cloud.google.com/machine-family: c4a`` or ``cloud.google.com/compute-class: autopilot-arm`` do
the same. Each entry below is written in the policy's own format (``spec.nodeLabels``: ``key``,
``values`` as globs, ``architectures`` or ``platforms``), beside the provider documentation it is
taken from, and is read by the same reader as a policy's entries: a user reads the built-ins to
learn how to write their own (kustomize's field specs are kept the same way).

What an entry means: a node carrying ``key`` with a value that one of ``values`` matches is of
one of the ``architectures`` (any OS) or ``platforms``. The table knows both sides of a
provider: its Arm families and its other current families (amd64), so ``m6i.large`` narrows to
amd64 as ``m7g.large`` narrows to arm64. A value no entry matches says nothing (no guess), and an
entry may say nothing on purpose (``architectures: []``: EC2 Mac instances, which are no
Kubernetes nodes). The first entry that matches wins: a policy's entries come first, then the
node pools of the stream (:func:`stream_rules`), then the built-ins.

A few labels have a known, closed set of values (:data:`DOMAINS`, Karpenter's CPU manufacturer):
a term that makes a node carry the label (``Exists``) and excludes some values (``NotIn``) then
narrows too. ``NotIn`` alone never narrows: a node without the label satisfies it (the
scheduler's ``NotIn`` matches an absent label), and a cluster may mix Karpenter's nodes with
others.

Pure: standard library only.
"""

from __future__ import annotations

import fnmatch
import glob
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from kmultiarch.core.images.platform import Platform
from kmultiarch.core.policy.reading import Where, check_keys
from kmultiarch.errors import InvalidPlatformError

INSTANCE_TYPE = "node.kubernetes.io/instance-type"
BETA_INSTANCE_TYPE = "beta.kubernetes.io/instance-type"
KARPENTER_INSTANCE_FAMILY = "karpenter.k8s.aws/instance-family"
KARPENTER_CPU_MANUFACTURER = "karpenter.k8s.aws/instance-cpu-manufacturer"
EKS_INSTANCE_FAMILY = "eks.amazonaws.com/instance-family"
EKS_CPU_MANUFACTURER = "eks.amazonaws.com/instance-cpu-manufacturer"
GKE_MACHINE_FAMILY = "cloud.google.com/machine-family"
GKE_COMPUTE_CLASS = "cloud.google.com/compute-class"
KARPENTER_NODEPOOL = "karpenter.sh/nodepool"
COMPUTE_CLASS_API_VERSIONS = ("cloud.google.com/v1", "cloud.google.com/v1beta1")


@dataclass(frozen=True)
class NodeLabelRule:
    """Nodes whose ``key`` label has a value matching one of ``values`` (globs) are of one of
    ``platforms``, or of one of ``architectures`` (any OS). Neither: the values say nothing."""

    key: str
    values: tuple[str, ...]
    architectures: tuple[str, ...] = ()
    platforms: tuple[Platform, ...] = ()
    #: What the values are, in a few words, for messages (``AWS Graviton``).
    note: str = ""
    #: Where the entry comes from: the provider's documentation, or the policy's key path.
    source: str = ""

    def matches(self, value: str) -> bool:
        return any(fnmatch.fnmatchcase(value, pattern) for pattern in self.values)

    @property
    def says_something(self) -> bool:
        return bool(self.architectures or self.platforms)

    def covers(self, node: Platform) -> bool:
        """Whether nodes of the cluster platform ``node`` may carry a value of this entry."""
        if node.architecture in self.architectures:
            return True
        return any(_covers(platform, node) for platform in self.platforms)

    @property
    def what(self) -> str:
        """What the values are, for messages: the note, else where the entry comes from."""
        return self.note or self.source

    def implies(self) -> str:
        """What a value of this entry means, for messages: ``arm64`` or ``linux/arm64``."""
        return ", ".join([*self.architectures, *(str(p) for p in self.platforms)])


def _covers(declared: Platform, node: Platform) -> bool:
    if (declared.os, declared.architecture) != (node.os, node.architecture):
        return False
    if declared.variant and declared.variant != node.variant:
        return False
    return not (declared.os_version and declared.build != node.build)


#: Labels whose values are known in full (on the nodes that carry them): Karpenter writes the
#: EC2 processor's manufacturer lower-cased (DescribeInstanceTypes ProcessorInfo.Manufacturer:
#: AWS, Intel, AMD), as EKS Auto Mode does.
DOMAINS: Mapping[str, tuple[str, ...]] = {
    KARPENTER_CPU_MANUFACTURER: ("aws", "intel", "amd"),
    EKS_CPU_MANUFACTURER: ("aws", "intel", "amd"),
}

_EC2_NAMING = "https://docs.aws.amazon.com/ec2/latest/instancetypes/instance-type-names.html"
_EC2_GRAVITON = "https://aws.amazon.com/ec2/graviton/"
_KARPENTER_LABELS = "https://karpenter.sh/docs/concepts/scheduling/#well-known-labels"
_EKS_AUTO_LABELS = "https://docs.aws.amazon.com/eks/latest/userguide/create-node-pool.html"
_GCE_ARM = "https://cloud.google.com/compute/docs/instances/arm-on-compute"
_GCE_MACHINES = "https://cloud.google.com/compute/docs/machine-resource"
_GKE_CLASSES = (
    "https://cloud.google.com/kubernetes-engine/docs/concepts/about-built-in-compute-classes"
)
_AZURE_NAMING = "https://learn.microsoft.com/azure/virtual-machines/vm-naming-conventions"
_AZURE_GB200 = (
    "https://learn.microsoft.com/azure/virtual-machines/sizes/gpu-accelerated/nd-gb200-v6-series"
)
_OCI_SHAPES = "https://docs.oracle.com/iaas/Content/Compute/References/computeshapes.htm"
_HETZNER = "https://docs.hetzner.com/cloud/servers/overview/"
_ALIBABA = "https://www.alibabacloud.com/help/ecs/user-guide/overview-of-instance-families"

#: EC2 instance families (``m7g``): family letters, the generation digit, attribute letters. A
#: ``g`` right after the generation digit is a Graviton processor (m7g, c7gn, r6gd, x2gd, im4gn,
#: is4gen, i4g, g5g, hpc7g; a leading ``g`` is the GPU family: g4dn is Intel); ``a1`` is the
#: first Graviton. Mac instances (``mac2`` is Apple silicon) are no Kubernetes nodes.
_EC2_ARM_FAMILIES = ("a1", "[a-z][0-9]g*", "[a-z][a-z][0-9]g*", "[a-z][a-z][a-z][0-9]g*")
_EC2_OTHER_FAMILIES = ("[a-z][0-9]*", "[a-z][a-z][0-9]*", "[a-z][a-z][a-z][0-9]*")

_GCE_ARM_SERIES = ("t2a", "c4a", "n4a", "a4x")
_GCE_X86_SERIES = (
    *("e2", "n1", "n2", "n2d", "n4", "n4d", "c2", "c2d", "c3", "c3d", "c4", "c4d", "t2d"),
    *("m1", "m2", "m3", "m4", "x4", "h3", "h4d", "z3", "a2", "a3", "a4", "g2", "f1", "g1"),
)


def _instance_type_entries(key: str) -> list[dict[str, object]]:
    """The instance types of every provider, under ``node.kubernetes.io/instance-type`` or its
    ``beta.`` twin (the cloud controller managers write both)."""
    return [
        {
            "key": key,
            "values": ["mac*.*"],
            "architectures": [],
            "note": "EC2 Mac instances, which are no Kubernetes nodes",
            "source": _EC2_NAMING,
        },
        {
            "key": key,
            "values": [f"{family}.*" for family in _EC2_ARM_FAMILIES],
            "architectures": ["arm64"],
            "note": "an AWS Graviton instance type",
            "source": _EC2_GRAVITON,
        },
        {
            "key": key,
            "values": [f"{family}.*" for family in _EC2_OTHER_FAMILIES],
            "architectures": ["amd64"],
            "note": "an AWS instance type of an Intel or AMD family",
            "source": _EC2_NAMING,
        },
        {
            "key": key,
            "values": [f"{series}-*" for series in _GCE_ARM_SERIES],
            "architectures": ["arm64"],
            "note": "a Google Cloud Arm machine type",
            "source": _GCE_ARM,
        },
        {
            "key": key,
            "values": [f"{series}-*" for series in _GCE_X86_SERIES],
            "architectures": ["amd64"],
            "note": "a Google Cloud x86 machine type",
            "source": _GCE_MACHINES,
        },
        {
            "key": key,
            "values": ["Standard_[BDE][0-9]*p*_v[0-9]*", "Standard_*_GB[0-9]*"],
            "architectures": ["arm64"],
            "note": "an Azure Arm size",
            "source": f"{_AZURE_NAMING} {_AZURE_GB200}",
        },
        {
            "key": key,
            "values": ["Standard_*"],
            "architectures": ["amd64"],
            "note": "an Azure x86 size",
            "source": _AZURE_NAMING,
        },
        {
            "key": key,
            "values": ["[VB]M.Standard.A[0-9]*"],
            "architectures": ["arm64"],
            "note": "an Oracle Cloud Ampere shape",
            "source": _OCI_SHAPES,
        },
        {
            "key": key,
            "values": [
                "[VB]M.Standard.E[0-9]*",
                "[VB]M.Standard[0-9]*",
                "[VB]M.Standard.B1*",
                "[VB]M.Optimized3*",
                "[VB]M.DenseIO*",
            ],
            "architectures": ["amd64"],
            "note": "an Oracle Cloud AMD or Intel shape",
            "source": _OCI_SHAPES,
        },
        {
            "key": key,
            "values": ["cax*"],
            "architectures": ["arm64"],
            "note": "a Hetzner Cloud Ampere server type",
            "source": _HETZNER,
        },
        {
            "key": key,
            "values": ["cx*", "cpx*", "ccx*"],
            "architectures": ["amd64"],
            "note": "a Hetzner Cloud Intel or AMD server type",
            "source": _HETZNER,
        },
        {
            "key": key,
            "values": ["ecs.*8y*"],
            "architectures": ["arm64"],
            "note": "an Alibaba Cloud Yitian instance type",
            "source": _ALIBABA,
        },
        {
            "key": key,
            "values": ["ecs.[cgr][5-7].*", "ecs.[cgr][6-9][aie].*"],
            "architectures": ["amd64"],
            "note": "an Alibaba Cloud Intel or AMD instance family",
            "source": _ALIBABA,
        },
    ]


def _family_entries(key: str, source: str) -> list[dict[str, object]]:
    return [
        {
            "key": key,
            "values": ["mac*"],
            "architectures": [],
            "note": "EC2 Mac instances, which are no Kubernetes nodes",
            "source": _EC2_NAMING,
        },
        {
            "key": key,
            "values": list(_EC2_ARM_FAMILIES),
            "architectures": ["arm64"],
            "note": "an AWS Graviton instance family",
            "source": f"{source} {_EC2_GRAVITON}",
        },
        {
            "key": key,
            "values": list(_EC2_OTHER_FAMILIES),
            "architectures": ["amd64"],
            "note": "an AWS instance family of Intel or AMD processors",
            "source": f"{source} {_EC2_NAMING}",
        },
    ]


def _manufacturer_entries(key: str, source: str) -> list[dict[str, object]]:
    return [
        {
            "key": key,
            "values": ["aws"],
            "architectures": ["arm64"],
            "note": "AWS Graviton processors",
            "source": source,
        },
        {
            "key": key,
            "values": ["intel", "amd"],
            "architectures": ["amd64"],
            "note": "Intel or AMD processors",
            "source": source,
        },
    ]


#: The built-in table, in the policy's ``spec.nodeLabels`` format.
BUILTIN_ENTRIES: tuple[Mapping[str, object], ...] = (
    *_instance_type_entries(INSTANCE_TYPE),
    *_instance_type_entries(BETA_INSTANCE_TYPE),
    *_family_entries(KARPENTER_INSTANCE_FAMILY, _KARPENTER_LABELS),
    *_family_entries(EKS_INSTANCE_FAMILY, _EKS_AUTO_LABELS),
    *_manufacturer_entries(KARPENTER_CPU_MANUFACTURER, _KARPENTER_LABELS),
    *_manufacturer_entries(EKS_CPU_MANUFACTURER, _EKS_AUTO_LABELS),
    {
        "key": GKE_MACHINE_FAMILY,
        "values": list(_GCE_ARM_SERIES),
        "architectures": ["arm64"],
        "note": "a Google Cloud Arm machine series",
        "source": _GCE_ARM,
    },
    {
        "key": GKE_MACHINE_FAMILY,
        "values": list(_GCE_X86_SERIES),
        "architectures": ["amd64"],
        "note": "a Google Cloud x86 machine series",
        "source": _GCE_MACHINES,
    },
    {
        "key": GKE_COMPUTE_CLASS,
        "values": ["autopilot-arm"],
        "architectures": ["arm64"],
        "note": "GKE's built-in Arm ComputeClass",
        "source": _GKE_CLASSES,
    },
    {
        "key": GKE_COMPUTE_CLASS,
        "values": ["autopilot", "autopilot-spot"],
        "architectures": ["amd64"],
        "note": "GKE's built-in x86 ComputeClasses",
        "source": _GKE_CLASSES,
    },
)

_ENTRY_KEYS = {"key", "values", "architectures", "platforms", "note", "source"}


def read_node_labels(value: object, where: Where) -> tuple[NodeLabelRule, ...]:
    """``spec.nodeLabels`` (and the built-in table): a list of ``{key, values, platforms}`` or
    ``{key, values, architectures}`` (``note`` and ``source`` optional)."""
    if value is None:
        return ()
    if not isinstance(value, list | tuple):
        raise where.error(
            "expected a list of {key, values, platforms}, like "
            "[{key: node.kubernetes.io/instance-type, values: [m7g.*], platforms: [linux/arm64]}]"
        )
    rules = []
    for position, item in enumerate(value):
        here = where / position
        if not isinstance(item, Mapping):
            raise here.error("expected a mapping with key, values and platforms")
        check_keys(item, _ENTRY_KEYS, here)
        key = item.get("key")
        if not isinstance(key, str) or not key:
            raise (here / "key").error("expected a node label key")
        values = item.get("values")
        if isinstance(values, str):
            values = [values]
        if (
            not isinstance(values, list)
            or not values
            or not all(isinstance(v, str) and v for v in values)
        ):
            raise (here / "values").error("expected a list of values (globs, like m7g.*)")
        if "platforms" in item and "architectures" in item:
            raise here.error("give platforms or architectures, not both")
        if "platforms" not in item and "architectures" not in item:
            raise here.error(
                "give platforms (like [linux/arm64]) or architectures (like [arm64]): what "
                "nodes with these values are ([] for nothing)"
            )
        platforms = _platforms(item.get("platforms"), here / "platforms")
        architectures = _architectures(item.get("architectures"), here / "architectures")
        note, source = item.get("note", ""), item.get("source", str(here))
        if not isinstance(note, str) or not isinstance(source, str):
            raise here.error("note and source are strings")
        rules.append(
            NodeLabelRule(key, tuple(values), architectures, platforms, note, source or str(here))
        )
    return tuple(rules)


def _platforms(value: object, where: Where) -> tuple[Platform, ...]:
    if value is None:
        return ()
    if not isinstance(value, list):
        raise where.error("expected a list of platforms like linux/arm64")
    platforms = []
    for position, item in enumerate(value):
        try:
            platforms.append(Platform.parse(str(item)))
        except InvalidPlatformError as exc:
            raise (where / position).error(str(exc)) from exc
    return tuple(platforms)


def _architectures(value: object, where: Where) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list):
        raise where.error("expected a list of architectures like arm64")
    architectures = []
    for position, item in enumerate(value):
        try:
            architectures.append(Platform.create("linux", str(item)).architecture)
        except InvalidPlatformError as exc:
            raise (where / position).error(f"invalid architecture {item!r}") from exc
    return tuple(architectures)


BUILTIN: tuple[NodeLabelRule, ...] = read_node_labels(
    list(BUILTIN_ENTRIES), Where("kmultiarch/core/policy/nodelabels.py", ("BUILTIN_ENTRIES",))
)
BUILTIN_KEYS = frozenset(rule.key for rule in BUILTIN)


def rule_for(key: str, value: str, rules: Sequence[NodeLabelRule]) -> NodeLabelRule | None:
    """The entry that says what nodes with ``key=value`` are (``rules`` first, then the
    built-ins); None when the value says nothing."""
    for rule in (*rules, *BUILTIN):
        if rule.key == key and rule.matches(value):
            return rule if rule.says_something else None
    return None


def known_keys(rules: Sequence[NodeLabelRule]) -> frozenset[str]:
    """The label keys some entry knows values of."""
    return BUILTIN_KEYS.union(rule.key for rule in rules) if rules else BUILTIN_KEYS


# -- node pools of the stream -------------------------------------------------------------------


def stream_rules(
    node_pools: Iterable[tuple[str, Sequence[Platform]]],
    compute_classes: Iterable[tuple[str, Sequence[str]]],
    rules: Sequence[NodeLabelRule] = (),
    pool_labels: Mapping[tuple[str, str], Sequence[Platform]] | None = None,
) -> tuple[NodeLabelRule, ...]:
    """Entries for the node pools the stream holds: ``karpenter.sh/nodepool: NAME`` takes that
    NodePool's platforms (its requirements,
    :func:`kmultiarch.core.placement.cluster.nodepool_platforms` narrowed by
    :func:`requirement_architectures`); ``cloud.google.com/compute-class: NAME`` the architectures
    of the machine families (or types) of the ComputeClass's priorities, when every priority names
    one the table knows (a priority that names none may be any); a label the NodePools' templates
    put on their nodes (``spec.template.metadata.labels``), the platforms of the pools that put it
    there (a label of the table is left to the table)."""
    found: list[NodeLabelRule] = []
    for name, platforms in node_pools:
        found.append(
            NodeLabelRule(
                KARPENTER_NODEPOOL,
                (glob.escape(name),),
                platforms=tuple(platforms),
                note=f"the NodePool {name} of the stream",
                source=f"NodePool {name}",
            )
        )
    for (key, value), platforms in (pool_labels or {}).items():
        if key in BUILTIN_KEYS or key == KARPENTER_NODEPOOL:
            continue
        found.append(
            NodeLabelRule(
                key,
                (glob.escape(value),),
                platforms=tuple(dict.fromkeys(platforms)),
                note="the label the NodePools of the stream put on their nodes",
                source=f"NodePools' spec.template.metadata.labels {key}={value}",
            )
        )
    for name, machines in compute_classes:
        architectures = _class_architectures(machines, rules)
        if architectures:
            found.append(
                NodeLabelRule(
                    GKE_COMPUTE_CLASS,
                    (glob.escape(name),),
                    architectures,
                    note=f"the ComputeClass {name} of the stream",
                    source=f"ComputeClass {name}",
                )
            )
    return tuple(found)


def _class_architectures(
    machines: Sequence[str], rules: Sequence[NodeLabelRule]
) -> tuple[str, ...]:
    architectures: list[str] = []
    for machine in machines:
        # "family:c4a" or "type:c4a-standard-4", as compute_class_machines gives them.
        kind, _, value = machine.partition(":")
        key = GKE_MACHINE_FAMILY if kind == "family" else INSTANCE_TYPE
        rule = rule_for(key, value, rules) if value else None
        if rule is None or rule.platforms:
            return ()
        architectures.extend(rule.architectures)
    return tuple(dict.fromkeys(architectures))


def compute_class_machines(resource: Mapping[str, object]) -> tuple[str, str, list[str]] | None:
    """A ComputeClass's name and what each priority asks for (``family:NAME`` or
    ``type:NAME``; ``?`` for a priority that names neither); None for another resource."""
    if resource.get("kind") != "ComputeClass" or (
        resource.get("apiVersion") not in COMPUTE_CLASS_API_VERSIONS
    ):
        return None
    metadata = resource.get("metadata")
    name = metadata.get("name") if isinstance(metadata, Mapping) else None
    if not isinstance(name, str) or not name:
        return None
    spec = resource.get("spec")
    priorities = spec.get("priorities") if isinstance(spec, Mapping) else None
    machines = []
    for priority in priorities if isinstance(priorities, list) else []:
        entry = priority if isinstance(priority, Mapping) else {}
        family, machine_type = entry.get("machineFamily"), entry.get("machineType")
        if isinstance(family, str) and family:
            machines.append(f"family:{family}")
        elif isinstance(machine_type, str) and machine_type:
            machines.append(f"type:{machine_type}")
        else:
            machines.append("?")
    return str(resource.get("apiVersion")), name, machines


def requirement_architectures(
    requirements: Sequence[object], rules: Sequence[NodeLabelRule] = ()
) -> set[str] | None:
    """The architectures a NodePool's ``In`` requirements on labels of the table allow
    (``karpenter.k8s.aws/instance-family In [c7g, m7g]``: arm64); None when they say nothing."""
    allowed: set[str] | None = None
    for item in requirements:
        requirement = item if isinstance(item, Mapping) else {}
        key, values = requirement.get("key"), requirement.get("values")
        if requirement.get("operator") != "In" or not isinstance(key, str):
            continue
        if not isinstance(values, list) or not values:
            continue
        found: set[str] = set()
        for value in values:
            rule = rule_for(key, str(value), rules)
            if rule is None or rule.platforms:
                break
            found.update(rule.architectures)
        else:
            allowed = found if allowed is None else allowed & found
    return allowed
