"""Flux: ``mutate``'s changes as kustomize patches, for controllers that run no plugin.

Flux applies kustomize's own patches and nothing else: a Kustomization's ``spec.components``
and a HelmRelease's ``spec.postRenderers[].kustomize.patches``. The engine's decision already
is RFC 6902 operations per document, and kustomize applies RFC 6902 patches to the resources
a ``target`` selects, so this module turns an :class:`~kmultiarch.engine.EngineResult` into

- :func:`component_files`: ``kustomization.yaml`` (``kind: Component``) and one patch file per
  changed resource, for ``mutate --output kustomize --output-dir DIR``;
- :func:`helmrelease_post_renderers`: the same patches inline, for ``--output
  helmrelease-patches``.

``spec.repinDigests`` (an image pinned to one platform's manifest, rewritten to its index
digest) is an RFC 6902 ``replace`` of the image field, after the scheduling operations, as in
``--output patch``: the Component gives what ``mutate`` writes.

Resources are what kustomize loads: a document, or each item of a ``kind: List`` (kustomize
loads the items, nested lists too, as resources of their own), whose operations under
``/items/N`` are re-based onto the item.

Targets. kustomize reads every field of a target as a regular expression anchored at both
ends, and an empty or missing field as "any". So the fields are escaped (``a.b`` would select
``axb`` too); the core group is left out (a target cannot say "no group"); and the namespace is
given only when another resource of the same kind and name must be told apart: a Component
listed in a kustomization that sets ``namespace:`` runs before that transformer, when its
resources do not have the namespace yet, and a patch whose target selects nothing is skipped
without a word. Every target is then matched against every resource of the stream as kustomize
matches it: a target that would select another resource too, or a resource without a name, is
an :class:`~kmultiarch.errors.InputError` naming the documents, never a Component that patches
the wrong resource or nothing.

Files. Each file starts with :data:`MARKER`: that line is how a later run recognises the files
it may replace or remove (it never touches a file without it). Names, order and text depend
only on the targets and operations, never on the paths the manifests were read from, so
``check --component`` compares what it would write with what is committed, byte for byte.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kmultiarch.core.operators.model import api_group
from kmultiarch.core.patch import PatchOperation, PathPart
from kmultiarch.core.resources import DEFAULT_NAMESPACE
from kmultiarch.errors import InputError
from kmultiarch.yaml.scalars import render_scalar

if TYPE_CHECKING:
    from kmultiarch.engine import EngineResult
    from kmultiarch.yaml.stream import SourceDocument

#: The first line of every file ``--output kustomize`` writes: what tells them apart from
#: files it must leave alone.
MARKER = "# Written by kmultiarch (mutate --output kustomize): do not edit, run it again."
KUSTOMIZATION = "kustomization.yaml"
#: Names kustomize also reads as a kustomization: two in one directory is an error to it.
OTHER_KUSTOMIZATION_NAMES = ("kustomization.yml", "Kustomization")
COMPONENT_API_VERSION = "kustomize.config.k8s.io/v1alpha1"
#: Characters RE2 (kustomize's regular expressions) reads as syntax.
_REGEX_SYNTAX = frozenset("\\.+*?()|[]{}^$")
_FILE_NAME_UNSAFE = re.compile(r"[^a-z0-9.-]+")
_MAX_NAME_STEM = 150


@dataclass(frozen=True)
class Resource:
    """A resource as kustomize loads it, and where it is in the stream."""

    api_version: str
    kind: str
    name: str | None
    namespace: str | None
    where: str

    @property
    def group(self) -> str:
        return api_group(self.api_version)

    @property
    def version(self) -> str:
        return self.api_version.rpartition("/")[2]

    @property
    def effective_namespace(self) -> str:
        """The namespace kustomize matches a target against (none means ``default``)."""
        return self.namespace or DEFAULT_NAMESPACE

    @property
    def display_name(self) -> str:
        namespace = f"{self.namespace}/" if self.namespace else ""
        return f"{self.api_version} {self.kind} {namespace}{self.name or '(no name)'}"


@dataclass(frozen=True)
class Target:
    """A kustomize target selecting one resource: ``group`` empty for the core group (then any
    group is selected), ``namespace`` None when any namespace may be selected."""

    group: str
    version: str
    kind: str
    name: str
    namespace: str | None = None

    def selects(self, resource: Resource) -> bool:
        """Whether kustomize's selector for this target selects ``resource``."""
        return (
            resource.kind == self.kind
            and resource.version == self.version
            and resource.name == self.name
            and (not self.group or resource.group == self.group)
            and (self.namespace is None or resource.effective_namespace == self.namespace)
        )

    def selector(self) -> dict[str, str]:
        """The target as kustomize reads it: fields escaped, the empty ones left out."""
        fields = {
            "group": self.group,
            "version": self.version,
            "kind": self.kind,
            "name": self.name,
            "namespace": self.namespace or "",
        }
        return {key: regex_literal(value) for key, value in fields.items() if value}


@dataclass(frozen=True)
class TargetedPatch:
    """The operations of one resource, re-based onto it, with the target that selects it and
    the name of its file in the Component."""

    resource: Resource
    target: Target
    operations: tuple[PatchOperation, ...]
    file_name: str = ""

    def patch_text(self) -> str:
        """The RFC 6902 operations as a YAML list."""
        return yaml_text([operation.as_json() for operation in self.operations])


def regex_literal(text: str) -> str:
    """``text`` as an RE2 expression matching exactly it."""
    return "".join(f"\\{c}" if c in _REGEX_SYNTAX else c for c in text)


# Building ----------------------------------------------------------------------------------


def targeted_patches(result: EngineResult) -> list[TargetedPatch]:
    """One patch per changed resource of the run, sorted by target, with its file name.
    InputError when a changed resource cannot be selected alone by a kustomize target."""
    changed: list[tuple[Resource, list[PatchOperation]]] = []
    wanted: set[tuple[str, str]] = set()
    for source, outcomes in result.documents.items():
        for outcome in outcomes:
            document_operations = [*outcome.operations, *_repin_operations(outcome.repins)]
            if document_operations:
                for resource, operations in _split_by_resource(
                    source, outcome.document, document_operations
                ):
                    changed.append((resource, operations))
                    wanted.add((resource.version, resource.kind))
    if not changed:
        return []
    index = _index(_stream_resources(result, wanted))
    patches = [
        TargetedPatch(resource, _target(resource, index), tuple(operations))
        for resource, operations in changed
    ]
    return _named(patches)


def _repin_operations(
    repins: Iterable[tuple[tuple[PathPart, ...], str, str]],
) -> list[PatchOperation]:
    """``spec.repinDigests``: each image field written with its index digest, as the ``replace``
    ``--output patch`` gives (mutate rewrites the same field in the text), once per field."""
    replaced: dict[tuple[PathPart, ...], PatchOperation] = {}
    for path, _, repinned in repins:
        replaced.setdefault(tuple(path), PatchOperation("replace", tuple(path), repinned))
    return list(replaced.values())


def _split_by_resource(
    source: str, document: SourceDocument, operations: Sequence[PatchOperation]
) -> Iterator[tuple[Resource, list[PatchOperation]]]:
    """The document's operations grouped by the resource kustomize sees them on (the document,
    or an item of a List), in their order, re-based onto it."""
    value = document.value
    where = f"{source}: document {document.index + 1}"
    grouped: dict[tuple[PathPart, ...], tuple[Resource, list[PatchOperation]]] = {}
    for operation in operations:
        prefix, item = _item_of(value, operation.path)
        if prefix not in grouped:
            located = where + (f" ({_pointer(prefix)})" if prefix else "")
            resource = _resource(item, located)
            if resource is None or _is_list(item):
                raise InputError(
                    f"{located}: the change to {operation.pointer} is not on a resource "
                    "kustomize can select (it needs apiVersion, kind and metadata.name)"
                )
            grouped[prefix] = (resource, [])
        grouped[prefix][1].append(operation.relative_to(prefix) if prefix else operation)
    yield from grouped.values()


def _item_of(value: object, path: Sequence[PathPart]) -> tuple[tuple[PathPart, ...], object]:
    """The List items ``path`` goes through (as a path prefix) and the innermost one."""
    prefix: tuple[PathPart, ...] = ()
    current = value
    while _is_list(current) and len(path) > len(prefix) + 2 and path[len(prefix)] == "items":
        assert isinstance(current, Mapping)
        items = current.get("items")
        position = path[len(prefix) + 1]
        if not isinstance(items, list) or not str(position).isdigit():
            break
        if int(position) >= len(items):
            break
        current = items[int(position)]
        prefix = (*prefix, "items", position)
    return prefix, current


def _is_list(value: object) -> bool:
    """A ``kind: List`` (or ``*List`` with items): kustomize loads its items, not it."""
    if not isinstance(value, Mapping):
        return False
    kind = value.get("kind")
    return isinstance(kind, str) and (
        kind == "List" or (kind.endswith("List") and isinstance(value.get("items"), list))
    )


def _resource(value: object, where: str) -> Resource | None:
    if not isinstance(value, Mapping):
        return None
    api_version, kind = value.get("apiVersion"), value.get("kind")
    if not isinstance(api_version, str) or not isinstance(kind, str):
        return None
    metadata = value.get("metadata")
    metadata = metadata if isinstance(metadata, Mapping) else {}
    name, namespace = metadata.get("name"), metadata.get("namespace")
    return Resource(
        api_version,
        kind,
        str(name) if name not in (None, "") else None,
        str(namespace) if namespace not in (None, "") else None,
        where,
    )


def _stream_resources(result: EngineResult, wanted: set[tuple[str, str]]) -> Iterator[Resource]:
    """Every resource of the stream that may share a changed resource's kind and version (a
    document whose type is known to be another is not composed for this: mostly large
    CustomResourceDefinitions)."""
    for source, outcomes in result.documents.items():
        for outcome in outcomes:
            document = outcome.document
            known = document.resource_type
            if (
                known is not None
                and not known[1].endswith("List")
                and (known[0].rpartition("/")[2], known[1]) not in wanted
            ):
                continue
            yield from _flattened(document.value, f"{source}: document {document.index + 1}")


def _flattened(value: object, where: str, prefix: tuple[PathPart, ...] = ()) -> Iterator[Resource]:
    if _is_list(value):
        assert isinstance(value, Mapping)
        items = value.get("items")
        for position, item in enumerate(items if isinstance(items, list) else []):
            yield from _flattened(item, where, (*prefix, "items", position))
        return
    located = where + (f" ({_pointer(prefix)})" if prefix else "")
    resource = _resource(value, located)
    if resource is not None:
        yield resource


def _pointer(path: Sequence[PathPart]) -> str:
    return "/" + "/".join(str(part) for part in path)


_Index = Mapping[tuple[str, str, str | None], Sequence[Resource]]


def _index(resources: Iterable[Resource]) -> _Index:
    """Resources by (kind, version, name): the fields a target always gives."""
    index: dict[tuple[str, str, str | None], list[Resource]] = {}
    for resource in resources:
        index.setdefault((resource.kind, resource.version, resource.name), []).append(resource)
    return index


def _target(resource: Resource, index: _Index) -> Target:
    """The target selecting ``resource`` and nothing else of the stream."""
    if resource.name is None:
        raise InputError(
            f"{resource.where}: {resource.display_name} has no metadata.name (generateName?): "
            "a kustomize target cannot select it, so no patch can change it; give it a name "
            "or use mutate's YAML output"
        )
    namesakes = [
        other
        for other in index.get((resource.kind, resource.version, resource.name), ())
        if other.where != resource.where and (not resource.group or other.group == resource.group)
    ]
    target = Target(
        resource.group,
        resource.version,
        resource.kind,
        resource.name,
        resource.effective_namespace if namesakes else None,
    )
    also = [other for other in namesakes if target.selects(other)]
    if also:
        selector = ", ".join(f"{key}: {value}" for key, value in target.selector().items())
        raise InputError(
            f"{resource.where}: {resource.display_name} cannot be selected alone: kustomize's "
            f"target {{{selector}}} also selects {also[0].display_name} at {also[0].where}; "
            "kustomize itself refuses two resources with one id, and a target cannot tell the "
            "core group from others: give them distinct names, or render them apart"
        )
    return target


def _named(patches: list[TargetedPatch]) -> list[TargetedPatch]:
    """The patches sorted by target, each with a file name of its own (``kind_name.yaml``,
    ``kind_namespace_name.yaml``; a number added where two would be the same)."""
    patches = sorted(
        patches,
        key=lambda p: (
            p.target.group,
            p.target.version,
            p.target.kind,
            p.resource.namespace or "",
            p.target.name,
            p.target.namespace or "",
        ),
    )
    taken: set[str] = {KUSTOMIZATION.lower(), *(n.lower() for n in OTHER_KUSTOMIZATION_NAMES)}
    named: list[TargetedPatch] = []
    for patch in patches:
        parts = [patch.target.kind, patch.resource.namespace or "", patch.target.name]
        stem = "_".join(_FILE_NAME_UNSAFE.sub("-", part.lower()) for part in parts if part)
        stem = stem[:_MAX_NAME_STEM]
        name, number = f"{stem}.yaml", 1
        while name in taken:
            number += 1
            name = f"{stem}-{number}.yaml"
        taken.add(name)
        named.append(TargetedPatch(patch.resource, patch.target, patch.operations, name))
    return named


# Writing -----------------------------------------------------------------------------------


def component_files(patches: Sequence[TargetedPatch]) -> dict[str, str]:
    """The Component's files by name: each patch file, then ``kustomization.yaml`` (last, so
    that a writer replacing them in this order never lists a file not written yet). No patch:
    a Component with ``patches: []`` (kustomize refuses a kustomization with no field)."""
    files: dict[str, str] = {}
    entries: list[dict[str, object]] = []
    for patch in patches:
        header = f"{MARKER}\n# {patch.resource.display_name}\n"
        files[patch.file_name] = header + patch.patch_text()
        entries.append({"path": patch.file_name, "target": patch.target.selector()})
    files[KUSTOMIZATION] = (
        f"{MARKER}\n"
        "# Changes of `kmultiarch mutate` as kustomize patches: list this directory under\n"
        "# `components:` of a kustomization whose resources are the manifests mutate read.\n"
        + yaml_text({"apiVersion": COMPONENT_API_VERSION, "kind": "Component", "patches": entries})
    )
    return files


def helmrelease_post_renderers(patches: Sequence[TargetedPatch]) -> str:
    """A HelmRelease's ``postRenderers`` with one kustomize post-renderer holding each patch
    inline (``target`` and ``patch``), to go under the HelmRelease's ``spec``."""
    lines = [
        "# Written by kmultiarch (mutate --output helmrelease-patches): the HelmRelease's",
        "# spec.postRenderers, each patch with its target and its RFC 6902 operations.",
        "postRenderers:",
        "- kustomize:",
    ]
    if not patches:
        lines.append("    patches: []")
    else:
        lines.append("    patches:")
    for patch in patches:
        target = _yaml_lines(patch.target.selector(), 8)
        lines.append("    - target:")
        lines.extend(target)
        lines.append("      patch: |")
        lines.extend(f"        {line}" for line in patch.patch_text().splitlines())
    return "\n".join(lines) + "\n"


def yaml_text(value: object) -> str:
    """``value`` (plain data) as block YAML that reads back as it with YAML 1.1 and 1.2
    readers alike: scalars are written by :func:`~kmultiarch.yaml.scalars.render_scalar`, which
    quotes every string either could read as something else."""
    return "\n".join(_yaml_lines(value, 0)) + "\n"


def _yaml_lines(value: object, indent: int) -> list[str]:
    pad = " " * indent
    if isinstance(value, Mapping) and value:
        lines: list[str] = []
        for key, member in value.items():
            head = f"{pad}{render_scalar(key)}:"
            if isinstance(member, Mapping) and member:
                lines.append(head)
                lines.extend(_yaml_lines(member, indent + 2))
            elif isinstance(member, list) and member:
                lines.append(head)
                lines.extend(_yaml_lines(member, indent))
            else:
                lines.append(f"{head} {_leaf(member)}")
        return lines
    if isinstance(value, list) and value:
        lines = []
        for item in value:
            if isinstance(item, Mapping | list) and item:
                nested = _yaml_lines(item, indent + 2)
                lines.append(f"{pad}- {nested[0][indent + 2 :]}")
                lines.extend(nested[1:])
            else:
                lines.append(f"{pad}- {_leaf(item)}")
        return lines
    return [pad + _leaf(value)]


def _leaf(value: object) -> str:
    if isinstance(value, Mapping):
        return "{}"
    if isinstance(value, list):
        return "[]"
    return render_scalar(value)


# Comparing ---------------------------------------------------------------------------------


def is_written_by_kmultiarch(text: str) -> bool:
    """Whether a file's text is one ``--output kustomize`` wrote (its first line)."""
    return text.partition("\n")[0].rstrip("\r") == MARKER


@dataclass(frozen=True)
class Staleness:
    """How a Component directory differs from what ``--output kustomize`` would write."""

    missing: tuple[str, ...] = ()
    different: tuple[str, ...] = ()
    left_over: tuple[str, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.missing or self.different or self.left_over)

    def describe(self) -> str:
        parts = [f"{name} differs" for name in self.different]
        parts += [f"{name} is missing" for name in self.missing]
        parts += [f"{name} is left over (no longer written)" for name in self.left_over]
        return ", ".join(parts)


def staleness(wanted: Mapping[str, str], present: Mapping[str, str]) -> Staleness:
    """Compare the files ``--output kustomize`` would write with those a directory holds
    (``present``: its files written by kmultiarch, and any file of a name it would write)."""
    return Staleness(
        missing=tuple(sorted(name for name in wanted if name not in present)),
        different=tuple(
            sorted(name for name in wanted if name in present and present[name] != wanted[name])
        ),
        left_over=tuple(
            sorted(
                name
                for name, text in present.items()
                if name not in wanted and is_written_by_kmultiarch(text)
            )
        ),
    )
