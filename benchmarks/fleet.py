#!/usr/bin/env python3
"""A CI fleet: N runners (processes with their own empty disk caches) render the same stream
at once, with and without the shared Redis cache level.

    python3 benchmarks/fleet.py [--runners 16] [--images 20]

Starts Debian's docker-registry and redis-server on 127.0.0.1, seeds --images single-platform
images, renders a stream of one Deployment per image with `kmultiarch mutate` in --runners
processes started together, and prints the wall time and the registry requests (from the
registry's own access log) for each set-up.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from support.cli import clean_env  # noqa: E402
from support.redis_server import RedisServer  # noqa: E402
from support.registry import RegistryServer  # noqa: E402
from support.seed import PlatformSpec, Seeder, oci_image  # noqa: E402


def run_fleet(
    runners: int, stream: Path, work: Path, cache_url: str | None, label: str
) -> tuple[float, int]:
    processes = []
    started = time.monotonic()
    for runner in range(runners):
        extra = {"KMULTIARCH_CACHE_DIR": str(work / label / f"runner-{runner}")}
        if cache_url:
            extra["KMULTIARCH_CACHE_URL"] = cache_url
        env = clean_env(work / label, extra)
        processes.append(
            subprocess.Popen(
                [sys.executable, "-m", "kmultiarch", "mutate", "-q", str(stream)],
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                cwd=ROOT,
            )
        )
    failures = [p for p in processes if p.wait(timeout=300) != 0]
    if failures:
        raise SystemExit(f"{len(failures)} runners failed: {failures[0].stderr.read().decode()}")
    return time.monotonic() - started, runners


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runners", type=int, default=16)
    parser.add_argument("--images", type=int, default=20)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="kmultiarch-fleet-"))
    with RegistryServer(work / "registry") as registry:
        with registry.client() as client:
            seeder = Seeder(client)
            names = [f"fleet/app-{index:02d}" for index in range(args.images)]
            for name in names:
                seeder.push_manifest(name, oci_image(PlatformSpec("linux", "amd64"), name), "1.0")
        stream = work / "stream.yaml"
        stream.write_text(
            "".join(
                f"---\napiVersion: v1\nkind: Pod\nmetadata: {{name: p{index}}}\nspec:\n"
                f"  containers:\n  - name: c\n    image: {registry.host}/{name}:1.0\n"
                for index, name in enumerate(names)
            )
        )
        print(
            f"| set-up ({args.runners} runners, {args.images} images) | wall time | "
            "manifest GETs | all registry requests |"
        )
        print("|---|---:|---:|---:|")
        for label in ("disk caches only", "disk caches + shared Redis"):
            with RedisServer(work / f"redis-{label[:4]}") as redis:
                url = redis.url if "Redis" in label else None
                mark = registry.mark()
                elapsed, _ = run_fleet(args.runners, stream, work, url, label.replace(" ", "-"))
                requests = mark.requests()
                gets = sum(1 for r in requests if r.method == "GET" and "/manifests/" in r.path)
                print(f"| {label} | {elapsed:.2f} s | {gets} | {len(requests)} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
