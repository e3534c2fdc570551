"""Bounds of a run's registry traffic: plain data, importable without the HTTP client."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ClientSettings:
    """Bounds of a run's registry traffic (CLI flags set these)."""

    concurrency: int = 32
    connect_timeout: float = 5.0
    read_timeout: float = 10.0
    #: Total time one attempt may take, body included: bounds a server that trickles bytes.
    attempt_timeout: float = 20.0
    retries: int = 2
    backoff: float = 0.25
    max_retry_after: float = 10.0
    #: Total time the lookup of one image may take, all its requests (tag, index, children,
    #: configs, tokens) and their retries included: a registry that answers every request just
    #: in time, over and over, cannot hold a run either.
    lookup_timeout: float = 60.0


__all__ = ["ClientSettings"]
