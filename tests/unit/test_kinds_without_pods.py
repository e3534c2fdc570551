"""Kinds of known operators that make no pods (issue 39, item 3): no unknown-pod-kind warning,
asking for a spec.podSpecs entry that must not be written; each from the operator's own sample
(repository, path, commit). And a resource shaped like a pod maker without containers is
still warned."""

from __future__ import annotations

import pytest
from support.operators import resolve

from kmultiarch.api import mutate_text
from kmultiarch.core.findings import UNKNOWN_POD_KIND
from kmultiarch.core.operators.catalogued import CATALOGUE_KINDS, MAKES_NO_PODS

SAMPLES = {
    # kubernetes-sigs/kueue site/static/examples/admin/resource-flavor-tolerations.yaml
    # (commit ff69552e79ad21652c36caa97038382e55625cf7), comments left out.
    "ResourceFlavor": """\
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata:
  name: "spot"
spec:
  nodeLabels:
    instance-type: spot
  tolerations:
  - key: "spot-taint"
    operator: "Exists"
    effect: "NoSchedule"
""",
    # cloudnative-pg/cloudnative-pg config/olm-samples/postgresql_v1_imagecatalog.yaml
    # (commit a95a534dbe0854495b863bbc1b7651f74d310916).
    "ImageCatalog": """\
apiVersion: postgresql.cnpg.io/v1
kind: ImageCatalog
metadata:
  name: postgresql
  namespace: default
spec:
  images:
    - major: 15
      image: ghcr.io/cloudnative-pg/postgresql:15.6
    - major: 16
      image: ghcr.io/cloudnative-pg/postgresql:16.2
""",
    # cloudnative-pg/cloudnative-pg config/olm-samples/postgresql_v1_clusterimagecatalog.yaml
    # (commit a95a534dbe0854495b863bbc1b7651f74d310916).
    "ClusterImageCatalog": """\
apiVersion: postgresql.cnpg.io/v1
kind: ClusterImageCatalog
metadata:
  name: postgresql
spec:
  images:
    - major: 15
      image: ghcr.io/cloudnative-pg/postgresql:15.6
    - major: 16
      image: ghcr.io/cloudnative-pg/postgresql:16.2
""",
    # k8snetworkplumbingwg/sriov-network-operator README.md, "Create a node policy"
    # (commit 249e20012faf17b4f38057f29608bde2b21c5c9a).
    "SriovNetworkNodePolicy": """\
apiVersion: sriovnetwork.openshift.io/v1
kind: SriovNetworkNodePolicy
metadata:
  name: policy-1
  namespace: sriov-network-operator
spec:
  deviceType: netdevice
  nicSelector:
    pfName: ["ens1f0"]
  nodeSelector:
    feature.node.kubernetes.io/network-sriov.capable: "true"
  numVfs: 4
  resourceName: intelnics
""",
    # kserve/kserve config/runtimes/kserve-sklearnserver.yaml
    # (commit aaac4e294dae2c7b1aa1886447793f3aa1c30912), its container's securityContext and
    # resources left out; the image as the release's kustomization sets it.
    "ClusterServingRuntime": """\
apiVersion: serving.kserve.io/v1alpha1
kind: ClusterServingRuntime
metadata:
  name: kserve-sklearnserver
  annotations:
    serving.kserve.io/server-type: sklearnserver
spec:
  annotations:
    prometheus.kserve.io/port: '8080'
    prometheus.kserve.io/path: "/metrics"
  supportedModelFormats:
    - name: sklearn
      version: "1"
      autoSelect: true
      priority: 1
  protocolVersions:
    - v1
    - v2
  containers:
    - name: kserve-container
      image: kserve/sklearnserver:v0.15.0
      args:
        - --model_name={{.Name}}
        - --model_dir=/mnt/models
        - --http_port=8080
""",
}


@pytest.mark.parametrize("kind", sorted(SAMPLES))
def test_a_kind_that_makes_no_pods_is_not_warned_as_an_unknown_pod_kind(kind: str) -> None:
    """They were warned unknown-pod-kind, asking for a spec.podSpecs entry: none is wanted."""
    result = mutate_text(SAMPLES[kind], resolve=resolve)
    assert [finding.rule for finding in result.findings] == []
    assert result.stream() == SAMPLES[kind]


def test_a_servingruntime_in_a_namespace_is_known_as_well() -> None:
    text = SAMPLES["ClusterServingRuntime"].replace(
        "kind: ClusterServingRuntime", "kind: ServingRuntime"
    )
    assert mutate_text(text, resolve=resolve).findings == []


def test_every_kind_making_no_pods_says_why_with_its_operators_code_and_is_in_the_docs() -> None:
    from pathlib import Path

    docs = (Path(__file__).resolve().parents[2] / "docs" / "operators.md").read_text("utf-8")
    for (group, kind), why in MAKES_NO_PODS.items():
        assert (group, kind) not in CATALOGUE_KINDS  # a kind is one or the other
        assert "/" in why or why.startswith("as "), kind  # a repository's file, or "as X"
        assert f"`{group}` {kind}" in docs or f", {kind} |" in docs, kind


def test_a_pod_maker_shaped_resource_without_containers_is_still_warned() -> None:
    """An image beside tolerations and an affinity, as a Dragonfly's spec, and no containers:
    its operator most likely makes pods from it."""
    text = (
        "apiVersion: cache.example.com/v1\nkind: Store\nmetadata: {name: s}\nspec:\n"
        "  image: registry.test/store:1\n"
        "  tolerations: [{key: dedicated, operator: Exists, effect: NoSchedule}]\n"
        "  affinity: {podAntiAffinity: {}}\n"
    )
    result = mutate_text(text, resolve=resolve)
    assert [finding.rule for finding in result.findings] == [UNKNOWN_POD_KIND]
    assert "placements: [{path: /spec, images: [/spec/image]}]" in result.findings[0].message
