#!/usr/bin/env python3
"""The KRM function in its container against the same function on the host: wall time of one
run (`podman run --rm -i --network=none --user=nobody IMAGE` with a ResourceList on stdin, as kpt
starts it), for each platform image scripts/build-images made, and `kmultiarch fn` itself.

    CONTAINERS_CONF=tests/support/containers.conf python3 benchmarks/images.py [--runs 9]

The ResourceList is examples/container-fn's workloads with their platforms given as overrides,
so that no run looks anything up: what is measured is starting the container, Python and
kmultiarch, and the function's work. Another machine's image runs under qemu-user.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
OVERRIDES = [
    {"image": "registry.test/multiarch-oci:1.0", "platforms": ["linux/amd64", "linux/arm64"]},
    {"image": "registry.test/single-docker-amd64:1.0", "platforms": ["linux/amd64"]},
    {"image": "registry.test/multiarch-docker:1.0", "platforms": ["linux/amd64", "linux/arm64"]},
]


def resource_list() -> bytes:
    items = [
        item
        for item in yaml.safe_load_all((ROOT / "examples/container-fn/workloads.yaml").read_text())
        if item
    ]
    config = {
        "apiVersion": "kmultiarch.dev/v1alpha1",
        "kind": "MultiArchPolicy",
        "metadata": {"name": "benchmark"},
        "spec": {"overrides": OVERRIDES},
    }
    document = {
        "apiVersion": "config.kubernetes.io/v1",
        "kind": "ResourceList",
        "items": items,
        "functionConfig": config,
    }
    return yaml.safe_dump(document).encode()


def timed(command: list[str], stdin: bytes, runs: int) -> list[float]:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        ran = subprocess.run(command, input=stdin, capture_output=True, check=False)
        times.append(time.perf_counter() - started)
        if ran.returncode != 0:
            sys.exit(f"{' '.join(command)} failed: {ran.stderr.decode(errors='replace')}")
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--image", default="localhost/kmultiarch:dev")
    args = parser.parse_args()
    stdin = resource_list()
    cases = {"host: kmultiarch fn": [sys.executable, "-m", "kmultiarch", "fn"]}
    for architecture in ("amd64", "arm64"):
        tag = f"{args.image}-{architecture}"
        if subprocess.run(["podman", "image", "exists", tag], check=False).returncode == 0:
            cases[f"podman run {tag}"] = [
                "podman", "run", "--rm", "-i", "--network=none", "--user=nobody",
                f"--platform=linux/{architecture}", tag,
            ]  # fmt: skip
    if len(cases) == 1:
        cases[f"podman run {args.image}"] = [
            "podman", "run", "--rm", "-i", "--network=none", "--user=nobody", args.image,
        ]  # fmt: skip
    print(f"{'case':52} {'median':>8} {'min':>8}   ({args.runs} runs)")
    for name, command in cases.items():
        times = timed(command, stdin, args.runs)
        print(f"{name:52} {statistics.median(times):7.2f}s {min(times):7.2f}s")


if __name__ == "__main__":
    main()
