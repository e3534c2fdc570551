#!/usr/bin/env python3
"""What `kmultiarch verify` costs, cold and warm, per image (issue 24).

    python3 benchmarks/verify.py

Starts Debian's docker-registry on 127.0.0.1 and pushes three two-platform images (amd64 and
arm64, Debian's static BusyBox as the program) over the same base layer, about 17 MiB of
gzip holding 4,000 files, shaped as images are built: an application layer on top. They
differ in how the container starts: an absolute path in the top layer, a name looked up in
PATH, a shell script whose interpreter is in the base. Each is verified once cold (empty
cache) and once warm; the registry's own access log gives the requests and the bytes it sent.
Then the pipeline: ``check`` of three Deployments, one per image, without and with
``--verify warn``, cold and warm.
"""

from __future__ import annotations

import json
import random
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from support.cli import clean_env  # noqa: E402
from support.executables import File, Symlink, busybox, image, layer  # noqa: E402
from support.registry import RegistryServer  # noqa: E402
from support.seed import IndexEntry, PlatformSpec, Seeder, index  # noqa: E402

PLATFORMS = {"amd64": PlatformSpec("linux", "amd64"), "arm64": PlatformSpec("linux", "arm64")}
_LINE = re.compile(r'"(?P<method>[A-Z]+) (?P<path>\S+) [^"]*" (?P<status>\d{3}) (?P<bytes>\d+)')


def base_files() -> list[File]:
    """4,000 files of text and data, as a distribution's base layer holds (deterministic)."""
    rng = random.Random(24)
    words = [rng.randbytes(6).hex() for _ in range(2000)]
    files = []
    for number in range(4000):
        directory = ("usr/share/doc", "usr/lib/x86", "etc", "var/lib/dpkg")[number % 4]
        if number % 10 == 0:
            data = rng.randbytes(rng.randrange(1000, 20_000))  # binary, incompressible
        else:
            data = " ".join(rng.choices(words, k=rng.randrange(50, 1500))).encode()
        files.append(File(f"{directory}/file{number:04d}", data, 0o644))
    return files


def images() -> dict[str, object]:
    files = base_files()
    built = {}
    shapes = (
        ("absolute", "app/server", None, "/app/server"),
        ("path-lookup", "usr/local/bin/server", None, "server"),
        ("script", "docker-entrypoint.sh", b"#!/bin/sh\nexec server\n", "/docker-entrypoint.sh"),
    )
    for name, path, content, start in shapes:
        entries = []
        for arch, spec in PLATFORMS.items():
            base = layer(File("bin/busybox", busybox(arch)), Symlink("bin/sh", "busybox"), *files)
            top = layer(File(path, content or busybox(arch)))
            entries.append(IndexEntry(image(spec, [base, top], entrypoint=[start]), spec))
        built[name] = index(entries)
    return built


def requests_since(server: RegistryServer, offset: int) -> list[tuple[str, str, int]]:
    server.mark()
    with server.access_log.open("rb") as log:
        log.seek(offset)
        text = log.read().decode(errors="replace")
    found = []
    for line in text.splitlines():
        match = _LINE.search(line)
        if match and "/_kmultiarch/" not in match["path"]:
            found.append((match["method"], match["path"], int(match["bytes"])))
    return found


def measure(server: RegistryServer, reference: str, env: dict[str, str]) -> dict[str, object]:
    server.mark()
    offset = server.access_log.stat().st_size
    started = time.monotonic()
    completed = subprocess.run(
        [sys.executable, "-m", "kmultiarch", "verify", "-o", "json", "-q", reference],
        env=env,
        capture_output=True,
        check=False,
        cwd=ROOT,
    )
    elapsed = time.monotonic() - started
    if completed.returncode != 0:
        raise SystemExit(completed.stderr.decode())
    (result,) = json.loads(completed.stdout)
    requests = requests_since(server, offset)
    return {
        "seconds": round(elapsed, 2),
        "requests": len(requests),
        "blob requests": sum(1 for _, path, _ in requests if "/blobs/" in path),
        "bytes sent": sum(size for _, _, size in requests),
        "bytes read": sum(p["bytes"] for p in result["platforms"]),
        "statuses": [p["status"] for p in result["platforms"]],
    }


def measure_check(
    server: RegistryServer, manifest: Path, env: dict[str, str], *options: str
) -> dict[str, object]:
    """``check`` of ``manifest``: seconds, requests and bytes the registry sent."""
    server.mark()
    offset = server.access_log.stat().st_size
    started = time.monotonic()
    subprocess.run(
        [sys.executable, "-m", "kmultiarch", "check", "-q", *options, str(manifest)],
        env=env,
        capture_output=True,
        check=False,
        cwd=ROOT,
    )
    elapsed = time.monotonic() - started
    requests = requests_since(server, offset)
    return {
        "seconds": round(elapsed, 2),
        "requests": len(requests),
        "bytes sent": sum(size for _, _, size in requests),
    }


def pipeline(server: RegistryServer, names: list[str], work: Path) -> None:
    manifest = work / "deployments.yaml"
    manifest.write_text(
        "---\n".join(
            "apiVersion: apps/v1\nkind: Deployment\n"
            f"metadata: {{name: {name}}}\n"
            "spec:\n  template:\n    spec:\n      containers:\n"
            f"      - {{name: app, image: {server.host}/bench/{name}:1.0}}\n"
            for name in names
        )
    )
    for options in ((), ("--verify", "warn")):
        env = clean_env(work / ("check-verify" if options else "check"))
        cold = measure_check(server, manifest, env, *options)
        warm = measure_check(server, manifest, env, *options)
        print(f"check {' '.join(options) or '(no --verify)'}, {len(names)} images:")
        print(f"  cold {cold}")
        print(f"  warm {warm}")


def main() -> int:
    with tempfile.TemporaryDirectory() as work_dir:
        work = Path(work_dir)
        with RegistryServer(work / "registry") as server:
            built = images()
            with server.client() as client:
                seeder = Seeder(client)
                for name, manifest in built.items():
                    seeder.push_manifest(f"bench/{name}", manifest, "1.0")  # type: ignore[arg-type]
            sizes = {
                name: sum(len(b.data) for child in m.children for b in child.blobs)  # type: ignore[attr-defined]
                for name, m in built.items()
            }
            for name in built:
                env = clean_env(work / name)
                reference = f"{server.host}/bench/{name}:1.0"
                cold = measure(server, reference, env)
                warm = measure(server, reference, env)
                print(f"{name}: image {sizes[name]} bytes (two platforms)")
                print(f"  cold {cold}")
                print(f"  warm {warm}")
            pipeline(server, list(built), work)
    return 0


if __name__ == "__main__":
    sys.exit(main())
