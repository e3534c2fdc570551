"""kmultiarch as a library, for programs that embed it (an Argo CD plugin, a CI script).

The whole public surface is here and re-exported by :mod:`kmultiarch`::

    import kmultiarch

    policy = kmultiarch.load_policy("policy.yaml")          # or kmultiarch.Policy()
    # in code: kmultiarch.Policy(scheduling=kmultiarch.SchedulingPolicy(node_affinity="preferred"))
    result = kmultiarch.mutate_text(rendered_yaml, policy)
    print(result.stream())                                 # the transformed stream
    for finding in result.findings:                        # warnings and errors, as data
        print(finding.severity, finding.location(), finding.message)

    platforms = await kmultiarch.resolve_platforms(["nginx:1.27"])   # inside an event loop

Everything else in the package is internal and may change between releases.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from kmultiarch.core.findings import Finding
from kmultiarch.core.images.platform import Platform
from kmultiarch.core.images.reference import ImageRef
from kmultiarch.core.policy.model import Policy, ResolutionPolicy, SchedulingPolicy, ScopePolicy
from kmultiarch.core.resolution import Resolution, Resolve
from kmultiarch.engine import EngineResult, run
from kmultiarch.io.config import load_policy
from kmultiarch.resolve.cache import ResolutionCache, open_cache
from kmultiarch.resolve.resolver import Resolver
from kmultiarch.run.config import RunRequest, configure
from kmultiarch.run.runs import run_manifests
from kmultiarch.run.session import Session
from kmultiarch.yaml.stream import InputSource

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
    "load_policy",
    "mutate_text",
    "open_cache",
    "resolve_platforms",
]


def mutate_text(
    text: str,
    policy: Policy | None = None,
    *,
    resolve: Resolve | None = None,
    cache_dir: Path | None = None,
    source: str = "<text>",
) -> EngineResult:
    """Decide and edit every pod template in the YAML stream ``text``.

    ``resolve`` answers image references with their platforms; by default the run is
    assembled as the command line assembles it (:mod:`kmultiarch.run`): the policy's
    overrides, its lock (``spec.lock``: a file, or written out in the policy), the disk cache
    at ``cache_dir`` (the default cache directory when None) and the policy's shared cache
    (``spec.cache``), then the registries; the findings of the cache come with the run's.
    Must not be called from a running event loop when it has to look images up: use
    :func:`resolve_platforms` first and pass a ``resolve`` over its answers. Raises
    :class:`kmultiarch.errors.KmultiarchError` subclasses on bad input.
    """
    chosen = policy if policy is not None else Policy()
    sources = [InputSource(source, text)]
    if resolve is not None:
        return run(sources, chosen, resolve)
    return run_manifests(configure(chosen, RunRequest(cache_dir=cache_dir)), sources)


async def resolve_platforms(
    images: Iterable[str | ImageRef],
    policy: Policy | None = None,
    *,
    cache: ResolutionCache | None = None,
) -> dict[ImageRef, Resolution]:
    """The platforms of each image, from overrides, the cache or its registry; async, for
    callers that already run an event loop. A failed lookup is a :class:`Resolution` whose
    ``error`` says why, never an exception."""
    chosen = policy if policy is not None else Policy()
    references = [
        image if isinstance(image, ImageRef) else ImageRef.parse(image) for image in images
    ]
    with Session(configure(chosen), cache=cache) as session:
        return await session.resolver.resolve_async(references)
