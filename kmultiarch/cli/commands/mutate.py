"""``kmultiarch mutate [PATH...]``: the transformed stream on stdout, the patches, or a
kustomize Component (``--output kustomize --output-dir DIR``) and a HelmRelease's
post-renderers for Flux (:mod:`kmultiarch.output.flux`)."""

from __future__ import annotations

import contextlib
import json
import stat
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from kmultiarch.cli.pipeline import report_findings, resolve_and_run
from kmultiarch.core.findings import count_of
from kmultiarch.core.patch import json_pointer
from kmultiarch.engine import EngineResult, summarise
from kmultiarch.errors import InputError, WriteError
from kmultiarch.io.inputs import collect_inputs, write_all_atomically

if TYPE_CHECKING:
    from kmultiarch.cli.session import RunOptions
    from kmultiarch.io.nofollow import NoFollowDirectory

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
            if not outcome.operations and not outcome.repins:
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
                    "patch": [
                        *(operation.as_json() for operation in outcome.operations),
                        # spec.repinDigests: the image field, written with the index digest
                        *(
                            {"op": "replace", "path": json_pointer(path), "value": repinned}
                            for path, _, repinned in outcome.repins
                        ),
                    ],
                }
            )
    return entries


def read_component(directory: Path, wanted: list[str]) -> dict[str, str]:
    """The files of ``directory`` that ``--output kustomize`` wrote (their first line says so),
    and any file of a name in ``wanted``, by name. Nothing when the directory does not exist;
    InputError when it is not a directory, when it, a directory above it or an entry of a name
    in ``wanted`` is a symbolic link (never followed: issue 28), or a file cannot be read."""
    with _opened(directory, create=False) as opened:
        return {} if opened is None else _component_in(opened, wanted)


@contextlib.contextmanager
def _opened(directory: Path, *, create: bool) -> Iterator[NoFollowDirectory | None]:
    # Imported by the runs that write or read a Component only.
    from kmultiarch.io.nofollow import NoFollowDirectory

    opened = NoFollowDirectory.open(directory, "--output-dir", create=create)
    if opened is None:
        yield None
        return
    with opened:
        yield opened


def _component_in(opened: NoFollowDirectory, wanted: list[str]) -> dict[str, str]:
    from kmultiarch.output.flux import is_written_by_kmultiarch

    directory = opened.path
    try:
        entries = list(opened.entries())
    except OSError as exc:
        raise InputError(f"{directory}: cannot list it: {exc.strerror or exc}") from exc
    opened.refuse_links(wanted)
    present: dict[str, str] = {}
    for name, mode in entries:
        # A link is never read nor followed: kmultiarch never writes one, so it is not a file
        # of an earlier run (one named as a file it writes was refused above).
        if not name.endswith(".yaml") or not stat.S_ISREG(mode):
            continue
        data = opened.read(name, _MAX_COMPONENT_FILE)
        text = data.decode("utf-8", "replace")
        if name in wanted or (len(data) <= _MAX_COMPONENT_FILE and is_written_by_kmultiarch(text)):
            present[name] = text
    return present


def write_component(directory: Path, files: dict[str, str], options: RunOptions) -> None:
    """Write the Component's files into ``directory`` (created), each atomically, the patches
    before ``kustomization.yaml``; then remove the files of an earlier run that are no longer
    written. A file kmultiarch did not write is never replaced nor removed, and no symbolic
    link is followed, in the directory or on the path to it: refused before anything is
    written."""
    with _opened(directory, create=False) as existing:
        if existing is not None:
            _check_component_directory(existing, files)
    with _opened(directory, create=True) as opened:
        assert opened is not None
        # Read again through the directory now open: what is replaced is what was checked.
        present = _check_component_directory(opened, files)
        _write_component_files(opened, files, present, options)


def _check_component_directory(opened: NoFollowDirectory, files: dict[str, str]) -> dict[str, str]:
    """The Component's files present, or InputError when writing there is refused."""
    from kmultiarch.output.flux import (
        KUSTOMIZATION,
        OTHER_KUSTOMIZATION_NAMES,
        is_written_by_kmultiarch,
    )

    directory = opened.path
    present = _component_in(opened, list(files))
    foreign = sorted(name for name, text in present.items() if not is_written_by_kmultiarch(text))
    if foreign:
        raise InputError(
            f"{directory}: {', '.join(foreign)} {'exists' if len(foreign) == 1 else 'exist'} "
            "and was not written by kmultiarch; "
            "nothing was written: remove it, or choose another --output-dir"
        )
    in_the_way = sorted(
        name
        for name in files
        if (mode := opened.kind_of(name)) is not None and not stat.S_ISREG(mode)
    )
    if in_the_way:
        raise InputError(
            f"{directory}: {', '.join(in_the_way)} is in the way (not a file); nothing was "
            "written: remove it, or choose another --output-dir"
        )
    others = [name for name in OTHER_KUSTOMIZATION_NAMES if opened.kind_of(name) is not None]
    if others:
        raise InputError(
            f"{directory}: {others[0]} is a kustomization too (kustomize refuses two in one "
            f"directory) and {KUSTOMIZATION} is written there; nothing was written: choose "
            "another --output-dir"
        )
    return present


def _write_component_files(
    opened: NoFollowDirectory,
    files: dict[str, str],
    present: dict[str, str],
    options: RunOptions,
) -> None:
    directory = opened.path
    changed = {name: text for name, text in files.items() if present.get(name) != text}
    opened.write_all_atomically(changed)
    left_over = sorted(name for name in present if name not in files)
    for name in left_over:
        try:
            opened.remove(name)
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
