"""Which YAML files are Kubernetes manifests, for hooks that are handed every ``*.yaml`` of a
repository (pre-commit's ``types: [yaml]``): Helm templates, kustomizations, CI configs, values
files and YAML that does not parse are told apart from manifests and skipped, not failed on."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import PurePath

from kmultiarch.errors import ManifestStreamError
from kmultiarch.io.inputs import STDIN, collect_inputs, manifest_files, read_bytes
from kmultiarch.yaml.stream import InputSource, decode_source, read_stream

KUSTOMIZATION_NAMES = frozenset({"kustomization.yaml", "kustomization.yml", "Kustomization"})


@dataclass(frozen=True)
class Skipped:
    name: str
    reason: str


def non_manifest_reason(name: str, text: str) -> str | None:
    """Why ``text`` (the file ``name``) is not a Kubernetes manifest, or None when it is one."""
    if PurePath(name).name in KUSTOMIZATION_NAMES:
        return "a kustomization, not a manifest"
    # Decided from structure, not from a substring: "{{" appears in rendered manifests too
    # (every Argo Workflow), and a Helm template either does not parse as YAML or has
    # documents without apiVersion and kind.
    try:
        documents = read_stream(text, name)
    except ManifestStreamError as exc:
        # Only the wording depends on '{{' here: the file is skipped either way.
        if "{{" in text or "{%" in text:
            return f"a template ({{{{ }}}}) that does not parse as YAML ({exc})"
        return f"not valid YAML ({exc})"
    resources = [
        document.value
        for document in documents
        if isinstance(document.value, Mapping)
        and isinstance(document.value.get("apiVersion"), str)
        and isinstance(document.value.get("kind"), str)
    ]
    if not resources:
        return "no Kubernetes resource (no document with apiVersion and kind)"
    if all(resource.get("kind") == "Kustomization" for resource in resources):
        return "a kustomization, not a manifest"
    return None


def read_inputs(
    paths: Iterable[str], *, skip_non_manifests: bool
) -> tuple[list[InputSource], list[Skipped]]:
    """The inputs to process, and (with ``skip_non_manifests``) the files left out and why."""
    paths = list(paths)
    if not skip_non_manifests:
        return collect_inputs(paths), []
    sources: list[InputSource] = []
    skipped: list[Skipped] = []
    for name in manifest_files(paths) if paths else [STDIN]:
        if name == STDIN:
            sources.extend(collect_inputs([STDIN]))
            continue
        try:
            text = decode_source(read_bytes(name), name)
        except ManifestStreamError:
            skipped.append(Skipped(name, "not UTF-8 YAML text"))
            continue
        reason = non_manifest_reason(name, text)
        if reason is None:
            sources.append(InputSource(name, text))
        else:
            skipped.append(Skipped(name, reason))
    return sources, skipped
