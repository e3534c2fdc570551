"""A shared cache level on Redis (or Valkey, which speaks the same protocol), in front of which
the local disk cache sits: what one runner or repo-server learnt, every other one reads.

An accelerator, never a dependency: the client is imported only when a URL is given; every
command has a short timeout; the first failure (server down, slow, full, wrong password) is
one warning and the level is off for the rest of the run. Values are JSON objects only, read
back and checked as the disk cache's are; nothing is ever unpickled. Keys are namespaced
``kmultiarch:v1:``. Credentials in the URL are never shown.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterable
from typing import Any
from urllib.parse import urlsplit

KEY_PREFIX = "kmultiarch:v1:"
#: Connect and command timeouts (seconds): well under a second, so a cache never slows a run.
TIMEOUT = 0.5


def shown_url(url: str) -> str:
    """The URL without user info, for messages."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    netloc = f"{host}:{parts.port}" if parts.port else host
    return parts._replace(netloc=netloc).geturl() if parts.netloc else url


class SharedCacheBackend:
    """A :class:`~kmultiarch.resolve.cache.CacheBackend` over Redis."""

    def __init__(self, url: str, *, timeout: float = TIMEOUT, ca: str | None = None) -> None:
        self.url = url
        self.warnings: list[str] = []
        self._client: Any = None
        try:
            import redis

            tls: dict[str, Any] = {"ssl_ca_certs": ca} if ca and url.startswith("rediss:") else {}
            self._client = redis.Redis.from_url(
                url, socket_connect_timeout=timeout, socket_timeout=timeout, **tls
            )
        except Exception as exc:  # noqa: BLE001 - a bad URL or a missing client: no shared level
            self._off(exc)

    def _off(self, exc: BaseException) -> None:
        if self._client is not None or not self.warnings:
            self.warnings.append(
                f"shared cache {shown_url(self.url)} cannot be used ({type(exc).__name__}"
                f"{': ' + _one_line(exc) if str(exc) else ''}); going on without it"
            )
        self._client = None

    def get(self, key: str) -> dict[str, Any] | None:
        if self._client is None:
            return None
        try:
            raw = self._client.get(KEY_PREFIX + key)
        except Exception as exc:  # noqa: BLE001 - any failure turns the level off, once
            self._off(exc)
            return None
        if raw is None:
            return None
        try:
            value = json.loads(raw.decode("utf-8") if isinstance(raw, bytes) else raw)
        except (ValueError, UnicodeDecodeError):
            value = None
        if not isinstance(value, dict):
            self.warnings.append(f"shared cache entry {key!r} is not a JSON object; ignoring it")
            self.delete(key)
            return None
        return value

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

    def try_lock(self, key: str, *, milliseconds: int = 5000) -> bool:
        """``SET key NX PX``: True when this process holds the lock (or the level is off)."""
        if self._client is None:
            return True
        try:
            return bool(self._client.set(KEY_PREFIX + key, "1", nx=True, px=milliseconds))
        except Exception as exc:  # noqa: BLE001
            self._off(exc)
            return True

    def delete(self, key: str) -> None:
        if self._client is None:
            return
        try:
            self._client.delete(KEY_PREFIX + key)
        except Exception as exc:  # noqa: BLE001
            self._off(exc)

    def clear(self) -> int:
        keys = list(self.keys())
        for key in keys:
            self.delete(key)
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


class TwoLevelBackend:
    """The local cache first, then the shared one; writes go to both. A shared answer is kept
    locally too, so the next run on this machine does not ask Redis either."""

    def __init__(self, local: Any, shared: SharedCacheBackend) -> None:
        self.local = local
        self.shared = shared
        # One list for both levels: what either meets is said once, by the run's reporter.
        self.warnings: list[str] = local.warnings
        self.warnings.extend(shared.warnings)
        shared.warnings = self.warnings

    def get(self, key: str) -> dict[str, Any] | None:
        local: dict[str, Any] | None = self.local.get(key)
        if local is not None:
            return local
        value = self.shared.get(key)
        if value is not None:
            self.local.set(key, value)
        return value

    def set(self, key: str, value: dict[str, Any], *, expire: float | None = None) -> None:
        self.local.set(key, value, expire=expire)
        self.shared.set(key, value, expire=expire)

    def try_lock(self, key: str) -> bool:
        return self.shared.try_lock(key)

    def delete(self, key: str) -> None:
        self.local.delete(key)
        self.shared.delete(key)

    def clear(self) -> int:
        count: int = self.local.clear() + self.shared.clear()
        return count

    def keys(self) -> Iterable[str]:
        return list(dict.fromkeys([*self.local.keys(), *self.shared.keys()]))

    def close(self) -> None:
        self.local.close()
        self.shared.close()


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return "".join(c if c.isprintable() else "?" for c in text)[:200]
