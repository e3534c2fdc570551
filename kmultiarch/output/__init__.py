"""Formatters: the data of ``check`` and ``report`` as text, JSON, GitHub annotations, SARIF or
HTML. Pure functions from data to a string; only the commands write it out."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence

from kmultiarch.output.safe import printable

CHECK_FORMATS = ("text", "json", "github", "sarif")
REPORT_FORMATS = ("text", "json", "html")


def default_format(environ: Mapping[str, str] | None = None) -> str:
    """``github`` inside GitHub Actions, else ``text`` (yamllint's ``auto``; the text table
    reads the same on a terminal and in a pipe, so there is no third case)."""
    environ = os.environ if environ is None else environ
    return "github" if environ.get("GITHUB_ACTIONS") == "true" else "text"


def display_path(source: str) -> str:
    """A source as annotations and SARIF name it: relative, with forward slashes."""
    if source.startswith("<"):
        return source
    path = source
    if os.path.isabs(path):
        try:
            relative = os.path.relpath(path)
        except ValueError:
            relative = path
        if not relative.startswith(".."):
            path = relative
    path = path.replace(os.sep, "/")
    while path.startswith("./"):
        path = path[2:]
    return path


def table(rows: Sequence[Sequence[str]], headers: Sequence[str]) -> list[str]:
    """Columns padded to their widest cell; the last column is not padded."""
    cleaned = [[printable(cell) for cell in row] for row in rows]
    widths = [len(h) for h in headers]
    for row in cleaned:
        for index, cell in enumerate(row):
            widths[index] = max(widths[index], len(cell))
    lines = []
    for row in [list(headers), *cleaned]:
        cells = [cell.ljust(widths[i]) for i, cell in enumerate(row[:-1])]
        # A line starts with its first non-empty cell: checked as a whole line too.
        lines.append(printable("  ".join([*cells, row[-1]]).rstrip()))
    return lines


__all__ = ["CHECK_FORMATS", "REPORT_FORMATS", "default_format", "display_path", "table"]
