"""Credentials out of the crash log (kmultiarch/cli/redaction.py), with tables of argv and
environments."""

from __future__ import annotations

import pytest

from kmultiarch.cli.redaction import redact, redacted_argv, scrub_urls, secrets_in

ARGV = [
    (
        ["kmultiarch", "inspect", "--cache-url", "redis://u:pw-1@h:6379/0", "nginx"],
        ["kmultiarch", "inspect", "--cache-url", "redis://***@h:6379/0", "nginx"],
    ),
    (["--cache-url=rediss://:p@ss/w@h/0"], ["--cache-url=rediss://***@h/0"]),
    (
        ["--cache-url", "redis://h/0?password=pw-2&db=1"],
        ["--cache-url", "redis://h/0?password=***&db=1"],
    ),
    (["--cache-url", "redis://u:p?w@h:99999/0"], ["--cache-url", "redis://***@h:99999/0"]),
    (
        ["--config", "https://u:tok@example.com/p.yaml"],
        ["--config", "https://***@example.com/p.yaml"],
    ),
    (["mutate", "-"], ["mutate", "-"]),
]


@pytest.mark.parametrize(("argv", "shown"), ARGV)
def test_argv_loses_the_credentials_of_its_urls(argv: list[str], shown: list[str]) -> None:
    assert redacted_argv(argv) == shown


def test_the_secrets_of_the_environment_and_of_urls_are_cut_anywhere() -> None:
    environment = {
        "KMULTIARCH_CACHE_KEY": "cache-key-0123456789",
        "KMULTIARCH_CACHE_URL": "redis://:url-pw-55@argocd-redis:6379/1",
        "REDIS_PASSWORD": "sidecar-pw-77",
        "GITHUB_TOKEN": "ghp_0123456789",
        "SOME_TOKEN_ENABLED": "true",  # too short to be cut: it would cut common words
        "HOME": "/home/me",
    }
    argv = ["kmultiarch", "--cache-url", "redis://u:argv%40pw@h/0?password=query-pw"]
    secrets = secrets_in(argv, environment)
    text = (
        "ValueError: cannot use cache-key-0123456789 at redis://u:argv@pw@h/0 with url-pw-55, "
        "sidecar-pw-77, ghp_0123456789 and query-pw; true home /home/me"
    )
    shown = redact(text, secrets)
    for secret in ("cache-key-0123456789", "argv@pw", "url-pw-55", "sidecar-pw-77"):
        assert secret not in shown
    assert "ghp_0123456789" not in shown and "query-pw" not in shown
    assert "true home /home/me" in shown


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("at redis://u:p@h/0.", "at redis://***@h/0."),
        ("'rediss://:p@h:1/0?password=x&db=2'", "'rediss://***@h:1/0?password=***&db=2'"),
        ("https://registry.example/v2/", "https://registry.example/v2/"),
    ],
)
def test_urls_in_text_lose_their_credentials(text: str, shown: str) -> None:
    assert scrub_urls(text) == shown
