"""Crossplane (crossplane/crossplane): a provider's Deployment runtime config."""

from __future__ import annotations

from kmultiarch.core.operators.catalogue.common import image_at
from kmultiarch.core.operators.model import OperatorKind, Placement, _p

__all__ = ["ENTRIES"]


ENTRIES: tuple[OperatorKind, ...] = (
    # Crossplane: the provider's deployment; its image is the package's.
    OperatorKind(
        "pkg.crossplane.io",
        "DeploymentRuntimeConfig",
        (
            Placement(
                _p("/spec/deploymentTemplate/spec/template/spec"),
                (image_at("/spec/deploymentTemplate/spec/template/spec/containers/*/image"),),
                creates=4,
                pod_spec=True,
            ),
        ),
        cites="DeploymentRuntimeConfig.spec.deploymentTemplate.spec.template (a Deployment's)",
        adds="the provider's container (the package's image) when the template names none",
    ),
)
