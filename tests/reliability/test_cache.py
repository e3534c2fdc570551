"""The cache (issue 7, item 4): damaged caches, shared caches, what is stored.

Real ``kmultiarch mutate`` processes against the real registry: a cache file overwritten with
garbage or cut in half, and entries planted in it (a pickle, text that is not JSON, JSON of the
wrong shape) are detected, ignored and rebuilt with a warning, the output being right all the
same; 16 processes started at once on one empty cache directory all succeed with the same
output, and so do 16 on the warm cache; the directory is private (0700) and every stored value
is a JSON object, never a pickle.
"""

from __future__ import annotations

import json
import os
import sqlite3
import stat
from pathlib import Path

import pytest
from support import SeededRegistry
from support.cli import clean_env
from support.measure import Invocation, Measured, run_concurrently, run_measured

from kmultiarch.resolve.cache import DiskCacheBackend

PROCESSES = 16
IMAGES = ["multiarch-oci", "multiarch-docker", "single-oci-arm64", "nested-index", "team-app-api"]
#: diskcache's value modes: values are stored raw (text), never pickled.
MODE_RAW, MODE_PICKLE = 1, 4


def _stream(registry: SeededRegistry) -> str:
    return "---\n".join(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n"
        f"  name: app-{index}\nspec:\n  template:\n    spec:\n      containers:\n"
        f"      - name: main\n        image: {registry.reference(key)}\n"
        for index, key in enumerate(IMAGES)
    )


@pytest.fixture
def stream(registry: SeededRegistry, tmp_path: Path) -> Path:
    path = tmp_path / "rendered.yaml"
    path.write_text(_stream(registry))
    return path


@pytest.fixture
def expected(registry: SeededRegistry, stream: Path, tmp_path: Path) -> bytes:
    """The output of a run without any disk cache."""
    run = run_measured(["mutate", str(stream), "--no-cache"], env=clean_env(tmp_path))
    assert run.returncode == 0, run.stderr
    assert run.text.count("tolerations:") == len(IMAGES)
    return run.stdout


def _mutate(stream: Path, cache: Path, tmp_path: Path) -> Measured:
    return run_measured(["mutate", str(stream), "--cache-dir", str(cache)], env=clean_env(tmp_path))


def _warnings(run: Measured) -> list[str]:
    return [line for line in run.stderr_lines if line.startswith("kmultiarch: warning: ")]


def _rows(cache: Path) -> list[tuple[str, int, object]]:
    with sqlite3.connect(cache / "cache.db") as connection:
        return connection.execute("SELECT key, mode, value FROM Cache").fetchall()


def _assert_warm(
    stream: Path, cache: Path, tmp_path: Path, registry: SeededRegistry, expected: bytes
) -> None:
    """A run on the (rebuilt) cache: no warning, the same output, no registry request."""
    log = registry.mark()
    run = _mutate(stream, cache, tmp_path)
    assert run.returncode == 0, run.stderr
    assert run.stdout == expected
    assert _warnings(run) == []
    assert f"{len(IMAGES)} images: {len(IMAGES)} from cache or lock, 0 looked up" in run.stderr
    assert log.requests() == []


@pytest.mark.parametrize("damage", ["garbage", "truncated", "empty-header"])
def test_a_damaged_cache_file_is_moved_aside_and_rebuilt(
    damage: str, registry: SeededRegistry, stream: Path, expected: bytes, tmp_path: Path
) -> None:
    cache = tmp_path / "cache"
    assert _mutate(stream, cache, tmp_path).returncode == 0
    database = cache / "cache.db"
    content = database.read_bytes()
    if damage == "garbage":
        database.write_bytes(os.urandom(len(content)))
    elif damage == "truncated":
        database.write_bytes(content[: len(content) // 2])
    else:
        database.write_bytes(b"\0" * 100 + content[100:])

    run = _mutate(stream, cache, tmp_path)
    assert run.returncode == 0, run.stderr
    assert run.stdout == expected
    warnings = _warnings(run)
    assert len(warnings) == 1, run.stderr
    assert f"cache {cache} could not be read" in warnings[0]
    assert "started a new one" in warnings[0]
    moved = [path for path in tmp_path.iterdir() if path.name.startswith("cache.corrupt-")]
    assert len(moved) == 1 and moved[0].name in warnings[0]
    assert stat.S_IMODE(cache.stat().st_mode) == 0o700
    _assert_warm(stream, cache, tmp_path, registry, expected)


def test_garbage_entries_are_ignored_and_replaced(
    registry: SeededRegistry, stream: Path, expected: bytes, tmp_path: Path
) -> None:
    cache = tmp_path / "cache"
    assert _mutate(stream, cache, tmp_path).returncode == 0
    rows = {key: (mode, value) for key, mode, value in _rows(cache)}
    oci_tag = f"tag:{registry.reference('multiarch-oci')}"
    docker_tag = f"tag:{registry.reference('multiarch-docker')}"
    nested = f"platforms:{registry.images['nested-index'].digest}"
    single = f"platforms:{registry.images['single-oci-arm64'].digest}"
    assert {oci_tag, docker_tag, nested, single} <= set(rows)
    planted = {
        # A pickle that would run code if unpickled.
        oci_tag: (
            MODE_PICKLE,
            b"cos\nsystem\n(S'touch " + str(tmp_path / "pwned").encode() + b"'\ntR.",
        ),
        docker_tag: (MODE_RAW, "not JSON {"),
        nested: (MODE_RAW, json.dumps({"mediaType": 3, "platforms": "linux/amd64"})),
        single: (
            MODE_RAW,
            json.dumps({"v": 1, "mediaType": "x", "platforms": ["not a/platform/at/all"]}),
        ),
    }
    with sqlite3.connect(cache / "cache.db") as connection:
        for key, (mode, value) in planted.items():
            connection.execute(
                "UPDATE Cache SET mode = ?, value = ? WHERE key = ?", (mode, value, key)
            )

    run = _mutate(stream, cache, tmp_path)
    assert run.returncode == 0, run.stderr
    assert run.stdout == expected
    warnings = _warnings(run)
    assert len(warnings) == len(planted), run.stderr
    for key in planted:
        assert any(repr(key) in warning for warning in warnings), (key, warnings)
    assert not (tmp_path / "pwned").exists()
    _assert_warm(stream, cache, tmp_path, registry, expected)


def test_16_processes_share_one_cache_directory(
    registry: SeededRegistry, stream: Path, expected: bytes, tmp_path: Path
) -> None:
    cache = tmp_path / "shared-cache"
    invocations = [
        Invocation(["mutate", str(stream), "--cache-dir", str(cache)], clean_env(tmp_path))
        for _ in range(PROCESSES)
    ]
    for wave in ("cold", "warm"):
        log = registry.mark()
        runs = run_concurrently(invocations)
        for run in runs:
            assert run.returncode == 0, run.stderr
            assert run.stdout == expected, wave
            assert _warnings(run) == [], run.stderr
        if wave == "warm":
            assert log.requests() == []
    assert [path.name for path in tmp_path.iterdir() if "corrupt" in path.name] == []
    # A tag and a digest per image, and the inner index of nested-index (beside them, the
    # platform manifests each index lists: listed:NAME@DIGEST, issue 36).
    records = [row for row in _rows(cache) if not row[0].startswith("listed:")]
    assert len(records) == 2 * len(IMAGES) + 1


def test_the_cache_directory_is_private_and_holds_only_json(
    registry: SeededRegistry, stream: Path, expected: bytes, tmp_path: Path
) -> None:
    cache = tmp_path / "xdg" / "deeper" / "kmultiarch"
    run = _mutate(stream, cache, tmp_path)
    assert run.returncode == 0
    assert stat.S_IMODE(cache.stat().st_mode) == 0o700

    # A directory kmultiarch did not create keeps its permissions (issue 13: --cache-dir /tmp
    # was chmodded to 0700); a shared one (others may write) gets a private one inside.
    existing = tmp_path / "existing"
    existing.mkdir(mode=0o755)
    existing.chmod(0o755)
    assert _mutate(stream, existing, tmp_path).returncode == 0
    assert stat.S_IMODE(existing.stat().st_mode) == 0o755
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o1777)
    assert _mutate(stream, shared, tmp_path).returncode == 0
    assert stat.S_IMODE(shared.stat().st_mode) == 0o1777
    private = shared / f"kmultiarch-{os.getuid()}"
    assert stat.S_IMODE(private.stat().st_mode) == 0o700

    rows = _rows(cache)
    assert rows
    for key, mode, value in rows:
        assert isinstance(key, str)
        assert mode == MODE_RAW, (key, mode)
        assert isinstance(value, str)
        assert isinstance(json.loads(value), dict)
    backend = DiskCacheBackend(cache)
    try:
        assert sorted(backend.keys()) == sorted(key for key, _, _ in rows)
    finally:
        backend.close()


def _tree(directory: Path) -> dict[str, tuple[int, int, int]]:
    """Every path below ``directory`` with its mode, size and modification time."""
    found = {}
    for path in [directory, *directory.rglob("*")]:
        status = path.lstat()
        found[str(path)] = (status.st_mode, status.st_size, status.st_mtime_ns)
    return found


def test_cache_info_on_a_shared_directory_creates_nothing(tmp_path: Path) -> None:
    """On a shared 1777 cache directory (/tmp, $RUNNER_TEMP), ``cache info`` created this
    user's private ``kmultiarch-UID`` directory and a database in it: a command that shows
    must not create or change anything (issue 21)."""
    from support.cli import run_kmultiarch

    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o1777)
    before = _tree(shared)
    info = run_kmultiarch(["cache", "info", "--cache-dir", str(shared)], env=clean_env(tmp_path))
    assert info.returncode == 0, info.stderr
    assert "not created yet" in info.stdout
    assert _tree(shared) == before


def test_cache_info_on_an_existing_cache_changes_no_file(tmp_path: Path) -> None:
    from support.cli import run_kmultiarch

    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o1777)
    backend = DiskCacheBackend(shared)  # makes the private directory inside, as a run does
    backend.set(
        "tag:registry.test/app:1", {"v": 1, "digest": "sha256:" + "0" * 64, "checkedAt": 1.0}
    )
    backend.set(
        "platforms:sha256:" + "0" * 64, {"v": 1, "mediaType": "a/b", "platforms": ["linux/amd64"]}
    )
    backend.close()
    before = _tree(shared)
    info = run_kmultiarch(["cache", "info", "--cache-dir", str(shared)], env=clean_env(tmp_path))
    assert info.returncode == 0, info.stderr
    assert "2 (1 digests, 1 tags)" in info.stdout
    assert f"directory: {shared / f'kmultiarch-{os.getuid()}'}" in info.stdout
    assert _tree(shared) == before
