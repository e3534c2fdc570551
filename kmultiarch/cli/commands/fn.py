"""``kmultiarch fn``: the KRM function (ResourceList on stdin), and the kyaml standalone /
kustomize legacy exec plugin form (``fn CONFIG [FILE...]``: plain streams)."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from kmultiarch.cli.pipeline import report_findings, resolve_and_run
from kmultiarch.engine import summarise
from kmultiarch.io.inputs import collect_inputs, read_bytes, read_limited
from kmultiarch.krm.function import run_function

if TYPE_CHECKING:
    from kmultiarch.cli.session import RunOptions
    from kmultiarch.core.policy.model import Policy

#: kustomize sets these for a legacy exec plugin: the kustomization's directory (also the
#: plugin's working directory) and the transformer config, which argv[1] names as a temp file.
KUSTOMIZE_CONFIG_ROOT_ENV = "KUSTOMIZE_PLUGIN_CONFIG_ROOT"


def krm_function(options: RunOptions, arguments: list[str]) -> int:
    if not arguments:
        return _resource_list(options)
    return _standalone(options, arguments[0], arguments[1:])


def _resource_list(options: RunOptions) -> int:
    """ResourceList in, ResourceList out; the results also go to stderr, which kustomize and
    kpt show when the function fails. The run is configured from the options and the
    functionConfig's policy (its spec.lock and spec.cache count), else --config's."""
    from kmultiarch.cli.session import fail, warn
    from kmultiarch.yaml.stream import decode_source

    data = read_limited(sys.stdin.buffer, "<stdin>")
    output = run_function(
        decode_source(data, "<stdin>"),
        options.configure,
        # A ResourceList without functionConfig takes the policy --config names, if any.
        default_policy=options.load_policy,
        progress=options.progress,
    )
    sys.stdout.write(output.text)
    sys.stdout.flush()
    for finding in output.findings:
        where = output.location(finding)
        line = f"{where}: {finding.message}" if where else finding.message
        if finding.severity == "error":
            fail(line)
        elif finding.severity == "warning" and not options.quiet:
            warn(line)
    return output.exit_code


def _standalone(options: RunOptions, config: str, files: list[str]) -> int:
    """``fn CONFIG [FILE...]``: CONFIG is the functionConfig (a MultiArchPolicy, or a ConfigMap
    with string data); the manifests are the FILEs, or stdin; a plain stream goes out."""
    from kmultiarch.cli.session import fail, note

    policy = load_function_config(config)
    result = resolve_and_run(options, collect_inputs(files), policy)
    report_findings(result, options)
    if result.failed:
        fail("nothing was written: fix the errors above or set failurePolicy: Ignore")
        return 1
    sys.stdout.write(result.stream())
    sys.stdout.flush()
    if not options.quiet:
        note(summarise(result))
    return 0


def load_function_config(path: str) -> Policy:
    """The functionConfig file of the standalone form. Run as a kustomize legacy exec plugin,
    the file is a temporary copy: errors name the policy and the kustomization instead, and
    relative paths in it (``lock``, ``ca``) are relative to the kustomization's directory."""
    from kmultiarch.errors import PolicyError
    from kmultiarch.krm.function import policy_from_function_config
    from kmultiarch.yaml.stream import decode_source, read_stream

    source, base_dir = path, None
    root = os.environ.get(KUSTOMIZE_CONFIG_ROOT_ENV)
    if root:
        source, base_dir = f"{root}: transformer config", Path(root)
    data = read_bytes(path)
    documents = [
        document
        for document in read_stream(decode_source(data, source), source)
        if document.value is not None
    ]
    if len(documents) != 1:
        raise PolicyError(
            f"expected one MultiArchPolicy (or ConfigMap) document, found {len(documents)}",
            source=source,
        )
    value = documents[0].value
    if root and isinstance(value, Mapping):
        metadata = value.get("metadata")
        name = metadata.get("name") if isinstance(metadata, Mapping) else None
        source = f"{root}: transformer {value.get('kind')} {name}"
    return policy_from_function_config(value, source, base_dir=base_dir)
