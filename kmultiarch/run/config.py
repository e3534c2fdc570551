"""One run's configuration, typed and validated once, from whichever front it came through.

A run is configured from up to three places, in this order of precedence: what the user said
for this run (command-line options and their environment variables, or the keyword arguments
of the Python API), the policy (a MultiArchPolicy file, or a KRM functionConfig), and the
defaults. :func:`configure` applies that order in one place, so that every front (the CLI
commands, :mod:`kmultiarch.api`, the KRM function, the Helm post-renderer) gets the same
answer: a policy's ``spec.lock`` and ``spec.cache`` count wherever the policy does.

Pure data and the rules that combine it; reading files and the environment happens in the
adapters and in :mod:`kmultiarch.run.session`.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path

from kmultiarch.core.policy.model import Policy, VerifyMode
from kmultiarch.core.resources import DEFAULT_NAMESPACE
from kmultiarch.registry.settings import ClientSettings

__all__ = ["CacheConfig", "RunConfig", "RunRequest", "configure"]

#: Defaults of what a run's options say (the CLI shows them in --help).
DEFAULT_CACHE_TTL = 3600.0
DEFAULT_CONCURRENCY = 32
DEFAULT_TIMEOUT = 10.0
DEFAULT_RETRIES = 2


@dataclass(frozen=True)
class RunRequest:
    """What the user said for this run (options and their environment variables, or the API's
    arguments); None: not said, so the policy or the default decides."""

    no_cache: bool = False
    cache_dir: Path | None = None
    cache_ttl: float = DEFAULT_CACHE_TTL
    #: A shared cache level: redis://, rediss:// or unix:// URL.
    cache_url: str | None = None
    cache_ca: str | None = None
    #: A file holding the key that signs the shared level's entries.
    cache_key_file: str | None = None
    #: The key itself ($KMULTIARCH_CACHE_KEY). Never shown.
    cache_key: str | None = field(default=None, repr=False)
    concurrency: int = DEFAULT_CONCURRENCY
    timeout: float = DEFAULT_TIMEOUT
    retries: int = DEFAULT_RETRIES
    lock: str | None = None
    offline: bool = False
    namespace: str = DEFAULT_NAMESPACE
    #: ``--verify MODE``: wins over the policy's ``spec.verify.mode``.
    verify: VerifyMode | None = None


@dataclass(frozen=True)
class CacheConfig:
    """Where a run's answers are kept: the disk (or memory only), and a shared level."""

    enabled: bool
    directory: Path | None
    tag_ttl: float
    url: str | None = None
    ca: str | None = None
    key_file: str | None = None
    key: str | None = field(default=None, repr=False)
    #: Where the key was given, for messages (never the key).
    key_origin: str = ""
    #: ``spec.cache.budget``: seconds the run may wait for the shared level (None: default).
    budget: float | None = None


@dataclass(frozen=True)
class RunConfig:
    """Everything a run is assembled from (:class:`~kmultiarch.run.session.Session` builds it)."""

    policy: Policy
    cache: CacheConfig
    client: ClientSettings
    #: ``--lock FILE`` (read as the user gives it: a pipe is fine), else None.
    lock_file: str | None = None
    offline: bool = False
    namespace: str = DEFAULT_NAMESPACE
    #: False for a run that asks the registries afresh (``lock``): no lock answers, not even
    #: the policy's.
    use_lock: bool = True


def configure(
    policy: Policy, request: RunRequest | None = None, *, use_lock: bool = True
) -> RunConfig:
    """The run's configuration: the user's request first, then the policy, then defaults.

    The shared cache level is the request's (``--cache-url``), else the policy's
    ``spec.cache``; a key goes with the URL it came with (the policy's ``spec.cache.keyFile``
    or ``key`` only with the policy's URL), and a key the user gave wins over the policy's.
    An offline run neither reads nor writes a cache: it answers from the lock alone.
    ``--verify MODE`` replaces the policy's ``spec.verify.mode`` (its bounds stay), in the
    run's policy, which the engine decides with.
    """
    asked = request or RunRequest()
    resolution = policy.resolution
    if asked.verify is not None and asked.verify != resolution.verify.mode:
        verify = replace(resolution.verify, mode=asked.verify)
        policy = replace(policy, resolution=replace(resolution, verify=verify))
    url, ca = asked.cache_url, asked.cache_ca
    key_file, key, origin = asked.cache_key_file, asked.cache_key, ""
    if key_file is not None:
        origin = f"the file {key_file}"
    elif key is not None:
        origin = "$KMULTIARCH_CACHE_KEY"
    shared = resolution.cache
    if url is None and shared.url is not None:
        url = shared.url
        ca = ca or (str(shared.ca) if shared.ca else None)
        if key_file is None and key is None:
            if shared.key_file is not None:
                key_file, origin = str(shared.key_file), f"the file {shared.key_file}"
            elif shared.key is not None:
                key, origin = shared.key, "spec.cache.key"
    cache = CacheConfig(
        enabled=not asked.no_cache and not asked.offline,
        directory=asked.cache_dir,
        tag_ttl=asked.cache_ttl,
        url=url,
        ca=ca,
        key_file=key_file,
        key=key,
        key_origin=origin,
        budget=shared.budget,
    )
    return RunConfig(
        policy=policy,
        cache=cache,
        client=client_settings(asked.concurrency, asked.timeout, asked.retries),
        lock_file=asked.lock,
        offline=asked.offline,
        namespace=asked.namespace or DEFAULT_NAMESPACE,
        use_lock=use_lock,
    )


def client_settings(concurrency: int, timeout: float, retries: int) -> ClientSettings:
    """The registry client's bounds from the three options users set."""
    return ClientSettings(
        concurrency=concurrency,
        connect_timeout=min(5.0, timeout),
        read_timeout=timeout,
        attempt_timeout=timeout * 2,
        retries=retries,
        # A pause between attempts is no longer than an attempt: --timeout bounds a run that
        # meets 429s too (a longer Retry-After fails the lookup at once).
        max_retry_after=min(10.0, timeout * 2),
    )
