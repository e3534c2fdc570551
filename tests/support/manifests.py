"""Manifests and policies for CLI tests: images are named ``registry.test/<repository>:<tag>``
and the policy mirrors ``registry.test`` to a live test registry, so texts are fixed."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from . import SeededRegistry

TEST_HOST = "registry.test"


def image(registry: SeededRegistry, key: str) -> str:
    """``registry.test/<repository>:<tag>`` of catalogue image ``key``."""
    seeded = registry.images[key]
    return f"{TEST_HOST}/{seeded.repository}:{seeded.tag}"


def deployment(
    name: str,
    images: Sequence[str],
    *,
    namespace: str = "default",
    extra_spec: str = "",
) -> str:
    """A Deployment with one container per image (``c0``, ``c1``...); ``extra_spec`` is YAML
    text added to the pod spec at its indentation."""
    containers = "".join(
        f"      - name: c{index}\n        image: {reference}\n"
        for index, reference in enumerate(images)
    )
    return (
        "apiVersion: apps/v1\n"
        "kind: Deployment\n"
        "metadata:\n"
        f"  name: {name}\n"
        f"  namespace: {namespace}\n"
        "spec:\n"
        "  selector:\n"
        f"    matchLabels: {{app: {name}}}\n"
        "  template:\n"
        "    metadata:\n"
        f"      labels: {{app: {name}}}\n"
        "    spec:\n"
        "      containers:\n"
        f"{containers}{extra_spec}"
    )


def write_policy(
    path: Path, registry: SeededRegistry, spec: Mapping[str, Any] | None = None
) -> Path:
    """A MultiArchPolicy with ``spec`` whose registries mirror registry.test to ``registry``."""
    full_spec: dict[str, Any] = dict(spec or {})
    registries = dict(full_spec.get("registries") or {})
    registries[TEST_HOST] = {"mirror": registry.url}
    full_spec["registries"] = registries
    document = {
        "apiVersion": "kmultiarch.dev/v1alpha1",
        "kind": "MultiArchPolicy",
        "metadata": {"name": "test"},
        "spec": full_spec,
    }
    path.write_text(yaml.safe_dump(document, sort_keys=False))
    return path


def line_of(text: str, fragment: str, occurrence: int = 1) -> int:
    """The 1-based line of the ``occurrence``-th line containing ``fragment``."""
    seen = 0
    for number, line in enumerate(text.splitlines(), start=1):
        if fragment in line:
            seen += 1
            if seen == occurrence:
                return number
    raise AssertionError(f"{fragment!r} not found {occurrence} times")


def policy_workspace(directory: Path, registry: SeededRegistry, manifests: str) -> Path:
    """A repository folder holding ``policy.yaml`` (registry.test mirrored to ``registry``) and
    ``operators.yaml`` (``manifests``): what the operators' command-line tests run in."""
    directory.mkdir()
    write_policy(directory / "policy.yaml", registry)
    (directory / "operators.yaml").write_text(manifests)
    return directory
