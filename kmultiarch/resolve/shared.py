"""A shared cache level on Redis (or Valkey, which speaks the same protocol), behind the local
disk cache: what one runner or repo-server learnt, every other one reads.

An accelerator, never a dependency: the client is imported only when a URL is given; every
command has a short timeout; a connection the server closed (a restart) is retried once at
once, and any other failure (server down, slow, full, wrong password) is one warning, after
which the level is off for the rest of the run. Values are JSON objects only, read back and
checked as the disk cache's are; nothing is ever unpickled. Keys are namespaced
``kmultiarch:v1:``. Credentials in the URL are never shown.

The client is redis-py's synchronous one: the warm path (:meth:`SharedCacheBackend.get_many`)
runs before any event loop exists and needs one ``MGET`` per level of a run, and the few calls
of the network path (a lock, polls while another process looks a tag up) take a fraction of a
millisecond on a LAN against the tens of milliseconds of the registry requests they save.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterable, Sequence
from typing import Any
from urllib.parse import urlsplit

KEY_PREFIX = "kmultiarch:v1:"
#: Connect and command timeouts (seconds): well under a second, so a cache never slows a run.
TIMEOUT = 0.5
#: Keys per MGET: one round trip for a run's references, in bounded replies.
BATCH = 1000


def shown_url(url: str) -> str:
    """The URL without user info, for messages."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    netloc = f"{host}:{parts.port}" if parts.port else host
    return parts._replace(netloc=netloc).geturl() if parts.netloc else url


class SharedCacheBackend:
    """A :class:`~kmultiarch.resolve.cache.CacheBackend` over Redis, plus :meth:`get_many`
    and :meth:`try_lock`."""

    def __init__(
        self,
        url: str,
        *,
        timeout: float = TIMEOUT,
        ca: str | None = None,
        warnings: list[str] | None = None,
    ) -> None:
        self.url = url
        #: Shared with the local level's list when given: the run's reporter says each once.
        self.warnings: list[str] = [] if warnings is None else warnings
        self._client: Any = None
        self._failed = False
        self._garbage_reported = False
        try:
            import redis
            from redis.backoff import NoBackoff
            from redis.retry import Retry

            tls: dict[str, Any] = {"ssl_ca_certs": ca} if ca and url.startswith("rediss:") else {}
            self._client = redis.Redis.from_url(
                url,
                socket_connect_timeout=timeout,
                socket_timeout=timeout,
                # A pooled connection the server closed (it restarted) is retried once, at
                # once; a timeout is not retried: a slow server costs one timeout, not several.
                retry=Retry(NoBackoff(), 1, supported_errors=(redis.ConnectionError,)),
                **tls,
            )
        except Exception as exc:  # noqa: BLE001 - a bad URL or a missing client: no shared level
            self._off(exc)

    @property
    def available(self) -> bool:
        return self._client is not None

    def _off(self, exc: BaseException) -> None:
        if not self._failed:
            self._failed = True
            self.warnings.append(
                f"shared cache {shown_url(self.url)} cannot be used ({type(exc).__name__}"
                f"{': ' + _one_line(exc, self.url) if str(exc) else ''}); going on without it"
            )
        client, self._client = self._client, None
        if client is not None:
            with contextlib.suppress(Exception):  # closing a broken connection
                client.close()

    def _decoded(self, key: str, raw: Any) -> dict[str, Any] | None:
        """A stored value as a JSON object, or None (absent or not JSON: never unpickled)."""
        if raw is None:
            return None
        try:
            value = json.loads(raw.decode("utf-8") if isinstance(raw, bytes) else raw)
        except (ValueError, UnicodeDecodeError):
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

    def get(self, key: str) -> dict[str, Any] | None:
        return self.get_many([key]).get(key)

    def get_many(self, keys: Sequence[str]) -> dict[str, dict[str, Any] | None]:
        """The value of each key (None: absent or unusable), in one MGET round trip per
        :data:`BATCH` keys."""
        found: dict[str, dict[str, Any] | None] = dict.fromkeys(keys)
        unique = list(found)
        for start in range(0, len(unique), BATCH):
            if self._client is None:
                break
            chunk = unique[start : start + BATCH]
            try:
                raws = self._client.mget([KEY_PREFIX + key for key in chunk])
            except Exception as exc:  # noqa: BLE001 - any failure turns the level off, once
                self._off(exc)
                break
            for key, raw in zip(chunk, raws, strict=False):
                found[key] = self._decoded(key, raw)
        return found

    def set(self, key: str, value: dict[str, Any], *, expire: float | None = None) -> None:
        if self._client is None:
            return
        try:
            self._client.set(
                KEY_PREFIX + key,
                json.dumps(value, sort_keys=True),
                ex=max(1, int(expire)) if expire is not None else None,
            )
        except Exception as exc:  # noqa: BLE001
            self._off(exc)

    def claim(
        self, lock: str, key: str, *, milliseconds: int
    ) -> tuple[bool, dict[str, Any] | None]:
        """``SET lock 1 NX PX`` and ``GET key`` in one round trip: whether this process now
        holds the lock (True when the level is off: ask for yourself), and the key's value."""
        if self._client is None:
            return True, None
        try:
            pipeline = self._client.pipeline(transaction=False)
            pipeline.set(KEY_PREFIX + lock, "1", nx=True, px=milliseconds)
            pipeline.get(KEY_PREFIX + key)
            claimed, raw = pipeline.execute()
        except Exception as exc:  # noqa: BLE001
            self._off(exc)
            return True, None
        return bool(claimed), self._decoded(key, raw)

    def peek(self, key: str, lock: str) -> tuple[dict[str, Any] | None, bool]:
        """``GET key`` and ``EXISTS lock`` in one round trip (the lock reads as released when
        the level is off)."""
        if self._client is None:
            return None, False
        try:
            pipeline = self._client.pipeline(transaction=False)
            pipeline.get(KEY_PREFIX + key)
            pipeline.exists(KEY_PREFIX + lock)
            raw, held = pipeline.execute()
        except Exception as exc:  # noqa: BLE001
            self._off(exc)
            return None, False
        return self._decoded(key, raw), bool(held)

    def delete(self, key: str) -> None:
        if self._client is None:
            return
        try:
            self._client.delete(KEY_PREFIX + key)
        except Exception as exc:  # noqa: BLE001
            self._off(exc)

    def clear(self) -> int:
        keys = list(self.keys())
        if self._client is None or not keys:
            return 0
        try:
            for start in range(0, len(keys), BATCH):
                self._client.delete(*(KEY_PREFIX + key for key in keys[start : start + BATCH]))
        except Exception as exc:  # noqa: BLE001
            self._off(exc)
        return len(keys)

    def keys(self) -> Iterable[str]:
        if self._client is None:
            return []
        try:
            return [
                (raw.decode() if isinstance(raw, bytes) else str(raw))[len(KEY_PREFIX) :]
                for raw in self._client.scan_iter(match=KEY_PREFIX + "*", count=500)
            ]
        except Exception as exc:  # noqa: BLE001
            self._off(exc)
            return []

    def close(self) -> None:
        if self._client is not None:
            with contextlib.suppress(Exception):  # closing a broken connection
                self._client.close()


def _one_line(exc: BaseException, url: str) -> str:
    text = " ".join(str(exc).split())
    password = urlsplit(url).password
    if password:
        # redis-py's messages name host and port, not the password; a future one might.
        text = text.replace(password, "***")
    return "".join(c if c.isprintable() else "?" for c in text)[:200]
