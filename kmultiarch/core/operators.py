"""Pods that operators make from custom resources: where their scheduling fields are, and which
images those pods run. Data, not code: one table (:data:`CATALOGUE`), each entry citing the CRD
field it relies on; ``spec.podSpecs`` in a policy says the same for any kind.

A custom resource's pods are placed by an object the operator copies ``affinity``,
``tolerations`` and ``nodeSelector`` from (a :class:`Placement`): a full pod spec (ECK's
``podTemplate.spec``, KubeRay's ``template.spec``), or an object of its own shape (a Prometheus
``spec``, Strimzi's ``template.pod``, Spark's ``driver``; Rook's ``placement.all``, whose
``nodeAffinity`` is bare). Its images are where the resource names them (``spec.image``; a pod
spec's containers), or the operator's choice (by version) when it names none.

Pointers are JSON pointers whose ``*`` matches every list item or map value; a ``*`` in an
image pointer is independent of one in its placement's path, except where the image pointer
starts with the placement's path pattern (``/spec/pools/*`` with ``/spec/pools/*/image``: each
pool with its own image). Pure: plain data in and out.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from kmultiarch.core.patch import PatchOperation, apply_patch, pointer_tokens

__all__ = [
    "CATALOGUE",
    "Condition",
    "MAX_POINTER_TOKENS",
    "ImageSource",
    "Inheritance",
    "MERGES",
    "Merge",
    "OperatorKind",
    "Placement",
    "Pointer",
    "api_group",
    "catalogue_by_kind",
    "blocked_by_position",
    "by_position",
    "effective_fields",
    "expand",
    "holds",
    "image_lookup",
    "image_matches",
    "in_shape",
    "materialized",
    "placement_problems",
    "resolved_default",
    "resolved_object",
    "scheduling_view",
    "type_name",
    "walk",
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
    #: sidecar, when ``spec.thanos`` is set).
    when: tuple[Condition, ...] = ()
    #: What an image only the operator knows is (no pointer, no template: KubeVirt's
    #: virt-launcher, an Argo Events Sensor's): its pods are the operator's choice until a
    #: policy declares the image (``defaultImages``).
    operator_only: str = ""


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

    def merge_of(self, field: str) -> Merge | None:
        return next((merge for name, merge in self.fields if name == field), None)


@dataclass(frozen=True)
class Placement:
    """An object of the resource that the pods it makes are placed by.

    ``path``: the object holding ``affinity``/``tolerations``/``nodeSelector`` (``*`` for each
    item); ``creates``: how many of its last tokens kmultiarch may create when they are missing
    (Strimzi's ``template.pod`` under an existing ``spec.kafka``); ``pod_spec``: the object is a
    PodSpec (its containers' images are the pods' images too); ``shape``: ``node-affinity`` for
    an object with a bare ``nodeAffinity`` (Rook) instead of ``affinity.nodeAffinity``."""

    path: Pointer
    images: tuple[ImageSource, ...] = ()
    creates: int = 0
    pod_spec: bool = False
    shape: Literal["affinity", "node-affinity"] = "affinity"
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
    #: cost the user that default. String values may be templates (``{/metadata/name}``).
    default_affinity: Mapping[str, object] | None = None
    #: When the placement's last ``creates`` tokens are missing, the operator places the pods
    #: by another resource's object, written by that one's placement (a Strimzi pool without a
    #: pod template takes its Kafka's): the pods are judged here, nothing is created.
    judged_only_when_missing: bool = False

    def exists_in(self, resource: Mapping[str, object]) -> bool:
        """Whether the operator makes pods from this placement for ``resource``."""
        return all(holds(resource, c) for c in self.when) and not any(
            holds(resource, c) for c in self.unless
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


def _p(text: str) -> Pointer:
    """A JSON pointer's tokens, ``~1`` and ``~0`` unescaped as everywhere else (RFC 6901)."""
    return pointer_tokens(text)


def placement_problems(placement: Placement) -> list[tuple[str, str]]:
    """What makes a placement unusable, as (key, message): the same checks for a built-in
    entry and a policy's (``spec.podSpecs``)."""
    problems: list[tuple[str, str]] = []
    pointers = [("path", placement.path)]
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


def _image(*pointers: str, required: bool = True) -> ImageSource:
    return ImageSource(tuple(_p(pointer) for pointer in pointers), required)


def _extra(pointer: str) -> ImageSource:
    return _image(pointer, required=False)


def _pod_template_kind(
    group: str,
    kind: str,
    path: str,
    cites: str,
    *templates: str,
    creates: int = 2,
) -> OperatorKind:
    """An ECK-style kind: a pod template whose spec the operator merges into its own; the main
    container runs spec.image, else the image ECK computes for spec.version (``templates``)."""
    monitored = kind in ("Elasticsearch", "Kibana", "Logstash")
    default_affinity = _ES_DEFAULT_AFFINITY if kind == "Elasticsearch" else None
    return OperatorKind(
        group,
        kind,
        (
            Placement(
                _p(path),
                (
                    ImageSource((_p("/spec/image"),), templates=templates),
                    *(_ECK_MONITORING_SIDECARS if monitored else ()),
                ),
                creates=creates,
                pod_spec=True,
                cites=_ECK_IMAGE_CITE
                + (_ECK_MONITORING_CITE if monitored else "")
                + (_ES_AFFINITY_CITE if default_affinity else "")
                if templates
                else "",
                default_affinity=default_affinity,
            ),
        ),
        cites=cites,
        adds="the main container (image from spec.image, else the operator's default for "
        "spec.version)",
    )


_ECK_IMAGE_CITE = (
    "elastic/cloud-on-k8s pkg/controller/common/container/container.go ImageRepository "
    "(docker.elastic.co/<image><suffix>:<version>; the Maps server below 8.16.0 with -ubi, "
    "-ubi8 below 7.17.16 and 8.12.0 (getUBISuffix); AgentImageFor: beats/elastic-agent "
    "below 9.0.0; getPackageRegistryImage: lite-<version>); an operator started with "
    "--container-registry, --container-repository, --container-suffix or --ubi-only runs "
    "others: declare them as defaultImages"
)


#: Elasticsearch's pods prefer nodes without another pod of the cluster, unless the pod
#: template has an affinity of its own.
_ES_DEFAULT_AFFINITY: Mapping[str, object] = {
    "podAntiAffinity": {
        "preferredDuringSchedulingIgnoredDuringExecution": [
            {
                "weight": 100,
                "podAffinityTerm": {
                    "labelSelector": {
                        "matchLabels": {
                            "elasticsearch.k8s.elastic.co/cluster-name": "{/metadata/name}"
                        }
                    },
                    "topologyKey": "kubernetes.io/hostname",
                },
            }
        ]
    }
}
_ES_AFFINITY_CITE = (
    "; default affinity: pkg/controller/elasticsearch/nodespec/defaults.go DefaultAffinity "
    "(preferred pod anti-affinity by cluster name on kubernetes.io/hostname), applied by "
    "podtemplate.go WithAffinity only when the template has none"
)
#: Stack monitoring: a Metricbeat and a Filebeat sidecar of the resource's version when its
#: metrics or logs are shipped to an Elasticsearch.
_ECK_MONITORING_SIDECARS = tuple(
    ImageSource(
        (),
        templates=(f"docker.elastic.co/beats/{beat}:{{/spec/version}}",),
        when=((_p(f"/spec/monitoring/{signal}/elasticsearchRefs"), ()),),
        operator_only=f"the {beat} sidecar",
    )
    for beat, signal in (("metricbeat", "metrics"), ("filebeat", "logs"))
)
_ECK_MONITORING_CITE = (
    "; stack monitoring: pkg/controller/common/stackmon/sidecar.go NewMetricBeatSidecar, "
    "NewFileBeatSidecar (ImageRepository(MetricbeatImage or FilebeatImage, version)), added "
    "when spec.monitoring.{metrics,logs}.elasticsearchRefs are set (elasticsearch/stackmon, "
    "kibana/stackmon, logstash/stackmon)"
)


def _build_image_path(
    spec: str, default_base: str, version: str, deprecated: bool
) -> tuple[str, ...]:
    """prometheus-operator pkg/operator/image.go BuildImagePath as templates: the base image
    (``baseImage``, else the operator's) with ``sha``, else ``tag``, else the version."""
    bases = ("{" + spec + "/baseImage}", default_base) if deprecated else (default_base,)
    templates: list[str] = []
    if deprecated:
        templates += [base + "@sha256:{" + spec + "/sha}" for base in bases]
        templates += [base + ":{" + spec + "/tag}" for base in bases]
    templates += [base + ":" + version for base in bases]
    return tuple(templates)


_MONITORING_EXTRAS = (_extra("/spec/containers/*/image"), _extra("/spec/initContainers/*/image"))


def _monitoring(kind: str, *images: ImageSource, cites: str) -> OperatorKind:
    return OperatorKind(
        "monitoring.coreos.com",
        kind,
        (Placement(_p("/spec"), (*images, *_MONITORING_EXTRAS), cites=cites),),
        cites=f"{kind}.spec.{{affinity,tolerations,nodeSelector,image,containers,initContainers}}",
        adds="the config-reloader sidecar (the operator's --prometheus-config-reloader image)",
    )


_PROMETHEUS_OPERATOR = "prometheus-operator/prometheus-operator "
#: The Prometheus main image: spec.image, else BuildImagePath(baseImage or quay.io/prometheus/
#: prometheus, "v" + the semver of spec.version, tag, sha).
_PROMETHEUS_IMAGE = ImageSource(
    (_p("/spec/image"),),
    templates=_build_image_path(
        "/spec", "quay.io/prometheus/prometheus", "{/spec/version|v}", True
    ),
)
#: The Thanos sidecar spec.thanos adds: thanos.image, else BuildImagePath(thanos.baseImage or
#: quay.io/thanos/thanos, thanos.version (the operator's default when unset), tag, sha).
_THANOS_SIDECAR = ImageSource(
    (_p("/spec/thanos/image"),),
    templates=_build_image_path(
        "/spec/thanos", "quay.io/thanos/thanos", "{/spec/thanos/version}", True
    ),
    when=((_p("/spec/thanos"), ()),),
)


def _kubeflow(kind: str, replicas: str) -> OperatorKind:
    return OperatorKind(
        "kubeflow.org",
        kind,
        (Placement(_p(f"/spec/{replicas}/*/template/spec"), pod_spec=True),),
        cites=f"{kind}.spec.{replicas}.<role>.template (a PodTemplateSpec)",
    )


def _ray(kind: str, cluster: str) -> OperatorKind:
    return OperatorKind(
        "ray.io",
        kind,
        (
            Placement(_p(f"{cluster}/headGroupSpec/template/spec"), pod_spec=True),
            Placement(_p(f"{cluster}/workerGroupSpecs/*/template/spec"), pod_spec=True),
        ),
        cites=f"{kind}{cluster.replace('/', '.')}.headGroupSpec.template, "
        "workerGroupSpecs[].template (PodTemplateSpecs)",
    )


_JAEGER_COMPONENTS = (
    "allInOne",
    "collector",
    "query",
    "ingester",
    "agent",
    "storage/esIndexCleaner",
    "storage/esRollover",
    "storage/dependencies",
)
#: Each component's image, named or the operator's (its flags: --jaeger-agent-image...): the
#: common placement holds for every one, so is decided on all.
_JAEGER_IMAGES = tuple(
    _image(f"/spec/{component}/image", required=False) for component in _JAEGER_COMPONENTS
)

_FLINK_MERGE = (
    "apache/flink-kubernetes-operator flink-kubernetes-operator/src/main/java/org/apache/flink/"
    "kubernetes/operator/config/FlinkConfigBuilder.java (a role's pod is mergePodTemplates("
    "spec.podTemplate, spec.<role>.podTemplate)); utils/FlinkUtils.java mergePodTemplates, "
    "mergeArray (lists merged by position unless kubernetes.operator.pod-template."
    "merge-arrays-by-name): the common template's containers run in every role's pods, and "
    "each role's in the pods the common template places"
)


def _flink_containers(*roles: str) -> tuple[ImageSource, ...]:
    """The containers of the other pod templates merged with this one (``""``: the common)."""
    return tuple(
        _extra(f"/spec{'/' + role if role else ''}/podTemplate/spec/{group}/*/image")
        for role in roles
        for group in ("containers", "initContainers")
    )


def _by_reference(pointer: str, what: str) -> ImageSource:
    """Pods whose images a reference gives (a Task by taskRef, a StepAction by a step's ref),
    resolved by the controller at run time: not in the stream, so the pods sharing the
    placement cannot be decided on the images that are (tektoncd/pipeline pkg/reconciler/
    taskrun/resources/taskref.go, stepaction resolution)."""
    return ImageSource((), when=((_p(pointer), ()),), operator_only=what)


_TEKTON_PIPELINE_IMAGES = (
    _extra("/spec/pipelineSpec/tasks/*/taskSpec/steps/*/image"),
    _extra("/spec/pipelineSpec/tasks/*/taskSpec/sidecars/*/image"),
    _extra("/spec/pipelineSpec/finally/*/taskSpec/steps/*/image"),
    _extra("/spec/pipelineSpec/finally/*/taskSpec/sidecars/*/image"),
    *(
        _by_reference(f"/spec/pipelineSpec/{part}/*/{ref}", f"{part}[].{ref}")
        for part in ("tasks", "finally")
        for ref in ("taskRef", "pipelineRef", "pipelineSpec")
    ),
    *(
        _by_reference(f"/spec/pipelineSpec/{part}/*/taskSpec/steps/*/ref", f"{part}[] steps' ref")
        for part in ("tasks", "finally")
    ),
)


def _tekton_pipeline_run(
    version: str, template: str, task_template: str, creates: int
) -> tuple[Placement, Placement]:
    """A PipelineRun's pod template for every task's pod, and a task's own (taskRunSpecs[]),
    whose nodeSelector, tolerations and affinity replace the run's when set. The images of
    every task are judged for both (a task's own template is decided on them too: safe, if
    stricter than its own images need)."""
    source = (
        f"tektoncd/pipeline pkg/apis/pipeline/{version}/pipelinerun_types.go "
        f"PipelineRunSpec ({template}), GetTaskRunSpec: pod.MergePodTemplateWithDefault("
        f"taskRunSpecs[].{task_template}, the run's); pkg/apis/pipeline/pod/template.go "
        "MergePodTemplateWithDefault: a field of the task's template replaces the run's when "
        "not nil"
    )
    return (
        Placement(
            _p(template),
            _TEKTON_PIPELINE_IMAGES,
            creates=creates,
            versions=(version,),
            cites=source,
        ),
        Placement(
            _p(f"/spec/taskRunSpecs/*/{task_template}"),
            _TEKTON_PIPELINE_IMAGES,
            versions=(version,),
            inherits=Inheritance(
                _p(template),
                (("nodeSelector", "replace"), ("tolerations", "replace"), ("affinity", "replace")),
            ),
            cites=source,
        ),
    )


def _strimzi_pod(component: str, *images: ImageSource) -> Placement:
    return Placement(_p(f"/spec/{component}/template/pod"), (*images,), creates=2)


#: ECK kinds: pod template, and the image the operator runs for spec.version (ECK's
#: container registry and repositories by default; an operator configured with another
#: registry serves the same images).
_MAPS = "docker.elastic.co/elastic-maps-service/elastic-maps-server"
_ECK: tuple[tuple[str, str, str, tuple[str, ...]], ...] = (
    (
        "elasticsearch.k8s.elastic.co",
        "Elasticsearch",
        "/spec/nodeSets/*/podTemplate/spec",
        ("docker.elastic.co/elasticsearch/elasticsearch:{/spec/version}",),
    ),
    (
        "kibana.k8s.elastic.co",
        "Kibana",
        "/spec/podTemplate/spec",
        ("docker.elastic.co/kibana/kibana:{/spec/version}",),
    ),
    (
        "apm.k8s.elastic.co",
        "ApmServer",
        "/spec/podTemplate/spec",
        ("docker.elastic.co/apm/apm-server:{/spec/version}",),
    ),
    (
        "enterprisesearch.k8s.elastic.co",
        "EnterpriseSearch",
        "/spec/podTemplate/spec",
        ("docker.elastic.co/enterprise-search/enterprise-search:{/spec/version}",),
    ),
    (
        "maps.k8s.elastic.co",
        "ElasticMapsServer",
        "/spec/podTemplate/spec",
        (
            _MAPS + ":{/spec/version|>=8.16.0}",
            _MAPS + "-ubi:{/spec/version|>=8.12.0,<8.16.0}",
            _MAPS + "-ubi8:{/spec/version|>=8.0.0,<8.12.0}",
            _MAPS + "-ubi:{/spec/version|>=7.17.16,<8.0.0}",
            _MAPS + "-ubi8:{/spec/version|<7.17.16}",
        ),
    ),
    (
        "logstash.k8s.elastic.co",
        "Logstash",
        "/spec/podTemplate/spec",
        ("docker.elastic.co/logstash/logstash:{/spec/version}",),
    ),
    (
        "packageregistry.k8s.elastic.co",
        "PackageRegistry",
        "/spec/podTemplate/spec",
        ("docker.elastic.co/package-registry/distribution:lite-{/spec/version}",),
    ),
)

#: The built-in catalogue: (group, kind) -> how its operator places its pods.
CATALOGUE: tuple[OperatorKind, ...] = (
    # Prometheus Operator: the pod follows the resource's spec.
    _monitoring(
        "Prometheus",
        _PROMETHEUS_IMAGE,
        _THANOS_SIDECAR,
        cites=_PROMETHEUS_OPERATOR + "pkg/prometheus/server/statefulset.go makeStatefulSetSpec "
        '(BuildImagePath(spec.image, spec.baseImage, "v"+version, spec.tag, spec.sha)), '
        "createThanosContainer (spec.thanos: the Thanos sidecar); pkg/operator/image.go "
        "BuildImagePath (sha before tag before version)",
    ),
    _monitoring(
        "Alertmanager",
        ImageSource(
            (_p("/spec/image"),),
            templates=_build_image_path(
                "/spec", "quay.io/prometheus/alertmanager", "{/spec/version}", True
            ),
        ),
        cites=_PROMETHEUS_OPERATOR + "pkg/alertmanager/statefulset.go makeStatefulSetSpec "
        "(BuildImagePath(spec.image, spec.baseImage, spec.version, spec.tag, spec.sha))",
    ),
    _monitoring(
        "ThanosRuler",
        ImageSource(
            (_p("/spec/image"),),
            templates=_build_image_path("/spec", "quay.io/thanos/thanos", "{/spec/version}", False),
        ),
        cites=_PROMETHEUS_OPERATOR + "pkg/thanos/statefulset.go makeStatefulSetSpec "
        "(BuildImagePath(spec.image, the operator's base, spec.version, '', ''))",
    ),
    _monitoring(
        "PrometheusAgent",
        ImageSource(
            (_p("/spec/image"),),
            templates=_build_image_path(
                "/spec", "quay.io/prometheus/prometheus", "{/spec/version|v}", False
            ),
        ),
        cites=_PROMETHEUS_OPERATOR + "pkg/prometheus/agent/statefulset.go "
        '(BuildImagePathForAgent(spec.image, the operator\'s base, "v"+version))',
    ),
    # ECK: a pod template merged into the operator's.
    *(
        _pod_template_kind(
            group,
            kind,
            path,
            f"{kind}.{path[1:].replace('/', '.')}, spec.image, spec.version",
            *templates,
        )
        for group, kind, path, templates in _ECK
    ),
    *(
        _pod_template_kind(
            group,
            kind,
            f"/spec/{workload}/podTemplate/spec",
            f"{kind}.spec.{workload}.podTemplate, spec.image, spec.version",
            *templates,
        )
        for group, kind, templates in (
            (
                "beat.k8s.elastic.co",
                "Beat",
                ("docker.elastic.co/beats/{/spec/type}:{/spec/version}",),
            ),
            (
                "agent.k8s.elastic.co",
                "Agent",
                (
                    "docker.elastic.co/beats/elastic-agent:{/spec/version|<9.0.0}",
                    "docker.elastic.co/elastic-agent/elastic-agent:{/spec/version|>=9.0.0}",
                ),
            ),
        )
        for workload in ("daemonSet", "deployment", "statefulSet")
    ),
    # Strimzi: template.pod of each component (a pool's template overrides the Kafka's; the
    # images of a pool are those of its Kafka, named by the strimzi.io/cluster label).
    OperatorKind(
        "kafka.strimzi.io",
        "Kafka",
        (
            _strimzi_pod("kafka", _image("/spec/kafka/image")),
            _strimzi_pod("zookeeper", _image("/spec/zookeeper/image")),
            _strimzi_pod(
                "entityOperator",
                _image("/spec/entityOperator/topicOperator/image", required=False),
                _image("/spec/entityOperator/userOperator/image", required=False),
            ),
            _strimzi_pod("cruiseControl", _image("/spec/cruiseControl/image")),
            _strimzi_pod("kafkaExporter", _image("/spec/kafkaExporter/image")),
        ),
        cites="Kafka.spec.{kafka,zookeeper,entityOperator,cruiseControl,kafkaExporter}."
        "template.pod.{affinity,tolerations}; images spec.<component>.image",
        adds="the images of the Kafka version (spec.kafka.version) when no image is named",
    ),
    OperatorKind(
        "kafka.strimzi.io",
        "KafkaNodePool",
        (
            Placement(
                _p("/spec/template/pod"),
                (
                    ImageSource(
                        (_p("/spec/kafka/image"),),
                        related=("kafka.strimzi.io", "Kafka", "strimzi.io/cluster"),
                    ),
                ),
                # Never created: a pool without its own pod template takes the Kafka's
                # spec.kafka.template.pod, which one on the pool would replace whole (its
                # volumes, security context...); that one is written instead.
                creates=2,
                judged_only_when_missing=True,
                cites="strimzi/strimzi-kafka-operator cluster-operator/src/main/java/io/"
                "strimzi/operator/cluster/model/nodepools/KafkaPool.java fromCrd "
                "(templatePod = spec.template.pod of the pool, replacing the Kafka's "
                "spec.kafka.template.pod when set)",
            ),
        ),
        cites="KafkaNodePool.spec.template.pod.{affinity,tolerations}; images of the Kafka "
        "its strimzi.io/cluster label names (spec.kafka.image)",
    ),
    *(
        OperatorKind(
            "kafka.strimzi.io",
            kind,
            (Placement(_p("/spec/template/pod"), (_image("/spec/image"),), creates=2),),
            cites=f"{kind}.spec.template.pod.{{affinity,tolerations}}, spec.image",
        )
        for kind in ("KafkaConnect", "KafkaMirrorMaker2", "KafkaBridge")
    ),
    # KubeRay: pod templates per group.
    _ray("RayCluster", "/spec"),
    _ray("RayJob", "/spec/rayClusterSpec"),
    _ray("RayService", "/spec/rayClusterConfig"),
    # Kubeflow training operator: one pod template per replica type.
    _kubeflow("PyTorchJob", "pytorchReplicaSpecs"),
    _kubeflow("TFJob", "tfReplicaSpecs"),
    _kubeflow("MPIJob", "mpiReplicaSpecs"),
    _kubeflow("XGBoostJob", "xgbReplicaSpecs"),
    _kubeflow("PaddleJob", "paddleReplicaSpecs"),
    _kubeflow("MXJob", "mxReplicaSpecs"),
    _kubeflow("JAXJob", "jaxReplicaSpecs"),
    # Spark operator: driver and executor, each with its image or the application's, and the
    # application's nodeSelector under their own.
    OperatorKind(
        "sparkoperator.k8s.io",
        "SparkApplication",
        tuple(
            Placement(
                _p(f"/spec/{role}"),
                (
                    _image(f"/spec/{role}/image", "/spec/image"),
                    _extra(f"/spec/{role}/sidecars/*/image"),
                    _extra(f"/spec/{role}/initContainers/*/image"),
                ),
                inherits=Inheritance(_p("/spec"), (("nodeSelector", "merge-by-key"),)),
                cites="kubeflow/spark-operator internal/controller/sparkapplication/"
                "submission.go nodeSelectorOption (spec.nodeSelector as "
                "spark.kubernetes.node.selector.*: driver and executor pods), "
                "internal/webhook/sparkpod_defaulter.go addNodeSelectors (the role's "
                "nodeSelector copied over it key by key), addAffinity (the role's affinity), "
                "addTolerations (the role's tolerations)",
            )
            for role in ("driver", "executor")
        ),
        cites="SparkApplication.spec.{driver,executor}.{affinity,tolerations,nodeSelector,"
        "image,sidecars,initContainers}, spec.nodeSelector, spec.image",
    ),
    # Tekton: a pod template applied to every step's pod; the images are the steps'.
    OperatorKind(
        "tekton.dev",
        "TaskRun",
        (
            Placement(
                _p("/spec/podTemplate"),
                (
                    _extra("/spec/taskSpec/steps/*/image"),
                    _extra("/spec/taskSpec/sidecars/*/image"),
                    _by_reference("/spec/taskSpec/steps/*/ref", "steps' ref (StepActions)"),
                ),
                creates=1,
            ),
        ),
        cites="TaskRun.spec.podTemplate.{affinity,tolerations,nodeSelector}; images "
        "spec.taskSpec.{steps,sidecars}[].image (a taskRef's are the referenced Task's)",
        adds="its init and entrypoint images",
    ),
    OperatorKind(
        "tekton.dev",
        "PipelineRun",
        (
            *_tekton_pipeline_run("v1", "/spec/taskRunTemplate/podTemplate", "podTemplate", 2),
            *_tekton_pipeline_run("v1beta1", "/spec/podTemplate", "taskPodTemplate", 1),
        ),
        cites="PipelineRun (v1) spec.taskRunTemplate.podTemplate, spec.taskRunSpecs[]."
        "podTemplate; (v1beta1) spec.podTemplate, spec.taskRunSpecs[].taskPodTemplate; images "
        "spec.pipelineSpec.{tasks,finally}[].taskSpec.{steps,sidecars}[].image",
        adds="its init and entrypoint images",
    ),
    # OpenTelemetry operator: the collector's pods follow its spec (no pod in sidecar mode:
    # the collector is injected into other pods); the target allocator is its own Deployment.
    OperatorKind(
        "opentelemetry.io",
        "OpenTelemetryCollector",
        (
            Placement(
                _p("/spec"),
                (
                    _image("/spec/image"),
                    _extra("/spec/additionalContainers/*/image"),
                    _extra("/spec/initContainers/*/image"),
                ),
                unless=((_p("/spec/mode"), ("sidecar",)),),
                cites="open-telemetry/opentelemetry-operator internal/manifests/collector/"
                "collector.go Build (mode sidecar: no workload), deployment.go, daemonset.go, "
                "statefulset.go (spec.initContainers, spec.additionalContainers)",
            ),
            Placement(
                _p("/spec/targetAllocator"),
                (_image("/spec/targetAllocator/image"),),
                when=((_p("/spec/targetAllocator/enabled"), ("true",)),),
                cites="open-telemetry/opentelemetry-operator internal/manifests/collector/"
                "targetallocator.go TargetAllocator (spec.targetAllocator.{nodeSelector,"
                "affinity,tolerations,image} when enabled); internal/manifests/targetallocator/"
                "container.go (the operator's --target-allocator-image when image is unset)",
            ),
        ),
        cites="OpenTelemetryCollector.spec.{affinity,tolerations,nodeSelector,image,"
        "initContainers,additionalContainers,mode}, spec.targetAllocator",
        adds="the collector image of the operator's version when spec.image is not set",
    ),
    # Jaeger operator: the common placement in spec, merged under each component's own.
    OperatorKind(
        "jaegertracing.io",
        "Jaeger",
        (
            Placement(
                _p("/spec"),
                _JAEGER_IMAGES,
                # The simplest Jaeger has no spec at all: the operator chooses everything.
                creates=1,
            ),
            *(
                Placement(
                    _p(f"/spec/{component}"),
                    _JAEGER_IMAGES,
                    inherits=Inheritance(
                        _p("/spec"), (("affinity", "replace"), ("tolerations", "append"))
                    ),
                    cites="jaegertracing/jaeger-operator pkg/util/util.go Merge([component's "
                    "JaegerCommonSpec, spec's]): the first affinity set wins (the component's), "
                    "tolerations are appended; pkg/deployment/{all_in_one,collector,query,"
                    "ingester,agent}.go, pkg/cronjob/{es_index_cleaner,es_rollover,"
                    "spark_dependencies}.go",
                )
                for component in _JAEGER_COMPONENTS
            ),
        ),
        cites="Jaeger.spec.{affinity,tolerations}, spec.<component>.{affinity,tolerations}; "
        "images spec.<component>.image",
        adds="the image of each component of the operator's version when none is named",
    ),
    # MinIO operator: one placement per pool, the tenant's image.
    OperatorKind(
        "minio.min.io",
        "Tenant",
        (
            Placement(
                _p("/spec/pools/*"),
                (
                    _image("/spec/image"),
                    _extra("/spec/sideCars/containers/*/image"),
                    _extra("/spec/initContainers/*/image"),
                ),
                cites="minio/operator pkg/resources/statefulsets/minio-statefulset.go "
                "NewPool (Affinity, NodeSelector, Tolerations of the pool; spec.initContainers "
                "appended to every pool's pod); pkg/apis/minio.min.io/v2/types.go "
                "TenantSpec.initContainers",
            ),
        ),
        cites="Tenant.spec.pools[].{affinity,tolerations,nodeSelector}, spec.image",
        adds="its sidecar (the operator's) and an init container",
    ),
    # Rook: placement.all with a bare nodeAffinity, merged under each daemon's; the Ceph
    # daemons run the ceph image.
    OperatorKind(
        "ceph.rook.io",
        "CephCluster",
        (
            Placement(
                _p("/spec/placement/all"),
                (_image("/spec/cephVersion/image"),),
                creates=2,
                shape="node-affinity",
            ),
            *(
                Placement(
                    _p(f"/spec/placement/{daemon}"),
                    (_image("/spec/cephVersion/image"),),
                    shape="node-affinity",
                    inherits=Inheritance(
                        _p("/spec/placement/all"),
                        (("nodeAffinity", "replace"), ("tolerations", "append")),
                    ),
                    cites=f"rook/rook pkg/apis/ceph.rook.io/v1/placement.go Get{getter}Placement: "
                    "p.All().Merge(p[daemon]); Merge: the daemon's nodeAffinity replaces all's "
                    "when set, its tolerations are appended to all's (mergeTolerations)",
                )
                for daemon, getter in (("mon", "Mon"), ("mgr", "Mgr"), ("osd", "OSD"))
            ),
            # A stretch cluster's arbiter mon takes placement.arbiter alone when it sets
            # anything (an empty one falls back to the mons'): one placement per field that
            # makes it non-empty, the first that holds is the one (the same path once).
            *(
                Placement(
                    _p("/spec/placement/arbiter"),
                    (_image("/spec/cephVersion/image"),),
                    shape="node-affinity",
                    when=((_p(f"/spec/placement/arbiter/{field}"), ()),),
                    cites="rook/rook pkg/apis/ceph.rook.io/v1/placement.go "
                    "GetArbiterPlacement (p[arbiter], not merged with all); "
                    "pkg/operator/ceph/cluster/mon/mon.go getMonPlacement (used for the "
                    "arbiter zone's mon when not empty, else the mons' placement)",
                )
                for field in (
                    "nodeAffinity",
                    "tolerations",
                    "podAffinity",
                    "podAntiAffinity",
                    "topologySpreadConstraints",
                )
            ),
        ),
        cites="CephCluster.spec.placement.all.{nodeAffinity,tolerations}, spec.cephVersion.image",
        adds="the CSI and Rook images of the operator for the pods it runs beside the daemons",
    ),
    # Flink Kubernetes operator: pod templates for both roles.
    OperatorKind(
        "flink.apache.org",
        "FlinkDeployment",
        (
            Placement(
                _p("/spec/podTemplate/spec"),
                (_image("/spec/image"), *_flink_containers("jobManager", "taskManager")),
                creates=2,
                pod_spec=True,
                cites=_FLINK_MERGE,
            ),
            *(
                Placement(
                    _p(f"/spec/{role}/podTemplate/spec"),
                    (_image("/spec/image"), *_flink_containers("")),
                    creates=2,
                    pod_spec=True,
                    inherits=Inheritance(
                        _p("/spec/podTemplate/spec"),
                        (
                            ("tolerations", "by-position"),
                            ("affinity", "by-position"),
                            ("nodeSelector", "merge-by-key"),
                        ),
                    ),
                    cites=_FLINK_MERGE,
                )
                for role in ("jobManager", "taskManager")
            ),
        ),
        cites="FlinkDeployment.spec.{podTemplate,jobManager.podTemplate,taskManager.podTemplate} "
        "(Pod templates), spec.image",
    ),
    # Volcano: one pod template per task.
    OperatorKind(
        "batch.volcano.sh",
        "Job",
        (Placement(_p("/spec/tasks/*/template/spec"), pod_spec=True),),
        cites="Job.spec.tasks[].template (a PodTemplateSpec)",
    ),
    # Crossplane: the provider's deployment; its image is the package's.
    OperatorKind(
        "pkg.crossplane.io",
        "DeploymentRuntimeConfig",
        (
            Placement(
                _p("/spec/deploymentTemplate/spec/template/spec"),
                (_image("/spec/deploymentTemplate/spec/template/spec/containers/*/image"),),
                creates=4,
                pod_spec=True,
            ),
        ),
        cites="DeploymentRuntimeConfig.spec.deploymentTemplate.spec.template (a Deployment's)",
        adds="the provider's container (the package's image) when the template names none",
    ),
    # CloudNativePG: the instances are placed by spec.affinity (its own shape: nodeSelector,
    # tolerations and a bare nodeAffinity); the poolers by a pod template.
    OperatorKind(
        "postgresql.cnpg.io",
        "Cluster",
        (
            Placement(
                _p("/spec/affinity"),
                (_image("/spec/imageName"),),
                creates=1,
                shape="node-affinity",
                cites="cloudnative-pg/cloudnative-pg pkg/specs/pods.go createPodSpec "
                "(Tolerations: spec.affinity.tolerations, NodeSelector: spec.affinity."
                "nodeSelector), CreateAffinitySection (NodeAffinity: spec.affinity."
                "nodeAffinity); api/v1/cluster_types.go AffinityConfiguration, imageName",
            ),
        ),
        cites="Cluster.spec.affinity.{nodeSelector,tolerations,nodeAffinity}, spec.imageName",
        adds="the bootstrap init container (the operator's image); the PostgreSQL image of "
        "spec.imageCatalogRef or the operator's default when spec.imageName is not set",
    ),
    OperatorKind(
        "postgresql.cnpg.io",
        "Pooler",
        (
            Placement(
                _p("/spec/template/spec"),
                (_image("/spec/template/spec/containers/*/image"),),
                creates=2,
                pod_spec=True,
                cites="cloudnative-pg/cloudnative-pg pkg/specs/pgbouncer/deployments.go Deployment "
                "(podspec.NewFrom(spec.template), the pgbouncer container's image kept when set, "
                "else the operator's)",
            ),
        ),
        cites="Pooler.spec.template (a PodTemplateSpec)",
        adds="the bootstrap init container (the operator's image); pgbouncer's image when the "
        "template names none",
    ),
    # RabbitMQ cluster operator: the StatefulSet's pod takes spec.affinity and tolerations.
    OperatorKind(
        "rabbitmq.com",
        "RabbitmqCluster",
        (
            Placement(
                _p("/spec"),
                (
                    _image("/spec/image"),
                    _extra("/spec/secretBackend/vault/defaultUserUpdaterImage"),
                    _extra("/spec/override/statefulSet/spec/template/spec/containers/*/image"),
                    _extra("/spec/override/statefulSet/spec/template/spec/initContainers/*/image"),
                ),
                cites="rabbitmq/cluster-operator internal/resource/statefulset.go (Affinity: "
                "spec.affinity, Tolerations: spec.tolerations, Image: spec.image; the "
                "default-user updater sidecar: secretBackend.vault.defaultUserUpdaterImage); "
                "api/v1beta1/rabbitmqcluster_types.go RabbitmqClusterSpec",
            ),
        ),
        cites="RabbitmqCluster.spec.{affinity,tolerations,image}",
        adds="the operator's default image when spec.image is not set (its defaulting); an "
        "override.statefulSet template's own affinity is patched over spec.affinity",
    ),
    # JobSet: a Job template per replicated job.
    OperatorKind(
        "jobset.x-k8s.io",
        "JobSet",
        (
            Placement(
                _p("/spec/replicatedJobs/*/template/spec/template/spec"),
                pod_spec=True,
                cites="kubernetes-sigs/jobset api/jobset/v1alpha2/jobset_types.go "
                "ReplicatedJob.Template (a batch/v1 JobTemplateSpec)",
            ),
        ),
        cites="JobSet.spec.replicatedJobs[].template.spec.template (PodTemplateSpecs)",
    ),
    # Argo Events: the Sensor's and EventSource's Deployment, placed by spec.template, runs the
    # controller's image.
    *(
        OperatorKind(
            "argoproj.io",
            kind,
            (
                Placement(
                    _p("/spec/template"),
                    (ImageSource((), operator_only=f"the {kind}'s (the controller's image)"),),
                    creates=1,
                    cites="argoproj/argo-events pkg/apis/events/v1alpha1/template.go Template "
                    "(nodeSelector, tolerations, affinity); pkg/reconciler/"
                    f"{kind.lower()}/resource.go (Image: the controller's args.Image)",
                ),
            ),
            cites=f"{kind}.spec.template.{{nodeSelector,tolerations,affinity}}",
            adds="its container, running the controller's image (declare it as defaultImages)",
        )
        for kind in ("Sensor", "EventSource")
    ),
    # KubeVirt: the virt-launcher pod of a VM is placed by its VMI template's spec.
    *(
        OperatorKind(
            "kubevirt.io",
            kind,
            (
                Placement(
                    _p(path),
                    (
                        ImageSource((), operator_only="virt-launcher (the operator's image)"),
                        _extra(f"{path}/volumes/*/containerDisk/image"),
                    ),
                    creates=0,
                    cites="kubevirt/kubevirt staging/src/kubevirt.io/api/core/v1/types.go "
                    "VirtualMachineInstanceSpec (nodeSelector, affinity, tolerations, "
                    "volumes[].containerDisk.image); pkg/virt-controller/services/template.go "
                    "(the launcher pod runs virt-launcher, the operator's image)",
                ),
            ),
            cites=f"{kind}.{path[1:].replace('/', '.')}.{{nodeSelector,affinity,tolerations}}",
            adds="virt-launcher (the operator's image; declare it as defaultImages)",
        )
        for kind, path in (
            ("VirtualMachine", "/spec/template/spec"),
            ("VirtualMachineInstance", "/spec"),
        )
    ),
)


def catalogue_by_kind(
    entries: Sequence[OperatorKind] = CATALOGUE,
) -> dict[tuple[str, str], OperatorKind]:
    """(API group, kind) -> its entry; a later entry of the same kind extends the earlier
    (a policy's podSpecs entry for a built-in kind adds placements, images, defaults)."""
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
        )
    return table


_TEMPLATE_PART = re.compile(r"\{(/[^{}]*)\}")


def resolved_default(resource: Mapping[str, object], template: str) -> str | None:
    """A default image of an operator's kind for ``resource``: its ``{/pointer}`` parts read in
    the resource (``{/spec/version}``); None when one is missing or not a plain word (a
    version, a tag, a repository). ``{/pointer|v}`` gives the value with one leading ``v``
    (the Prometheus Operator's ``"v" + version``); ``{/pointer|>=8.12.0,<8.16.0}`` gives it only
    when it is a version in that range (ECK's images by version)."""
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
        if template_filter == "v":
            # "v" + semver.ParseTolerant(version).String(): one leading v, whatever was written
            text = "v" + text.removeprefix("v").removeprefix("V")
        elif template_filter and not _version_in(text, template_filter):
            missing = True  # a version outside the range: another template says the image
        if not _WORD.fullmatch(text):
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
        for path, current in matches:
            if token == WILDCARD:
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
    resource. Values that are not non-empty strings are not images."""
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
        found, wrong = walk(resource, pointer)
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
    if inheritance is None:
        return {}, frozenset()
    found = [value for _, value in expand(resource, inheritance.path)]
    shared = found[0] if len(found) == 1 and isinstance(found[0], Mapping) else {}
    merged: dict[str, object] = {}
    read_only: set[str] = set()
    for name, merge in inheritance.fields:
        own, base = holder.get(name), shared.get(name)
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


# -- writing into a placement ------------------------------------------------------------------

_NODE_AFFINITY = "nodeAffinity"
_AFFINITY = "affinity"


def scheduling_view(holder: Mapping[str, object], shape: str) -> Mapping[str, object]:
    """A placement's object as the planner reads a pod spec: Rook's bare ``nodeAffinity`` as
    ``affinity.nodeAffinity``."""
    if shape != "node-affinity":
        return holder
    view = {key: value for key, value in holder.items() if key != _NODE_AFFINITY}
    if holder.get(_NODE_AFFINITY) is not None:
        view[_AFFINITY] = {_NODE_AFFINITY: holder[_NODE_AFFINITY]}
    return view


def in_shape(
    operations: Sequence[PatchOperation],
    path: ConcretePath,
    shape: str,
    read_only: Collection[str] = (),
    affinity_defaults: Mapping[str, object] | None = None,
) -> list[PatchOperation]:
    """Operations planned on :func:`scheduling_view`, written in the placement's own shape:
    ``affinity.nodeAffinity...`` becomes ``nodeAffinity...`` for Rook. Those on a field of
    ``read_only`` are dropped: the pods take it from a shared object, written by its own
    placement (:class:`Inheritance`). An ``affinity`` created gets ``affinity_defaults``
    beside the constraint (the operator's default it would otherwise drop)."""
    written = _in_shape(operations, path, shape)
    if affinity_defaults:
        written = [_with_defaults(operation, path, affinity_defaults) for operation in written]
    if not read_only:
        return written
    return [
        operation
        for operation in written
        if not (
            operation.is_under(path)
            and operation.relative_to(path).path[:1]
            and operation.relative_to(path).path[0] in read_only
        )
    ]


def _with_defaults(
    operation: PatchOperation, path: ConcretePath, defaults: Mapping[str, object]
) -> PatchOperation:
    if (
        operation.op != "add"
        or not operation.is_under(path)
        or operation.relative_to(path).path != (_AFFINITY,)
        or not isinstance(operation.value, Mapping)
    ):
        return operation
    value = {**operation.value}
    value.update({key: item for key, item in defaults.items() if key not in value})
    return PatchOperation(operation.op, operation.path, value)


def resolved_object(resource: Mapping[str, object], value: object) -> object | None:
    """``value`` with the templates of its strings read in ``resource``
    (:func:`resolved_default`); None when one cannot be."""
    if isinstance(value, str):
        return resolved_default(resource, value) if "{" in value else value
    if isinstance(value, Mapping):
        items = {key: resolved_object(resource, item) for key, item in value.items()}
        return None if any(item is None for item in items.values()) else items
    if isinstance(value, list):
        listed = [resolved_object(resource, item) for item in value]
        return None if any(item is None for item in listed) else listed
    return value


def _in_shape(
    operations: Sequence[PatchOperation], path: ConcretePath, shape: str
) -> list[PatchOperation]:
    if shape != "node-affinity":
        return list(operations)
    written: list[PatchOperation] = []
    for operation in operations:
        relative = operation.relative_to(path).path if operation.is_under(path) else ()
        if relative[:2] == (_AFFINITY, _NODE_AFFINITY):
            written.append(PatchOperation(operation.op, (*path, *relative[1:]), operation.value))
        elif relative == (_AFFINITY,) and isinstance(operation.value, Mapping):
            value = operation.value.get(_NODE_AFFINITY)
            written.append(PatchOperation("add", (*path, _NODE_AFFINITY), value))
        else:
            written.append(operation)
    return written


def materialized(
    operations: Sequence[PatchOperation], path: ConcretePath, missing: int
) -> list[PatchOperation]:
    """Operations planned on an empty object at ``path`` whose last ``missing`` tokens do not
    exist yet, as one ``add`` of the first missing one (holding the rest)."""
    if not missing or not operations:
        return list(operations)
    value = apply_patch({}, [operation.relative_to(path) for operation in operations])
    for token in reversed(path[len(path) - missing + 1 :]):
        value = {token: value}
    return [PatchOperation("add", path[: len(path) - missing + 1], value)]
