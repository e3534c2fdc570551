"""``kmultiarch report [PATH...]``: every image with its platforms and the workloads using it,
and how many workloads are multi-arch, arm64-only, amd64-only or unresolvable."""

from __future__ import annotations

import os
import sys
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from kmultiarch.assessment import inventory
from kmultiarch.commands.mutate import resolve_and_run
from kmultiarch.inputs import collect_inputs
from kmultiarch.output.report import FORMATTERS

if TYPE_CHECKING:
    from kmultiarch.cli import RunOptions


def report_images(options: RunOptions, paths: list[str], output: str) -> int:
    policy = options.load_policy()
    sources = collect_inputs(paths)
    result = resolve_and_run(options, sources, policy, edit=False)
    sys.stdout.write(FORMATTERS[output](inventory(result, policy), generated_at()))
    sys.stdout.flush()
    return 0


def generated_at() -> str:
    """Now, or ``$SOURCE_DATE_EPOCH`` for reproducible output, as UTC ISO 8601."""
    epoch = os.environ.get("SOURCE_DATE_EPOCH", "")
    moment = datetime.fromtimestamp(int(epoch), UTC) if epoch.isdigit() else datetime.now(UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")
