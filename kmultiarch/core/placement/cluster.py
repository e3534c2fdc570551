"""The cluster's node platforms and taints, read from Node objects and Karpenter NodePools.

Pure: plain data in (parsed YAML values), plain data out. ``kmultiarch policy init`` turns what
this module finds into a MultiArchPolicy; ``check`` compares the NodePools of a stream with the
policy in force (rule ``policy-drift``).

Where the facts come from:

- a Node (``v1``, as ``kubectl get nodes -o yaml`` lists them): the ``kubernetes.io/os`` and
  ``kubernetes.io/arch`` labels (else the ``beta.`` ones, else ``status.nodeInfo``), a Windows
  node's ``node.kubernetes.io/windows-build`` as the os.version, and ``spec.taints`` less the
  taints Kubernetes, cloud providers, the cluster autoscaler and Karpenter put on and take off
  by themselves (``node.kubernetes.io/not-ready`` and the like): those say nothing of the pods
  a node is meant for.
- a Karpenter NodePool (``karpenter.sh/v1``, also ``v1beta1``): ``spec.template.spec
  .requirements`` on ``kubernetes.io/arch`` and ``kubernetes.io/os`` (``In``, ``NotIn``,
  ``Exists``, ``DoesNotExist``; several on one key all hold) and ``spec.template.spec.taints``.
  ``startupTaints`` are left out: Karpenter expects pods not to tolerate them. With no
  requirement on the architecture a NodePool may launch either architecture Karpenter
  supports (amd64, arm64); with none on the OS, Linux nodes.

A taint whose effect Kubernetes does not have (only ``NoSchedule``, ``PreferNoSchedule`` and
``NoExecute``) schedules nothing, and a policy cannot tolerate it: it is kept apart
(``NodeSource.unknown_taints``) for the adapter to warn about, never in the shape.

Which tolerations a platform needs: none when some source offers it untainted (a pod can run
there without tolerating anything); otherwise the taints of the sources that are least tainted
(a dedicated GPU pool tainted on top of an arm64 pool's taint adds nothing), so that a pod that
tolerates them reaches at least one of those sources.
"""

from __future__ import annotations

import glob
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass

from kmultiarch.core.images.platform import Platform
from kmultiarch.core.placement.scheduling import toleration_covers
from kmultiarch.core.policy.model import (
    API_VERSION,
    KIND,
    TAINT_EFFECTS,
    SchedulingPolicy,
    Toleration,
)
from kmultiarch.core.policy.nodelabels import (
    NodeLabelRule,
    compute_class_machines,
    requirement_architectures,
    rule_for,
    stream_rules,
)
from kmultiarch.core.resources import ResourcePath, resources_in
from kmultiarch.errors import InvalidPlatformError

ARCH_LABEL = "kubernetes.io/arch"
OS_LABEL = "kubernetes.io/os"
WINDOWS_BUILD_LABEL = "node.kubernetes.io/windows-build"
_BETA = {ARCH_LABEL: "beta.kubernetes.io/arch", OS_LABEL: "beta.kubernetes.io/os"}
NODEPOOL_API_VERSIONS = ("karpenter.sh/v1", "karpenter.sh/v1beta1")
#: What a NodePool may launch where its requirements do not narrow it.
KARPENTER_ARCHITECTURES = ("amd64", "arm64")
KARPENTER_OPERATING_SYSTEMS = ("linux", "windows")
DEFAULT_NODEPOOL_OS = "linux"
#: Taints set and cleared by Kubernetes, cloud controllers, the cluster autoscaler and
#: Karpenter as a node's condition changes: not part of what the node is for.
_TRANSIENT_TAINT_PREFIXES = (
    "node.kubernetes.io/",
    "node.cloudprovider.kubernetes.io/",
    "node-role.kubernetes.io/",
    "karpenter.sh/",
    "ToBeDeletedByClusterAutoscaler",
    "DeletionCandidateOfClusterAutoscaler",
)


@dataclass(frozen=True, order=True)
class Taint:
    key: str
    value: str = ""
    effect: str = "NoSchedule"

    def toleration(self) -> Toleration:
        """The narrowest toleration of this taint."""
        if self.value:
            return Toleration(self.key, "Equal", self.value, self.effect)
        return Toleration(self.key, "Exists", "", self.effect)

    def __str__(self) -> str:
        value = f"={self.value}" if self.value else ""
        return f"{self.key}{value}:{self.effect}"


@dataclass(frozen=True)
class NodeSource:
    """A Node, or a NodePool: the platforms it offers and the taints its nodes carry."""

    api_version: str
    kind: str
    name: str
    platforms: tuple[Platform, ...]
    taints: tuple[Taint, ...]
    path: tuple[str | int, ...] = ()  # from the document root (inside a List)
    #: Taints with an effect Kubernetes does not have: not in ``taints``, said by the adapter.
    unknown_taints: tuple[Taint, ...] = ()
    #: A Node's labels (``metadata.labels``), for the labels that split the cluster.
    labels: tuple[tuple[str, str], ...] = ()

    @property
    def display_name(self) -> str:
        return f"{self.kind} {self.name}"


@dataclass(frozen=True)
class ClusterShape:
    """What a policy needs: the platforms in a stable order, and each one's tolerations."""

    platforms: tuple[Platform, ...]
    tolerations: Mapping[Platform, tuple[Toleration, ...]]


def may_describe_nodes(api_version: str, kind: str) -> bool:
    """False when a resource of this type is neither a Node, a NodePool nor a List of them: a
    reader need not compose it to look for nodes."""
    return kind in ("Node", "NodePool") or kind.endswith("List")


def may_describe_node_pools(api_version: str, kind: str) -> bool:
    """False when a resource of this type is neither a NodePool, a ComputeClass nor a List."""
    return kind in ("NodePool", "ComputeClass") or kind.endswith("List")


def node_pool_rules(
    documents: Iterable[object], rules: Sequence[NodeLabelRule] = ()
) -> tuple[NodeLabelRule, ...]:
    """Node label entries for the node pools the documents hold: a pod selecting
    ``karpenter.sh/nodepool: NAME`` lands on nodes of that NodePool's platforms (its
    requirements on the OS and architecture, and on labels of the table such as
    ``karpenter.k8s.aws/instance-family In [c7g]``); one selecting
    ``cloud.google.com/compute-class: NAME`` on the machine families of that ComputeClass's
    priorities. ``rules``: the policy's entries, before the built-in table."""
    pools: list[tuple[str, tuple[Platform, ...]]] = []
    classes: list[tuple[str, list[str]]] = []
    #: (label, value) the NodePools' templates put on their nodes -> the platforms of those pools
    pool_labels: dict[tuple[str, str], list[Platform]] = {}
    for document in documents:
        for _, resource in resources_in(document):
            kind, api_version = resource.get("kind"), resource.get("apiVersion")
            if kind == "NodePool" and api_version in NODEPOOL_API_VERSIONS:
                name = _mapping(resource.get("metadata")).get("name")
                if not isinstance(name, str) or not name:
                    continue
                template_spec = _mapping(
                    _mapping(_mapping(resource.get("spec")).get("template")).get("spec")
                )
                requirements = _list(template_spec.get("requirements"))
                platforms = nodepool_platforms(requirements)
                architectures = requirement_architectures(requirements, rules)
                if architectures is not None:
                    platforms = tuple(p for p in platforms if p.architecture in architectures)
                pools.append((name, platforms))
                template = _mapping(_mapping(resource.get("spec")).get("template"))
                labels = _mapping(_mapping(template.get("metadata")).get("labels"))
                for key, value in labels.items():
                    if isinstance(key, str) and isinstance(value, str) and key and value:
                        pool_labels.setdefault((key, value), []).extend(platforms)
                continue
            found = compute_class_machines(resource)
            if found is not None:
                classes.append((found[1], found[2]))
    return stream_rules(pools, classes, rules, pool_labels)


def node_sources(document: object) -> list[NodeSource]:
    """Every Node and Karpenter NodePool in a document (a resource or a ``kind: List``)."""
    return [
        source
        for path, resource in resources_in(document)
        for source in _node_source(resource, path)
    ]


def _node_source(resource: Mapping[str, object], path: ResourcePath) -> Iterator[NodeSource]:
    kind, api_version = resource.get("kind"), resource.get("apiVersion")
    metadata = _mapping(resource.get("metadata"))
    name = metadata.get("name") if isinstance(metadata.get("name"), str) else "(unnamed)"
    if kind == "Node" and api_version == "v1":
        known, unknown = _by_effect(_node_taints(resource))
        labels = tuple(
            (key, value)
            for key, value in _mapping(metadata.get("labels")).items()
            if isinstance(key, str) and isinstance(value, str)
        )
        yield NodeSource(
            "v1", "Node", str(name), _node_platforms(resource), known, path, unknown, labels
        )
    elif kind == "NodePool" and api_version in NODEPOOL_API_VERSIONS:
        template_spec = _mapping(
            _mapping(_mapping(resource.get("spec")).get("template")).get("spec")
        )
        known, unknown = _by_effect(_taints(template_spec.get("taints")))
        yield NodeSource(
            str(api_version),
            "NodePool",
            str(name),
            nodepool_platforms(_list(template_spec.get("requirements"))),
            known,
            path,
            unknown,
        )


def _node_platforms(node: Mapping[str, object]) -> tuple[Platform, ...]:
    labels = _mapping(_mapping(node.get("metadata")).get("labels"))
    info = _mapping(_mapping(node.get("status")).get("nodeInfo"))
    os_name = _text(labels.get(OS_LABEL)) or _text(labels.get(_BETA[OS_LABEL]))
    arch = _text(labels.get(ARCH_LABEL)) or _text(labels.get(_BETA[ARCH_LABEL]))
    os_name = os_name or _text(info.get("operatingSystem"))
    arch = arch or _text(info.get("architecture"))
    if not os_name or not arch:
        return ()
    build = _text(labels.get(WINDOWS_BUILD_LABEL)) if os_name == "windows" else ""
    try:
        return (Platform.create(os_name, arch, os_version=build),)
    except InvalidPlatformError:
        return ()


def _node_taints(node: Mapping[str, object]) -> Iterator[Taint]:
    for taint in _taints(_mapping(node.get("spec")).get("taints")):
        if not taint.key.startswith(_TRANSIENT_TAINT_PREFIXES):
            yield taint


def _by_effect(taints: Iterable[Taint]) -> tuple[tuple[Taint, ...], tuple[Taint, ...]]:
    """(taints with an effect Kubernetes has, the others)."""
    listed = list(taints)
    return (
        tuple(taint for taint in listed if taint.effect in TAINT_EFFECTS),
        tuple(taint for taint in listed if taint.effect not in TAINT_EFFECTS),
    )


def _taints(value: object) -> Iterator[Taint]:
    for item in _list(value):
        taint = _mapping(item)
        key = _text(taint.get("key"))
        if key:
            yield Taint(key, _text(taint.get("value")), _text(taint.get("effect")) or "NoSchedule")


def nodepool_platforms(requirements: Sequence[object]) -> tuple[Platform, ...]:
    """The platforms a NodePool's requirements allow, architectures in Karpenter's order."""
    architectures = _allowed(requirements, ARCH_LABEL, KARPENTER_ARCHITECTURES, None)
    systems = _allowed(requirements, OS_LABEL, KARPENTER_OPERATING_SYSTEMS, (DEFAULT_NODEPOOL_OS,))
    platforms: list[Platform] = []
    for os_name in systems:
        for arch in architectures:
            try:
                platforms.append(Platform.create(os_name, arch))
            except InvalidPlatformError:
                continue
    return tuple(dict.fromkeys(platforms))


def _allowed(
    requirements: Sequence[object],
    label: str,
    universe: Sequence[str],
    unconstrained: Sequence[str] | None,
) -> list[str]:
    """The values of ``label`` every requirement on it allows (``In`` may name values outside
    ``universe``: a NodePool for s390x nodes of another provider)."""
    on_label = [
        _mapping(item)
        for item in requirements
        if _mapping(item).get("key") in (label, _BETA[label])
    ]
    if not on_label:
        return list(unconstrained if unconstrained is not None else universe)
    named = [str(v) for item in on_label for v in _list(item.get("values"))]
    allowed = list(dict.fromkeys([*universe, *named]))
    for requirement in on_label:
        operator = requirement.get("operator")
        values = {str(v) for v in _list(requirement.get("values"))}
        if operator == "In":
            allowed = [value for value in allowed if value in values]
        elif operator == "NotIn":
            allowed = [value for value in allowed if value not in values]
        elif operator == "DoesNotExist":
            allowed = []  # every node has the label: such a NodePool launches nothing
    return allowed


def cluster_shape(sources: Sequence[NodeSource]) -> ClusterShape:
    """The platforms the sources offer and the tolerations each needs (see the module doc)."""
    by_platform: dict[Platform, list[tuple[Taint, ...]]] = {}
    for source in sources:
        scheduling_taints = tuple(t for t in source.taints if t.effect != "PreferNoSchedule")
        for platform in source.platforms:
            by_platform.setdefault(platform, []).append(tuple(sorted(set(scheduling_taints))))
    tolerations: dict[Platform, tuple[Toleration, ...]] = {}
    for platform, taint_sets in by_platform.items():
        if any(not taints for taints in taint_sets):
            continue
        least = [
            taints
            for taints in taint_sets
            if not any(set(other) < set(taints) for other in taint_sets)
        ]
        needed = sorted({taint for taints in least for taint in taints})
        tolerations[platform] = tuple(taint.toleration() for taint in needed)
    untainted = [p for p in by_platform if p not in tolerations]
    ordered = sorted(untainted) + sorted(p for p in by_platform if p in tolerations)
    return ClusterShape(tuple(ordered), {p: tolerations[p] for p in ordered if p in tolerations})


def policy_document(
    shape: ClusterShape,
    name: str = "cluster",
    node_labels: Sequence[Mapping[str, object]] = (),
) -> dict[str, object]:
    """A MultiArchPolicy object for the shape. ``tolerations`` is always written: left out,
    the built-in default (arm64 nodes tainted ``kubernetes.io/arch=arm64``) would apply.
    ``node_labels``: ``spec.nodeLabels`` entries (:func:`splitting_labels`), when any."""
    spec: dict[str, object] = {
        "platforms": [str(p) for p in shape.platforms],
        "tolerations": {
            str(platform): [toleration.to_manifest() for toleration in items]
            for platform, items in shape.tolerations.items()
        },
    }
    if node_labels:
        spec["nodeLabels"] = [dict(entry) for entry in node_labels]
    return {"apiVersion": API_VERSION, "kind": KIND, "metadata": {"name": name}, "spec": spec}


#: Labels that identify a node or place it, whatever its CPU: never written as nodeLabels even
#: where a small cluster happens to split on them.
_NOT_SPLITTING = (
    ARCH_LABEL,
    OS_LABEL,
    *_BETA.values(),
    WINDOWS_BUILD_LABEL,
    "kubernetes.io/hostname",
)
_NOT_SPLITTING_PREFIXES = ("topology.kubernetes.io/", "failure-domain.beta.kubernetes.io/")


def splitting_labels(sources: Sequence[NodeSource]) -> list[dict[str, object]]:
    """``spec.nodeLabels`` entries for the Nodes' labels that split the cluster by
    architecture: a label with at least two values across nodes of at least two
    architectures, each value held only by nodes of one architecture, and some value held by
    more than one node (a label whose every value is one node's own is an identity, like the
    hostname); zone and hostname labels never. Values the built-in table already says the same
    of are left out. Each entry: the values held by nodes of the same platforms."""
    by_key: dict[str, dict[str, list[Platform]]] = {}
    for source in sources:
        if source.kind != "Node" or len(source.platforms) != 1:
            continue
        for key, value in source.labels:
            if key in _NOT_SPLITTING or key.startswith(_NOT_SPLITTING_PREFIXES) or not value:
                continue
            by_key.setdefault(key, {}).setdefault(value, []).append(source.platforms[0])
    entries: list[dict[str, object]] = []
    for key in sorted(by_key):
        holders = by_key[key]
        architectures = {value: {p.architecture for p in found} for value, found in holders.items()}
        if (
            len(holders) < 2
            or any(len(archs) != 1 for archs in architectures.values())
            or len({arch for archs in architectures.values() for arch in archs}) < 2
            or all(len(found) == 1 for found in holders.values())
        ):
            continue
        grouped: dict[tuple[Platform, ...], list[str]] = {}
        for value in sorted(holders):
            (architecture,) = architectures[value]
            known = rule_for(key, value, ())
            if known is not None and known.architectures == (architecture,):
                continue
            platforms = tuple(sorted(set(holders[value])))
            grouped.setdefault(platforms, []).append(glob.escape(value))
        entries.extend(
            {"key": key, "values": values, "platforms": [str(p) for p in platforms]}
            for platforms, values in grouped.items()
        )
    return entries


def drift(sources: Sequence[NodeSource], policy: SchedulingPolicy) -> list[tuple[NodeSource, str]]:
    """What NodePools declare that the policy lacks: a platform not in ``spec.platforms``, or a
    taint that a pod reaching the platform must tolerate and the policy adds no toleration for.
    Each problem comes with the NodePool that shows it."""
    pools = [source for source in sources if source.kind == "NodePool"]
    if not pools:
        return []
    shape = cluster_shape(pools)
    problems: list[tuple[NodeSource, str]] = []
    for pool in pools:
        missing = [p for p in pool.platforms if p not in policy.platforms]
        if missing:
            problems.append(
                (
                    pool,
                    f"offers {', '.join(str(p) for p in missing)}, which spec.platforms of the "
                    f"policy ({', '.join(str(p) for p in policy.platforms)}) lacks",
                )
            )
        for platform in pool.platforms:
            if platform not in policy.platforms:
                continue
            wanted = shape.tolerations.get(platform, ())
            have = policy.tolerations.get(platform, ())
            lacking = [
                toleration
                for toleration in wanted
                if _tolerated_by(toleration, pool.taints)
                and not any(toleration_covers(t.to_manifest(), toleration) for t in have)
            ]
            if lacking:
                taints = ", ".join(_toleration_text(t) for t in lacking)
                problems.append(
                    (
                        pool,
                        f"taints its {platform} nodes {taints}, which spec.tolerations."
                        f"{platform} of the policy does not tolerate",
                    )
                )
    return problems


def _tolerated_by(toleration: Toleration, taints: Sequence[Taint]) -> bool:
    return any(taint.toleration() == toleration for taint in taints)


def _toleration_text(toleration: Toleration) -> str:
    value = f"={toleration.value}" if toleration.operator != "Exists" else ""
    return f"{toleration.key}{value}:{toleration.effect}"


def _mapping(value: object) -> Mapping[str, object]:
    return value if isinstance(value, Mapping) else {}


def _list(value: object) -> list[object]:
    return value if isinstance(value, list) else []


def _text(value: object) -> str:
    return value.strip() if isinstance(value, str) else ""
