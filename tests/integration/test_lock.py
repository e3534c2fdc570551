"""``kmultiarch lock`` and ``--lock``/``--offline``: hermetic renders, proven with the request log
of the real registry."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest
import yaml
from support import SeededRegistry
from support.cli import clean_env, run_kmultiarch
from support.manifests import deployment, image, write_policy


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return clean_env(tmp_path)


@pytest.fixture
def policy(tmp_path: Path, registry: SeededRegistry) -> Path:
    return write_policy(tmp_path / "policy.yaml", registry)


@pytest.fixture
def manifests(tmp_path: Path, registry: SeededRegistry) -> Path:
    directory = tmp_path / "manifests"
    directory.mkdir()
    (directory / "web.yaml").write_text(
        deployment("web", [image(registry, "multiarch-oci"), image(registry, "team-app-api")])
    )
    (directory / "legacy.yaml").write_text(
        deployment("legacy", [image(registry, "single-docker-amd64")])
        + "---\n"
        + deployment("nested", [image(registry, "nested-index")])
    )
    return directory


def make_lock(
    tmp_path: Path, policy: Path, manifests: Path, env: dict[str, str], name: str = "k.lock"
) -> Path:
    lock = tmp_path / name
    result = run_kmultiarch(
        ["lock", "--config", str(policy), str(manifests), "-o", str(lock)], env=env
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout == ""
    assert f"wrote {lock}: 4 images locked" in result.stderr
    return lock


def test_lock_writes_sorted_entries_with_a_header(
    tmp_path: Path, registry: SeededRegistry, policy: Path, manifests: Path, env: dict[str, str]
) -> None:
    lock = make_lock(tmp_path, policy, manifests, env)
    text = lock.read_text()
    header = [line for line in text.splitlines() if line.startswith("#")]
    assert header[0].startswith("# kmultiarch lock file")
    # The whole command, the policy included: running it again refreshes the lock.
    assert any(
        f"`kmultiarch lock --config {policy} {manifests} -o {lock}`" in line for line in header
    )
    assert any("kmultiarch 0." in line and "Z." in line for line in header)
    document = yaml.safe_load(text)
    assert document["apiVersion"] == "kmultiarch.dev/v1alpha1"
    assert document["kind"] == "ImageLock"
    keys = list(document["images"])
    assert keys == sorted(keys)
    expected = {
        "registry.test/multiarch-oci:1.0": "multiarch-oci",
        "registry.test/team/app/api:2.1": "team-app-api",
        "registry.test/single-docker-amd64:1.0": "single-docker-amd64",
        "registry.test/nested-index:1.0": "nested-index",
    }
    assert set(keys) == set(expected)
    for reference, key in expected.items():
        entry = document["images"][reference]
        assert entry["digest"] == registry.images[key].digest
        assert entry["platforms"] == list(registry.images[key].platforms)
    assert not list(tmp_path.glob(".k.lock.*")), "written atomically, no temporary left"


def test_a_locked_offline_run_makes_no_request(
    tmp_path: Path, registry: SeededRegistry, policy: Path, manifests: Path, env: dict[str, str]
) -> None:
    lock = make_lock(tmp_path, policy, manifests, env)
    online = run_kmultiarch(["mutate", "--config", str(policy), str(manifests)], env=env)
    log = registry.mark()
    for command in (
        ["mutate", "--lock", str(lock), "--offline"],
        ["check", "--lock", str(lock), "--offline", "-o", "json"],
        ["report", "--lock", str(lock), "--offline", "-o", "json"],
    ):
        result = run_kmultiarch(
            [*command, "--config", str(policy), "--no-cache", str(manifests)], env=env
        )
        assert result.returncode in (0, 1), result.stderr
        if command[0] == "mutate":
            assert result.stdout == online.stdout
            assert "4 images: 4 from cache or lock, 0 looked up" in result.stderr
        elif command[0] == "check":
            sources = {
                c["resolvedFrom"] for pod in result.json()["pods"] for c in pod["containers"]
            }
            assert sources == {"lock"}
        else:
            assert {i["resolvedFrom"] for i in result.json()["images"]} == {"lock"}
    assert log.requests() == []


def test_locked_images_are_not_looked_up_online_either(
    tmp_path: Path, registry: SeededRegistry, policy: Path, manifests: Path, env: dict[str, str]
) -> None:
    lock = make_lock(tmp_path, policy, manifests, env)
    extra = tmp_path / "extra.yaml"
    extra.write_text(deployment("extra", [image(registry, "armv7-only")]))
    log = registry.mark()
    result = run_kmultiarch(
        [
            "mutate",
            "--config",
            str(policy),
            "--no-cache",
            "--lock",
            str(lock),
            str(manifests),
            str(extra),
        ],
        env=env,
    )
    assert result.returncode == 0, result.stderr
    paths = {request.path for request in log.requests()}
    assert paths and all("/armv7-only/" in path for path in paths), paths


def test_offline_misses_follow_the_failure_policy(
    tmp_path: Path, registry: SeededRegistry, manifests: Path, env: dict[str, str]
) -> None:
    lenient = write_policy(tmp_path / "lenient.yaml", registry)
    lock = make_lock(tmp_path, lenient, manifests, env)
    extra = tmp_path / "extra.yaml"
    extra.write_text(deployment("extra", [image(registry, "armv7-only")]))
    log = registry.mark()
    warned = run_kmultiarch(
        ["mutate", "--config", str(lenient), "--lock", str(lock), "--offline", str(extra)],
        env=env,
    )
    assert warned.returncode == 0
    assert f"registry.test/armv7-only:1.0: not in the lock file {lock}" not in warned.stderr, (
        "the finding names the image once"
    )
    assert f"not in the lock file {lock} and --offline forbids a lookup" in warned.stderr
    assert "add it with `kmultiarch lock`" in warned.stderr
    assert warned.stdout == extra.read_text()
    # Nothing was looked up: the image is counted as failed, not as a lookup.
    assert warned.stderr.rstrip().endswith(
        "kmultiarch: 1 pod spec, 1 unresolved; 1 image: 0 from cache or lock, 0 looked up, 1 failed"
    ), warned.stderr

    strict = write_policy(tmp_path / "strict.yaml", registry, {"failurePolicy": "Fail"})
    failed = run_kmultiarch(
        ["mutate", "--config", str(strict), "--lock", str(lock), "--offline", str(extra)],
        env=env,
    )
    assert failed.returncode == 1
    assert failed.stdout == ""
    assert "kmultiarch: error:" in failed.stderr and "extra.yaml" in failed.stderr
    assert log.requests() == []


def test_the_policy_lock_key_is_honoured(
    tmp_path: Path, registry: SeededRegistry, manifests: Path, env: dict[str, str]
) -> None:
    policy = write_policy(tmp_path / "policy.yaml", registry)
    make_lock(tmp_path, policy, manifests, env, name="from-policy.lock")
    with_lock = write_policy(tmp_path / "with-lock.yaml", registry, {"lock": "from-policy.lock"})
    log = registry.mark()
    result = run_kmultiarch(
        ["check", "--config", str(with_lock), "--offline", "-o", "json", str(manifests)], env=env
    )
    assert result.returncode == 1  # the manifests need tolerations: check says so, offline
    assert {p["verdict"] for p in result.json()["pods"]} == {"needs-change"}
    assert log.requests() == []


def test_fn_reads_the_lock(
    tmp_path: Path, registry: SeededRegistry, policy: Path, manifests: Path, env: dict[str, str]
) -> None:
    lock = make_lock(tmp_path, policy, manifests, env)
    log = registry.mark()
    result = run_kmultiarch(
        ["fn", "--lock", str(lock), "--offline", str(policy), str(manifests / "web.yaml")],
        env=env,
    )
    assert result.returncode == 0, result.stderr
    assert "kubernetes.io/arch" in result.stdout
    assert log.requests() == []


def test_digest_pinned_references_use_only_matching_entries(
    tmp_path: Path, registry: SeededRegistry, policy: Path, manifests: Path, env: dict[str, str]
) -> None:
    lock = make_lock(tmp_path, policy, manifests, env)
    oci = registry.images["multiarch-oci"]
    docker = registry.images["multiarch-docker"]
    pinned = tmp_path / "pinned.yaml"
    pinned.write_text(
        deployment(
            "pinned",
            [
                # same content as the locked tag: answered by the lock
                f"registry.test/{oci.repository}@{oci.digest}",
                # the locked tag, but pinned to other content: the lock must not answer
                f"registry.test/{oci.repository}:{oci.tag}@{docker.digest}",
            ],
        )
    )
    result = run_kmultiarch(
        [
            "check",
            "--config",
            str(policy),
            "--lock",
            str(lock),
            "--offline",
            "-o",
            "json",
            str(pinned),
        ],
        env=env,
    )
    containers = result.json()["pods"][0]["containers"]
    assert containers[0]["resolvedFrom"] == "lock"
    assert containers[0]["digest"] == oci.digest
    assert containers[1]["resolvedFrom"] is None
    assert "not in the lock file" in containers[1]["error"]


def test_lock_check_finds_stale_and_missing_entries(
    tmp_path: Path, registry: SeededRegistry, policy: Path, manifests: Path, env: dict[str, str]
) -> None:
    lock = make_lock(tmp_path, policy, manifests, env)
    fresh = run_kmultiarch(
        ["lock", "--check", "--config", str(policy), "-o", str(lock), str(manifests)], env=env
    )
    assert fresh.returncode == 0, fresh.stdout + fresh.stderr
    assert fresh.stdout == ""
    assert "up to date (4 tags checked, 4 entries)" in fresh.stderr

    # The lock says the tag pointed elsewhere when it was made: the tag has moved since.
    oci = registry.images["multiarch-oci"]
    moved = registry.images["multiarch-docker"]
    lock.write_text(lock.read_text().replace(oci.digest, moved.digest))
    (manifests / "more.yaml").write_text(deployment("more", [image(registry, "armv7-only")]))
    log = registry.mark()
    stale = run_kmultiarch(
        ["lock", "--check", "--config", str(policy), "-o", str(lock), str(manifests)], env=env
    )
    assert stale.returncode == 1
    lines = stale.stdout.splitlines()
    assert (
        f"stale: registry.test/multiarch-oci:1.0: locked {moved.digest}, the registry now has "
        f"{oci.digest}"
    ) in lines
    assert "missing: registry.test/armv7-only:1.0 (used by Deployment default/more)" in lines
    assert len(lines) == 2
    assert "1 stale of 4 tags checked" in stale.stderr
    assert log.count("HEAD") + log.count("GET") >= 4, "every tag is asked again"


def test_a_broken_lock_is_one_clear_line(
    tmp_path: Path, policy: Path, manifests: Path, env: dict[str, str]
) -> None:
    lock = tmp_path / "bad.lock"
    lock.write_text(
        "apiVersion: kmultiarch.dev/v1alpha1\nkind: ImageLock\nimages:\n  nginx:1: {}\n"
    )
    result = run_kmultiarch(
        ["mutate", "--config", str(policy), "--lock", str(lock), str(manifests)], env=env
    )
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr.strip() == (
        f"kmultiarch: error: {lock}: images.nginx:1.digest: expected a digest like "
        "sha256:<64 hex digits> (missing)"
    )
    missing = run_kmultiarch(
        ["mutate", "--config", str(policy), "--lock", str(tmp_path / "none.lock"), str(manifests)],
        env=env,
    )
    assert missing.returncode == 2 and missing.stdout == ""
    assert "lock file not found; create it with `kmultiarch lock" in missing.stderr


def test_json_lock_round_trip(
    tmp_path: Path, policy: Path, manifests: Path, env: dict[str, str]
) -> None:
    """Writing the lock twice gives the same entries (only the header's time may differ)."""
    first = make_lock(tmp_path, policy, manifests, env, name="a.lock")
    second = make_lock(tmp_path, policy, manifests, env, name="b.lock")
    body = [json.dumps(yaml.safe_load(path.read_text())) for path in (first, second)]
    assert body[0] == body[1]


def test_lock_writes_where_the_policy_says(
    tmp_path: Path, registry: SeededRegistry, manifests: Path, env: dict[str, str]
) -> None:
    (tmp_path / "conf").mkdir()
    policy = write_policy(tmp_path / "conf" / "policy.yaml", registry, {"lock": "images.lock"})
    result = run_kmultiarch(
        ["lock", "--config", str(policy), str(manifests)], env=env, cwd=tmp_path
    )
    assert result.returncode == 0, result.stderr
    written = tmp_path / "conf" / "images.lock"
    assert len(yaml.safe_load(written.read_text())["images"]) == 4
    assert not (tmp_path / "kmultiarch.lock").exists()
    checked = run_kmultiarch(["lock", "--check", "--config", str(policy)], env=env, cwd=tmp_path)
    assert checked.returncode == 0, checked.stderr
    assert "up to date (4 tags checked, 4 entries)" in checked.stderr


def test_the_headers_command_makes_the_same_lock_again(
    tmp_path: Path, policy: Path, manifests: Path, env: dict[str, str]
) -> None:
    lock = make_lock(tmp_path, policy, manifests, env)
    first = lock.read_text()
    (command,) = re.findall(r"^# Made by `([^`]*)`", first, re.MULTILINE)
    lock.unlink()
    again = run_kmultiarch(shlex.split(command)[1:], env=env)
    assert again.returncode == 0, again.stderr
    entries = yaml.safe_load(lock.read_text())["images"]
    assert entries == yaml.safe_load(first)["images"]


def test_images_declared_by_overrides_are_said_to_be_policy_not_lock_entries(
    tmp_path: Path, registry: SeededRegistry, manifests: Path, env: dict[str, str]
) -> None:
    policy = write_policy(
        tmp_path / "policy.yaml",
        registry,
        {"overrides": [{"image": "registry.test/*", "platforms": ["linux/amd64"]}]},
    )
    lock = tmp_path / "k.lock"
    result = run_kmultiarch(
        ["lock", "--config", str(policy), str(manifests), "-o", str(lock)], env=env
    )
    assert result.returncode == 0, result.stderr
    assert yaml.safe_load(lock.read_text())["images"] == {}
    assert f"wrote {lock}: 0 images locked\n" in result.stderr
    assert (
        "4 images not in the lock: the policy's spec.overrides declares their platforms, and "
        "overrides are policy, read from it by every run"
    ) in result.stderr


def test_a_failed_lookup_is_counted_as_looked_up_and_failed(
    tmp_path: Path, registry: SeededRegistry, env: dict[str, str]
) -> None:
    policy = write_policy(tmp_path / "policy.yaml", registry)
    missing = tmp_path / "missing.yaml"
    missing.write_text(deployment("gone", ["registry.test/no-such-image:1.0"]))
    result = run_kmultiarch(["mutate", "--config", str(policy), str(missing)], env=env)
    assert result.returncode == 0, result.stderr
    assert result.stderr.rstrip().endswith(
        "kmultiarch: 1 pod spec, 1 unresolved; 1 image: 0 from cache or lock, 1 looked up, 1 failed"
    ), result.stderr


def test_the_headers_check_command_runs_as_printed(
    tmp_path: Path, policy: Path, manifests: Path, env: dict[str, str]
) -> None:
    """The header's ``lock --check`` line names this lock's policy, manifests and file: run as
    printed, it checks this lock (it once said ``-o FILE`` with no policy and no manifests)."""
    lock = make_lock(tmp_path, policy, manifests, env)
    (command,) = re.findall(r"^# `([^`]*)` lists entries", lock.read_text(), re.MULTILINE)
    words = shlex.split(command)
    assert words[:3] == ["kmultiarch", "lock", "--check"]
    assert ["--config", str(policy)] == words[3:5]
    checked = run_kmultiarch(words[1:], env=env)
    assert checked.returncode == 0, checked.stderr
    assert "up to date (4 tags checked, 4 entries)" in checked.stderr


def test_lock_checks_refresh_command_runs_as_printed(
    tmp_path: Path, registry: SeededRegistry, policy: Path, manifests: Path, env: dict[str, str]
) -> None:
    """A stale lock's note ends with the command that refreshes it, with the policy and the
    manifests it was checked against: run as printed, the lock is up to date again."""
    lock = make_lock(tmp_path, policy, manifests, env)
    oci = registry.images["multiarch-oci"]
    lock.write_text(
        lock.read_text().replace(oci.digest, registry.images["multiarch-docker"].digest)
    )
    stale = run_kmultiarch(
        ["lock", "--check", "--config", str(policy), "-o", str(lock), str(manifests)], env=env
    )
    assert stale.returncode == 1
    (command,) = re.findall(r"refresh it with `([^`]*)`", stale.stderr)
    assert "PATH..." not in command
    again = run_kmultiarch(shlex.split(command)[1:], env=env)
    assert again.returncode == 0, again.stderr
    fresh = run_kmultiarch(
        ["lock", "--check", "--config", str(policy), "-o", str(lock), str(manifests)], env=env
    )
    assert fresh.returncode == 0, fresh.stdout + fresh.stderr
