"""One validation for every source of answers (issue 21): a value planted in the shared cache,
the disk cache, a lock file or a registry meets the same digest, platform and media type
grammar (kmultiarch/core/images/answers.py) and is refused, never decided with.

The symptom that was reproduced: a tag record in Redis whose digest is ``sha256:zz`` passed the
"checked field by field" validation, so the amd64-only image got the arm64 toleration and no
affinity, and ``report`` printed the digest. Real redis-server, real registry.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
import yaml
from support import SeededRegistry
from support.cli import Completed, clean_env, run_kmultiarch
from support.redis_server import RedisServer
from support.seed import PlatformSpec, Seeder, oci_image

from kmultiarch.core.images.reference import ImageRef
from kmultiarch.core.resolution import tag_key
from kmultiarch.resolve.cache import DiskCacheBackend

AMD64_ONLY = "single-docker-amd64"
PLANTED_DIGEST = "sha256:zz"
BOTH = ["linux/amd64", "linux/arm64"]


def _deployment(image: str) -> str:
    return (
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  template:\n"
        f"    spec:\n      containers:\n      - name: main\n        image: {image}\n"
    )


def _planted_tag(digest: str) -> dict[str, object]:
    return {"v": 1, "digest": digest, "checkedAt": time.time()}


def _planted_platforms(platforms: list[str]) -> dict[str, object]:
    return {"v": 1, "mediaType": "application/vnd.oci.image.index.v1+json", "platforms": platforms}


def _mutate(tmp_path: Path, image: str, env: dict[str, str]) -> Completed:
    manifest = tmp_path / "deployment.yaml"
    manifest.write_text(_deployment(image))
    return run_kmultiarch(["mutate", str(manifest)], env=clean_env(tmp_path, env))


def _pod_spec(output: str) -> dict[str, object]:
    (document,) = yaml.safe_load_all(output)
    spec = document["spec"]["template"]["spec"]
    assert isinstance(spec, dict)
    return spec


def _placed_on_amd64_only(output: str) -> None:
    spec = _pod_spec(output)
    assert "tolerations" not in spec, "the amd64-only image must not tolerate arm64 nodes"
    terms = spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert terms["nodeSelectorTerms"] == [
        {"matchExpressions": [{"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]}]}
    ]


@pytest.mark.parametrize(
    ("tag_digest", "platforms"),
    [
        (PLANTED_DIGEST, BOTH),  # the case: a digest that is not a digest
        ("sha256:" + "A" * 64, BOTH),  # upper case hex: not the grammar
        (None, ["unknown/unknown", "linux/arm64"]),  # a platform no image runs on
        (None, ["linux/amd64", "linux/arm64\n::error::x"]),  # a platform with a line break
    ],
    ids=["digest-sha256-zz", "digest-upper-hex", "platform-unknown", "platform-line-break"],
)
def test_a_planted_shared_cache_answer_is_a_miss(
    registry: SeededRegistry,
    tmp_path: Path,
    tag_digest: str | None,
    platforms: list[str],
) -> None:
    image = registry.reference(AMD64_ONLY)
    reference = ImageRef.parse(image)
    digest = tag_digest or registry.images[AMD64_ONLY].digest
    with RedisServer(tmp_path / "redis") as redis:
        redis.cli(
            "SET", f"kmultiarch:v1:tag:{tag_key(reference)}", json.dumps(_planted_tag(digest))
        )
        redis.cli(
            "SET", f"kmultiarch:v1:platforms:{digest}", json.dumps(_planted_platforms(platforms))
        )
        run = _mutate(
            tmp_path,
            image,
            {"KMULTIARCH_CACHE_DIR": str(tmp_path / "disk"), "KMULTIARCH_CACHE_URL": redis.url},
        )
    assert run.returncode == 0, run.stderr
    _placed_on_amd64_only(run.stdout)
    assert "is not a kmultiarch JSON record" in run.stderr


@pytest.mark.parametrize(
    ("tag_digest", "platforms"),
    [(PLANTED_DIGEST, BOTH), (None, ["unknown/unknown", "linux/arm64"])],
    ids=["digest-sha256-zz", "platform-unknown"],
)
def test_a_planted_disk_cache_answer_is_a_miss(
    registry: SeededRegistry, tmp_path: Path, tag_digest: str | None, platforms: list[str]
) -> None:
    image = registry.reference(AMD64_ONLY)
    digest = tag_digest or registry.images[AMD64_ONLY].digest
    disk = DiskCacheBackend(tmp_path / "disk")
    disk.set(f"tag:{tag_key(ImageRef.parse(image))}", _planted_tag(digest))
    disk.set(f"platforms:{digest}", _planted_platforms(platforms))
    disk.close()
    log = registry.mark()
    run = _mutate(tmp_path, image, {"KMULTIARCH_CACHE_DIR": str(tmp_path / "disk")})
    assert run.returncode == 0, run.stderr
    _placed_on_amd64_only(run.stdout)
    assert log.count("GET", "/manifests/") >= 1, "asked the registry instead"


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ("{digest: 'sha256:zz', platforms: [linux/amd64]}", "images.{image}.digest:"),
        (
            "{digest: '{digest}', platforms: [unknown/unknown]}",
            "images.{image}.platforms[0]: 'unknown/unknown' is not a platform",
        ),
        (
            "{digest: '{digest}', platforms: [linux/amd64], mediaType: \"a/b\\n::error::x\"}",
            "images.{image}.mediaType:",
        ),
    ],
    ids=["digest-sha256-zz", "platform-unknown", "media-type-line-break"],
)
def test_a_planted_lock_answer_is_refused_naming_the_entry(
    registry: SeededRegistry, tmp_path: Path, entry: str, message: str
) -> None:
    image = registry.reference(AMD64_ONLY)
    lock = tmp_path / "kmultiarch.lock"
    lock.write_text(
        "apiVersion: kmultiarch.dev/v1alpha1\nkind: ImageLock\nimages:\n  "
        + f"{image}: "
        + entry.replace("{digest}", registry.images[AMD64_ONLY].digest)
        + "\n"
    )
    run = _mutate_with_lock(tmp_path, image, lock)
    assert run.returncode == 2, run.stdout
    assert run.stdout == ""
    assert message.replace("{image}", image) in run.stderr, run.stderr


def _mutate_with_lock(tmp_path: Path, image: str, lock: Path) -> Completed:
    manifest = tmp_path / "deployment.yaml"
    manifest.write_text(_deployment(image))
    return run_kmultiarch(
        ["mutate", "--lock", str(lock), "--offline", str(manifest)], env=clean_env(tmp_path)
    )


def test_a_registry_answer_of_an_unknown_platform_is_an_unresolved_image(
    registry: SeededRegistry, tmp_path: Path
) -> None:
    """A config that says ``os: unknown`` (BuildKit's marker of what runs nowhere) is not an
    answer: the image is unresolved (an error under the default Fail policy), never a platform
    the decision could take."""
    with registry.client() as client:
        Seeder(client).push_manifest(
            "planted/unknown-os", oci_image(PlatformSpec("unknown", "amd64"), "planted"), "1.0"
        )
    image = f"{registry.host}/planted/unknown-os:1.0"
    run = run_kmultiarch(["inspect", "-o", "json", image], env=clean_env(tmp_path))
    (entry,) = run.json()
    assert entry["platforms"] == [], entry
    assert "is not a platform an image runs on" in entry["error"], entry
