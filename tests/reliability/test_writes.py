"""Writes on real file systems (issue 13): a full disk, a read-only mount, files owned by
someone else, a shared cache directory. Every file ends old or fully new, never half; the
failure names the file; nothing kmultiarch did not create changes owner or mode."""

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

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="mounts and chown need root")


@contextlib.contextmanager
def mounted(target: Path, *options: str) -> Iterator[Path]:
    target.mkdir(parents=True, exist_ok=True)
    result = subprocess.run(
        ["mount", *options, str(target)], capture_output=True, text=True, check=False
    )
    if result.returncode != 0:
        if in_ci():
            pytest.fail(f"mount {options}: {result.stderr}")
        pytest.skip(f"cannot mount here: {result.stderr.strip()}")
    try:
        yield target
    finally:
        subprocess.run(["umount", "-l", str(target)], check=False)


def _manifests(directory: Path, registry: SeededRegistry, count: int) -> dict[Path, str]:
    texts = {}
    for index in range(count):
        path = directory / f"app{index}.yaml"
        text = deployment(f"app{index}", [image(registry, "multiarch-oci")])
        path.write_text(text)
        texts[path] = text
    return texts


def test_a_full_disk_leaves_every_file_as_it_was(registry: SeededRegistry, tmp_path: Path) -> None:
    """fix used to rewrite the first files and then crash on the one the disk had no room for."""
    with mounted(tmp_path / "small", "-t", "tmpfs", "-o", "size=64k", "tmpfs") as disk:
        texts = _manifests(disk, registry, 3)
        # Fill the disk to the last few hundred bytes: the first new file may fit, not all.
        filler = disk / "filler"
        with filler.open("wb", buffering=0) as stream, contextlib.suppress(OSError):
            while True:
                stream.write(b"x" * 512)
        with contextlib.suppress(OSError):
            os.truncate(filler, filler.stat().st_size - 600)
        policy = write_policy(tmp_path / "policy.yaml", registry)
        result = run_kmultiarch(
            ["fix", "--config", str(policy), *map(str, texts)], env=clean_env(tmp_path)
        )
        assert result.returncode == 1, result.stderr
        assert "bug" not in result.stderr and "No space left on device" in result.stderr, (
            result.stderr
        )
        assert "no file was changed" in result.stderr
        for path, text in texts.items():
            assert path.read_text() == text
        assert [p.name for p in disk.iterdir() if p.name.endswith(".kmultiarch.tmp")] == []


def test_a_read_only_mount_is_an_error_naming_the_file(
    registry: SeededRegistry, tmp_path: Path
) -> None:
    source = tmp_path / "source"
    source.mkdir()
    texts = _manifests(source, registry, 2)
    with mounted(tmp_path / "ro", "--bind", "-o", "ro", str(source)) as read_only:
        files = [read_only / path.name for path in texts]
        policy = write_policy(tmp_path / "policy.yaml", registry)
        result = run_kmultiarch(
            ["mutate", "--in-place", "--config", str(policy), *map(str, files)],
            env=clean_env(tmp_path),
        )
        assert result.returncode == 1, result.stderr
        assert "bug" not in result.stderr and "Read-only file system" in result.stderr
        assert str(files[0]) in result.stderr
    for path, text in texts.items():
        assert path.read_text() == text


def test_fix_as_root_keeps_the_owner_group_and_mode(
    registry: SeededRegistry, tmp_path: Path
) -> None:
    """fix as root changed a file's owner to root."""
    path = tmp_path / "app.yaml"
    path.write_text(deployment("app", [image(registry, "multiarch-oci")]))
    os.chown(path, 65534, 65534)
    path.chmod(0o640)
    policy = write_policy(tmp_path / "policy.yaml", registry)
    result = run_kmultiarch(["fix", "--config", str(policy), str(path)], env=clean_env(tmp_path))
    assert result.returncode == 1, result.stderr  # changed
    status = path.stat()
    assert (status.st_uid, status.st_gid, stat.S_IMODE(status.st_mode)) == (65534, 65534, 0o640)
    assert "tolerations" in path.read_text()


def test_a_shared_cache_directory_keeps_its_permissions(
    registry: SeededRegistry, tmp_path: Path
) -> None:
    """--cache-dir on a shared directory (/tmp, $RUNNER_TEMP) chmodded it from 1777 to 0700 and
    put cache.db in it."""
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o1777)
    stream = tmp_path / "stream.yaml"
    stream.write_text(deployment("app", [image(registry, "multiarch-oci")]))
    policy = write_policy(tmp_path / "policy.yaml", registry)
    result = run_kmultiarch(
        ["mutate", "--cache-dir", str(shared), "--config", str(policy), str(stream)],
        env=clean_env(tmp_path),
    )
    assert result.returncode == 0, result.stderr
    assert stat.S_IMODE(shared.stat().st_mode) == 0o1777
    assert not (shared / "cache.db").exists()
    private = [p for p in shared.iterdir() if (p / "cache.db").exists()]
    assert len(private) == 1 and stat.S_IMODE(private[0].stat().st_mode) == 0o700


def test_a_cache_on_a_full_disk_is_a_warning_not_a_failure(
    registry: SeededRegistry, tmp_path: Path
) -> None:
    """On a full disk a healthy cache was declared corrupt, moved aside, and the run failed."""
    with mounted(tmp_path / "tiny", "-t", "tmpfs", "-o", "size=16k", "tmpfs") as disk:
        filler = disk / "filler"
        with filler.open("wb", buffering=0) as stream, contextlib.suppress(OSError):
            while True:
                stream.write(b"x" * 512)
        stream_path = tmp_path / "stream.yaml"
        stream_path.write_text(deployment("app", [image(registry, "multiarch-oci")]))
        policy = write_policy(tmp_path / "policy.yaml", registry)
        result = run_kmultiarch(
            [
                "mutate",
                "--cache-dir",
                str(disk / "cache"),
                "--config",
                str(policy),
                str(stream_path),
            ],
            env=clean_env(tmp_path),
        )
        assert result.returncode == 0, result.stderr
        assert "tolerations" in result.stdout
        assert "kmultiarch: warning:" in result.stderr and "cache" in result.stderr
        assert not [p for p in disk.iterdir() if "corrupt" in p.name]
