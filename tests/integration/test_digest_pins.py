"""Digests pinned to one platform's manifest (issue 30, item 5), against the real registry:
``NAME:TAG@sha256:D`` where D is the amd64 manifest of the multi-arch index the tag names is a
``platform-pinned-digest`` error in ``check`` (every output format), naming the pinned
platform, the index digest and ``kmultiarch fix --repin``; the decision still uses what D runs
on; ``fix --repin`` rewrites the digest to the index digest and nothing else on the line, then
decides on the image it becomes; a tag that moved is a warning and is not rewritten. Before,
kmultiarch resolved the child and quietly narrowed the pod to amd64."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from support import SeededRegistry
from support.cli import clean_env, run_kmultiarch
from support.manifests import TEST_HOST, deployment, write_policy
from support.seed import SeededImage

REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return clean_env(tmp_path)


def _children(registry: SeededRegistry, key: str) -> dict[str, str]:
    """platform -> the digest of its manifest in the index of catalogue image ``key``."""
    index = json.loads(registry.images[key].manifest.data)
    return {
        f"{entry['platform']['os']}/{entry['platform']['architecture']}": entry["digest"]
        for entry in index["manifests"]
        if entry.get("platform", {}).get("os") not in (None, "unknown")
    }


def _tag_and_its_child(
    tmp_path: Path, registry: SeededRegistry, platform: str
) -> tuple[Path, SeededImage, str, Path]:
    """The policy, the multi-arch catalogue image, the digest of its ``platform`` manifest and
    a manifest naming the image by its tag (whose run reads the index)."""
    config = write_policy(tmp_path / "policy.yaml", registry)
    seeded = registry.images["multiarch-oci"]
    child = _children(registry, "multiarch-oci")[platform]
    tagged = tmp_path / "tagged.yaml"
    tagged.write_text(deployment("web", [f"{TEST_HOST}/{seeded.repository}:{seeded.tag}"]))
    return config, seeded, child, tagged


def _pinned(registry: SeededRegistry, key: str, digest: str) -> str:
    seeded = registry.images[key]
    return f"{TEST_HOST}/{seeded.repository}:{seeded.tag}@{digest}"


def test_a_pin_to_a_platform_manifest_is_reported_and_repinned(
    tmp_path: Path, registry: SeededRegistry, env: dict[str, str]
) -> None:
    config = write_policy(tmp_path / "policy.yaml", registry)
    child = _children(registry, "multiarch-oci")["linux/amd64"]
    index = registry.images["multiarch-oci"].digest
    pinned = _pinned(registry, "multiarch-oci", child)
    manifest = tmp_path / "web.yaml"
    manifest.write_text(deployment("web", [pinned]))
    original = manifest.read_text()

    checked = run_kmultiarch(["check", "--config", str(config), str(manifest)], env=env)
    assert checked.returncode == 1
    text = checked.stdout + checked.stderr
    assert "[platform-pinned-digest]" in text
    assert "pins the linux/amd64 manifest of the index tag" in text
    assert f"pin the index {index} instead" in text
    assert "kmultiarch fix --repin" in text
    for output in ("json", "sarif", "github", "gitlab", "markdown"):
        formatted = run_kmultiarch(
            ["check", "-o", output, "--config", str(config), str(manifest)], env=env
        )
        assert formatted.returncode == 1, output
        assert "platform-pinned-digest" in formatted.stdout, output
        assert index in formatted.stdout, output

    # the pin is real until fixed: the pod is decided on what the child runs on
    mutated = run_kmultiarch(["mutate", "--config", str(config), str(manifest)], env=env)
    assert mutated.returncode == 0, mutated.stderr
    spec = yaml.safe_load(mutated.stdout)["spec"]["template"]["spec"]
    assert spec["affinity"]["nodeAffinity"][REQUIRED]["nodeSelectorTerms"] == [
        {"matchExpressions": [{"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]}]}
    ]
    assert (
        "platform-pinned-digest" not in mutated.stderr or "pins the linux/amd64" in mutated.stderr
    )

    fixed = run_kmultiarch(["fix", "--repin", "--config", str(config), str(manifest)], env=env)
    assert fixed.returncode == 1, fixed.stderr
    assert "repinned 1 image to its index" in fixed.stdout
    after = manifest.read_text()
    repinned = pinned.replace(child, index)
    before_lines, after_lines = original.splitlines(), after.splitlines()
    changed = [(b, a) for b, a in zip(before_lines, after_lines, strict=False) if b != a]
    assert changed == [(f"        image: {pinned}", f"        image: {repinned}")]
    # decided on the index: multi-arch, so the toleration only
    pod = yaml.safe_load(after)["spec"]["template"]["spec"]
    assert "affinity" not in pod
    assert pod["tolerations"][0]["value"] == "arm64"
    again = run_kmultiarch(["check", "--config", str(config), str(manifest)], env=env)
    assert again.returncode == 0, again.stdout + again.stderr


def test_a_tag_that_moved_is_a_warning_and_is_not_rewritten(
    tmp_path: Path, registry: SeededRegistry, env: dict[str, str]
) -> None:
    config = write_policy(tmp_path / "policy.yaml", registry)
    # tag latest of a two-tag repository, pinned to the digest tag 1.0 names (a single amd64
    # manifest): not in latest's index, as when a tag is pushed again
    seeded = registry.images["two-tags-latest"]
    other = registry.images["two-tags-1.0"].digest
    pinned = f"{TEST_HOST}/{seeded.repository}:{seeded.tag}@{other}"
    manifest = tmp_path / "web.yaml"
    manifest.write_text(deployment("web", [pinned]))
    checked = run_kmultiarch(
        ["check", "-o", "json", "--config", str(config), str(manifest)], env=env
    )
    problems = [
        p for p in json.loads(checked.stdout)["problems"] if p["rule"] == "platform-pinned-digest"
    ]
    assert problems and all(p["level"] == "warning" for p in problems), checked.stdout
    assert "the tag moved" in problems[0]["message"]
    before = manifest.read_text()
    run_kmultiarch(["fix", "--repin", "--config", str(config), str(manifest)], env=env)
    assert pinned in manifest.read_text()
    assert manifest.read_text().count(pinned) == before.count(pinned)


def test_spec_repin_digests_makes_mutate_and_the_krm_function_repin(
    tmp_path: Path, registry: SeededRegistry, env: dict[str, str]
) -> None:
    config = write_policy(tmp_path / "policy.yaml", registry, {"repinDigests": True})
    child = _children(registry, "multiarch-oci")["linux/amd64"]
    index = registry.images["multiarch-oci"].digest
    pinned = _pinned(registry, "multiarch-oci", child)
    manifest = tmp_path / "web.yaml"
    manifest.write_text(deployment("web", [pinned]))

    mutated = run_kmultiarch(["mutate", "--config", str(config), str(manifest)], env=env)
    assert mutated.returncode == 0, mutated.stderr
    assert f"        image: {pinned.replace(child, index)}\n" in mutated.stdout
    pod = yaml.safe_load(mutated.stdout)["spec"]["template"]["spec"]
    assert "affinity" not in pod  # decided on the multi-arch index
    assert pod["tolerations"][0]["value"] == "arm64"
    assert "spec.repinDigests rewrites it" in mutated.stderr

    patched = run_kmultiarch(
        ["mutate", "--output", "patch", "--config", str(config), str(manifest)], env=env
    )
    assert patched.returncode == 0, patched.stderr
    [entry] = json.loads(patched.stdout)
    assert {
        "op": "replace",
        "path": "/spec/template/spec/containers/0/image",
        "value": pinned.replace(child, index),
    } in entry["patch"]

    policy = yaml.safe_load(config.read_text())
    resource_list = {
        "apiVersion": "config.kubernetes.io/v1",
        "kind": "ResourceList",
        "items": [yaml.safe_load(manifest.read_text())],
        "functionConfig": policy,
    }
    ran = run_kmultiarch(["fn"], env=env, stdin=yaml.safe_dump(resource_list))
    assert ran.returncode == 0, ran.stderr
    out = yaml.safe_load(ran.stdout)
    [container] = out["items"][0]["spec"]["template"]["spec"]["containers"]
    assert container["image"] == pinned.replace(child, index)
    assert any(
        r.get("tags", {}).get("rule") == "platform-pinned-digest"
        or "pins the linux/amd64" in r["message"]
        for r in out.get("results", [])
    )


def test_a_pin_to_the_tags_own_index_costs_a_head_once_then_nothing(
    tmp_path: Path, registry: SeededRegistry, env: dict[str, str]
) -> None:
    """Renovate writes NAME:TAG@DIGEST everywhere: the common, correct pin is settled by a HEAD
    of the tag (not counted by Docker Hub), recorded in the cache; a warm run asks nothing."""
    config = write_policy(tmp_path / "policy.yaml", registry)
    seeded = registry.images["multiarch-oci"]
    manifest = tmp_path / "web.yaml"
    manifest.write_text(
        deployment("web", [f"{TEST_HOST}/{seeded.repository}:{seeded.tag}@{seeded.digest}"])
    )
    cold = registry.mark()
    first = run_kmultiarch(["check", "--config", str(config), str(manifest)], env=env)
    assert "platform-pinned-digest" not in first.stdout + first.stderr
    assert cold.count("GET", f"/manifests/{seeded.tag}") == 0
    assert cold.count("HEAD", f"/manifests/{seeded.tag}") == 1
    warm = registry.mark()
    second = run_kmultiarch(["check", "--config", str(config), str(manifest)], env=env)
    assert second.returncode == first.returncode
    assert warm.requests() == []


def test_a_digest_without_a_tag_is_a_pin_when_the_lock_knows_its_index(
    tmp_path: Path, registry: SeededRegistry, env: dict[str, str]
) -> None:
    """NAME@DIGEST names no tag to ask: it is reported when the lock records an index of the
    repository listing the digest (lock --verify records each platform manifest's digest),
    offline too; without such a lock (nor a cache that read the index), nothing is said."""
    config, seeded, child, tagged = _tag_and_its_child(tmp_path, registry, "linux/amd64")
    lock = tmp_path / "kmultiarch.lock"
    locked = run_kmultiarch(
        ["lock", "--verify", "warn", "--config", str(config), "-o", str(lock), str(tagged)],
        env=env,
    )
    assert locked.returncode == 0, locked.stderr
    assert child in lock.read_text()

    bare = f"{TEST_HOST}/{seeded.repository}@{child}"
    manifest = tmp_path / "web.yaml"
    manifest.write_text(deployment("web", [bare]))
    without = run_kmultiarch(
        ["check", "--no-cache", "--config", str(config), str(manifest)], env=env
    )
    assert "platform-pinned-digest" not in without.stdout + without.stderr

    checked = run_kmultiarch(
        ["check", "--no-cache", "--lock", str(lock), "--config", str(config), str(manifest)],
        env=env,
    )
    assert checked.returncode == 1
    assert "[platform-pinned-digest]" in checked.stdout
    assert f"pin the index {seeded.digest} instead" in checked.stdout
    fixed = run_kmultiarch(
        ["fix", "--repin", "--lock", str(lock), "--config", str(config), str(manifest)], env=env
    )
    assert fixed.returncode == 1, fixed.stderr
    assert f"image: {TEST_HOST}/{seeded.repository}@{seeded.digest}\n" in manifest.read_text()


def test_spec_repin_digests_is_in_the_flux_component_and_the_helmrelease_patches(
    tmp_path: Path, registry: SeededRegistry, env: dict[str, str]
) -> None:
    """The Component of ``mutate --output kustomize`` (and the HelmRelease's post-renderer
    patches) gives what mutate writes, repins included: the image field of a container, of an
    item of a List and of an image volume replaced by the index digest, under the real
    kustomize. Before, the patches held the scheduling operations only: kustomize built the
    platform pin back."""
    from integration.test_flux_kustomize import (
        assert_same_resources,
        build,
        kustomization_of,
        write_kustomization,
    )

    config = write_policy(tmp_path / "policy.yaml", registry, {"repinDigests": True})
    child = _children(registry, "multiarch-oci")["linux/amd64"]
    index = registry.images["multiarch-oci"].digest
    pinned = _pinned(registry, "multiarch-oci", child)
    listed = yaml.safe_load(deployment("api", [pinned]))
    stream = (
        deployment(
            "web",
            [pinned],
            extra_spec=(
                f"      volumes:\n      - name: tools\n        image: {{reference: {pinned}}}\n"
            ),
        )
        + "---\n"
        + yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": [listed]})
    )
    original = kustomization_of(tmp_path / "original", stream)
    manifest = original / "r.yaml"
    mutated = run_kmultiarch(["mutate", "--config", str(config), str(manifest)], env=env)
    assert mutated.returncode == 0, mutated.stderr
    assert pinned not in mutated.stdout and mutated.stdout.count(pinned.replace(child, index)) == 3

    written = run_kmultiarch(
        [
            "mutate",
            "--output",
            "kustomize",
            "--output-dir",
            str(tmp_path / "kmultiarch"),
            "--config",
            str(config),
            str(manifest),
        ],
        env=env,
    )
    assert written.returncode == 0, written.stderr
    with_component = write_kustomization(
        tmp_path / "with",
        resources=["../original"],
        components=["../kmultiarch"],
    )
    built = build(with_component)
    assert pinned not in built
    assert_same_resources(built, mutated.stdout)

    post = run_kmultiarch(
        ["mutate", "--output", "helmrelease-patches", "--config", str(config), str(manifest)],
        env=env,
    )
    assert post.returncode == 0, post.stderr
    (renderer,) = yaml.safe_load(post.stdout)["postRenderers"]
    inline = write_kustomization(
        tmp_path / "inline", resources=["../original"], patches=renderer["kustomize"]["patches"]
    )
    assert_same_resources(build(inline), mutated.stdout)

    checked = run_kmultiarch(
        [
            "check",
            "--component",
            str(tmp_path / "kmultiarch"),
            "--config",
            str(config),
            str(manifest),
        ],
        env=env,
    )
    assert "the Component is up to date" in checked.stderr, checked.stdout + checked.stderr


def test_a_pin_to_a_platform_manifest_costs_one_get_of_the_tag_then_nothing(
    tmp_path: Path, registry: SeededRegistry, env: dict[str, str]
) -> None:
    """The index's answer (its digest, its children's digests and platforms) is kept in the
    cache: a warm run reports the same pin, and the same tag that moved, without a request.
    Before, every run asked the tag's manifest again. Offline, nothing is asked nor said."""
    config = write_policy(tmp_path / "policy.yaml", registry)
    seeded = registry.images["multiarch-oci"]
    child = _children(registry, "multiarch-oci")["linux/amd64"]
    moved = registry.images["two-tags-latest"]
    other = registry.images["two-tags-1.0"].digest
    manifest = tmp_path / "web.yaml"
    manifest.write_text(
        deployment(
            "web",
            [
                _pinned(registry, "multiarch-oci", child),
                f"{TEST_HOST}/{moved.repository}:{moved.tag}@{other}",
            ],
        )
    )

    def problems(stdout: str) -> list[tuple[str, str]]:
        return sorted(
            (p["level"], p["message"])
            for p in json.loads(stdout)["problems"]
            if p["rule"] == "platform-pinned-digest"
        )

    command = ["check", "-o", "json", "--config", str(config), str(manifest)]
    cold = registry.mark()
    first = run_kmultiarch(command, env=env)
    assert first.returncode == 1, first.stderr
    assert cold.count("GET", f"{seeded.repository}/manifests/{seeded.tag}") == 1
    assert cold.count("GET", f"{moved.repository}/manifests/{moved.tag}") == 1
    found = problems(first.stdout)
    assert [level for level, _ in found] == ["error", "warning"], found
    assert seeded.digest in found[0][1] and "the tag moved" in found[1][1]

    warm = registry.mark()
    second = run_kmultiarch(command, env=env)
    assert warm.requests() == []
    assert second.returncode == 1
    assert problems(second.stdout) == found

    offline = run_kmultiarch([*command, "--offline"], env=env)
    assert problems(offline.stdout) == []


def test_past_the_tag_ttl_a_platform_pin_costs_a_head_and_no_get(
    tmp_path: Path, registry: SeededRegistry, env: dict[str, str]
) -> None:
    """The tag's record stale (--cache-ttl 0): the HEAD's digest finds the index's recorded
    entries, and the tag's manifest is not read again."""
    config = write_policy(tmp_path / "policy.yaml", registry)
    seeded = registry.images["multiarch-oci"]
    child = _children(registry, "multiarch-oci")["linux/amd64"]
    manifest = tmp_path / "web.yaml"
    manifest.write_text(deployment("web", [_pinned(registry, "multiarch-oci", child)]))
    command = ["check", "--cache-ttl", "0", "--config", str(config), str(manifest)]
    first = run_kmultiarch(command, env=env)
    assert "[platform-pinned-digest]" in first.stdout, first.stdout + first.stderr
    stale = registry.mark()
    second = run_kmultiarch(command, env=env)
    assert second.stdout == first.stdout
    tag = f"{seeded.repository}/manifests/{seeded.tag}"
    assert stale.count("GET", tag) == 0
    assert stale.count("HEAD", tag) == 1


def test_fix_repin_leaves_a_config_maps_data_and_a_skipped_workload_as_they_are(
    tmp_path: Path, registry: SeededRegistry, env: dict[str, str]
) -> None:
    """Issue 36, item 9: ``fix --repin`` rewrites the image fields of the pods it places and
    nothing else: a ConfigMap's ``data`` writing the same reference and a workload annotated
    ``kmultiarch.dev/skip`` stay byte for byte, and the summary line says how many were left
    and on which lines. Before, the reference was replaced across the file's text."""
    from support.manifests import line_of

    config = write_policy(tmp_path / "policy.yaml", registry)
    child = _children(registry, "multiarch-oci")["linux/amd64"]
    index = registry.images["multiarch-oci"].digest
    pinned = _pinned(registry, "multiarch-oci", child)
    config_map = (
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: launcher\n"
        f'data:\n  image: "{pinned}"\n'
    )
    skipped = deployment("legacy", [pinned]).replace(
        "  namespace: default\n",
        "  namespace: default\n  annotations:\n    kmultiarch.dev/skip: 'true'\n",
    )
    manifest = tmp_path / "web.yaml"
    manifest.write_text("---\n".join([deployment("web", [pinned]), config_map, skipped]))
    original = manifest.read_text()

    fixed = run_kmultiarch(["fix", "--repin", "--config", str(config), str(manifest)], env=env)
    assert fixed.returncode == 1, fixed.stderr
    after = manifest.read_text()
    changed = [
        (b, a) for b, a in zip(original.splitlines(), after.splitlines(), strict=False) if b != a
    ]
    assert changed[0] == (
        f"        image: {pinned}",
        f"        image: {pinned.replace(child, index)}",
    )
    assert config_map in after and skipped in after
    lines = f"lines {line_of(original, pinned, 2)}, {line_of(original, pinned, 3)}"
    assert "repinned 1 image to its index" in fixed.stdout
    assert f"2 other occurrences of {pinned!r} left as they are ({lines})" in fixed.stdout
    assert "[platform-pinned-digest]" not in fixed.stdout + fixed.stderr


def test_a_digest_without_a_tag_is_a_pin_when_the_cache_knows_its_index(
    tmp_path: Path, registry: SeededRegistry, env: dict[str, str]
) -> None:
    """Issue 36, item 10: with the cache warm (the tag was resolved: its index read) and no
    lock, ``NAME@DIGEST`` of one of the index's platform manifests is reported, and ``fix
    --repin`` writes the index digest, without asking the tag again. Before, only a lock
    answered it: nothing was said."""
    config, seeded, child, tagged = _tag_and_its_child(tmp_path, registry, "linux/amd64")
    warmed = run_kmultiarch(["check", "--config", str(config), str(tagged)], env=env)
    assert "platform-pinned-digest" not in warmed.stdout + warmed.stderr

    manifest = tmp_path / "web.yaml"
    manifest.write_text(deployment("web", [f"{TEST_HOST}/{seeded.repository}@{child}"]))
    asked = registry.mark()
    checked = run_kmultiarch(["check", "--config", str(config), str(manifest)], env=env)
    assert checked.returncode == 1, checked.stdout + checked.stderr
    assert "[platform-pinned-digest]" in checked.stdout
    assert f"pins the linux/amd64 manifest of the index tag {seeded.tag} names" in checked.stdout
    assert f"pin the index {seeded.digest} instead" in checked.stdout
    assert asked.count("GET", f"/manifests/{seeded.tag}") == 0
    assert asked.count("HEAD", f"/manifests/{seeded.tag}") == 0

    offline = run_kmultiarch(
        ["check", "--offline", "--config", str(config), str(manifest)], env=env
    )
    assert "platform-pinned-digest" not in offline.stdout + offline.stderr

    fixed = run_kmultiarch(["fix", "--repin", "--config", str(config), str(manifest)], env=env)
    assert fixed.returncode == 1, fixed.stderr
    assert f"image: {TEST_HOST}/{seeded.repository}@{seeded.digest}\n" in manifest.read_text()


def test_a_digest_without_a_tag_is_a_pin_when_the_shared_cache_knows_its_index(
    tmp_path: Path, registry: SeededRegistry
) -> None:
    """The same through the shared level: runner A reads the index (its tag); runner B, with
    an empty disk cache and no lock, reports B's NAME@DIGEST from what A recorded in Redis."""
    from support.redis_server import RedisServer

    config, seeded, child, tagged = _tag_and_its_child(tmp_path, registry, "linux/arm64")
    manifest = tmp_path / "web.yaml"
    manifest.write_text(deployment("web", [f"{TEST_HOST}/{seeded.repository}@{child}"]))
    with RedisServer(tmp_path / "redis") as redis:

        def runner(name: str) -> dict[str, str]:
            return clean_env(
                tmp_path,
                {"KMULTIARCH_CACHE_DIR": str(tmp_path / name), "KMULTIARCH_CACHE_URL": redis.url},
            )

        first = run_kmultiarch(["check", "--config", str(config), str(tagged)], env=runner("a"))
        assert first.returncode in (0, 1), first.stderr
        checked = run_kmultiarch(["check", "--config", str(config), str(manifest)], env=runner("b"))
    assert "[platform-pinned-digest]" in checked.stdout, checked.stdout + checked.stderr
    assert "pins the linux/arm64 manifest" in checked.stdout
    assert f"pin the index {seeded.digest} instead" in checked.stdout
