"""``spec.annotate``: where the platforms annotation goes and which operation writes it."""

from __future__ import annotations

from typing import Any

import pytest

from kmultiarch.core.images.platform import Platform
from kmultiarch.core.placement.annotate import annotation_operations, template_path

AMD64, ARM64 = Platform("linux", "amd64"), Platform("linux", "arm64")
CLUSTER = (AMD64, ARM64)
KEY = "/spec/template/metadata/annotations/kmultiarch.dev~1platforms"


def deployment(template: dict[str, Any]) -> dict[str, Any]:
    return {"spec": {"template": {**template, "spec": {"containers": []}}}}


@pytest.mark.parametrize(
    ("template", "expected"),
    [
        (
            {},
            [
                {
                    "op": "add",
                    "path": "/spec/template/metadata",
                    "value": {"annotations": {"kmultiarch.dev/platforms": "linux/amd64"}},
                }
            ],
        ),
        (
            {"metadata": None},
            [
                {
                    "op": "replace",
                    "path": "/spec/template/metadata",
                    "value": {"annotations": {"kmultiarch.dev/platforms": "linux/amd64"}},
                }
            ],
        ),
        (
            {"metadata": {"labels": {"a": "b"}}},
            [
                {
                    "op": "add",
                    "path": "/spec/template/metadata/annotations",
                    "value": {"kmultiarch.dev/platforms": "linux/amd64"},
                }
            ],
        ),
        (
            {"metadata": {"annotations": {"kmultiarch.dev/platforms": "linux/arm64"}}},
            [{"op": "replace", "path": KEY, "value": "linux/amd64"}],
        ),
        ({"metadata": {"annotations": {"kmultiarch.dev/platforms": "linux/amd64"}}}, []),
    ],
)
def test_annotation_operations(template: dict[str, Any], expected: list[Any]) -> None:
    document = deployment(template)
    path = ("spec", "template", "spec")
    operations = annotation_operations(document, path, frozenset({AMD64}), CLUSTER)
    assert [operation.as_json() for operation in operations] == expected


def test_value_follows_the_policy_order() -> None:
    document = deployment({"metadata": {"annotations": {}}})
    (operation,) = annotation_operations(
        document, ("spec", "template", "spec"), frozenset({ARM64, AMD64}), CLUSTER
    )
    assert operation.value == "linux/amd64,linux/arm64"


def test_template_paths() -> None:
    assert template_path(("spec", "template", "spec")) == ("spec", "template")
    assert template_path(("spec",)) == ()
    assert template_path(("spec", "templates", 2)) == ("spec", "templates", 2)  # Argo
