"""Where pod specs live in each kind, and which images they run. Pure: plain data in and out.

A table maps (API group, kind) to the paths of its pod specs; ``kind: List`` items are walked.
Argo Workflows are the exception to "one pod spec per workload": each template runs as its own
pod, with its own ``tolerations``/``affinity``/``nodeSelector`` on the template itself.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

from kmultiarch.core.digest import is_digest
from kmultiarch.core.findings import format_field_path

Path = tuple[str | int, ...]

SKIP_ANNOTATION = "kmultiarch.dev/skip"
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


def may_hold_pods(
    api_version: str,
    kind: str,
    extra_paths: Mapping[tuple[str, str], tuple[Path, ...]] | None = None,
) -> bool:
    """False when no resource of this type can hold a pod spec kmultiarch handles (the built-in
    table, or ``extra_paths`` from the policy's ``podSpecs``): a reader need not even compose
    such a document. Lists (``kind: List``, ``PodList``...) may."""
    group = api_version.rpartition("/")[0] if "/" in api_version else ""
    return (
        (group, kind) in POD_SPEC_PATHS
        or (group, kind) in WORKFLOW_SPEC_PATHS
        or (extra_paths is not None and (group, kind) in extra_paths)
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
    path: Path  # from the document root to the container mapping
    name: str
    image: str
    #: The digest a running Pod's status says the container runs (``imageID``), if any.
    running_digest: str | None = None


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

    @property
    def display_name(self) -> str:
        namespace = f"{self.namespace}/" if self.namespace else ""
        return f"{self.kind} {namespace}{self.name}"


def find_workloads(
    document: object, extra_paths: Mapping[tuple[str, str], tuple[Path, ...]] | None = None
) -> list[Workload]:
    """Every workload in a document (a resource, or the items of a ``kind: List``).
    ``extra_paths`` adds pod spec paths to the built-in table (the policy's ``podSpecs``)."""
    return list(_walk(document, (), extra_paths or {}))


def _walk(
    resource: object, path: Path, extra_paths: Mapping[tuple[str, str], tuple[Path, ...]]
) -> Iterator[Workload]:
    if not isinstance(resource, Mapping):
        return
    kind = resource.get("kind")
    api_version = resource.get("apiVersion")
    if not isinstance(kind, str) or not isinstance(api_version, str):
        return
    if kind == "List" or (kind.endswith("List") and isinstance(resource.get("items"), list)):
        for position, item in enumerate(_list(resource.get("items"))):
            yield from _walk(item, (*path, "items", position), extra_paths)
        return
    group = api_version.rpartition("/")[0] if "/" in api_version else ""
    targets: list[PodTarget] = []
    spec_paths = POD_SPEC_PATHS.get((group, kind), ()) + extra_paths.get((group, kind), ())
    for spec_path in dict.fromkeys(spec_paths):
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
                )
            )
    workflow_path = WORKFLOW_SPEC_PATHS.get((group, kind))
    if workflow_path is not None:
        targets.extend(_workflow_targets(resource, workflow_path, path))
    if not targets:
        return
    metadata = resource.get("metadata")
    metadata = metadata if isinstance(metadata, Mapping) else {}
    yield Workload(
        path,
        api_version,
        kind,
        _string(metadata.get("name")),
        _string(metadata.get("namespace")),
        _annotations(resource),
        tuple(targets),
    )


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


def is_skipped(workload: Workload, target: PodTarget) -> bool:
    """The opt-out annotation, on the workload or on its pod template."""
    return any(
        str(annotations.get(SKIP_ANNOTATION, "")).lower() == "true"
        for annotations in (workload.annotations, target.annotations)
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
