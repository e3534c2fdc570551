"""Registry faults (issue 7, item 1): what ``kmultiarch mutate`` does when a registry misbehaves.

Every fault is injected by :class:`~support.fault_proxy.FaultProxy` in front of the real
registry (or in front of the real token issuer), on one image's paths only; the rest of the run
is served by the real registry. Each case runs ``mutate`` on a stream of four documents:

- ``victim``: a Deployment whose image hits the fault;
- ``bystander``: a Deployment whose image goes through the same proxy, on paths not faulted;
- ``direct``: a Deployment whose image comes from the registry itself;
- a ConfigMap.

For a fault that does not recover, the case proves: with ``failurePolicy: Ignore`` the run
exits 0, the victim comes out byte for byte with one warning line naming it and the reason,
the other two pods are resolved and changed; with ``Fail`` the run exits 1, prints nothing on
stdout and says why in one line; both end within the stated bound; nothing about the victim is
in either cache afterwards, and once the fault is gone a later run fetches it again. A fault
that recovers (a burst of 5xx, a 429 with a short ``Retry-After``) must resolve the victim.

``FLAGS`` keep the runs short: ``--timeout 1 --retries 1`` (2 attempts of at most 2 s each).
Time bounds are generous (a loaded 2-core CI machine); request counts, read from the proxy's
record, are the exact part of each proof.
"""

from __future__ import annotations

import email.utils
import json
import time
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import pytest
import yaml
from support import SeededRegistry
from support.cli import clean_env
from support.fault_proxy import (
    ClosedPort,
    Fault,
    FaultProxy,
    Hang,
    Redirect,
    ReplaceBody,
    Reset,
    SetHeaders,
    Status,
    Trickle,
    Truncate,
)
from support.measure import Invocation, Measured, run_concurrently, run_measured

from kmultiarch.resolve.cache import DiskCacheBackend

TIMEOUT = 1.0
RETRIES = 1
FLAGS = ["--timeout", f"{TIMEOUT:g}", "--retries", str(RETRIES)]
#: What a run may take beyond a case's own bound: interpreter start-up, the other images,
#: and a CI machine busy with other suites.
SLACK = 12.0

VICTIM = "multiarch-oci"
VICTIM_MANIFEST = "/v2/multiarch-oci/manifests/1.0"
SINGLE = "single-oci-arm64"
SINGLE_BLOB = "/v2/single-oci-arm64/blobs/"
BYSTANDER = "multiarch-docker"
DIRECT = "team-app-api"

Outcome = Literal["unresolved", "resolved"]


def _flip_last_byte(body: bytes) -> bytes:
    return body[:-2] + (b"]" if body[-2:-1] != b"]" else b"}") + body[-1:]


TOO_MANY = b'{"errors":[{"code":"TOOMANYREQUESTS","message":"slow down"}]}'


def _http_date_in(seconds: float) -> str:
    return email.utils.formatdate(time.time() + seconds, usegmt=True)


@dataclass(frozen=True)
class Case:
    """One fault: where it is injected, what the run must do, and how long it may take."""

    id: str
    fault: Fault
    outcome: Outcome
    #: Words of the reason the warning or error must give.
    reason: str
    #: Seconds the fault may cost a run with FLAGS (docs/reliability.md states these).
    bound: float
    image: str = VICTIM
    path: str = VICTIM_MANIFEST
    times: int | None = None
    #: Requests the faulted path must have seen (attempts, retries included), when exact.
    attempts: int | None = None
    flags: tuple[str, ...] = ()
    on_token_endpoint: bool = False
    #: More words the reason must hold.
    also: str = ""


CASES = [
    Case(
        "reset-mid-body",
        Reset(),
        "unresolved",
        "ReadError",
        bound=1,
        attempts=RETRIES + 1,
    ),
    Case("reset-once-then-recover", Reset(), "resolved", "", bound=1, times=1, attempts=2),
    Case(
        "accept-and-never-answer",
        Hang(),
        "unresolved",
        "ReadTimeout",
        bound=(RETRIES + 1) * TIMEOUT + 1,
        attempts=RETRIES + 1,
    ),
    # --timeout 2: a byte a second never lets the 2 s read timeout fire, only the deadline of
    # the attempt as a whole (twice --timeout) ends it.
    Case(
        "trickle-1-byte-per-second",
        Trickle(1.0),
        "unresolved",
        "did not answer after 1 attempt: no complete answer within 4 s",
        bound=4 + 1,
        attempts=1,
        flags=("--timeout", "2", "--retries", "0"),
    ),
    *(
        Case(
            f"{status}-x2-then-recover",
            Status(status),
            "resolved",
            "",
            bound=2,
            times=2,
            attempts=3,
            flags=("--retries", "2"),
        )
        for status in (500, 502, 503)
    ),
    Case(
        "503-for-ever",
        Status(503),
        "unresolved",
        "answered 503 (UNAVAILABLE: injected fault) after 2 attempts",
        bound=1,
        attempts=RETRIES + 1,
    ),
    Case(
        "429-retry-after-1s-then-recover",
        Status(429, {"Retry-After": "1"}, TOO_MANY),
        "resolved",
        "",
        bound=2,
        times=1,
        attempts=2,
    ),
    Case(
        "429-without-retry-after-then-recover",
        Status(429, body=TOO_MANY),
        "resolved",
        "",
        bound=1,
        times=1,
        attempts=2,
    ),
    Case(
        "429-for-ever",
        Status(429, {"Retry-After": "1"}, TOO_MANY),
        "unresolved",
        "answered 429 (TOOMANYREQUESTS: slow down) after 2 attempts",
        bound=2,
        attempts=RETRIES + 1,
    ),
    Case(
        "429-retry-after-3600s",
        Status(429, {"Retry-After": "3600"}, TOO_MANY),
        "unresolved",
        "answered 429 (TOOMANYREQUESTS: slow down) and asks to retry after 3600 s, longer "
        "than kmultiarch waits (2 s); try again later",
        bound=1,
        attempts=1,
    ),
    Case(
        "429-retry-after-http-date-in-1h",
        Status(429, {"Retry-After": _http_date_in(3600)}, TOO_MANY),
        "unresolved",
        "asks to retry after",
        bound=1,
        attempts=1,
    ),
    Case(
        "truncated-json",
        Truncate(0.5),
        "unresolved",
        "manifest is not valid JSON",
        bound=1,
        attempts=1,
    ),
    Case(
        "malformed-json",
        ReplaceBody(lambda body: b"<html><body>502 Bad Gateway</body></html>"),
        "unresolved",
        "manifest is not valid JSON",
        bound=1,
        attempts=1,
    ),
    Case(
        "json-that-is-not-a-manifest",
        ReplaceBody(lambda body: b'{"manifests": "everything"}'),
        "unresolved",
        "index has no 'manifests' list",
        bound=1,
        attempts=1,
    ),
    Case(
        "wrong-content-type",
        SetHeaders({"Content-Type": "text/html; charset=utf-8"}),
        "resolved",
        "",
        bound=1,
        attempts=1,
    ),
    Case(
        "missing-content-type",
        SetHeaders({"Content-Type": None}),
        "resolved",
        "",
        bound=1,
        attempts=1,
    ),
    Case(
        "oversized-manifest",
        ReplaceBody(lambda body: body + b" " * (5 * 1024 * 1024)),
        "unresolved",
        "over the 4194304-byte cap",
        bound=1,
        attempts=1,
    ),
    Case(
        "oversized-manifest-without-length",
        ReplaceBody(lambda body: body + b" " * (5 * 1024 * 1024), chunked=True),
        "unresolved",
        "larger than the 4194304-byte cap",
        bound=1,
        attempts=1,
    ),
    Case(
        "manifest-not-matching-its-digest",
        ReplaceBody(lambda body: body.replace(b"arm64", b"s390x")),
        "unresolved",
        "does not match its digest",
        bound=1,
        attempts=1,
    ),
    Case(
        "config-blob-not-matching-its-digest",
        ReplaceBody(lambda body: body.replace(b"arm64", b"amd64")),
        "unresolved",
        "config: content does not match its digest",
        bound=1,
        image=SINGLE,
        path=SINGLE_BLOB,
        attempts=1,
    ),
    Case(
        "oversized-config-blob",
        ReplaceBody(lambda body: body + b" " * (9 * 1024 * 1024)),
        "unresolved",
        "over the 8388608-byte cap",
        bound=1,
        image=SINGLE,
        path=SINGLE_BLOB,
        attempts=1,
    ),
    Case(
        "redirect-loop",
        Redirect(lambda path: path),
        "unresolved",
        "more than 5 redirects",
        bound=1,
        attempts=6,
    ),
    Case(
        "token-endpoint-500",
        Status(500),
        "unresolved",
        "token endpoint",
        bound=1,
        path="/token",
        attempts=RETRIES + 1,
        on_token_endpoint=True,
    ),
    Case(
        "token-endpoint-500-once-then-recover",
        Status(500),
        "resolved",
        "",
        bound=1,
        path="/token",
        times=1,
        on_token_endpoint=True,
    ),
    Case(
        "token-endpoint-garbage-json",
        ReplaceBody(lambda body: b"{'token': oops"),
        "unresolved",
        "sent an unreadable answer",
        bound=1,
        path="/token",
        on_token_endpoint=True,
    ),
    Case(
        "token-endpoint-without-token",
        ReplaceBody(lambda body: b'{"expires_in": 300}'),
        "unresolved",
        "sent no token",
        bound=1,
        path="/token",
        on_token_endpoint=True,
    ),
    Case(
        "token-endpoint-never-answers",
        Hang(),
        "unresolved",
        "did not answer after 2 attempts: ReadTimeout",
        also="could not be resolved: token endpoint 127.0.0.1:",
        bound=(RETRIES + 1) * TIMEOUT + 1,
        path="/token",
        attempts=RETRIES + 1,
        on_token_endpoint=True,
    ),
]


# -- the scenario ------------------------------------------------------------------------------


def deployment(name: str, image: str) -> str:
    return (
        "apiVersion: apps/v1\n"
        "kind: Deployment\n"
        "metadata:\n"
        f"  name: {name}\n"
        "spec:\n"
        "  template:\n"
        "    spec:\n"
        "      containers:\n"
        "      - name: main\n"
        f"        image: {image}\n"
    )


CONFIG_MAP = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  a: b\n"


@dataclass
class Scenario:
    """The stream of a fault case, the policy, and the checks every case shares."""

    tmp_path: Path
    victim: str
    bystander: str
    direct: str
    registries: dict[str, dict[str, object]] = field(default_factory=dict)
    env: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.documents = [
            deployment("victim", self.victim),
            deployment("bystander", self.bystander),
            deployment("direct", self.direct),
            CONFIG_MAP,
        ]
        self.manifest = self.tmp_path / "rendered.yaml"
        self.manifest.write_text("---\n".join(self.documents))
        if not self.env:
            self.env = clean_env(self.tmp_path)

    def policy(self, failure_policy: str) -> Path:
        path = self.tmp_path / f"policy-{failure_policy}.json"
        spec: dict[str, object] = {"failurePolicy": failure_policy}
        if self.registries:
            spec["registries"] = self.registries
        path.write_text(
            json.dumps(
                {
                    "apiVersion": "kmultiarch.dev/v1alpha1",
                    "kind": "MultiArchPolicy",
                    "metadata": {"name": "faults"},
                    "spec": spec,
                }
            )
        )
        return path

    def cache_dir(self, name: str) -> Path:
        return self.tmp_path / f"cache-{name}"

    def invocation(
        self, failure_policy: str, cache: str, flags: tuple[str, ...] = ()
    ) -> Invocation:
        args = [
            "mutate",
            str(self.manifest),
            "--config",
            str(self.policy(failure_policy)),
            "--cache-dir",
            str(self.cache_dir(cache)),
            *FLAGS,
            *flags,
        ]
        return Invocation(args, self.env)

    def run(self, failure_policy: str, cache: str, flags: tuple[str, ...] = ()) -> Measured:
        invocation = self.invocation(failure_policy, cache, flags)
        return run_measured(invocation.args, env=invocation.env)

    # -- checks ------------------------------------------------------------------------------

    def output_documents(self, run: Measured) -> list[str]:
        text = run.text
        assert text.startswith(self.documents[0][:20])
        parts = text.split("---\n")
        assert len(parts) == len(self.documents), text
        assert [yaml.safe_load(part)["metadata"]["name"] for part in parts] == [
            "victim",
            "bystander",
            "direct",
            "settings",
        ]
        return parts

    def assert_victim_left_unchanged(self, run: Measured, reason: str) -> None:
        """failurePolicy Ignore: exit 0, the whole stream, the victim byte for byte, one
        warning line naming it and the reason; the others resolved and changed."""
        assert run.returncode == 0, run.stderr
        victim, bystander, direct, config_map = self.output_documents(run)
        assert victim == self.documents[0]
        assert "tolerations" in bystander
        assert "tolerations" in direct
        assert config_map == self.documents[3]
        warnings = [line for line in run.stderr_lines if "Deployment victim" in line]
        assert len(warnings) == 1, run.stderr
        assert warnings[0].startswith("kmultiarch: warning: ")
        assert reason in warnings[0], warnings[0]
        assert "the pod is left unchanged" in warnings[0]
        assert not any("Deployment bystander" in line for line in run.stderr_lines), run.stderr
        self.assert_one_line_messages(run)

    def assert_run_failed(self, run: Measured, reason: str) -> None:
        """failurePolicy Fail: exit 1, nothing on stdout, the reason in one line."""
        assert run.returncode == 1, run.stderr
        assert run.stdout == b""
        errors = [line for line in run.stderr_lines if "Deployment victim" in line]
        assert len(errors) == 1, run.stderr
        assert errors[0].startswith("kmultiarch: error: ")
        assert reason in errors[0], errors[0]
        assert "kmultiarch: error: nothing was written" in run.stderr
        self.assert_one_line_messages(run)

    def assert_resolved(self, run: Measured) -> None:
        assert run.returncode == 0, run.stderr
        victim, bystander, direct, _ = self.output_documents(run)
        assert "tolerations" in victim, run.text
        assert "tolerations" in bystander
        assert "tolerations" in direct
        assert "warning" not in run.stderr, run.stderr
        self.assert_one_line_messages(run)

    @staticmethod
    def assert_one_line_messages(run: Measured) -> None:
        for line in run.stderr_lines:
            assert line.startswith("kmultiarch: "), run.stderr

    def cached_keys(self, cache: str) -> set[str]:
        backend = DiskCacheBackend(self.cache_dir(cache))
        try:
            return set(backend.keys())
        finally:
            backend.close()


def tag_key(reference: str) -> str:
    return f"tag:{reference}"


def assert_nothing_cached_for(keys: set[str], reference: str, digest: str) -> None:
    assert tag_key(reference) not in keys, keys
    assert f"platforms:{digest}" not in keys, keys


def assert_within(run: Measured, bound: float) -> None:
    assert run.elapsed < bound + SLACK, f"took {run.elapsed:.1f} s, bound {bound} s + {SLACK} s"


# -- the table of faults -----------------------------------------------------------------------


@dataclass
class CaseRun:
    """A case's scenario, its proxies, and what its runs gave."""

    case: Case
    scenario: Scenario
    proxies: list[FaultProxy]
    faulted: FaultProxy
    ignore: Measured | None = None
    fail: Measured | None = None
    refetch: Measured | None = None
    attempts_seen: int = 0
    refetch_attempts: int = 0
    keys: dict[str, set[str]] = field(default_factory=dict)

    @property
    def refetches(self) -> bool:
        """A bad body came: the proof includes a later run that asks again."""
        return self.case.outcome == "unresolved" and isinstance(
            self.case.fault, (ReplaceBody, Truncate)
        )


def _case_run(
    case: Case, registry: SeededRegistry, token_registry: SeededRegistry, workdir: Path
) -> CaseRun:
    """Every case has its own proxies (its own hosts) and caches: cases run side by side."""
    workdir.mkdir()
    image = registry.images[case.image]
    proxy = FaultProxy(registry.url).start()
    proxies = [proxy]
    faulted = proxy
    victim_host = proxy.host
    if case.on_token_endpoint:
        assert token_registry.issuer is not None
        tokens = FaultProxy(token_registry.issuer.url).start()
        front = FaultProxy(token_registry.url, rewrite_realm=f"{tokens.url}/token").start()
        proxies += [tokens, front]
        faulted = tokens
        victim_host = front.host
    faulted.inject(case.path, case.fault, times=case.times)
    scenario = Scenario(
        workdir,
        f"{victim_host}/{image.repository}:{image.tag}",
        f"{proxy.host}/multiarch-docker:1.0",
        registry.reference(DIRECT),
    )
    return CaseRun(case, scenario, proxies, faulted)


#: Runs at once: the slow cases mostly sleep, the others need a core for a second.
PARALLEL_RUNS = 4


@pytest.fixture(scope="module")
def fault_runs(
    registry: SeededRegistry,
    token_registry: SeededRegistry,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[dict[str, CaseRun]]:
    """Every case of CASES, run side by side (each on its own proxies and caches); the tests
    below check one case each."""
    base = tmp_path_factory.mktemp("faults")
    runs = {case.id: _case_run(case, registry, token_registry, base / case.id) for case in CASES}
    try:
        with ThreadPoolExecutor(PARALLEL_RUNS) as pool:

            def launch(run: CaseRun, policy: str, cache: str) -> Future[Measured]:
                invocation = run.scenario.invocation(policy, cache, run.case.flags)
                return pool.submit(run_measured, invocation.args, env=invocation.env)

            first = {
                case_id: (
                    launch(run, "Ignore", "a"),
                    launch(run, "Fail", "b") if run.case.outcome == "unresolved" else None,
                )
                for case_id, run in runs.items()
            }
            for case_id, (ignore, fail) in first.items():
                run = runs[case_id]
                run.ignore = ignore.result()
                run.fail = fail.result() if fail is not None else None
                run.attempts_seen = run.faulted.count(path_contains=run.case.path)
                run.keys = {cache: run.scenario.cached_keys(cache) for cache in ("a", "b")}
                if run.refetches:
                    run.faulted.clear()
            again = {
                case_id: launch(run, "Ignore", "a")
                for case_id, run in runs.items()
                if run.refetches
            }
            for case_id, future in again.items():
                run = runs[case_id]
                run.refetch = future.result()
                run.refetch_attempts = run.faulted.count(path_contains=run.case.path)
        yield runs
    finally:
        for run in runs.values():
            for started in run.proxies:
                started.close()


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_fault(case: Case, registry: SeededRegistry, fault_runs: dict[str, CaseRun]) -> None:
    run = fault_runs[case.id]
    scenario = run.scenario
    digest = registry.images[case.image].digest
    assert run.ignore is not None

    if case.outcome == "resolved":
        scenario.assert_resolved(run.ignore)
        assert_within(run.ignore, case.bound)
        if case.attempts is not None:
            assert run.attempts_seen == case.attempts
        assert tag_key(scenario.victim) in run.keys["a"]
        assert f"platforms:{digest}" in run.keys["a"]
        return

    assert run.fail is not None
    scenario.assert_victim_left_unchanged(run.ignore, case.reason)
    scenario.assert_run_failed(run.fail, case.reason)
    assert case.also in run.ignore.stderr and case.also in run.fail.stderr
    for measured in (run.ignore, run.fail):
        assert_within(measured, case.bound)
    if case.attempts is not None:
        assert run.attempts_seen == 2 * case.attempts  # the Ignore run's and the Fail run's
    for cache in ("a", "b"):
        assert_nothing_cached_for(run.keys[cache], scenario.victim, digest)
        assert tag_key(scenario.bystander) in run.keys[cache]
    if run.refetches:
        # A bad body was served: once the fault is gone, the next run asks again (nothing was
        # remembered from the bad answer) and resolves.
        assert run.refetch is not None
        scenario.assert_resolved(run.refetch)
        assert run.refetch_attempts > run.attempts_seen
        assert f"platforms:{digest}" in scenario.cached_keys("a")


def test_429_retry_after_is_honoured(
    registry: SeededRegistry, proxy: FaultProxy, tmp_path: Path
) -> None:
    scenario = Scenario(
        tmp_path,
        f"{proxy.host}/multiarch-oci:1.0",
        f"{proxy.host}/multiarch-docker:1.0",
        registry.reference(DIRECT),
    )
    proxy.inject(VICTIM_MANIFEST, Status(429, {"Retry-After": "1"}, TOO_MANY), times=1)
    run = scenario.run("Ignore", "a")
    scenario.assert_resolved(run)
    first, second = [r for r in proxy.requests() if r.path == VICTIM_MANIFEST]
    assert first.fault == "Status(429)"
    assert second.fault is None
    assert second.time - first.time >= 0.95


# -- faults without a proxy --------------------------------------------------------------------


def test_connection_refused(registry: SeededRegistry, proxy: FaultProxy, tmp_path: Path) -> None:
    with ClosedPort() as closed:
        closed_host = closed.host
        victim = f"{closed_host}/multiarch-oci:1.0"
        scenario = Scenario(
            tmp_path, victim, f"{proxy.host}/multiarch-docker:1.0", registry.reference(DIRECT)
        )
        ignore, fail = run_concurrently(
            [scenario.invocation("Ignore", "a"), scenario.invocation("Fail", "b")]
        )
    reason = f"http://{closed_host} did not answer after {RETRIES + 1} attempts: ConnectError"
    scenario.assert_victim_left_unchanged(ignore, reason)
    scenario.assert_run_failed(fail, reason)
    for run in (ignore, fail):
        assert_within(run, 1)
    for cache in ("a", "b"):
        assert_nothing_cached_for(
            scenario.cached_keys(cache), victim, registry.images[VICTIM].digest
        )


def test_tls_with_an_unknown_ca(
    registry: SeededRegistry, tls_registry: SeededRegistry, proxy: FaultProxy, tmp_path: Path
) -> None:
    """The real TLS registry, without its CA: refused at once (a certificate does not become
    trusted by asking again), and resolved once the CA is configured."""
    victim = tls_registry.reference(VICTIM)
    scenario = Scenario(
        tmp_path,
        victim,
        f"{proxy.host}/multiarch-docker:1.0",
        registry.reference(DIRECT),
        registries={tls_registry.host: {"insecure": False}},
    )
    ignore, fail = run_concurrently(
        [scenario.invocation("Ignore", "a"), scenario.invocation("Fail", "b")]
    )
    reason = "TLS certificate not trusted (CERTIFICATE_VERIFY_FAILED)"
    scenario.assert_victim_left_unchanged(ignore, reason)
    scenario.assert_run_failed(fail, reason)
    for run in (ignore, fail):
        assert_within(run, 1)
        assert "attempts" not in run.stderr, "a certificate failure is not retried"
    for cache in ("a", "b"):
        assert_nothing_cached_for(
            scenario.cached_keys(cache), victim, registry.images[VICTIM].digest
        )
    scenario.registries[tls_registry.host] = {"ca": str(tls_registry.ca_pem)}
    scenario.assert_resolved(scenario.run("Ignore", "a"))


# -- redirects: credentials stay with their host -----------------------------------------------


@pytest.fixture
def witness(registry: SeededRegistry) -> FaultProxy:
    """Another host (another origin) that serves the plain registry and records what it gets."""
    with FaultProxy(registry.url) as started:
        yield started


def _redirect_to(other: FaultProxy) -> Redirect:
    return Redirect(lambda path: f"{other.url}{path}")


@pytest.mark.parametrize("auth", ["basic", "token"])
def test_redirect_to_another_host_carries_no_credentials(
    auth: str,
    registry: SeededRegistry,
    basic_auth_registry: SeededRegistry,
    token_registry: SeededRegistry,
    witness: FaultProxy,
    proxy: FaultProxy,
    tmp_path: Path,
    docker_config,
) -> None:
    upstream = basic_auth_registry if auth == "basic" else token_registry
    with FaultProxy(upstream.url) as front:
        # As registries do for blob storage: the authenticated request is redirected.
        front.inject(VICTIM_MANIFEST, _redirect_to(witness), method="GET", authorized=True)
        config_dir = docker_config(front.host, upstream.username, upstream.password)
        scenario = Scenario(
            tmp_path,
            f"{front.host}/multiarch-oci:1.0",
            f"{proxy.host}/multiarch-docker:1.0",
            registry.reference(DIRECT),
            env=clean_env(tmp_path, {"DOCKER_CONFIG": str(config_dir)}),
        )
        run = scenario.run("Fail", "a")
        scenario.assert_resolved(run)
        # The registry got the credentials (or a token), the other host never did.
        assert front.authorizations()
        assert all(
            value.startswith("Basic " if auth == "basic" else "Bearer ")
            for value in front.authorizations()
        )
    assert witness.count(path_contains=VICTIM_MANIFEST) == 1
    assert witness.authorizations() == []


def test_redirect_to_a_host_asking_for_credentials_gets_none(
    registry: SeededRegistry,
    basic_auth_registry: SeededRegistry,
    witness: FaultProxy,
    proxy: FaultProxy,
    tmp_path: Path,
    docker_config,
) -> None:
    """The other host answers 401 with a Bearer challenge naming its own realm: following that
    challenge would send the registry's credentials to the realm. Refused, with the reason.

    The redirected request is the config blob's, made once the registry's Basic challenge is
    known, so it goes out with credentials at once: the path where the challenge of another
    host used to be taken for the registry's own.
    """
    witness.inject(
        "/v2/",
        Status(401, {"WWW-Authenticate": f'Bearer realm="{witness.url}/token",service="x"'}),
    )
    witness.inject("/token", Status(200, body=b'{"token": "stolen"}'))
    with FaultProxy(basic_auth_registry.url) as front:
        front.inject(SINGLE_BLOB, _redirect_to(witness), method="GET", authorized=True)
        config_dir = docker_config(
            front.host, basic_auth_registry.username, basic_auth_registry.password
        )
        scenario = Scenario(
            tmp_path,
            f"{front.host}/single-oci-arm64:1.0",
            f"{proxy.host}/multiarch-docker:1.0",
            registry.reference(DIRECT),
            env=clean_env(tmp_path, {"DOCKER_CONFIG": str(config_dir)}),
        )
        ignore = scenario.run("Ignore", "a")
    scenario.assert_victim_left_unchanged(
        ignore, f"redirected to {witness.url}, which asks for credentials"
    )
    assert witness.count(path_contains=SINGLE_BLOB) >= 1
    assert witness.count(path_contains="/token") == 0
    assert witness.authorizations() == []
    assert_nothing_cached_for(
        scenario.cached_keys("a"), scenario.victim, registry.images[SINGLE].digest
    )
