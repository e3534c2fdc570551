"""Writes and caches on real file systems, second round (issue 13): a rename that fails half
way, a cache on a read-only mount, a disk that fills while the cache is in use, and private
cache directories inside shared ones that someone else prepared."""

from __future__ import annotations

import contextlib
import os
import stat
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from support import SeededRegistry
from support.cli import clean_env, run_kmultiarch
from support.manifests import deployment, image, write_policy
from support.tools import in_ci

from kmultiarch.resolve.cache import DiskCacheBackend

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="mounts, chattr and chown need root")


def _run_or_skip(command: list[str]) -> None:
    result = subprocess.run(command, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        if in_ci():
            pytest.fail(f"{command}: {result.stderr}")
        pytest.skip(f"{command[0]} is not possible here: {result.stderr.strip()}")


@contextlib.contextmanager
def mounted(target: Path, *options: str) -> Iterator[Path]:
    target.mkdir(parents=True, exist_ok=True)
    _run_or_skip(["mount", *options, str(target)])
    try:
        yield target
    finally:
        subprocess.run(["umount", "-l", str(target)], check=False)


@contextlib.contextmanager
def immutable(path: Path) -> Iterator[None]:
    _run_or_skip(["chattr", "+i", str(path)])
    try:
        yield
    finally:
        subprocess.run(["chattr", "-i", str(path)], check=False)


def test_a_rename_that_fails_half_way_lists_what_was_rewritten(
    registry: SeededRegistry, tmp_path: Path
) -> None:
    """Three files to fix; the second cannot be replaced (immutable): the first is fully new,
    the second and third as they were, and the message says so by name."""
    texts = {}
    for index in range(3):
        path = tmp_path / f"app{index}.yaml"
        texts[path] = deployment(f"app{index}", [image(registry, "multiarch-oci")])
        path.write_text(texts[path])
    first, second, third = texts
    policy = write_policy(tmp_path / "policy.yaml", registry)
    with immutable(second):
        result = run_kmultiarch(
            ["fix", "--config", str(policy), *map(str, texts)], env=clean_env(tmp_path)
        )
    assert result.returncode == 1, result.stderr
    assert f"{second}: cannot replace it: Operation not permitted" in result.stderr
    assert f"rewritten before it: {first}" in result.stderr
    assert "tolerations" in first.read_text()
    assert second.read_text() == texts[second] and third.read_text() == texts[third]
    assert not list(tmp_path.glob(".*.kmultiarch.tmp"))


def test_a_cache_on_a_read_only_mount_is_a_warning_and_stays_as_it_was(
    registry: SeededRegistry, tmp_path: Path
) -> None:
    stream = tmp_path / "app.yaml"
    stream.write_text(deployment("app", [image(registry, "multiarch-oci")]))
    policy = write_policy(tmp_path / "policy.yaml", registry)
    env = clean_env(tmp_path)
    cache = tmp_path / "cache"
    warm = run_kmultiarch(
        ["mutate", "--cache-dir", str(cache), "--config", str(policy), str(stream)], env=env
    )
    assert warm.returncode == 0, warm.stderr
    before = {p.name: p.read_bytes() for p in cache.iterdir()}
    with mounted(tmp_path / "ro", "--bind", "-o", "ro", str(cache)) as read_only:
        result = run_kmultiarch(
            ["mutate", "--cache-dir", str(read_only), "--config", str(policy), str(stream)],
            env=env,
        )
    assert result.returncode == 0, result.stderr
    assert result.stdout == warm.stdout
    assert "kmultiarch: warning: cache" in result.stderr and "going on without it" in result.stderr
    assert {p.name: p.read_bytes() for p in cache.iterdir()} == before
    assert not [p for p in tmp_path.iterdir() if "corrupt" in p.name]


def test_a_disk_that_fills_while_the_cache_is_open_is_one_warning(tmp_path: Path) -> None:
    """Every entry that could not be written was its own warning: a run of 200 images on a
    full disk printed 200 lines."""
    with mounted(tmp_path / "disk", "-t", "tmpfs", "-o", "size=256k", "tmpfs") as disk:
        backend = DiskCacheBackend(disk / "cache")
        try:
            filler = disk / "filler"
            with filler.open("wb", buffering=0) as stream, contextlib.suppress(OSError):
                while True:
                    stream.write(b"x" * 4096)
            for index in range(200):
                backend.set(f"tag:registry.test/app{index}:1", {"digest": "x" * 200})
            assert len(backend.warnings) == 1, backend.warnings[:3]
            assert "No space left" in backend.warnings[0] or "full" in backend.warnings[0]
            assert "going on without writing to it" in backend.warnings[0]
        finally:
            backend.close()


@pytest.mark.parametrize("planted", ["someone-elses", "symlink", "world-writable"])
def test_a_private_directory_someone_else_prepared_in_a_shared_one_is_not_used(
    registry: SeededRegistry, tmp_path: Path, planted: str
) -> None:
    """In a shared --cache-dir (/tmp), kmultiarch-UID was used whoever made it: another user
    could create it first (or a symlink to a place of theirs) and read or plant entries."""
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o1777)
    private = shared / f"kmultiarch-{os.getuid()}"
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir(mode=0o700)
    if planted == "someone-elses":
        private.mkdir(mode=0o700)
        os.chown(private, 65534, 65534)
    elif planted == "symlink":
        private.symlink_to(elsewhere)
    else:
        private.mkdir()
        private.chmod(0o777)
    stream = tmp_path / "app.yaml"
    stream.write_text(deployment("app", [image(registry, "multiarch-oci")]))
    policy = write_policy(tmp_path / "policy.yaml", registry)
    result = run_kmultiarch(
        ["mutate", "--cache-dir", str(shared), "--config", str(policy), str(stream)],
        env=clean_env(tmp_path),
    )
    assert result.returncode == 0, result.stderr
    assert "tolerations" in result.stdout
    assert "kmultiarch: warning: cache" in result.stderr and str(private) in result.stderr
    target = elsewhere if planted == "symlink" else private
    assert list(target.iterdir()) == []
    assert stat.S_IMODE(shared.stat().st_mode) == 0o1777
