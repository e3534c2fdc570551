#!/usr/bin/env python3
"""kmultiarch benchmarks: one command, real registry, numbers side by side.

    python3 benchmarks/run.py [--rtt 0.05] [--repeat 3] [--skip-large]

Starts Debian's docker-registry on 127.0.0.1 behind a proxy adding --rtt seconds per round trip,
seeds 100 images (half multi-arch OCI indexes with attestations, half single-platform Docker
manifests), generates rendered streams, and times in the same run:
- cold (30 images / 60 Deployments through the proxy): the seed's one-liner (`docker manifest
  inspect` per unique image in sequence), `skopeo inspect --raw` per image, a naive sequential
  Python resolver, and kmultiarch with a cold cache, a warm cache, and after the tag TTL;
- warm (2,000 resources / 100 images, 0.75 MB): kmultiarch vs a ruamel.yaml round trip;
- start-up: `kmultiarch --version` vs `python -c pass`;
- 20,000 resources (7.5 MB): kmultiarch warm time and peak memory;
- the real-world corpus (tests/corpus/corpus, or --corpus DIR): kmultiarch warm against a
  ruamel.yaml round trip;
- a `kubectl get -o json` List of 1,000 and 5,000 Deployments against the same Deployments as a
  block YAML stream (issue 28: JSON and flow edits were quadratic; `--json-list-only` runs
  this case alone, without a registry).
Prints medians, ratios and the registry requests kmultiarch made (from the registry's own log),
checks the targets of issues 6, 17 and 22, and writes benchmarks/results/latest.json.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "benchmarks"))

from streams import deployments_only, mixed_stream  # noqa: E402
from support.corpus import corpus_dir  # noqa: E402
from support.latency_proxy import LatencyProxy  # noqa: E402
from support.registry import RegistryServer  # noqa: E402
from support.seed import (  # noqa: E402
    IndexEntry,
    PlatformSpec,
    Seeder,
    attestation_entry,
    docker_image,
    index,
    oci_image,
)

AMD64 = PlatformSpec("linux", "amd64")
ARM64 = PlatformSpec("linux", "arm64", "v8")
IMAGES = 100
COLD_IMAGES = 30


def kmultiarch_command() -> str:
    """The ``kmultiarch`` console script installed beside this interpreter, as pip puts it in a
    virtual environment; else the one on PATH. (A version manager's shim on PATH, pyenv's a
    bash script, would add its own start-up: 0.05 s of CPU and 0.08 s here.)"""
    beside = Path(sysconfig.get_path("scripts")) / "kmultiarch"
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    return shutil.which("kmultiarch") or "kmultiarch"


KMULTIARCH = kmultiarch_command()
#: CPU seconds (user + system) of each command measured, by the command's text: the machine is
#: shared, and CPU time is what a loaded machine changes least.
CPU_SECONDS: dict[str, list[float]] = {}


def measured(
    command: Sequence[str], *, env: dict[str, str] | None = None, stdin: Path | None = None
) -> tuple[float, int, str]:
    """Run a command; return (wall seconds, peak RSS in KiB, stderr). Its CPU time goes to
    CPU_SECONDS."""
    stdin_file = open(stdin, "rb") if stdin else subprocess.DEVNULL  # noqa: SIM115
    started = time.perf_counter()
    process = subprocess.Popen(
        command, stdin=stdin_file, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env
    )
    _, status, usage = os.wait4(process.pid, 0)
    elapsed = time.perf_counter() - started
    CPU_SECONDS.setdefault(" ".join(command), []).append(usage.ru_utime + usage.ru_stime)
    stderr = process.stderr.read().decode() if process.stderr else ""
    process.returncode = os.waitstatus_to_exitcode(status)
    if stdin:
        stdin_file.close()  # type: ignore[union-attr]
    if process.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} exited {process.returncode}: {stderr[-2000:]}")
    return elapsed, usage.ru_maxrss, stderr


def median_of(repeat: int, run: Callable[[], float]) -> float:
    return statistics.median(run() for _ in range(repeat))


def cpu_median(command: Sequence[str], repeat: int) -> float:
    """The median CPU seconds of the last ``repeat`` runs of ``command``."""
    return statistics.median(CPU_SECONDS[" ".join(command)][-repeat:])


def seed(server: RegistryServer) -> list[str]:
    """100 repositories; even ones multi-arch indexes with attestations, odd single-platform."""
    repositories = []
    with server.client() as client:
        seeder = Seeder(client)
        for number in range(IMAGES):
            repository = f"bench/img-{number:02d}"
            label = f"bench-{number}"
            if number % 2 == 0:
                images = [(oci_image(p, label), p) for p in (AMD64, ARM64)]
                manifest = index(
                    [IndexEntry(i, p) for i, p in images]
                    + [attestation_entry(i) for i, _ in images]
                )
            else:
                manifest = docker_image(AMD64, label)
            seeder.push_manifest(repository, manifest, "1.0")
            repositories.append(repository)
    return repositories


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rtt", type=float, default=0.05)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--skip-large", action="store_true", help="skip the 20,000 resources run")
    parser.add_argument(
        "--corpus",
        type=Path,
        help="a corpus folder instead of the repository's tests/corpus/corpus",
    )
    parser.add_argument(
        "--json-list-only", action="store_true", help="only the JSON List case (no registry)"
    )
    args = parser.parse_args()
    if args.json_list_only:
        work = Path(tempfile.mkdtemp(prefix="kmultiarch-bench-"))
        try:
            figures = json_list_benchmark(work, dict(os.environ), args)
        finally:
            shutil.rmtree(work, ignore_errors=True)
        report_json_list(figures)
        return 0
    for tool in ("docker-registry", "docker", "skopeo", "kmultiarch"):
        if shutil.which(tool) is None:
            print(
                f"benchmarks: {tool} is not installed (scripts/install-tools, pip install -e .)",
                file=sys.stderr,
            )
            return 2

    work = Path(tempfile.mkdtemp(prefix="kmultiarch-bench-"))
    results: dict[str, object] = {"rtt": args.rtt, "repeat": args.repeat}
    # Measure kmultiarch as pip installs it: with compiled bytecode. (An editable install run
    # with PYTHONDONTWRITEBYTECODE=1 recompiles every module on every run, ~0.1 s.)
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("KMULTIARCH_", "DOCKER_")) and k != "PYTHONDONTWRITEBYTECODE"
    }
    subprocess.run(
        [sys.executable, "-m", "compileall", "-q", str(ROOT / "kmultiarch")], check=True, env=env
    )
    env.update(HOME=str(work / "home"), NO_PROXY="*", DOCKER_CONFIG=str(work / "docker"))
    try:
        with RegistryServer(work / "registry") as server:
            print(f"seeding {IMAGES} images ...", file=sys.stderr)
            repositories = seed(server)
            host, port = server.host.split(":")
            with LatencyProxy(host, int(port), args.rtt) as proxy:
                cold = cold_benchmarks(server, proxy, repositories, work, env, args)
                results["cold"] = cold
            results["warm"] = warm_benchmarks(server, repositories, work, env, args)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    results["startup"] = startup_benchmark(env, args)
    results["imports"] = import_benchmark(env)
    report(results)
    out = ROOT / "benchmarks" / "results"
    out.mkdir(exist_ok=True)
    (out / "latest.json").write_text(json.dumps(results, indent=2) + "\n")
    return 0


def cold_benchmarks(
    server: RegistryServer,
    proxy: LatencyProxy,
    repositories: list[str],
    work: Path,
    env: dict[str, str],
    args: argparse.Namespace,
) -> dict[str, object]:
    images = [f"{proxy.host}/{repository}:1.0" for repository in repositories[:COLD_IMAGES]]
    stream = work / "cold.yaml"
    stream.write_text(deployments_only(2 * COLD_IMAGES, images))
    timings: dict[str, float] = {}
    print("cold: docker manifest inspect ...", file=sys.stderr)
    loop = " ; ".join(f"docker manifest inspect --insecure {image} >/dev/null" for image in images)
    timings["docker manifest inspect (sequential)"] = median_of(
        args.repeat, lambda: measured(["sh", "-ec", loop], env=env)[0]
    )
    print("cold: skopeo ...", file=sys.stderr)
    loop = " ; ".join(
        f"skopeo inspect --raw --tls-verify=false docker://{image} >/dev/null" for image in images
    )
    timings["skopeo inspect --raw (sequential)"] = median_of(
        args.repeat, lambda: measured(["sh", "-ec", loop], env=env)[0]
    )
    print("cold: naive python ...", file=sys.stderr)
    naive = [sys.executable, str(ROOT / "benchmarks" / "naive_resolver.py"), *images]
    timings["naive sequential Python"] = median_of(args.repeat, lambda: measured(naive, env=env)[0])

    requests: dict[str, dict[str, int]] = {}

    def kmultiarch(label: str, cache: Path, *extra: str) -> float:
        mark = server.mark()
        elapsed, _, _ = measured(
            [KMULTIARCH, "mutate", "--cache-dir", str(cache), *extra, str(stream)], env=env
        )
        counted: dict[str, int] = {}
        for method, path, _status in mark.requests():
            kind = (
                "token"
                if "token" in path
                else (
                    "blob"
                    if "/blobs/" in path
                    else "manifest"
                    if "/manifests/" in path
                    else "other"
                )
            )
            counted[f"{method} {kind}"] = counted.get(f"{method} {kind}", 0) + 1
        requests[label] = counted
        return elapsed

    print("cold: kmultiarch ...", file=sys.stderr)
    cold_runs, warm_runs, expired_runs = [], [], []
    for attempt in range(args.repeat):
        cache = work / f"cache-{attempt}"
        cold_runs.append(kmultiarch("cold cache", cache))
        warm_runs.append(kmultiarch("warm cache", cache))
        expired_runs.append(kmultiarch("after TTL", cache, "--cache-ttl", "0"))
    timings["kmultiarch, cold cache"] = statistics.median(cold_runs)
    timings["kmultiarch, warm cache"] = statistics.median(warm_runs)
    timings["kmultiarch, after tag TTL"] = statistics.median(expired_runs)
    return {
        "images": len(images),
        "resources": 2 * len(images),
        "timings": timings,
        "requests": requests,
    }


def warm_benchmarks(
    server: RegistryServer,
    repositories: list[str],
    work: Path,
    env: dict[str, str],
    args: argparse.Namespace,
) -> dict[str, object]:
    images = [f"{server.host}/{repository}:1.0" for repository in repositories]
    cache = work / "warm-cache"
    results: dict[str, object] = {}
    sizes = [2000] if args.skip_large else [2000, 20000]
    for resources in sizes:
        stream = work / f"stream-{resources}.yaml"
        stream.write_text(mixed_stream(resources, images))
        command = [KMULTIARCH, "mutate", "--cache-dir", str(cache), str(stream)]
        measured(command, env=env)
        print(f"warm: {resources} resources ...", file=sys.stderr)
        runs = [measured(command, env=env) for _ in range(args.repeat)]
        entry: dict[str, float] = {
            "bytes": stream.stat().st_size,
            "kmultiarch warm": statistics.median(r[0] for r in runs),
            "kmultiarch warm CPU": cpu_median(command, args.repeat),
            "kmultiarch peak RSS MB": max(r[1] for r in runs) / 1024,
        }
        if resources == 2000:
            ruamel = [
                sys.executable,
                "-c",
                (
                    "import sys, io\nfrom ruamel.yaml import YAML\n"
                    "y = YAML(); y.preserve_quotes = True\n"
                    "docs = list(y.load_all(open(sys.argv[1])))\n"
                    "y.dump_all(docs, io.StringIO())\n"
                ),
                str(stream),
            ]
            entry["ruamel round trip"] = median_of(
                args.repeat, lambda command=ruamel: measured(command, env=env)[0]
            )
            entry["ruamel round trip CPU"] = cpu_median(ruamel, args.repeat)
            libyaml = [
                sys.executable,
                "-c",
                (
                    "import sys, yaml\n"
                    "list(yaml.compose_all(open(sys.argv[1]).read(), Loader=yaml.CSafeLoader))\n"
                ),
                str(stream),
            ]
            entry["libyaml compose"] = median_of(
                args.repeat, lambda command=libyaml: measured(command, env=env)[0]
            )
        results[str(resources)] = entry
    results["corpus"] = corpus_benchmark(work, env, args)
    results["json-list"] = json_list_benchmark(work, env, args)
    return results


def json_list(count: int) -> str:
    """``kubectl get deployments -o json``: a List of ``count`` Deployments, 4-space indent."""
    items = [
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": f"app-{number}", "namespace": "default"},
            "spec": {
                "replicas": 2,
                "selector": {"matchLabels": {"app": f"app-{number}"}},
                "template": {
                    "metadata": {"labels": {"app": f"app-{number}"}},
                    "spec": {
                        "containers": [
                            {
                                "name": "app",
                                "image": f"bench.example/img-{number % 2}:1.0",
                                "ports": [{"containerPort": 8080}],
                            }
                        ]
                    },
                },
            },
        }
        for number in range(count)
    ]
    document = {"apiVersion": "v1", "kind": "List", "items": items, "metadata": {}}
    return json.dumps(document, indent=4) + "\n"


def json_list_benchmark(
    work: Path, env: dict[str, str], args: argparse.Namespace
) -> dict[str, dict[str, float]]:
    """The same Deployments as a JSON List and as block YAML (one document each), every one
    changed (half arm64-tolerated, half amd64-pinned), images declared by overrides so that no
    registry is asked: time and peak memory of ``mutate``."""
    import yaml

    policy = work / "json-list-policy.yaml"
    policy.write_text(
        "apiVersion: kmultiarch.dev/v1alpha1\nkind: MultiArchPolicy\nspec:\n  overrides:\n"
        "  - {image: 'bench.example/img-0*', platforms: [linux/amd64, linux/arm64]}\n"
        "  - {image: 'bench.example/img-1*', platforms: [linux/amd64]}\n"
    )
    figures: dict[str, dict[str, float]] = {}
    for count in (1000, 5000):
        as_json = work / f"list-{count}.json"
        as_json.write_text(json_list(count))
        as_yaml = work / f"deployments-{count}.yaml"
        items = json.loads(as_json.read_text())["items"]
        as_yaml.write_text(yaml.safe_dump_all(items, sort_keys=False))
        entry: dict[str, float] = {"bytes": as_json.stat().st_size}
        for label, path in (("json", as_json), ("yaml", as_yaml)):
            command = [KMULTIARCH, "mutate", "--no-cache", "--config", str(policy), str(path)]
            print(f"json list: {count} Deployments as {label} ...", file=sys.stderr)
            runs = [measured(command, env=env) for _ in range(args.repeat)]
            entry[f"{label} s"] = statistics.median(r[0] for r in runs)
            entry[f"{label} peak RSS MB"] = max(r[1] for r in runs) / 1024
        figures[str(count)] = entry
    return figures


def report_json_list(figures: dict[str, dict[str, float]]) -> None:
    print("\n### A JSON List against block YAML (every Deployment changed)\n")
    print("| Deployments | JSON size | JSON List | peak RSS | block YAML | peak RSS | ratio |")
    print("|---:|---:|---:|---:|---:|---:|---:|")
    for count, entry in figures.items():
        print(
            f"| {int(count):,} | {entry['bytes'] / 1e6:.1f} MB | {entry['json s']:.2f} s "
            f"| {entry['json peak RSS MB']:.0f} MB | {entry['yaml s']:.2f} s "
            f"| {entry['yaml peak RSS MB']:.0f} MB | {entry['json s'] / entry['yaml s']:.2f}x |"
        )
    if "1000" in figures and "5000" in figures:
        growth = figures["5000"]["json s"] / figures["1000"]["json s"]
        print(f"\n5,000 against 1,000 items: {growth:.1f}x the time for 5x the size")


def corpus_benchmark(work: Path, env: dict[str, str], args: argparse.Namespace) -> dict[str, float]:
    """The real-world corpus (tests/corpus/corpus, or --corpus: its 41 rendered charts and
    manifests without duplicate keys) in one warm run: every image declared multi-arch by an
    override, so no lookup is made."""
    directory = args.corpus or corpus_dir()
    files = [str(path) for path in sorted(directory.glob("*.yaml")) if "duplicate" not in path.name]
    policy = work / "corpus-policy.yaml"
    policy.write_text(
        "apiVersion: kmultiarch.dev/v1alpha1\nkind: MultiArchPolicy\nspec:\n  overrides:\n"
        "  - {image: '*', platforms: [linux/amd64, linux/arm64]}\n"
    )
    command = [KMULTIARCH, "mutate", "--no-cache", "--config", str(policy), *files]
    measured(command, env=env)
    print(f"warm: corpus ({len(files)} files) ...", file=sys.stderr)
    runs = [measured(command, env=env) for _ in range(args.repeat)]
    # The same files through a ruamel.yaml round trip, one process, file by file (a file ruamel
    # refuses costs what it took to refuse it).
    ruamel = [
        sys.executable,
        "-c",
        (
            "import sys, io\nfrom ruamel.yaml import YAML\n"
            "for name in sys.argv[1:]:\n"
            "    y = YAML(); y.preserve_quotes = True\n"
            "    try:\n"
            "        y.dump_all(list(y.load_all(open(name))), io.StringIO())\n"
            "    except Exception:\n"
            "        pass\n"
        ),
        *files,
    ]
    return {
        "files": len(files),
        "bytes": sum(Path(name).stat().st_size for name in files),
        "kmultiarch warm": statistics.median(r[0] for r in runs),
        "kmultiarch warm CPU": cpu_median(command, args.repeat),
        "kmultiarch peak RSS MB": max(r[1] for r in runs) / 1024,
        "ruamel round trip": median_of(
            args.repeat, lambda command=ruamel: measured(command, env=env)[0]
        ),
        "ruamel round trip CPU": cpu_median(ruamel, args.repeat),
    }


def startup_benchmark(env: dict[str, str], args: argparse.Namespace) -> dict[str, float]:
    runs = max(10, args.repeat * 5)
    python = median_of(runs, lambda: measured([sys.executable, "-c", "pass"], env=env)[0])
    version = median_of(runs, lambda: measured([KMULTIARCH, "--version"], env=env)[0])
    return {"python -c pass": python, "kmultiarch --version": version}


def import_benchmark(env: dict[str, str]) -> dict[str, float]:
    """What a warm ``mutate`` imports (the demo, answered by its lock, offline), under
    ``python -X importtime``: modules beyond a bare interpreter, kmultiarch's own among them,
    and their cumulative import time (the top-level imports' sums; click's apart)."""

    def imports(arguments: list[str]) -> list[tuple[int, int, str]]:
        completed = subprocess.run(
            [sys.executable, "-X", "importtime", *arguments],
            capture_output=True,
            text=True,
            env=env,
            check=False,
        )
        rows = []
        for line in completed.stderr.splitlines()[1:]:
            if line.startswith("import time:"):
                _, cumulative, name = line.split("|")
                depth = (len(name) - len(name.lstrip())) // 2
                rows.append((depth, int(cumulative), name.strip()))
        return rows

    demo = ROOT / "examples" / "demo"
    bare = {name for _, _, name in imports(["-c", "pass"])}
    policy, lock, manifests = demo / "policy.yaml", demo / "kmultiarch.lock", demo / "manifests"
    mutate = ["-m", "kmultiarch", "mutate", "--config", str(policy), "--lock", str(lock)]
    rows = imports([*mutate, "--offline", str(manifests)])
    beyond = [row for row in rows if row[2] not in bare]
    top = min((depth for depth, _, _ in beyond), default=0)
    return {
        "modules": len({name for _, _, name in beyond}),
        "kmultiarch modules": len({name for _, _, name in beyond if name.startswith("kmultiarch")}),
        "import seconds": sum(us for depth, us, _ in beyond if depth == top) / 1e6,
        "click seconds": sum(us for _, us, name in beyond if name == "click") / 1e6,
    }


def report(results: dict[str, object]) -> None:
    rtt = float(results["rtt"])  # type: ignore[arg-type]
    cold = results["cold"]
    assert isinstance(cold, dict)
    timings: dict[str, float] = cold["timings"]
    baseline = timings["docker manifest inspect (sequential)"]
    print(
        f"\n### Cold: {cold['images']} images, {cold['resources']} Deployments, "
        f"{rtt * 1000:.0f} ms RTT\n"
    )
    print("| tool | median | vs docker manifest inspect |")
    print("|---|---:|---:|")
    for name, seconds in timings.items():
        print(f"| {name} | {seconds:.2f} s | {seconds / baseline:.3f}x |")
    warm_time = timings["kmultiarch, warm cache"]
    above = (timings["kmultiarch, cold cache"] - warm_time) / rtt
    print(f"\ncold minus warm: {above:.1f} round trips")
    print("\nregistry requests made by kmultiarch (from the registry's access log):\n")
    for label, counted in cold["requests"].items():
        described = ", ".join(f"{n} {kind}" for kind, n in sorted(counted.items())) or "none"
        print(f"- {label}: {described}")
    warm = results["warm"]
    assert isinstance(warm, dict)
    print("\n### Warm cache\n")
    print("| stream | size | kmultiarch | peak RSS | ruamel round trip | ratio | libyaml compose |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for resources, entry in warm.items():
        if resources == "json-list":
            continue
        if resources == "corpus":
            print(
                f"| real-world corpus ({entry['files']} files) | {entry['bytes'] / 1e6:.2f} MB | "
                f"{entry['kmultiarch warm']:.2f} s | {entry['kmultiarch peak RSS MB']:.0f} MB "
                f"| {entry['ruamel round trip']:.2f} s "
                f"| {entry['kmultiarch warm'] / entry['ruamel round trip']:.3f}x | - |"
            )
            continue
        ruamel = entry.get("ruamel round trip")
        ratio = f"{entry['kmultiarch warm'] / ruamel:.3f}x" if ruamel else "-"
        libyaml = entry.get("libyaml compose")
        print(
            f"| {int(resources):,} resources | {entry['bytes'] / 1e6:.2f} MB | "
            f"{entry['kmultiarch warm']:.2f} s | {entry['kmultiarch peak RSS MB']:.0f} MB | "
            f"{f'{ruamel:.2f} s' if ruamel else '-'} | {ratio} | "
            f"{f'{libyaml:.2f} s' if libyaml else '-'} |"
        )
    print(f"\nkmultiarch run as `{KMULTIARCH}`. CPU seconds (user + system), medians:\n")
    for resources, entry in warm.items():
        if "kmultiarch warm CPU" in entry and "ruamel round trip CPU" in entry:
            cpu, ruamel_cpu = entry["kmultiarch warm CPU"], entry["ruamel round trip CPU"]
            name = "the corpus" if resources == "corpus" else f"{int(resources):,} resources"
            print(
                f"- {name}: kmultiarch {cpu:.3f} s, ruamel round trip {ruamel_cpu:.2f} s: "
                f"{cpu / ruamel_cpu:.3f}x"
            )
    if "json-list" in warm:
        report_json_list(warm["json-list"])
    startup = results["startup"]
    assert isinstance(startup, dict)
    overhead = startup["kmultiarch --version"] - startup["python -c pass"]
    print(
        f"\n### Start-up\n\n`kmultiarch --version` {startup['kmultiarch --version']:.3f} s, "
        f"`python -c pass` {startup['python -c pass']:.3f} s: +{overhead:.3f} s\n"
    )
    imported = results.get("imports")
    if isinstance(imported, dict):
        print(
            f"### Imports of a warm mutate\n\n{imported['modules']:.0f} modules beyond the "
            f"interpreter ({imported['kmultiarch modules']:.0f} of kmultiarch's), "
            f"{imported['import seconds']:.3f} s under -X importtime, click "
            f"{imported['click seconds']:.3f} s of it\n"
        )
    targets = [
        ("cold <= 0.03x the one-liner", timings["kmultiarch, cold cache"] / baseline <= 0.03),
        ("cold <= 6 round trips above warm", above <= 6),
        (
            "warm 2,000 <= 0.05x ruamel round trip",
            warm["2000"]["kmultiarch warm"] / warm["2000"]["ruamel round trip"] <= 0.05,
        ),
        ("start-up within 0.15 s of python -c pass", overhead <= 0.15),
    ]
    if "20000" in warm:
        targets.append(("20,000 resources warm < 3 s", warm["20000"]["kmultiarch warm"] < 3))
        targets.append(
            ("20,000 resources peak < 600 MB", warm["20000"]["kmultiarch peak RSS MB"] < 600)
        )
    if "corpus" in warm:
        corpus = warm["corpus"]
        targets.append(("corpus warm < 0.6 s", corpus["kmultiarch warm"] < 0.6))
        targets.append(
            (
                "corpus warm <= 0.015x ruamel round trip (issue 22)",
                corpus["kmultiarch warm"] / corpus["ruamel round trip"] <= 0.015,
            )
        )
        targets.append(("corpus peak < 80 MB (issue 22)", corpus["kmultiarch peak RSS MB"] < 80))
    if "json-list" in warm:
        listed = warm["json-list"]
        targets.append(
            (
                "JSON List of 5,000 within 6x the time of 1,000: linear (issue 28)",
                listed["5000"]["json s"] <= 6 * listed["1000"]["json s"],
            )
        )
        targets.append(
            (
                "JSON List of 5,000 within 3x the same Deployments as block YAML (issue 28)",
                listed["5000"]["json s"] <= 3 * listed["5000"]["yaml s"],
            )
        )
    print("### Targets (issues 6, 17, 22 and 28)\n")
    for name, met in targets:
        print(f"- [{'x' if met else ' '}] {name}")


if __name__ == "__main__":
    sys.exit(main())
