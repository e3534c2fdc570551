"""The naive baseline: resolve images one after the other with plain httpx, no cache, no
concurrency (what a first Python implementation would do). Prints one line per image."""

from __future__ import annotations

import json
import sys

import httpx

ACCEPT = ", ".join(
    [
        "application/vnd.oci.image.index.v1+json",
        "application/vnd.docker.distribution.manifest.list.v2+json",
        "application/vnd.oci.image.manifest.v1+json",
        "application/vnd.docker.distribution.manifest.v2+json",
    ]
)


def platforms(client: httpx.Client, image: str) -> list[str]:
    host, _, rest = image.partition("/")
    repository, _, tag = rest.rpartition(":")
    base = f"http://{host}/v2/{repository}"
    manifest = client.get(f"{base}/manifests/{tag}", headers={"Accept": ACCEPT}).json()
    if "manifests" in manifest:
        return sorted(
            f"{m['platform']['os']}/{m['platform']['architecture']}"
            for m in manifest["manifests"]
            if m.get("platform", {}).get("architecture") != "unknown"
        )
    config = client.get(f"{base}/blobs/{manifest['config']['digest']}").json()
    return [f"{config['os']}/{config['architecture']}"]


def main() -> None:
    with httpx.Client() as client:
        for image in sys.argv[1:]:
            print(image, json.dumps(platforms(client, image)))


if __name__ == "__main__":
    main()
