"""Lookups shared by concurrent reviews, under each review's deadline.

The engine asks its ``resolve`` function synchronously; the server runs each review's engine
call in a worker thread, and that thread's ``resolve`` hands the references to the event loop
here. On the loop, a reference already being looked up (for the same credentials) is waited
for, not asked again: a hundred pods of one new image cost one registry round trip
(single-flight, as ``remote.resolve_remote`` does within one run). The lookups themselves run
in a pool of threads through :meth:`Session.resolve` (the run's own resolver: overrides, the
lock, the disk or memory level, the shared Redis level, then the registry, and ``spec.verify``),
so the answer is the one ``mutate`` gets.

A review waits no longer than its deadline (the API server's ``?timeout=`` less a margin): an
image still unanswered by then is an unresolved image (a :class:`ResolutionError` saying so),
which the engine turns into the failure policy's answer in time; the lookup goes on, and its
answer is cached for the next review.

Sessions: one long-lived session holds the cache and the lock; pods whose pull secrets give
credentials get a session of their own over the same cache (kept per credential set, never
logged). A shared level that went off (Redis down, or its budget spent) is tried again in a
fresh session after :data:`SHARED_RETRY_SECONDS`.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import hashlib
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from kmultiarch.core.findings import Finding
from kmultiarch.core.images.reference import ImageRef
from kmultiarch.core.operators.pullsecrets import DockerConfig
from kmultiarch.core.resolution import References, Resolution
from kmultiarch.errors import ResolutionError
from kmultiarch.run.config import RunConfig
from kmultiarch.run.session import Session

__all__ = ["Credentials", "LookupStats", "ReviewLookups", "SharedLookups"]

#: After the shared level went off, how long before a fresh session tries it again.
SHARED_RETRY_SECONDS = 30.0
#: Sessions kept for pods' credential sets (least recently used dropped first).
MAX_CREDENTIAL_SESSIONS = 64
#: How long an answer is kept in memory for reviews answered on the event loop (the disk and
#: shared levels keep it as long as a run's cache does: the tag TTL).
MEMO_SECONDS = 60.0
#: Answers kept in memory before the expired ones are dropped.
MAX_MEMO = 50_000
#: Threads that run lookups (each a Session.resolve: cache reads, and registry round trips
#: in an event loop of its own).
LOOKUP_THREADS = 8


@dataclass
class LookupStats:
    """What the metrics read: lookups in flight, and how they were answered."""

    in_flight: int = 0
    #: Lookups started (batches of references no other review was waiting for).
    started: int = 0
    #: References answered by another review's lookup in flight.
    shared: int = 0
    #: References a review stopped waiting for at its deadline.
    timed_out: int = 0


@dataclass(frozen=True)
class Credentials:
    """A pod's pull secrets, decoded in memory, and a key naming the set (a digest of their
    contents: never the contents)."""

    configs: tuple[DockerConfig, ...] = ()

    @property
    def key(self) -> str:
        if not self.configs:
            return ""
        digest = hashlib.sha256()
        for config in self.configs:
            digest.update(repr(sorted(config.config.items())).encode())
        return digest.hexdigest()


class SharedLookups:
    """Single-flight lookups for every review of a server (see the module's docstring)."""

    def __init__(
        self,
        config: RunConfig,
        loop: asyncio.AbstractEventLoop,
        *,
        threads: int = LOOKUP_THREADS,
        on_answers: Callable[[Sequence[Resolution]], None] | None = None,
        on_deadline_missed: Callable[[int], None] | None = None,
        on_remembered: Callable[[int], None] | None = None,
    ) -> None:
        """``on_answers``: told every lookup's answers, on the loop; ``on_deadline_missed``:
        how many images a review stopped waiting for (the metrics count them)."""
        self.config = config
        self.loop = loop
        self.stats = LookupStats()
        self.on_answers = on_answers
        self.on_deadline_missed = on_deadline_missed
        self.on_remembered = on_remembered
        self._pool = concurrent.futures.ThreadPoolExecutor(threads, "kmultiarch-lookup")
        self._guard = threading.Lock()
        self._session = Session(config)
        self._session_started = time.monotonic()
        self._retired: list[Session] = []
        self._credential_sessions: OrderedDict[str, Session] = OrderedDict()
        #: (credential key, reference) -> the lookup in flight.
        self._flights: dict[tuple[str, ImageRef], asyncio.Future[Resolution]] = {}
        #: Answers of the last :data:`MEMO_SECONDS`, for reviews answered without a thread.
        self._memo: dict[tuple[str, ImageRef], tuple[Resolution, float]] = {}
        #: What a lookup's session had to say, per flight, for the reviews that waited on it.
        self._flight_findings: dict[asyncio.Future[Resolution], list[Finding]] = {}

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)
        with self._guard:
            for session in (self._session, *self._retired, *self._credential_sessions.values()):
                session.close()

    # Sessions -------------------------------------------------------------------------------

    def _session_for(self, credentials: Credentials) -> Session:
        with self._guard:
            self._renew_if_shared_level_off()
            key = credentials.key
            if not key:
                return self._session
            session = self._credential_sessions.get(key)
            if session is None:
                session = Session(
                    self.config, pull_secrets=credentials.configs, cache=self._session.cache
                )
                self._credential_sessions[key] = session
                if len(self._credential_sessions) > MAX_CREDENTIAL_SESSIONS:
                    self._credential_sessions.popitem(last=False)
            self._credential_sessions.move_to_end(key)
            return session

    def _renew_if_shared_level_off(self) -> None:
        """A shared level that went off stays off for its session's life (a run's rule): a
        server tries it again in a fresh session, now and then."""
        if self.config.cache.url is None:
            return
        cache = self._session.cache
        shared = cache.shared
        off = shared is None or not shared.available
        if off and time.monotonic() - self._session_started >= SHARED_RETRY_SECONDS:
            # The old session may still serve lookups in other threads: closed at exit.
            self._retired.append(self._session)
            self._session = Session(self.config)
            self._session_started = time.monotonic()
            self._credential_sessions.clear()

    # The engine's resolve --------------------------------------------------------------------

    def remembered(
        self, references: Sequence[ImageRef], credentials: Credentials
    ) -> dict[ImageRef, Resolution] | None:
        """Every reference's recent answer from memory, or None when one is not there (then
        the review goes through :meth:`for_review`, off the loop)."""
        now = time.monotonic()
        key = credentials.key
        answers: dict[ImageRef, Resolution] = {}
        for reference in references:
            kept = self._memo.get((key, reference))
            if kept is None or kept[1] < now:
                return None
            answers[reference] = kept[0]
        if answers and self.on_remembered is not None:
            self.on_remembered(len(answers))
        return answers

    def for_review(self, credentials: Credentials, deadline: float) -> ReviewLookups:
        """The engine's ``resolve`` for one review (called in a worker thread, it waits on the
        loop's shared lookups until ``deadline``, ``time.monotonic()``), and what the lookups
        it waited on had to say."""
        return ReviewLookups(self, credentials, deadline)

    async def resolve(
        self,
        references: Sequence[ImageRef],
        volumes: frozenset[ImageRef],
        credentials: Credentials,
        deadline: float,
    ) -> tuple[dict[ImageRef, Resolution], list[Finding]]:
        """Every reference's answer, or a deadline error for those still unanswered; and what
        the sessions that answered had to say (a shared level that went off...)."""
        key = credentials.key
        waiting: dict[ImageRef, asyncio.Future[Resolution]] = {}
        mine: list[ImageRef] = []
        for reference in dict.fromkeys(references):
            flight = self._flights.get((key, reference))
            if flight is not None:
                self.stats.shared += 1
            else:
                flight = self.loop.create_future()
                self._flights[(key, reference)] = flight
                mine.append(reference)
            waiting[reference] = flight
        if mine:
            self._start(mine, volumes, credentials, {ref: waiting[ref] for ref in mine})
        left = deadline - time.monotonic()
        flights = set(waiting.values())
        if left > 0:
            await asyncio.wait([asyncio.shield(flight) for flight in flights], timeout=left)
        answers: dict[ImageRef, Resolution] = {}
        findings: list[Finding] = []
        missed = 0
        for reference, flight in waiting.items():
            if flight.done() and not flight.cancelled() and flight.exception() is None:
                answers[reference] = flight.result()
                findings.extend(self._flight_findings.get(flight, ()))
            else:
                self.stats.timed_out += 1
                missed += 1
                answers[reference] = Resolution(
                    reference,
                    error=ResolutionError(
                        str(reference),
                        "no answer within the admission review's deadline (the registry is "
                        "slow or unreachable; the lookup goes on and its answer is cached for "
                        "the next pod)",
                        transient=True,
                    ),
                )
        if missed and self.on_deadline_missed is not None:
            self.on_deadline_missed(missed)
        return answers, findings

    def _start(
        self,
        references: list[ImageRef],
        volumes: frozenset[ImageRef],
        credentials: Credentials,
        flights: dict[ImageRef, asyncio.Future[Resolution]],
    ) -> None:
        self.stats.started += 1
        self.stats.in_flight += len(references)
        batch = References(references, volumes & set(references))

        def look_up() -> tuple[Mapping[ImageRef, Resolution], list[Finding]]:
            session = self._session_for(credentials)
            answers = session.resolve(batch)
            return answers, session.findings()

        task = self.loop.run_in_executor(self._pool, look_up)

        def finished(
            done: asyncio.Future[tuple[Mapping[ImageRef, Resolution], list[Finding]]],
        ) -> None:
            self.stats.in_flight -= len(references)
            error = done.exception() if not done.cancelled() else None
            answers, findings = (
                done.result() if error is None and not done.cancelled() else ({}, [])
            )
            if self.on_answers is not None:
                self.on_answers(list(answers.values()))
            if not findings:
                # Answers with nothing to say are remembered; failures never are.
                expires = time.monotonic() + MEMO_SECONDS
                for reference, known in answers.items():
                    if known.error is None:
                        self._memo[(credentials.key, reference)] = (known, expires)
                if len(self._memo) > MAX_MEMO:
                    self._memo = {k: v for k, v in self._memo.items() if v[1] > time.monotonic()}
            for reference, flight in flights.items():
                self._flights.pop((credentials.key, reference), None)
                if flight.done():
                    continue
                answer = answers.get(reference)
                if answer is None:
                    reason = (
                        f"the lookup failed ({type(error).__name__}: {error})"
                        if error
                        else "the lookup gave no answer"
                    )
                    answer = Resolution(reference, error=ResolutionError(str(reference), reason))
                if findings:
                    self._flight_findings[flight] = findings
                    # Forgotten once every waiting review had the chance to read them.
                    self.loop.call_later(60, self._flight_findings.pop, flight, None)
                flight.set_result(answer)

        task.add_done_callback(finished)


class ReviewLookups:
    """One review's view of the shared lookups: the engine's ``resolve``, and ``findings``."""

    def __init__(self, lookups: SharedLookups, credentials: Credentials, deadline: float) -> None:
        self._lookups = lookups
        self._credentials = credentials
        self.deadline = deadline
        self._findings: list[Finding] = []

    def resolve(self, references: list[ImageRef]) -> Mapping[ImageRef, Resolution]:
        volumes = references.volumes if isinstance(references, References) else frozenset()
        future = asyncio.run_coroutine_threadsafe(
            self._lookups.resolve(list(references), volumes, self._credentials, self.deadline),
            self._lookups.loop,
        )
        answers, findings = future.result()
        self._findings.extend(f for f in findings if f not in self._findings)
        return answers

    def findings(self) -> list[Finding]:
        found, self._findings = self._findings, []
        return found
