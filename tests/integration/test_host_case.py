"""Host names are case-insensitive (issue 21): ``LOCALHOST:5000`` and ``localhost:5000`` are one
registry, so one cache entry and one lock entry, not two that can disagree. Real registry."""

from __future__ import annotations

from pathlib import Path

from support import SeededRegistry
from support.cli import clean_env, run_kmultiarch

KEY = "multiarch-oci"


def _spelt(registry: SeededRegistry, host: str) -> str:
    image = registry.images[KEY]
    port = registry.host.rpartition(":")[2]
    return f"{host}:{port}/{image.repository}:{image.tag}"


def test_the_cache_answers_a_host_spelt_in_another_case_without_a_request(
    registry: SeededRegistry, tmp_path: Path
) -> None:
    env = clean_env(tmp_path, {"KMULTIARCH_CACHE_DIR": str(tmp_path / "cache")})
    first = run_kmultiarch(["inspect", "-o", "json", _spelt(registry, "localhost")], env=env)
    assert first.returncode == 0, first.stderr
    log = registry.mark()
    second = run_kmultiarch(["inspect", "-o", "json", _spelt(registry, "LOCALHOST")], env=env)
    assert second.returncode == 0, second.stderr
    assert log.requests() == [], "the second spelling is the same cache entry"
    assert second.json()[0]["platforms"] == first.json()[0]["platforms"]
    assert second.json()[0]["image"] == first.json()[0]["image"]


def test_a_lock_made_for_one_spelling_serves_the_other_offline(
    registry: SeededRegistry, tmp_path: Path
) -> None:
    env = clean_env(tmp_path, {"KMULTIARCH_CACHE_DIR": str(tmp_path / "cache")})
    pod = (
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: app\nspec:\n  containers:\n"
        "  - name: app\n    image: {image}\n"
    )
    locked = tmp_path / "locked.yaml"
    locked.write_text(pod.format(image=_spelt(registry, "LOCALHOST")))
    lock = tmp_path / "kmultiarch.lock"
    made = run_kmultiarch(["lock", "-o", str(lock), str(locked)], env=env)
    assert made.returncode == 0, made.stderr
    assert "localhost:" in lock.read_text() and "LOCALHOST" not in lock.read_text()
    rendered = tmp_path / "rendered.yaml"
    rendered.write_text(pod.format(image=_spelt(registry, "localhost")))
    log = registry.mark()
    run = run_kmultiarch(
        ["mutate", "--no-cache", "--lock", str(lock), "--offline", str(rendered)], env=env
    )
    assert run.returncode == 0, run.stderr
    assert log.requests() == []
    assert "kubernetes.io/arch" in run.stdout
