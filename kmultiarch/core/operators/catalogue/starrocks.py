"""StarRocks operator (StarRocks/starrocks-kubernetes-operator): a StarRocksCluster's FE, BE,
CN and FE proxy, each a StatefulSet (the proxy a Deployment) placed by its own spec."""

from __future__ import annotations

from kmultiarch.core.operators.catalogue.common import image_at, optional_image
from kmultiarch.core.operators.model import ImageSource, OperatorKind, Placement, _p

__all__ = ["ENTRIES"]


_STARROCKS = "StarRocks/starrocks-kubernetes-operator "
#: pkg/k8sutils/templates/pod/spec.go Spec: the pod's Affinity, Tolerations and NodeSelector are
#: the component spec's; its containers the main one, then spec.sidecars; spec.initContainers.
_SPEC_GO = "pkg/k8sutils/templates/pod/spec.go Spec (Affinity, Tolerations, NodeSelector: the "


def _component(name: str, pod_go: str) -> Placement:
    path = f"/spec/{name}"
    return Placement(
        _p(path),
        (
            image_at(f"{path}/image"),
            optional_image(f"{path}/sidecars/*/image"),
            optional_image(f"{path}/initContainers/*/image"),
        ),
        cites=_STARROCKS + _SPEC_GO + f"{name}'s; its sidecars, initContainers); "
        f"pkg/subcontrollers/{pod_go} (the main container's Image: {name}.image)",
    )


ENTRIES: tuple[OperatorKind, ...] = (
    OperatorKind(
        "starrocks.com",
        "StarRocksCluster",
        (
            _component("starRocksFeSpec", "fe/fe_pod.go"),
            _component("starRocksBeSpec", "be/be_pod.go"),
            _component("starRocksCnSpec", "cn/cn_pod.go"),
            Placement(
                _p("/spec/starRocksFeProxySpec"),
                (
                    ImageSource(
                        (_p("/spec/starRocksFeProxySpec/image"),), templates=("nginx:1.24.0",)
                    ),
                ),
                cites=_STARROCKS + _SPEC_GO + "proxy spec's); pkg/subcontrollers/feproxy/"
                "feproxy_controller.go buildPodTemplate (nginx: starRocksFeProxySpec.image, else "
                "nginx:1.24.0)",
            ),
        ),
        cites="StarRocksCluster.spec.{starRocksFeSpec,starRocksBeSpec,starRocksCnSpec}."
        "{affinity,tolerations,nodeSelector,image,sidecars,initContainers}, "
        "spec.starRocksFeProxySpec.{affinity,tolerations,nodeSelector,image}",
        adds="nginx:1.24.0 for the FE proxy when it names no image",
    ),
)
