"""Pods that operators make from custom resources: where their scheduling fields are, and which
images those pods run: the model the catalogue is written in (its data is
:mod:`kmultiarch.core.operators.catalogue`, each entry citing the operator's code; which kinds it
holds,
:mod:`kmultiarch.core.operators.catalogued`) and the functions that read it; ``spec.podSpecs`` in a
policy says the same for any kind.

A custom resource's pods are placed by an object the operator copies ``affinity``,
``tolerations`` and ``nodeSelector`` from (a :class:`Placement`): a full pod spec (ECK's
``podTemplate.spec``, KubeRay's ``template.spec``), or an object of its own shape (a Prometheus
``spec``, Strimzi's ``template.pod``, Spark's ``driver``; Rook's ``placement.all``, whose
``nodeAffinity`` is bare). Its images are where the resource names them (``spec.image``; a pod
spec's containers), or the operator's choice (by version) when it names none.

Pointers are JSON pointers whose ``*`` matches every list item or map value (``*[name=x]``:
the list items whose ``name`` is ``x``, a container a controller finds by name); a ``*`` in an
image pointer is independent of one in its placement's path, except where both have it after
the same tokens: there it is the placement's own item (``/spec/pools/*`` with
``/spec/pools/*/image``: each pool with its own image; ``/spec/keyspaces/*/images/vttablet``
for ``/spec/keyspaces/*/partitionings/*/...``: each keyspace's). Pure: plain data in and out.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from kmultiarch.core.patch import pointer_tokens

if TYPE_CHECKING:
    from kmultiarch.core.operators.imagecatalogs import CatalogImage


__all__ = [
    "AntiAffinityByKey",
    "Condition",
    "MAX_POINTER_TOKENS",
    "IMAGE_PARAMETERS",
    "IMAGE_SELECTIONS",
    "ITEMS_IN_USE",
    "ImageSource",
    "Inheritance",
    "MERGES",
    "Merge",
    "OperatorKind",
    "Placement",
    "Pointer",
    "SHAPES",
    "Shape",
    "api_group",
    "catalogue_by_kind",
    "blocked_by_position",
    "by_position",
    "effective_fields",
    "expand",
    "holds",
    "image_lookup",
    "image_matches",
    "placement_problems",
    "resolved_default",
    "set_nowhere",
    "type_name",
    "walk",
    "withheld_fields",
]


#: JSON pointer tokens; ``*`` matches every list item or map value.
Pointer = tuple[str, ...]

#: A concrete path (list indices as ints).
ConcretePath = tuple[str | int, ...]

WILDCARD = "*"

#: The most tokens a placement's or an image's pointer may have: deeper objects are not where
#: operators keep scheduling fields, and a placement created that deep would be a document no
#: tool reads back (a policy giving more is refused).
MAX_POINTER_TOKENS = 64


def api_group(api_version: str) -> str:
    """The API group of an ``apiVersion``: ``apps`` of ``apps/v1``, ``""`` (core) of ``v1``;
    kinds are known by group and kind, whatever their version."""
    return api_version.rpartition("/")[0]


@dataclass(frozen=True)
class ImageSource:
    """Where a placement's pods take images from. ``alternatives``: pointers tried in order, the
    first that matches wins; ``required``: one of them must match, else the image is the
    operator's choice (``spec.image``, else the default for ``spec.version``). An optional
    source (extra sidecars) adds every match and may match nothing."""

    alternatives: tuple[Pointer, ...]
    required: bool = True
    #: The pointers are read in another resource of the stream: (API group, kind, label) names
    #: it (same namespace; the label's value is its name), as a Strimzi KafkaNodePool's
    #: ``strimzi.io/cluster`` label names its Kafka.
    related: tuple[str, str, str] | None = None
    #: Image templates tried, in order, when no pointer matches: the operator's own computation
    #: (``quay.io/prometheus/prometheus:{/spec/version|v}``); the first whose parts the
    #: resource gives wins (see :func:`resolved_default`).
    templates: tuple[str, ...] = ()
    #: The source counts only for a resource meeting every condition (a Prometheus's Thanos
    #: sidecar, when ``spec.thanos`` is set) and none of ``unless`` (Percona's version service,
    #: unless ``spec.upgradeOptions.apply`` is disabled or never).
    when: tuple[Condition, ...] = ()
    unless: tuple[Condition, ...] = ()
    #: What an image only the operator knows is (no pointer, no template: KubeVirt's
    #: virt-launcher, an Argo Events Sensor's): its pods are the operator's choice until a
    #: policy declares the image (``defaultImages``).
    operator_only: str = ""
    #: The images are what the controller chooses among other resources of the stream, one of
    #: :data:`IMAGE_SELECTIONS` (``kserve-runtime``: the ServingRuntime a KServe predictor
    #: runs, :mod:`kmultiarch.core.operators.kserve`; ``kserve-worker``: its workers';
    #: ``kserve-storage``: the storage initializer its model storage gets); the pointers are then
    #: unused, and the runtime's scheduling fields are merged under the placement's.
    selected_by: str = ""
    #: The operator writes its own images over every image the resource names when this
    #: source counts (Percona's version service): none of the placement's images is then
    #: known, and the pods are decided on none of them (docs/scheduling.md, partial knowledge).
    replaces_named: bool = False
    #: When no pointer matches, the image the resource picks from a catalog of the stream it
    #: names (a CloudNativePG Cluster's ``spec.imageCatalogRef``), before the templates.
    catalog: CatalogImage | None = None

    def related_kinds(self) -> tuple[tuple[str, str], ...]:
        """The (API group, kind) of the other resources of the stream this source reads."""
        kinds = [self.related[:2]] if self.related is not None else []
        return (
            *kinds,
            *(self.catalog.group_kinds if self.catalog is not None else ()),
            *IMAGE_SELECTIONS.get(self.selected_by, ()),
        )

    def counts_for(self, resource: Mapping[str, object]) -> bool:
        """Whether the pods run this source's images for ``resource``."""
        return all(holds(resource, c) for c in self.when) and not any(
            holds(resource, c) for c in self.unless
        )


#: A condition on a resource: the value at the pointer is one of the values (YAML booleans as
#: ``true``/``false``); no values: the value is set (present and not null, as Go's ``!= nil``).
Condition = tuple[Pointer, tuple[str, ...]]


def holds(resource: Mapping[str, object], condition: Condition) -> bool:
    """Whether ``resource`` meets ``condition``."""
    pointer, values = condition
    found = [value for _, value in expand(resource, pointer)]
    if not values:
        return any(value is not None for value in found)  # Go's "!= nil"
    return any(
        (str(value).lower() if isinstance(value, bool) else str(value)) in values
        for value in found
        if isinstance(value, str | int | float)
    )


#: How a placement's own scheduling field combines with the same field of the object it is
#: merged over (:class:`Inheritance`), as the operator's code does it:
#: ``replace``: the placement's own, when set (not null), else the shared one's (Rook's
#: ``Placement.Merge`` for nodeAffinity, Tekton's ``MergePodTemplateWithDefault``);
#: ``merge-by-key``: a map merged key by key, the placement's keys winning (Spark's nodeSelector);
#: ``append``: the shared list, then the placement's (Rook's tolerations);
#: ``by-position``: lists merged item by item, by index (Flink's pod templates).
Merge = Literal["replace", "merge-by-key", "append", "by-position"]

MERGES: tuple[Merge, ...] = ("replace", "merge-by-key", "append", "by-position")


@dataclass(frozen=True)
class Inheritance:
    """The less specific object the operator merges a placement over (Rook's
    ``placement.all`` under ``placement.mon``; a PipelineRun's pod template under a task's), and
    per scheduling field, how. The pods' decision is taken on the merged view; a field is
    written into the placement only where the placement's own value is what the pods get
    (``replace``, and the placement sets it): elsewhere the shared object's own placement
    writes it, so nothing is written where the operator does not read it."""

    path: Pointer
    #: (field, merge) per scheduling field of the placement's shape (``nodeAffinity`` for a
    #: bare node affinity); a field not named is the placement's own alone.
    fields: tuple[tuple[str, Merge], ...]
    #: (field, the shared object's name for it) where the shared object names the field
    #: otherwise: Tigera's Installation ``spec.controlPlaneTolerations`` under a component's
    #: ``tolerations``. Such a field is never written in the shared object (no placement holds
    #: it there): only into the placement, where its own value is what the pods get.
    names: tuple[tuple[str, str], ...] = ()

    def merge_of(self, field: str) -> Merge | None:
        return next((merge for name, merge in self.fields if name == field), None)

    def shared_name(self, field: str) -> str:
        """What the shared object calls ``field``."""
        return next((shared for name, shared in self.names if name == field), field)


#: Where a placement's object keeps the pods' affinity: ``affinity`` (a core Affinity, as a
#: PodSpec), ``node-affinity`` (a bare ``nodeAffinity``: Rook's placements), or
#: ``advanced-affinity`` (``affinity.advanced`` holds the pods' whole Affinity, beside the
#: operator's own keys: Percona's PodAffinity, ``{antiAffinityTopologyKey, advanced}``), or
#: ``pod-template-affinity`` (the object's own ``tolerations`` and ``nodeSelector``, the pods'
#: Affinity in its ``podTemplateSpec.spec``: cass-operator's CassandraDatacenter).
Shape = Literal["affinity", "node-affinity", "advanced-affinity", "pod-template-affinity"]

SHAPES: tuple[Shape, ...] = (
    "affinity",
    "node-affinity",
    "advanced-affinity",
    "pod-template-affinity",
)


@dataclass(frozen=True)
class AntiAffinityByKey:
    """The required pod anti-affinity an operator gives a placement's pods, across the topology
    key a field of the resource names, when the placement has no affinity of its own (Percona's
    ``affinity.antiAffinityTopologyKey``: PodAffinity in pkg/pxc/statefulset.go,
    pkg/psmdb/statefulset.go): one term selecting the pods' own labels. Pointers and label
    templates (``{/metadata/name}``) are read in the resource, a ``*`` bound to the placement
    instance's item where the placement's path has its ``*`` (``/spec/replsets/*/name`` for
    ``/spec/replsets/*/arbiter``: that replset's name)."""

    #: The field naming the topology key.
    key: Pointer
    #: The key when the field is unset, or not one of ``valid`` (the operator's defaulting).
    default: str
    #: The keys the operator accepts; empty: any.
    valid: tuple[str, ...] = ()
    #: The value that turns the anti-affinity off.
    off: str = "none"
    #: The labels the term selects (label, value or template), as the operator's code gives
    #: them.
    labels: tuple[tuple[str, str], ...] = ()
    #: A field of labels the user gives the pods, joined to ``labels`` (None: not joined).
    own_labels: Pointer | None = None
    #: Whether those labels replace the operator's of the same key (else the operator's win).
    own_labels_win: bool = False


@dataclass(frozen=True)
class Placement:
    """An object of the resource that the pods it makes are placed by.

    ``path``: the object holding ``affinity``/``tolerations``/``nodeSelector`` (``*`` for each
    item); ``creates``: how many of its last tokens kmultiarch may create when they are missing
    (Strimzi's ``template.pod`` under an existing ``spec.kafka``); ``pod_spec``: the object is a
    PodSpec (its containers' images are the pods' images too); ``shape``: ``node-affinity`` for
    an object with a bare ``nodeAffinity`` (Rook) instead of ``affinity.nodeAffinity``,
    ``advanced-affinity`` for one whose ``affinity.advanced`` is the pods' Affinity (Percona)."""

    path: Pointer
    images: tuple[ImageSource, ...] = ()
    creates: int = 0
    pod_spec: bool = False
    shape: Shape = "affinity"
    #: The object the operator merges this one over, and how (None: this one alone).
    inherits: Inheritance | None = None
    #: The API versions (``v1beta1``) whose resources have this placement; empty: every one.
    #: A field that does not exist in a version is never written there (the API server
    #: would prune it).
    versions: tuple[str, ...] = ()
    #: Where the entry's rule comes from: the operator's repository, file and function.
    cites: str = ""
    #: The placement exists only for a resource meeting every condition of ``when`` and none
    #: of ``unless`` (an OpenTelemetryCollector in ``mode: sidecar`` makes no pod).
    when: tuple[Condition, ...] = ()
    unless: tuple[Condition, ...] = ()
    #: What the operator puts in the pod's ``affinity`` when the placement has none, and drops
    #: once it has one (ECK's DefaultAffinity, set only when the template's is nil): written
    #: beside the constraint when kmultiarch creates ``affinity``, so the constraint does not
    #: cost the user that default. String values may be templates (``{/metadata/name}``; a
    #: ``*`` shared with the placement's path is its item). A ``nodeAffinity`` there is joined
    #: with the constraint's (both hold).
    default_affinity: Mapping[str, object] | None = None
    #: The operator's anti-affinity by a topology key the resource names, dropped, as
    #: ``default_affinity``, once the placement has an affinity of its own (written beside the
    #: constraint when kmultiarch creates it).
    anti_affinity_by_key: AntiAffinityByKey | None = None
    #: When the placement's last ``creates`` tokens are missing, the operator places the pods
    #: by another resource's object, written by that one's placement (a Strimzi pool without a
    #: pod template takes its Kafka's): the pods are judged here, nothing is created.
    judged_only_when_missing: bool = False
    #: The pod annotation by which, for a resource ``unless`` excludes, the operator injects
    #: the placement's containers into other pods instead of making its own
    #: (``sidecar.opentelemetry.io/inject``: an OpenTelemetryCollector in ``mode: sidecar``):
    #: a warning gives the ``spec.injections`` entry that declares it (:func:`injection_hints`).
    injected_by: str = ""
    #: Node labels the operator puts in the pods' ``nodeSelector`` from a field of the
    #: resource, under the placement's own ``nodeSelector`` (whose keys win): (label, pointer),
    #: the value lowercased (KubeVirt's ``spec.architecture`` as ``kubernetes.io/arch``). The
    #: pods are decided with it; it is never written.
    node_selector_from: tuple[tuple[str, Pointer], ...] = ()
    #: The operator gives the pods an affinity of its own, when the placement has none, while
    #: any of these conditions holds, and kmultiarch cannot write it beside the constraint (a
    #: Vitess component's node affinity to its cell's zone, read in another object;
    #: ``default_affinity`` is one it can): an affinity the placement lacks is then not created
    #: (it would replace the operator's); one it has is written as usual, and the pods are
    #: judged all the same (a conflict is found, tolerations are written).
    default_affinity_when: tuple[Condition, ...] = ()
    #: The operator adds required node selector terms of its own to the pods' node affinity
    #: while any of these conditions holds (Altinity's pod template ``zone``: a term appended,
    #: so ORed with the placement's): no arch term written here would hold for them, so no
    #: affinity is written (tolerations are), and pods that need one are warned about. A ``*``
    #: a condition shares with the placement's path is the item being placed.
    added_terms_when: tuple[Condition, ...] = ()
    #: False when the object has no field the operator copies into the pods' node affinity (a
    #: LokiStack component: tolerations and nodeSelector only, the affinity the operator's
    #: own): only tolerations are written, and pods whose images need an affinity are warned
    #: about (``unwritable-constraint``).
    writes_affinity: bool = True
    #: The placement of the pod that builds the image these pods run (a Strimzi KafkaConnect's
    #: build pod): made on that pod's node, for its architecture alone, it is in no registry
    #: beforehand, so the pods are judged on no image and nothing is written; unless both
    #: placements select one architecture alike (nodeSelector ``kubernetes.io/arch``), an
    #: ``unwritable-constraint`` warning says to.
    image_built_by: Pointer | None = None
    #: How the operator chooses which items of the path (its one ``*``) make pods, one of
    #: :data:`ITEMS_IN_USE` (``clickhouse``: the pod templates an Altinity installation's
    #: hosts run, :mod:`kmultiarch.core.operators.clickhousehosts`); empty: every item.
    items_in_use: str = ""

    def exists_in(self, resource: Mapping[str, object]) -> bool:
        """Whether the operator makes pods from this placement for ``resource``. An ``unless``
        condition on the item (a ``*`` shared with the path) excludes that item alone
        (:meth:`exists_at`), not the others."""
        return all(holds(resource, c) for c in self.when) and not any(
            holds(resource, c) for c in self.unless if not self._per_item(c[0])
        )

    def _per_item(self, pointer: Pointer) -> bool:
        return any(
            token == WILDCARD and self.path[: index + 1] == pointer[: index + 1]
            for index, token in enumerate(pointer)
        )

    def exists_at(self, resource: Mapping[str, object], path: ConcretePath) -> bool:
        """Whether the operator makes pods from the placement's item at ``path``: a ``*`` a
        condition shares with the placement's path (after the same tokens) is that item
        (``/spec/replsets/*/arbiter/enabled`` for ``/spec/replsets/*/arbiter``: each replset's
        own arbiter)."""

        def bound(condition: Condition) -> Condition:
            return _bound(condition[0], self.path, path), condition[1]

        return all(holds(resource, bound(c)) for c in self.when) and not any(
            holds(resource, bound(c)) for c in self.unless
        )

    def applies_to(self, api_version: str) -> bool:
        """Whether resources of ``api_version`` (``tekton.dev/v1``) have this placement."""
        return not self.versions or api_version.rpartition("/")[2] in self.versions


@dataclass(frozen=True)
class OperatorKind:
    """A custom resource kind whose operator makes pods, and how they are placed."""

    group: str
    kind: str
    placements: tuple[Placement, ...]
    #: Images the operator adds to every pod it makes (a config reloader): judged with the
    #: pods' own. Built-in entries name none (they are operator flags); a policy may.
    operator_images: tuple[str, ...] = ()
    #: What the operator runs when the resource names no image: references, or templates whose
    #: ``{/json/pointer}`` parts are read in the resource (``...:{/spec/version}``); one whose
    #: parts the resource lacks is not used.
    default_images: tuple[str, ...] = ()
    #: The CRD fields the entry relies on (for docs/operators.md and review).
    cites: str = ""
    #: What the operator adds to the pods that the resource does not show.
    adds: str = ""
    #: How the controller fills in variables of the images before it runs them, one of
    #: :data:`IMAGE_PARAMETERS` (``tekton``: a run's ``$(params.NAME)``); empty: as written.
    image_parameters: str = ""


#: The ways an operator chooses the items of a placement that make pods
#: (:attr:`Placement.items_in_use`): an Altinity ClickHouseInstallation's pod templates (with
#: the clickhouse-log container), a ClickHouseKeeperInstallation's.
ITEMS_IN_USE: tuple[str, ...] = ("clickhouse", "clickhouse-keeper")

#: The ways a controller substitutes variables in its images (:attr:`OperatorKind.
#: image_parameters`; in a policy, a podSpecs entry's ``imageParameters``).
IMAGE_PARAMETERS: tuple[str, ...] = ("tekton",)

_KSERVE_RUNTIMES = (
    ("serving.kserve.io", "ServingRuntime"),
    ("serving.kserve.io", "ClusterServingRuntime"),
)

#: The selections of images among other resources of the stream a controller makes
#: (:attr:`ImageSource.selected_by`), and the (API group, kind) of the resources each reads.
IMAGE_SELECTIONS: Mapping[str, tuple[tuple[str, str], ...]] = {
    "kserve-runtime": _KSERVE_RUNTIMES,
    "kserve-worker": _KSERVE_RUNTIMES,
    "kserve-storage": (),
}


def _p(text: str) -> Pointer:
    """A JSON pointer's tokens, ``~1`` and ``~0`` unescaped as everywhere else (RFC 6901)."""
    return pointer_tokens(text)


def placement_problems(placement: Placement) -> list[tuple[str, str]]:
    """What makes a placement unusable, as (key, message): the same checks for a built-in
    entry and a policy's (``spec.podSpecs``)."""
    problems: list[tuple[str, str]] = []
    if placement.shape not in SHAPES:
        problems.append(("shape", f"expected one of {', '.join(SHAPES)}"))
    pointers = [("path", placement.path)]
    keyed = placement.anti_affinity_by_key
    if keyed is not None:
        pointers.append(("antiAffinityByKey", keyed.key))
        if keyed.own_labels is not None:
            pointers.append(("antiAffinityByKey", keyed.own_labels))
    pointers.extend(
        ("images", pointer) for source in placement.images for pointer in source.alternatives
    )
    for key, pointer in pointers:
        if len(pointer) > MAX_POINTER_TOKENS:
            problems.append(
                (key, f"a pointer of {len(pointer)} tokens; at most {MAX_POINTER_TOKENS}")
            )
    if placement.inherits is not None:
        if WILDCARD in placement.inherits.path:
            problems.append(("inherits", "expected the pointer of one object, without `*`"))
        if len(placement.inherits.path) > MAX_POINTER_TOKENS:
            problems.append(("inherits", f"a pointer of more than {MAX_POINTER_TOKENS} tokens"))
        for name, merge in placement.inherits.fields:
            if merge not in MERGES:
                problems.append(("inherits", f"{name}: expected one of {', '.join(MERGES)}"))
        merged = {name for name, _ in placement.inherits.fields}
        for name, shared in placement.inherits.names:
            if name not in merged or not shared:
                problems.append(
                    ("inherits", f"names: {name}: expected a field of fields and its name")
                )
    if not 0 <= placement.creates <= len(placement.path):
        problems.append(
            (
                "creates",
                "expected how many of the path's last tokens kmultiarch may create "
                f"(0 to {len(placement.path)})",
            )
        )
    elif (
        placement.creates and WILDCARD in placement.path[len(placement.path) - placement.creates :]
    ):
        problems.append(
            (
                "creates",
                "a `*` token cannot be created (it stands for the items that exist): count "
                "only the tokens after the last `*`",
            )
        )
    return problems


def catalogue_by_kind(entries: Sequence[OperatorKind]) -> dict[tuple[str, str], OperatorKind]:
    """(API group, kind) -> its entry; a later entry of the same kind extends the earlier (a
    policy's podSpecs entry for a built-in kind adds placements, images, defaults)."""
    table: dict[tuple[str, str], OperatorKind] = {}
    for entry in entries:
        key = (entry.group, entry.kind)
        known = table.get(key)
        if known is None:
            table[key] = entry
            continue
        table[key] = OperatorKind(
            entry.group,
            entry.kind,
            (*known.placements, *(p for p in entry.placements if p not in known.placements)),
            (*known.operator_images, *entry.operator_images),
            (*known.default_images, *entry.default_images),
            known.cites,
            known.adds,
            known.image_parameters or entry.image_parameters,
        )
    return table


_TEMPLATE_PART = re.compile(r"\{(/[^{}]*)\}")


def resolved_default(resource: Mapping[str, object], template: str) -> str | None:
    """A default image of an operator's kind for ``resource``: its ``{/pointer}`` parts read in
    the resource (``{/spec/version}``); None when one is missing or not a plain word (a
    version, a tag, a repository). ``{/pointer|v}`` gives the value with one leading ``v``
    (the Prometheus Operator's ``"v" + version``); ``{/pointer|>=8.12.0,<8.16.0}`` gives it only
    when it is a version in that range (ECK's images by version); ``{/pointer|tagged}`` only
    when it is an image reference carrying a tag or a digest, ``|untagged`` only when it carries
    neither (the Prometheus Operator's BuildImagePath); ``|reference`` only when it holds one of
    ``:/@``, ``|word`` only when it holds none (the Grafana operator's getGrafanaImage); ``|tag``
    a tag, with the digest it may carry (``3.12.0@sha256:...``)."""
    missing = False

    def part(match: re.Match[str]) -> str:
        nonlocal missing
        pointer, _, template_filter = match.group(1).partition("|")
        found = [value for _, value in expand(resource, pointer_tokens(pointer))]
        if (
            len(found) != 1
            or not isinstance(found[0], str | int | float)
            or isinstance(found[0], bool)
        ):
            missing = True
            return ""
        text = str(found[0]).strip()
        word = _WORD
        if template_filter == "v":
            # "v" + semver.ParseTolerant(version).String(): one leading v, whatever was written
            text = "v" + text.removeprefix("v").removeprefix("V")
        elif template_filter in _REFERENCE_FILTERS:
            word = _REFERENCE  # a whole image reference may name a digest
            if not _REFERENCE_FILTERS[template_filter](text):
                missing = True  # another template says the image
        elif template_filter and not _version_in(text, template_filter):
            missing = True  # a version outside the range: another template says the image
        if not word.fullmatch(text):
            missing = True
        return text

    image = _TEMPLATE_PART.sub(part, template)
    return None if missing else image


_COMPARISON = re.compile(r"(>=|<=|>|<|=)\s*v?(\d+(?:\.\d+)*)")


def _version_key(text: str) -> tuple[int, ...] | None:
    """A version's numbers (``8.15.0`` of ``v8.15.0-SNAPSHOT``), three at least."""
    core = text.strip().removeprefix("v").split("-", 1)[0].split("+", 1)[0]
    parts = core.split(".")
    if not parts or not all(part.isdigit() for part in parts):
        return None
    numbers = tuple(int(part) for part in parts)
    return numbers + (0,) * (3 - len(numbers))


def _version_in(text: str, ranges: str) -> bool:
    """Whether the version ``text`` meets every comparison of ``ranges`` (``>=8.12.0,<8.16.0``),
    as the operators compare versions (ECK's version.Version LT): a value that is not a version
    meets none."""
    version = _version_key(text)
    if version is None:
        return False
    for part in ranges.split(","):
        match = _COMPARISON.fullmatch(part.strip())
        bound = _version_key(match.group(2)) if match else None
        if match is None or bound is None:
            return False
        operator = match.group(1)
        if not {
            ">=": version >= bound,
            "<=": version <= bound,
            ">": version > bound,
            "<": version < bound,
            "=": version == bound,
        }[operator]:
            return False
    return True


#: What a template part may be: a version or tag, or a repository (a Prometheus's baseImage).
_WORD = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_./:-]{0,254}")

#: What a part read as a whole image reference may be (a digest's ``@`` too).
_REFERENCE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_./:@-]{0,254}")


def _tagged(text: str) -> bool:
    """Whether an image reference carries a tag or a digest, as distribution/reference parses
    it (a ``:`` in the last path component; one in the first is a registry's port), as
    prometheus-operator pkg/operator/image.go BuildImagePath asks (ref.Tagged, ref.Digested)."""
    return "@" in text or ":" in text.rpartition("/")[2]


#: The template filters that take a part as a whole image reference, and when it is one.
_REFERENCE_FILTERS: Mapping[str, Callable[[str], bool]] = {
    "tagged": _tagged,
    "untagged": lambda text: not _tagged(text),
    # grafana-operator controllers/reconcilers/grafana/deployment_reconciler.go
    # getGrafanaImage: strings.ContainsAny(spec.version, ":/@") -> the version is the image.
    "reference": lambda text: any(mark in text for mark in ":/@"),
    "word": lambda text: not any(mark in text for mark in ":/@"),
    # A tag, with the digest it may carry (a ScyllaCluster's agentVersion 3.12.0@sha256:...,
    # scylla-operator migrate.go: agentRepository + ":" + agentVersion).
    "tag": lambda text: not any(mark in text.partition("@")[0] for mark in ":/"),
}


def expand(value: object, pointer: Pointer) -> Iterator[tuple[ConcretePath, object]]:
    """Every (concrete path, value) ``pointer`` matches in ``value``; ``*`` matches every list
    item or map value. A token that does not exist matches nothing."""
    return iter(walk(value, pointer)[0])


def walk(
    value: object, pointer: Pointer
) -> tuple[list[tuple[ConcretePath, object]], list[tuple[ConcretePath, object]]]:
    """What ``pointer`` matches in ``value`` (as :func:`expand`), and where it met a value of
    the wrong type on the way (a string where an object or a list must be): (path, value) of
    each, for a warning. Absent and null values are neither. A loop, not recursion: a pointer's
    length bounds nothing but the loop."""
    matches: list[tuple[ConcretePath, object]] = [((), value)]
    mismatches: list[tuple[ConcretePath, object]] = []
    for token in pointer:
        following: list[tuple[ConcretePath, object]] = []
        selected = _selector(token)
        for path, current in matches:
            if selected is not None and isinstance(current, list):
                key, wanted = selected  # the items whose key is the value (a named container)
                following.extend(
                    ((*path, i), item)
                    for i, item in enumerate(current)
                    if isinstance(item, Mapping) and item.get(key) == wanted
                )
            elif token == WILDCARD:
                if isinstance(current, list):
                    following.extend(((*path, i), item) for i, item in enumerate(current))
                elif isinstance(current, Mapping):
                    following.extend(((*path, k), item) for k, item in current.items())
                elif current is not None:
                    mismatches.append((path, current))
            elif isinstance(current, Mapping):
                if token in current:
                    following.append(((*path, token), current[token]))
            elif isinstance(current, list):
                if token.isdigit() and int(token) < len(current):
                    following.append(((*path, int(token)), current[int(token)]))
                elif not token.isdigit():
                    mismatches.append((path, current))
            elif current is not None:
                mismatches.append((path, current))
        matches = following
    return matches, mismatches


def _selector(token: str) -> tuple[str, str] | None:
    """``*[name=grafana]``: (key, value), a pointer token matching the list items whose key
    holds that value (the container a controller finds by name); None for any other token."""
    if not (token.startswith("*[") and token.endswith("]")) or "=" not in token:
        return None
    key, _, value = token[2:-1].partition("=")
    return key, value


def type_name(value: object) -> str:
    """How a message names a YAML value's type: ``a string``, ``a list``, ``a number``..."""
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, Mapping):
        return "an object"
    return f"a {type(value).__name__}"


def image_matches(
    resource: Mapping[str, object],
    pointer: Pointer,
    placement_pattern: Pointer,
    placement_path: ConcretePath,
) -> list[tuple[ConcretePath, str]]:
    """The images ``pointer`` names for the placement at ``placement_path`` (an instance of
    ``placement_pattern``): an image pointer that starts with the placement's pattern is read
    under that very placement (each pool its own image); any other is read over the whole
    resource, a ``*`` it shares with the pattern (after the same tokens) bound to the
    placement's item (a keyspace's images for its tablet pools). Values that are not non-empty
    strings are not images."""
    return image_lookup(resource, pointer, placement_pattern, placement_path)[0]


def image_lookup(
    resource: Mapping[str, object],
    pointer: Pointer,
    placement_pattern: Pointer,
    placement_path: ConcretePath,
) -> tuple[list[tuple[ConcretePath, str]], list[tuple[ConcretePath, object]]]:
    """:func:`image_matches`, and where the pointer met a value of the wrong type (an image
    that is not a string, a string where the path goes on): (path, value), for a warning."""
    prefix = len(placement_pattern)
    if len(pointer) > prefix and pointer[:prefix] == placement_pattern:
        base: object = resource
        for part in placement_path:  # a placement to be created has nothing under it yet
            if isinstance(base, Mapping):
                base = base.get(part)
            elif isinstance(base, list) and isinstance(part, int) and 0 <= part < len(base):
                base = base[part]
            else:
                base = None
        matches, mismatches = walk(base, pointer[prefix:])
        found = [((*placement_path, *path), value) for path, value in matches]
        wrong = [((*placement_path, *path), value) for path, value in mismatches]
    else:
        # A `*` the pointer shares with the placement's pattern (after the same tokens) is the
        # instance's item: a Vitess tablet pool reads its own keyspace's images.
        found, wrong = walk(resource, _bound(pointer, placement_pattern, placement_path))
    images: list[tuple[ConcretePath, str]] = []
    for path, value in found:
        if isinstance(value, str):
            if value.strip():
                images.append((path, value))
        elif value is not None:
            wrong.append((path, value))
    return images, wrong


def effective_fields(
    resource: Mapping[str, object],
    placement: Placement,
    holder: Mapping[str, object],
    blocked: Collection[str] = (),
) -> tuple[dict[str, object], frozenset[str]]:
    """What the pods of a placement instance take from the object it is merged over: (the
    merged value of each field that differs from the placement's own, the fields the placement
    must not be written in: those the pods take, wholly or partly, from the shared object).

    A field merged ``by-position`` is written into the placement, whole as merged, when the
    shared object may not be written there (``blocked``: another placement merged over it
    sets the field, so an item appended to the shared list would meet one of its own);
    otherwise the shared object's own placement writes it."""
    inheritance = placement.inherits
    merged: dict[str, object]
    read_only: frozenset[str]
    if inheritance is None:
        merged, read_only = {}, frozenset()
    else:
        merged, read_only = _inherited(resource, inheritance, holder, blocked)
    labels = _node_labels_from(resource, placement)
    if not labels:
        return merged, read_only
    own = merged.get("nodeSelector", holder.get("nodeSelector"))
    merged["nodeSelector"] = {**labels, **(own if isinstance(own, Mapping) else {})}
    return merged, read_only | {"nodeSelector"}


def withheld_fields(
    resource: Mapping[str, object],
    placement: Placement,
    holder: Mapping[str, object],
    holder_path: ConcretePath = (),
) -> frozenset[str]:
    """The fields kmultiarch may not write in a placement instance (at ``holder_path``)
    although its pods take them from nowhere else: an affinity the operator gives pods whose
    template has none (``default_affinity_when``), which one created would replace; any
    affinity while the operator adds node selector terms of its own (``added_terms_when``),
    which an arch term written here would not hold for. A constraint they would hold is not
    written, and said (``unwritable-constraint``)."""
    affinity = _NODE_AFFINITY if placement.shape == "node-affinity" else _AFFINITY
    if not placement.writes_affinity:
        return frozenset({affinity})
    if any(
        holds(resource, (_bound(pointer, placement.path, holder_path), values))
        for pointer, values in placement.added_terms_when
    ):
        return frozenset({affinity})
    if holder.get(affinity) is None and any(
        holds(resource, condition) for condition in placement.default_affinity_when
    ):
        return frozenset({affinity})
    return frozenset()


def _node_labels_from(resource: Mapping[str, object], placement: Placement) -> dict[str, str]:
    """The node labels the operator selects from the resource's fields (``node_selector_from``):
    those whose field holds one plain value."""
    labels: dict[str, str] = {}
    for label, pointer in placement.node_selector_from:
        found = [value for _, value in expand(resource, pointer)]
        if len(found) == 1 and isinstance(found[0], str) and found[0].strip():
            labels[label] = found[0].strip().lower()
    return labels


def _inherited(
    resource: Mapping[str, object],
    inheritance: Inheritance,
    holder: Mapping[str, object],
    blocked: Collection[str],
) -> tuple[dict[str, object], frozenset[str]]:
    found = [value for _, value in expand(resource, inheritance.path)]
    shared = found[0] if len(found) == 1 and isinstance(found[0], Mapping) else {}
    merged: dict[str, object] = {}
    read_only: set[str] = set()
    for name, merge in inheritance.fields:
        own, base = holder.get(name), shared.get(inheritance.shared_name(name))
        if merge == "replace":
            if own is None:
                read_only.add(name)
                if base is not None:
                    merged[name] = base
            continue
        if merge == "by-position":
            if name not in blocked:
                read_only.add(name)
            if base is not None:
                merged[name] = base if own is None else by_position(base, own)
            continue
        read_only.add(name)
        if merge == "merge-by-key" and isinstance(base, Mapping) and base:
            merged[name] = {**base, **(own if isinstance(own, Mapping) else {})}
        elif merge == "append" and isinstance(base, list) and base:
            merged[name] = [*base, *(own if isinstance(own, list) else [])]
    return merged, frozenset(read_only)


def set_nowhere(
    resource: Mapping[str, object], placement: Placement, holder: Mapping[str, object]
) -> frozenset[str]:
    """The fields a placement replaces (``replace``) that neither it nor the object it is
    merged over sets, for a shared object no placement of the kind writes (a K8ssandraCluster
    datacenter's ``tolerations``, spec.cassandra's when it has none): the pods get what is
    written into the placement, and nothing else would write it."""
    inheritance = placement.inherits
    if inheritance is None:
        return frozenset()
    found = [value for _, value in expand(resource, inheritance.path)]
    shared = found[0] if len(found) == 1 and isinstance(found[0], Mapping) else {}
    return frozenset(
        name
        for name, merge in inheritance.fields
        if merge == "replace"
        and inheritance.shared_name(name) == name
        and holder.get(name) in (None, [], {})
        and shared.get(name) in (None, [], {})
    )


def blocked_by_position(
    resource: Mapping[str, object], placements: Sequence[Placement]
) -> dict[ConcretePath, frozenset[str]]:
    """Per shared object, the fields merged ``by-position`` that a placement merged over it
    sets: appending to the shared object's list there would put an item at a position one of
    the placement's own items is merged onto (Flink's mergeArray), so it is written into each
    such placement instead."""
    blocked: dict[ConcretePath, set[str]] = {}
    for placement in placements:
        inheritance = placement.inherits
        fields = (
            [name for name, merge in inheritance.fields if merge == "by-position"]
            if (inheritance is not None)
            else []
        )
        if inheritance is None or not fields:
            continue
        for _, holder in expand(resource, placement.path):
            if not isinstance(holder, Mapping):
                continue
            for name in fields:
                if holder.get(name) not in (None, [], {}):
                    blocked.setdefault(inheritance.path, set()).add(name)
    return {path: frozenset(names) for path, names in blocked.items()}


def by_position(base: object, own: object) -> object:
    """``own`` merged onto ``base`` as the Flink operator merges pod templates (FlinkUtils
    mergeInto, mergeArray with merge-arrays-by-name off): objects key by key, recursively;
    lists item by item, an object item merged onto the one at its position, a longer list's
    extra items appended, any other item keeping the shared one; a scalar replaced."""
    if isinstance(base, Mapping) and isinstance(own, Mapping):
        merged = dict(base)
        for key, value in own.items():
            current = merged.get(key)
            if isinstance(current, list) and isinstance(value, list):
                merged[key] = _by_position_list(current, value)
            elif isinstance(current, Mapping):
                merged[key] = by_position(current, value) if isinstance(value, Mapping) else current
            else:
                merged[key] = value
        return merged
    if isinstance(base, list) and isinstance(own, list):
        return _by_position_list(base, own)
    return own


def _by_position_list(base: list[object], own: list[object]) -> list[object]:
    merged = list(base)
    for position, item in enumerate(own):
        if position >= len(merged):
            merged.append(item)
        elif isinstance(merged[position], Mapping) and isinstance(item, Mapping):
            merged[position] = by_position(merged[position], item)
    return merged


_NODE_AFFINITY = "nodeAffinity"

_AFFINITY = "affinity"

_POD_TEMPLATE_SPEC = "podTemplateSpec"

_NODE_SELECTOR = "nodeSelector"


def _bound(pointer: Pointer, pattern: Pointer, holder_path: ConcretePath) -> Pointer:
    """``pointer`` with each ``*`` the placement's pattern has at the same place (after the same
    tokens) replaced by the instance's item: ``/spec/replsets/*/name`` of
    ``/spec/replsets/*/arbiter`` at ``/spec/replsets/1/arbiter`` is ``/spec/replsets/1/name``."""
    bound = list(pointer)
    for index, token in enumerate(pointer):
        if (
            token == WILDCARD
            and index < len(pattern)
            and index < len(holder_path)
            and pattern[: index + 1] == pointer[: index + 1]
        ):
            bound[index] = str(holder_path[index])
    return tuple(bound)


def _bound_template(template: str, pattern: Pointer, holder_path: ConcretePath) -> str:
    """A template's ``{/pointer}`` parts bound to the placement instance (:func:`_bound`)."""

    def part(match: re.Match[str]) -> str:
        pointer, bar, template_filter = match.group(1).partition("|")
        tokens = _bound(pointer_tokens(pointer), pattern, holder_path)
        escaped = "/".join(token.replace("~", "~0").replace("/", "~1") for token in tokens)
        return "{/" + escaped + bar + template_filter + "}"

    return _TEMPLATE_PART.sub(part, template)


def _bound_object(value: object, pattern: Pointer, holder_path: ConcretePath) -> object:
    """``value`` with its strings' templates bound to the placement instance
    (:func:`_bound_template`): a Vitess gateway's ``{/spec/cells/*/zone}``, its own cell's."""
    if isinstance(value, str):
        return _bound_template(value, pattern, holder_path) if "{" in value else value
    if isinstance(value, Mapping):
        return {key: _bound_object(item, pattern, holder_path) for key, item in value.items()}
    if isinstance(value, list):
        return [_bound_object(item, pattern, holder_path) for item in value]
    return value
