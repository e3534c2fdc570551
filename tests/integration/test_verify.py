"""``kmultiarch verify`` against the real registry (issue 24): images built here, with real
BusyBox executables from Debian's packages for amd64, arm64 and armhf and hand-made ELF and
PE headers for other machines, pushed with the Seeder; the bytes read counted from the
registry's own access log."""

from __future__ import annotations

import gzip
import os
import re
import struct
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
from support import SeededRegistry
from support.cli import Completed, clean_env, run_kmultiarch
from support.executables import (
    AMD64,
    ARM64,
    ARM_V7,
    DOCKER_GZIP,
    EM_386,
    EM_PPC64,
    EM_RISCV,
    EM_S390,
    PE_AMD64,
    File,
    Hardlink,
    Layer,
    Symlink,
    arm_elf,
    busybox,
    busybox_layer,
    compressed_layer,
    elf,
    honest_image,
    image,
    layer,
    lying_image,
    opaque,
    pe,
    script,
    whiteout,
)
from support.seed import (
    IndexEntry,
    Manifest,
    PlatformSpec,
    Seeder,
    index,
)

ARM_V6 = PlatformSpec("linux", "arm", "v6")
WINDOWS_AMD64 = PlatformSpec("windows", "amd64", os_version="10.0.17763.6659")
WINDOWS_ARM64 = PlatformSpec("windows", "arm64", os_version="10.0.26100.1")
MiB = 1024 * 1024


def single(platform: PlatformSpec, layers: list[Layer], **config: object) -> Manifest:
    return image(platform, layers, label=str(config.pop("label", "")), **config)  # type: ignore[arg-type]


def multi(*entries: tuple[PlatformSpec, Manifest]) -> Manifest:
    return index([IndexEntry(manifest, platform) for platform, manifest in entries])


def _gzip_bomb(expanded: int) -> Layer:
    """A gzip layer whose one file is ``expanded`` zero bytes, in members of 64 MiB of zeros
    (about 64 KiB each): kilobytes a member, gigabytes decompressed."""
    chunk = 64 * MiB
    header = _tar_header("zeros", expanded)
    member = gzip.compress(bytes(chunk), compresslevel=9, mtime=0)
    data = gzip.compress(header, mtime=0) + member * (expanded // chunk)
    from support.seed import Blob

    return Layer(Blob("application/vnd.oci.image.layer.v1.tar+gzip", data), "sha256:" + "0" * 64)


def _tar_header(name: str, size: int) -> bytes:
    block = bytearray(512)
    block[0 : len(name)] = name.encode()
    block[100:108] = b"0000644\0"
    block[108:116] = b"0000000\0"
    block[116:124] = b"0000000\0"
    block[124:136] = f"{size:011o}\0".encode()
    block[136:148] = b"00000000000\0"
    block[156:157] = b"0"
    block[257:263] = b"ustar\0"
    block[263:265] = b"00"
    block[148:156] = b" " * 8
    block[148:156] = f"{sum(block):06o}\0 ".encode()
    return bytes(block)


def _random(size: int, seed: int) -> bytes:
    """Incompressible bytes, deterministic."""
    import random

    return random.Random(seed).randbytes(size)


def _catalogue() -> dict[str, Manifest]:
    amd64, arm64 = busybox_layer("amd64"), busybox_layer("arm64")
    shared_script = layer(File("entrypoint.sh", script("#!/bin/sh")))
    big = _random(12 * MiB, 1)
    bigger = _random(40 * MiB, 2)
    return {
        "honest": honest_image(AMD64, ARM64, ARM_V7),
        "liar": lying_image(),
        "symlink-chain": single(
            ARM64,
            [
                layer(File("bin/busybox", busybox("arm64"))),
                layer(Symlink("usr/local/bin/tool", "/opt/tools/current")),
                layer(Symlink("opt/tools/current", "../../bin/busybox")),
            ],
            entrypoint=["tool"],
            env=["PATH=/usr/local/bin:/usr/bin:/bin"],
        ),
        "replaced": single(
            ARM64,
            [
                layer(File("app/server", busybox("arm64"))),
                layer(File("app/server", busybox("amd64"))),
            ],
            entrypoint=["/app/server"],
        ),
        "replaced-honest": single(
            ARM64,
            [
                layer(File("app/server", busybox("amd64"))),
                layer(File("app/server", busybox("arm64"))),
            ],
            entrypoint=["/app/server"],
        ),
        "whiteout": single(
            ARM64,
            [layer(File("app/server", busybox("arm64"))), layer(whiteout("app/server"))],
            entrypoint=["/app/server"],
        ),
        "opaque": single(
            ARM64,
            [
                layer(File("app/server", busybox("arm64"))),
                layer(opaque("app"), File("app/README", b"moved\n", 0o644)),
            ],
            entrypoint=["/app/server"],
        ),
        "hardlink": single(
            ARM64,
            [layer(File("bin/busybox", busybox("arm64")), Hardlink("bin/server", "bin/busybox"))],
            entrypoint=["/bin/server"],
        ),
        "script-liar": single(
            ARM64,
            [amd64, layer(File("entrypoint.sh", script("#!/bin/sh -e")))],
            entrypoint=["/entrypoint.sh"],
        ),
        "env-script": single(
            ARM64,
            [arm64, layer(File("app/run", script("#!/usr/bin/env sh")))],
            entrypoint=["./run"],
            workdir="/app",
        ),
        "zstd": single(
            ARM64,
            [busybox_layer("arm64", compression="zstd")],
            entrypoint=["/bin/busybox"],
            label="zstd",
        ),
        "uncompressed": single(
            ARM64,
            [busybox_layer("arm64", compression="none")],
            entrypoint=["/bin/busybox"],
            label="uncompressed",
        ),
        "no-entrypoint": single(ARM64, [arm64], label="no-entrypoint"),
        "not-in-path": single(ARM64, [arm64], entrypoint=["nginx"]),
        "shared-layer": multi(
            (AMD64, single(AMD64, [amd64, shared_script], entrypoint=["/entrypoint.sh"])),
            (ARM64, single(ARM64, [arm64, shared_script], entrypoint=["/entrypoint.sh"])),
        ),
        "early": single(
            ARM64,
            [layer(File("app/server", busybox("arm64")), File("app/data.bin", big, 0o644))],
            entrypoint=["/app/server"],
            label="early",
        ),
        "over-budget": single(
            ARM64,
            [layer(File("app/data.bin", bigger, 0o644), File("app/server", busybox("arm64")))],
            entrypoint=["/app/server"],
            label="over-budget",
        ),
        "gzip-bomb": single(
            ARM64, [arm64, _gzip_bomb(2048 * MiB)], entrypoint=["/bin/busybox"], label="bomb"
        ),
        "machines": multi(
            *(
                (spec, single(spec, [layer(File("app/server", data))], entrypoint=["/app/server"]))
                for spec, data in (
                    (PlatformSpec("linux", "ppc64le"), elf(EM_PPC64)),
                    (PlatformSpec("linux", "s390x"), elf(EM_S390, little=False)),
                    (PlatformSpec("linux", "riscv64"), elf(EM_RISCV)),
                    (PlatformSpec("linux", "386"), elf(EM_386, bits=32)),
                    (ARM_V7, busybox("armhf")),
                    (PlatformSpec("linux", "arm", "v5"), arm_elf(cpu_arch=4)),
                )
            )
        ),
        "machines-lying": multi(
            (
                PlatformSpec("linux", "ppc64le"),
                single(
                    PlatformSpec("linux", "ppc64le"),
                    [layer(File("app/server", elf(EM_S390, little=False)))],
                    entrypoint=["/app/server"],
                ),
            ),
            (
                ARM_V6,
                single(
                    ARM_V6,
                    [layer(File("app/server", busybox("armhf")))],
                    entrypoint=["/app/server"],
                ),
            ),
        ),
        "windows": multi(
            (
                WINDOWS_AMD64,
                single(
                    WINDOWS_AMD64,
                    [_windows_layer()],
                    entrypoint=["C:\\App\\server.exe"],
                    docker=True,
                    label="windows",
                ),
            ),
            (
                WINDOWS_ARM64,
                single(
                    WINDOWS_ARM64,
                    [_windows_layer()],
                    entrypoint=["server"],
                    workdir="C:\\app",
                    docker=True,
                    label="windows-arm64",
                ),
            ),
        ),
    }


def _windows_layer() -> Layer:
    """A Windows layer: the file system under Files/ (names in any case), registry hives
    under Hives/; the AMD64 program at C:\\app\\Server.EXE."""
    from support.executables import tar_bytes

    files = tar_bytes([File("app/Server.EXE", pe(PE_AMD64))], prefix="Files/")
    hives = tar_bytes([File("Hives/Software_Delta", b"hive", 0o644)])
    # One archive: the Files/ entries, then Hives/ (the end blocks of the first cut off).
    tar = files[: _archive_end(files)] + hives
    return compressed_layer(tar, media_type=DOCKER_GZIP)


def _archive_end(tar: bytes) -> int:
    position = 0
    while tar[position : position + 512].strip(b"\0"):
        (size,) = (int(tar[position + 124 : position + 135].strip(b"\0 ") or b"0", 8),)
        position += 512 + -(-size // 512) * 512
    return position


@dataclass
class Pushed:
    references: dict[str, str]
    digests: dict[str, str]
    manifests: dict[str, Manifest]


@pytest.fixture(scope="module")
def pushed(registry: SeededRegistry) -> Pushed:
    catalogue = _catalogue()
    references, digests = {}, {}
    with registry.client() as client:
        seeder = Seeder(client)
        for name, manifest in catalogue.items():
            seeder.push_manifest(f"verify/{name}", manifest, "1.0")
            references[name] = f"{registry.host}/verify/{name}:1.0"
            digests[name] = manifest.digest
    return Pushed(references, digests, catalogue)


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return clean_env(tmp_path)


def verify(references: list[str], env: dict[str, str], *options: str) -> Completed:
    return run_kmultiarch(["verify", "-o", "json", *options, *references], env=env)


def by_platform(entry: dict[str, object]) -> dict[str, dict[str, object]]:
    platforms = entry["platforms"]
    assert isinstance(platforms, list)
    return {p["platform"]: p for p in platforms}


# -- the verdicts ---------------------------------------------------------------------------


#: name -> {platform: (status, file, code)}
EXPECTED = {
    "honest": {
        "linux/amd64": ("verified", "/bin/busybox", None),
        "linux/arm64": ("verified", "/bin/busybox", None),
        "linux/arm/v7": ("verified", "/bin/busybox", None),
    },
    "liar": {
        "linux/amd64": ("verified", "/bin/busybox", None),
        "linux/arm64": ("mismatch", "/bin/busybox", None),
    },
    "symlink-chain": {"linux/arm64": ("verified", "/bin/busybox", None)},
    "replaced": {"linux/arm64": ("mismatch", "/app/server", None)},
    "replaced-honest": {"linux/arm64": ("verified", "/app/server", None)},
    "whiteout": {"linux/arm64": ("unverified", None, "not-found")},
    "opaque": {"linux/arm64": ("unverified", None, "not-found")},
    "hardlink": {"linux/arm64": ("verified", "/bin/server", None)},
    "script-liar": {"linux/arm64": ("mismatch", "/bin/busybox", None)},
    "env-script": {"linux/arm64": ("verified", "/bin/busybox", None)},
    "zstd": {"linux/arm64": ("verified", "/bin/busybox", None)},
    "uncompressed": {"linux/arm64": ("verified", "/bin/busybox", None)},
    "no-entrypoint": {"linux/arm64": ("unverified", None, "no-entrypoint")},
    "not-in-path": {"linux/arm64": ("unverified", None, "not-found")},
    "shared-layer": {
        "linux/amd64": ("verified", "/bin/busybox", None),
        "linux/arm64": ("verified", "/bin/busybox", None),
    },
    "early": {"linux/arm64": ("verified", "/app/server", None)},
    "machines": {
        "linux/ppc64le": ("verified", "/app/server", None),
        "linux/s390x": ("verified", "/app/server", None),
        "linux/riscv64": ("verified", "/app/server", None),
        "linux/386": ("verified", "/app/server", None),
        "linux/arm/v7": ("verified", "/app/server", None),
        "linux/arm/v5": ("verified", "/app/server", None),
    },
    "machines-lying": {
        "linux/ppc64le": ("mismatch", "/app/server", None),
        "linux/arm/v6": ("mismatch", "/app/server", None),
    },
    "windows": {
        "windows/amd64:10.0.17763.6659": ("verified", "/app/Server.EXE", None),
        "windows/arm64:10.0.26100.1": ("mismatch", "/app/Server.EXE", None),
    },
}


def test_every_image_gets_its_verdict(pushed: Pushed, env: dict[str, str]) -> None:
    names = list(EXPECTED)
    result = verify([pushed.references[name] for name in names], env)
    assert result.returncode == 1, result.stderr  # there are mismatches
    entries = {entry["image"]: entry for entry in result.json()}
    for name in names:
        entry = entries[pushed.references[name]]
        assert entry["error"] is None, (name, entry["error"])
        assert entry["digest"] == pushed.digests[name]
        found = {
            platform: (p["status"], p["file"], p.get("code"))
            for platform, p in by_platform(entry).items()
        }
        assert found == EXPECTED[name], (name, by_platform(entry))


def test_the_liar_is_named_with_its_machine(pushed: Pushed, env: dict[str, str]) -> None:
    result = run_kmultiarch(["verify", pushed.references["liar"]], env=env)
    assert result.returncode == 1
    lines = result.stdout.splitlines()
    assert lines[0] == pushed.references["liar"]
    assert re.fullmatch(r"\s+linux/amd64\s+verified\s+/bin/busybox \(x86-64\)", lines[1]), lines
    assert re.fullmatch(
        r"\s+linux/arm64\s+MISMATCH\s+/bin/busybox is built for x86-64 \(linux/amd64\); "
        r"the manifest claims linux/arm64",
        lines[2],
    ), lines
    honest = run_kmultiarch(["verify", pushed.references["honest"]], env=env)
    assert honest.returncode == 0, honest.stdout + honest.stderr


def test_paths_taken_are_reported(pushed: Pushed, env: dict[str, str]) -> None:
    names = ["symlink-chain", "script-liar", "env-script", "machines", "windows"]
    result = verify([pushed.references[name] for name in names], env)
    entries = {entry["image"]: by_platform(entry) for entry in result.json()}
    chain = entries[pushed.references["symlink-chain"]]["linux/arm64"]
    assert chain["via"] == ["/usr/local/bin/tool", "/opt/tools/current"]
    liar = entries[pushed.references["script-liar"]]["linux/arm64"]
    assert liar["via"] == ["/entrypoint.sh", "/bin/sh"]
    assert liar["machine"] == "x86-64"
    script_env = entries[pushed.references["env-script"]]["linux/arm64"]
    assert script_env["via"] == ["/app/run", "/usr/bin/env", "/bin/sh"]
    machines = entries[pushed.references["machines"]]
    assert machines["linux/arm/v7"]["machine"] == "arm (EABI5, v7)"  # from .ARM.attributes
    assert machines["linux/arm/v5"]["machine"] == "arm (EABI5, v5)"
    assert machines["linux/s390x"]["machine"] == "s390x"
    windows = entries[pushed.references["windows"]]
    assert windows["windows/amd64:10.0.17763.6659"]["machine"] == "PE AMD64"


# -- costs ----------------------------------------------------------------------------------


_LOG_LINE = re.compile(r'"(?P<method>[A-Z]+) (?P<path>\S+) [^"]*" (?P<status>\d{3}) (?P<bytes>\d+)')


class ByteLog:
    """The registry's access log from now on: requests and the bytes it sent for each."""

    def __init__(self, registry: SeededRegistry) -> None:
        self.registry = registry
        registry.mark()
        self.offset = registry.server.access_log.stat().st_size

    def entries(self) -> list[tuple[str, str, int]]:
        self.registry.mark()  # every answer so far is in the log once this returns
        with self.registry.server.access_log.open("rb") as log:
            log.seek(self.offset)
            text = log.read().decode(errors="replace")
        found = []
        for line in text.splitlines():
            match = _LOG_LINE.search(line)
            if match and "/_kmultiarch/" not in match["path"]:
                found.append((match["method"], match["path"], int(match["bytes"])))
        return found

    def blob_bytes(self) -> int:
        return sum(size for _, path, size in self.entries() if "/blobs/" in path)


def test_cold_then_warm_makes_no_request(
    pushed: Pushed, registry: SeededRegistry, env: dict[str, str]
) -> None:
    names = ["honest", "liar", "symlink-chain", "windows"]
    references = [pushed.references[name] for name in names]
    cold_log = ByteLog(registry)
    cold = verify(references, env)
    cold_requests = cold_log.entries()
    assert cold_requests, "the cold run asked the registry nothing"
    warm_log = ByteLog(registry)
    warm = verify(references, env)
    assert warm_log.entries() == []
    assert warm.returncode == cold.returncode == 1
    for before, after in zip(cold.json(), warm.json(), strict=True):
        assert [{**p, "bytes": 0} for p in before["platforms"]] == after["platforms"]
    assert "from the cache" in warm.stderr
    info = run_kmultiarch(["cache", "info"], env=env)
    # 4 images: their platform manifests (3 indexes, 1 image) and 8 claims' verdicts.
    assert ", 12 verdicts" in info.stdout, info.stdout


def test_a_layer_two_platforms_share_is_read_once(
    pushed: Pushed, registry: SeededRegistry, env: dict[str, str]
) -> None:
    manifest = pushed.manifests["shared-layer"]
    (shared,) = {blob.digest for child in manifest.children for blob in child.blobs[2:]}
    log = ByteLog(registry)
    result = verify([pushed.references["shared-layer"]], env)
    assert result.returncode == 0, result.stderr
    blob_gets = [path for method, path, _ in log.entries() if method == "GET" and "/blobs/" in path]
    assert sum(1 for path in blob_gets if shared in path) == 1, blob_gets


def test_a_file_early_in_a_large_layer_is_read_to_the_layers_end(
    pushed: Pushed, registry: SeededRegistry, env: dict[str, str]
) -> None:
    """The layer is 14 MiB compressed (12 MiB of random data after the program): a later
    entry could replace the program (the runtime extracts every entry), and only the whole
    layer can be checked against its digest, so it is read to its end, once."""
    log = ByteLog(registry)
    result = verify([pushed.references["early"]], env)
    assert result.returncode == 0, result.stderr
    (platform,) = result.json()[0]["platforms"]
    assert platform["status"] == "verified"
    layer_size = len(pushed.manifests["early"].blobs[1].data)
    assert layer_size > 12 * MiB
    assert platform["bytes"] == layer_size, platform
    assert log.blob_bytes() >= layer_size, log.entries()


def test_a_layer_over_the_budget_is_unverified_with_bounded_bytes(
    pushed: Pushed, registry: SeededRegistry, env: dict[str, str]
) -> None:
    log = ByteLog(registry)
    result = verify([pushed.references["over-budget"]], env, "--max-bytes", "4MiB")
    assert result.returncode == 0, result.stderr  # unverified is reported, not a failure
    (platform,) = result.json()[0]["platforms"]
    assert platform["status"] == "unverified"
    assert platform["code"] == "budget"
    assert "4 MiB" in platform["reason"]
    assert 4 * MiB <= platform["bytes"] <= 4 * MiB + 256 * 1024
    layer_size = len(pushed.manifests["over-budget"].blobs[1].data)
    # The registry writes ahead into the sockets' buffers (some 6 MiB here), not the layer.
    assert log.blob_bytes() < layer_size // 2, (layer_size, log.entries())
    # A budget is this run's, not the image's: the next run tries again.
    again = verify([pushed.references["over-budget"]], env)
    (platform,) = again.json()[0]["platforms"]
    assert platform["status"] == "verified"


def test_the_bounds_default_to_the_policy(
    pushed: Pushed, env: dict[str, str], tmp_path: Path
) -> None:
    """``--config POLICY``: spec.verify's bounds, unless an option says otherwise."""
    policy = tmp_path / "policy.yaml"
    policy.write_text(
        "apiVersion: kmultiarch.dev/v1alpha1\nkind: MultiArchPolicy\nmetadata: {name: p}\n"
        "spec:\n  verify: {maxBytes: 4194304}\n"
    )
    reference = pushed.references["over-budget"]
    bounded = verify([reference], env, "--config", str(policy))
    (platform,) = bounded.json()[0]["platforms"]
    assert (platform["status"], platform["code"]) == ("unverified", "budget")
    assert "4 MiB" in platform["reason"]
    option = verify([reference], env, "--config", str(policy), "--max-bytes", "64MiB")
    (platform,) = option.json()[0]["platforms"]
    assert platform["status"] == "verified"


@pytest.mark.parametrize(("options", "cap"), [(["--max-expanded", "64MiB"], 64), ([], 1024)])
def test_a_gzip_bomb_stops_at_the_cap(
    pushed: Pushed, env: dict[str, str], options: list[str], cap: int
) -> None:
    """2 GiB of zeros in 2 MiB of gzip, on top of the image: the search must read that layer
    (it might hold /bin) and stops at the cap of decompressed bytes."""
    started = time.monotonic()
    result = verify([pushed.references["gzip-bomb"]], env, *options)
    assert result.returncode == 0, result.stderr
    (platform,) = result.json()[0]["platforms"]
    assert (platform["status"], platform["code"]) == ("unverified", "expanded")
    assert f"{cap // 1024} GiB" in platform["reason"] or f"{cap} MiB" in platform["reason"]
    assert platform["bytes"] < 3 * MiB
    assert time.monotonic() - started < 30


def test_bad_input_is_one_line(pushed: Pushed, env: dict[str, str]) -> None:
    bad_reference = run_kmultiarch(["verify", "Not A Reference"], env=env)
    assert bad_reference.returncode == 2
    assert bad_reference.stderr.count("\n") == 1, bad_reference.stderr
    assert bad_reference.stderr.startswith("kmultiarch: error:")
    bad_size = run_kmultiarch(["verify", "--max-bytes", "lots", pushed.references["zstd"]], env=env)
    assert bad_size.returncode == 2
    assert "is not a size" in bad_size.stderr


def test_an_image_that_does_not_exist_is_an_error(
    registry: SeededRegistry, env: dict[str, str]
) -> None:
    result = verify([f"{registry.host}/verify/nothing:1.0"], env)
    assert result.returncode == 1
    (entry,) = result.json()
    assert entry["error"] and "not found" in entry["error"]
    assert result.stderr.count("kmultiarch: error:") == 1


def test_the_fixture_binaries_are_what_they_say() -> None:
    """The Debian packages' programs, checked once by their own headers."""
    for arch, machine in (("amd64", 62), ("arm64", 183), ("armhf", 40)):
        data = busybox(arch)
        assert data[:4] == b"\x7fELF"
        assert struct.unpack_from("<H", data, 18)[0] == machine
    assert os.path.getsize(Path(__file__)) > 0


def test_verdicts_are_shared_through_the_shared_cache_level(
    pushed: Pushed, registry: SeededRegistry, tmp_path: Path
) -> None:
    """A runner with an empty disk cache gets the verdicts another runner stored in Redis."""
    from support.redis_server import RedisServer

    reference = pushed.references["liar"]
    with RedisServer(tmp_path / "redis") as redis:
        first = clean_env(tmp_path / "first", {"KMULTIARCH_CACHE_URL": redis.url})
        assert verify([reference], first).returncode == 1
        log = ByteLog(registry)
        second = clean_env(tmp_path / "second", {"KMULTIARCH_CACHE_URL": redis.url})
        again = verify([reference], second)
    assert again.returncode == 1
    assert [p["status"] for p in again.json()[0]["platforms"]] == ["verified", "mismatch"]
    # The tag's digest and platforms, then every verdict, from the shared level.
    assert log.entries() == []


def test_a_damaged_verdict_in_the_cache_is_a_miss(
    pushed: Pushed, env: dict[str, str], tmp_path: Path
) -> None:
    from kmultiarch.resolve.cache import DiskCacheBackend

    manifest = pushed.manifests["liar"]
    arm64 = manifest.children[1].digest
    disk = DiskCacheBackend(tmp_path / ".cache" / "kmultiarch")
    planted = {"platform": "linux/arm64", "digest": arm64, "status": "fine"}
    disk.set(f"verify:{arm64}@linux/arm64", {"v": 1, "kind": "claim", "result": planted})
    disk.close()
    result = verify([pushed.references["liar"]], env)
    assert result.returncode == 1
    assert by_platform(result.json()[0])["linux/arm64"]["status"] == "mismatch"
    assert f"cache entry 'verify:{arm64}@linux/arm64' is corrupted" in result.stderr
