"""Credentials out of the crash log: the log of an unexpected error holds the command line and a
traceback, and either may quote a URL with a password (``--cache-url``) or the value of an
environment variable that carries a secret (``$KMULTIARCH_CACHE_KEY``). Plain functions of the
argv and the environment they are given, so that they can be tested with tables.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from urllib.parse import parse_qsl, unquote

#: Options whose value may carry a credential: shown without it.
SECRET_OPTIONS = ("--cache-url",)
#: Environment variables kmultiarch reads that hold a secret or may carry one.
SECRET_ENVIRONMENT = ("KMULTIARCH_CACHE_URL", "KMULTIARCH_CACHE_KEY")
#: Other environment variables whose names say they hold a secret (REDIS_PASSWORD in an Argo CD
#: sidecar, a CI token): their values are cut wherever they appear.
_SECRET_NAME = re.compile(r"PASSWORD|PASSWD|SECRET|TOKEN|CREDENTIAL|AUTH|(^|_)KEY$", re.I)
#: Shorter values of such variables are left: they would cut common words (``true``).
_MIN_SECRET = 6
REDACTED = "***"
_USERINFO = re.compile(r"(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*://)[^/?#\s'\"]*@")
_QUERY_SECRET = re.compile(
    r"(?P<name>[?&;](?:password|passwd|pass|pwd|username|user|token|secret|key|auth)=)"
    r"[^&#\s'\"]*",
    re.I,
)


def redacted_argv(argv: Sequence[str]) -> list[str]:
    """``argv`` with the credentials of URLs cut, and the values of :data:`SECRET_OPTIONS`."""
    shown: list[str] = []
    follows_secret_option = False
    for argument in argv:
        if follows_secret_option:
            shown.append(_without_userinfo(argument))
        elif any(argument.startswith(option + "=") for option in SECRET_OPTIONS):
            option, _, value = argument.partition("=")
            shown.append(f"{option}={_without_userinfo(value)}")
        else:
            shown.append(scrub_urls(argument))
        follows_secret_option = argument in SECRET_OPTIONS
    return shown


def secrets_in(argv: Sequence[str], environment: Mapping[str, str]) -> list[str]:
    """The literal secrets a log must not hold: passwords in the URLs of argv and of the
    environment, and the values of the environment's secret variables."""
    found: set[str] = set()
    for name, value in environment.items():
        named = name in SECRET_ENVIRONMENT and value
        if named or (_SECRET_NAME.search(name) and len(value) >= _MIN_SECRET):
            found.add(value)
    for text in [*argv, *environment.values()]:
        if "://" in text:
            found.update(password for password in _url_passwords(text) if password)
    return sorted(found, key=len, reverse=True)


def redact(text: str, secrets: Sequence[str]) -> str:
    """``text`` with each of ``secrets`` (longest first) and every URL credential cut."""
    for secret in sorted(secrets, key=len, reverse=True):
        if secret:
            text = text.replace(secret, REDACTED)
    return scrub_urls(text)


def scrub_urls(text: str) -> str:
    """User info (``scheme://user:password@``) and credentials in query strings cut."""
    text = _USERINFO.sub(lambda match: match["scheme"] + REDACTED + "@", text)
    return _QUERY_SECRET.sub(lambda match: match["name"] + REDACTED, text)


def _without_userinfo(value: str) -> str:
    """An option's URL with everything up to its last ``@`` cut (a password may hold a raw
    ``@``, ``/`` or ``?`` that a URL parser would take for the host or the query), and its
    query's credentials."""
    scheme, separator, rest = value.partition("://")
    if separator and "@" in rest:
        rest = REDACTED + "@" + rest.rpartition("@")[2]
    return scrub_urls(f"{scheme}{separator}{rest}")


def _url_passwords(text: str) -> list[str]:
    passwords: list[str] = []
    for match in re.finditer(r"[A-Za-z][A-Za-z0-9+.-]*://(\S+)", text):
        rest = match[1]
        authority = rest.partition("?")[0]
        if "@" in authority:
            userinfo = authority.rpartition("@")[0]
            password = userinfo.partition(":")[2]
            passwords += [password, unquote(password)]
        query = rest.partition("?")[2].partition("#")[0]
        for name, value in parse_qsl(query, keep_blank_values=True):
            if name.lower() in ("password", "passwd", "pass", "pwd", "token", "secret", "key"):
                passwords += [value, unquote(value)]
    return [password for password in passwords if len(password) >= 3]
