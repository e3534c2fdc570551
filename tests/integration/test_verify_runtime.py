"""Verification reads layers as the runtime extracts them (issue 28, items 1-5 and 9),
against the real registry: layers that name a file twice, climb with ``..``, carry both a
PAX path and a GNU long name, bytes a proxy forged, an index that lists one manifest under
two platforms (with ``lock --verify`` reading back what it writes), and a PATH of 3,000
directories under a short deadline. Each test is named after the symptom it guards."""

from __future__ import annotations

import io
import tarfile
import time
from pathlib import Path

import pytest
import yaml
from support import SeededRegistry
from support.cli import Completed, clean_env, run_kmultiarch
from support.executables import (
    AMD64,
    ARM64,
    File,
    busybox,
    busybox_layer,
    compressed_layer,
    image,
    layer,
)
from support.fault_proxy import FaultProxy, ReplaceBody
from support.manifests import TEST_HOST, deployment, write_policy
from support.seed import IndexEntry, Manifest, Seeder, index

BLOCK = 512


def _header(name: str, typeflag: bytes, size: int, mode: int = 0o755) -> bytes:
    """A USTAR header block, written by hand (tarfile will not write the mixtures Go's
    reader must be matched on)."""
    block = bytearray(BLOCK)
    block[0:100] = name.encode()[:100].ljust(100, b"\0")
    block[100:108] = f"{mode:07o}\0".encode()
    block[108:116] = b"0000000\0"
    block[116:124] = b"0000000\0"
    block[124:136] = f"{size:011o}\0".encode()
    block[136:148] = b"00000000000\0"
    block[156:157] = typeflag
    block[257:263] = b"ustar\0"
    block[263:265] = b"00"
    block[148:156] = b" " * 8
    block[148:156] = f"{sum(block):06o}\0 ".encode()
    return bytes(block)


def _data(payload: bytes) -> bytes:
    return payload + bytes(-len(payload) % BLOCK)


def _pax(records: dict[str, str]) -> bytes:
    body = b""
    for key, value in records.items():
        text = f" {key}={value}\n"
        length = len(text) + 1
        while len(str(length)) + len(text) != length:
            length = len(str(length)) + len(text)
        body += f"{length}{text}".encode()
    return _header("PaxHeaders/x", b"x", len(body), 0o644) + _data(body)


def _gnu_long_name(name: str) -> bytes:
    payload = name.encode() + b"\0"
    return _header("././@LongLink", b"L", len(payload), 0o644) + _data(payload)


def _file(name: str, data: bytes) -> bytes:
    return _header(name, b"0", len(data)) + _data(data)


END = bytes(2 * BLOCK)


def _appended(first: bytes, then: bytes) -> bytes:
    """``bin/app`` twice: ``first``, then ``then`` appended as ``tar -r`` appends."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.GNU_FORMAT) as archive:
        info = tarfile.TarInfo("bin/app")
        info.size, info.mode = len(first), 0o755
        archive.addfile(info, io.BytesIO(first))
    buffer.seek(0)
    with tarfile.open(fileobj=buffer, mode="a", format=tarfile.GNU_FORMAT) as archive:
        info = tarfile.TarInfo("bin/app")
        info.size, info.mode = len(then), 0o755
        archive.addfile(info, io.BytesIO(then))
    return buffer.getvalue()


def _claims(*entries: tuple[Manifest, str]) -> Manifest:
    from support.seed import PlatformSpec

    return index([IndexEntry(manifest, PlatformSpec("linux", arch)) for manifest, arch in entries])


AMD64_IMAGE = image(AMD64, [busybox_layer("amd64")], entrypoint=["/bin/busybox"], label="x86")
#: The classic ``docker manifest annotate`` lie: the amd64 manifest, listed again as arm64.
ANNOTATED = _claims((AMD64_IMAGE, "amd64"), (AMD64_IMAGE, "arm64"))


def _catalogue() -> dict[str, Manifest]:
    arm, x86 = busybox("arm64"), busybox("amd64")
    path_bomb = b"".join(
        _header(f"d{i}", b"5", 0, 0o755) + _header(f"d{i}/app", b"0", 0, 0o644) for i in range(3000)
    )
    return {
        # 1. aarch64 first, x86-64 appended: the runtime keeps the last.
        "appended": image(
            ARM64,
            [compressed_layer(_appended(arm, x86))],
            entrypoint=["/bin/app"],
        ),
        # 2. ../bin/app is /bin/app to containerd.
        "climbing": image(
            ARM64,
            [
                layer(File("bin/app", arm)),
                compressed_layer(_file("../bin/app", x86) + END),
            ],
            entrypoint=["/bin/app"],
        ),
        # 3. PAX path bin/app, GNU long name opt/decoy: Go's reader names it opt/decoy.
        "pax-and-gnu": image(
            ARM64,
            [
                layer(File("bin/app", x86)),
                compressed_layer(
                    _pax({"path": "bin/app"})
                    + _gnu_long_name("opt/decoy")
                    + _file("placeholder", arm)
                    + END
                ),
            ],
            entrypoint=["/bin/app"],
        ),
        "honest-arm": image(ARM64, [busybox_layer("arm64")], entrypoint=["/bin/busybox"]),
        # 5. one manifest under two platforms.
        "annotated": ANNOTATED,
        # 9. 3,000 PATH directories, each holding a non-executable app, in a small layer.
        "long-path": image(
            ARM64,
            [compressed_layer(path_bomb + END)],
            entrypoint=["app"],
            env=["PATH=" + ":".join(f"/d{i}" for i in range(3000))],
        ),
    }


@pytest.fixture(scope="module")
def pushed(registry: SeededRegistry) -> dict[str, str]:
    references = {}
    with registry.client() as client:
        seeder = Seeder(client)
        for name, manifest in _catalogue().items():
            seeder.push_manifest(f"runtime/{name}", manifest, "1.0")
            references[name] = f"{registry.host}/runtime/{name}:1.0"
    return references


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return clean_env(tmp_path)


def verify(references: list[str], env: dict[str, str], *options: str) -> Completed:
    return run_kmultiarch(["verify", "-o", "json", *options, *references], env=env)


def verdicts(result: Completed) -> dict[str, tuple[str, str | None]]:
    (entry,) = result.json()
    assert entry["error"] is None, entry
    return {p["platform"]: (p["status"], p.get("code")) for p in entry["platforms"]}


def test_a_file_appended_a_second_time_is_judged_by_the_last_entry(
    pushed: dict[str, str], env: dict[str, str]
) -> None:
    result = verify([pushed["appended"]], env)
    assert verdicts(result) == {"linux/arm64": ("mismatch", None)}, result.stdout


def test_a_name_climbing_with_dot_dot_is_cleaned_as_containerd_cleans_it(
    pushed: dict[str, str], env: dict[str, str]
) -> None:
    result = verify([pushed["climbing"]], env)
    assert verdicts(result) == {"linux/arm64": ("mismatch", None)}, result.stdout


def test_a_gnu_long_name_wins_over_a_pax_path_as_in_go(
    pushed: dict[str, str], env: dict[str, str]
) -> None:
    result = verify([pushed["pax-and-gnu"]], env)
    assert verdicts(result) == {"linux/arm64": ("mismatch", None)}, result.stdout


def test_layer_bytes_a_proxy_forged_are_never_verified(
    pushed: dict[str, str], registry: SeededRegistry, tmp_path: Path
) -> None:
    """A mirror serving the arm64 BusyBox layer under the amd64 one's digest: the amd64
    manifest's claim (the lie arm64) cannot be verified through it, nor cached, nor shared."""
    from support.redis_server import RedisServer

    forged = busybox_layer("arm64").blob.data
    amd64_layer = AMD64_IMAGE.blobs[1].digest
    with RedisServer(tmp_path / "redis") as redis, FaultProxy(registry.url) as proxy:
        proxy.inject(f"/blobs/{amd64_layer}", ReplaceBody(lambda _original: forged))
        shared = {"KMULTIARCH_CACHE_URL": redis.url}
        reference = pushed["annotated"].replace(registry.host, proxy.host)
        forged_run = verify([reference], clean_env(tmp_path / "a", shared))
        found = verdicts(forged_run)
        assert found["linux/arm64"][0] == "unverified", forged_run.stdout
        assert found["linux/arm64"][1] == "digest"
        assert found["linux/amd64"] == ("unverified", "digest")
        # Nothing of it was kept: through the real registry, another runner reads the truth.
        honest = verify([pushed["annotated"]], clean_env(tmp_path / "b", shared))
    assert verdicts(honest) == {
        "linux/amd64": ("verified", None),
        "linux/arm64": ("mismatch", None),
    }


def test_an_index_listing_one_manifest_under_two_platforms_gets_both_judged(
    pushed: dict[str, str], env: dict[str, str]
) -> None:
    result = verify([pushed["annotated"]], env)
    assert result.returncode == 1
    assert verdicts(result) == {
        "linux/amd64": ("verified", None),
        "linux/arm64": ("mismatch", None),
    }
    # Warm: each claim from the cache, still both.
    warm = verify([pushed["annotated"]], env)
    assert verdicts(warm) == verdicts(result)


def test_lock_verify_writes_each_platform_claim_once_and_reads_it_back(
    pushed: dict[str, str], registry: SeededRegistry, env: dict[str, str], tmp_path: Path
) -> None:
    policy = write_policy(tmp_path / "policy.yaml", registry)
    liar = f"{TEST_HOST}/runtime/annotated:1.0"
    (tmp_path / "app.yaml").write_text(deployment("web", [liar]))
    lock = ["lock", "--verify", "warn", "app.yaml", "-o", "app.lock", "--config", str(policy)]
    made = run_kmultiarch(lock, env=env, cwd=tmp_path)
    assert made.returncode == 0, made.stderr
    text = (tmp_path / "app.lock").read_text()
    assert text.count("linux/amd64:") == 1, text
    recorded = yaml.safe_load(text)["images"][liar]["verified"]
    assert recorded["linux/arm64"]["status"] == "mismatch"
    offline = ["--lock", "app.lock", "--offline", "--config", str(policy), "app.yaml"]
    enforced = run_kmultiarch(
        ["mutate", "--verify", "enforce", *offline], env=clean_env(tmp_path / "x"), cwd=tmp_path
    )
    assert enforced.returncode == 0, enforced.stderr
    assert "- amd64" in enforced.stdout and "value: arm64" not in enforced.stdout


def test_a_path_of_3000_directories_ends_within_the_deadline(
    pushed: dict[str, str], env: dict[str, str]
) -> None:
    started = time.monotonic()
    result = verify([pushed["long-path"]], env, "--deadline", "2")
    elapsed = time.monotonic() - started
    (status, code) = verdicts(result)["linux/arm64"]
    assert status == "unverified" and code in ("not-found", "deadline"), result.stdout
    assert elapsed < 6, elapsed  # the CLI's start, the registry, and at most 2 s of search
