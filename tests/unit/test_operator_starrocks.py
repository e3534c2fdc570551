"""The StarRocks operator's StarRocksCluster (issue 39, item 2), from the operator's own sample
(tests/fixtures/operators/starrocks-cluster-with-cn.yaml: StarRocks/starrocks-kubernetes-operator
examples/starrocks/deploy_a_starrocks_cluster_with_cn.yaml, commit
850a864fce73fe54c80dc26154bb6b31773d9e03). The kind was unknown: an unknown-pod-kind warning
and nothing written."""

from __future__ import annotations

import yaml
from support.declared import sample
from support.operators import ARCH_IN_AMD64, ARM64_TOLERATION, resolve

from kmultiarch.api import mutate_text
from kmultiarch.engine import EngineResult

SAMPLE = sample("starrocks-cluster-with-cn.yaml")


def _run(text: str) -> tuple[dict[str, object], EngineResult]:
    result = mutate_text(text, resolve=resolve)
    (cluster,) = yaml.safe_load_all(result.stream())
    return cluster["spec"], result


def test_a_starrocks_clusters_fe_be_and_cn_are_placed_by_their_own_specs() -> None:
    """pod/spec.go Spec: each component's pods take its spec's affinity, tolerations and
    nodeSelector; fe_pod.go, be_pod.go, cn_pod.go: its main container runs its image."""
    text = SAMPLE.replace("starrocks/be-ubuntu:latest", "registry.test/be-ubuntu-amd64:3.3")
    spec, result = _run(text)
    assert spec["starRocksFeSpec"]["tolerations"] == [ARM64_TOLERATION]  # type: ignore[index]
    assert spec["starRocksBeSpec"]["affinity"] == ARCH_IN_AMD64  # type: ignore[index]
    assert "tolerations" not in spec["starRocksBeSpec"]  # type: ignore[operator]
    assert spec["starRocksCnSpec"]["tolerations"] == [ARM64_TOLERATION]  # type: ignore[index]
    assert result.findings == []


def test_a_components_sidecar_is_judged_with_its_image() -> None:
    text = SAMPLE.replace(
        "  starRocksCnSpec:\n    image: starrocks/cn-ubuntu:latest\n",
        "  starRocksCnSpec:\n    image: starrocks/cn-ubuntu:latest\n"
        "    sidecars: [{name: log, image: registry.test/fluent-bit-amd64:3}]\n",
    )
    spec, _ = _run(text)
    assert spec["starRocksCnSpec"]["affinity"] == ARCH_IN_AMD64  # type: ignore[index]


def test_the_fe_proxy_runs_the_operators_nginx_when_it_names_no_image() -> None:
    """feproxy_controller.go buildPodTemplate: nginx:1.24.0 unless starRocksFeProxySpec.image."""
    text = SAMPLE.replace(
        "  starRocksCnSpec:\n", "  starRocksFeProxySpec:\n    replicas: 1\n  starRocksCnSpec:\n"
    )
    spec, result = _run(text)
    assert spec["starRocksFeProxySpec"]["tolerations"] == [ARM64_TOLERATION]  # type: ignore[index]
    assert "docker.io/library/nginx:1.24.0" in {str(r) for r in result.resolutions}
