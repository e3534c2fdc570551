"""OpenTelemetry operator (open-telemetry/opentelemetry-operator): the collector's pods and
its target allocator's; an OpAMPBridge's Deployment."""

from __future__ import annotations

from kmultiarch.core.operators.catalogue.common import image_at, optional_image
from kmultiarch.core.operators.model import OperatorKind, Placement, _p

__all__ = ["ENTRIES"]


ENTRIES: tuple[OperatorKind, ...] = (
    # OpenTelemetry operator: the collector's pods follow its spec (no pod in sidecar mode:
    # the collector is injected into other pods); the target allocator is its own Deployment.
    OperatorKind(
        "opentelemetry.io",
        "OpenTelemetryCollector",
        (
            Placement(
                _p("/spec"),
                (
                    image_at("/spec/image"),
                    optional_image("/spec/additionalContainers/*/image"),
                    optional_image("/spec/initContainers/*/image"),
                ),
                unless=((_p("/spec/mode"), ("sidecar",)),),
                injected_by="sidecar.opentelemetry.io/inject",
                cites="open-telemetry/opentelemetry-operator internal/manifests/collector/"
                "collector.go Build (mode sidecar: no workload), deployment.go, daemonset.go, "
                "statefulset.go (spec.initContainers, spec.additionalContainers); "
                "pkg/sidecar/annotation.go (mode sidecar: injected into the pods annotated "
                "sidecar.opentelemetry.io/inject, true or the collector's name, or whose "
                "namespace is)",
            ),
            Placement(
                _p("/spec/targetAllocator"),
                (image_at("/spec/targetAllocator/image"),),
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
    # An OpAMPBridge: one Deployment, placed by its spec, running spec.image.
    OperatorKind(
        "opentelemetry.io",
        "OpAMPBridge",
        (
            Placement(
                _p("/spec"),
                (image_at("/spec/image"),),
                cites="open-telemetry/opentelemetry-operator internal/manifests/opampbridge/"
                "deployment.go Deployment (Tolerations, NodeSelector, Affinity: spec's; one "
                "container), container.go Container (spec.image, else the operator's "
                "--operator-opamp-bridge-image: internal/config/cli.go)",
            ),
        ),
        cites="OpAMPBridge.spec.{affinity,tolerations,nodeSelector,image}",
        adds="the operator's --operator-opamp-bridge-image when spec.image is not set",
    ),
)
