"""Outside text on every way out (issue 13, second round): usage errors, file names that are not
UTF-8, the runner's older ``##[command]`` form, text-mode diffs, a real terminal, the crash
handler. Each test ran against the code before its fix and failed."""

from __future__ import annotations

import os
import pty
import select
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest
from support import SeededRegistry
from support.cli import clean_env, run_kmultiarch
from support.manifests import deployment, image, write_policy
from support.workflow_commands import workflow_commands

#: What a pull request may put in a resource name: a line break, commands in both of the
#: runner's forms, an OSC sequence that retitles a terminal.
HOSTILE_NAME = (
    "web\\n::error file=forged::forged\\r##[add-mask]hunter2 ##[stop-commands]x\\e]0;pwned\\a"
)


def _hostile_deployment(reference: str) -> str:
    return deployment("PLACEHOLDER", [reference]).replace(
        "name: PLACEHOLDER\n", f'name: "{HOSTILE_NAME}"\n', 1
    )


@pytest.mark.parametrize(
    "args",
    [
        ["check", "--output", "x\n::error::forged-by-option\x1b]0;pwned\x07"],
        ["mutate", "--cache-ttl", "1\r::add-mask::hunter2", "-"],
        ["check", "--skip-non-manifests", "--output", "##[error]forged"],
    ],
    ids=["choice", "float", "v1-command"],
)
def test_usage_errors_show_the_bad_value_escaped(tmp_path: Path, args: list[str]) -> None:
    """click's own message quoted the value raw: a line break in an option value started a
    line of its own on stderr (a workflow command), ESC reached the terminal."""
    result = run_kmultiarch(args, env=clean_env(tmp_path), stdin="")
    assert result.returncode == 2, result.stderr
    assert "Error: Invalid value" in result.stderr
    assert workflow_commands(result.stdout, result.stderr) == [], result.stderr
    assert "\x1b" not in result.stderr
    assert len([line for line in result.stderr.splitlines() if line]) == 3  # usage, hint, error


def _not_utf8(directory: Path, name: bytes, text: str) -> Path:
    path = Path(os.fsdecode(bytes(directory) + b"/" + name))
    path.write_text(text)
    return path


@pytest.mark.parametrize("output", ["text", "github", "json", "sarif"])
def test_a_file_name_that_is_not_utf8_is_shown_not_a_crash(
    registry: SeededRegistry, tmp_path: Path, output: str
) -> None:
    """A file name with a byte that is not UTF-8 (Latin-1 'é' from an old archive) made check
    crash with exit 3 (UnicodeEncodeError) when it printed the name."""
    path = _not_utf8(
        tmp_path, b"caf\xe9.yaml", deployment("app", [image(registry, "multiarch-oci")])
    )
    policy = write_policy(tmp_path / "policy.yaml", registry)
    diff = ["--diff"] if output != "sarif" else []  # SARIF has no diffs
    result = run_kmultiarch(
        ["check", *diff, "--output", output, "--config", str(policy), str(path)],
        env=clean_env(tmp_path),
    )
    assert result.returncode == 1, result.stderr
    assert "caf" in result.stdout and "Deployment" in result.stdout
    if output in ("text", "github"):
        assert "caf\\xe9.yaml" in result.stdout


def test_fix_and_the_warnings_file_take_a_name_that_is_not_utf8(
    registry: SeededRegistry, tmp_path: Path
) -> None:
    """$KMULTIARCH_WARNINGS_FILE was written as strict UTF-8: a name that is not UTF-8 in any
    warning turned it into a traceback. fix printed the name raw."""
    path = _not_utf8(
        tmp_path, b"caf\xe9\x1b[2J.yaml", deployment("app", [image(registry, "multiarch-oci")])
    )
    missing = Path(os.fsdecode(bytes(tmp_path) + b"/gone\xff.yaml"))
    policy = write_policy(tmp_path / "policy.yaml", registry)
    warnings = tmp_path / "warnings.log"
    env = clean_env(tmp_path, {"KMULTIARCH_WARNINGS_FILE": str(warnings)})
    gone = run_kmultiarch(["check", "--config", str(policy), str(missing)], env=env)
    assert gone.returncode == 2, gone.stderr
    assert "gone\\xff.yaml" in gone.stderr
    assert "gone\\xff.yaml" in warnings.read_text()
    fixed = run_kmultiarch(["fix", "--config", str(policy), str(path)], env=env)
    assert fixed.returncode == 1, fixed.stderr
    assert "fixed " in fixed.stdout and "caf\\xe9\\x1b[2J.yaml" in fixed.stdout
    assert "\x1b" not in fixed.stdout
    assert "tolerations" in path.read_text()


def test_no_outside_text_starts_a_command_in_any_output(
    registry: SeededRegistry, tmp_path: Path
) -> None:
    """The runner also acts on '##[name]data' anywhere in a line, on stderr as on stdout, and
    on '::' after any white space: a resource name or file name could still forge or mask
    annotations through warnings and the text table, and text-mode diffs printed manifest
    lines (and file names) raw."""
    directory = tmp_path / "manifests"
    directory.mkdir()
    unresolvable = directory / "a.yaml"
    unresolvable.write_text(_hostile_deployment("registry.test/does-not-exist:1.0"))
    needs_change = directory / "::error::forged-by-file-name.yaml"
    needs_change.write_text(
        deployment("app", [image(registry, "multiarch-oci")]).replace(
            "      containers:\n",
            "      containers:\n      - name: x\n        image: "
            + image(registry, "multiarch-oci")
            + "\n        args:\n        - |\n          ::add-mask::hunter2\n"
            "          ##[add-mask]hunter3\n",
        )
    )
    policy = write_policy(tmp_path / "policy.yaml", registry)
    env = clean_env(tmp_path)
    runs = {
        "mutate": ["mutate"],
        "check-text": ["check", "--diff", "-o", "text"],
        "check-github": ["check", "--diff", "-o", "github"],
        "report": ["report"],
    }
    for what, args in runs.items():
        result = run_kmultiarch([*args, "--config", str(policy), str(directory)], env=env)
        assert result.returncode in (0, 1), (what, result.stderr)
        if what == "mutate":
            # The manifests themselves are the output: only stderr is kmultiarch's text.
            commands = workflow_commands(result.stderr)
        else:
            commands = workflow_commands(result.stdout, result.stderr)
        assert all(c.name in ("error", "warning") for c in commands), (what, commands)
        if what != "check-github":
            assert commands == [], (what, commands)
        for command in commands:
            assert "\n" not in command.data and "\r" not in command.data, command
        assert "\x1b" not in result.stderr and (what == "mutate" or "\x1b" not in result.stdout)


def _run_on_a_terminal(args: list[str], env: dict[str, str], cwd: Path) -> bytes:
    """Run kmultiarch with stdout and stderr on one real pseudo-terminal; what it printed."""
    controller, terminal = pty.openpty()
    process = subprocess.Popen(
        [sys.executable, "-m", "kmultiarch", *args],
        stdin=subprocess.DEVNULL,
        stdout=terminal,
        stderr=terminal,
        env=env,
        cwd=cwd,
    )
    os.close(terminal)
    chunks = []
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        ready, _, _ = select.select([controller], [], [], 1)
        if not ready:
            if process.poll() is not None:
                break
            continue
        try:
            chunk = os.read(controller, 65536)
        except OSError:  # EIO: the last writer closed the terminal
            break
        if not chunk:
            break
        chunks.append(chunk)
    process.wait(timeout=30)
    os.close(controller)
    return b"".join(chunks)


def test_a_terminal_receives_no_escape_sequence_from_the_input(
    registry: SeededRegistry, tmp_path: Path
) -> None:
    """On a real terminal: a file name holding an OSC title sequence and a screen clear, shown
    by check's text-mode diff header and by mutate's warnings, reached the terminal raw."""
    name = "app\x1b]0;pwned\x07\x1b[2J.yaml"
    (tmp_path / name).write_text(deployment("app", [image(registry, "multiarch-oci")]))
    (tmp_path / "b.yaml").write_text(_hostile_deployment("registry.test/does-not-exist:1.0"))
    policy = write_policy(tmp_path / "policy.yaml", registry)
    env = clean_env(tmp_path)
    shown = _run_on_a_terminal(
        ["check", "--diff", "-o", "text", "--config", str(policy), name, "b.yaml"], env, tmp_path
    )
    assert b"NEEDS CHANGE" in shown, shown
    assert b"\x1b]" not in shown and b"\x1b[2J" not in shown and b"\x07" not in shown, shown
    assert b"app\\x1b]0;pwned\\x07\\x1b[2J.yaml" in shown


CRASHING = """\
import sys

import kmultiarch.cli.commands.mutate as command


def crash(*args, **kwargs):
    # An unexpected failure whose message quotes input: a Secret's value, a name that is not
    # UTF-8, a check mark, a lot of it.
    raise ValueError("password: hunter2 \\udce9 \\u2713 " + "secret " * 50000)


command.collect_inputs = crash
from kmultiarch.__main__ import main

sys.exit(main(sys.argv[1:]))
"""


def test_the_crash_line_is_short_names_its_log_and_quotes_no_input(tmp_path: Path) -> None:
    """An unexpected error whose message held a character the log's encoding refused failed
    again inside the crash handler: Python printed both tracebacks, the input quoted in them."""
    script = tmp_path / "crash.py"
    script.write_text(CRASHING)
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    env = clean_env(
        tmp_path,
        {"LC_ALL": "C", "LANG": "C", "PYTHONIOENCODING": "ascii", "TMPDIR": str(temporary)},
    )
    completed = subprocess.run(
        [sys.executable, str(script), "mutate", "-"],
        input=b"",
        capture_output=True,
        env=env,
        timeout=60,
        check=False,
    )
    stderr = completed.stderr.decode("utf-8", "replace")
    assert completed.returncode == 3, stderr[-2000:]
    assert completed.stdout == b""
    assert len(stderr.splitlines()) == 1 and len(stderr) < 300, stderr[:2000]
    assert "ValueError" in stderr and "hunter2" not in stderr and "secret" not in stderr
    logs = list(temporary.glob("kmultiarch-crash-*.log"))
    assert len(logs) == 1 and str(logs[0]) in stderr
    assert stat.S_IMODE(logs[0].stat().st_mode) == 0o600
    log = logs[0].read_text(encoding="utf-8")
    assert "Traceback" in log and "hunter2" in log and "\\udce9" in log and "\u2713" in log
