"""A cluster's state as triage reads it from a dump (``kubectl get pods,events,nodes -A -o json``):
nodes, pods with their owners and container states, events; a dump of another shape is a
:class:`DumpShapeError`. Pure.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from kmultiarch.core.images.platform import Platform
from kmultiarch.errors import InputError

__all__ = [
    "ARCH_LABEL",
    "EXEC_FORMAT_LABEL",
    "EXEC_FORMAT_REASON",
    "ClusterState",
    "ContainerState",
    "DumpShapeError",
    "Event",
    "Node",
    "ObjectInfo",
    "OwnerRef",
    "Pod",
    "Taint",
]


ARCH_LABEL = "kubernetes.io/arch"

OS_LABEL = "kubernetes.io/os"

#: The multiarch-tuning-operator's ENoExec monitor labels a pod so, and records an event with
#: this reason (openshift/multiarch-tuning-operator, pkg/utils/const.go).
EXEC_FORMAT_LABEL = "multiarch.openshift.io/exec-format-error"

EXEC_FORMAT_REASON = "ExecFormatError"

#: A ReplicaSet's pods carry the hash the Deployment controller appends to its name.
POD_TEMPLATE_HASH = "pod-template-hash"

#: How much of one message is kept and quoted.
MAX_MESSAGE = 2000

#: Labels of a pod that triage reads (its others are dropped when kept).
_POD_LABELS = (EXEC_FORMAT_LABEL, POD_TEMPLATE_HASH, "job-name", "batch.kubernetes.io/job-name")

EXEC_FORMAT = re.compile(r"exec format error", re.IGNORECASE)

IMAGE_PLATFORM = re.compile(
    r"no match for platform in manifest"
    r"|no image found in (?:image index|manifest list) for architecture"
    r"|no matching manifest for \S+ in the manifest list"
    r"|image with reference \S+ was found but does not match the specified platform",
    re.IGNORECASE,
)


class DumpShapeError(InputError):
    """An object of a cluster dump with a field of the wrong type (``spec.containers`` not a
    list...): said with the object and the field; the reader adds the file."""


@dataclass(frozen=True)
class OwnerRef:
    api_version: str
    kind: str
    name: str
    uid: str = ""
    controller: bool = False

    @property
    def group(self) -> str:
        return _group(self.api_version)


@dataclass(frozen=True)
class Taint:
    key: str
    value: str
    effect: str

    def __str__(self) -> str:
        value = f"={self.value}" if self.value else ""
        return f"{self.key}{value}:{self.effect}"


@dataclass(frozen=True)
class Node:
    name: str
    labels: Mapping[str, str]
    taints: tuple[Taint, ...] = ()
    unschedulable: bool = False

    @property
    def architecture(self) -> str:
        return self.labels.get(ARCH_LABEL, "")

    @property
    def os(self) -> str:
        return self.labels.get(OS_LABEL, "linux")

    @property
    def platform(self) -> Platform | None:
        if not self.architecture:
            return None
        return Platform(self.os, self.architecture)


@dataclass(frozen=True)
class ContainerState:
    """A container of a pod: its image in the spec and, from the status, what runs and the
    reasons and messages of its ``state`` and ``lastState``."""

    group: str  # containers, initContainers
    name: str
    image: str
    status_image: str = ""
    image_id: str = ""
    #: (where, text): ``status.containerStatuses[0].lastState.terminated`` -> ``StartError:
    #: failed to create containerd task: ... exec format error: unknown``.
    states: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class Pod:
    namespace: str
    name: str
    uid: str
    labels: Mapping[str, str]
    owners: tuple[OwnerRef, ...]
    node_name: str
    containers: tuple[ContainerState, ...]
    #: nodeSelector, affinity, tolerations: as the API holds them.
    scheduling: Mapping[str, object]
    phase: str = ""
    #: (where, text) of the PodScheduled condition when it is False.
    conditions: tuple[tuple[str, str], ...] = ()
    source: str = ""

    @property
    def display_name(self) -> str:
        return f"Pod {self.namespace}/{self.name}" if self.namespace else f"Pod {self.name}"

    def as_object(self) -> dict[str, object]:
        """The pod as a minimal API object for the engine: its containers and scheduling
        fields (not its node: the scheduler chose it, the template did not), and the
        ``imageID`` of each container, so its images are judged as what was pulled."""
        spec: dict[str, object] = {
            key: value for key, value in self.scheduling.items() if value is not None
        }
        statuses: dict[str, list[dict[str, str]]] = {}
        for container in self.containers:
            entries = spec.setdefault(container.group, [])
            assert isinstance(entries, list)
            entries.append({"name": container.name, "image": container.image})
            if container.image_id:
                key = (
                    "initContainerStatuses"
                    if container.group == "initContainers"
                    else ("containerStatuses")
                )
                statuses.setdefault(key, []).append(
                    {"name": container.name, "imageID": container.image_id}
                )
        metadata: dict[str, object] = {"name": self.name}
        if self.namespace:
            metadata["namespace"] = self.namespace
        return {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": metadata,
            "spec": spec,
            "status": statuses,
        }


@dataclass(frozen=True)
class ObjectInfo:
    """Any other object of the dump: who it is and who owns it (for the owner chain)."""

    api_version: str
    kind: str
    namespace: str
    name: str
    uid: str
    owners: tuple[OwnerRef, ...]

    @property
    def group(self) -> str:
        return _group(self.api_version)


@dataclass(frozen=True)
class Event:
    """An event that may tell of an architecture failure, of either API group: core/v1
    (``involvedObject``, ``message``, ``count``) or events.k8s.io/v1 (``regarding``, ``note``,
    ``series.count``/``deprecatedCount``)."""

    api_version: str
    namespace: str
    object_kind: str
    object_name: str
    object_uid: str
    reason: str
    message: str
    type: str = ""
    count: int = 1
    reporter: str = ""
    source: str = ""

    @property
    def where(self) -> str:
        by = f" from {self.reporter}" if self.reporter else ""
        times = f", x{self.count}" if self.count > 1 else ""
        api = "core/v1" if self.api_version == "v1" else self.api_version
        return f"event {self.type or 'Normal'} {self.reason}{by} ({api}{times})"


@dataclass
class ClusterState:
    """What triage keeps of the dumps: bounded by what it is asked to keep (``max_kept``)."""

    pods: dict[tuple[str, str], Pod] = field(default_factory=dict)
    objects: dict[tuple[str, str, str, str], ObjectInfo] = field(default_factory=dict)
    by_uid: dict[str, ObjectInfo] = field(default_factory=dict)
    events: list[Event] = field(default_factory=list)
    nodes: dict[str, Node] = field(default_factory=dict)
    seen: int = 0
    _events_by_pod: dict[tuple[str, str], list[Event]] | None = field(default=None, repr=False)
    _indexed: int = field(default=0, repr=False)

    @property
    def kept(self) -> int:
        return len(self.pods) + len(self.objects) + len(self.events) + len(self.nodes)

    def add(self, item: Mapping[str, object], source: str = "") -> bool:
        """Keep what triage needs of one object; True when something was kept. Raises
        :class:`DumpShapeError` for a field of the wrong type."""
        self.seen += 1
        api_version = _text(item.get("apiVersion"))
        kind = _text(item.get("kind"))
        group = _group(api_version)
        if kind == "Pod" and group == "":
            pod = pod_of(item, source)
            if pod is None:
                return False
            self.pods[(pod.namespace, pod.name)] = pod
            return True
        if kind == "Event" and group in ("", "events.k8s.io"):
            event = event_of(item, source)
            if event is None:
                return False
            self.events.append(event)
            return True
        if kind == "Node" and group == "":
            node = node_of(item)
            self.nodes[node.name] = node
            return True
        if kind.endswith("List") or kind in _NOT_OWNERS:
            return False
        info = object_of(item)
        if info is None:
            return False
        self.objects[(info.group, info.kind, info.namespace, info.name)] = info
        if info.uid:
            self.by_uid[info.uid] = info
        return True

    def events_of(self, pod: Pod) -> list[Event]:
        """The events about ``pod`` (by uid, or by namespace and name); one event read through
        both API groups (two dumps) counted once."""
        if self._events_by_pod is None or self._indexed != len(self.events):
            index: dict[tuple[str, str], list[Event]] = {}
            for event in self.events:
                if event.object_kind == "Pod":
                    index.setdefault((event.namespace, event.object_name), []).append(event)
                    if event.object_uid:
                        index.setdefault(("", event.object_uid), []).append(event)
            self._events_by_pod, self._indexed = index, len(self.events)
        found: dict[tuple[str, str], Event] = {}
        for event in [
            *self._events_by_pod.get(("", pod.uid) if pod.uid else ("", ""), []),
            *self._events_by_pod.get((pod.namespace, pod.name), []),
        ]:
            if not event.object_uid or not pod.uid or event.object_uid == pod.uid:
                found.setdefault((event.reason, event.message), event)
        return list(found.values())


#: Kinds that own no pod: not kept for the owner chain.
_NOT_OWNERS = frozenset(
    {
        "ConfigMap",
        "Secret",
        "Service",
        "Endpoints",
        "EndpointSlice",
        "ServiceAccount",
        "Role",
        "RoleBinding",
        "ClusterRole",
        "ClusterRoleBinding",
        "PersistentVolume",
        "PersistentVolumeClaim",
        "ControllerRevision",
        "Lease",
        "Namespace",
        "CustomResourceDefinition",
    }
)


def _group(api_version: str) -> str:
    return api_version.rpartition("/")[0] if "/" in api_version else ""


def _text(value: object) -> str:
    return value if isinstance(value, str) else ""


def _shape(value: object, expected: type, what: str) -> object:
    """``value`` when it is of the ``expected`` type or absent (None), else a DumpShapeError."""
    if value is None or isinstance(value, expected):
        return value
    names: dict[type, str] = {dict: "an object", list: "a list", str: "a string"}
    raise DumpShapeError(f"{what} is not {names.get(expected, expected.__name__)}")


def _mapping(value: object, what: str) -> Mapping[str, object]:
    checked = _shape(value, dict, what)
    return checked if isinstance(checked, dict) else {}


def _sequence(value: object, what: str) -> list[object]:
    checked = _shape(value, list, what)
    return checked if isinstance(checked, list) else []


def _string(value: object, what: str) -> str:
    checked = _shape(value, str, what)
    return checked if isinstance(checked, str) else ""


def _clip(text: str) -> str:
    text = text.strip()
    return text if len(text) <= MAX_MESSAGE else text[: MAX_MESSAGE - 1] + "…"


def _metadata(item: Mapping[str, object], kind: str) -> tuple[str, str, str, Mapping[str, object]]:
    metadata = _mapping(item.get("metadata"), f"{kind}: metadata")
    name = _string(metadata.get("name"), f"{kind}: metadata.name")
    where = f"{kind} {name}" if name else kind
    namespace = _string(metadata.get("namespace"), f"{where}: metadata.namespace")
    uid = _string(metadata.get("uid"), f"{where}: metadata.uid")
    return name, namespace, uid, metadata


def _owners(metadata: Mapping[str, object], where: str) -> tuple[OwnerRef, ...]:
    owners: list[OwnerRef] = []
    for position, entry in enumerate(
        _sequence(metadata.get("ownerReferences"), f"{where}: metadata.ownerReferences")
    ):
        path = f"{where}: metadata.ownerReferences[{position}]"
        reference = _mapping(entry, path)
        owners.append(
            OwnerRef(
                _string(reference.get("apiVersion"), f"{path}.apiVersion"),
                _string(reference.get("kind"), f"{path}.kind"),
                _string(reference.get("name"), f"{path}.name"),
                _string(reference.get("uid"), f"{path}.uid"),
                reference.get("controller") is True,
            )
        )
    return tuple(owners)


def object_of(item: Mapping[str, object]) -> ObjectInfo | None:
    kind = _text(item.get("kind"))
    name, namespace, uid, metadata = _metadata(item, kind)
    if not name:
        return None
    return ObjectInfo(
        _text(item.get("apiVersion")),
        kind,
        namespace,
        name,
        uid,
        _owners(metadata, f"{kind} {name}"),
    )


def node_of(item: Mapping[str, object]) -> Node:
    name, _, _, metadata = _metadata(item, "Node")
    where = f"Node {name}"
    labels = {
        str(key): str(value)
        for key, value in _mapping(metadata.get("labels"), f"{where}: metadata.labels").items()
        if isinstance(value, str)
    }
    spec = _mapping(item.get("spec"), f"{where}: spec")
    taints = []
    for position, entry in enumerate(_sequence(spec.get("taints"), f"{where}: spec.taints")):
        path = f"{where}: spec.taints[{position}]"
        taint = _mapping(entry, path)
        taints.append(
            Taint(
                _string(taint.get("key"), f"{path}.key"),
                _string(taint.get("value"), f"{path}.value"),
                _string(taint.get("effect"), f"{path}.effect"),
            )
        )
    return Node(name, labels, tuple(taints), spec.get("unschedulable") is True)


_STATUS_KEYS = (("initContainers", "initContainerStatuses"), ("containers", "containerStatuses"))


def pod_of(item: Mapping[str, object], source: str = "") -> Pod | None:
    """The pod as triage keeps it, or None when it shows nothing triage could use: a pod
    that runs, whose containers never failed, and that is not labelled by the operator's
    monitor (events that come later name pods by uid and name; those not kept are running)."""
    name, namespace, uid, metadata = _metadata(item, "Pod")
    where = f"Pod {namespace}/{name}"
    labels = _mapping(metadata.get("labels"), f"{where}: metadata.labels")
    spec = _mapping(item.get("spec"), f"{where}: spec")
    status = _mapping(item.get("status"), f"{where}: status")
    phase = _string(status.get("phase"), f"{where}: status.phase")
    containers: list[ContainerState] = []
    for group, status_key in _STATUS_KEYS:
        statuses: dict[str, tuple[str, str, tuple[tuple[str, str], ...]]] = {}
        for position, entry in enumerate(
            _sequence(status.get(status_key), f"{where}: status.{status_key}")
        ):
            path = f"status.{status_key}[{position}]"
            container_status = _mapping(entry, f"{where}: {path}")
            states: list[tuple[str, str]] = []
            for state_key in ("state", "lastState"):
                state = _mapping(container_status.get(state_key), f"{where}: {path}.{state_key}")
                for phase_key in ("waiting", "terminated"):
                    detail = _mapping(
                        state.get(phase_key), f"{where}: {path}.{state_key}.{phase_key}"
                    )
                    reason = _text(detail.get("reason"))
                    message = _text(detail.get("message"))
                    # A container that completed, or is still creating, says nothing.
                    if (reason or message) and reason not in ("Completed", "ContainerCreating"):
                        text = f"{reason}: {message}" if reason and message else reason or message
                        states.append((f"{path}.{state_key}.{phase_key}", _clip(text)))
            statuses[_text(container_status.get("name"))] = (
                _text(container_status.get("image")),
                _text(container_status.get("imageID")),
                tuple(states),
            )
        for position, entry in enumerate(_sequence(spec.get(group), f"{where}: spec.{group}")):
            container = _mapping(entry, f"{where}: spec.{group}[{position}]")
            container_name = _string(
                container.get("name"), f"{where}: spec.{group}[{position}].name"
            )
            image = _string(container.get("image"), f"{where}: spec.{group}[{position}].image")
            status_image, image_id, states_of = statuses.get(container_name, ("", "", ()))
            containers.append(
                ContainerState(group, container_name, image, status_image, image_id, states_of)
            )
    conditions: list[tuple[str, str]] = []
    for position, entry in enumerate(
        _sequence(status.get("conditions"), f"{where}: status.conditions")
    ):
        condition = _mapping(entry, f"{where}: status.conditions[{position}]")
        if _text(condition.get("type")) == "PodScheduled" and _text(condition.get("status")) == (
            "False"
        ):
            text = _text(condition.get("message")) or _text(condition.get("reason"))
            if text:
                conditions.append((f"status.conditions[{position}] PodScheduled", _clip(text)))
    kept_labels = {key: str(labels[key]) for key in _POD_LABELS if isinstance(labels.get(key), str)}
    pod = Pod(
        namespace,
        name,
        uid,
        kept_labels,
        _owners(metadata, where),
        _string(spec.get("nodeName"), f"{where}: spec.nodeName"),
        tuple(containers),
        {
            key: spec[key]
            for key in ("nodeSelector", "affinity", "tolerations")
            if spec.get(key) is not None
        },
        phase,
        tuple(conditions),
        source,
    )
    interesting = (
        phase not in ("Running", "Succeeded")
        or kept_labels.get(EXEC_FORMAT_LABEL) == "true"
        or any(container.states for container in containers)
    )
    return pod if interesting else None


def event_of(item: Mapping[str, object], source: str = "") -> Event | None:
    """The event when its reason or message may tell of an architecture failure, else None
    (most of a cluster's events do not, and are not kept)."""
    api_version = _text(item.get("apiVersion"))
    name, namespace, _, _ = _metadata(item, "Event")
    where = f"Event {namespace}/{name}"
    new_api = _group(api_version) == "events.k8s.io"
    reason = _string(item.get("reason"), f"{where}: reason")
    message = _string(item.get("note" if new_api else "message"), f"{where}: message")
    if not _relevant(reason, message):
        return None
    regarding = _mapping(
        item.get("regarding" if new_api else "involvedObject"),
        f"{where}: {'regarding' if new_api else 'involvedObject'}",
    )
    if new_api:
        series = _mapping(item.get("series"), f"{where}: series")
        count = series.get("count") or item.get("deprecatedCount") or 1
        reporter = _text(item.get("reportingController"))
    else:
        count = item.get("count") or 1
        origin = _mapping(item.get("source"), f"{where}: source")
        reporter = _text(origin.get("component")) or _text(item.get("reportingComponent"))
    return Event(
        api_version,
        _text(regarding.get("namespace")) or namespace,
        _text(regarding.get("kind")),
        _text(regarding.get("name")),
        _text(regarding.get("uid")),
        reason,
        _clip(message),
        _text(item.get("type")),
        count if isinstance(count, int) and not isinstance(count, bool) else 1,
        reporter,
        source,
    )


def _relevant(reason: str, message: str) -> bool:
    return (
        reason in (EXEC_FORMAT_REASON, "FailedScheduling", "NotTriggerScaleUp")
        or EXEC_FORMAT.search(message) is not None
        or IMAGE_PLATFORM.search(message) is not None
    )
