"""The unknown-pod-kind scan and its suggestion are linear in the resource and bounded
(issue 36): a 36 KB resource with 400 image + tolerations objects took 18 s, one whose aliases
made 1,024 paths ran past five CPU-minutes. Operations are counted, not timed: the count
doubles when the resource doubles, and the bounds end in the warning, never in a hang."""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from types import FrameType
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kmultiarch.api import mutate_text
from kmultiarch.core.findings import UNKNOWN_POD_KIND
from kmultiarch.core.images.platform import Platform
from kmultiarch.core.images.reference import ImageRef
from kmultiarch.core.operators import unknownkinds
from kmultiarch.core.operators.unknownkinds import PodShapedField, suggested_entry, unknown_pod_kind
from kmultiarch.core.resolution import Resolution


def _widget(objects: int) -> dict[str, Any]:
    """A resource with ``objects`` objects side by side, each an image and its tolerations."""
    return {
        "apiVersion": "acme.example/v1",
        "kind": "Widget",
        "metadata": {"name": "w"},
        "spec": {
            f"c{index}": {
                "image": f"registry.example/app{index}:1.0",
                "tolerations": [{"key": "k", "effect": "NoSchedule"}],
            }
            for index in range(objects)
        },
    }


def _calls(work: Callable[[], object]) -> int:
    """The Python and builtin function calls ``work`` makes (sys.setprofile's events)."""
    count = 0

    def profile(frame: FrameType, event: str, arg: object) -> None:
        nonlocal count
        if event in ("call", "c_call"):
            count += 1

    sys.setprofile(profile)
    try:
        work()
    finally:
        sys.setprofile(None)
    return count


def test_the_unknown_pod_kind_suggestion_grows_linearly_not_cubically(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Each image was compared with every placement, and each comparison again with every
    placement: doubling the objects multiplied the work by eight."""
    monkeypatch.setattr(unknownkinds, "MAX_ENTRY_PATHS", 10**9, raising=False)
    small = _calls(lambda: unknown_pod_kind(_widget(60)))
    large = _calls(lambda: unknown_pod_kind(_widget(120)))
    assert large < 2.5 * small, (small, large)


def test_a_resource_whose_aliases_expand_past_the_scan_bound_ends_in_the_warning() -> None:
    """Aliases make a 50 KB text a resource of over a quarter of a million nodes: the scan stops
    at its bound and the warning says the entry may be incomplete."""
    items = "".join(f"    - {{image: registry.example/app{i}:1.0}}\n" for i in range(1_000))
    references = "".join(f"  r{i}: *items\n" for i in range(130))
    text = (
        "apiVersion: acme.example/v1\nkind: Widget\nmetadata: {name: w}\nspec:\n"
        f"  items: &items\n{items}{references}"
    )
    result = mutate_text(text, resolve=_resolve)
    (warning,) = [f for f in result.findings if f.rule == UNKNOWN_POD_KIND]
    assert (
        f"the scan of the resource stopped after {unknownkinds.MAX_SCANNED_NODES:,} nodes"
        in warning.message
    )
    assert "the entry may be incomplete" in warning.message
    assert warning.suggestion is not None
    assert "/spec/items/*" in warning.suggestion


def test_an_entry_of_more_paths_than_the_bound_holds_the_first_and_says_so() -> None:
    found = unknown_pod_kind(_widget(200))
    assert found is not None
    placements = found.entry["placements"]
    assert isinstance(placements, list)
    paths = {placement["path"] for placement in placements}
    paths |= {image for placement in placements for image in placement.get("images", [])}
    assert len(paths) == unknownkinds.MAX_ENTRY_PATHS
    assert placements[0] == {"path": "/spec/c0", "images": ["/spec/c0/image"]}
    assert (
        f"the entry holds the first {unknownkinds.MAX_ENTRY_PATHS} of its 400 paths"
        in found.message()
    )


_TOKENS = st.sampled_from(["spec", "a", "b", "template", 0, 1])
_PATHS = st.lists(_TOKENS, min_size=1, max_size=4).map(tuple)


@settings(max_examples=300, deadline=None)
@given(
    placements=st.lists(_PATHS, max_size=5),
    images=st.lists(_PATHS, max_size=5),
)
def test_images_go_with_the_placements_the_rule_says(
    placements: list[tuple[str | int, ...]], images: list[tuple[str | int, ...]]
) -> None:
    """The rule, written as directly as it reads (an image goes with a placement above or
    below its holder; with every one when with none), against the linear computation."""
    fields = [PodShapedField((*path, "tolerations"), "tolerations") for path in placements]
    fields += [PodShapedField((*path, "image"), "image") for path in images]
    entry, guessed = suggested_entry("acme.example/v1", "Widget", fields)
    if guessed:
        return  # no placement: the guess is tested in test_unknownkinds.py
    patterns = list(dict.fromkeys(_pattern(path) for path in placements))
    image_patterns = list(dict.fromkeys(_pattern((*path, "image")) for path in images))

    def related(image: tuple[object, ...], placement: tuple[object, ...]) -> bool:
        holder = image[:-1]
        return placement[: len(holder)] == holder or holder[: len(placement)] == placement

    expected = []
    for placement in patterns:
        attached = [
            image
            for image in image_patterns
            if related(image, placement) or not any(related(image, p) for p in patterns)
        ]
        expected.append([_pointer(image) for image in attached])
    placed = entry["placements"]
    assert isinstance(placed, list)
    assert [placement.get("images", []) for placement in placed] == expected


def _pattern(path: tuple[str | int, ...]) -> tuple[str, ...]:
    return tuple("*" if isinstance(token, int) else token for token in path)


def _pointer(pattern: tuple[object, ...]) -> str:
    return "".join(f"/{token}" for token in pattern)


def _resolve(references: list[ImageRef]) -> Mapping[ImageRef, Resolution]:
    platforms = frozenset({Platform("linux", "amd64")})
    return {r: Resolution(r, platforms, "sha256:" + "0" * 64) for r in references}


def test_a_scan_that_meets_its_bound_before_any_field_still_warns() -> None:
    """Past the bound nothing is read: a resource whose first quarter million nodes hold no
    pod-shaped field is said to be unscanned, not passed over in silence."""
    items = "".join(f"    - {{name: n{i}}}\n" for i in range(1_000))
    references = "".join(f"  r{i}: *items\n" for i in range(200))
    text = (
        "apiVersion: acme.example/v1\nkind: Widget\nmetadata: {name: w}\nspec:\n"
        f"  items: &items\n{items}{references}  image: registry.example/app:1.0\n"
    )
    result = mutate_text(text, resolve=_resolve)
    (warning,) = [f for f in result.findings if f.rule == UNKNOWN_POD_KIND]
    assert "a scan met its bound before it knew" in warning.message
    assert "the scan of the resource stopped after" in warning.message
