"""spec.cache in a MultiArchPolicy: the shared level's URL, CA and signing key (keyFile, or key
written in the policy), validated without quoting the key."""

from __future__ import annotations

from pathlib import Path

import pytest

from kmultiarch.core.policy.model import Policy
from kmultiarch.core.policy.schema import policy_from_object
from kmultiarch.errors import PolicyError

SECRET = "a-key-of-at-least-16-characters"


def _policy(cache: object, base_dir: Path) -> Policy:
    document = {
        "apiVersion": "kmultiarch.dev/v1alpha1",
        "kind": "MultiArchPolicy",
        "spec": {"cache": cache},
    }
    return policy_from_object(document, "policy.yaml", base_dir=base_dir)


def test_key_file_is_relative_to_the_policy_and_key_is_never_shown(tmp_path: Path) -> None:
    policy = _policy({"url": "redis://h/1", "keyFile": "secrets/cache.key"}, tmp_path)
    assert policy.resolution.cache.key_file == tmp_path / "secrets/cache.key"
    literal = _policy({"url": "redis://h/1", "key": SECRET}, tmp_path)
    assert literal.resolution.cache.key == SECRET
    assert SECRET not in repr(literal)


@pytest.mark.parametrize(
    ("cache", "message"),
    [
        ({"keyFile": 3}, "spec.cache.keyFile: expected the path of a file"),
        ({"keyFile": ""}, "spec.cache.keyFile: expected the path of a file"),
        ({"key": "short-secret"}, "spec.cache.key: expected a string of at least 16"),
        ({"key": ["x" * 20]}, "spec.cache.key: expected a string"),
        ({"key": SECRET, "keyFile": "k"}, "give keyFile or key, not both"),
        ({"keys": SECRET}, "keys"),
    ],
)
def test_bad_keys_are_refused_without_quoting_them(
    cache: dict[str, object], message: str, tmp_path: Path
) -> None:
    with pytest.raises(PolicyError, match=message) as refused:
        _policy({"url": "redis://h/1", **cache}, tmp_path)
    assert "short-secret" not in str(refused.value)
