"""Secrets (issue 7, item 6): nothing kmultiarch writes holds a credential or a token.

Every command that reaches a registry runs with ``-v`` (a log line per request) against the
basic-auth registry and the token registry, with credentials from ``DOCKER_CONFIG``: mutate
(stream and patches), inspect (text and JSON), the KRM function (a ResourceList with results),
report (JSON and HTML), lock, check (SARIF, and text with the diff), fix, cache info, and runs
that fail (an image that does not exist, a wrong password). Then stdout, stderr, the warnings
file, and every byte of every file they wrote (cache database, lock file, reports, temporary
directory) are searched for the password, ``base64(user:password)``, the wrong password, and
each token the issuer gave (whole, and its signature alone). Both registries sit behind
recording proxies: they show the credentials and tokens were really used, and the token
proxy keeps the issuer's answers, so the tokens searched for are exactly those issued.
"""

from __future__ import annotations

import base64
import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from support import SeededRegistry, write_docker_config
from support.cli import clean_env
from support.fault_proxy import FaultProxy
from support.measure import Measured, run_measured

IMAGES = {
    "basic": ["multiarch-oci", "single-oci-arm64"],
    "token": ["private-app", "multiarch-docker", "nested-index"],
}


@pytest.fixture
def fronts(
    basic_auth_registry: SeededRegistry, token_registry: SeededRegistry
) -> Iterator[dict[str, FaultProxy]]:
    """Recording proxies: basic-auth registry; token registry; token issuer (bodies kept)."""
    assert token_registry.issuer is not None
    with (
        FaultProxy(basic_auth_registry.url) as basic,
        FaultProxy(token_registry.issuer.url, keep_bodies=True) as issuer,
        FaultProxy(token_registry.url, rewrite_realm=f"{issuer.url}/token") as token,
    ):
        yield {"basic": basic, "token": token, "issuer": issuer}


def _deployments(references: list[str]) -> str:
    return "---\n".join(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n"
        f"  name: app-{index}\nspec:\n  template:\n    spec:\n      containers:\n"
        f"      - name: main\n        image: {reference}\n"
        for index, reference in enumerate(references)
    )


def _resource_list(stream: str) -> str:
    items = "\n".join(
        "- " + line if number == 0 else "  " + line
        for document in stream.split("---\n")
        for number, line in enumerate(document.splitlines())
    )
    return (
        "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n"
        f"{items}\n"
        "functionConfig:\n  apiVersion: kmultiarch.dev/v1alpha1\n  kind: MultiArchPolicy\n"
        "  metadata: {name: policy}\n  spec: {failurePolicy: Ignore}\n"
    )


def test_no_credential_or_token_in_anything_kmultiarch_writes(
    fronts: dict[str, FaultProxy],
    basic_auth_registry: SeededRegistry,
    token_registry: SeededRegistry,
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"
    work = tmp_path / "work"
    temporary = tmp_path / "tmp"
    for directory in (home, work, temporary):
        directory.mkdir()
    secrets_dir = tmp_path / "secrets"  # the docker config: the one place they may be
    users = {
        "basic": (basic_auth_registry.username, basic_auth_registry.password),
        "token": (token_registry.username, token_registry.password),
    }
    config = write_docker_config(
        secrets_dir / "good",
        {
            fronts[name].host: (user or "", password or "")
            for name, (user, password) in users.items()
        },
    )
    wrong_password = "wrong-" + (basic_auth_registry.password or "")[::-1]
    wrong = write_docker_config(
        secrets_dir / "wrong",
        {fronts["basic"].host: (basic_auth_registry.username or "", wrong_password)},
    )
    cache = tmp_path / "cache"
    warnings_file = tmp_path / "warnings.log"
    env = clean_env(
        home,
        {
            "DOCKER_CONFIG": str(config),
            "KMULTIARCH_CACHE_DIR": str(cache),
            "KMULTIARCH_WARNINGS_FILE": str(warnings_file),
            "TMPDIR": str(temporary),
        },
    )
    references = [
        f"{fronts[name].host}/{basic_auth_registry.images[key].repository}:"
        f"{basic_auth_registry.images[key].tag}"
        for name, keys in IMAGES.items()
        for key in keys
    ]
    missing = f"{fronts['token'].host}/private/does-not-exist:1.0"
    stream = work / "rendered.yaml"
    stream.write_text(_deployments([*references, missing]))
    fixable = work / "fix-me.yaml"
    fixable.write_text(_deployments(references[:2]))

    runs: list[Measured] = []

    def kmultiarch(
        *args: str, stdin: str | None = None, environment: dict[str, str] = env
    ) -> Measured:
        run = run_measured(
            [*args, "-v"] if args[0] != "cache" else list(args),
            env=environment,
            stdin=stdin,
            cwd=work,
        )
        runs.append(run)
        return run

    # A cold run first (every token and credential used), then the others, warm or not.
    assert kmultiarch("mutate", str(stream), "--no-cache").returncode == 0
    assert kmultiarch("mutate", str(stream)).returncode == 0
    assert kmultiarch("mutate", str(stream), "-o", "patch", "--cache-ttl", "0").returncode == 0
    assert kmultiarch("inspect", *references, "--no-cache").returncode == 0
    assert kmultiarch("inspect", "-o", "json", *references, missing).returncode == 1
    assert kmultiarch("fn", stdin=_resource_list(stream.read_text())).returncode == 0
    assert kmultiarch("report", "-o", "json", str(stream)).returncode == 0
    assert kmultiarch("report", "-o", "html", str(stream), "--no-cache").returncode == 0
    assert kmultiarch("lock", str(stream), "-o", str(work / "kmultiarch.lock")).returncode in (0, 1)
    assert kmultiarch("check", "-o", "sarif", str(stream)).returncode == 1
    assert kmultiarch("check", "--diff", str(stream), "--no-cache").returncode == 1
    assert kmultiarch("fix", str(fixable)).returncode == 1
    assert kmultiarch("cache", "info").returncode == 0
    refused = kmultiarch(
        "inspect",
        references[0],
        "--no-cache",
        environment={**env, "DOCKER_CONFIG": str(wrong)},
    )
    assert refused.returncode == 1
    assert "refused" in refused.stderr

    # The credentials and tokens were used: what must not leak was there to leak.
    basic_header = fronts["basic"].authorizations()
    assert any(value.startswith("Basic ") for value in basic_header)
    tokens = sorted(
        {
            json.loads(body)["token"]
            for body in fronts["issuer"].bodies("/token")
            if body.startswith(b"{") and "token" in json.loads(body)
        }
    )
    assert tokens, "no token was issued"
    bearer = {value.removeprefix("Bearer ") for value in fronts["token"].authorizations()}
    assert bearer and bearer <= set(tokens)
    issuer_requests = fronts["issuer"].requests()
    assert any(request.authorization for request in issuer_requests), "the token realm got no login"

    secrets: dict[str, str] = {}
    for name, (user, password) in users.items():
        assert user and password
        secrets[f"{name} password"] = password
        secrets[f"{name} base64 auth"] = base64.b64encode(f"{user}:{password}".encode()).decode()
    secrets["wrong password"] = wrong_password
    secrets["wrong base64 auth"] = base64.b64encode(
        f"{basic_auth_registry.username}:{wrong_password}".encode()
    ).decode()
    for number, token in enumerate(tokens):
        secrets[f"token {number}"] = token
        secrets[f"token {number} signature"] = token.rsplit(".", 1)[-1]

    # Everything written: outputs of every run, then every file outside the docker config.
    haystacks: dict[str, bytes] = {}
    for number, run in enumerate(runs):
        haystacks[f"run {number} stdout"] = run.stdout
        haystacks[f"run {number} stderr"] = run.stderr.encode()
    files = [
        path for path in tmp_path.rglob("*") if path.is_file() and secrets_dir not in path.parents
    ]
    for path in files:
        haystacks[str(path.relative_to(tmp_path))] = path.read_bytes()
    assert any(name.startswith("cache/") for name in haystacks), "the cache was written"
    assert "work/kmultiarch.lock" in haystacks
    assert "warnings.log" in haystacks
    assert sum(run.stderr.count("kmultiarch: DEBUG: ") for run in runs) > 20, "-v logged requests"

    leaks = [
        f"{secret_name} in {where}"
        for secret_name, secret in secrets.items()
        for where, content in haystacks.items()
        if secret.encode() in content
    ]
    assert leaks == []
    # The docker config itself holds them: the search would have found them.
    assert secrets["basic base64 auth"].encode() in (config / "config.json").read_bytes()
    shutil.rmtree(secrets_dir)
