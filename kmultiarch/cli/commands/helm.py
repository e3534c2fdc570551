"""``kmultiarch helm-postrender``: the Helm 4 post-renderer plugin's entry point.

Helm 4 runs a ``postrender/v1`` plugin with its stderr captured and thrown away, and on a
non-zero exit shows only ``plugin "kmultiarch" exited with error``. So this adapter runs
``mutate`` with stdout and stderr captured and, when it fails, exits 0 with one document that
Helm's manifest sorter refuses: its ``postrenderer.helm.sh/postrender-filename`` annotation (the
name Helm gives the file) is the error message, and its ``kind`` is a list. Helm then fails
before anything reaches a cluster with ``Error: YAML parse error on <the message>: ...``, the
one line the user sees. Every message is also appended to ``$KMULTIARCH_WARNINGS_FILE``.

Outside Helm 4 (no ``HELM_PLUGIN_NAME`` in the environment) nothing is disguised: a failure
exits non-zero with the messages on stderr, as ``mutate`` does.
"""

from __future__ import annotations

import io
import json
import posixpath
import sys
from collections.abc import Callable
from contextlib import redirect_stderr, redirect_stdout

#: Helm 4 keeps each post-rendered document's template file name in this annotation.
FILENAME_ANNOTATION = "postrenderer.helm.sh/postrender-filename"
PLUGIN_ENV = "HELM_PLUGIN_NAME"
#: Helm 4 refuses empty post-renderer output; an empty stream is written as one empty document.
EMPTY_STREAM = "---\n"
_ERROR_PREFIX = "kmultiarch: error: "
_GENERIC_FAILURE = "nothing was written: "
_MAX_ERRORS_SHOWN = 3


def helm_postrender(arguments: list[str], run: Callable[[list[str]], int]) -> int:
    """``mutate`` with ``arguments``, run by ``run`` (the CLI's entry point, handed down so that
    no command imports the application back)."""
    import os

    stdout, stderr = io.StringIO(), io.StringIO()
    with redirect_stdout(stdout), redirect_stderr(stderr):
        code = run(["mutate", *arguments])
    diagnostics = stderr.getvalue()
    sys.stderr.write(diagnostics)
    if code == 0:
        sys.stdout.write(stdout.getvalue() if stdout.getvalue().strip() else EMPTY_STREAM)
        return 0
    if not os.environ.get(PLUGIN_ENV):
        return code
    sys.stdout.write(failure_document(failure_message(diagnostics, code)))
    return 0


def failure_message(diagnostics: str, code: int) -> str:
    """One line from what ``mutate`` wrote to stderr: its errors, the first few of them."""
    lines = [line.strip() for line in diagnostics.splitlines() if line.strip()]
    errors = [line[len(_ERROR_PREFIX) :] for line in lines if line.startswith(_ERROR_PREFIX)]
    specific = [error for error in errors if not error.startswith(_GENERIC_FAILURE)]
    errors = specific or errors
    if not errors:  # a usage error, as click words it
        errors = [line.removeprefix("Error: ") for line in lines if line.startswith("Error: ")]
    if not errors:
        errors = [f"kmultiarch mutate exited with status {code}"]
    shown = "; ".join(errors[:_MAX_ERRORS_SHOWN])
    if len(errors) > _MAX_ERRORS_SHOWN:
        shown += f"; and {len(errors) - _MAX_ERRORS_SHOWN} more"
    return f"kmultiarch stopped the render: {shown}"


def failure_document(message: str) -> str:
    """A document Helm 4 refuses, naming ``message`` in the error it prints.

    Helm skips files whose base name starts with ``_`` (partials): the suffix puts the last
    ``/`` of the name under our control, so the document can never be skipped.
    """
    name = " ".join(message.split())
    name += " (Helm 4 hides plugin stderr; every message: KMULTIARCH_WARNINGS_FILE=/path/to/file)"
    assert not posixpath.basename(name).startswith("_")
    return (
        "# kmultiarch failed. Helm 4 does not show a post-renderer's stderr, so the error is the\n"
        "# file name of this document, which Helm refuses (kind is not a string).\n"
        "apiVersion: kmultiarch.dev/v1alpha1\n"
        "kind: [PostRenderFailure]\n"
        "metadata:\n"
        "  name: kmultiarch-post-render-failure\n"
        "  annotations:\n"
        f"    {FILENAME_ANNOTATION}: {json.dumps(name, ensure_ascii=False)}\n"
    )
