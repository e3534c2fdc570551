"""``kmultiarch mutate [PATH...]``: the transformed stream on stdout, the patches, or a
kustomize Component (``--output kustomize --output-dir DIR``) and a HelmRelease's
post-renderers for Flux (:mod:`kmultiarch.output.flux`)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from kmultiarch.cli.pipeline import report_findings, resolve_and_run
from kmultiarch.core.findings import count_of
from kmultiarch.engine import EngineResult, summarise
from kmultiarch.errors import InputError, WriteError
from kmultiarch.io.inputs import collect_inputs, write_all_atomically

if TYPE_CHECKING:
    from kmultiarch.cli.session import RunOptions

#: The outputs made from the operations alone: the documents are not edited for them.
_PATCH_OUTPUTS = ("kustomize", "helmrelease-patches")
#: Largest file of a Component directory read back (a patch file is a few KB).
_MAX_COMPONENT_FILE = 16 * 1024 * 1024


def mutate(
    options: RunOptions,
    paths: list[str],
    output: str,
    in_place: bool,
    output_dir: str | None = None,
) -> int:
    from kmultiarch.cli.session import fail

    policy = options.load_policy()
    sources = collect_inputs(paths)
    result = resolve_and_run(options, sources, policy, edit=output not in _PATCH_OUTPUTS)
    report_findings(result, options)
    if result.failed:
        fail("nothing was written: fix the errors above or set failurePolicy: Ignore")
        return 1
    if output == "patch":
        sys.stdout.write(json.dumps(patches(result), indent=2) + "\n")
    elif output == "kustomize":
        from kmultiarch.output.flux import component_files, targeted_patches

        assert output_dir is not None
        write_component(Path(output_dir), component_files(targeted_patches(result)), options)
    elif output == "helmrelease-patches":
        from kmultiarch.output.flux import helmrelease_post_renderers, targeted_patches

        sys.stdout.write(helmrelease_post_renderers(targeted_patches(result)))
    elif in_place:
        write_all_atomically({name: result.output_of(name) for name in result.changed_sources()})
    else:
        for chunk in result.stream_chunks():
            sys.stdout.write(chunk)
    sys.stdout.flush()
    if not options.quiet:
        from kmultiarch.cli.session import note

        note(summarise(result))
    return 0


def patches(result: EngineResult) -> list[dict[str, object]]:
    """One entry per changed document: its identity and its RFC 6902 operations. ``document``
    counts from 1, as every message does."""
    entries: list[dict[str, object]] = []
    for source, outcomes in result.documents.items():
        for outcome in outcomes:
            if not outcome.operations:
                continue
            value = outcome.document.value
            metadata = value.get("metadata", {}) if isinstance(value, dict) else {}
            entries.append(
                {
                    "source": source,
                    "document": outcome.document.index + 1,
                    "apiVersion": value.get("apiVersion") if isinstance(value, dict) else None,
                    "kind": value.get("kind") if isinstance(value, dict) else None,
                    "name": metadata.get("name") if isinstance(metadata, dict) else None,
                    "namespace": metadata.get("namespace") if isinstance(metadata, dict) else None,
                    "patch": [operation.as_json() for operation in outcome.operations],
                }
            )
    return entries


def read_component(directory: Path, wanted: list[str]) -> dict[str, str]:
    """The files of ``directory`` that ``--output kustomize`` wrote (their first line says so),
    and any file of a name in ``wanted``, by name. Nothing when the directory does not exist;
    InputError when it is not a directory or a file cannot be read."""
    from kmultiarch.output.flux import is_written_by_kmultiarch

    if not directory.exists():
        return {}
    if not directory.is_dir():
        raise InputError(f"{directory}: not a directory; name the Component's directory")
    present: dict[str, str] = {}
    try:
        names = sorted(os.listdir(directory))
    except OSError as exc:
        raise InputError(f"{directory}: cannot list it: {exc.strerror or exc}") from exc
    for name in names:
        path = directory / name
        if not name.endswith(".yaml") or not path.is_file():
            continue
        try:
            with path.open("rb") as stream:
                data = stream.read(_MAX_COMPONENT_FILE + 1)
        except OSError as exc:
            raise InputError(f"{path}: cannot read it: {exc.strerror or exc}") from exc
        text = data.decode("utf-8", "replace")
        if name in wanted or (len(data) <= _MAX_COMPONENT_FILE and is_written_by_kmultiarch(text)):
            present[name] = text
    return present


def write_component(directory: Path, files: dict[str, str], options: RunOptions) -> None:
    """Write the Component's files into ``directory`` (created), each atomically, the patches
    before ``kustomization.yaml``; then remove the files of an earlier run that are no longer
    written. A file kmultiarch did not write is never replaced nor removed: refused before
    anything is written."""
    from kmultiarch.output.flux import (
        KUSTOMIZATION,
        OTHER_KUSTOMIZATION_NAMES,
        is_written_by_kmultiarch,
    )

    present = read_component(directory, list(files))
    foreign = sorted(name for name, text in present.items() if not is_written_by_kmultiarch(text))
    if foreign:
        raise InputError(
            f"{directory}: {', '.join(foreign)} {'exists' if len(foreign) == 1 else 'exist'} "
            "and was not written by kmultiarch; "
            "nothing was written: remove it, or choose another --output-dir"
        )
    in_the_way = sorted(
        name for name in files if (directory / name).exists() and not (directory / name).is_file()
    )
    if in_the_way:
        raise InputError(
            f"{directory}: {', '.join(in_the_way)} is in the way (not a file); nothing was "
            "written: remove it, or choose another --output-dir"
        )
    others = [name for name in OTHER_KUSTOMIZATION_NAMES if (directory / name).exists()]
    if others:
        raise InputError(
            f"{directory}: {others[0]} is a kustomization too (kustomize refuses two in one "
            f"directory) and {KUSTOMIZATION} is written there; nothing was written: choose "
            "another --output-dir"
        )
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise WriteError(f"{directory}: cannot create it: {exc.strerror or exc}") from exc
    changed = {
        str(directory / name): text for name, text in files.items() if present.get(name) != text
    }
    write_all_atomically(changed)
    left_over = sorted(name for name in present if name not in files)
    for name in left_over:
        try:
            (directory / name).unlink()
        except FileNotFoundError:
            pass
        except OSError as exc:
            raise WriteError(
                f"{directory / name}: cannot remove this file of an earlier run: "
                f"{exc.strerror or exc}; the Component's other files are written"
            ) from exc
    if not options.quiet:
        from kmultiarch.cli.session import note

        patches = len(files) - 1
        note(
            f"{directory}: a Component of {patches} patch{'' if patches == 1 else 'es'} "
            f"({count_of(len(changed), 'file')} written, {len(left_over)} removed)"
        )
