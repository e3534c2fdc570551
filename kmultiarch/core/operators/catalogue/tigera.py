"""Tigera operator (tigera/operator): the Installation's control-plane Deployments (Typha,
calico-kube-controllers), placed by their overrides' pod templates over the Installation's
controlPlaneTolerations and controlPlaneNodeSelector; Calico's images, the operator's choice.

Not catalogued: the DaemonSets (calico-node, calico-node-windows, csi-node-driver, the Windows
upgrade DaemonSet). They are meant to run on every node and tolerate every taint
(pkg/render/node.go and csi.go: rmeta.TolerateAll); an override's tolerations would replace
that whole, and an architecture constraint on the network's DaemonSet would leave the nodes it
excludes without networking. Calico's images are multi-arch.
"""

from __future__ import annotations

from dataclasses import replace

from kmultiarch.core.operators.model import (
    ImageSource,
    Inheritance,
    Merge,
    OperatorKind,
    Placement,
    _p,
)

__all__ = ["ENTRIES"]


_TIGERA = "tigera/operator "

#: The images: Calico's, chosen by the operator release (components.CombinedCalicoImage,
#: GetReference: spec.registry, imagePath, imagePrefix, the variant's defaults, an ImageSet's
#: digests); the resource names none.
_CALICO_IMAGE = ImageSource(
    (),
    operator_only="Calico's (the operator release's image, from spec.registry, imagePath, "
    "imagePrefix and variant, or an ImageSet)",
)

#: ApplyDeploymentOverrides (pkg/render/common/components/components.go
#: applyReplicatedPodResourceOverrides): the override's affinity and tolerations, when set,
#: replace the rendered ones; its nodeSelector's keys are added to the rendered nodeSelector
#: (MergeMaps: the rendered keys win a clash).
_OVERRIDES = (
    "pkg/render/common/components/components.go ApplyDeploymentOverrides, "
    "applyReplicatedPodResourceOverrides (GetAffinity, GetTolerations: set, they replace the "
    "rendered ones; GetNodeSelector: merged in by common.MergeMaps, the rendered keys winning "
    "a clash)"
)

#: Typha's rendered affinity when spec.typhaAffinity is unset: a preferred anti-affinity across
#: zones, dropped once the override sets an affinity (kept beside the constraint).
_TYPHA_ANTI_AFFINITY = {
    "podAntiAffinity": {
        "preferredDuringSchedulingIgnoredDuringExecution": [
            {
                "weight": 1,
                "podAffinityTerm": {
                    "labelSelector": {
                        "matchExpressions": [
                            {"key": "k8s-app", "operator": "In", "values": ["calico-typha"]}
                        ]
                    },
                    "topologyKey": "topology.kubernetes.io/zone",
                },
            }
        ]
    }
}


#: What the Installation's spec calls the fields the operator renders a control-plane
#: Deployment's pods with, under the override's own.
_CONTROL_PLANE = {
    "tolerations": "controlPlaneTolerations",
    "nodeSelector": "controlPlaneNodeSelector",
}


def _override(override: str, fields: tuple[tuple[str, Merge], ...], cites: str) -> Placement:
    """A control-plane Deployment's pods, placed by spec.<override>.spec.template.spec over
    the Installation's control-plane fields (``fields``, each merged as given)."""
    return Placement(
        _p(f"/spec/{override}/spec/template/spec"),
        (_CALICO_IMAGE,),
        # An Installation may have no spec at all (the operator's defaults): created too.
        creates=5,
        inherits=Inheritance(
            _p("/spec"),
            fields,
            names=tuple((name, _CONTROL_PLANE[name]) for name, _ in fields),
        ),
        cites=_TIGERA + cites + "; " + _OVERRIDES,
    )


ENTRIES: tuple[OperatorKind, ...] = (
    OperatorKind(
        "operator.tigera.io",
        "Installation",
        (
            # Typha: tolerations spec.controlPlaneTolerations when set, else the bootstrap
            # set; no controlPlaneNodeSelector; its own affinity (typhaAffinity's nodeAffinity
            # and an anti-affinity); then the typhaDeployment override. The deprecated
            # typhaAffinity's nodeAffinity is part of the affinity an override's would
            # replace: no constraint is written beside it.
            replace(
                _override(
                    "typhaDeployment",
                    (("tolerations", "replace"),),
                    "pkg/render/typha.go typhaDeployment (Tolerations: "
                    "Installation.ControlPlaneTolerations when not empty, else rmeta."
                    "TolerateBootstrap; Affinity: affinity(), TyphaAffinity.NodeAffinity and a "
                    "preferred pod anti-affinity across zones; no NodeSelector; then "
                    "rcomp.ApplyDeploymentOverrides(deploy, Installation.TyphaDeployment)); "
                    "api/v1/typha_deployment_types.go TyphaDeploymentPodSpec",
                ),
                unless=((_p("/spec/typhaAffinity/nodeAffinity"), ()),),
                default_affinity=_TYPHA_ANTI_AFFINITY,
            ),
            # calico-kube-controllers: controlPlaneNodeSelector, controlPlaneTolerations (with
            # the CriticalAddonsOnly and control-plane tolerations appended); no affinity;
            # then the calicoKubeControllersDeployment override.
            _override(
                "calicoKubeControllersDeployment",
                (("tolerations", "replace"), ("nodeSelector", "merge-by-key")),
                "pkg/render/kubecontrollers/kube-controllers.go controllersDeployment "
                "(NodeSelector: Installation.ControlPlaneNodeSelector; Tolerations: "
                "appendUniqueTolerations(ControlPlaneTolerations, rmeta."
                "TolerateCriticalAddonsAndControlPlane...); no Affinity; then "
                "rcomp.ApplyDeploymentOverrides(&d, Installation."
                "CalicoKubeControllersDeployment)); api/v1/calico_kubecontrollers_types.go "
                "CalicoKubeControllersDeploymentPodSpec",
            ),
        ),
        cites="Installation.spec.{typhaDeployment,calicoKubeControllersDeployment}.spec."
        "template.spec.{affinity,tolerations,nodeSelector}, spec.controlPlaneTolerations, "
        "spec.controlPlaneNodeSelector, spec.typhaAffinity",
        adds="Calico's images, chosen by the operator (declare them as defaultImages); "
        "tolerations an override lacks are the operator's (controlPlaneTolerations and its "
        "own), replaced by any written there: never created",
    ),
)
