"""``kmultiarch admission serve`` as a process (issue 37): AdmissionReviews posted over real HTTPS
on loopback, images in the real registry fixture (seeded through its API), a real Redis.

The failure table of docs/admission.md, one test per row: registry down, Redis down, a lookup
slower than the review's timeout (the webhook-down row is the API server's: see
test_admission_cluster.py and the configuration tests)."""

from __future__ import annotations

import json
import shutil
import ssl
import statistics
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import httpx
import jsonpatch
import pytest
import trustme
import yaml
from support import SeededRegistry
from support.admission import (
    ARM_TOLERATION,
    AdmissionServer,
    free_port,
    metric,
    patch_of,
    pod,
    review,
    write_certificates,
)
from support.latency_proxy import LatencyProxy
from support.manifests import TEST_HOST, image, write_policy
from support.redis_server import RedisServer
from support.seed import ARM64_V8, Seeder, oci_image

pytest.importorskip("uvicorn")
pytest.importorskip("prometheus_client")

SPEC = {
    "platforms": ["linux/amd64", "linux/arm64"],
    "tolerations": {"linux/arm64": [ARM_TOLERATION]},
}


def policy_file(tmp_path: Path, registry: SeededRegistry, **spec: Any) -> Path:
    return write_policy(tmp_path / "policy.yaml", registry, {**SPEC, **spec})


def post(server: AdmissionServer, body: Any, query: str = "?timeout=10s") -> httpx.Response:
    with server.client() as client:
        return client.post(f"/mutate{query}", json=body)


def new_arm64_image(registry: SeededRegistry) -> str:
    """A repository no test asked for before (so every server's cache is cold for it)."""
    repository = f"admission/fresh-{uuid.uuid4().hex[:10]}"
    with registry.client() as client:
        Seeder(client).push_manifest(repository, oci_image(ARM64_V8, repository), "1.0")
    return f"{TEST_HOST}/{repository}:1.0"


def test_a_review_over_https_gets_the_engines_patch(
    registry: SeededRegistry, tmp_path: Path
) -> None:
    arm = image(registry, "single-oci-arm64")
    both = image(registry, "multiarch-oci")
    with AdmissionServer(tmp_path, policy_file(tmp_path, registry)) as server:
        the_pod = pod(arm, init=[both])
        response = post(server, review(the_pod)).json()["response"]
        assert response["allowed"] is True
        patched = jsonpatch.apply_patch(the_pod, patch_of(response))
        assert patched["spec"]["tolerations"] == [ARM_TOLERATION]
        # The second review of an already patched pod (reinvocation) adds nothing.
        again = post(server, review(patched)).json()["response"]
        assert again["allowed"] is True
        assert "patch" not in again


@pytest.mark.parametrize("query", ["?timeout=10s", "?timeout=1m0s", "?timeout=2500ms", ""])
def test_the_api_servers_timeout_query_is_answered(
    registry: SeededRegistry, tmp_path: Path, query: str
) -> None:
    with AdmissionServer(tmp_path, policy_file(tmp_path, registry)) as server:
        response = post(server, review(pod(image(registry, "multiarch-oci"))), query)
        assert response.status_code == 200
        assert response.json()["response"]["allowed"] is True


def test_malformed_reviews_get_an_error_response_and_the_server_keeps_serving(
    registry: SeededRegistry, tmp_path: Path
) -> None:
    with AdmissionServer(tmp_path, policy_file(tmp_path, registry)) as server:
        with server.client() as client:
            for body in (b"{", b"[]", b'{"kind": "AdmissionReview"}', b"\xff\xfe"):
                answer = client.post("/mutate", content=body)
                assert answer.status_code == 400
                assert "not an AdmissionReview" in answer.json()["error"]
            assert client.post("/mutate", content=b"x" * (9 * 1024 * 1024)).status_code == 413
            assert client.get("/nowhere").status_code == 404
        good = post(server, review(pod(image(registry, "single-oci-arm64"))))
        assert good.status_code == 200
        assert good.json()["response"]["allowed"] is True
        assert server.alive()
        with server.client() as client:
            text = client.get("/metrics").text
        assert metric(text, 'kmultiarch_admission_reviews_total{outcome="invalid"}') == 5


def test_health_readiness_and_metrics(registry: SeededRegistry, tmp_path: Path) -> None:
    with AdmissionServer(tmp_path, policy_file(tmp_path, registry)) as server:
        arm = image(registry, "single-oci-arm64")
        for _ in range(3):
            post(server, review(pod(arm)))
        with server.client() as client:
            assert client.get("/healthz").status_code == 200
            assert client.get("/readyz").status_code == 200
            metrics = client.get("/metrics")
        assert metrics.headers["content-type"].startswith("text/plain; version=0.0.4")
        text = metrics.text
        assert metric(text, 'kmultiarch_admission_reviews_total{outcome="patched"}') == 3
        assert metric(text, "kmultiarch_admission_review_duration_seconds_count") == 3
        assert metric(text, 'kmultiarch_admission_cache_misses_total{level="cache"}') == 1
        # The next two reviews: from memory, on the event loop.
        assert metric(text, 'kmultiarch_admission_cache_hits_total{level="memory"}') == 2
        assert metric(text, "kmultiarch_admission_registry_errors_total") == 0
        assert metric(text, "kmultiarch_admission_lookups_in_flight") == 0


def _served_certificate(server: AdmissionServer) -> bytes:
    context = ssl.create_default_context(cafile=str(server.ca_pem))
    import socket

    with (
        socket.create_connection(("127.0.0.1", server.port), timeout=10) as raw,
        context.wrap_socket(raw, server_hostname="127.0.0.1") as wrapped,
    ):
        certificate = wrapped.getpeercert(binary_form=True)
    assert certificate is not None
    return certificate


def test_the_certificate_is_read_again_when_it_changes_on_disk(
    registry: SeededRegistry, tmp_path: Path
) -> None:
    """cert-manager rotates the Secret; the mounted files change under the running server."""
    with AdmissionServer(tmp_path, policy_file(tmp_path, registry)) as server:
        before = _served_certificate(server)
        ca = trustme.CA()
        renewed = write_certificates(tmp_path / "renewed", ca)
        shutil.copyfile(renewed[2], server.key_pem)
        shutil.copyfile(renewed[1], server.cert_pem)
        shutil.copyfile(renewed[0], server.ca_pem)  # the client trusts the new CA
        time.sleep(1.1)  # the files are looked at once a second at most
        after = _served_certificate(server)
        assert after != before
        assert post(server, review(pod(image(registry, "multiarch-oci")))).status_code == 200


def test_answers_are_not_held_back_by_nagles_algorithm(
    registry: SeededRegistry, tmp_path: Path
) -> None:
    """A server writing headers and body in two sends without TCP_NODELAY stalls ~40 ms a call
    on one keep-alive connection (Nagle against the client's delayed ACK)."""
    with AdmissionServer(tmp_path, policy_file(tmp_path, registry)) as server:
        body = review(pod(image(registry, "single-oci-arm64")))
        with server.client() as client:
            client.post("/mutate", json=body)  # warm
            durations = []
            for _ in range(30):
                started = time.perf_counter()
                assert client.post("/mutate", json=body).status_code == 200
                durations.append(time.perf_counter() - started)
        assert statistics.median(durations) < 0.02, durations


def test_concurrent_reviews_of_a_new_image_share_one_lookup(
    registry: SeededRegistry, tmp_path: Path
) -> None:
    fresh = new_arm64_image(registry)
    repository = fresh.split("/", 1)[1].split(":")[0]
    slow = LatencyProxy(*registry.host.split(":")[:1], int(registry.host.split(":")[1]), 0.2)
    slow.start()
    try:
        config = write_policy(tmp_path / "policy.yaml", registry, {**SPEC, "registries": {}})
        document = yaml.safe_load(config.read_text())
        document["spec"]["registries"] = {TEST_HOST: {"mirror": f"http://{slow.host}"}}
        config.write_text(yaml.safe_dump(document))
        with AdmissionServer(tmp_path, config) as server:
            log = registry.mark()
            answers: list[dict[str, Any]] = []

            def one() -> None:
                answers.append(post(server, review(pod(fresh))).json()["response"])

            threads = [threading.Thread(target=one) for _ in range(24)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            assert len(answers) == 24
            assert all(ARM_TOLERATION in patch_of(a)[0]["value"] for a in answers), answers[0]
            asked = log.count(path_contains=f"/v2/{repository}/manifests/1.0")
            assert asked == 1, [r.path for r in log.requests()]
    finally:
        slow.stop()


def _registry_behind(registry: SeededRegistry, tmp_path: Path, mirror: str, **spec: Any) -> Path:
    config = policy_file(tmp_path, registry, **spec)
    document = yaml.safe_load(config.read_text())
    document["spec"]["registries"] = {TEST_HOST: {"mirror": mirror}}
    config.write_text(yaml.safe_dump(document))
    return config


# The failure table (docs/admission.md) --------------------------------------------------------


@pytest.mark.parametrize("failure_policy", ["Ignore", "Fail"])
def test_failure_table_registry_down(
    registry: SeededRegistry, tmp_path: Path, failure_policy: str
) -> None:
    closed = f"http://127.0.0.1:{free_port()}"
    config = _registry_behind(registry, tmp_path, closed, failurePolicy=failure_policy, **{})
    arm = image(registry, "single-oci-arm64")
    with AdmissionServer(tmp_path, config, extra_args=["--retries", "0"]) as server:
        response = post(server, review(pod(arm))).json()["response"]
    if failure_policy == "Ignore":
        assert response["allowed"] is True
        assert "patch" not in response
        assert any(arm in warning for warning in response["warnings"]), response
    else:
        assert response["allowed"] is False
        assert arm in response["status"]["message"]


def test_failure_table_redis_down(registry: SeededRegistry, tmp_path: Path) -> None:
    """The shared level cannot be reached: the registry answers, the review says so."""
    down = f"redis://127.0.0.1:{free_port()}/0"
    arm = image(registry, "single-oci-arm64")
    config = policy_file(tmp_path, registry)
    with AdmissionServer(tmp_path, config, extra_args=["--cache-url", down]) as server:
        response = post(server, review(pod(arm))).json()["response"]
    assert response["allowed"] is True
    assert ARM_TOLERATION in patch_of(response)[0]["value"]
    assert any("shared cache" in warning for warning in response["warnings"]), response


def test_a_shared_redis_answers_a_second_replica_without_the_registry(
    registry: SeededRegistry, tmp_path: Path
) -> None:
    arm = image(registry, "single-oci-arm64")
    config = policy_file(tmp_path, registry)
    with RedisServer(tmp_path / "redis") as redis:
        with AdmissionServer(
            tmp_path / "one", config, extra_args=["--cache-url", redis.url]
        ) as one:
            assert patch_of(post(one, review(pod(arm))).json()["response"])
        log = registry.mark()
        with AdmissionServer(
            tmp_path / "two", config, extra_args=["--cache-url", redis.url]
        ) as two:
            response = post(two, review(pod(arm))).json()["response"]
        assert patch_of(response)
        assert "warnings" not in response
        assert log.count(path_contains="/manifests/") == 0, [r.path for r in log.requests()]


@pytest.mark.parametrize("failure_policy", ["Ignore", "Fail"])
def test_failure_table_timeout(
    registry: SeededRegistry, tmp_path: Path, failure_policy: str
) -> None:
    """A registry 4 s away and a review of 2 s: the failure policy answers before the API
    server gives up."""
    host, port = registry.host.split(":")
    slow = LatencyProxy(host, int(port), 4.0).start()
    try:
        config = _registry_behind(
            registry, tmp_path, f"http://{slow.host}", failurePolicy=failure_policy
        )
        fresh = new_arm64_image(registry)
        with AdmissionServer(tmp_path, config) as server:
            started = time.monotonic()
            response = post(server, review(pod(fresh)), "?timeout=2s").json()["response"]
            elapsed = time.monotonic() - started
            with server.client() as client:
                text = client.get("/metrics").text
            assert metric(text, "kmultiarch_admission_deadline_misses_total") == 1
    finally:
        slow.stop()
    assert elapsed < 2.0, elapsed
    if failure_policy == "Ignore":
        assert response["allowed"] is True
        assert "patch" not in response
        assert any(fresh in w and "deadline" in w for w in response["warnings"]), response
    else:
        assert response["allowed"] is False
        assert fresh in response["status"]["message"]
        assert "deadline" in response["status"]["message"]


def test_serve_without_the_policy_or_certificate_says_what_to_do(tmp_path: Path) -> None:
    from support.cli import clean_env, run_kmultiarch

    env = clean_env(tmp_path)
    result = run_kmultiarch(
        ["admission", "serve", "--tls-cert-file", "x", "--tls-key-file", "y"], env=env
    )
    assert result.returncode != 0
    assert "--config" in result.stderr
    policy = tmp_path / "p.yaml"
    policy.write_text(
        json.dumps({"apiVersion": "kmultiarch.dev/v1alpha1", "kind": "MultiArchPolicy", "spec": {}})
    )
    result = run_kmultiarch(
        [
            "admission",
            "serve",
            "--config",
            str(policy),
            "--listen",
            "127.0.0.1:1",
            "--tls-cert-file",
            str(tmp_path / "none.pem"),
            "--tls-key-file",
            str(tmp_path / "none.key"),
        ],
        env=env,
    )
    assert result.returncode != 0
    assert "cannot load the TLS certificate" in result.stderr
    assert "none.pem" in result.stderr
    assert "Traceback" not in result.stderr
    assert result.stdout == ""


def test_serve_without_the_admission_extra_says_what_to_install(tmp_path: Path) -> None:
    """A Python without uvicorn (stood in for by a module that refuses to import)."""
    from support.cli import clean_env, run_kmultiarch

    blocker = tmp_path / "blocked"
    blocker.mkdir()
    (blocker / "uvicorn.py").write_text("raise ImportError(\"No module named 'uvicorn'\")\n")
    policy = tmp_path / "p.yaml"
    policy.write_text(
        json.dumps({"apiVersion": "kmultiarch.dev/v1alpha1", "kind": "MultiArchPolicy", "spec": {}})
    )
    _, cert, key = write_certificates(tmp_path / "tls")
    result = run_kmultiarch(
        [
            "admission",
            "serve",
            "--config",
            str(policy),
            "--tls-cert-file",
            str(cert),
            "--tls-key-file",
            str(key),
        ],
        env=clean_env(tmp_path, {"PYTHONPATH": str(blocker)}),
    )
    assert result.returncode != 0
    assert "pip install 'kmultiarch[admission]'" in result.stderr
