"""Loki operator (grafana/loki, operator/): a LokiStack's components, each placed by its
spec.template entry's tolerations and nodeSelector, with images the operator chooses."""

from __future__ import annotations

from kmultiarch.core.operators.model import Condition, ImageSource, OperatorKind, Placement, _p

__all__ = ["ENTRIES"]


_LOKI = "grafana/loki operator/"
#: internal/manifests/var.go: Loki's image is the operator's RELATED_IMAGE_LOKI (else
#: DefaultContainerImage), the gateway's RELATED_IMAGE_GATEWAY (else
#: DefaultLokiStackGatewayImage): nothing in the LokiStack names them.
_LOKI_IMAGE = ImageSource((), operator_only="Loki (the operator's RELATED_IMAGE_LOKI)")
_GATEWAY_IMAGE = ImageSource(
    (), operator_only="the LokiStack gateway (the operator's RELATED_IMAGE_GATEWAY)"
)


def _component(
    name: str, source: str, image: ImageSource, when: tuple[Condition, ...] = ()
) -> Placement:
    return Placement(
        _p(f"/spec/template/{name}"),
        (image,),
        creates=2,
        when=when,
        # var.go configureAffinity: the pods' affinity is the operator's (a node affinity to
        # Linux nodes when its DefaultNodeAffinity gate is on, a preferred pod anti-affinity,
        # the template's podAntiAffinity in its place): no field takes a node affinity.
        writes_affinity=False,
        cites=_LOKI + f"internal/manifests/{source} (Tolerations, NodeSelector: "
        f"spec.template.{name}'s, when set; Affinity: var.go configureAffinity)",
    )


ENTRIES: tuple[OperatorKind, ...] = (
    OperatorKind(
        "loki.grafana.com",
        "LokiStack",
        (
            _component("compactor", "compactor.go NewCompactorStatefulSet", _LOKI_IMAGE),
            _component("distributor", "distributor.go NewDistributorDeployment", _LOKI_IMAGE),
            _component("ingester", "ingester.go NewIngesterStatefulSet", _LOKI_IMAGE),
            _component("querier", "querier.go NewQuerierDeployment", _LOKI_IMAGE),
            _component(
                "queryFrontend", "query-frontend.go NewQueryFrontendDeployment", _LOKI_IMAGE
            ),
            _component("indexGateway", "indexgateway.go NewIndexGatewayStatefulSet", _LOKI_IMAGE),
            _component(
                "ruler",
                "ruler.go NewRulerStatefulSet; build.go BuildAll (only when spec.rules.enabled)",
                _LOKI_IMAGE,
                when=((_p("/spec/rules/enabled"), ("true",)),),
            ),
            _component(
                "gateway",
                "gateway.go NewGatewayDeployment; build.go BuildAll (BuildGateway with the "
                "operator's LokiStackGateway gate, which handlers/internal/gateway/gateway.go "
                "BuildOptions refuses without spec.tenants: judged whenever tenants are set)",
                _GATEWAY_IMAGE,
                when=((_p("/spec/tenants"), ()),),
            ),
        ),
        cites="LokiStack.spec.template.<component>.{tolerations,nodeSelector}",
        adds="every image (Loki, the gateway: the operator's RELATED_IMAGE_*, declare them as "
        "defaultImages); the pods' affinity",
    ),
)
