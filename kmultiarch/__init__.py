"""kmultiarch: tolerations and node affinity for rendered Kubernetes manifests, from the
platforms their images support, decided at build time.

The public API (:mod:`kmultiarch.api`) is importable from here; it is loaded on first use, so
``import kmultiarch`` stays free for the command line's start-up.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kmultiarch.version import __version__

if TYPE_CHECKING:
    from kmultiarch.api import (
        EngineResult,
        Finding,
        ImageRef,
        Platform,
        Policy,
        Resolution,
        ResolutionPolicy,
        Resolver,
        SchedulingPolicy,
        ScopePolicy,
        load_policy,
        mutate_text,
        open_cache,
        resolve_platforms,
    )

__all__ = [
    "EngineResult",
    "Finding",
    "ImageRef",
    "Platform",
    "Policy",
    "Resolution",
    "ResolutionPolicy",
    "Resolver",
    "SchedulingPolicy",
    "ScopePolicy",
    "__version__",
    "load_policy",
    "mutate_text",
    "open_cache",
    "resolve_platforms",
]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from kmultiarch import api

        return getattr(api, name)
    raise AttributeError(f"module 'kmultiarch' has no attribute {name!r}")
