"""How ``kmultiarch helm-postrender`` turns a failed ``mutate`` into the one line Helm 4 shows."""

from __future__ import annotations

import posixpath

import pytest
import yaml

from kmultiarch.cli.commands.helm import FILENAME_ANNOTATION, failure_document, failure_message


@pytest.mark.parametrize(
    ("stderr", "expected"),
    [
        (
            "kmultiarch: error: a/t.yaml: Deployment web: image 'x:1' ...\n"
            "kmultiarch: error: nothing was written: fix the errors above or set failurePolicy: "
            "Ignore\n",
            "kmultiarch stopped the render: a/t.yaml: Deployment web: image 'x:1' ...",
        ),
        (
            "kmultiarch: warning: something\n"
            "kmultiarch: error: policy.yaml: policy file not found\n",
            "kmultiarch stopped the render: policy.yaml: policy file not found",
        ),
        (
            "Usage: kmultiarch mutate [OPTIONS] [PATHS]...\nTry 'kmultiarch mutate -h' for help."
            "\n\nError: No such option: --bogus\n",
            "kmultiarch stopped the render: No such option: --bogus",
        ),
        ("", "kmultiarch stopped the render: kmultiarch mutate exited with status 3"),
        (
            "".join(f"kmultiarch: error: e{n}\n" for n in range(5)),
            "kmultiarch stopped the render: e0; e1; e2; and 2 more",
        ),
    ],
)
def test_failure_message(stderr: str, expected: str) -> None:
    assert failure_message(stderr, 3 if not stderr else 1) == expected


@pytest.mark.parametrize(
    "message",
    [
        "kmultiarch stopped the render: image 'registry.test/_private:1.0' could not be resolved",
        'quotes " and \\ backslashes, unicode ü, a tab\there',
        "line\nbreaks\r\nare folded",
    ],
)
def test_failure_document_is_refused_by_helm_and_names_the_message(message: str) -> None:
    document = yaml.safe_load(failure_document(message))
    assert not isinstance(document["kind"], str)  # Helm's SimpleHead cannot read it
    name = document["metadata"]["annotations"][FILENAME_ANNOTATION]
    assert name.startswith(" ".join(message.split()))
    assert "\n" not in name and "\r" not in name
    # Helm skips files whose base name starts with "_" (partials): never this one.
    assert not posixpath.basename(name).startswith("_")
