"""Where pod specs live in each kind, and which images they run. Pure: plain data in and out.

A table maps (API group, kind) to the paths of its pod specs; ``kind: List`` items are walked.
Argo Workflows are the exception to "one pod spec per workload": each template runs as its own
pod, with its own ``tolerations``/``affinity``/``nodeSelector`` on the template itself.
Operators' custom resources (:mod:`kmultiarch.core.operators.model`) are placed through the objects
their operators copy the scheduling fields from, with the images the resources name.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from kmultiarch.core.findings import shown_name
from kmultiarch.core.images.digest import is_digest
from kmultiarch.core.operators.catalogued import built_in_operators
from kmultiarch.core.operators.model import (
    WILDCARD,
    ConcretePath,
    ImageSource,
    OperatorKind,
    Placement,
    Pointer,
    api_group,
    blocked_by_position,
    effective_fields,
    expand,
    image_lookup,
    resolved_default,
    set_nowhere,
    type_name,
    walk,
    withheld_fields,
)
from kmultiarch.core.operators.shapes import affinity_defaults, scheduling_view
from kmultiarch.errors import format_field_path

if TYPE_CHECKING:
    from kmultiarch.core.operators.imagecatalogs import FindRelated
    from kmultiarch.core.operators.kserve import RuntimeChoice

Path = tuple[str | int, ...]

SKIP_ANNOTATION = "kmultiarch.dev/skip"
#: How a field whose image holds a variable of the run (Tekton's ``$(tasks.X.results.Y)``) is
#: said among those the operator chooses the image of: it says why itself.
RUN_TIME_IMAGE = "known only when the run starts"
CONTAINER_GROUPS = ("initContainers", "containers", "ephemeralContainers")
#: A Pod's status lists, per container group, what each container runs (``kubectl get pods``).
STATUS_GROUPS = {
    "initContainers": "initContainerStatuses",
    "containers": "containerStatuses",
    "ephemeralContainers": "ephemeralContainerStatuses",
}
SCHEDULING_FIELDS = ("tolerations", "affinity", "nodeSelector")

#: (API group, kind) -> paths from the object root to each pod spec.
POD_SPEC_PATHS: dict[tuple[str, str], tuple[Path, ...]] = {
    ("", "Pod"): (("spec",),),
    ("", "PodTemplate"): (("template", "spec"),),
    ("", "ReplicationController"): (("spec", "template", "spec"),),
    ("apps", "Deployment"): (("spec", "template", "spec"),),
    ("apps", "StatefulSet"): (("spec", "template", "spec"),),
    ("apps", "DaemonSet"): (("spec", "template", "spec"),),
    ("apps", "ReplicaSet"): (("spec", "template", "spec"),),
    ("extensions", "Deployment"): (("spec", "template", "spec"),),
    ("extensions", "DaemonSet"): (("spec", "template", "spec"),),
    ("extensions", "ReplicaSet"): (("spec", "template", "spec"),),
    ("batch", "Job"): (("spec", "template", "spec"),),
    ("batch", "CronJob"): (("spec", "jobTemplate", "spec", "template", "spec"),),
    ("argoproj.io", "Rollout"): (("spec", "template", "spec"),),
    ("serving.knative.dev", "Service"): (("spec", "template", "spec"),),
    ("serving.knative.dev", "Configuration"): (("spec", "template", "spec"),),
    ("keda.sh", "ScaledJob"): (("spec", "jobTargetRef", "template", "spec"),),
}

#: Argo Workflows kinds -> path to the workflow spec holding ``templates``.
WORKFLOW_SPEC_PATHS: dict[tuple[str, str], Path] = {
    ("argoproj.io", "Workflow"): ("spec",),
    ("argoproj.io", "WorkflowTemplate"): ("spec",),
    ("argoproj.io", "ClusterWorkflowTemplate"): ("spec",),
    ("argoproj.io", "CronWorkflow"): ("spec", "workflowSpec"),
}

#: Kinds that wrap whole resources, which their controller creates as they are -> the pointers
#: (``*``: each item) to the wrapped resources, placed by their own kinds. An AppWrapper's
#: components (project-codeflare/appwrapper internal/controller/appwrapper/
#: resource_management.go createComponent: parseComponent(component.Template), created with
#: its pod sets' nodeSelector and tolerations merged in and node-health expressions ANDed into
#: each required term: the templates' own placement holds).
WRAPPED_RESOURCES: dict[tuple[str, str], tuple[tuple[str, ...], ...]] = {
    ("workload.codeflare.dev", "AppWrapper"): (("spec", "components", "*", "template"),),
}


#: (API group, kind) -> how its operator places its pods (the catalogue, and a policy's
#: podSpecs entries merged in: :meth:`kmultiarch.core.policy.model.ScopePolicy.operators`).
Operators = Mapping[tuple[str, str], OperatorKind]
BUILT_IN_OPERATORS: Operators = built_in_operators()
#: Finds a resource of the stream: (API group, kind, namespace, name) -> it, or None.
#: The resources of the stream of a kind: (API group, kind, namespace; None: any namespace).
Related = Callable[[str, str, str | None], "Sequence[Mapping[str, object]]"]


def may_hold_pods(api_version: str, kind: str, operators: Operators | None = None) -> bool:
    """False when no resource of this type can hold a pod spec kmultiarch handles (the built-in
    table, or an operator's kind: the catalogue and the policy's ``podSpecs``): a reader need
    not even compose such a document. Lists (``kind: List``, ``PodList``...) may."""
    group = api_group(api_version)
    return (
        (group, kind) in POD_SPEC_PATHS
        or (group, kind) in WORKFLOW_SPEC_PATHS
        or (group, kind) in WRAPPED_RESOURCES
        or (group, kind) in (BUILT_IN_OPERATORS if operators is None else operators)
        or kind.endswith("List")
    )


_WORKFLOW_TEMPLATE_CONTAINERS: tuple[Path, ...] = (
    ("container",),
    ("script",),
    ("containerSet", "containers"),
    ("initContainers",),
    ("sidecars",),
)


@dataclass(frozen=True)
class ContainerImage:
    path: Path  # from the document root to the container mapping (or the object naming it)
    name: str
    image: str
    #: The digest a running Pod's status says the container runs (``imageID``), if any.
    running_digest: str | None = None
    #: The key under ``path`` that names the image (``image``; a pointer's last token).
    field: str = "image"
    #: Where the image comes from when not from the document: ``operator`` (it adds it to
    #: every pod), ``default`` (it runs it when the resource names none), ``related`` (another
    #: resource of the stream names it), ``injection`` (injected at admission).
    added_by: str = ""
    #: The name of the injection that adds it (``spec.injections``).
    injection: str = ""
    #: An image volume (``spec.volumes[].image.reference``, KEP-4639): pulled for the node's
    #: platform like a container's image, but nothing is started from it.
    volume: bool = False

    @property
    def image_path(self) -> Path:
        """From the document root to the field naming the image (``()``: not in it)."""
        return (*self.path, self.field) if not self.added_by else ()


@dataclass(frozen=True)
class PodTarget:
    """A mapping that holds a pod's scheduling fields, and the images of its pod."""

    path: Path  # from the document root to the mapping with tolerations/affinity
    spec: Mapping[str, object]
    containers: tuple[ContainerImage, ...]
    annotations: Mapping[str, object]  # the pod template's own annotations
    #: Scheduling fields the pod inherits when its own mapping lacks them (Argo Workflows:
    #: workflow-level tolerations/affinity/nodeSelector, which a template's own replace).
    inherited: Mapping[str, object] = field(default_factory=dict)
    #: Set for an operator's placement (None: a pod spec of a built-in kind).
    placement: Placement | None = None
    #: How many of ``path``'s last tokens do not exist yet (an edit creates them).
    missing: int = 0
    #: The fields whose images the operator chooses (the resource names none): the pods
    #: cannot be judged, and are left as they are.
    chosen_by_operator: tuple[str, ...] = ()
    #: The pod's labels, as the pod template gives them (for injections' conditions).
    labels: Mapping[str, object] = field(default_factory=dict)
    #: Fields of the resource a placement's or an image's pointer meets with a value of the
    #: wrong type: (path from the document root, what is wrong), each a warning.
    malformed: tuple[tuple[Path, str], ...] = ()
    #: False when the placement itself is of the wrong type (a string where the operator reads
    #: an object): nothing can be written, its pods are left as they are.
    placeable: bool = True
    #: Fields of the mapping never written: its pods take them from a shared object, which its
    #: own placement writes (Rook's ``placement.all`` tolerations under ``placement.mon``).
    read_only: frozenset[str] = frozenset()
    #: Of ``read_only``, the fields no shared object writes either: the operator fills them in
    #: itself (:func:`kmultiarch.core.operators.model.withheld_fields`); a constraint they would
    #: hold is not written, and said.
    withheld: frozenset[str] = frozenset()
    #: Written beside the constraint when an ``affinity`` is created (the operator's default
    #: that any affinity of the template would replace: ECK's for Elasticsearch).
    affinity_defaults: Mapping[str, object] = field(default_factory=dict)
    #: Constraints the pods need that kmultiarch cannot write, each said in a warning (a
    #: KafkaConnect's pods, which run the image its build pod makes for its own node's
    #: architecture: :attr:`kmultiarch.core.operators.model.Placement.image_built_by`).
    unwritable: tuple[str, ...] = ()

    @property
    def field_path(self) -> str:
        return format_field_path(self.path)


@dataclass(frozen=True)
class Workload:
    """A resource (or List item) with pod specs."""

    path: Path  # from the document root to the resource (() unless inside a List)
    api_version: str
    kind: str
    name: str
    namespace: str
    annotations: Mapping[str, object]
    targets: tuple[PodTarget, ...]
    #: ``metadata.generateName`` of a resource that has no ``metadata.name`` (an Argo Workflow).
    generate_name: str = ""
    #: Items a placement's ``*`` meets that are not objects (numbers in a list of node sets):
    #: no pod specs, one warning per placement: (path of the first, from the document root,
    #: what is wrong).
    malformed_items: tuple[tuple[Path, str], ...] = ()

    @property
    def display_name(self) -> str:
        namespace = f"{self.namespace}/" if self.namespace else ""
        return f"{self.kind} {namespace}{shown_name(self.name, self.generate_name)}"


def find_workloads(
    document: object, operators: Operators | None = None, related: Related | None = None
) -> list[Workload]:
    """Every workload in a document (a resource, or the items of a ``kind: List``).
    ``operators``: the operators' kinds (default: the built-in catalogue; the policy's
    ``podSpecs`` merged in by :meth:`kmultiarch.core.policy.model.ScopePolicy.operators`);
    ``related`` finds the resources an operator's kind takes images from (a KafkaNodePool's
    Kafka)."""
    return list(
        _walk(document, (), BUILT_IN_OPERATORS if operators is None else operators, related)
    )


def _walk(
    resource: object, path: Path, operators: Operators, related: Related | None = None
) -> Iterator[Workload]:
    if not isinstance(resource, Mapping):
        return
    kind = resource.get("kind")
    api_version = resource.get("apiVersion")
    if not isinstance(kind, str) or not isinstance(api_version, str):
        return
    if kind == "List" or (kind.endswith("List") and isinstance(resource.get("items"), list)):
        for position, item in enumerate(_list(resource.get("items"))):
            yield from _walk(item, (*path, "items", position), operators, related)
        return
    group = api_group(api_version)
    wrapped = WRAPPED_RESOURCES.get((group, kind))
    if wrapped is not None:
        yield from _wrapped(resource, path, wrapped, operators, related)
        return
    targets: list[PodTarget] = []
    for spec_path in POD_SPEC_PATHS.get((group, kind), ()):
        spec = value_at(resource, spec_path)
        if isinstance(spec, Mapping):
            template = value_at(resource, spec_path[:-1])
            running = _running_digests(resource) if kind == "Pod" and group == "" else {}
            targets.append(
                PodTarget(
                    (*path, *spec_path),
                    spec,
                    tuple(_pod_containers(spec, (*path, *spec_path), running)),
                    _annotations(template) if spec_path[:-1] else {},
                    # A Pod's own labels, else its template's.
                    labels=_labels(template if isinstance(template, Mapping) else {}),
                )
            )
    workflow_path = WORKFLOW_SPEC_PATHS.get((group, kind))
    if workflow_path is not None:
        targets.extend(_workflow_targets(resource, workflow_path, path))
    metadata = resource.get("metadata")
    metadata = metadata if isinstance(metadata, Mapping) else {}
    entry = operators.get((group, kind))
    malformed_items: list[tuple[Path, str]] = []
    if entry is not None:
        namespace = _string(metadata.get("namespace"))
        known = {target.path for target in targets}
        placed, malformed_items = _placement_targets(resource, entry, path, namespace, related)
        targets.extend(
            target
            for target in placed
            if target.path not in known  # a path the built-in table has already
        )
    if not targets and not malformed_items:
        return
    yield Workload(
        path,
        api_version,
        kind,
        _string(metadata.get("name")),
        _string(metadata.get("namespace")),
        _annotations(resource),
        tuple(targets),
        "" if metadata.get("name") else _string(metadata.get("generateName")),
        tuple(malformed_items),
    )


def _wrapped(
    wrapper: Mapping[str, object],
    path: Path,
    pointers: tuple[tuple[str, ...], ...],
    operators: Operators,
    related: Related | None,
) -> Iterator[Workload]:
    """The workloads of the resources ``wrapper`` wraps, each placed by its own kind: in the
    wrapper's namespace when it names none (parseComponent), opted out with the wrapper."""
    metadata = _mapping(wrapper.get("metadata"))
    namespace = _string(metadata.get("namespace"))
    skip = {key: value for key, value in _annotations(wrapper).items() if key == SKIP_ANNOTATION}
    for pointer in pointers:
        for concrete, item in walk(wrapper, pointer)[0]:
            for workload in _walk(item, (*path, *concrete), operators, related):
                yield replace(
                    workload,
                    namespace=workload.namespace or namespace,
                    annotations={**skip, **workload.annotations},
                )


def _placement_targets(
    resource: Mapping[str, object],
    entry: OperatorKind,
    path: Path,
    namespace: str,
    related: Related | None,
) -> tuple[list[PodTarget], list[tuple[Path, str]]]:
    """A target per instance of each placement of ``entry`` in ``resource`` (at ``path`` in its
    document): its images from the pointers (and, for a pod spec, its containers), the
    operator's own, and its defaults where the resource names none. A placement whose path
    meets a field of the wrong type is a target that cannot be placed; one whose ``*`` meets
    items that are not objects has no pod there. One warning per placement and resource names
    the first such field, or item, and how many more there are: 50,000 numbers where a
    placement's ``*`` expects objects are one warning, not 50,000 pods. And (path, message)
    of those items."""
    targets: list[PodTarget] = []
    malformed_items: list[tuple[Path, str]] = []
    seen: set[ConcretePath] = set()
    wrong_images: set[Path] = set()
    api_version = resource.get("apiVersion")
    blocked = blocked_by_position(resource, entry.placements)
    images_from = _images_view(entry, resource)
    for placement in entry.placements:
        if not placement.applies_to(str(api_version)) or not placement.exists_in(resource):
            continue  # a field of another version of the API, or pods the operator never makes
        in_use = _items_in_use(placement, resource)
        instances, wrong = _instances(resource, placement)
        fields, items = _wrong_fields_and_items(placement, wrong, seen)
        for position, (wrong_path, value) in enumerate(fields):
            message = _wrong_type(placement, wrong_path, value, len(fields), "its pods are")
            targets.append(
                PodTarget(
                    (*path, *wrong_path),
                    {},
                    (),
                    {},
                    placement=placement,
                    # The first carries the placement's one warning; all are pods not placed.
                    malformed=(((*path, *wrong_path), message),) if position == 0 else (),
                    placeable=False,
                )
            )
        if items:
            first, value = items[0]
            message = _wrong_type(
                placement, first, value, len(items), "they are no pod specs, and are"
            )
            malformed_items.append(((*path, *first), message))
        for holder_path, holder, missing in instances:
            if holder_path in seen:
                continue  # a policy entry restating a built-in placement
            if not placement.exists_at(resource, holder_path):
                continue  # an item whose pods the operator does not make (an arbiter not enabled)
            if in_use is not None and holder_path not in in_use:
                continue  # an item no pod is made from (a pod template no host runs)
            seen.add(holder_path)
            unwritable: tuple[str, ...] = ()
            containers: list[ContainerImage] = []
            chosen: list[str] = []
            unselected: list[str] = []
            malformed: list[tuple[Path, str]] = []
            if placement.image_built_by is not None:
                # Built on the build pod's node, for its architecture: no image to judge yet.
                unwritable = _unpinned_build(resource, placement, placement.image_built_by)
            else:
                containers, chosen, unselected, malformed = _placement_images(
                    resource, placement, holder_path, holder, path, namespace, related, images_from
                )
            containers.extend(
                ContainerImage((), "the operator's container", image, added_by="operator")
                for image in (in_use or {}).get(holder_path, ())
            )
            # An image field read by every instance is said once for the resource.
            malformed = [item for item in malformed if item[0] not in wrong_images]
            wrong_images.update(item[0] for item in malformed)
            defaults = [resolved_default(resource, image) for image in entry.default_images]
            if chosen and defaults and None not in defaults:
                containers.extend(
                    ContainerImage((), "operator's default", image, added_by="default")
                    for image in defaults
                    if image is not None
                )
                chosen = []
            chosen.extend(unselected)
            if containers or chosen:
                containers.extend(
                    ContainerImage((), "operator", image, added_by="operator")
                    for image in entry.operator_images
                )
            shared = placement.inherits.path if placement.inherits is not None else None
            inherited, read_only = effective_fields(
                resource, placement, holder, blocked.get(shared, ()) if shared else ()
            )
            if not any(other.path == shared for other in entry.placements):
                read_only -= set_nowhere(resource, placement, holder)
            withheld = withheld_fields(resource, placement, holder, holder_path)
            selected, taken = _selected_fields(resource, placement, holder, namespace, related)
            if selected:
                inherited = {**inherited, **selected}
                withheld |= taken - {"nodeSelector"}
                read_only |= taken
            # A shared object that placements merged over by position set a field of: not
            # written there (their own items would meet what is appended), but into each.
            read_only |= withheld | blocked.get(holder_path, frozenset())
            if missing and placement.judged_only_when_missing:
                read_only |= _WRITTEN_FIELDS[placement.shape]
            if _takes_all_from_shared(placement, read_only):
                continue  # its pods are placed by the shared object alone: judged there
            template = _template_of(resource, holder_path) if placement.pod_spec else {}
            targets.append(
                PodTarget(
                    (*path, *holder_path),
                    holder,
                    tuple(containers),
                    _annotations(template),
                    scheduling_view(inherited, placement.shape),
                    placement=placement,
                    missing=missing,
                    chosen_by_operator=tuple(chosen),
                    labels=_labels(template),
                    malformed=tuple(malformed),
                    read_only=read_only,
                    withheld=withheld | _unwritten_shared(entry, placement, read_only),
                    affinity_defaults=affinity_defaults(resource, placement, holder_path, holder),
                    unwritable=unwritable,
                )
            )
    return targets, malformed_items


def _wrong_fields_and_items(
    placement: Placement,
    wrong: list[tuple[ConcretePath, object]],
    seen: set[ConcretePath],
) -> tuple[list[tuple[ConcretePath, object]], list[tuple[ConcretePath, object]]]:
    """The values of the wrong type a placement's path met (each once for the resource), as
    fields (named by the path: the pods exist, and cannot be placed) and items (matched by a
    ``*``: no pods at all)."""
    fields: list[tuple[ConcretePath, object]] = []
    items: list[tuple[ConcretePath, object]] = []
    for wrong_path, value in wrong:
        if wrong_path in seen:
            continue
        seen.add(wrong_path)
        # Paths are walked a token at a time: the last token of the path is the one matched.
        by_wildcard = bool(wrong_path) and placement.path[len(wrong_path) - 1] == WILDCARD
        (items if by_wildcard else fields).append((wrong_path, value))
    return fields, items


def _wrong_type(
    placement: Placement, wrong_path: ConcretePath, value: object, count: int, outcome: str
) -> str:
    """The warning of a placement that meets ``count`` values of the wrong type, the first at
    ``wrong_path``."""
    more = f", and so are {count - 1:,} more like it" if count > 1 else ""
    return (
        f"{format_field_path(wrong_path)} is {type_name(value)} where the operator reads "
        f"{_expected(placement, len(wrong_path))} (placement "
        f"{format_field_path(placement.path)}){more}: {outcome} left as they are"
    )


_ARCH_LABEL = "kubernetes.io/arch"


def _unpinned_build(
    resource: Mapping[str, object], placement: Placement, builder: Pointer
) -> tuple[str, ...]:
    """What to say of pods that run the image another pod builds, for its node's architecture
    (:attr:`Placement.image_built_by`): nothing when both select the same architecture by
    ``nodeSelector``, else how to pin them."""

    def selected(pointer: Pointer) -> object:
        found = [value for _, value in expand(resource, (*pointer, "nodeSelector", _ARCH_LABEL))]
        return found[0] if len(found) == 1 and isinstance(found[0], str) and found[0] else None

    pods, build = format_field_path(placement.path), format_field_path(builder)
    architecture = selected(placement.path)
    if architecture is not None and architecture == selected(builder):
        return ()
    return (
        f"these pods run the image the operator builds in the pod of {build}, for the "
        "architecture of the node that pod lands on and no other: it is in no registry before "
        f"the build, so kmultiarch cannot write the constraint. Give {build} and {pods} one "
        f"nodeSelector {_ARCH_LABEL}, an architecture the build's base image runs on",
    )


#: The fields kmultiarch writes, per placement shape.
_WRITTEN_FIELDS = {
    "affinity": frozenset({"tolerations", "affinity"}),
    "node-affinity": frozenset({"tolerations", "nodeAffinity"}),
    "advanced-affinity": frozenset({"tolerations", "affinity"}),
    "pod-template-affinity": frozenset({"tolerations", "affinity"}),
}


def _unwritten_shared(
    entry: OperatorKind, placement: Placement, read_only: frozenset[str]
) -> frozenset[str]:
    """The fields a placement takes from the object it is merged over that nothing writes
    there: no placement of the kind is that object, or the object names the field otherwise
    (Tigera's ``controlPlaneTolerations``)."""
    inheritance = placement.inherits
    if inheritance is None:
        return frozenset()
    inherited = read_only & {name for name, _ in inheritance.fields}
    if not any(other.path == inheritance.path for other in entry.placements):
        return inherited
    return frozenset(name for name in inherited if inheritance.shared_name(name) != name)


def _takes_all_from_shared(placement: Placement, read_only: frozenset[str]) -> bool:
    """A placement merged over a shared one that sets none of the fields it would replace, and
    has no field of its own to write: its pods are those of the shared placement."""
    if placement.inherits is None:
        return False
    merged = {name for name, _ in placement.inherits.fields}
    return _WRITTEN_FIELDS[placement.shape] <= merged <= read_only


def _expected(placement: Placement, depth: int) -> str:
    """What a placement's path needs at ``depth`` tokens: a list or an object for a ``*``."""
    token = placement.path[depth] if depth < len(placement.path) else ""
    return "a list or an object" if token == WILDCARD else "an object"


def _instances(
    resource: Mapping[str, object], placement: Placement
) -> tuple[list[tuple[ConcretePath, Mapping[str, object], int]], list[tuple[ConcretePath, object]]]:
    """(path, holder, tokens missing) of each instance of a placement: the path up to its last
    ``creates`` tokens must exist (``*`` expanded there); the rest may be created (the holder is
    then empty). And (path, value) where the path meets a value of the wrong type."""
    keep = len(placement.path) - placement.creates
    found: list[tuple[ConcretePath, Mapping[str, object], int]] = []
    bases, wrong = walk(resource, placement.path[:keep])
    for base_path, base in bases:
        current: object = base
        concrete: ConcretePath = base_path
        missing = 0
        for token in placement.path[keep:]:
            if missing:
                missing += 1
            elif not isinstance(current, Mapping):
                break  # reported below
            elif isinstance(current.get(token), Mapping):
                current = current[token]
            elif current.get(token) is None:
                missing = 1  # absent (or null): created from here
            else:
                current = current[token]
                concrete = (*concrete, token)
                break  # a value of another type: not a place kmultiarch can write
            concrete = (*concrete, token)
        if missing:
            found.append((concrete, {}, missing))
        elif isinstance(current, Mapping):
            found.append((concrete, current, 0))
        elif current is not None:
            wrong.append((concrete, current))
    return found, wrong


def _placement_images(
    resource: Mapping[str, object],
    placement: Placement,
    holder_path: ConcretePath,
    holder: Mapping[str, object],
    path: Path,
    namespace: str,
    related: Related | None,
    images_from: Mapping[str, object] | None = None,
) -> tuple[list[ContainerImage], list[str], list[str], list[tuple[Path, str]]]:
    """The images of a placement's pods, the fields whose image the operator chooses, the
    resources of the stream a selection found none of (a KServe runtime: no ``defaultImages``
    stands for them), and the image fields of the wrong type (path, message). ``images_from``:
    the resource with its images as the controller runs them (variables substituted), where
    they are read."""
    containers: list[ContainerImage] = []
    chosen: list[str] = []
    unselected: list[str] = []
    malformed: list[tuple[Path, str]] = []
    if placement.pod_spec:
        containers.extend(_pod_containers(holder, (*path, *holder_path)))
    for source in placement.images:
        if not source.counts_for(resource):
            continue  # a container the operator adds only when the resource asks for it
        if source.selected_by:
            choice = _selection(resource, source.selected_by, namespace, related)
            if choice is not None and choice.missing:
                unselected.append(choice.missing)
            elif choice is not None and choice.chosen:
                chosen.append(choice.chosen)
            elif choice is not None:
                containers.extend(
                    ContainerImage((), where, image, added_by="related")
                    for where, image in choice.images
                )
            continue
        origin, prefix = images_from if images_from is not None else resource, path
        if source.related is not None:
            origin = _related(resource, source.related, namespace, related) or {}
            prefix = ()
        found: list[tuple[ConcretePath, str]] = []
        for pointer in source.alternatives:
            found, wrong = image_lookup(origin, pointer, placement.path, holder_path)
            malformed.extend(
                (
                    (*prefix, *wrong_path),
                    f"{format_field_path(wrong_path)} is {type_name(value)} where the "
                    f"operator reads an image at {format_field_path(pointer)}: it is not judged",
                )
                for wrong_path, value in wrong
                if source.related is None
            )
            if found:
                break
        for image_path, image in found:
            if images_from is not None and "$(" in image:  # a variable of the run
                chosen.append(f"{format_field_path(image_path)} ({image}: {RUN_TIME_IMAGE})")
                continue
            containers.append(
                ContainerImage(
                    (*prefix, *image_path[:-1]) if source.related is None else (),
                    format_field_path(image_path),
                    image,
                    field=str(image_path[-1]),
                    added_by="" if source.related is None else "related",
                )
            )
        if source.catalog is not None:
            # Loaded only for the kinds that pick an image from a catalog (off the warm path).
            from kmultiarch.core.operators.imagecatalogs import catalog_image
        picked = (
            catalog_image(resource, source.catalog, namespace, _finder(related))
            if not found and source.catalog is not None
            else None
        )
        if picked is not None:
            from_catalog, what = picked
            reference = format_field_path(source.catalog.reference) if source.catalog else ""
            if from_catalog is not None:
                containers.append(
                    ContainerImage((), f"{reference} ({what})", from_catalog, added_by="related")
                )
            else:  # the operator resolves it from what the stream does not show
                chosen.append(f"{reference} ({what})")
            continue
        computed = None if found else _computed(origin, source.templates)
        if computed is not None:
            containers.append(
                ContainerImage(
                    (),
                    f"the operator's image for {_fields_of(source)}",
                    computed,
                    added_by="default",
                )
            )
        elif not found and source.required:
            chosen.append(_fields_of(source))
    if any(source.replaces_named and source.counts_for(resource) for source in placement.images):
        containers = []  # what the resource names is not what its pods will run
    if not containers and not chosen and not unselected:
        # Nothing names an image (a TaskRun whose steps are in a referenced Task).
        chosen.extend(_fields_of(s) for s in placement.images)
        if not chosen and placement.pod_spec:
            chosen.append(format_field_path((*placement.path, "containers")))
    return containers, chosen, unselected, malformed


def _selection(
    resource: Mapping[str, object], selected_by: str, namespace: str, related: Related | None
) -> RuntimeChoice | None:
    """What a controller chooses among the stream's resources for a placement's pods (None:
    the selection does not apply; the placement's own containers are its images)."""
    from kmultiarch.core.operators.kserve import runtime_choice, storage_choice

    if selected_by == "kserve-storage":
        return storage_choice(resource)
    return runtime_choice(
        resource,
        namespace,
        related if related is not None else _no_related,
        worker=selected_by == "kserve-worker",
    )


def _no_related(group: str, kind: str, namespace: str | None) -> Sequence[Mapping[str, object]]:
    return ()


def _selected_fields(
    resource: Mapping[str, object],
    placement: Placement,
    holder: Mapping[str, object],
    namespace: str,
    related: Related | None,
) -> tuple[dict[str, object], frozenset[str]]:
    """The scheduling fields a placement's pods take from what the controller selected (a
    KServe runtime's, under the predictor's by a strategic merge patch: utils.go MergePodSpec):
    the merged value of each, and those that cannot be written in the placement (the pods
    take them from the runtime, which a list or node affinity written here would replace)."""
    merged: dict[str, object] = {}
    taken: set[str] = set()
    for source in placement.images:
        if not source.selected_by or not source.counts_for(resource):
            continue
        choice = _selection(resource, source.selected_by, namespace, related)
        if choice is None:
            continue
        for name, value in choice.fields.items():
            own = holder.get(name)
            if name == "nodeSelector":
                merged[name] = {**_mapping(value), **_mapping(own)}
                taken.add(name)
            elif name == "affinity":
                # The predictor's node affinity, when it has one, replaces the runtime's (its
                # terms are a list without a merge key); otherwise the runtime's holds.
                if _mapping(value).get("nodeAffinity") is not None and (
                    _mapping(own).get("nodeAffinity") is None
                ):
                    merged[name] = {**_mapping(value), **_mapping(own)}
                    taken.add(name)
            elif own is None:
                merged[name] = value
                taken.add(name)
    return merged, frozenset(taken)


def _items_in_use(
    placement: Placement, resource: Mapping[str, object]
) -> dict[ConcretePath, tuple[str, ...]] | None:
    """The items of the placement's path the operator makes pods from, with the images it adds
    to each (:attr:`Placement.items_in_use`); None: every item, nothing added."""
    if placement.items_in_use not in ("clickhouse", "clickhouse-keeper"):
        return None
    from kmultiarch.core.operators.clickhousehosts import pod_templates_in_use

    star = placement.path.index(WILDCARD)
    used = pod_templates_in_use(resource, log_container=placement.items_in_use == "clickhouse")
    return {
        (*placement.path[:star], index, *placement.path[star + 1 :]): images
        for index, images in used.items()
    }


def _images_view(
    entry: OperatorKind, resource: Mapping[str, object]
) -> Mapping[str, object] | None:
    """The resource with its images as the kind's controller runs them, when it substitutes
    variables in them (:attr:`OperatorKind.image_parameters`); None: as written."""
    if entry.image_parameters == "tekton":
        from kmultiarch.core.operators.tekton import tekton_images_view

        return tekton_images_view(resource)
    return None


def _computed(resource: Mapping[str, object], templates: tuple[str, ...]) -> str | None:
    """The first of an image source's templates the resource gives every part of."""
    for template in templates:
        image = resolved_default(resource, template)
        if image is not None:
            return image
    return None


def _fields_of(source: ImageSource) -> str:
    """How a message names an image source: its first pointer, or what the operator runs."""
    if source.alternatives:
        return format_field_path(source.alternatives[0])
    return source.operator_only or "its pods"


def _related(
    resource: Mapping[str, object],
    relation: tuple[str, str, str],
    namespace: str,
    related: Related | None,
) -> Mapping[str, object] | None:
    group, kind, label = relation
    metadata = resource.get("metadata")
    labels = metadata.get("labels") if isinstance(metadata, Mapping) else None
    name = labels.get(label) if isinstance(labels, Mapping) else None
    finder = _finder(related)
    if finder is None or not isinstance(name, str):
        return None
    return finder(group, kind, namespace, name)


def _finder(related: Related | None) -> FindRelated | None:
    """The stream's resource of a kind by namespace and name, from ``related``."""
    if related is None:
        return None
    lister = related

    def find(group: str, kind: str, namespace: str, name: str) -> Mapping[str, object] | None:
        return next(
            (
                candidate
                for candidate in lister(group, kind, namespace)
                if _string(_mapping(candidate.get("metadata")).get("name")) == name
            ),
            None,
        )

    return find


def _template_of(resource: Mapping[str, object], spec_path: ConcretePath) -> Mapping[str, object]:
    """The pod template a pod spec is the ``spec`` of (its ``metadata`` beside it)."""
    template = value_at(resource, spec_path[:-1])
    return template if isinstance(template, Mapping) else {}


def _labels(template: Mapping[str, object]) -> Mapping[str, object]:
    metadata = template.get("metadata")
    labels = metadata.get("labels") if isinstance(metadata, Mapping) else None
    return labels if isinstance(labels, Mapping) else {}


def _pod_containers(
    spec: Mapping[str, object],
    spec_path: Path,
    running: Mapping[tuple[str, str], str] | None = None,
) -> Iterator[ContainerImage]:
    for group in CONTAINER_GROUPS:
        for position, container in enumerate(_list(spec.get(group))):
            if isinstance(container, Mapping) and isinstance(container.get("image"), str):
                name = _string(container.get("name"))
                yield ContainerImage(
                    (*spec_path, group, position),
                    name,
                    container["image"],
                    (running or {}).get((group, name)),
                )
    yield from _image_volumes(spec, spec_path)


def _image_volumes(spec: Mapping[str, object], spec_path: Path) -> Iterator[ContainerImage]:
    """The pod's image volumes (``spec.volumes[].image.reference``, KEP-4639; beta and on by
    default from Kubernetes 1.35): the kubelet pulls each for the node's platform, as it pulls
    a container's image, so they are images of the pod."""
    for position, volume in enumerate(_list(spec.get("volumes"))):
        source = volume.get("image") if isinstance(volume, Mapping) else None
        reference = source.get("reference") if isinstance(source, Mapping) else None
        if isinstance(reference, str) and reference:
            assert isinstance(volume, Mapping)
            yield ContainerImage(
                (*spec_path, "volumes", position, "image"),
                f"volume {_string(volume.get('name'))}".rstrip(),
                reference,
                field="reference",
                volume=True,
            )


def _running_digests(pod: Mapping[str, object]) -> dict[tuple[str, str], str]:
    """(container group, name) -> the digest its ``imageID`` names. Runtimes write
    ``docker.io/library/nginx@sha256:...`` (containerd, CRI-O) or
    ``docker-pullable://nginx@sha256:...`` (Docker); a bare ``sha256:...`` is a local image
    ID, not a registry digest, and is not used."""
    status = pod.get("status")
    if not isinstance(status, Mapping):
        return {}
    digests: dict[tuple[str, str], str] = {}
    for group, status_key in STATUS_GROUPS.items():
        for entry in _list(status.get(status_key)):
            if not isinstance(entry, Mapping):
                continue
            image_id = _string(entry.get("imageID"))
            digest = image_id.rpartition("@")[2] if "@" in image_id else ""
            if is_digest(digest):
                digests[(group, _string(entry.get("name")))] = digest
    return digests


def _workflow_targets(
    resource: Mapping[str, object], workflow_path: Path, path: Path
) -> Iterator[PodTarget]:
    workflow = value_at(resource, workflow_path)
    if not isinstance(workflow, Mapping):
        return
    workflow_scheduling = {
        key: workflow[key] for key in SCHEDULING_FIELDS if _given(key, workflow.get(key))
    }
    for position, template in enumerate(_list(workflow.get("templates"))):
        if not isinstance(template, Mapping):
            continue
        template_path = (*path, *workflow_path, "templates", position)
        containers: list[ContainerImage] = []
        for container_path in _WORKFLOW_TEMPLATE_CONTAINERS:
            found = value_at(template, container_path)
            items = (
                [(container_path, found)]
                if isinstance(found, Mapping)
                else [((*container_path, index), item) for index, item in enumerate(_list(found))]
            )
            for item_path, container in items:
                if isinstance(container, Mapping) and isinstance(container.get("image"), str):
                    containers.append(
                        ContainerImage(
                            (*template_path, *item_path),
                            _string(container.get("name")) or _string(template.get("name")),
                            container["image"],
                        )
                    )
        if containers:
            inherited = {
                key: value
                for key, value in workflow_scheduling.items()
                if not _given(key, template.get(key))
            }
            yield PodTarget(
                template_path, template, tuple(containers), _annotations(template), inherited
            )


def _given(field_name: str, value: object) -> bool:
    """Whether an Argo template (or workflow) sets a scheduling field, as the controller
    judges it (workflowpod.go, addSchedulingConstraints): nodeSelector and tolerations when
    non-empty, affinity when not null. A template inherits the workflow's field otherwise."""
    if field_name == "affinity":
        return value is not None
    return isinstance(value, Mapping | list) and len(value) > 0


def is_skipped(workload: Workload, target: PodTarget | None = None) -> bool:
    """The opt-out annotation, on the workload or on its pod template."""
    return any(
        str(annotations.get(SKIP_ANNOTATION, "")).lower() == "true"
        for annotations in (workload.annotations, target.annotations if target else {})
    )


def value_at(value: object, path: Path) -> object:
    """What ``path`` leads to in plain data (mappings and lists), or None."""
    for part in path:
        if isinstance(part, int):
            if not isinstance(value, list) or part >= len(value):
                return None
            value = value[part]
        else:
            if not isinstance(value, Mapping):
                return None
            value = value.get(part)
    return value


def _list(value: object) -> list[object]:
    return value if isinstance(value, list) else []


def _mapping(value: object) -> Mapping[str, object]:
    return value if isinstance(value, Mapping) else {}


def _string(value: object) -> str:
    return value if isinstance(value, str) else ""


def _annotations(resource: object) -> Mapping[str, object]:
    if not isinstance(resource, Mapping):
        return {}
    metadata = resource.get("metadata")
    if not isinstance(metadata, Mapping):
        return {}
    annotations = metadata.get("annotations")
    return annotations if isinstance(annotations, Mapping) else {}
