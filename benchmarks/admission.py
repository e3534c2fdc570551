#!/usr/bin/env python3
"""The admission webhook's latency (issue 37, item 7), served directly over HTTPS on loopback.

    python3 benchmarks/admission.py [--rates 50,100,200,400] [--seconds 5] [--images 5]
                                    [--waiting 20] [--rtt 0.05]

Starts Debian's docker-registry on 127.0.0.1 (seeded through its API), and
``kmultiarch admission serve`` as a process, as the tests do. Then:

- warm, one at a time: 300 reviews on one keep-alive connection, each sent when the last is
  answered (the webhook's own latency, no queue);
- warm: the cache holds every image; reviews are sent open-loop at each rate (a review every
  1/rate s whether or not the previous ones are answered, over up to 64 keep-alive connections,
  as the API server's HTTP/1.1 client pool does) for --seconds, at most 2 000 per rate; p50, p99
  and the worst latency are measured by the client from each review's send to its answer, and
  the server's own p50 and p99 are read from its histogram
  (kmultiarch_admission_review_duration_seconds: the upper bound of the bucket);
- cold: --images new images, each reviewed by --waiting pods at once, the registry --rtt s away
  (a latency proxy); how long the pods waited, and how many manifest requests the registry got
  per image (from its own access log).

The client runs on the same machine as the server and the registry (2 cores here): the figures
include its cost.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import ssl
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import httpx
import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from support.admission import AdmissionServer, review  # noqa: E402
from support.latency_proxy import LatencyProxy  # noqa: E402
from support.registry import RegistryServer  # noqa: E402
from support.seed import PlatformSpec, Seeder, oci_image  # noqa: E402

ARM64 = PlatformSpec("linux", "arm64", "v8")
AMD64 = PlatformSpec("linux", "amd64")


def write_policy(path: Path, mirror: str) -> Path:
    document = {
        "apiVersion": "kmultiarch.dev/v1alpha1",
        "kind": "MultiArchPolicy",
        "metadata": {"name": "benchmark"},
        "spec": {
            "platforms": ["linux/amd64", "linux/arm64"],
            "tolerations": {
                "linux/arm64": [
                    {
                        "key": "kubernetes.io/arch",
                        "operator": "Equal",
                        "value": "arm64",
                        "effect": "NoSchedule",
                    }
                ]
            },
            "registries": {"registry.test": {"mirror": mirror}},
        },
    }
    path.write_text(yaml.safe_dump(document))
    return path


def the_pod(images: list[str]) -> dict[str, object]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "bench", "labels": {"app": "bench"}},
        "spec": {
            "initContainers": [{"name": "init", "image": images[0]}],
            "containers": [
                {"name": f"c{index}", "image": image} for index, image in enumerate(images)
            ],
        },
    }


def server_buckets(server: AdmissionServer) -> dict[float, float]:
    """The server's review-duration histogram: bucket upper bound -> cumulative count."""
    with server.client() as client:
        text = client.get("/metrics").text
    buckets: dict[float, float] = {}
    prefix = 'kmultiarch_admission_review_duration_seconds_bucket{le="'
    for line in text.splitlines():
        if line.startswith(prefix):
            bound = line[len(prefix) :].split('"')[0]
            buckets[float("inf") if bound == "+Inf" else float(bound)] = float(line.split()[-1])
    return buckets


def bucket_quantile(buckets: dict[float, float], share: float) -> float:
    total = buckets.get(float("inf"), 0.0)
    for bound in sorted(buckets):
        if total and buckets[bound] >= share * total:
            return bound
    return float("inf")


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


async def open_loop(server: AdmissionServer, body: bytes, rate: float, count: int) -> list[float]:
    context = ssl.create_default_context(cafile=str(server.ca_pem))
    limits = httpx.Limits(max_connections=64, max_keepalive_connections=64)
    latencies: list[float] = []
    async with httpx.AsyncClient(
        base_url=server.url, verify=context, limits=limits, timeout=30
    ) as client:
        # Connections opened before the clock starts (the API server keeps its own open).
        await asyncio.gather(*(client.get("/healthz") for _ in range(16)))
        started = time.perf_counter()

        async def one(index: int) -> None:
            planned = started + index / rate
            delay = planned - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
            sent = time.perf_counter()
            response = await client.post(
                "/mutate?timeout=10s", content=body, headers={"content-type": "application/json"}
            )
            response.raise_for_status()
            # From the send, not the plan: the client's own lateness on this loaded machine
            # is not the server's (the server's own histogram is printed beside).
            latencies.append(time.perf_counter() - sent)

        await asyncio.gather(*(one(index) for index in range(count)))
    return latencies


async def cold(server: AdmissionServer, images: list[str], waiting: int) -> list[float]:
    context = ssl.create_default_context(cafile=str(server.ca_pem))
    latencies: list[float] = []
    limits = httpx.Limits(max_connections=64, max_keepalive_connections=64)
    async with httpx.AsyncClient(
        base_url=server.url, verify=context, limits=limits, timeout=30
    ) as client:
        # Connections opened first, as the API server keeps its own: the handshakes are not
        # the lookup's.
        await asyncio.gather(*(client.get("/healthz") for _ in range(64)))

        async def one(image: str) -> None:
            body = json.dumps(review(the_pod([image]))).encode()
            started = time.perf_counter()
            response = await client.post("/mutate?timeout=10s", content=body)
            answer = response.json()["response"]
            assert answer["allowed"] and "patch" in answer, answer
            latencies.append(time.perf_counter() - started)

        await asyncio.gather(*(one(image) for image in images for _ in range(waiting)))
    return latencies


def through_api_server(
    server: AdmissionServer, policy: Path, images: list[str], count: int, work: Path
) -> None:
    """Pods created through a real kube-apiserver (dry run: admitted, webhooks called, nothing
    stored), one at a time, without then with the webhook: the difference is what the webhook
    costs a pod's creation, the API server's TLS client and JSON included."""
    try:
        from support.kubecluster import KubeCluster, missing_kube_binaries
    except ImportError:  # a checkout without the cluster harness
        print("\nthrough the API server: skipped (no tests/support/kubecluster.py)")
        return
    absent = missing_kube_binaries()
    if absent:
        print(f"\nthrough the API server: skipped ({', '.join(absent)} not installed)")
        return
    manifest = {"metadata": {"name": "bench"}, **{"spec": the_pod(images)["spec"]}}
    with KubeCluster(work / "cluster") as kube:
        namespace = kube.new_namespace("bench", labels={"bench": "admission"})

        def timed() -> list[float]:
            latencies = []
            for _ in range(count):
                started = time.perf_counter()
                kube.create_pod(namespace, manifest, dry_run=True)
                latencies.append(time.perf_counter() - started)
            return latencies

        timed()  # warm the API server's own paths
        without = timed()
        printed = subprocess.run(
            [
                sys.executable,
                "-m",
                "kmultiarch",
                "admission",
                "configuration",
                "--url",
                f"{server.url}/mutate",
                "--ca-file",
                str(server.ca_pem),
                "--config",
                str(policy),
            ],
            capture_output=True,
            text=True,
            check=True,
        )
        configuration = yaml.safe_load(printed.stdout)
        configuration["webhooks"][0]["namespaceSelector"] = {"matchLabels": {"bench": "admission"}}
        kube.apply(configuration)
        deadline = time.monotonic() + 30
        while "tolerations" not in json.dumps(kube.create_pod(namespace, manifest, dry_run=True)):
            if time.monotonic() > deadline:
                raise SystemExit("the API server never called the webhook")
            time.sleep(0.1)
        with_webhook = timed()
    print(f"\nthrough a real kube-apiserver (v1.20), {count} pods created one at a time (dry run)")
    print("| | p50 | p99 |")
    print("|---|---:|---:|")
    for label, values in (("without the webhook", without), ("with the webhook", with_webhook)):
        print(
            f"| {label} | {percentile(values, 0.5) * 1000:.1f} ms "
            f"| {percentile(values, 0.99) * 1000:.1f} ms |"
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rates", default="50,100,200,400")
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--images", type=int, default=5)
    parser.add_argument("--waiting", type=int, default=20)
    parser.add_argument("--rtt", type=float, default=0.05)
    parser.add_argument(
        "--api-server",
        type=int,
        default=200,
        metavar="N",
        help="N pods created (dry run) through a real kube-apiserver with and without the "
        "webhook (0: skip; needs scripts/install-tools' kube-apiserver)",
    )
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="kmultiarch-admission-bench-"))
    with RegistryServer(work / "registry") as registry:
        with registry.client() as client:
            seeder = Seeder(client)
            warm_images = []
            for name, platform in (("bench/api", ARM64), ("bench/sidecar", ARM64)):
                seeder.push_manifest(name, oci_image(platform, name), "1.0")
                warm_images.append(f"registry.test/{name}:1.0")
            cold_images = []
            for _ in range(args.images):
                name = f"bench/cold-{uuid.uuid4().hex[:8]}"
                seeder.push_manifest(name, oci_image(ARM64, name), "1.0")
                cold_images.append(f"registry.test/{name}:1.0")
        host, port = registry.host.split(":")
        with LatencyProxy(host, int(port), args.rtt) as proxy:
            policy = write_policy(work / "policy.yaml", f"http://{proxy.host}")
            with AdmissionServer(work / "server", policy) as server:
                body = json.dumps(review(the_pod(warm_images))).encode()
                with server.client() as client:
                    assert "patch" in client.post("/mutate", content=body).json()["response"]
                print(f"warm: a pod of {len(warm_images) + 1} containers, every image cached")
                with server.client() as client:
                    one_by_one = []
                    for _ in range(300):
                        started = time.perf_counter()
                        client.post("/mutate?timeout=10s", content=body).raise_for_status()
                        one_by_one.append(time.perf_counter() - started)
                print(
                    f"one at a time on one connection (300 reviews): p50 "
                    f"{percentile(one_by_one, 0.5) * 1000:.1f} ms, p99 "
                    f"{percentile(one_by_one, 0.99) * 1000:.1f} ms"
                )
                print("| reviews/s | reviews | p50 | p99 | worst | server p50 | server p99 |")
                print("|---:|---:|---:|---:|---:|---:|---:|")
                for rate in (float(r) for r in args.rates.split(",")):
                    count = min(2000, int(rate * args.seconds))
                    before = server_buckets(server)
                    latencies = asyncio.run(open_loop(server, body, rate, count))
                    after = server_buckets(server)
                    own = {le: after[le] - before.get(le, 0) for le in after}
                    print(
                        f"| {rate:g} | {count} | {percentile(latencies, 0.5) * 1000:.1f} ms "
                        f"| {percentile(latencies, 0.99) * 1000:.1f} ms "
                        f"| {max(latencies) * 1000:.1f} ms "
                        f"| ≤ {bucket_quantile(own, 0.5) * 1000:g} ms "
                        f"| ≤ {bucket_quantile(own, 0.99) * 1000:g} ms |"
                    )
                if args.api_server:
                    through_api_server(server, policy, warm_images, args.api_server, work)
                mark = registry.mark()
                before = server_buckets(server)
                latencies = asyncio.run(cold(server, cold_images, args.waiting))
                after = server_buckets(server)
                own = {le: after[le] - before.get(le, 0) for le in after}
                requests = mark.requests()
                per_image = {
                    image: sum(
                        1
                        for r in requests
                        if r.method == "GET"
                        and image.split("/", 1)[1].split(":")[0] + "/manifests/" in r.path
                    )
                    for image in cold_images
                }
                print(
                    f"\ncold: {args.images} new images, {args.waiting} pods waiting for each, "
                    f"the registry {args.rtt * 1000:.0f} ms away"
                )
                print(
                    f"manifest GETs per image: {sorted(set(per_image.values()))}; "
                    f"all registry requests: {len(requests)}; pods waited p50 "
                    f"{percentile(latencies, 0.5) * 1000:.0f} ms, "
                    f"worst {max(latencies) * 1000:.0f} ms (the server's own p50 "
                    f"≤ {bucket_quantile(own, 0.5) * 1000:g} ms, p99 "
                    f"≤ {bucket_quantile(own, 0.99) * 1000:g} ms)"
                )
    return 0


if __name__ == "__main__":
    sys.exit(main())
