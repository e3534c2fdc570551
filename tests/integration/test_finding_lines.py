"""One line per finding in every command (issue 25): the same unresolved image is reported on
the same line (the line of the container's image) by ``check``, ``mutate``, the standalone
function (the kustomize exec plugin's form) and ``report``, from a file and from stdin."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from support.cli import clean_env, run_kmultiarch
from support.tools import EXAMPLES

DEMO = EXAMPLES / "demo"
IMAGE = "docker.io/library/mysql:5.7"


@pytest.fixture
def demo(tmp_path: Path) -> Path:
    """The demo with a lock that lacks the database's image."""
    target = tmp_path / "demo"
    shutil.copytree(DEMO, target)
    lock = target / "kmultiarch.lock"
    lock.write_text(
        re.sub(rf"  {re.escape(IMAGE)}:\n(    .*\n)+", "", lock.read_text()),
    )
    assert IMAGE not in lock.read_text()
    return target


def _image_line(text: str) -> int:
    (number,) = [n for n, line in enumerate(text.splitlines(), 1) if f"image: {IMAGE}" in line]
    return number


def _reported_lines(output: str, source: str) -> set[int]:
    return {
        int(match)
        for match in re.findall(rf"{re.escape(source)}:(\d+):[^\n]*{re.escape(IMAGE)}", output)
    }


@pytest.mark.parametrize(
    "command",
    [
        ["check"],
        ["mutate"],
        ["fn", "policy.yaml"],
    ],
    ids=lambda command: command[0],
)
def test_the_unresolved_image_is_reported_on_its_line_from_a_file_and_from_stdin(
    demo: Path, command: list[str]
) -> None:
    env = clean_env(demo.parent, {"KMULTIARCH_LOCK": "kmultiarch.lock", "KMULTIARCH_OFFLINE": "1"})
    config = [] if command[0] == "fn" else ["--config", "policy.yaml"]
    database = demo / "manifests" / "database.yaml"
    from_file = run_kmultiarch([*command, *config, "manifests/database.yaml"], env=env, cwd=demo)
    assert from_file.returncode == 1
    assert _reported_lines(from_file.stdout + from_file.stderr, "manifests/database.yaml") == {
        _image_line(database.read_text())
    }
    # A stream on stdin as kustomize sends it: other documents first, no Helm source comment.
    stream = "".join(
        path.read_text().replace("# Source: ", "# was: ") + "---\n"
        for path in sorted((demo / "manifests").glob("*.yaml"))
    )
    from_stdin = run_kmultiarch([*command, *config], env=env, cwd=demo, stdin=stream)
    assert from_stdin.returncode == 1
    assert _reported_lines(from_stdin.stdout + from_stdin.stderr, "<stdin>") == {
        _image_line(stream)
    }
