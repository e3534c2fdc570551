"""``kmultiarch report [PATH...]``: every image with its platforms and the workloads using it,
and how many workloads are multi-arch, arm64-only, amd64-only or unresolvable."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from kmultiarch.assess.assessment import inventory
from kmultiarch.cli.pipeline import generated_at, resolve_and_run
from kmultiarch.io.inputs import collect_inputs
from kmultiarch.output.report import FORMATTERS

if TYPE_CHECKING:
    from kmultiarch.cli.session import RunOptions


def report_images(options: RunOptions, paths: list[str], output: str) -> int:
    policy = options.load_policy()
    sources = collect_inputs(paths)
    result = resolve_and_run(options, sources, policy, edit=False)
    sys.stdout.write(FORMATTERS[output](inventory(result, policy), generated_at()))
    sys.stdout.flush()
    return 0
