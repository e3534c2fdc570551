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
from typing import TYPE_CHECKING, Any, Protocol

from kmultiarch.core.images.answers import (
    MAX_PLATFORMS,
    AnswerError,
    checked_digest,
    checked_media_type,
    checked_platforms,
)
from kmultiarch.core.images.platform import Platform
from kmultiarch.core.images.reference import is_tag
from kmultiarch.errors import CacheError

if TYPE_CHECKING:
    from kmultiarch.resolve.shared import SharedCacheBackend
    from kmultiarch.resolve.signing import CacheKey

CACHE_DIR_ENV = "KMULTIARCH_CACHE_DIR"
DEFAULT_TAG_TTL = 3600.0
#: Tag entries outlive their TTL so that a stale tag can be revalidated with a HEAD request.
STALE_TAG_RETENTION = 30 * 24 * 3600.0
SCHEMA_VERSION = 1
_PLATFORMS_PREFIX = "platforms:"
_TAG_PREFIX = "tag:"
_LOCK_PREFIX = "lock:"
#: ``listed:NAME@DIGEST``: the index of repository NAME that lists the platform manifest DIGEST
#: (a :class:`Listing`), for a pin written ``NAME@DIGEST`` without a tag.
_LISTED_PREFIX = "listed:"
#: How long a fleet's lock on a tag lasts: past it, a process that died holding it is replaced.
TAG_LOCK_MS = 5000
#: Digest answers in the shared level expire after 90 days unread, so that the store can evict
#: (a digest's platforms never change; a runner that needs one again fetches it once).
SHARED_DIGEST_RETENTION = 90 * 24 * 3600.0


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
        #: Set by the first write that fails: later entries are not tried (one warning).
        self._writes_failed = False
        self._cache = self._open(inside_shared=self.directory != directory)

    def _open(self, *, inside_shared: bool = False) -> Any:
        try:
            _make_private_dir(self.directory)
            if inside_shared:
                _check_private(self.directory)
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
        if self._writes_failed:
            return
        try:
            self._cache.set(key, json.dumps(value, sort_keys=True), expire=expire, retry=True)
        except (sqlite3.DatabaseError, OSError) as exc:
            # A full disk fails every later write too: one warning, and no more attempts.
            self._writes_failed = True
            self.warnings.append(
                f"cache {self.directory} cannot be written ({exc}); going on without writing to it"
            )

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


@dataclass(frozen=True)
class DiskCacheSummary:
    """What a disk cache holds: the directory its database is in, its keys, its size."""

    directory: Path
    keys: tuple[str, ...]
    volume: int


def inspect_disk_cache(directory: Path) -> DiskCacheSummary | None:
    """What the disk cache of ``directory`` holds, read without creating or changing anything
    (``cache info`` only shows: in a shared directory it must not make this user's private
    one, nor a database where there is none); None when there is no cache yet. The database
    is opened read-only (and as immutable when no write-ahead log is pending)."""
    private = _own_directory(directory)
    database = private / "cache.db"
    try:
        if not database.is_file():
            return None
        if private != directory:
            _check_private(private)
    except OSError as exc:
        raise CacheError(f"cannot read cache {private}: {exc}") from exc
    pending = database.with_name("cache.db-wal").exists()
    uri = database.as_uri() + ("?mode=ro" if pending else "?mode=ro&immutable=1")
    try:
        connection = sqlite3.connect(uri, uri=True)
        try:
            keys = tuple(
                key
                for (key,) in connection.execute("SELECT key FROM Cache WHERE raw = 1")
                if isinstance(key, str)
            )
            ((page_count,),) = connection.execute("PRAGMA page_count").fetchall()
            ((page_size,),) = connection.execute("PRAGMA page_size").fetchall()
            size = connection.execute("SELECT value FROM Settings WHERE key = 'size'").fetchone()
        finally:
            connection.close()
    except sqlite3.DatabaseError as exc:
        raise CacheError(f"cannot read cache {private}: {exc}") from exc
    values = int(size[0]) if size is not None and isinstance(size[0], int) else 0
    return DiskCacheSummary(private, keys, int(page_count) * int(page_size) + values)


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


def _check_private(directory: Path) -> None:
    """``directory`` (inside a shared one) must be a real directory of this user that no one
    else may write: another user could have made it first, or a symlink to a place of theirs,
    to read the entries or plant some."""
    status = directory.lstat()
    if (
        not stat.S_ISDIR(status.st_mode)
        or status.st_uid != os.geteuid()
        or status.st_mode & (stat.S_IWGRP | stat.S_IWOTH)
    ):
        kind = "a symlink" if stat.S_ISLNK(status.st_mode) else f"owner {status.st_uid}"
        raise CacheError(
            f"cache directory {directory} is not this user's own ({kind}, mode "
            f"{stat.S_IMODE(status.st_mode):o}); going on without a cache: remove it or pass "
            "another --cache-dir"
        )


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


#: An index's entries as a platform record keeps them: (digest, platform or None), in order.
IndexChildren = tuple[tuple[str, Platform | None], ...]


@dataclass(frozen=True)
class PlatformRecord:
    media_type: str
    platforms: frozenset[Platform]
    #: The entries of the index (each digest with the platform it is listed under, None when
    #: unlabelled; ``()`` for an image manifest), when known: what a platform pin of the tag is
    #: told apart by (:mod:`kmultiarch.resolve.pins`). None: not recorded.
    children: IndexChildren | None = None


@dataclass(frozen=True)
class Listing:
    """An index of a repository that lists a platform manifest: the index's digest, the tag
    it was read by (None: read by digest) and the platform the manifest is listed under."""

    index: str
    platform: Platform
    tag: str | None = None


class ResolutionCache:
    """What the resolver knows from earlier runs: a local level over any :class:`CacheBackend`
    (the disk, or memory) and, with a URL, a shared level behind it (Redis, for a fleet).

    Reads go to the local level first, then to the shared one, whose answers are kept locally
    (so the next run on this machine does not ask again); a local tag past its TTL is compared
    with the shared one, which another runner may have revalidated since. Writes go to both.
    """

    def __init__(
        self,
        backend: CacheBackend,
        *,
        tag_ttl: float = DEFAULT_TAG_TTL,
        shared: SharedCacheBackend | None = None,
    ) -> None:
        self.backend = backend
        self.shared = shared
        self.tag_ttl = tag_ttl
        self.hits = 0
        #: Keys whose shared value a batch (:meth:`prefetch`) already merged into the local
        #: level: the warm path does not ask the shared level for them again, one by one.
        self._merged: set[str] = set()

    @property
    def warnings(self) -> list[str]:
        return self.backend.warnings

    def prefetch(self, tags: Iterable[str], digests: Iterable[str]) -> None:
        """Bring into the local level what the shared one knows of these tags and digests and
        the local one lacks (or holds past the TTL): one round trip for the tags and pinned
        digests, one for the digests the tags name. Nothing to ask, no connection."""
        if self.shared is None or not self.shared.available:
            return
        now = time.time()
        wanted = list(dict.fromkeys(digests))
        local_tags: dict[str, TagRecord | None] = {}
        for name in dict.fromkeys(tags):
            record = self._local_tag(_TAG_PREFIX + name)
            if record is not None and record.is_fresh(self.tag_ttl, now):
                wanted.append(record.digest)
            else:
                local_tags[_TAG_PREFIX + name] = record
        missing = [digest for digest in dict.fromkeys(wanted) if not self._local_has(digest)]
        answers = self.shared.get_many([*local_tags, *(_PLATFORMS_PREFIX + d for d in missing)])
        self._merged.update(answers)
        named: list[str] = []
        for key, local in local_tags.items():
            shared = self._shared_tag(key, answers.get(key), local)
            best = shared or local
            if best is not None and best.is_fresh(self.tag_ttl, now):
                named.append(best.digest)
        for digest in missing:
            self._shared_platforms(digest, answers.get(_PLATFORMS_PREFIX + digest))
        second = [d for d in dict.fromkeys(named) if d not in missing and not self._local_has(d)]
        if second:
            answers = self.shared.get_many([_PLATFORMS_PREFIX + digest for digest in second])
            self._merged.update(answers)
            for digest in second:
                self._shared_platforms(digest, answers.get(_PLATFORMS_PREFIX + digest))

    def get_tag(self, name_and_tag: str) -> TagRecord | None:
        key = _TAG_PREFIX + name_and_tag
        local = self._local_tag(key)
        if (
            self.shared is None
            or key in self._merged
            or (local is not None and local.is_fresh(self.tag_ttl, time.time()))
        ):
            return local
        return self._shared_tag(key, self.shared.get(key), local) or local

    def put_tag(self, name_and_tag: str, digest: str, *, now: float | None = None) -> None:
        record = {
            "v": SCHEMA_VERSION,
            "digest": digest,
            "checkedAt": time.time() if now is None else now,
        }
        self.backend.set(_TAG_PREFIX + name_and_tag, record, expire=STALE_TAG_RETENTION)
        if self.shared is not None:
            self.shared.set(_TAG_PREFIX + name_and_tag, record, expire=STALE_TAG_RETENTION)

    def get_platforms(self, digest: str) -> PlatformRecord | None:
        key = _PLATFORMS_PREFIX + digest
        value = self.backend.get(key)
        record = None
        if value is not None:
            try:
                record = _platform_record(value)
            except ValueError as exc:
                self.backend.warnings.append(
                    f"cache entry {key!r} is corrupted ({exc}); ignoring it"
                )
                self.backend.delete(key)
        if record is None and self.shared is not None and key not in self._merged:
            record = self._shared_platforms(digest, self.shared.get(key))
        if record is not None:
            self.hits += 1
        return record

    def put_platforms(
        self,
        digest: str,
        media_type: str,
        platforms: frozenset[Platform],
        children: IndexChildren | None = None,
    ) -> None:
        """Record what ``digest`` runs on; ``children``: the index's entries too (left out
        when there are more than a record may hold)."""
        if len(platforms) > MAX_PLATFORMS:
            # Bounded on write as on read (issue 28): a record read back as damage would warn
            # "corrupted" on every warm run and be asked for again anyway.
            return
        record: dict[str, Any] = {
            "v": SCHEMA_VERSION,
            "mediaType": media_type,
            "platforms": sorted(str(p) for p in platforms),
        }
        if not platforms:
            record["metadataOnly"] = True
        if children is not None and len(children) <= MAX_PLATFORMS:
            record["children"] = [
                {"digest": child, "platform": None if platform is None else str(platform)}
                for child, platform in children
            ]
        self.backend.set(_PLATFORMS_PREFIX + digest, record)
        if self.shared is not None:
            self.shared.set(_PLATFORMS_PREFIX + digest, record, expire=SHARED_DIGEST_RETENTION)

    def put_listings(
        self,
        name: str,
        index: str,
        children: IndexChildren,
        tag: str | None = None,
    ) -> None:
        """Record, for each labelled entry of the index ``index`` of repository ``name`` (read
        by ``tag``), that the index lists it: what tells ``NAME@DIGEST`` for a platform pin.
        Immutable as a digest's platforms (an index lists what it lists); the tag only names
        it in messages."""
        for child, platform in children[:MAX_PLATFORMS]:
            if platform is None or child == index:
                continue
            try:
                checked_platforms([platform])  # not BuildKit's unknown/unknown attestations
            except AnswerError:
                continue
            record: dict[str, Any] = {
                "v": SCHEMA_VERSION,
                "index": index,
                "platform": str(platform),
            }
            if tag is not None:
                record["tag"] = tag
            key = f"{_LISTED_PREFIX}{name}@{child}"
            self.backend.set(key, record)
            if self.shared is not None:
                self.shared.set(key, record, expire=SHARED_DIGEST_RETENTION)

    def listings(self, wanted: Iterable[tuple[str, str]]) -> dict[tuple[str, str], Listing]:
        """The recorded index of each (repository name, platform manifest digest) that has
        one: the local level first, then the shared one for the rest in one round trip (its
        answers kept locally). A record that is not what kmultiarch writes is a miss."""
        keys = {f"{_LISTED_PREFIX}{name}@{digest}": (name, digest) for name, digest in wanted}
        found: dict[tuple[str, str], Listing] = {}
        missing: list[str] = []
        for key, pair in keys.items():
            value = self.backend.get(key)
            listing = _listing(value) if value is not None else None
            if listing is not None:
                found[pair] = listing
            else:
                missing.append(key)
        if missing and self.shared is not None and self.shared.available:
            for key, value in self.shared.get_many(missing).items():
                if value is None:
                    continue
                listing = _listing(value)
                if listing is None:
                    self.shared.garbage(key)
                    continue
                self.backend.set(key, value)
                found[keys[key]] = listing
        return found

    # Coalescing across a fleet: the first process to miss a tag claims it in the shared level;
    # the others wait for its answer there (see resolve.remote).

    def claim_tag(self, name_and_tag: str) -> tuple[bool, TagRecord | None]:
        """Take the fleet's short lock on a tag (True: this process looks it up; always True
        without a shared level), with the shared answer if one arrived meanwhile, in one round
        trip."""
        if self.shared is None:
            return True, None
        key = _TAG_PREFIX + name_and_tag
        claimed, value = self.shared.claim(_LOCK_PREFIX + key, key, milliseconds=TAG_LOCK_MS)
        return claimed, self._shared_tag(key, value, None)

    def fleet_answer(self, name_and_tag: str) -> tuple[TagRecord | None, bool]:
        """The shared level's answer for a tag now, and whether its lock is still held."""
        if self.shared is None:
            return None, False
        key = _TAG_PREFIX + name_and_tag
        value, locked = self.shared.peek(key, _LOCK_PREFIX + key)
        return self._shared_tag(key, value, None), locked

    def release_tag(self, name_and_tag: str) -> None:
        """Give the lock back after a failed lookup (failures are never cached): the processes
        waiting for it ask for themselves at once instead of at the end of their wait."""
        if self.shared is not None:
            self.shared.delete(_LOCK_PREFIX + _TAG_PREFIX + name_and_tag)

    def shared_platforms(self, digest: str) -> PlatformRecord | None:
        """The platforms of a digest another process of the fleet just stored (local first)."""
        key = _PLATFORMS_PREFIX + digest
        local = self.backend.get(key)
        with contextlib.suppress(ValueError):
            if local is not None:
                return _platform_record(local)
        if self.shared is None:
            return None
        return self._shared_platforms(digest, self.shared.get(key))

    # The levels.

    def _local_tag(self, key: str) -> TagRecord | None:
        value = self.backend.get(key)
        if value is None:
            return None
        record = _tag_record(value)
        if record is None:
            self.backend.delete(key)
        return record

    def _local_has(self, digest: str) -> bool:
        value = self.backend.get(_PLATFORMS_PREFIX + digest)
        if value is None:
            return False
        try:
            _platform_record(value)
        except ValueError:
            return False
        return True

    def _shared_tag(
        self, key: str, value: dict[str, Any] | None, local: TagRecord | None
    ) -> TagRecord | None:
        """A shared tag record, checked; kept locally when it is newer than ``local``."""
        if value is None or self.shared is None:
            return None
        record = _tag_record(value)
        if record is None:
            self.shared.garbage(key)
            return None
        if local is None or record.checked_at > local.checked_at:
            self.backend.set(key, value, expire=STALE_TAG_RETENTION)
        return record

    def _shared_platforms(self, digest: str, value: dict[str, Any] | None) -> PlatformRecord | None:
        """A shared platform record, checked, and kept locally."""
        if value is None or self.shared is None:
            return None
        key = _PLATFORMS_PREFIX + digest
        try:
            record = _platform_record(value)
        except ValueError:
            self.shared.garbage(key)
            return None
        self.backend.set(key, value)
        return record

    def close(self) -> None:
        self.backend.close()
        if self.shared is not None:
            self.shared.close()


def _tag_record(value: dict[str, Any]) -> TagRecord | None:
    """A stored tag record, checked by the grammar every answer meets (None: unusable)."""
    checked_at = value.get("checkedAt")
    if not isinstance(checked_at, (int, float)) or isinstance(checked_at, bool):
        return None
    try:
        digest = checked_digest(value.get("digest"))
    except AnswerError:
        return None
    return TagRecord(digest, float(checked_at))


def _listing(value: dict[str, Any]) -> Listing | None:
    """A stored listing, checked by the grammar every answer meets (None: unusable)."""
    tag = value.get("tag")
    try:
        index = checked_digest(value.get("index"))
        (platform,) = checked_platforms([value.get("platform")])
    except (AnswerError, ValueError):
        return None
    if tag is not None and not (isinstance(tag, str) and is_tag(tag)):
        return None
    return Listing(index, platform, tag)


def _platform_record(value: dict[str, Any]) -> PlatformRecord:
    """A stored platform record, checked by the grammar every answer meets (ValueError says
    what is wrong with it)."""
    media_type = checked_media_type(value.get("mediaType"))
    if media_type is None:
        raise AnswerError("mediaType", "missing")
    platforms = checked_platforms(
        value.get("platforms"), metadata_only=bool(value.get("metadataOnly"))
    )
    children = value.get("children")
    if children is None:
        return PlatformRecord(media_type, platforms)
    return PlatformRecord(media_type, platforms, _index_children(children))


def _index_children(value: object) -> IndexChildren:
    """A record's index entries, each checked as every answer is (its digest, its platform),
    and no more of them than a record may hold."""
    if not isinstance(value, list):
        raise AnswerError("children", f"expected a list, found {type(value).__name__}")
    if len(value) > MAX_PLATFORMS:
        raise AnswerError("children", f"more than {MAX_PLATFORMS}")
    children: list[tuple[str, Platform | None]] = []
    for position, item in enumerate(value):
        if not isinstance(item, dict):
            raise AnswerError(f"children[{position}]", "expected an object")
        try:
            digest = checked_digest(item.get("digest"))
            platform = item.get("platform")
            (checked,) = checked_platforms([platform]) if platform is not None else (None,)
        except AnswerError as exc:
            raise AnswerError(f"children[{position}].{exc.field}", exc.reason) from None
        children.append((digest, checked))
    return tuple(children)


def open_cache(
    directory: Path | None,
    *,
    enabled: bool = True,
    tag_ttl: float = DEFAULT_TAG_TTL,
    shared_url: str | None = None,
    shared_ca: str | None = None,
    shared_key: CacheKey | None = None,
    shared_budget: float | None = None,
) -> ResolutionCache:
    """The run's cache: the disk (memory with ``enabled=False`` or when the disk cannot be
    used), and the shared level of ``shared_url`` behind it (its entries signed with
    ``shared_key`` and only signed ones read, when given; all its operations within
    ``shared_budget`` seconds, :data:`~kmultiarch.resolve.shared.DEFAULT_BUDGET` when None).
    The Redis client is imported only
    when a URL is given: a run without one starts as fast as before."""
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
    shared = None
    if enabled and shared_url:
        from kmultiarch.resolve.shared import DEFAULT_BUDGET, SharedCacheBackend

        shared = SharedCacheBackend(
            shared_url,
            ca=shared_ca,
            key=shared_key,
            warnings=backend.warnings,
            budget=DEFAULT_BUDGET if shared_budget is None else shared_budget,
        )
    return ResolutionCache(backend, tag_ttl=tag_ttl, shared=shared)
