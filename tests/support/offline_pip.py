"""A Python environment where ``pip install .`` of this repository works with no network, as
documented commands and the GitHub Action run it: a fresh virtualenv that sees the running
interpreter's packages (kmultiarch's dependencies and its build backend) through a ``.pth``
file, and a pip that asks no index and builds in that environment (no build isolation)."""

from __future__ import annotations

import subprocess
import sys
import sysconfig
from pathlib import Path

#: pip's settings for it (``PIP_NO_BUILD_ISOLATION=0`` is pip's way of saying
#: ``--no-build-isolation`` in the environment).
OFFLINE_PIP_ENV = {
    "PIP_NO_INDEX": "1",
    "PIP_NO_BUILD_ISOLATION": "0",
    "PIP_DISABLE_PIP_VERSION_CHECK": "1",
}


def offline_virtualenv(directory: Path) -> Path:
    """Create it in ``directory``; its ``bin`` (put it first on PATH)."""
    subprocess.run([sys.executable, "-m", "venv", str(directory)], check=True)
    # The setuptools venv bundles (Python < 3.12) would shadow the running one, which builds.
    subprocess.run(
        [directory / "bin" / "python", "-m", "pip", "uninstall", "-q", "-y", "setuptools"],
        check=False,
        capture_output=True,
    )
    (site,) = directory.glob("lib/python*/site-packages")
    running = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}
    (site / "zz_running_interpreter.pth").write_text("".join(f"{p}\n" for p in sorted(running)))
    return directory / "bin"
