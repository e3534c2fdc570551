"""Custom resources of kinds kmultiarch does not know that look like they make pods
(core.unknownkinds): what is pod-shaped, what is not, the spec.podSpecs entry proposed from a
resource and from its CRD, and that the entry, pasted into a policy, gets the resource decided.

The samples are the operators' own (tests/fixtures/unknown-kinds, each citing its source). The
pure functions judge them whatever the catalogue holds; through the engine, a sample goes under
a group of its own, since the catalogue now knows CloudNativePG, RabbitMQ and KubeVirt."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml

from kmultiarch.api import mutate_text
from kmultiarch.core.findings import UNKNOWN_POD_KIND
from kmultiarch.core.images.platform import Platform
from kmultiarch.core.images.reference import ImageRef
from kmultiarch.core.operators.catalogue import CATALOGUE
from kmultiarch.core.operators.model import api_group, catalogue_by_kind
from kmultiarch.core.operators.unknownkinds import (
    PodShapedField,
    crd_schemas,
    entry_yaml,
    may_be_pod_shaped,
    may_define_kinds,
    needs_scan,
    pod_shaped_fields,
    schema_fields,
    schema_for,
    unknown_pod_kind,
)
from kmultiarch.core.resolution import Resolution
from kmultiarch.io.config import parse_policy_text

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "unknown-kinds"
AMD64, ARM64 = Platform("linux", "amd64"), Platform("linux", "arm64")


def _documents(name: str) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all((FIXTURES / name).read_text()) if d]


def _named(name: str, resource_name: str) -> dict[str, Any]:
    return next(d for d in _documents(name) if d["metadata"]["name"] == resource_name)


def _resource(text: str) -> dict[str, Any]:
    loaded = yaml.safe_load(text)
    assert isinstance(loaded, dict)
    return loaded


# -- what is scanned ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("api_version", "kind", "scanned"),
    [
        ("v1", "ConfigMap", False),
        ("v1", "Secret", False),
        ("v1", "Service", False),
        ("apps/v1", "Deployment", False),
        ("batch/v1", "CronJob", False),
        ("policy/v1", "PodDisruptionBudget", False),
        ("apiextensions.k8s.io/v1", "CustomResourceDefinition", False),
        ("admissionregistration.k8s.io/v1", "MutatingWebhookConfiguration", False),
        ("argoproj.io/v1alpha1", "Rollout", False),  # the built-in pod spec table
        ("argoproj.io/v1alpha1", "Workflow", False),
        ("tekton.dev/v1", "Task", False),  # run by TaskRuns, which the catalogue places
        ("opentelemetry.io/v1alpha1", "Instrumentation", False),  # an injection
        ("kmultiarch.dev/v1alpha1", "MultiArchPolicy", False),
        ("example.com/v1", "Known", False),  # an operator's kind the policy declares
        ("jobset.x-k8s.io/v1alpha2", "JobSet", True),  # .k8s.io, but served by a CRD
        ("postgresql.cnpg.io/v1", "Cluster", True),
        ("v1", "List", True),  # its items are judged one by one
    ],
)
def test_only_kinds_neither_built_in_nor_known_are_scanned(
    api_version: str, kind: str, scanned: bool
) -> None:
    assert needs_scan(api_version, kind, {("example.com", "Known"): object()}) is scanned


@pytest.mark.parametrize(
    ("text", "may"),
    [
        ("spec:\n  image: nginx\n", True),
        ('{"spec": {"sidecarImage": "nginx"}}', True),
        ("spec:\n  affinity: {}\n", True),
        ("spec:\n  'tolerations': []\n", True),
        ("spec:\n  endpoints:\n  - port: metrics\n", False),
        ("spec:\n  description: an image of the world\n", False),
    ],
)
def test_a_document_is_composed_to_be_scanned_only_when_its_text_names_a_pod_shaped_key(
    text: str, may: bool
) -> None:
    assert may_be_pod_shaped(text) is may


# -- pod-shaped or not --------------------------------------------------------------------------

NOT_POD_SHAPED = {
    "cert-manager Certificate": """
apiVersion: cert-manager.io/v1
kind: Certificate
metadata: {name: web}
spec: {secretName: web-tls, dnsNames: [example.com], issuerRef: {name: letsencrypt}}
""",
    "a label selector named nodeSelector (Cilium)": """
apiVersion: cilium.io/v2
kind: CiliumClusterwideNetworkPolicy
metadata: {name: host}
spec:
  nodeSelector: {matchLabels: {role: worker}}
  ingress: [{fromEntities: [cluster]}]
""",
    "a selector expression named nodeSelector (Calico)": """
apiVersion: crd.projectcalico.org/v1
kind: GlobalNetworkPolicy
metadata: {name: workers}
spec: {nodeSelector: "role == 'worker'", types: [Ingress]}
""",
    "an empty nodeSelector alone": """
apiVersion: cilium.io/v2
kind: CiliumClusterwideNetworkPolicy
metadata: {name: all-nodes}
spec: {nodeSelector: {}, ingress: [{fromEntities: [cluster]}]}
""",
    "an image pattern that is no reference (a policy engine's)": """
apiVersion: policies.example.com/v1
kind: ImageRule
metadata: {name: no-latest}
spec: {match: {containers: [{image: "!*:latest"}]}}
""",
    "a Ceph block image of an RBD volume": """
apiVersion: storage.example.com/v1
kind: VolumeTemplate
metadata: {name: rbd}
spec: {volume: {rbd: {monitors: [10.0.0.1], pool: kube, image: foo}}}
""",
    "a local-config resource (never applied)": """
apiVersion: fn.example.com/v1
kind: SetImage
metadata:
  name: set
  annotations: {config.kubernetes.io/local-config: "true"}
spec: {image: nginx:1.27}
""",
    "metadata and status are not read": """
apiVersion: example.com/v1
kind: Thing
metadata: {name: t, annotations: {image: nginx:1.27}}
status: {image: nginx:1.27, nodeSelector: {a: b}}
""",
}


@pytest.mark.parametrize("text", NOT_POD_SHAPED.values(), ids=NOT_POD_SHAPED.keys())
def test_a_resource_without_pod_shaped_content_is_not_warned(text: str) -> None:
    assert unknown_pod_kind(_resource(text)) is None


def test_cloudnative_pg_cluster_is_placed_by_its_affinity_configuration() -> None:
    cluster = _named("cloudnative-pg-cluster.yaml", "pg-eu")
    found = unknown_pod_kind(cluster)
    assert found is not None
    assert [(f.path, f.kind) for f in found.fields] == [
        (("spec", "imageName"), "image"),
        (("spec", "affinity", "nodeSelector"), "nodeSelector"),
        (("spec", "affinity", "tolerations"), "tolerations"),
    ]
    # spec.affinity holds tolerations: it is no core Affinity, and its nodeAffinity is bare.
    assert found.entry == {
        "apiVersion": "postgresql.cnpg.io/v1",
        "kind": "Cluster",
        "placements": [
            {"path": "/spec/affinity", "images": ["/spec/imageName"], "shape": "node-affinity"}
        ],
    }
    assert not found.guessed
    backup = _named("cloudnative-pg-cluster.yaml", "pg-eu-backup")
    assert unknown_pod_kind(backup) is None


def test_rabbitmq_clusters_pod_template_override_and_affinity() -> None:
    sidecar = unknown_pod_kind(_named("rabbitmq-cluster.yaml", "sidecar"))
    assert sidecar is not None
    assert sidecar.entry["placements"] == [
        {"path": "/spec/override/statefulSet/spec/template/spec", "podSpec": True}
    ]
    # A template's spec with an empty containers list is a pod spec all the same.
    ready = unknown_pod_kind(_named("rabbitmq-cluster.yaml", "production-ready"))
    assert ready is not None
    assert ready.fields == (
        PodShapedField(("spec", "override", "statefulSet", "spec", "template", "spec"), "pod-spec"),
    )
    anti = unknown_pod_kind(_named("rabbitmq-cluster.yaml", "pod-anti-affinity"))
    assert anti is not None
    assert anti.entry["placements"] == [{"path": "/spec"}]


def test_a_virtual_machine_with_only_an_image_gets_its_template_spec_as_a_guess() -> None:
    (machine,) = _documents("kubevirt-virtualmachine.yaml")
    found = unknown_pod_kind(machine)
    assert found is not None
    assert found.guessed
    assert found.entry["placements"] == [
        {
            "path": "/spec/template/spec",
            "images": ["/spec/template/spec/volumes/*/containerDisk/image"],
        }
    ]
    assert "the placement is a guess" in found.message()


def test_images_go_with_the_placements_above_or_below_them_else_with_every_one() -> None:
    found = unknown_pod_kind(
        _resource("""
apiVersion: example.com/v1
kind: Database
metadata: {name: db}
spec:
  image: example.com/db:1
  primary: {nodeSelector: {disk: ssd}, exporterImage: example.com/exporter:1}
  replicas:
  - {tolerations: [{key: spot, operator: Exists}], image: example.com/replica:1}
  - {tolerations: [], image: example.com/replica:1}
  backup: {image: example.com/backup:1}
""")
    )
    assert found is not None
    # /spec/image sits above both; /spec/backup/image relates to neither, so it goes with both.
    assert found.entry["placements"] == [
        {
            "path": "/spec/primary",
            "images": ["/spec/image", "/spec/primary/exporterImage", "/spec/backup/image"],
        },
        {
            "path": "/spec/replicas/*",
            "images": ["/spec/image", "/spec/replicas/*/image", "/spec/backup/image"],
        },
    ]


def test_a_pod_spec_is_a_placement_and_its_inside_is_not_listed() -> None:
    fields = pod_shaped_fields(
        _resource("""
apiVersion: example.com/v1
kind: Sandbox
metadata: {name: s}
spec:
  podTemplate:
    spec:
      nodeSelector: {pool: a}
      containers: [{name: main, image: python:3.12}]
""")
    )
    assert fields == [PodShapedField(("spec", "podTemplate", "spec"), "pod-spec")]


# -- CRD schemas --------------------------------------------------------------------------------


def _rabbitmq_schema() -> Mapping[str, object]:
    (crd,) = _documents("rabbitmq-crd.yaml")
    schemas = crd_schemas(crd)
    assert list(schemas) == [("rabbitmq.com", "RabbitmqCluster")]
    schema = schema_for(schemas[("rabbitmq.com", "RabbitmqCluster")], "rabbitmq.com/v1beta1")
    assert schema is not None
    return schema


def test_the_crds_schema_shows_the_pod_shaped_properties() -> None:
    assert [(f.path, f.kind) for f in schema_fields(_rabbitmq_schema())] == [
        (("spec", "affinity"), "affinity"),
        (("spec", "image"), "image"),
        (("spec", "override", "statefulSet", "spec", "template", "spec"), "pod-spec"),
        (("spec", "tolerations"), "tolerations"),
    ]


def test_the_crd_completes_the_entry_of_a_resource_naming_only_its_image() -> None:
    resource = _resource(
        "apiVersion: rabbitmq.com/v1beta1\nkind: RabbitmqCluster\nmetadata: {name: r}\n"
        "spec: {image: rabbitmq:3.13-management}\n"
    )
    alone = unknown_pod_kind(resource)
    assert alone is not None and alone.guessed
    found = unknown_pod_kind(resource, declared=schema_fields(_rabbitmq_schema()))
    assert found is not None
    assert not found.guessed and found.from_schema
    assert found.entry["placements"] == [
        {"path": "/spec", "images": ["/spec/image"]},
        # The StatefulSet's pods run spec.image too: the override merges into their template.
        {
            "path": "/spec/override/statefulSet/spec/template/spec",
            "podSpec": True,
            "images": ["/spec/image"],
        },
    ]
    assert "as its CRD in the stream declares" in found.message()


def test_a_crd_alone_warns_of_nothing() -> None:
    (crd,) = _documents("rabbitmq-crd.yaml")
    empty = _resource(
        "apiVersion: rabbitmq.com/v1beta1\nkind: RabbitmqCluster\nmetadata: {name: r}"
    )
    assert unknown_pod_kind(empty, declared=schema_fields(_rabbitmq_schema())) is None
    result = mutate_text(yaml.safe_dump(crd), resolve=_resolve)
    assert not [f for f in result.findings if f.rule == UNKNOWN_POD_KIND]


def test_a_crd_is_composed_only_when_it_names_the_kind_and_a_pod_shaped_property() -> None:
    text = (FIXTURES / "rabbitmq-crd.yaml").read_text()
    assert may_define_kinds(text, ["RabbitmqCluster"])
    assert not may_define_kinds(text, ["Cluster"])  # a kind named in full, not a suffix
    schema_only_names = text[: text.index("          spec:\n            type: object")]
    assert not may_define_kinds(schema_only_names, ["RabbitmqCluster"])


# -- the entry, as YAML, read back by the policy reader -----------------------------------------


def _resolve(references: list[ImageRef]) -> Mapping[ImageRef, Resolution]:
    """Images named amd64, and CloudNativePG's, run on amd64 only; others on both."""
    return {r: Resolution(r, _platforms(str(r)), "sha256:" + "0" * 64) for r in references}


def _platforms(reference: str) -> frozenset[Platform]:
    amd64_only = "amd64" in reference or "cloudnative-pg" in reference
    return frozenset({AMD64} if amd64_only else {AMD64, ARM64})


SAMPLES = [
    ("cloudnative-pg-cluster.yaml", "pg-eu"),
    ("rabbitmq-cluster.yaml", "sidecar"),
    ("rabbitmq-cluster.yaml", "pod-anti-affinity"),
    ("kubevirt-virtualmachine.yaml", "vm-cirros"),
]


def _unknown(resource: dict[str, Any]) -> dict[str, Any]:
    """The sample under a group of its own (``unknown.<group>``): the catalogue gains the real
    kinds (CloudNativePG, RabbitMQ and KubeVirt are in it now); the shape is the operator's."""
    renamed = {**resource, "apiVersion": "unknown." + resource["apiVersion"]}
    assert (api_group(renamed["apiVersion"]), renamed["kind"]) not in catalogue_by_kind(CATALOGUE)
    return renamed


@pytest.mark.parametrize(("fixture", "name"), SAMPLES)
def test_the_entry_pasted_into_a_policy_gets_the_resource_decided(fixture: str, name: str) -> None:
    resource = _unknown(_named(fixture, name))
    text = yaml.safe_dump(resource, sort_keys=False)
    before = mutate_text(text, resolve=_resolve)
    (warning,) = [f for f in before.findings if f.rule == UNKNOWN_POD_KIND]
    assert warning.severity == "warning" and warning.suggestion
    assert not before.pods
    # The block form under podSpecs, and the one-line form of the message: the same entry.
    flow = warning.message.rpartition(": - ")[2]
    assert yaml.safe_load("- " + flow) == yaml.safe_load(warning.suggestion)
    policy = parse_policy_text(
        "apiVersion: kmultiarch.dev/v1alpha1\nkind: MultiArchPolicy\nmetadata: {name: t}\n"
        "spec:\n  podSpecs:\n" + "".join(f"  {line}\n" for line in warning.suggestion.splitlines()),
        "policy.yaml",
    )
    after = mutate_text(text, policy, resolve=_resolve)
    assert after.pods, "the resource is decided on"
    assert not [f for f in after.findings if f.rule == UNKNOWN_POD_KIND]


def test_the_cluster_gets_its_arch_affinity_where_cloudnative_pg_reads_it() -> None:
    resource = _unknown(_named("cloudnative-pg-cluster.yaml", "pg-eu"))
    found = unknown_pod_kind(resource)
    assert found is not None
    policy = parse_policy_text(
        "apiVersion: kmultiarch.dev/v1alpha1\nkind: MultiArchPolicy\nmetadata: {name: t}\n"
        "spec:\n  podSpecs:\n"
        + "".join(f"  {line}\n" for line in entry_yaml(found.entry).splitlines()),
        "policy.yaml",
    )
    (changed,) = yaml.safe_load_all(
        mutate_text(yaml.safe_dump(resource), policy, resolve=_resolve).stream()
    )
    terms = changed["spec"]["affinity"]["nodeAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"
    ]
    assert terms["nodeSelectorTerms"][0]["matchExpressions"][0]["values"] == ["amd64"]


def test_entry_yaml_quotes_what_a_plain_scalar_cannot_say() -> None:
    entry = {
        "apiVersion": "example.com/v1",
        "kind": "Yes",
        "placements": [{"path": "/spec/a b/x:y", "images": ["/spec/#tag"], "podSpec": True}],
    }
    for flow in (False, True):
        assert yaml.safe_load(entry_yaml(entry, flow=flow)) == [entry]


def test_a_list_item_is_warned_with_its_path_in_the_document() -> None:
    text = """
apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: ConfigMap
  metadata: {name: c}
- apiVersion: example.com/v1
  kind: Thing
  metadata: {name: t, namespace: ns}
  spec: {image: example.com/thing:1}
"""
    result = mutate_text(text, resolve=_resolve)
    (warning,) = [f for f in result.findings if f.rule == UNKNOWN_POD_KIND]
    assert warning.path == ("items", 1, "spec", "image")
    assert "(/items/1/spec/image)" in warning.message
    assert warning.resource is not None and warning.resource.namespace == "ns"
    assert warning.line == 11


@pytest.mark.parametrize(
    "spec",
    [
        "  exclude: {kinds: [Thing]}\n",
        "  exclude: {namespaces: ['n*']}\n",
    ],
)
def test_exclusions_silence_it(spec: str) -> None:
    text = (
        "apiVersion: example.com/v1\nkind: Thing\nmetadata: {name: t, namespace: ns}\n"
        "spec: {image: example.com/thing:1}\n"
    )
    policy = parse_policy_text(
        "apiVersion: kmultiarch.dev/v1alpha1\nkind: MultiArchPolicy\nmetadata: {name: t}\n"
        f"spec:\n{spec}",
        "policy.yaml",
    )
    result = mutate_text(text, policy, resolve=_resolve)
    assert not [f for f in result.findings if f.rule == UNKNOWN_POD_KIND]
    skipped = text.replace(
        "namespace: ns}", "namespace: ns, annotations: {kmultiarch.dev/skip: 'true'}}"
    )
    result = mutate_text(skipped, resolve=_resolve)
    assert not [f for f in result.findings if f.rule == UNKNOWN_POD_KIND]


#: After percona/percona-server-mysql-operator deploy/cr.yaml (a kind the catalogue lacks): a
#: component's affinity is the operator's object, whose `advanced` is the pods' Affinity.
PERCONA_SERVER_MYSQL = """\
apiVersion: ps.percona.com/v1alpha1
kind: PerconaServerMySQL
metadata: {name: ps-cluster1}
spec:
  mysql:
    image: registry.test/percona-server-amd64:8.0
    affinity:
      antiAffinityTopologyKey: kubernetes.io/hostname
      advanced:
        podAntiAffinity: {}
    tolerations:
    - {key: node.alpha.kubernetes.io/unreachable, operator: Exists, effect: NoExecute}
"""


def test_an_affinity_whose_advanced_is_the_pods_is_suggested_in_its_shape() -> None:
    """Before, `advanced`'s inside was read as a bare placement of its own, which would have
    had tolerations written into an Affinity."""
    found = unknown_pod_kind(_resource(PERCONA_SERVER_MYSQL))
    assert found is not None
    assert [(f.path, f.kind) for f in found.fields] == [
        (("spec", "mysql", "image"), "image"),
        (("spec", "mysql", "affinity"), "advanced-affinity"),
        (("spec", "mysql", "tolerations"), "tolerations"),
    ]
    (placement,) = found.entry["placements"]  # type: ignore[index]
    assert placement == {
        "path": "/spec/mysql",
        "images": ["/spec/mysql/image"],
        "shape": "advanced-affinity",
    }
    policy = parse_policy_text(
        "apiVersion: kmultiarch.dev/v1alpha1\nkind: MultiArchPolicy\nmetadata: {name: t}\n"
        "spec:\n  podSpecs:\n"
        + "".join(f"  {line}\n" for line in entry_yaml(found.entry).splitlines()),
        "policy.yaml",
    )
    (changed,) = yaml.safe_load_all(
        mutate_text(PERCONA_SERVER_MYSQL, policy, resolve=_resolve).stream()
    )
    advanced = changed["spec"]["mysql"]["affinity"]["advanced"]
    assert advanced["podAntiAffinity"] == {}
    assert advanced["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
        "nodeSelectorTerms"
    ][0]["matchExpressions"][0]["values"] == ["amd64"]


def test_a_crd_schema_with_an_advanced_affinity_is_read_in_that_shape() -> None:
    affinity = {
        "type": "object",
        "properties": {
            "antiAffinityTopologyKey": {"type": "string"},
            "advanced": {
                "type": "object",
                "properties": {"nodeAffinity": {"type": "object"}},
            },
        },
    }
    fields = schema_fields(
        {
            "type": "object",
            "properties": {
                "spec": {
                    "type": "object",
                    "properties": {
                        "mysql": {"type": "object", "properties": {"affinity": affinity}}
                    },
                }
            },
        }
    )
    assert [(f.path, f.kind) for f in fields] == [
        (("spec", "mysql", "affinity"), "advanced-affinity")
    ]
