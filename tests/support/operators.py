"""What the operators' unit tests share: two platforms, the constraints kmultiarch writes for
them, and a resolver that needs no registry (an image whose name says "amd64" runs on amd64
only; every other image on both)."""

from __future__ import annotations

from collections.abc import Mapping

from kmultiarch.core.images.platform import Platform
from kmultiarch.core.images.reference import ImageRef
from kmultiarch.core.resolution import Resolution

AMD64, ARM64 = Platform("linux", "amd64"), Platform("linux", "arm64")
ARCH_IN_AMD64_TERM = {
    "matchExpressions": [{"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]}]
}
ARCH_IN_AMD64 = {
    "nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [ARCH_IN_AMD64_TERM]
        }
    }
}
ARM64_TOLERATION = {
    "key": "kubernetes.io/arch",
    "operator": "Equal",
    "value": "arm64",
    "effect": "NoSchedule",
}


def resolve(references: list[ImageRef]) -> Mapping[ImageRef, Resolution]:
    """Images whose name has "amd64" run on amd64 only; the others on both."""
    return {
        r: Resolution(
            r, frozenset({AMD64} if "amd64" in str(r) else {AMD64, ARM64}), "sha256:" + "0" * 64
        )
        for r in references
    }
