"""Edits of a JSON document (a YAML stream may hold one): rewritten as JSON, with the document's
own indentation.
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING

from kmultiarch.core.patch import apply_patch, json_pointer

if TYPE_CHECKING:
    from kmultiarch.yaml.scalars import _Operation


def _is_json(body: str) -> bool:
    stripped = body.strip()
    if not stripped.startswith(("{", "[")):
        return False
    try:
        json.loads(stripped)
    except ValueError:
        return False
    return True


def _json_edit(body: str, operations: list[_Operation]) -> str:
    """A JSON document with the operations applied, written as JSON again; its numbers keep
    the text they were written as (a ``3e1`` stays the number ``3e1``, not the string YAML
    1.1 reads it as)."""
    lines = body.strip("\r\n").splitlines()
    indent = None
    if len(lines) > 1:
        second = lines[1]
        indent = len(second) - len(second.lstrip(" ")) or None
    trailing = body[len(body.rstrip("\r\n")) :]
    numbers: list[str] = []

    def keep(text: str) -> str:
        numbers.append(text)
        return f"\x00{len(numbers) - 1}\x00"

    value = json.loads(body, parse_int=keep, parse_float=keep, parse_constant=keep)
    patched = apply_patch(
        value,
        [
            {"op": operation.kind, "path": json_pointer(operation.path), "value": operation.value}
            for operation in operations
        ],
    )
    text = json.dumps(patched, indent=indent, ensure_ascii=False)
    text = re.sub(r'"\\u0000(\d+)\\u0000"', lambda match: numbers[int(match.group(1))], text)
    return text + (trailing or "")
