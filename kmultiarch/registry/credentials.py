"""Registry credentials: where they are stored and how they are found (docker's and podman's rules).

The search for a host, in order, per auth file: the ``credHelpers`` entry for the host, then
``credsStore``, then the file's ``auths``, going on to the next source whenever one finds
nothing (docker/cli ``configfile``); then the next file; then the extra sources (pull secrets).
A credential helper runs at most once per helper and host in a run, bounded by a timeout, and
a failure is remembered and said once.

Credentials come from ``$REGISTRY_AUTH_FILE`` (podman, skopeo), ``$DOCKER_CONFIG/config.json`` or
``~/.docker/config.json`` (``auths``, ``identitytoken``, ``credsStore``, ``credHelpers``),
``$XDG_RUNTIME_DIR/containers/auth.json`` and ``$XDG_CONFIG_HOME/containers/auth.json``.
A :class:`Credentials` never shows its secret in ``repr`` or ``str``; nothing here logs one.
"""

from __future__ import annotations

import base64
import binascii
import json
import os
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol
from urllib.parse import urlsplit

from kmultiarch.errors import RegistryAuthError

DOCKER_HUB_CREDENTIAL_KEY = "https://index.docker.io/v1/"
_DOCKER_HUB_HOSTS = ("docker.io", "index.docker.io", "registry-1.docker.io")
#: How long a credential helper may take (Docker Desktop's store hangs while Desktop is off).
DEFAULT_HELPER_TIMEOUT = 10.0
HELPER_TIMEOUT_ENV = "KMULTIARCH_CREDENTIAL_HELPER_TIMEOUT"


@dataclass(frozen=True)
class Credentials:
    """A username and secret for one registry host. ``identity_token`` marks an OAuth2 refresh
    token (``identitytoken`` in docker's config, or username ``<token>`` from a helper)."""

    username: str
    secret: str = field(repr=False)
    identity_token: bool = False

    def basic_header(self) -> str:
        raw = f"{self.username}:{self.secret}".encode()
        return "Basic " + base64.b64encode(raw).decode("ascii")

    def __str__(self) -> str:
        return f"Credentials(username={self.username!r}, secret=<redacted>)"


def _normalise_auth_key(key: str) -> str:
    if "://" in key:
        key = urlsplit(key).netloc
    host = key.split("/", 1)[0].lower()  # host names are case-insensitive
    return "docker.io" if host in _DOCKER_HUB_HOSTS else host


class CredentialSource(Protocol):
    """Somewhere else credentials may come from, asked after the auth files."""

    def lookup(self, host: str) -> Credentials | None: ...


class DockerConfigSource:
    """Credentials from Docker configs held in memory (the pull secrets of the manifests):
    the first config with an ``auths`` entry for the host answers. ``label`` names each config
    in messages (``Secret shop/regcred``); the secrets themselves are never shown."""

    def __init__(self, configs: Sequence[tuple[str, Mapping[str, object]]]) -> None:
        self._configs = list(configs)

    def lookup(self, host: str) -> Credentials | None:
        for label, config in self._configs:
            auths = config.get("auths")
            if not isinstance(auths, Mapping):
                continue
            for key, value in auths.items():
                if _normalise_auth_key(str(key)) == host and isinstance(value, Mapping):
                    credentials = _credentials_from_entry(value, host, label)
                    if credentials is not None:
                        return credentials
        return None

    def __repr__(self) -> str:
        return f"DockerConfigSource({[label for label, _ in self._configs]!r})"


class CredentialStore:
    """Looks up credentials per registry host, once per host per run: the auth files first,
    then each of ``extra`` (e.g. the pull secrets of the manifests)."""

    def __init__(
        self, environ: Mapping[str, str] | None = None, extra: Sequence[CredentialSource] = ()
    ) -> None:
        self._environ = os.environ if environ is None else environ
        self._memo: dict[str, Credentials | None] = {}
        self._extra = list(extra)
        self._helpers: dict[tuple[str, str], Credentials | None] = {}
        #: Per host, what went wrong while looking for its credentials (a helper that hung).
        self.problems: dict[str, list[str]] = {}
        try:
            self._helper_timeout = float(
                self._environ.get(HELPER_TIMEOUT_ENV) or DEFAULT_HELPER_TIMEOUT
            )
        except ValueError:
            self._helper_timeout = DEFAULT_HELPER_TIMEOUT

    def auth_files(self) -> list[Path]:
        env = self._environ
        files: list[Path] = []
        if env.get("REGISTRY_AUTH_FILE"):
            files.append(Path(env["REGISTRY_AUTH_FILE"]))
        docker_dir = (
            Path(env["DOCKER_CONFIG"])
            if env.get("DOCKER_CONFIG")
            else (Path(env.get("HOME", str(Path.home()))) / ".docker")
        )
        files.append(docker_dir / "config.json")
        if env.get("XDG_RUNTIME_DIR"):
            files.append(Path(env["XDG_RUNTIME_DIR"]) / "containers" / "auth.json")
        # containers-auth.json(5): then $XDG_CONFIG_HOME/containers/auth.json, where podman
        # login writes when there is no runtime directory.
        config_home = (
            Path(env["XDG_CONFIG_HOME"])
            if env.get("XDG_CONFIG_HOME")
            else Path(env.get("HOME", str(Path.home()))) / ".config"
        )
        files.append(config_home / "containers" / "auth.json")
        return files

    def lookup(self, host: str) -> Credentials | None:
        """Credentials for ``host`` (as the API is reached, e.g. ``registry-1.docker.io``)."""
        normalised = _normalise_auth_key(host)
        if normalised not in self._memo:
            found = self._find(normalised)
            for source in self._extra:
                if found is not None:
                    break
                found = source.lookup(normalised)
            self._memo[normalised] = found
        return self._memo[normalised]

    def _find(self, host: str) -> Credentials | None:
        """docker's order in each auth file (credHelpers for the host, then credsStore, then
        the file's auths), going on to the next source whenever one finds nothing; podman's
        files after docker's. A helper that fails is said once (:attr:`problems`) and counts
        as finding nothing: public images still resolve anonymously."""
        for path in self.auth_files():
            config = _read_auth_file(path)
            if config is None:
                continue
            helpers = config.get("credHelpers")
            if isinstance(helpers, Mapping):
                for key, helper in helpers.items():
                    if _normalise_auth_key(key) == host and isinstance(helper, str) and helper:
                        found = self._ask_helper(helper, host, path)
                        if found is not None:
                            return found
            store = config.get("credsStore")
            if isinstance(store, str) and store:
                found = self._ask_helper(store, host, path)
                if found is not None:
                    return found
            auths = config.get("auths")
            if isinstance(auths, Mapping):
                for key, value in auths.items():
                    if _normalise_auth_key(key) == host and isinstance(value, Mapping):
                        credentials = _credentials_from_entry(value, host, path)
                        if credentials is not None:
                            return credentials
        return None

    def problems_for(self, host: str) -> list[str]:
        return self.problems.get(_normalise_auth_key(host), [])

    def _ask_helper(self, suffix: str, host: str, path: Path) -> Credentials | None:
        """One helper, asked at most once per run for a host; a failure is remembered."""
        key = (suffix, host)
        if key not in self._helpers:
            try:
                self._helpers[key] = _run_credential_helper(
                    suffix,
                    host,
                    path,
                    timeout=self._helper_timeout,
                    search_path=self._environ.get("PATH"),
                )
            except RegistryAuthError as exc:
                self._helpers[key] = None
                self.problems.setdefault(host, []).append(str(exc))
        return self._helpers[key]


def _read_auth_file(path: Path) -> Mapping[str, object] | None:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise RegistryAuthError(f"cannot read registry auth file {path}: {exc}") from exc
    try:
        config = json.loads(text)
    except ValueError as exc:
        raise RegistryAuthError(
            f"registry auth file {path} is not valid JSON (line {getattr(exc, 'lineno', '?')}); "
            "fix it or point DOCKER_CONFIG elsewhere"
        ) from None
    return config if isinstance(config, Mapping) else None


def _credentials_from_entry(
    entry: Mapping[str, object], host: str, path: Path | str
) -> Credentials | None:
    identity = entry.get("identitytoken")
    encoded = entry.get("auth")
    username = entry.get("username")
    password = entry.get("password")
    if isinstance(encoded, str) and encoded:
        try:
            decoded = base64.b64decode(encoded, validate=True).decode("utf-8")
        except (binascii.Error, UnicodeDecodeError):
            raise RegistryAuthError(
                f"{path}: the 'auth' entry for {host} is not base64 of user:password"
            ) from None
        username, sep, password = decoded.partition(":")
        if not sep:
            raise RegistryAuthError(f"{path}: the 'auth' entry for {host} has no ':' separator")
    if isinstance(identity, str) and identity:
        return Credentials(str(username or "<token>"), identity, identity_token=True)
    if isinstance(username, str) and username and isinstance(password, str):
        return Credentials(username, password)
    return None


def _run_credential_helper(
    suffix: str,
    host: str,
    path: Path,
    *,
    timeout: float = DEFAULT_HELPER_TIMEOUT,
    search_path: str | None = None,
) -> Credentials | None:
    """``docker-credential-<suffix> get``, found on ``search_path`` (the store's PATH)."""
    program = f"docker-credential-{suffix}"
    executable = shutil.which(program, path=search_path)
    if executable is None:
        raise RegistryAuthError(
            f"{path} names the credential helper {program!r} for {host}, but it is not on PATH"
        )
    server_url = DOCKER_HUB_CREDENTIAL_KEY if host == "docker.io" else host
    try:
        completed = subprocess.run(
            [executable, "get"],
            input=server_url.encode(),
            capture_output=True,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise RegistryAuthError(
            f"credential helper {program} (named in {path}) did not answer for {host} within "
            f"{timeout:g} s"
        ) from None
    except OSError as exc:
        raise RegistryAuthError(
            f"credential helper {program} failed for {host}: {exc.strerror or exc}"
        ) from None
    if completed.returncode != 0:
        # "credentials not found in native keychain" is an answer, not a failure.
        return None
    try:
        answer = json.loads(completed.stdout)
        username, secret = answer["Username"], answer["Secret"]
    except (ValueError, KeyError, TypeError):
        raise RegistryAuthError(
            f"credential helper {program} gave an unreadable answer for {host}"
        ) from None
    if not isinstance(username, str) or not isinstance(secret, str) or not secret:
        return None
    return Credentials(username, secret, identity_token=username == "<token>")
