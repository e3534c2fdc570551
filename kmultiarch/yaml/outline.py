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

from typing import Any, cast

import yaml
from yaml._yaml import CParser

__all__ = ["outline"]

#: As deep as the manifest reader accepts.
MAX_DEPTH = 1000


_MAPPING, _SEQUENCE, _SCALAR, _ALIAS, _END, _DOCUMENT_END = range(6)
#: What each event is to the outline (any other event opens nothing and adds nothing).
_EVENTS = {
    yaml.MappingStartEvent: _MAPPING,
    yaml.SequenceStartEvent: _SEQUENCE,
    yaml.ScalarEvent: _SCALAR,
    yaml.AliasEvent: _ALIAS,
    yaml.MappingEndEvent: _END,
    yaml.SequenceEndEvent: _END,
    yaml.DocumentEndEvent: _DOCUMENT_END,
}
#: A mapping's next event is a key.
_KEY: Any = object()


def outline(text: str, max_depth: int = MAX_DEPTH) -> object:
    """The first document of ``text`` as plain data (scalars as strings); None when it is
    empty, deeper than ``max_depth`` or not YAML libyaml reads."""
    parser = CParser(text)
    # Each open collection, and for each its pending key (_KEY: a mapping awaits a key; None
    # for a sequence). A key is a scalar; a collection as a key (YAML allows it, no manifest has
    # one) is kept as None: the outline only reads the keys of manifests.
    containers: list[Any] = []
    keys: list[Any] = []
    root: object = None
    events = _EVENTS
    try:
        while (event := parser.get_event()) is not None:
            what = events.get(type(event))
            if what is None:
                continue  # stream and document starts, the stream's end
            if what == _END:
                container = containers.pop()
                keys.pop()
                if not containers:
                    root = container
                continue
            if what == _DOCUMENT_END:
                return root
            if what == _SCALAR:
                value: Any = cast(yaml.ScalarEvent, event).value
            elif what == _ALIAS:
                value = None
            else:
                if len(containers) >= max_depth:
                    return None
                value = {} if what == _MAPPING else []
            if containers:
                key = keys[-1]
                if key is None:
                    containers[-1].append(value)
                elif key is _KEY:
                    keys[-1] = value if what == _SCALAR else _NO_NAME
                else:
                    containers[-1][None if key is _NO_NAME else key] = value
                    keys[-1] = _KEY
            elif what == _SCALAR:
                root = value
            if what in (_MAPPING, _SEQUENCE):
                containers.append(value)
                keys.append(_KEY if what == _MAPPING else None)
    except yaml.YAMLError:
        return None
    finally:
        parser.dispose()
    return root


#: A key that is not a scalar (or an alias), read as None.
_NO_NAME: Any = object()
