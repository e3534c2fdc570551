"""Operators' custom resources and injected sidecars (issue 23): the catalogue's placements,
wildcard pointers, ``spec.podSpecs`` placements from a policy, images the operator chooses,
defaults by version, Rook's bare nodeAffinity, created templates, injections."""

from __future__ import annotations

import pytest
import yaml
from support.operators import ARCH_IN_AMD64, ARM64_TOLERATION, resolve

from kmultiarch.api import mutate_text
from kmultiarch.core.findings import IMAGE_CHOSEN_BY_OPERATOR, INJECTED_SIDECAR
from kmultiarch.core.operators.catalogue import CATALOGUE
from kmultiarch.core.operators.model import Placement, expand, image_matches
from kmultiarch.errors import PolicyError
from kmultiarch.io.config import parse_policy_text
from kmultiarch.krm.function import policy_from_configmap


def _policy(spec: str) -> object:
    return parse_policy_text(
        "apiVersion: kmultiarch.dev/v1alpha1\nkind: MultiArchPolicy\nmetadata: {name: t}\n"
        f"spec:\n{spec}",
        "policy.yaml",
    )


def _run(text: str, spec: str = "") -> tuple[list[dict[str, object]], object]:
    result = mutate_text(text, _policy(spec) if spec else None, resolve=resolve)  # type: ignore[arg-type]
    return list(yaml.safe_load_all(result.stream())), result


# -- pointers --------------------------------------------------------------------------------


def test_a_wildcard_matches_every_item_and_every_map_value() -> None:
    value = {"spec": {"pools": [{"image": "a"}, {"image": "b"}], "roles": {"x": {"image": "c"}}}}
    assert list(expand(value, ("spec", "pools", "*", "image"))) == [
        (("spec", "pools", 0, "image"), "a"),
        (("spec", "pools", 1, "image"), "b"),
    ]
    assert list(expand(value, ("spec", "roles", "*", "image"))) == [
        (("spec", "roles", "x", "image"), "c")
    ]
    assert list(expand(value, ("spec", "missing", "*"))) == []


def test_an_image_pointer_under_its_placement_pairs_each_instance_with_its_own_image() -> None:
    resource = {"spec": {"image": "top", "pools": [{"image": "a"}, {"image": "b"}]}}
    pattern = ("spec", "pools", "*")
    assert image_matches(resource, (*pattern, "image"), pattern, ("spec", "pools", 1)) == [
        (("spec", "pools", 1, "image"), "b")
    ]
    # Any other pointer reads the whole resource, independent of the placement's *.
    assert image_matches(resource, ("spec", "image"), pattern, ("spec", "pools", 1)) == [
        (("spec", "image"), "top")
    ]


def test_every_catalogue_entry_cites_its_crd_field() -> None:
    assert len({(entry.group, entry.kind) for entry in CATALOGUE}) >= 30
    for entry in CATALOGUE:
        assert entry.cites, entry.kind
        assert entry.placements, entry.kind
        for placement in entry.placements:
            assert 0 <= placement.creates <= len(placement.path)


# -- the catalogue in a run -----------------------------------------------------------------


def test_an_eck_resource_with_a_version_gets_the_operators_default_image() -> None:
    (es,), result = _run(
        "apiVersion: elasticsearch.k8s.elastic.co/v1\nkind: Elasticsearch\nmetadata: {name: es}\n"
        "spec:\n  version: 8.15.0\n  nodeSets:\n  - {name: a, count: 1}\n"
    )
    images = {str(reference) for reference in result.resolutions}  # type: ignore[attr-defined]
    assert images == {"docker.elastic.co/elasticsearch/elasticsearch:8.15.0"}
    assert es["spec"]["nodeSets"][0]["podTemplate"]["spec"]["tolerations"] == [ARM64_TOLERATION]  # type: ignore[index]


def test_a_resource_naming_no_image_is_left_as_it_is_with_a_warning() -> None:
    text = (
        "apiVersion: kafka.strimzi.io/v1\nkind: Kafka\nmetadata: {name: k}\n"
        "spec:\n  kafka:\n    version: 4.0.0\n    listeners: []\n"
    )
    (kafka,), result = _run(text)
    assert kafka == yaml.safe_load(text)
    (finding,) = result.findings  # type: ignore[attr-defined]
    assert finding.rule == IMAGE_CHOSEN_BY_OPERATOR
    assert "spec.kafka.image" in finding.message and finding.severity == "warning"
    assert [pod.status for pod in result.pods] == ["chosen-by-operator"]  # type: ignore[attr-defined]


def test_a_resource_without_the_placement_it_would_name_images_under_is_not_passed_over() -> None:
    """The simplest Jaeger has no spec: the operator chooses everything, which is said."""
    text = "apiVersion: jaegertracing.io/v1\nkind: Jaeger\nmetadata: {name: simplest}\n"
    (jaeger,), result = _run(text)
    assert jaeger == yaml.safe_load(text)
    (finding,) = result.findings  # type: ignore[attr-defined]
    assert finding.rule == IMAGE_CHOSEN_BY_OPERATOR
    assert [pod.status for pod in result.pods] == ["chosen-by-operator"]  # type: ignore[attr-defined]


def test_default_images_in_the_policy_decide_for_a_kind_that_names_none() -> None:
    (kafka,), result = _run(
        "apiVersion: kafka.strimzi.io/v1\nkind: Kafka\nmetadata: {name: k}\n"
        "spec:\n  kafka:\n    version: 4.0.0\n    listeners: []\n",
        "  podSpecs:\n  - apiVersion: kafka.strimzi.io/v1\n    kind: Kafka\n"
        "    defaultImages: ['quay.io/strimzi/kafka-amd64:0.45.0-kafka-{/spec/kafka/version}']\n",
    )
    assert kafka["spec"]["kafka"]["template"] == {"pod": {"affinity": ARCH_IN_AMD64}}  # type: ignore[index]
    assert "quay.io/strimzi/kafka-amd64:0.45.0-kafka-4.0.0" in {
        str(r)
        for r in result.resolutions  # type: ignore[attr-defined]
    }


def test_a_node_pool_takes_the_images_of_its_kafka_and_its_own_template() -> None:
    docs, _ = _run(
        "apiVersion: kafka.strimzi.io/v1\nkind: KafkaNodePool\nmetadata:\n  name: pool\n"
        "  labels: {strimzi.io/cluster: k}\n"
        "spec: {replicas: 3, roles: [broker],\n"
        "  template: {pod: {terminationGracePeriodSeconds: 60}}}\n"
        "---\n"
        "apiVersion: kafka.strimzi.io/v1\nkind: Kafka\nmetadata: {name: k}\n"
        "spec:\n  kafka: {image: registry.test/kafka-amd64:1, listeners: []}\n"
    )
    assert docs[0]["spec"]["template"]["pod"]["affinity"] == ARCH_IN_AMD64  # type: ignore[index]


def test_a_node_pool_without_a_pod_template_keeps_the_kafkas_and_is_placed_by_it() -> None:
    """KafkaPool.fromCrd: a pool's template.pod replaces the Kafka's spec.kafka.template.pod
    whole; creating one on the pool dropped the Kafka's (its volumes here). The Kafka's is
    written instead, and the pool is left as it is."""
    pool = (
        "apiVersion: kafka.strimzi.io/v1\nkind: KafkaNodePool\nmetadata:\n  name: pool\n"
        "  labels: {strimzi.io/cluster: k}\nspec: {replicas: 3, roles: [broker]}\n"
    )
    docs, _ = _run(
        pool + "---\napiVersion: kafka.strimzi.io/v1\nkind: Kafka\nmetadata: {name: k}\n"
        "spec:\n  kafka:\n    image: registry.test/kafka-amd64:1\n    listeners: []\n"
        "    template:\n      pod:\n        volumes: [{name: extra, emptyDir: {}}]\n"
    )
    assert docs[0] == yaml.safe_load(pool)
    kafka_pod = docs[1]["spec"]["kafka"]["template"]["pod"]  # type: ignore[index]
    assert kafka_pod["affinity"] == ARCH_IN_AMD64
    assert kafka_pod["volumes"] == [{"name": "extra", "emptyDir": {}}]


def test_rooks_bare_node_affinity_is_written_in_its_own_shape() -> None:
    (ceph,), _ = _run(
        "apiVersion: ceph.rook.io/v1\nkind: CephCluster\nmetadata: {name: c}\n"
        "spec:\n  cephVersion: {image: registry.test/ceph-amd64:v20}\n  placement:\n    all:\n"
        "      nodeAffinity:\n        requiredDuringSchedulingIgnoredDuringExecution:\n"
        "          nodeSelectorTerms:\n          - matchExpressions:\n"
        "            - {key: role, operator: In, values: [storage]}\n"
    )
    terms = ceph["spec"]["placement"]["all"]["nodeAffinity"][  # type: ignore[index]
        "requiredDuringSchedulingIgnoredDuringExecution"
    ]["nodeSelectorTerms"]
    assert terms == [
        {
            "matchExpressions": [
                {"key": "role", "operator": "In", "values": ["storage"]},
                {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]},
            ]
        }
    ]
    assert "affinity" not in ceph["spec"]["placement"]["all"]  # type: ignore[index]


# -- spec.podSpecs placements ---------------------------------------------------------------

SPARK_POLICY = """\
  podSpecs:
  - apiVersion: example.com/v1
    kind: Job
    placements:
    - path: /spec/driver
      images: [[/spec/driver/image, /spec/image], /spec/driver/sidecars/*/image]
    - {path: /spec/executor, images: [[/spec/executor/image, /spec/image]]}
"""


def test_placements_from_the_policy_with_alternatives_and_wildcards() -> None:
    (job,), _ = _run(
        "apiVersion: example.com/v1\nkind: Job\nmetadata: {name: j}\nspec:\n"
        "  image: registry.test/app:1\n  driver:\n    sidecars:\n"
        "    - {name: s, image: registry.test/sidecar-amd64:1}\n  executor: {instances: 2}\n",
        SPARK_POLICY,
    )
    assert job["spec"]["driver"]["affinity"] == ARCH_IN_AMD64  # type: ignore[index]
    assert job["spec"]["executor"]["tolerations"] == [ARM64_TOLERATION]  # type: ignore[index]


def test_a_path_with_a_wildcard_from_the_policy_reaches_every_item() -> None:
    (fleet,), _ = _run(
        "apiVersion: example.com/v1\nkind: Fleet\nmetadata: {name: f}\nspec:\n  groups:\n"
        "  - template: {spec: {containers: [{name: a, image: registry.test/a-amd64:1}]}}\n"
        "  - template: {spec: {containers: [{name: b, image: registry.test/b:1}]}}\n",
        "  podSpecs:\n  - {apiVersion: example.com/v1, kind: Fleet, "
        "path: /spec/groups/*/template/spec}\n",
    )
    groups = fleet["spec"]["groups"]  # type: ignore[index]
    assert groups[0]["template"]["spec"]["affinity"] == ARCH_IN_AMD64
    assert groups[1]["template"]["spec"]["tolerations"] == [ARM64_TOLERATION]


def test_a_functionconfig_configmap_says_the_same_placements() -> None:
    policy = policy_from_configmap(
        {"podSpecs": yaml.safe_dump(yaml.safe_load(SPARK_POLICY)["podSpecs"])}, "fn"
    )
    placements = policy.scope.operators[("example.com", "Job")].placements
    assert [p.path for p in placements] == [("spec", "driver"), ("spec", "executor")]
    assert placements[0].images[0].alternatives == (
        ("spec", "driver", "image"),
        ("spec", "image"),
    )
    assert not placements[0].images[1].required


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ("{apiVersion: x/v1, kind: X}", "give path"),
        ("{apiVersion: x/v1, kind: X, placements: [{images: []}]}", "placements[0].path"),
        ("{apiVersion: x/v1, kind: X, placements: [{path: /a, images: [3]}]}", "images[0]"),
        ("{apiVersion: x/v1, kind: X, placements: [{path: /a, creates: 5}]}", "creates"),
        ("{apiVersion: x/v1, kind: X, placements: [{path: /a, shape: bare}]}", "shape"),
    ],
)
def test_bad_placements_name_the_entry(entry: str, message: str) -> None:
    with pytest.raises(PolicyError, match=message.replace("[", r"\[").replace("]", r"\]")):
        _policy(f"  podSpecs: [{entry}]\n")


def test_a_placement_only_writes_where_its_parent_exists() -> None:
    """A Beat with a daemonSet gets its podTemplate; no deployment is made up for it."""
    (beat,), _ = _run(
        "apiVersion: beat.k8s.elastic.co/v1beta1\nkind: Beat\nmetadata: {name: b}\n"
        "spec: {type: filebeat, version: 8.15.0, image: registry.test/beat-amd64:1, "
        "daemonSet: {}}\n"
    )
    assert beat["spec"]["daemonSet"] == {"podTemplate": {"spec": {"affinity": ARCH_IN_AMD64}}}  # type: ignore[index]
    assert "deployment" not in beat["spec"]  # type: ignore[operator]


# -- injections -----------------------------------------------------------------------------

ISTIO = """\
  injections:
  - name: istio
    images: [docker.io/istio/proxyv2-amd64:1.24.2]
    when:
      namespaceLabels: {istio-injection: enabled}
      podLabels: {sidecar.istio.io/inject: "true"}
    unless: {podAnnotations: {sidecar.istio.io/inject: "false"}}
"""
DEPLOYMENT = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: shop}
spec:
  template:
    metadata:
      labels: {app: web}
      annotations: {}
    spec:
      containers:
      - {name: web, image: registry.test/web:1}
"""
NAMESPACE = "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: shop\n  labels: LABELS\n---\n"


def _pod_spec(docs: list[dict[str, object]]) -> dict[str, object]:
    spec = docs[-1]["spec"]["template"]["spec"]  # type: ignore[index]
    assert isinstance(spec, dict)
    return spec


def test_an_injected_amd64_only_sidecar_keeps_the_pod_on_amd64_and_says_why() -> None:
    docs, result = _run(
        NAMESPACE.replace("LABELS", "{istio-injection: enabled}") + DEPLOYMENT, ISTIO
    )
    assert _pod_spec(docs)["affinity"] == ARCH_IN_AMD64
    (finding,) = [f for f in result.findings if f.rule == INJECTED_SIDECAR]  # type: ignore[attr-defined]
    assert "istio" in finding.message and "proxyv2-amd64" in finding.message


def test_an_injection_does_not_apply_without_its_label_or_with_its_opt_out() -> None:
    docs, _ = _run(NAMESPACE.replace("LABELS", "{team: a}") + DEPLOYMENT, ISTIO)
    assert _pod_spec(docs)["tolerations"] == [ARM64_TOLERATION]
    opted_out = DEPLOYMENT.replace(
        "annotations: {}", 'annotations: {sidecar.istio.io/inject: "false"}'
    ).replace("labels: {app: web}", 'labels: {app: web, sidecar.istio.io/inject: "true"}')
    docs, _ = _run(opted_out, ISTIO)
    assert _pod_spec(docs)["tolerations"] == [ARM64_TOLERATION]
    by_pod_label = DEPLOYMENT.replace(
        "labels: {app: web}", 'labels: {app: web, sidecar.istio.io/inject: "true"}'
    )
    docs, _ = _run(by_pod_label, ISTIO)
    assert _pod_spec(docs)["affinity"] == ARCH_IN_AMD64


def test_namespace_labels_of_the_policy_stand_in_and_a_namespace_document_wins() -> None:
    stand_in = ISTIO + "  namespaceLabels: {shop: {istio-injection: enabled}}\n"
    docs, _ = _run(DEPLOYMENT, stand_in)
    assert _pod_spec(docs)["affinity"] == ARCH_IN_AMD64
    docs, _ = _run(
        NAMESPACE.replace("LABELS", "{istio-injection: disabled}") + DEPLOYMENT, stand_in
    )
    assert _pod_spec(docs)["tolerations"] == [ARM64_TOLERATION]


def test_placement_dataclass_defaults() -> None:
    placement = Placement(("spec",))
    assert placement.shape == "affinity" and placement.creates == 0 and not placement.pod_spec


def test_the_catalogues_kinds_are_written_out_as_they_are() -> None:
    """CATALOGUE_KINDS answers "is this kind catalogued?" without importing the catalogue: it
    must name exactly the catalogue's kinds, or a kind would be passed over (or loaded for
    nothing)."""
    from kmultiarch.core.operators.catalogue import CATALOGUE
    from kmultiarch.core.operators.catalogued import CATALOGUE_KINDS, built_in_operators

    assert {(entry.group, entry.kind) for entry in CATALOGUE} == CATALOGUE_KINDS
    built_in = built_in_operators()
    assert ("monitoring.coreos.com", "Prometheus") in built_in
    assert ("apps", "Deployment") not in built_in
    assert built_in.get(("apps", "Deployment")) is None
    assert built_in[("monitoring.coreos.com", "Prometheus")].kind == "Prometheus"
    assert dict(built_in) == {
        key: entry for key, entry in built_in.items() if key in CATALOGUE_KINDS
    }


def test_a_selector_token_matches_the_list_items_whose_key_holds_the_value() -> None:
    """``*[name=grafana]``: the container a controller finds by name (the Grafana operator's,
    CloudNativePG's pgbouncer), not every item."""
    from kmultiarch.core.patch import pointer_tokens

    spec = {"containers": [{"name": "sidecar", "image": "a"}, {"name": "grafana", "image": "b"}]}
    found = list(expand(spec, pointer_tokens("/containers/*[name=grafana]/image")))
    assert found == [(("containers", 1, "image"), "b")]
    assert list(expand(spec, pointer_tokens("/containers/*[name=other]/image"))) == []
