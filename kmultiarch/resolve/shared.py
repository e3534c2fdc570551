"""A shared cache level on Redis (or Valkey, which speaks the same protocol), behind the local
disk cache: what one runner or repo-server learnt, every other one reads.

An accelerator, never a dependency: the URL is checked before anything connects; every
operation has one short deadline and caps on what it reads (:mod:`kmultiarch.resolve.redis_client`,
:mod:`kmultiarch.resolve.resp`), and all of a run's operations together one budget
(:data:`DEFAULT_BUDGET`, ``spec.cache.budget``: a server answering each operation just under
its deadline would otherwise add that to every lookup); a connection the server closed (a
restart) is retried once at once, and any other failure (a bad URL, server down, slow, full,
wrong password, a reply of the wrong shape or over a cap, the budget spent) is one warning,
after which the level is off for the rest of the run. Values are JSON objects only, read back
and checked as the disk cache's are; nothing is ever unpickled. Keys are namespaced
``kmultiarch:v1:``. Credentials in the URL are never shown. With a
:class:`~kmultiarch.resolve.signing.CacheKey`, entries are signed when written and only entries
signed with it are read (:mod:`kmultiarch.resolve.signing`).

The client is synchronous: the warm path (:meth:`SharedCacheBackend.get_many`) runs before any
event loop exists and needs one ``MGET`` per level of a run, and the few calls of the network
path (a lock, polls while another process looks a tag up) take a fraction of a millisecond on
a LAN against the tens of milliseconds of the registry requests they save.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, TypeVar

from kmultiarch.resolve import resp
from kmultiarch.resolve.redis_client import (
    TIMEOUT,
    InvalidCacheUrl,
    RedisAddress,
    RedisClient,
    shown_url,
)
from kmultiarch.resolve.signing import CacheKey, Verdict, seal, unseal

__all__ = [
    "BATCH",
    "DEFAULT_BUDGET",
    "KEY_PREFIX",
    "LISTING_BUDGET",
    "TIMEOUT",
    "SharedCacheBackend",
    "shown_url",
]

KEY_PREFIX = "kmultiarch:v1:"
_PREFIX = KEY_PREFIX.encode()
#: Keys per MGET (and per DEL): one round trip for a run's references, in bounded replies.
BATCH = 1000
#: Keys SCAN is asked for per call, and how far a listing goes (a server that answers pages
#: for ever ends the listing, and the level, at these caps).
_SCAN_COUNT = 500
#: Seconds a run may spend waiting for the shared level, all its operations together: a healthy
#: server on a LAN answers in a millisecond (a run makes a few MGETs, and a SET or two per image
#: looked up); one answering every operation in 0.4 s would add 13 s to 10 images (issue 28).
DEFAULT_BUDGET = 2.0
#: The budget of ``cache info`` and ``cache clear``, which list every key (SCAN, a page a round
#: trip): a million keys are 2,000 pages, a few seconds; a server paging for ever ends here.
LISTING_BUDGET = 10.0
_SCAN_PAGES = 100_000
_SCAN_KEYS = 1_000_000
#: What the URL must look like, said when it does not.
URL_FORMS = "redis://[user:password@]host:port/db, rediss://... or unix:///path/redis.sock"
T = TypeVar("T")


class SharedCacheBackend:
    """A :class:`~kmultiarch.resolve.cache.CacheBackend` over Redis, plus :meth:`get_many`,
    :meth:`claim` and :meth:`peek`."""

    def __init__(
        self,
        url: str,
        *,
        timeout: float = TIMEOUT,
        ca: str | None = None,
        key: CacheKey | None = None,
        warnings: list[str] | None = None,
        budget: float = DEFAULT_BUDGET,
        budget_name: str = "spec.cache.budget",
    ) -> None:
        self.shown_url = shown_url(url)
        self._timeout = timeout
        self._budget = budget
        self._budget_name = budget_name
        #: Seconds spent in operations so far, and what the level was doing (for messages).
        self.spent = 0.0
        self._doing = ""
        #: Shared with the local level's list when given: the run's reporter says each once.
        self.warnings: list[str] = [] if warnings is None else warnings
        self._key = key
        self._secrets: list[str] = []
        self._client: RedisClient | None = None
        self._failed = False
        self._garbage_reported = False
        self._refused_reported = False
        try:
            address = RedisAddress.parse(url)
        except InvalidCacheUrl as exc:
            self._failed = True
            self.warnings.append(
                f"shared cache URL {self.shown_url} is not valid: {exc}; fix --cache-url, "
                f"$KMULTIARCH_CACHE_URL or spec.cache.url ({URL_FORMS}); going on without it"
            )
            return
        self._secrets = [s for s in (address.password, address.username) if s]
        self._client = RedisClient(address, timeout=timeout, ca=ca)

    @property
    def available(self) -> bool:
        return self._client is not None

    def _run(self, command: resp.Command[T]) -> T | None:
        """The command's reply; None when the level is (or now goes) off."""
        return self._within_budget(lambda client, timeout: client.run(command, timeout=timeout))

    def _within_budget(self, operation: Callable[[RedisClient, float], T]) -> T | None:
        """``operation``'s result, given the operation deadline or what is left of the run's
        budget if less; None when the level is (or now goes) off. The level goes off, with one
        warning, once the budget is spent."""
        client = self._client
        if client is None:
            return None
        left = self._budget - self.spent
        if left <= 0:
            self._over_budget()
            return None
        started = time.monotonic()
        try:
            result = operation(client, min(self._timeout, left))
        except (resp.RespError, OSError) as exc:
            self.spent += time.monotonic() - started
            if self.spent >= self._budget - 0.001:
                self._over_budget()
            else:
                self._off(exc)
            return None
        self.spent += time.monotonic() - started
        if self.spent >= self._budget:
            self._over_budget()
        return result

    def _over_budget(self) -> None:
        doing = f" ({self._doing})" if self._doing else ""
        self._off(
            None,
            f"shared cache {self.shown_url} took {self.spent:.1f} s of this run{doing}, its "
            f"whole budget of {self._budget:g} s ({self._budget_name}); going on without it",
        )

    def _off(self, exc: BaseException | None, message: str = "") -> None:
        if not self._failed:
            self._failed = True
            if exc is not None:
                message = (
                    f"shared cache {self.shown_url} cannot be used ({type(exc).__name__}"
                    f"{': ' + self._one_line(exc) if str(exc) else ''}); going on without it"
                )
            self.warnings.append(message)
        client, self._client = self._client, None
        if client is not None:
            client.close()

    def _one_line(self, exc: BaseException) -> str:
        text = " ".join(str(exc).split())
        for secret in self._secrets:
            # Our messages and the server's name no credential; a future one might.
            text = text.replace(secret, "***")
        return "".join(c if c.isprintable() else "?" for c in text)[:200]

    def _decoded(self, key: str, raw: bytes | None) -> dict[str, Any] | None:
        """A stored value as a JSON object, or None (absent, not JSON, or with a key, not
        signed with it: never unpickled)."""
        if raw is None:
            return None
        record, verdict = unseal(self._key, _PREFIX + key.encode(), raw)
        if record is None:
            self._refused(key, verdict)
            return None
        try:
            value = json.loads(record)
        except ValueError:  # UnicodeDecodeError included
            value = None
        if isinstance(value, dict):
            return value
        self.garbage(key)
        return None

    def garbage(self, key: str) -> None:
        """An entry that is not what kmultiarch writes: a miss, said once per run (the answer
        fetched instead overwrites it)."""
        if not self._garbage_reported:
            self._garbage_reported = True
            self.warnings.append(
                f"shared cache entry {key!r} is not a kmultiarch JSON record; ignoring it "
                "(and any other such entry this run)"
            )

    def _refused(self, key: str, verdict: Verdict) -> None:
        if not self._refused_reported:
            self._refused_reported = True
            self.warnings.append(
                f"shared cache entry {key!r} is {verdict.value}: not written by a runner with "
                "this cache key; ignoring it (and any other such entry this run) and asking "
                "the registry"
            )

    def get(self, key: str) -> dict[str, Any] | None:
        return self.get_many([key]).get(key)

    def get_many(self, keys: Sequence[str]) -> dict[str, dict[str, Any] | None]:
        """The value of each key (None: absent or unusable), in one MGET round trip per
        :data:`BATCH` keys."""
        found: dict[str, dict[str, Any] | None] = dict.fromkeys(keys)
        for key, raw in self._stored(list(found)):
            found[key] = self._decoded(key, raw)
        return found

    def _stored(self, keys: Sequence[str]) -> Iterator[tuple[str, bytes | None]]:
        """Each key with its stored value, in one MGET per :data:`BATCH` keys; it stops where
        the level goes off."""
        for start in range(0, len(keys), BATCH):
            chunk = keys[start : start + BATCH]
            raws = self._run(resp.mget([_PREFIX + key.encode() for key in chunk]))
            if raws is None:
                return
            yield from zip(chunk, raws, strict=True)

    def set(self, key: str, value: dict[str, Any], *, expire: float | None = None) -> None:
        redis_key = _PREFIX + key.encode()
        record = json.dumps(value, sort_keys=True).encode()
        seconds = max(1, int(expire)) if expire is not None else None
        self._run(resp.set_value(redis_key, seal(self._key, redis_key, record), seconds=seconds))

    def claim(
        self, lock: str, key: str, *, milliseconds: int
    ) -> tuple[bool, dict[str, Any] | None]:
        """``SET lock 1 NX PX`` and ``GET key`` in one round trip: whether this process now
        holds the lock (True when the level is off: ask for yourself), and the key's value."""
        replies = self._within_budget(
            lambda client, timeout: client.run_pair(
                resp.set_value(
                    _PREFIX + lock.encode(), b"1", milliseconds=milliseconds, only_if_absent=True
                ),
                resp.get(_PREFIX + key.encode()),
                timeout=timeout,
            )
        )
        if replies is None:
            return True, None
        claimed, raw = replies
        return claimed, self._decoded(key, raw)

    def peek(self, key: str, lock: str) -> tuple[dict[str, Any] | None, bool]:
        """``GET key`` and ``EXISTS lock`` in one round trip (the lock reads as released when
        the level is off)."""
        replies = self._within_budget(
            lambda client, timeout: client.run_pair(
                resp.get(_PREFIX + key.encode()),
                resp.exists(_PREFIX + lock.encode()),
                timeout=timeout,
            )
        )
        if replies is None:
            return None, False
        raw, held = replies
        return self._decoded(key, raw), held > 0

    def delete(self, key: str) -> None:
        self._run(resp.delete([_PREFIX + key.encode()]))

    def clear(self) -> int:
        """Delete every key under the prefix, whatever bytes follow it (a key need not be
        UTF-8); the number deleted."""
        keys = self._raw_keys()
        removed = 0
        for start in range(0, len(keys), BATCH):
            count = self._run(resp.delete(keys[start : start + BATCH]))
            if count is None:
                break
            removed += count
        return removed

    def keys(self) -> Iterable[str]:
        """The keys under the prefix, without it (bytes that are not UTF-8 shown escaped)."""
        return [key[len(_PREFIX) :].decode("utf-8", "backslashreplace") for key in self._raw_keys()]

    def verified(self, keys: Sequence[str]) -> int:
        """How many of ``keys`` hold a value this runner would use (signed with its key, when it
        has one), without warnings: for ``cache info``."""
        return sum(
            1
            for key, raw in self._stored(list(dict.fromkeys(keys)))
            if raw is not None and unseal(self._key, _PREFIX + key.encode(), raw)[0] is not None
        )

    def _raw_keys(self) -> list[bytes]:
        found: dict[bytes, None] = {}
        cursor = b"0"
        for pages in range(_SCAN_PAGES):
            self._doing = (
                f"listing its keys: SCAN still paging after {pages} pages, {len(found)} keys"
            )
            page = self._run(resp.scan(cursor, _PREFIX + b"*", _SCAN_COUNT))
            if page is None:
                return []
            cursor, keys = page
            found.update(dict.fromkeys(key for key in keys if key.startswith(_PREFIX)))
            if cursor == b"0":
                self._doing = ""
                return list(found)
            if len(found) > _SCAN_KEYS:
                break
        self._off(resp.ProtocolError(f"SCAN went on past {_SCAN_PAGES} pages or {_SCAN_KEYS} keys"))
        return []

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
