"""The server's ``/metrics``: Prometheus text, names in Prometheus's conventions (a
``kmultiarch_admission_`` prefix, ``_total`` counters, ``_seconds`` durations; prometheus.io
"Metric and label naming"), in a registry of its own (prometheus-client, the admission extra).

Answers are counted by where they came from (``Resolution.source``): the policy's overrides,
the lock, the cache (the disk or memory level, or the shared Redis level behind it), or the
registry (a cache miss). A registry error is a lookup that ended in an error.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    disable_created_metrics,
    generate_latest,
)

from kmultiarch.core.resolution import Resolution

__all__ = ["CONTENT_TYPE", "AdmissionMetrics"]

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
#: Review durations: a warm review takes about a millisecond, a cold one a registry round trip,
#: and the API server gives up at timeoutSeconds (at most 30).
DURATION_BUCKETS = (
    0.0005,
    0.001,
    0.0025,
    0.005,
    0.01,
    0.025,
    0.05,
    0.1,
    0.25,
    0.5,
    1.0,
    2.5,
    5.0,
    10.0,
    30.0,
)


class AdmissionMetrics:
    def __init__(self, in_flight: Callable[[], float]) -> None:
        # The *_created series (a timestamp per label set) double /metrics for nothing here.
        disable_created_metrics()  # type: ignore[no-untyped-call]
        self.registry = CollectorRegistry(auto_describe=True)
        self.reviews = Counter(
            "kmultiarch_admission_reviews_total",
            "AdmissionReviews answered, by outcome (patched, unchanged, warned, denied, invalid).",
            ["outcome"],
            registry=self.registry,
        )
        self.duration = Histogram(
            "kmultiarch_admission_review_duration_seconds",
            "Time from a review's arrival to its answer.",
            buckets=DURATION_BUCKETS,
            registry=self.registry,
        )
        self.cache_hits = Counter(
            "kmultiarch_admission_cache_hits_total",
            "Images answered without the registry, by level (memory: answered in the last "
            "minute; override, lock, cache: the disk or shared level).",
            ["level"],
            registry=self.registry,
        )
        self.cache_misses = Counter(
            "kmultiarch_admission_cache_misses_total",
            "Images looked up in their registry, by level missed (cache: no level answered).",
            ["level"],
            registry=self.registry,
        )
        self.registry_errors = Counter(
            "kmultiarch_admission_registry_errors_total",
            "Image lookups that ended in an error (unreachable, denied, not found, timed out).",
            registry=self.registry,
        )
        self.deadline_misses = Counter(
            "kmultiarch_admission_deadline_misses_total",
            "Images a review stopped waiting for at its deadline (the failure policy answered).",
            registry=self.registry,
        )
        lookups = Gauge(
            "kmultiarch_admission_lookups_in_flight",
            "Image lookups under way (shared by every review waiting for them).",
            registry=self.registry,
        )
        lookups.set_function(in_flight)
        for outcome in ("patched", "unchanged", "warned", "denied", "invalid"):
            self.reviews.labels(outcome)
        for level in ("memory", "override", "lock", "cache"):
            self.cache_hits.labels(level)
        self.cache_misses.labels("cache")

    def count_answers(self, answers: Sequence[Resolution]) -> None:
        for answer in answers:
            if answer.source == "registry":
                self.cache_misses.labels("cache").inc()
                if answer.error is not None:
                    self.registry_errors.inc()
            elif answer.error is None:
                self.cache_hits.labels(answer.source).inc()

    def text(self) -> bytes:
        text: bytes = generate_latest(self.registry)
        return text
