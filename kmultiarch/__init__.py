"""kmultiarch: tolerations and node affinity for rendered Kubernetes manifests, from the
platforms their images support, decided at build time."""

from __future__ import annotations

__version__ = "0.1.0"
