"""What every command shares: how it speaks (warnings, errors, notes on stderr and in
``$KMULTIARCH_WARNINGS_FILE``) and the options of a run (policy, cache, resolver)."""

from __future__ import annotations

import errno
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import click

from kmultiarch.output.safe import printable

if TYPE_CHECKING:
    from kmultiarch.core.lock import ImageLock
    from kmultiarch.core.policy import Policy
    from kmultiarch.core.pullsecrets import DockerConfig
    from kmultiarch.registry.credentials import CredentialStore
    from kmultiarch.registry.settings import ClientSettings
    from kmultiarch.resolve.cache import ResolutionCache
    from kmultiarch.resolve.resolver import Resolver
    from kmultiarch.resolve.signing import CacheKey


#: The key that signs the shared cache level's entries, itself (``--cache-key-file`` names a
#: file holding it).
CACHE_KEY_ENV = "KMULTIARCH_CACHE_KEY"

#: Every warning, error and summary line is also appended to the file this names: for tools
#: that hide a plugin's stderr (Helm 4 post-renderers; kustomize plugins when they succeed).
WARNINGS_FILE_ENV = "KMULTIARCH_WARNINGS_FILE"
_warnings_file_broken = False


def warn(message: str) -> None:
    _report(f"kmultiarch: warning: {printable(message)}")


def fail(message: str) -> None:
    _report(f"kmultiarch: error: {printable(message)}")


def note(message: str) -> None:
    _report(f"kmultiarch: {printable(message)}")


def _report(line: str) -> None:
    click.echo(line, err=True)
    append_to_warnings_file(line)


def append_to_warnings_file(line: str) -> None:
    """Append ``line`` to ``$KMULTIARCH_WARNINGS_FILE`` when it is set. A file that cannot be
    written is said once on stderr; it never fails the run."""
    global _warnings_file_broken  # noqa: PLW0603 - one process, one file, one complaint
    path = os.environ.get(WARNINGS_FILE_ENV)
    if not path or _warnings_file_broken:
        return
    data = (line.rstrip("\n") + "\n").encode("utf-8", "backslashreplace")
    try:
        # Non-blocking: a FIFO no one reads (or whose reader stopped reading) is refused at
        # once (ENXIO, EAGAIN) instead of holding the run for ever. backslashreplace: a line may
        # carry a file name that is not UTF-8.
        descriptor = os.open(
            path,
            os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC,
            0o644,
        )
        try:
            if os.write(descriptor, data) != len(data):
                raise OSError(errno.EAGAIN, "the reader takes no more")
        finally:
            os.close(descriptor)
    except OSError as exc:
        _warnings_file_broken = True
        click.echo(
            f"kmultiarch: warning: cannot append to ${WARNINGS_FILE_ENV} ({path}): "
            f"{exc.strerror or exc}",
            err=True,
        )


@dataclass
class RunOptions:
    """Options shared by every command that resolves images."""

    config: str | None
    no_cache: bool
    cache_dir: str | None
    cache_ttl: float
    concurrency: int
    timeout: float
    retries: int
    verbose: int
    quiet: bool
    lock: str | None = None
    offline: bool = False
    #: redis:// or rediss:// or unix:// URL of a shared cache level, or None.
    cache_url: str | None = None
    #: A CA bundle (PEM) for a rediss:// cache_url.
    cache_ca: str | None = None
    #: A file holding the key that signs the shared level's entries (``--cache-key-file``).
    cache_key_file: str | None = None
    #: The policy's spec.cache.key, taken with the policy's URL only. Never shown.
    policy_cache_key: str | None = field(default=None, repr=False)
    #: The namespace of resources that name none (``--namespace``).
    namespace: str = "default"
    #: Docker configs of the pull secrets in the manifests being run on (memory only).
    pull_secrets: tuple[DockerConfig, ...] = ()

    def load_policy(self) -> Policy:
        from kmultiarch.io.config import load_policy

        policy = load_policy(self.config)
        if self.cache_url is None and policy.cache_url is not None:
            # The policy's shared cache, unless --cache-url or $KMULTIARCH_CACHE_URL says else.
            self.cache_url = policy.cache_url
            self.cache_ca = self.cache_ca or (str(policy.cache_ca) if policy.cache_ca else None)
            # The policy's key goes with the policy's URL; an option or $KMULTIARCH_CACHE_KEY
            # still wins over it.
            if self.cache_key_file is None and not os.environ.get(CACHE_KEY_ENV):
                if policy.cache_key_file is not None:
                    self.cache_key_file = str(policy.cache_key_file)
                self.policy_cache_key = policy.cache_key
        return policy

    def client_settings(self) -> ClientSettings:
        from kmultiarch.registry.settings import ClientSettings

        return ClientSettings(
            concurrency=self.concurrency,
            connect_timeout=min(5.0, self.timeout),
            read_timeout=self.timeout,
            attempt_timeout=self.timeout * 2,
            retries=self.retries,
            # A pause between attempts is no longer than an attempt: --timeout bounds a run
            # that meets 429s too (a longer Retry-After fails the lookup at once).
            max_retry_after=min(10.0, self.timeout * 2),
        )

    def open_cache(self) -> ResolutionCache:
        from kmultiarch.resolve.cache import open_cache
        from kmultiarch.resolve.signing import CacheKeyError

        url, key = self.cache_url, None
        if url:
            try:
                key = shared_cache_key(self.cache_key_file, self.policy_cache_key)
            except CacheKeyError as exc:
                # Without its key the level could not tell which entries to trust: not used.
                warn(f"shared cache not used: {exc}")
                url = None
        cache = open_cache(
            Path(self.cache_dir) if self.cache_dir else None,
            # Offline runs answer from the lock alone: a cache is neither read nor written.
            enabled=not self.no_cache and not self.offline,
            tag_ttl=self.cache_ttl,
            shared_url=url,
            shared_ca=self.cache_ca,
            shared_key=key,
        )
        for message in cache.warnings:
            warn(message)
        cache.warnings.clear()
        return cache

    def resolver(self, policy: Policy, cache: ResolutionCache) -> Resolver:
        from kmultiarch.resolve.resolver import Resolver

        return Resolver(
            policy,
            cache,
            self.client_settings(),
            lock=self.load_lock(policy),
            offline=self.offline,
            credentials=self.credential_store(),
        )

    def credential_store(self) -> CredentialStore | None:
        """The user's docker/podman credentials, then the manifests' pull secrets; None (the
        default store) when the manifests carry none."""
        if not self.pull_secrets:
            return None
        from kmultiarch.registry.credentials import CredentialStore, DockerConfigSource

        source = DockerConfigSource([(c.label, c.config) for c in self.pull_secrets])
        return CredentialStore(extra=[source])

    def load_lock(self, policy: Policy) -> ImageLock | None:
        """``--lock FILE``, else the policy's ``lock:`` (a file, or a lock written out in the
        policy), else none."""
        from kmultiarch.io.config import load_lock

        if self.lock is not None:
            return load_lock(self.lock)
        # The policy's lock: is the repository's choice: a regular file only.
        if policy.lock is not None:
            return load_lock(policy.lock, allow_pipe=False)
        return policy.embedded_lock


def shared_cache_key(key_file: str | None, policy_key: str | None = None) -> CacheKey | None:
    """The key that signs the shared level's entries: the file ``--cache-key-file`` names, else
    ``$KMULTIARCH_CACHE_KEY``, else the policy's ``spec.cache.key``; None: entries are neither
    signed nor checked. :class:`~kmultiarch.resolve.signing.CacheKeyError` says why a key given
    cannot be used (never quoting it)."""
    from kmultiarch.resolve.signing import MAX_KEY_BYTES, CacheKey, CacheKeyError

    if key_file is not None:
        try:
            if not stat.S_ISREG(os.stat(key_file).st_mode):
                raise CacheKeyError(f"the cache key file {key_file} is not a regular file")
            with open(key_file, "rb") as stream:
                secret = stream.read(MAX_KEY_BYTES + 1)
        except OSError as exc:
            raise CacheKeyError(
                f"cannot read the cache key file {key_file} ({exc.strerror or exc})"
            ) from None
        where = f"the file {key_file}"
    elif os.environ.get(CACHE_KEY_ENV):
        secret, where = os.environ[CACHE_KEY_ENV].encode(), f"${CACHE_KEY_ENV}"
    elif policy_key:
        secret, where = policy_key.encode(), "spec.cache.key"
    else:
        return None
    try:
        return CacheKey(secret)
    except CacheKeyError as exc:
        raise CacheKeyError(f"{exc} (in {where})") from None
