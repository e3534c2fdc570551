"""docs/operators.md's catalogue table and its sources are the catalogue's (issue 29, item 6):
rendered from :data:`kmultiarch.core.operators.model.CATALOGUE`, so the docs cannot drift from the
data. ``python3 tests/unit/test_operators_docs.py`` prints them to paste."""

from __future__ import annotations

from pathlib import Path

from kmultiarch.core.operators.catalogue import CATALOGUE
from kmultiarch.core.operators.model import ImageSource, OperatorKind, Placement
from kmultiarch.errors import format_field_path

DOCS = Path(__file__).resolve().parents[2] / "docs" / "operators.md"


def _pointer(tokens: tuple[str, ...]) -> str:
    return "/" + "/".join(token.replace("~", "~0").replace("/", "~1") for token in tokens)


def _condition_text(
    conditions: tuple[tuple[tuple[str, ...], tuple[str, ...]], ...], joiner: str = " and "
) -> str:
    """``when`` needs every condition; ``unless`` and the ``*_when`` lists any (joiner or)."""
    return joiner.join(
        f"{_pointer(pointer)} {'in ' + ', '.join(values) if values else 'set'}"
        for pointer, values in conditions
    )


def _placed_by(placement: Placement) -> str:
    text = _pointer(placement.path)
    notes = []
    if placement.pod_spec:
        notes.append("pod spec")
    if placement.shape == "node-affinity":
        notes.append("bare nodeAffinity")
    if placement.versions:
        notes.append(", ".join(placement.versions) + " only")
    if placement.when:
        notes.append("when " + _condition_text(placement.when))
    if placement.unless:
        notes.append("unless " + _condition_text(placement.unless, " or "))
    if placement.shape == "advanced-affinity":
        notes.append("affinity in affinity.advanced")
    if placement.default_affinity_when:
        notes.append(
            "no affinity created when " + _condition_text(placement.default_affinity_when, " or ")
        )
    if placement.added_terms_when:
        notes.append(
            "no affinity written when " + _condition_text(placement.added_terms_when, " or ")
        )
    if placement.items_in_use:
        notes.append(f"the items its hosts run ({placement.items_in_use})")
    if placement.image_built_by is not None:
        notes.append(f"runs the image {_pointer(placement.image_built_by)}'s pod builds")
    if placement.shape == "pod-template-affinity":
        notes.append("affinity in podTemplateSpec.spec")
    if not placement.writes_affinity:
        notes.append("no affinity field: tolerations only")
    if notes:
        text += f" ({'; '.join(notes)})"
    if placement.creates and placement.judged_only_when_missing:
        text += ", never created (the pods then take another resource's)"
    elif placement.creates:
        text += f", creates {placement.creates}"
    return f"`{text}`"


def _source_text(source: ImageSource) -> str:
    parts = [_pointer(pointer) for pointer in source.alternatives] + list(source.templates)
    text = ", ".join(parts)
    if source.required or source.templates:
        text = f"[{text}]"
    if source.related is not None:
        text += f" of the {source.related[1]} its {source.related[2]} label names"
    if source.catalog is not None:
        catalog = source.catalog
        text += (
            f", else the {' or '.join(kind for kind, _ in catalog.kinds)} "
            f"{_pointer(catalog.reference)} names: its {_pointer(catalog.entries)} entry of "
            f"that {catalog.selector}"
        )
    if source.selected_by:
        text = f"the images {source.selected_by} selects"
    if source.when:
        text += " when " + _condition_text(source.when)
    return f"`{text}`"


def _images(placement: Placement) -> list[str]:
    found = [_source_text(source) for source in placement.images]
    if placement.pod_spec:
        found.append("the pod spec's containers")
    return found


def _merge(placement: Placement) -> str:
    if placement.inherits is None:
        return ""
    fields = ", ".join(f"{name}: {merge}" for name, merge in placement.inherits.fields)
    return f"over `{_pointer(placement.inherits.path)}`: {fields}"


def render_table(entries: tuple[OperatorKind, ...] = CATALOGUE) -> str:
    """One row per placement of each entry (its kind on the first)."""
    rows = [
        "| group / kind | placed by (created when missing: the last tokens counted) | images | "
        "merged over (per field: replace, merge-by-key, append, by-position) | what the operator "
        "adds / defaults |",
        "|---|---|---|---|---|",
    ]
    for entry in entries:
        for position, placement in enumerate(entry.placements):
            kind = f"`{entry.group}` {entry.kind}" if position == 0 else "〃"
            defaults = ", ".join(f"`{image}`" for image in entry.default_images)
            adds = entry.adds if position == 0 else ""
            if defaults and position == 0:
                adds = f"{adds}; default: {defaults}" if adds else f"default: {defaults}"
            rows.append(
                f"| {kind} | {_placed_by(placement)} | {', '.join(_images(placement))} | "
                f"{_merge(placement)} | {adds} |"
            )
    return "\n".join(rows)


def render_sources(entries: tuple[OperatorKind, ...] = CATALOGUE) -> str:
    """Each entry's CRD fields, and each placement's source in the operator's code."""
    lines = []
    for entry in entries:
        lines.append(f"- **{entry.kind}** (`{entry.group}`): {entry.cites}")
        seen: set[str] = set()
        for placement in entry.placements:
            if placement.cites and placement.cites not in seen:
                seen.add(placement.cites)
                lines.append(f"  - `{format_field_path(placement.path)}`: {placement.cites}")
    return "\n".join(lines)


def test_docs_operators_md_shows_the_catalogue_as_it_is() -> None:
    text = DOCS.read_text(encoding="utf-8")
    assert render_table() in text
    assert render_sources() in text


def test_every_merge_rule_and_computed_image_cites_the_operators_code() -> None:
    missing = [
        (entry.kind, placement.path)
        for entry in CATALOGUE
        for placement in entry.placements
        if (
            placement.inherits is not None
            or placement.versions
            or placement.when
            or placement.unless
            or any(source.templates for source in placement.images)
        )
        and "/" not in placement.cites  # a repository, a file
    ]
    assert missing == []


def rewritten_docs(text: str) -> str:
    """docs/operators.md with its table and sources rendered anew (the blocks found by their
    first lines: the table's header, the first entry's source)."""
    lines = text.split("\n")
    for rendered, is_block in (
        (render_table(), lambda line: line.startswith("|")),
        (render_sources(), lambda line: line.startswith(("- **", "  - "))),
    ):
        new = rendered.split("\n")
        first = next(
            i
            for i, line in enumerate(lines)
            if line.startswith(new[0][:20]) and line.split("(")[0] == new[0].split("(")[0]
        )
        end = first
        while end < len(lines) and is_block(lines[end]):
            end += 1
        lines[first:end] = new
    return "\n".join(lines)


def test_the_committed_docs_are_what_write_renders() -> None:
    text = DOCS.read_text(encoding="utf-8")
    assert rewritten_docs(text) == text  # the committed docs are what --write makes


if __name__ == "__main__":
    # python tests/unit/test_operators_docs.py [--write]: print the blocks, or rewrite them
    # in docs/operators.md after a catalogue change.
    import sys

    if "--write" in sys.argv:
        DOCS.write_text(rewritten_docs(DOCS.read_text(encoding="utf-8")), encoding="utf-8")
    else:
        print(render_table())
        print()
        print(render_sources())
