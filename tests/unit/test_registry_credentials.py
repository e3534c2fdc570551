"""Credential lookup: docker's order (credHelpers for the host, then credsStore, then auths),
podman's files, going on whenever a source finds nothing; helpers asked once, bounded, their
failures remembered. Real auth files in a temporary directory and real helper programs (small
shell scripts on PATH) stand in for a user's setup."""

from __future__ import annotations

import base64
import json
import os
import time
from pathlib import Path

import pytest

from kmultiarch.errors import RegistryAuthError
from kmultiarch.registry.credentials import CredentialStore, DockerConfigSource

HOST = "registry.example:5000"


def _auth(user: str, password: str) -> dict[str, str]:
    return {"auth": base64.b64encode(f"{user}:{password}".encode()).decode()}


def _helper(bin_dir: Path, name: str, script: str) -> Path:
    """``docker-credential-<name>``: logs the server it was asked for, then runs ``script``."""
    bin_dir.mkdir(exist_ok=True)
    log = bin_dir / f"{name}.log"
    helper = bin_dir / f"docker-credential-{name}"
    helper.write_text(f'#!/bin/sh\nread server\necho "$server" >> "{log}"\n{script}\n')
    helper.chmod(0o755)
    return log


def _answers(user: str, secret: str) -> str:
    return f"echo '{json.dumps({'ServerURL': 'x', 'Username': user, 'Secret': secret})}'"


NOT_FOUND = 'echo "credentials not found in native keychain"; exit 1'


@pytest.fixture
def home(tmp_path: Path) -> dict[str, str]:
    """An environment with a docker config dir, a podman runtime dir and helpers on PATH."""
    (tmp_path / "docker").mkdir()
    (tmp_path / "run" / "containers").mkdir(parents=True)
    _helper(tmp_path / "bin", "finds", _answers("helper-user", "helper-secret"))
    _helper(tmp_path / "bin", "store", _answers("store-user", "store-secret"))
    _helper(tmp_path / "bin", "empty", NOT_FOUND)
    _helper(tmp_path / "bin", "broken", "echo 'not json'")
    return {
        "HOME": str(tmp_path),
        "DOCKER_CONFIG": str(tmp_path / "docker"),
        "XDG_RUNTIME_DIR": str(tmp_path / "run"),
        "PATH": f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}",
    }


def _write(environ: dict[str, str], docker: object = None, podman: object = None) -> None:
    if docker is not None:
        Path(environ["DOCKER_CONFIG"], "config.json").write_text(json.dumps(docker))
    if podman is not None:
        Path(environ["XDG_RUNTIME_DIR"], "containers", "auth.json").write_text(json.dumps(podman))


@pytest.mark.parametrize(
    ("docker", "podman", "host", "user"),
    [
        ({"auths": {HOST: _auth("file-user", "pw")}}, None, HOST, "file-user"),
        (
            {"credHelpers": {HOST: "finds"}, "auths": {HOST: _auth("file-user", "pw")}},
            None,
            HOST,
            "helper-user",
        ),
        # A helper that finds nothing lets the search go on (it used to stop it).
        (
            {"credHelpers": {HOST: "empty"}, "auths": {HOST: _auth("file-user", "pw")}},
            None,
            HOST,
            "file-user",
        ),
        ({"credHelpers": {HOST: "empty"}, "credsStore": "store"}, None, HOST, "store-user"),
        (
            {"credsStore": "store", "auths": {HOST: _auth("file-user", "pw")}},
            None,
            HOST,
            "store-user",
        ),
        (
            {"credsStore": "empty", "auths": {HOST: _auth("file-user", "pw")}},
            None,
            HOST,
            "file-user",
        ),
        (
            {"credHelpers": {"other.example": "finds"}, "auths": {HOST: _auth("f", "pw")}},
            None,
            HOST,
            "f",
        ),
        # A helper that fails (not on PATH, unreadable answer) counts as finding nothing.
        ({"credHelpers": {HOST: "missing"}, "auths": {HOST: _auth("f", "pw")}}, None, HOST, "f"),
        ({"credsStore": "broken", "auths": {HOST: _auth("f", "pw")}}, None, HOST, "f"),
        # podman's auth.json after docker's config, when docker's finds nothing.
        (
            {"auths": {"other.example": _auth("d", "pw")}},
            {"auths": {HOST: _auth("p", "pw")}},
            HOST,
            "p",
        ),
        ({"auths": {HOST: _auth("d", "pw")}}, {"auths": {HOST: _auth("p", "pw")}}, HOST, "d"),
        # Keys as docker writes them: with a scheme, a path, in any case; Docker Hub's aliases.
        ({"auths": {f"https://{HOST}/v1/": _auth("u", "pw")}}, None, HOST, "u"),
        ({"auths": {"REGISTRY.Example:5000": _auth("u", "pw")}}, None, HOST, "u"),
        ({"auths": {HOST: _auth("u", "pw")}}, None, "Registry.EXAMPLE:5000", "u"),
        (
            {"auths": {"https://index.docker.io/v1/": _auth("hub", "pw")}},
            None,
            "registry-1.docker.io",
            "hub",
        ),
        ({"auths": {"docker.io": _auth("hub", "pw")}}, None, "index.docker.io", "hub"),
        ({"auths": {"other.example": _auth("u", "pw")}}, None, HOST, None),
        ({"auths": {HOST: {}}}, None, HOST, None),
        ({}, None, HOST, None),
    ],
)
def test_search_order(
    home: dict[str, str], docker: object, podman: object, host: str, user: str | None
) -> None:
    _write(home, docker, podman)
    found = CredentialStore(environ=home).lookup(host)
    assert (found.username if found else None) == user


def test_registry_auth_file_comes_first(home: dict[str, str], tmp_path: Path) -> None:
    _write(home, {"auths": {HOST: _auth("docker", "pw")}})
    first = tmp_path / "auth.json"
    first.write_text(json.dumps({"auths": {HOST: _auth("podman", "pw")}}))
    found = CredentialStore(environ={**home, "REGISTRY_AUTH_FILE": str(first)}).lookup(HOST)
    assert found is not None and found.username == "podman"


def test_an_identity_token_is_marked_as_one(home: dict[str, str]) -> None:
    _write(home, {"auths": {HOST: {"identitytoken": "refresh", "auth": _auth("u", "")["auth"]}}})
    found = CredentialStore(environ=home).lookup(HOST)
    assert found is not None and found.identity_token and found.secret == "refresh"


def test_the_pull_secrets_are_asked_after_the_files(home: dict[str, str]) -> None:
    pull_secret = DockerConfigSource(
        [("Secret shop/regcred", {"auths": {HOST: _auth("k8s", "pw")}})]
    )
    _write(home, {"auths": {"other.example": _auth("d", "pw")}})
    found = CredentialStore(environ=home, extra=[pull_secret]).lookup(HOST)
    assert found is not None and found.username == "k8s"
    _write(home, {"auths": {HOST: _auth("d", "pw")}})
    found = CredentialStore(environ=home, extra=[pull_secret]).lookup(HOST)
    assert found is not None and found.username == "d"


def test_a_helper_is_asked_once_per_host_in_a_run(home: dict[str, str], tmp_path: Path) -> None:
    _write(home, {"credsStore": "empty"})
    store = CredentialStore(environ=home)
    for host in (HOST, HOST.upper(), "other.example", HOST):
        assert store.lookup(host) is None
    log = (tmp_path / "bin" / "empty.log").read_text().splitlines()
    assert log == [HOST, "other.example"]


def test_a_hanging_helper_is_bounded_and_its_failure_remembered(
    home: dict[str, str], tmp_path: Path
) -> None:
    _helper(tmp_path / "bin", "hang", "sleep 30")
    _write(home, {"credHelpers": {HOST: "hang"}, "auths": {HOST: _auth("file-user", "pw")}})
    store = CredentialStore(environ={**home, "KMULTIARCH_CREDENTIAL_HELPER_TIMEOUT": "0.5"})
    started = time.monotonic()
    found = store.lookup(HOST)
    assert time.monotonic() - started < 5
    assert found is not None and found.username == "file-user"
    (problem,) = store.problems_for(HOST)
    assert "docker-credential-hang" in problem and "did not answer" in problem


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ({"auth": "%%%not-base64"}, "is not base64 of user:password"),
        ({"auth": base64.b64encode(b"no-colon-secret").decode()}, "has no ':' separator"),
    ],
)
def test_a_bad_auth_entry_names_the_file_not_the_secret(
    home: dict[str, str], entry: dict[str, str], message: str
) -> None:
    _write(home, {"auths": {HOST: entry}})
    with pytest.raises(RegistryAuthError, match=message) as caught:
        CredentialStore(environ=home).lookup(HOST)
    assert "config.json" in str(caught.value) and "secret" not in str(caught.value)


def test_an_auth_file_that_is_not_json_says_what_to_do(home: dict[str, str]) -> None:
    Path(home["DOCKER_CONFIG"], "config.json").write_text("{not json")
    with pytest.raises(RegistryAuthError, match=r"not valid JSON .*DOCKER_CONFIG"):
        CredentialStore(environ=home).lookup(HOST)


def test_credentials_never_show_their_secret() -> None:
    from kmultiarch.registry.credentials import Credentials

    credentials = Credentials("alice", "hunter2")
    assert "hunter2" not in repr(credentials) and "hunter2" not in str(credentials)


def test_podmans_config_home_auth_file_is_read_too(home: dict[str, str], tmp_path: Path) -> None:
    """containers-auth.json(5): after the runtime file, ``$XDG_CONFIG_HOME/containers/auth.json``
    (``~/.config/containers/auth.json``), where ``podman login`` writes without a runtime dir."""
    config_home = tmp_path / ".config" / "containers"
    config_home.mkdir(parents=True)
    (config_home / "auth.json").write_text(json.dumps({"auths": {HOST: _auth("podman", "pw")}}))
    found = CredentialStore(environ=home).lookup(HOST)
    assert found is not None and found.username == "podman"
    elsewhere = tmp_path / "xdg"
    (elsewhere / "containers").mkdir(parents=True)
    (elsewhere / "containers" / "auth.json").write_text(
        json.dumps({"auths": {HOST: _auth("xdg", "pw")}})
    )
    found = CredentialStore(environ={**home, "XDG_CONFIG_HOME": str(elsewhere)}).lookup(HOST)
    assert found is not None and found.username == "xdg"
