"""Loading a MultiArchPolicy from a file or text: the edge around the pure model in policy.py."""

from __future__ import annotations

import os
from pathlib import Path

from kmultiarch.errors import ManifestStreamError, PolicyError
from kmultiarch.policy import CONFIG_ENV, Policy, policy_from_object
from kmultiarch.yamlstream import read_single_document


def load_policy(path: str | os.PathLike[str] | None) -> Policy:
    """Load the policy at ``path``, or ``$KMULTIARCH_CONFIG``, or return the defaults."""
    if path is None:
        path = os.environ.get(CONFIG_ENV) or None
    if path is None:
        return Policy()
    source = os.fspath(path)
    try:
        text = Path(source).read_text(encoding="utf-8")
    except FileNotFoundError as exc:
        raise PolicyError(f"{source}: policy file not found") from exc
    except (OSError, UnicodeDecodeError) as exc:
        raise PolicyError(f"{source}: cannot read policy file: {exc}") from exc
    return parse_policy_text(text, source)


def parse_policy_text(text: str, source: str) -> Policy:
    try:
        document = read_single_document(text, source)
    except ManifestStreamError as exc:
        raise PolicyError(f"{exc} (policy is not valid YAML)") from exc
    return policy_from_object(document, source)
