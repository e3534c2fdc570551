"""The GitHub Actions runner's reading of a step's output, for tests that print into CI logs.

Follows actions/runner (``ActionCommandManager.TryProcessCommand``, ``ActionCommand.TryParseV2``
and ``TryParse``, ``ProcessInvoker`` reading with ``StreamReader.ReadLine``):

- output is cut into lines at ``\\r\\n``, ``\\r`` and ``\\n``; stdout and stderr alike;
- a line is a command when, after leading white space is trimmed, it reads
  ``::name props::data`` (v2), or else when it holds ``##[name props]data`` anywhere (v1);
- ``name`` must be a command the runner knows (compared without case);
- ``::stop-commands::TOKEN`` suspends commands until one whose name is ``TOKEN``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

#: Commands the runner registers (its command extensions, ``stop-commands`` included).
KNOWN_COMMANDS = frozenset(
    {
        "add-mask",
        "add-matcher",
        "add-path",
        "debug",
        "echo",
        "endgroup",
        "error",
        "group",
        "notice",
        "remove-matcher",
        "save-state",
        "set-env",
        "set-output",
        "stop-commands",
        "warning",
    }
)


@dataclass(frozen=True)
class Command:
    name: str
    properties: dict[str, str]
    data: str


def runner_lines(output: str) -> list[str]:
    """``output`` cut where .NET's ``StreamReader.ReadLine`` cuts it."""
    lines = re.split(r"\r\n|\r|\n", output)
    return lines[:-1] if lines and lines[-1] == "" else lines


def _parse_v2(line: str, known: set[str]) -> Command | None:
    message = line.lstrip()
    if not message.startswith("::"):
        return None
    end = message.find("::", 2)
    if end < 0:
        return None
    info = message[2:end]
    name, _, properties = info.partition(" ")
    if name.lower() not in known:
        return None
    pairs = {}
    for item in properties.strip().split(","):
        key, equals, value = item.partition("=")
        if item and equals and key and value:
            pairs[key] = _unescape(value, property_value=True)
    return Command(name.lower(), pairs, _unescape(message[end + 2 :], property_value=False))


def _parse_v1(line: str, known: set[str]) -> Command | None:
    start = line.find("##[")
    if start < 0:
        return None
    end = line.find("]", start)
    if end < 0:
        return None
    name, _, properties = line[start + 3 : end].partition(" ")
    if name.lower() not in known:
        return None
    pairs = {}
    for item in properties.split(";"):
        key, equals, value = item.partition("=")
        if item and equals and key and value:
            pairs[key] = value
    return Command(name.lower(), pairs, line[end + 1 :])


def _unescape(text: str, *, property_value: bool) -> str:
    text = text.replace("%0D", "\r").replace("%0A", "\n")
    if property_value:
        text = text.replace("%3A", ":").replace("%2C", ",")
    return text.replace("%25", "%")


def workflow_commands(*outputs: str) -> list[Command]:
    """The commands the runner acts on in ``outputs`` (a step's stdout, then its stderr)."""
    acted: list[Command] = []
    for output in outputs:
        known = set(KNOWN_COMMANDS)
        stop_token: str | None = None
        for line in runner_lines(output):
            command = _parse_v2(line, known) or _parse_v1(line, known)
            if command is None:
                continue
            if stop_token is not None:
                if command.name == stop_token:
                    known.discard(stop_token)
                    stop_token = None
                continue
            if command.name == "stop-commands":
                stop_token = command.data.lower()
                known.add(stop_token)
                continue
            acted.append(command)
    return acted
