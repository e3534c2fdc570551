"""What the catalogue tests of operators' kinds share: their samples, and a policy declaring the
images an operator chooses itself (``spec.podSpecs`` ``defaultImages``), as an air-gapped user
declares them."""

from __future__ import annotations

from pathlib import Path

from kmultiarch.core.policy.model import Policy
from kmultiarch.io.config import parse_policy_text

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "operators"


def sample(name: str) -> str:
    """An operator's sample, as tests/fixtures/operators holds it."""
    return (FIXTURES / name).read_text(encoding="utf-8")


def policy(spec: str) -> Policy:
    """A policy whose ``spec`` is this YAML text (its lines indented by two)."""
    return parse_policy_text(
        "apiVersion: kmultiarch.dev/v1alpha1\nkind: MultiArchPolicy\nmetadata: {name: p}\n"
        f"spec:\n{spec}",
        "policy.yaml",
    )


def declared_defaults(api_version: str, kind: str, *images: str) -> Policy:
    """A policy whose podSpecs entry for ``kind`` declares ``images`` as its defaultImages."""
    return policy(
        f"  podSpecs:\n  - apiVersion: {api_version}\n    kind: {kind}\n"
        f"    defaultImages: [{', '.join(images)}]\n"
    )
