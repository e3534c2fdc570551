"""A copy of this repository as a fresh clone has it: the files git tracks, and the new ones it
does not ignore (so that a change under test is in the copy), nothing it ignores (caches,
build output, ``.tools``)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from .tools import REPO


def copy_checkout(target: Path) -> Path:
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        capture_output=True,
        check=True,
        cwd=REPO,
    ).stdout
    for name in sorted({entry.decode() for entry in listed.split(b"\0") if entry}):
        source = REPO / name
        if not source.is_file():
            continue  # deleted in the work tree
        destination = target / name
        destination.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, destination, follow_symlinks=False)
    return target
