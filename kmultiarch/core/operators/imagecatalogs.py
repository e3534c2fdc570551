"""Images an operator's resource picks from a catalog, another resource of the stream it names
by reference: a CloudNativePG Cluster's ``spec.imageCatalogRef`` (kind, name, major) picks the
image of that major in an ImageCatalog or ClusterImageCatalog (cloudnative-pg
internal/controller/cluster_image.go getRequestedImageInfo, api/v1/imagecatalog_funcs.go
FindImageForMajor); a Pooler's ``spec.pgbouncer.imageCatalogRef`` (kind, name, key) the
component image of that key (pooler_image.go resolveImageFromCatalog,
FindComponentImageForKey).

A catalog in the stream gives the image; one that is not there leaves the image the operator's
choice, said as such. Pure: plain data in and out.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

__all__ = ["CatalogImage", "FindRelated", "catalog_image"]

#: Finds a resource of the stream by (API group, kind, namespace, name); None: not there.
FindRelated = Callable[[str, str, str, str], Mapping[str, object] | None]


@dataclass(frozen=True)
class CatalogImage:
    """Where a resource picks an image from a catalog it names."""

    #: The catalogs' API group; a reference naming another (its ``apiGroup``) picks nothing.
    group: str
    #: The kinds a reference may name, and whether each is cluster-scoped (looked up without
    #: a namespace; the others in the resource's own).
    kinds: tuple[tuple[str, bool], ...]
    #: The reference in the resource (an object with ``kind``, ``name``, ``apiGroup``).
    reference: tuple[str, ...]
    #: The field of the reference whose value selects the entry (``major``, ``key``).
    selector: str
    #: The catalog's list of entries (``spec.images``), each with ``selector`` and ``image``.
    entries: tuple[str, ...]
    #: The entry's field compared with the reference's ``selector``.
    entry_key: str

    @property
    def group_kinds(self) -> tuple[tuple[str, str], ...]:
        """The (API group, kind) of every catalog a reference may name."""
        return tuple((self.group, kind) for kind, _ in self.kinds)


def _at(value: object, pointer: tuple[str, ...]) -> object:
    for token in pointer:
        value = value.get(token) if isinstance(value, Mapping) else None
    return value


def catalog_image(
    resource: Mapping[str, object],
    source: CatalogImage,
    namespace: str,
    find: FindRelated | None,
) -> tuple[str | None, str] | None:
    """The image ``resource`` picks from the catalog it names, and what it is (for messages):
    ``(image, "ImageCatalog postgresql, major 16")``; ``(None, why)`` when the reference is
    set but no image can be read (the catalog is not in the stream, or has no such entry: the
    operator's choice); None when the resource names no catalog."""
    reference = _at(resource, source.reference)
    if not isinstance(reference, Mapping):
        return None
    kind, name = reference.get("kind"), reference.get("name")
    selected = reference.get(source.selector)
    group = reference.get("apiGroup", source.group)
    scopes = dict(source.kinds)
    if not isinstance(kind, str) or not isinstance(name, str) or kind not in scopes:
        return None, "a catalog reference kmultiarch cannot read"
    wanted = f"{kind} {name}, {source.selector} {selected}"
    if group != source.group or selected is None:
        return None, f"{wanted}: not a catalog the operator reads"
    catalog = None
    if find is not None:
        # A cluster-scoped catalog has no namespace; a renderer may have given it one.
        for where in ("", namespace) if scopes[kind] else (namespace,):
            catalog = find(source.group, kind, where, name)
            if catalog is not None:
                break
    if catalog is None:
        return None, f"{wanted}, not in the stream"
    entries = _at(catalog, source.entries)
    for entry in entries if isinstance(entries, list) else []:
        if not isinstance(entry, Mapping) or str(entry.get(source.entry_key)) != str(selected):
            continue
        image = entry.get("image")
        if isinstance(image, str) and image.strip():
            return image, wanted
    return None, f"{wanted}: no such entry in it"
