"""``kmultiarch fn``: the KRM function (ResourceList on stdin), and the kyaml standalone /
kustomize legacy exec plugin form (``fn POLICY.yaml [FILE...]``: plain streams)."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from kmultiarch.commands.mutate import resolve_function
from kmultiarch.engine import run
from kmultiarch.inputs import collect_inputs
from kmultiarch.krm import run_function

if TYPE_CHECKING:
    from kmultiarch.cli import RunOptions
    from kmultiarch.engine import Resolve
    from kmultiarch.policy import Policy


def krm_function(options: RunOptions, arguments: list[str]) -> int:
    from kmultiarch.cli import fail, note, warn

    cache = options.open_cache()
    try:

        def resolve_factory(policy: Policy) -> Resolve:
            return resolve_function(options, policy, cache)

        if not arguments:
            data = sys.stdin.buffer.read()
            from kmultiarch.yamlstream import decode_source

            output = run_function(decode_source(data, "<stdin>"), resolve_factory)
            sys.stdout.write(output.text)
            sys.stdout.flush()
            return output.exit_code
        from kmultiarch.policy import load_policy

        policy = load_policy(arguments[0])
        sources = collect_inputs(arguments[1:])
        result = run(sources, policy, resolve_factory(policy))
        for message in cache.warnings:
            warn(message)
    finally:
        cache.close()
    for finding in result.findings:
        line = f"{finding.location()}: {finding.message}"
        if finding.severity == "error":
            fail(line)
        elif not options.quiet:
            warn(line)
    if result.failed:
        return 1
    sys.stdout.write(result.stream())
    sys.stdout.flush()
    if not options.quiet:
        from kmultiarch.engine import summarise

        note(summarise(result))
    return 0
