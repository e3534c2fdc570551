"""Reading a policy's ``spec.podSpecs``: the operator kinds a user declares, their pointers,
placements, image sources, conditions and inheritance, into the operators' model
(:mod:`kmultiarch.core.operators.model`). Pure.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import cast

from kmultiarch.core.operators.model import (
    IMAGE_PARAMETERS,
    MAX_POINTER_TOKENS,
    MERGES,
    SHAPES,
    Condition,
    ImageSource,
    Inheritance,
    Merge,
    OperatorKind,
    Placement,
    Shape,
    api_group,
    placement_problems,
)
from kmultiarch.core.patch import pointer_tokens
from kmultiarch.core.policy.model import Policy
from kmultiarch.core.policy.reading import Where, check_keys


def _flag(value: object, where: Where) -> bool:
    if not isinstance(value, bool):
        raise where.error(f"expected true or false, got {value!r}")
    return value


def _pod_specs(value: object, where: Where, _read: Policy) -> tuple[OperatorKind, ...]:
    """``spec.podSpecs``: per kind, pod spec paths (``path``, ``*`` for every item) or
    placements (objects holding the scheduling fields, with the pointers of their images),
    images the operator adds and images it runs by default."""
    if value is None:
        return ()
    if not isinstance(value, list):
        raise where.error(
            "expected a list of {apiVersion, kind, path} or {apiVersion, kind, placements}"
        )
    entries = []
    for position, item in enumerate(value):
        here = where / position
        if not isinstance(item, Mapping):
            raise here.error("expected a mapping with apiVersion, kind, path")
        check_keys(
            item,
            {
                "apiVersion",
                "kind",
                "path",
                "placements",
                "operatorImages",
                "defaultImages",
                "imageParameters",
            },
            here,
        )
        image_parameters = item.get("imageParameters", "")
        if image_parameters and image_parameters not in IMAGE_PARAMETERS:
            raise (here / "imageParameters").error(
                f"expected one of {', '.join(IMAGE_PARAMETERS)} (how the controller fills in "
                "variables of its images)"
            )
        for key in ("apiVersion", "kind"):
            if not isinstance(item.get(key), str) or not item[key]:
                raise (here / key).error("expected a non-empty string")
        placements: list[Placement] = []
        if item.get("path") is not None:
            placements.append(Placement(_pointer(item["path"], here / "path"), pod_spec=True))
        for index, raw in enumerate(_listed(item.get("placements"), here / "placements")):
            placements.append(_placement(raw, here / "placements" / index))
        if not placements and not item.get("defaultImages") and not item.get("operatorImages"):
            raise here.error(
                "give path (a pod spec, like /spec/template/spec) or "
                "placements (objects holding affinity, tolerations and nodeSelector)"
            )
        api_version = str(item["apiVersion"])
        entries.append(
            OperatorKind(
                api_group(api_version),
                str(item["kind"]),
                tuple(placements),
                _image_list(item.get("operatorImages"), here / "operatorImages"),
                _image_list(item.get("defaultImages"), here / "defaultImages"),
                cites=str(here),
                image_parameters=str(image_parameters),
            )
        )
    return tuple(entries)


def _listed(value: object, where: Where) -> list[object]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise where.error("expected a list")
    return value


def _pointer(value: object, where: Where) -> tuple[str, ...]:
    if not isinstance(value, str) or not value:
        raise where.error("expected a JSON pointer like /spec/template/spec")
    try:
        tokens = pointer_tokens(value)
    except ValueError as exc:
        raise where.error(f"{exc} (e.g. /spec/template/spec)") from exc
    if len(tokens) > MAX_POINTER_TOKENS:
        raise where.error(
            f"a pointer of {len(tokens)} tokens; at most {MAX_POINTER_TOKENS} (operators keep "
            "their scheduling fields and images far less deep)"
        )
    if not tokens or not all(tokens):
        raise where.error("expected a JSON pointer to an object, like /spec/template/spec")
    return tokens


def _placement(value: object, where: Where) -> Placement:
    if not isinstance(value, Mapping):
        raise where.error("expected a mapping with path and images")
    check_keys(
        value,
        {
            "path",
            "images",
            "podSpec",
            "creates",
            "shape",
            "inherits",
            "versions",
            "when",
            "unless",
            "nodeSelectorFrom",
            "injectedBy",
            "defaultAffinityWhen",
            "addedTermsWhen",
            "writesAffinity",
        },
        where,
    )
    path = _pointer(value.get("path"), where / "path")
    images = [
        _image_source(element, where / "images" / index)
        for index, element in enumerate(_listed(value.get("images"), where / "images"))
    ]
    creates = value.get("creates", 0)
    if isinstance(creates, bool) or not isinstance(creates, int):
        raise (where / "creates").error(
            f"expected how many of the path's last tokens kmultiarch may create (0 to {len(path)})"
        )
    shape = value.get("shape", "affinity")
    if shape not in SHAPES:
        raise (where / "shape").error(f"expected one of {', '.join(SHAPES)}")
    versions = _listed(value.get("versions"), where / "versions")
    if not all(isinstance(version, str) and version and "/" not in version for version in versions):
        raise (where / "versions").error("expected a list of API versions like v1beta1")
    placement = Placement(
        path,
        tuple(images),
        creates=creates,
        pod_spec=_flag(value.get("podSpec", False), where / "podSpec"),
        shape=cast(Shape, shape),
        inherits=_inheritance(value.get("inherits"), where / "inherits"),
        versions=tuple(str(version) for version in versions),
        when=_conditions_of(value.get("when"), where / "when"),
        unless=_conditions_of(value.get("unless"), where / "unless"),
        node_selector_from=_node_selector_from(
            value.get("nodeSelectorFrom"), where / "nodeSelectorFrom"
        ),
        injected_by=_injected_by(value.get("injectedBy"), where / "injectedBy"),
        default_affinity_when=_conditions_of(
            value.get("defaultAffinityWhen"), where / "defaultAffinityWhen"
        ),
        added_terms_when=_conditions_of(value.get("addedTermsWhen"), where / "addedTermsWhen"),
        writes_affinity=_flag(value.get("writesAffinity", True), where / "writesAffinity"),
    )
    # The checks every built-in placement passes too (one meaning for both).
    for key, problem in placement_problems(placement):
        raise (where / key).error(problem)
    return placement


def _node_selector_from(value: object, where: Where) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """A placement's ``nodeSelectorFrom``: node labels the operator selects from a field of
    the resource, ``{LABEL: POINTER}`` (KubeVirt's ``{kubernetes.io/arch: /spec/architecture}``)."""
    if value is None:
        return ()
    if not isinstance(value, Mapping) or not all(isinstance(key, str) and key for key in value):
        raise where.error(
            "expected a mapping of node label to pointer, like "
            "{kubernetes.io/arch: /spec/architecture}"
        )
    return tuple((label, _pointer(pointer, where / label)) for label, pointer in value.items())


def _injected_by(value: object, where: Where) -> str:
    """A placement's ``injectedBy``: the pod annotation by which, for a resource its ``unless``
    excludes, the operator injects its containers into other pods."""
    if value is None:
        return ""
    if not isinstance(value, str) or not value.strip():
        raise where.error("expected a pod annotation key, like sidecar.opentelemetry.io/inject")
    return value.strip()


def _image_source(element: object, where: Where) -> ImageSource:
    """An element of a placement's ``images``: a pointer (every match is an image), a list of
    alternatives (pointers, then templates like ``repo:{/spec/version}``: the first that
    exists wins), or ``{image: ..., when: {POINTER: VALUE}, unless: {POINTER: VALUE}}``
    (counted only when ``when`` holds and ``unless`` does not)."""
    if isinstance(element, Mapping):
        check_keys(element, {"image", "when", "unless"}, where)
        source = _image_source(element.get("image"), where / "image")
        return replace(
            source,
            when=_conditions_of(element.get("when"), where / "when"),
            unless=_conditions_of(element.get("unless"), where / "unless"),
        )
    if isinstance(element, str):
        return ImageSource((_pointer(element, where),), required=False)
    if isinstance(element, list) and element:
        pointers: list[tuple[str, ...]] = []
        templates: list[str] = []
        for n, alternative in enumerate(element):
            if isinstance(alternative, str) and not alternative.startswith("/"):
                if "{" not in alternative and ":" not in alternative:
                    raise (where / n).error(
                        "expected a pointer, or an image template like repo:{/spec/version}"
                    )
                templates.append(alternative)
            elif templates:
                raise (where / n).error("pointers come before templates (they are tried first)")
            else:
                pointers.append(_pointer(alternative, where / n))
        return ImageSource(tuple(pointers), templates=tuple(templates))
    raise where.error(
        "expected a pointer (every match is an image) or a list of "
        "pointers (alternatives: the first that exists wins)"
    )


def _conditions_of(value: object, where: Where) -> tuple[Condition, ...]:
    """``when``/``unless``: ``{POINTER: VALUE}`` (the value there is VALUE, or one of a list of
    them; null: the field is set)."""
    if value is None:
        return ()
    if not isinstance(value, Mapping):
        raise where.error("expected a mapping of pointer to value, like {/spec/mode: sidecar}")
    conditions: list[Condition] = []
    for pointer, expected in value.items():
        here = where / str(pointer)
        values = [] if expected is None else expected if isinstance(expected, list) else [expected]
        if not all(isinstance(v, str | int | float) for v in values):
            raise here.error("expected a value, a list of values, or null (the field is set)")
        conditions.append(
            (
                _pointer(pointer, here),
                tuple(str(v).lower() if isinstance(v, bool) else str(v) for v in values),
            )
        )
    return tuple(conditions)


def _inheritance(value: object, where: Where) -> Inheritance | None:
    """A placement's ``inherits``: the object the operator merges it over, and per scheduling
    field how (``{path: /spec/placement/all, fields: {nodeAffinity: replace}}``)."""
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise where.error(
            "expected {path, fields: {FIELD: replace|merge-by-key|append|by-position}}"
        )
    check_keys(value, {"path", "fields", "names"}, where)
    path = _pointer(value.get("path"), where / "path")
    fields = value.get("fields")
    if not isinstance(fields, Mapping) or not fields:
        raise (where / "fields").error(
            "expected a mapping of scheduling field to how it merges, like {tolerations: append}"
        )
    merges: list[tuple[str, Merge]] = []
    for name, merge in fields.items():
        if name not in _MERGED_FIELDS:
            raise (where / "fields" / str(name)).error(
                f"expected one of {', '.join(_MERGED_FIELDS)}"
            )
        if merge not in MERGES:
            raise (where / "fields" / str(name)).error(f"expected one of {', '.join(MERGES)}")
        merges.append((str(name), cast(Merge, merge)))
    names = value.get("names", {})
    if not isinstance(names, Mapping) or not all(
        name in fields and isinstance(shared, str) and shared for name, shared in names.items()
    ):
        raise (where / "names").error(
            "expected a mapping of a field of fields to the shared object's name for it, like "
            "{tolerations: controlPlaneTolerations}"
        )
    return Inheritance(
        path, tuple(merges), tuple((str(name), str(shared)) for name, shared in names.items())
    )


#: The scheduling fields an ``inherits`` entry may name (``nodeAffinity``: a bare one, Rook's).
_MERGED_FIELDS = ("nodeSelector", "tolerations", "affinity", "nodeAffinity")


def _image_list(value: object, where: Where) -> tuple[str, ...]:
    items = _listed(value, where)
    if not all(isinstance(item, str) and item for item in items):
        raise where.error("expected a list of image references")
    return tuple(str(item) for item in items)
