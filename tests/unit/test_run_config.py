"""run.config.configure: what the user said for the run wins over the policy, which wins over
the defaults (here: spec.verify's mode against --verify)."""

from __future__ import annotations

import pytest

from kmultiarch.core.policy.model import Policy, ResolutionPolicy, VerifyMode, VerifySettings
from kmultiarch.core.policy.schema import policy_from_spec
from kmultiarch.run.config import RunRequest, configure

BOUNDS = {"maxBytes": 1048576, "maxExpandedBytes": 2097152, "deadline": 5}


@pytest.mark.parametrize(
    ("in_policy", "asked", "expected"),
    [
        (None, None, "off"),  # the default
        ("warn", None, "warn"),  # the policy's
        ("enforce", None, "enforce"),
        (None, "warn", "warn"),  # the option's
        ("enforce", "warn", "warn"),  # the option over the policy
        ("warn", "off", "off"),
        ("off", "enforce", "enforce"),
    ],
)
def test_the_request_wins_over_the_policy_which_wins_over_the_default(
    in_policy: VerifyMode | None, asked: VerifyMode | None, expected: VerifyMode
) -> None:
    spec = {"verify": {"mode": in_policy, **BOUNDS}} if in_policy else {}
    policy = policy_from_spec(spec, "policy.yaml")
    config = configure(policy, RunRequest(verify=asked))
    assert config.policy.resolution.verify.mode == expected
    if in_policy:
        # The option says the mode only: the policy's bounds stay.
        assert config.policy.resolution.verify == VerifySettings(expected, 1048576, 2097152, 5.0)
    # The rest of the policy is the policy's.
    assert config.policy.scheduling.platforms == policy.scheduling.platforms
    assert config.policy.source == "policy.yaml"


def test_a_request_that_says_nothing_keeps_the_policy_itself() -> None:
    policy = Policy(resolution=ResolutionPolicy(verify=VerifySettings("warn")))
    assert configure(policy).policy is policy
    assert configure(policy, RunRequest(verify="warn")).policy is policy
