"""Image volumes (issue 30, item 3; KEP-4639: ``spec.volumes[].image.reference``, pulled by the
kubelet for the node's platform like a container's image) are images of the pod, against the
real registry: an amd64-only volume keeps a pod of multi-arch containers off arm64 nodes
(before: the arm64 toleration), in mutate, check, ``--output patch``, the lock and the report
(listed as the volume); a data-only OCI artifact, which has no platform, narrows nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from support import SeededRegistry
from support.cli import clean_env, run_kmultiarch
from support.executables import honest_image, lying_image
from support.manifests import TEST_HOST, deployment, image, write_policy
from support.seed import Seeder

REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return clean_env(tmp_path)


def _with_volume(registry: SeededRegistry, volume_image: str) -> str:
    return deployment(
        "web",
        [image(registry, "multiarch-oci")],
        extra_spec=(
            "      volumes:\n"
            "      - name: data\n"
            "        image:\n"
            f"          reference: {volume_image}\n"
            "          pullPolicy: IfNotPresent\n"
        ),
    )


def test_an_amd64_only_image_volume_keeps_the_pod_off_arm64(
    tmp_path: Path, registry: SeededRegistry, env: dict[str, str]
) -> None:
    config = write_policy(tmp_path / "policy.yaml", registry)
    volume_image = image(registry, "single-docker-amd64")
    manifest = tmp_path / "web.yaml"
    manifest.write_text(_with_volume(registry, volume_image))

    mutated = run_kmultiarch(["mutate", "--config", str(config), str(manifest)], env=env)
    assert mutated.returncode == 0, mutated.stderr
    spec = yaml.safe_load(mutated.stdout)["spec"]["template"]["spec"]
    assert "tolerations" not in spec
    assert spec["affinity"]["nodeAffinity"][REQUIRED]["nodeSelectorTerms"] == [
        {"matchExpressions": [{"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]}]}
    ]

    patch = run_kmultiarch(
        ["mutate", "--output", "patch", "--config", str(config), str(manifest)], env=env
    )
    assert patch.returncode == 0, patch.stderr
    assert "amd64" in patch.stdout
    assert "tolerations" not in patch.stdout

    checked = run_kmultiarch(["check", "--config", str(config), str(manifest)], env=env)
    assert checked.returncode == 1
    assert "volume data" in checked.stdout
    assert volume_image in checked.stdout

    lock = tmp_path / "kmultiarch.lock"
    locked = run_kmultiarch(
        ["lock", "--config", str(config), "-o", str(lock), str(manifest)], env=env
    )
    assert locked.returncode == 0, locked.stderr
    assert volume_image in lock.read_text()

    report = run_kmultiarch(["report", "--config", str(config), str(manifest)], env=env)
    assert report.returncode == 0, report.stderr
    assert "web (volume data)" in report.stdout
    as_json = run_kmultiarch(
        ["report", "-o", "json", "--config", str(config), str(manifest)], env=env
    )
    images = json.loads(as_json.stdout)["images"]
    [entry] = [entry for entry in images if volume_image in entry["writtenAs"]]
    assert [use["container"] for use in entry["usedBy"]] == ["volume data"]


def test_a_data_only_artifact_volume_narrows_nothing(
    tmp_path: Path, registry: SeededRegistry, env: dict[str, str]
) -> None:
    config = write_policy(tmp_path / "policy.yaml", registry)
    manifest = tmp_path / "web.yaml"
    manifest.write_text(_with_volume(registry, image(registry, "oci-artifact")))
    mutated = run_kmultiarch(["mutate", "--config", str(config), str(manifest)], env=env)
    assert mutated.returncode == 0, mutated.stderr
    spec = yaml.safe_load(mutated.stdout)["spec"]["template"]["spec"]
    assert spec["tolerations"] == [
        {"key": "kubernetes.io/arch", "operator": "Equal", "value": "arm64", "effect": "NoSchedule"}
    ]
    assert "affinity" not in spec


def test_spec_verify_skips_an_image_volume_with_a_reason(
    tmp_path: Path, registry: SeededRegistry, env: dict[str, str]
) -> None:
    """An image volume starts no program: the liar (its arm64 manifest starts an x86-64
    busybox) as a volume is no platform-mismatch, and under enforce does not keep the pod off
    arm64; the report says why it was not judged."""
    with registry.client() as client:
        seeder = Seeder(client)
        seeder.push_manifest("volumes/honest", honest_image(), "1.0")
        seeder.push_manifest("volumes/liar", lying_image(), "1.0")
    config = write_policy(tmp_path / "policy.yaml", registry, {"verify": {"mode": "enforce"}})
    manifest = tmp_path / "web.yaml"
    manifest.write_text(
        deployment(
            "web",
            [f"{TEST_HOST}/volumes/honest:1.0"],
            extra_spec=(
                "      volumes:\n"
                "      - name: tools\n"
                f"        image: {{reference: {TEST_HOST}/volumes/liar:1.0}}\n"
            ),
        )
    )
    mutated = run_kmultiarch(["mutate", "--config", str(config), str(manifest)], env=env)
    assert mutated.returncode == 0, mutated.stderr
    assert "platform-mismatch" not in mutated.stderr and "claims linux/arm64" not in mutated.stderr
    spec = yaml.safe_load(mutated.stdout)["spec"]["template"]["spec"]
    assert spec["tolerations"][0]["value"] == "arm64"
    assert "affinity" not in spec
    report = run_kmultiarch(["report", "--config", str(config), str(manifest)], env=env)
    assert f"{TEST_HOST}/volumes/liar:1.0: skipped: an image volume starts no program" in (
        report.stdout
    )


def test_spec_verify_reads_no_layer_of_an_image_only_volumes_use(
    tmp_path: Path, registry: SeededRegistry, env: dict[str, str]
) -> None:
    """Skipped before any request: the registry's log holds no blob (nor child manifest) of
    the image a volume names, while the container's image is read and judged; the report
    says why, and nothing warns it unverified. The same image run by a container too is
    verified."""
    with registry.client() as client:
        seeder = Seeder(client)
        seeder.push_manifest("volumes/honest", honest_image(), "2.0")
        seeder.push_manifest("volumes/liar", lying_image(), "2.0")
    config = write_policy(tmp_path / "policy.yaml", registry, {"verify": {"mode": "enforce"}})
    volume = (
        "      volumes:\n"
        "      - name: tools\n"
        f"        image: {{reference: {TEST_HOST}/volumes/liar:2.0}}\n"
    )
    manifest = tmp_path / "web.yaml"
    manifest.write_text(deployment("web", [f"{TEST_HOST}/volumes/honest:2.0"], extra_spec=volume))

    log = registry.mark()
    mutated = run_kmultiarch(["mutate", "--config", str(config), str(manifest)], env=env)
    assert mutated.returncode == 0, mutated.stderr
    assert log.count("GET", "/volumes/honest/blobs/") > 0  # the container's image is verified
    assert log.count(path_contains="/volumes/liar/blobs/") == 0
    assert log.count("GET", "/volumes/liar/manifests/sha256:") == 0
    assert "not verified" not in mutated.stderr
    report = run_kmultiarch(["report", "--config", str(config), str(manifest)], env=env)
    assert f"{TEST_HOST}/volumes/liar:2.0: skipped: an image volume starts no program" in (
        report.stdout
    )
    # lock --verify records no verdict for it, and offline it is not said unverified
    lock = tmp_path / "kmultiarch.lock"
    log = registry.mark()
    locked = run_kmultiarch(
        ["lock", "--config", str(config), "-o", str(lock), str(manifest)], env=env
    )
    assert locked.returncode == 0, locked.stderr
    assert log.count(path_contains="/volumes/liar/blobs/") == 0
    offline = run_kmultiarch(
        ["mutate", "--offline", "--lock", str(lock), "--config", str(config), str(manifest)],
        env=env,
    )
    assert offline.returncode == 0, offline.stderr
    assert "not verified" not in offline.stderr, offline.stderr

    both = tmp_path / "both.yaml"
    both.write_text(deployment("job", [f"{TEST_HOST}/volumes/liar:2.0"], extra_spec=volume))
    log = registry.mark()
    checked = run_kmultiarch(["check", "--config", str(config), str(both)], env=env)
    assert log.count("GET", "/volumes/liar/blobs/") > 0
    assert "claims linux/arm64" in checked.stdout + checked.stderr
