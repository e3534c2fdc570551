"""KubeVirt (kubevirt/kubevirt): the virt-launcher pod of a VirtualMachine or a
VirtualMachineInstance."""

from __future__ import annotations

from kmultiarch.core.operators.catalogue.common import optional_image
from kmultiarch.core.operators.model import ImageSource, OperatorKind, Placement, _p

__all__ = ["ENTRIES"]


ENTRIES: tuple[OperatorKind, ...] = (
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
                        optional_image(f"{path}/volumes/*/containerDisk/image"),
                    ),
                    creates=0,
                    node_selector_from=(("kubernetes.io/arch", _p(f"{path}/architecture")),),
                    cites="kubevirt/kubevirt staging/src/kubevirt.io/api/core/v1/types.go "
                    "VirtualMachineInstanceSpec (nodeSelector, affinity, tolerations, "
                    "architecture, volumes[].containerDisk.image); pkg/virt-controller/"
                    "services/template.go (the launcher pod runs virt-launcher, the operator's "
                    "image; newNodeSelectorRenderer: no architecture selector when the "
                    "cluster enables cross-architecture virtualization); "
                    "nodeselectorrenderer.go NewNodeSelectorRenderer (kubernetes.io/arch: "
                    "lower(spec.architecture), under the cluster's and the VMI's nodeSelector, "
                    "whose keys win)",
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
