"""What the catalogue's modules share: image sources by pointer."""

from __future__ import annotations

from kmultiarch.core.operators.model import ImageSource, _p

__all__ = ["image_at", "optional_image"]


def image_at(*pointers: str, required: bool = True) -> ImageSource:
    """The image at the first of ``pointers`` the resource has; ``required``: one must be,
    else the pods run the operator's choice."""
    return ImageSource(tuple(_p(pointer) for pointer in pointers), required)


def optional_image(pointer: str) -> ImageSource:
    """Every image at ``pointer`` (sidecars, init containers), none if there is none."""
    return image_at(pointer, required=False)
