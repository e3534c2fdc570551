"""``spec.verify`` of a MultiArchPolicy: the mode and the bounds, good and bad."""

from __future__ import annotations

import pytest

from kmultiarch.core.policy.model import VerifySettings
from kmultiarch.errors import PolicyError
from kmultiarch.io.config import parse_policy_text

HEAD = "apiVersion: kmultiarch.dev/v1alpha1\nkind: MultiArchPolicy\nmetadata: {name: p}\nspec:\n"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", VerifySettings()),
        ("  verify: {mode: warn}\n", VerifySettings("warn")),
        ("  verify: {mode: enforce, deadline: 5}\n", VerifySettings("enforce", deadline=5.0)),
        # YAML 1.1 reads an unquoted off as false: it means off.
        ("  verify: {mode: off}\n", VerifySettings("off")),
        ("  verify: {mode: 'off'}\n", VerifySettings("off")),
        (
            "  verify: {mode: warn, maxBytes: 1048576, maxExpandedBytes: 2097152}\n",
            VerifySettings("warn", 1048576, 2097152),
        ),
    ],
)
def test_good_settings(text: str, expected: VerifySettings) -> None:
    assert parse_policy_text(HEAD + text, "p.yaml").resolution.verify == expected


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("  verify: warn\n", "spec.verify: expected a mapping like {mode: warn}"),
        ("  verify: {mode: strict}\n", "spec.verify.mode: expected one of off, warn, enforce"),
        ("  verify: {mode: true}\n", "spec.verify.mode: expected one of off, warn, enforce"),
        ("  verify: {maxBytes: 64Mi}\n", "spec.verify.maxBytes: expected a number above 0"),
        ("  verify: {deadline: 0}\n", "spec.verify.deadline: expected a number above 0"),
        ("  verify: {budget: 3}\n", "budget"),
    ],
)
def test_bad_settings_are_one_line(text: str, message: str) -> None:
    with pytest.raises(PolicyError) as raised:
        parse_policy_text(HEAD + text, "p.yaml")
    assert str(raised.value).startswith("p.yaml: ")
    assert message in str(raised.value)
