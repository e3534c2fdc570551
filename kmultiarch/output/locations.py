"""Where a finding is, said the way its reader knows the place: ``FILE:LINE: Kind name``, and
for a Helm stream on stdin the chart template it came from (Helm 4 names it in an annotation of
each post-rendered document, Helm 3 and ``helm template`` in a ``# Source:`` comment before
it) instead of ``<stdin>:LINE``."""

from __future__ import annotations

import functools
import re
from dataclasses import replace

from kmultiarch.core.findings import Finding
from kmultiarch.engine import EngineResult
from kmultiarch.io.inputs import STDIN_NAME

__all__ = ["HELM_FILENAME_ANNOTATION", "finding_location", "helm_template_of"]

#: Helm 4 names each post-rendered document's template in this annotation.
HELM_FILENAME_ANNOTATION = "postrenderer.helm.sh/postrender-filename"
_HELM_SOURCE_COMMENT = re.compile(r"# Source: (\S.*?)\s*\Z")
# What comes before a document's content: blank lines, comments, markers, directives.
_HEAD_LINE = re.compile(r"(?:---|\.\.\.)?[ \t]*(?:#.*)?\s*\Z|%.*\s*\Z")


def finding_location(result: EngineResult, finding: Finding) -> str:
    """``FILE:LINE: Kind name`` (empty for a finding about no file: a cache that could not be
    used)."""
    if finding.source == STDIN_NAME and finding.document_index is not None:
        template = helm_template_of(result, finding.source, finding.document_index)
        if template:
            return replace(finding, source=template, line=None).location()
    return finding.location()


def helm_template_of(result: EngineResult, source: str, index: int) -> str | None:
    outcomes = result.documents.get(source, [])
    if index >= len(outcomes):
        return None
    document = outcomes[index].document
    value = document.value
    metadata = value.get("metadata") if isinstance(value, dict) else None
    annotations = metadata.get("annotations") if isinstance(metadata, dict) else None
    if isinstance(annotations, dict) and isinstance(annotations.get(HELM_FILENAME_ANNOTATION), str):
        return str(annotations[HELM_FILENAME_ANNOTATION])
    return _source_comment(document.text)


@functools.lru_cache(maxsize=16)
def _source_comment(text: str) -> str | None:
    """The template a ``# Source: PATH`` comment at the head of a document names. Helm writes
    it on the line after each document's ``---`` (helm/helm pkg/action/action.go,
    renderResources: ``"---\n# Source: %s\n%s\n"``), so only the lines before the document's
    content are read: a document's findings asked for it each, and searching the whole text
    each time was quadratic (50,000 warnings of a 50,000-line document on stdin: 47 s). The
    last documents' answers are kept, a document's findings coming together."""
    position = 0
    while position < len(text):
        end = text.find("\n", position)
        end = len(text) if end < 0 else end + 1
        line = text[position:end]
        match = _HELM_SOURCE_COMMENT.match(line)
        if match:
            return match.group(1)
        if not _HEAD_LINE.match(line):
            return None  # the content starts: no comment of Helm's further down
        position = end
    return None
