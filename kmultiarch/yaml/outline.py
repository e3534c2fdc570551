"""A document's outline: its mappings, lists and scalars (as strings), built from libyaml's
parser events, without a node tree.

For large documents kmultiarch only looks into and never edits (a CustomResourceDefinition's
schema, hundreds of KB): composing one builds about 35 bytes of nodes per byte of YAML and
checks what a manifest must be; an outline takes a fraction of the time and memory. Scalars are
not resolved (``true``, ``1`` stay strings), tags are ignored, an alias reads as None (never
expanded: no alias bomb), and nesting deeper than ``max_depth`` or text libyaml refuses gives
None: an outline is for reading hints, never for deciding what a manifest says.
"""

from __future__ import annotations

from typing import Any

import yaml
from yaml._yaml import CParser

__all__ = ["outline"]

#: As deep as the manifest reader accepts.
MAX_DEPTH = 1000


def outline(text: str, max_depth: int = MAX_DEPTH) -> object:
    """The first document of ``text`` as plain data (scalars as strings); None when it is
    empty, deeper than ``max_depth`` or not YAML libyaml reads."""
    parser = CParser(text)
    # Each open collection: the container, and for a mapping the key awaiting its value.
    stack: list[tuple[dict[Any, Any] | list[Any], list[object]]] = []
    root: object = None
    try:
        while parser.check_event():
            event = parser.get_event()
            if isinstance(event, yaml.DocumentEndEvent):
                return root
            if isinstance(event, yaml.CollectionEndEvent):
                container, _ = stack.pop()
                if not stack:
                    root = container
                continue
            if isinstance(event, yaml.MappingStartEvent | yaml.SequenceStartEvent):
                if len(stack) >= max_depth:
                    return None
                value: object = {} if isinstance(event, yaml.MappingStartEvent) else []
            elif isinstance(event, yaml.ScalarEvent):
                value = event.value
            elif isinstance(event, yaml.AliasEvent):
                value = None
            else:
                continue  # stream and document starts
            if stack:
                _add(stack[-1], value)
            elif not isinstance(value, dict | list):
                root = value
            if isinstance(value, dict | list):
                stack.append((value, []))
    except yaml.YAMLError:
        return None
    finally:
        parser.dispose()
    return root


def _add(top: tuple[dict[Any, Any] | list[Any], list[object]], value: object) -> None:
    container, pending = top
    if isinstance(container, list):
        container.append(value)
    elif not pending:
        # A key is a scalar; a collection as a key (YAML allows it, no manifest has one) is
        # kept as None: the outline only reads the keys of manifests.
        pending.append(value if not isinstance(value, dict | list) else None)
    else:
        container[pending.pop()] = value
