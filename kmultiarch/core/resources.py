"""The resources of a parsed document, each with its path from the document's root: itself, or the
items of a ``kind: List``. Pure; shared by every package of the core that reads resources
(scope, workloads, pull secrets, the cluster's nodes).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

#: The namespace of resources without metadata.namespace, as kubectl and helm take it.
DEFAULT_NAMESPACE = "default"

ResourcePath = tuple[str | int, ...]


def resources_in(
    document: object, path: ResourcePath = ()
) -> Iterator[tuple[ResourcePath, Mapping[str, Any]]]:
    """The resources of a document, each with its path from the document's root: itself, or
    the items of a ``kind: List`` (a KRM ResourceList's too), nested lists flattened."""
    if not isinstance(document, Mapping):
        return
    kind = document.get("kind")
    if isinstance(kind, str) and kind.endswith("List") and isinstance(document.get("items"), list):
        for position, item in enumerate(document["items"]):
            yield from resources_in(item, (*path, "items", position))
        return
    yield path, document
