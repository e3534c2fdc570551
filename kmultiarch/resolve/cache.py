"""The platform cache: digest -> platforms (immutable, kept for good), tag -> digest (revalidated
after a TTL).

Values are JSON objects, never pickles: the disk backend refuses to unpickle anything it finds
in the directory, so a planted cache file cannot run code. Nothing stored holds a credential.
A cache that cannot be read is moved aside and rebuilt, with a warning; a broken entry is a miss.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import sqlite3
import stat
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from kmultiarch.core.platform import Platform
from kmultiarch.errors import CacheError, InvalidPlatformError

CACHE_DIR_ENV = "KMULTIARCH_CACHE_DIR"
DEFAULT_TAG_TTL = 3600.0
#: Tag entries outlive their TTL so that a stale tag can be revalidated with a HEAD request.
STALE_TAG_RETENTION = 30 * 24 * 3600.0
SCHEMA_VERSION = 1
_PLATFORMS_PREFIX = "platforms:"
_TAG_PREFIX = "tag:"


def default_cache_dir() -> Path:
    configured = os.environ.get(CACHE_DIR_ENV)
    if configured:
        return Path(configured).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "kmultiarch"


class CacheBackend(Protocol):
    """A key -> JSON object store. Another backend (Redis, a CI artifact) implements this."""

    warnings: list[str]

    def get(self, key: str) -> dict[str, Any] | None: ...

    def set(self, key: str, value: dict[str, Any], *, expire: float | None = None) -> None: ...

    def delete(self, key: str) -> None: ...

    def clear(self) -> int: ...

    def keys(self) -> Iterable[str]: ...

    def close(self) -> None: ...


class MemoryCacheBackend:
    """In-process only: what ``--no-cache`` uses, so one run still asks once per image."""

    def __init__(self) -> None:
        self._entries: dict[str, tuple[str, float | None]] = {}
        self.warnings: list[str] = []

    def get(self, key: str) -> dict[str, Any] | None:
        entry = self._entries.get(key)
        if entry is None or (entry[1] is not None and entry[1] < time.time()):
            return None
        value: dict[str, Any] = json.loads(entry[0])
        return value

    def set(self, key: str, value: dict[str, Any], *, expire: float | None = None) -> None:
        deadline = time.time() + expire if expire is not None else None
        self._entries[key] = (json.dumps(value), deadline)

    def delete(self, key: str) -> None:
        self._entries.pop(key, None)

    def clear(self) -> int:
        count = len(self._entries)
        self._entries.clear()
        return count

    def keys(self) -> Iterable[str]:
        return list(self._entries)

    def close(self) -> None:
        pass


class DiskCacheBackend:
    """diskcache (SQLite) in a private directory, shared safely by concurrent processes."""

    def __init__(self, directory: Path) -> None:
        self.directory = _own_directory(directory)
        self.warnings: list[str] = []
        self._cache = self._open()

    def _open(self) -> Any:
        try:
            _make_private_dir(self.directory)
            return _open_diskcache(self.directory)
        except (sqlite3.DatabaseError, OSError) as exc:
            if _unwritable(exc):
                # A full disk or a read-only file system says nothing about the cache: it is
                # left as it is, and the run goes on without it (see open_cache).
                raise CacheError(
                    f"cache {self.directory} cannot be used ({exc}); going on without it"
                ) from exc
            if isinstance(exc, OSError):
                raise CacheError(
                    f"cannot use cache directory {self.directory}: {exc}; set {CACHE_DIR_ENV} "
                    "to a writable directory or pass --no-cache"
                ) from exc
            moved = self._move_aside()
            self.warnings.append(
                f"cache {self.directory} could not be read ({exc}); moved it to {moved} and "
                "started a new one"
            )
        except _UnsafeCacheValue as exc:
            moved = self._move_aside()
            self.warnings.append(
                f"cache {self.directory} could not be read ({exc}); moved it to {moved} and "
                "started a new one"
            )
        try:
            _make_private_dir(self.directory)
            return _open_diskcache(self.directory)
        except (OSError, sqlite3.DatabaseError) as exc:
            raise CacheError(f"cannot create cache in {self.directory}: {exc}") from exc

    def _move_aside(self) -> Path:
        target = self.directory.with_name(
            f"{self.directory.name}.corrupt-{os.getpid()}-{int(time.time())}"
        )
        try:
            self.directory.rename(target)
        except OSError as exc:
            raise CacheError(
                f"cache {self.directory} is unreadable and could not be moved aside ({exc}); "
                "remove it or pass --no-cache"
            ) from exc
        return target

    def get(self, key: str) -> dict[str, Any] | None:
        try:
            raw = self._cache.get(key, default=None, retry=True)
        except (sqlite3.DatabaseError, _UnsafeCacheValue, OSError) as exc:
            self._forget(key, f"cache entry {key!r} is unreadable ({exc}); ignoring it")
            return None
        if raw is None:
            return None
        try:
            if not isinstance(raw, str):
                raise ValueError(f"expected JSON text, found {type(raw).__name__}")
            value = json.loads(raw)
            if not isinstance(value, dict):
                raise ValueError("expected a JSON object")
        except ValueError as exc:
            self._forget(key, f"cache entry {key!r} is corrupted ({exc}); ignoring it")
            return None
        return value

    def _forget(self, key: str, warning: str) -> None:
        self.warnings.append(warning)
        with contextlib.suppress(sqlite3.DatabaseError, OSError):
            self._cache.delete(key, retry=True)

    def set(self, key: str, value: dict[str, Any], *, expire: float | None = None) -> None:
        try:
            self._cache.set(key, json.dumps(value, sort_keys=True), expire=expire, retry=True)
        except (sqlite3.DatabaseError, OSError) as exc:
            self.warnings.append(f"could not write cache entry {key!r}: {exc}")

    def delete(self, key: str) -> None:
        with contextlib.suppress(sqlite3.DatabaseError, OSError):
            self._cache.delete(key, retry=True)

    def clear(self) -> int:
        count: int = self._cache.clear(retry=True)
        return count

    def keys(self) -> Iterable[str]:
        return [key for key in self._cache.iterkeys() if isinstance(key, str)]

    def volume(self) -> int:
        size: int = self._cache.volume()
        return size

    def close(self) -> None:
        self._cache.close()


class _UnsafeCacheValue(Exception):
    """A cache row that would need unpickling: refused, the cache is treated as corrupt."""


def _make_private_dir(directory: Path) -> None:
    """Create the cache directory, private; one that exists is left as its owner made it
    (kmultiarch never changes the permissions of a directory it did not create)."""
    if not directory.is_dir():
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)


def _own_directory(directory: Path) -> Path:
    """``directory``, or a private directory of this user inside it when it is shared (others
    may write in it: /tmp, $RUNNER_TEMP), where another user could plant or read entries."""
    try:
        mode = directory.stat().st_mode
    except OSError:
        return directory
    if mode & stat.S_IWOTH:
        return directory / f"kmultiarch-{os.getuid()}"
    return directory


def _unwritable(exc: BaseException) -> bool:
    """A full disk, a quota, a read-only file system: the cache is sound but cannot be used."""
    if isinstance(exc, OSError):
        return exc.errno in (errno.ENOSPC, errno.EROFS, errno.EDQUOT, errno.EACCES, errno.EPERM)
    text = str(exc).lower()
    return any(
        phrase in text
        for phrase in ("disk is full", "readonly", "read-only", "unable to open", "disk i/o")
    )


def _open_diskcache(directory: Path) -> Any:
    import diskcache

    class JsonOnlyDisk(diskcache.Disk):  # type: ignore[misc]
        """Keys and values stay raw text; anything stored pickled is refused, not loaded."""

        def get(self, key: Any, raw: bool) -> Any:
            if not raw:
                # Only key listings read keys back: a pickled key is skipped, never loaded.
                return None
            return super().get(key, raw)

        def fetch(self, mode: int, filename: Any, value: Any, read: bool) -> Any:
            if mode == diskcache.core.MODE_PICKLE:
                raise _UnsafeCacheValue("pickled value in cache")
            if mode != diskcache.core.MODE_RAW and not isinstance(filename, str):
                # A row that says its value is in a file, and names none: damaged.
                raise _UnsafeCacheValue(f"a row of storage mode {mode} without its file")
            return super().fetch(mode, filename, value, read)

        def put(self, key: Any) -> Any:
            if not isinstance(key, str):
                raise TypeError("cache keys are strings")
            return super().put(key)

        def store(self, value: Any, read: bool, key: Any = diskcache.core.UNKNOWN) -> Any:
            if not isinstance(value, str):
                raise TypeError("cache values are JSON text")
            return super().store(value, read, key=key)

    cache = diskcache.Cache(
        str(directory), disk=JsonOnlyDisk, size_limit=256 * 1024 * 1024, timeout=60
    )
    # A quick read proves the database is usable now rather than half-way through a run.
    cache.get("__probe__", default=None, retry=True)
    return cache


@dataclass(frozen=True)
class TagRecord:
    digest: str
    checked_at: float

    def is_fresh(self, ttl: float, now: float) -> bool:
        return 0 <= now - self.checked_at < ttl


@dataclass(frozen=True)
class PlatformRecord:
    media_type: str
    platforms: frozenset[Platform]


class ResolutionCache:
    """What the resolver knows from earlier runs, over any :class:`CacheBackend`."""

    def __init__(self, backend: CacheBackend, *, tag_ttl: float = DEFAULT_TAG_TTL) -> None:
        self.backend = backend
        self.tag_ttl = tag_ttl
        self.hits = 0

    @property
    def warnings(self) -> list[str]:
        return self.backend.warnings

    def try_lock(self, name_and_tag: str) -> bool:
        """Whether this process may look the tag up now: True unless a shared level says
        another process of the fleet is doing it (a lock that expires by itself)."""
        try_lock = getattr(self.backend, "try_lock", None)
        return True if try_lock is None else bool(try_lock("lock:" + _TAG_PREFIX + name_and_tag))

    def get_tag(self, name_and_tag: str) -> TagRecord | None:
        value = self.backend.get(_TAG_PREFIX + name_and_tag)
        if value is None:
            return None
        digest, checked_at = value.get("digest"), value.get("checkedAt")
        if not isinstance(digest, str) or not isinstance(checked_at, (int, float)):
            self._drop(_TAG_PREFIX + name_and_tag)
            return None
        return TagRecord(digest, float(checked_at))

    def put_tag(self, name_and_tag: str, digest: str, *, now: float | None = None) -> None:
        record = {
            "v": SCHEMA_VERSION,
            "digest": digest,
            "checkedAt": time.time() if now is None else now,
        }
        self.backend.set(_TAG_PREFIX + name_and_tag, record, expire=STALE_TAG_RETENTION)

    def get_platforms(self, digest: str) -> PlatformRecord | None:
        key = _PLATFORMS_PREFIX + digest
        value = self.backend.get(key)
        if value is None:
            return None
        try:
            media_type = value["mediaType"]
            platforms = frozenset(Platform.parse(item) for item in value["platforms"])
            # An empty list is a metadata-only image (OLM bundle, artifact) only when the
            # record says so; otherwise it is damage.
            if not isinstance(media_type, str) or (not platforms and not value.get("metadataOnly")):
                raise ValueError("empty platform record")
        except (KeyError, TypeError, ValueError, InvalidPlatformError) as exc:
            self.backend.warnings.append(f"cache entry {key!r} is corrupted ({exc}); ignoring it")
            self._drop(key)
            return None
        self.hits += 1
        return PlatformRecord(media_type, platforms)

    def put_platforms(self, digest: str, media_type: str, platforms: frozenset[Platform]) -> None:
        record = {
            "v": SCHEMA_VERSION,
            "mediaType": media_type,
            "platforms": sorted(str(p) for p in platforms),
        }
        if not platforms:
            record["metadataOnly"] = True
        self.backend.set(_PLATFORMS_PREFIX + digest, record)

    def _drop(self, key: str) -> None:
        self.backend.delete(key)

    def close(self) -> None:
        self.backend.close()


def open_cache(
    directory: Path | None,
    *,
    enabled: bool = True,
    tag_ttl: float = DEFAULT_TAG_TTL,
    shared_url: str | None = None,
    shared_ca: str | None = None,
) -> ResolutionCache:
    backend: CacheBackend
    if not enabled:
        backend = MemoryCacheBackend()
    else:
        try:
            backend = DiskCacheBackend(directory or default_cache_dir())
        except CacheError as exc:
            # A cache is an accelerator: without one the run asks the registries.
            backend = MemoryCacheBackend()
            backend.warnings.append(str(exc))
    if enabled and shared_url:
        from kmultiarch.resolve.shared import SharedCacheBackend, TwoLevelBackend

        backend = TwoLevelBackend(backend, SharedCacheBackend(shared_url, ca=shared_ca))
    return ResolutionCache(backend, tag_ttl=tag_ttl)
