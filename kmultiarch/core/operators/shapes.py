"""An operator's placement shapes: the pod's scheduling fields as the operator's own fields hold
them (``scheduling_view``), written back in that shape (``in_shape``, ``materialized``) and the
hints that say where an injected field goes. Pure.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping, Sequence
from typing import TYPE_CHECKING

from kmultiarch.core.operators.model import (
    _AFFINITY,
    _NODE_AFFINITY,
    _NODE_SELECTOR,
    _POD_TEMPLATE_SPEC,
    _bound,
    _bound_object,
    _bound_template,
    expand,
    holds,
    resolved_default,
)
from kmultiarch.core.patch import PatchOperation, apply_patch

if TYPE_CHECKING:
    from kmultiarch.core.operators.model import (
        AntiAffinityByKey,
        ConcretePath,
        OperatorKind,
        Placement,
        Pointer,
    )


__all__ = [
    "affinity_defaults",
    "in_shape",
    "injection_hints",
    "materialized",
    "resolved_object",
    "scheduling_view",
    "written_field",
]


_ADVANCED = "advanced"


def scheduling_view(holder: Mapping[str, object], shape: str) -> Mapping[str, object]:
    """A placement's object as the planner reads a pod spec: Rook's bare ``nodeAffinity`` as
    ``affinity.nodeAffinity``; Percona's ``affinity.advanced`` as ``affinity`` (the operator's
    other keys are no Affinity); a Cassandra datacenter's ``podTemplateSpec.spec.affinity`` as
    ``affinity``."""
    if shape in ("advanced-affinity", "pod-template-affinity"):
        view = {key: value for key, value in holder.items() if key != _AFFINITY}
        own = _own_affinity(holder, shape)
        if own is not None:
            view[_AFFINITY] = own
        template = holder.get(_POD_TEMPLATE_SPEC)
        spec = template.get("spec") if isinstance(template, Mapping) else None
        if shape == "pod-template-affinity" and not holder.get(_NODE_SELECTOR):
            # The template's nodeSelector holds unless the object's own is set (cass-operator
            # construct_statefulset.go: dc.Spec.NodeSelector copied in only when not empty).
            selector = spec.get(_NODE_SELECTOR) if isinstance(spec, Mapping) else None
            if selector:
                view[_NODE_SELECTOR] = selector
        return view
    if shape != "node-affinity":
        return holder
    view = {key: value for key, value in holder.items() if key != _NODE_AFFINITY}
    if holder.get(_NODE_AFFINITY) is not None:
        view[_AFFINITY] = {_NODE_AFFINITY: holder[_NODE_AFFINITY]}
    return view


def _advanced(holder: Mapping[str, object]) -> object:
    """``affinity.advanced`` of a placement's object (None: not there)."""
    affinity = holder.get(_AFFINITY)
    return affinity.get(_ADVANCED) if isinstance(affinity, Mapping) else None


def _templated_affinity(holder: Mapping[str, object]) -> object:
    """``podTemplateSpec.spec.affinity`` of a placement's object (None: not there)."""
    template = holder.get(_POD_TEMPLATE_SPEC)
    spec = template.get("spec") if isinstance(template, Mapping) else None
    return spec.get(_AFFINITY) if isinstance(spec, Mapping) else None


def _own_affinity(holder: Mapping[str, object], shape: str) -> object:
    """The affinity a placement's object gives its pods itself (None: the operator's)."""
    if shape == "pod-template-affinity":
        return _templated_affinity(holder)
    return _advanced(holder) if shape == "advanced-affinity" else holder.get(_AFFINITY)


def affinity_defaults(
    resource: Mapping[str, object],
    placement: Placement,
    holder_path: ConcretePath,
    holder: Mapping[str, object],
) -> Mapping[str, object]:
    """What the operator puts in the pods' affinity when the placement's object has none of
    its own (``default_affinity``, ``anti_affinity_by_key``): kept beside the constraint when
    kmultiarch creates that affinity. Nothing when the object has one (the operator then uses
    it, whole) or a template cannot be read."""
    if _own_affinity(holder, placement.shape) is not None:
        return {}
    defaults: dict[str, object] = {}
    if placement.default_affinity is not None:
        bound = _bound_object(placement.default_affinity, placement.path, holder_path)
        resolved = resolved_object(resource, bound)
        if isinstance(resolved, Mapping):
            defaults.update(resolved)
    keyed = placement.anti_affinity_by_key
    term = (
        _anti_affinity_term(resource, keyed, placement.path, holder_path)
        if keyed is not None
        else None
    )
    if term is not None and _POD_ANTI_AFFINITY not in defaults:
        defaults[_POD_ANTI_AFFINITY] = {_REQUIRED: [term]}
    return defaults


_POD_ANTI_AFFINITY = "podAntiAffinity"

_REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"


def _anti_affinity_term(
    resource: Mapping[str, object],
    keyed: AntiAffinityByKey,
    pattern: Pointer,
    holder_path: ConcretePath,
) -> dict[str, object] | None:
    """The operator's required pod anti-affinity term for one placement instance (None: off,
    or a label the resource does not give)."""
    found = [value for _, value in expand(resource, _bound(keyed.key, pattern, holder_path))]
    key = found[0] if len(found) == 1 and isinstance(found[0], str) else None
    if key == keyed.off:
        return None
    if key is None or (keyed.valid and key not in keyed.valid):
        key = keyed.default
    labels: dict[str, object] = {}
    for label, template in keyed.labels:
        value = resolved_default(resource, _bound_template(template, pattern, holder_path))
        if value is None:
            return None
        labels[label] = value
    if keyed.own_labels is not None:
        own = [
            value for _, value in expand(resource, _bound(keyed.own_labels, pattern, holder_path))
        ]
        given = (
            {k: v for k, v in own[0].items() if isinstance(k, str) and isinstance(v, str)}
            if len(own) == 1 and isinstance(own[0], Mapping)
            else {}
        )
        if keyed.own_labels_win:
            labels.update(given)
        else:
            labels.update({k: v for k, v in given.items() if k not in labels})
    return {"labelSelector": {"matchLabels": labels}, "topologyKey": key}


def in_shape(
    operations: Sequence[PatchOperation],
    path: ConcretePath,
    shape: str,
    read_only: Collection[str] = (),
    affinity_defaults: Mapping[str, object] | None = None,
    holder: Mapping[str, object] | None = None,
) -> list[PatchOperation]:
    """Operations planned on :func:`scheduling_view`, written in the placement's own shape:
    ``affinity.nodeAffinity...`` becomes ``nodeAffinity...`` for Rook, ``affinity.advanced...``
    for Percona (``holder``, the placement's object, says whether its ``affinity`` exists). Those
    on a field of ``read_only`` are dropped: the pods take it from a shared object, written by
    its own placement (:class:`Inheritance`). An ``affinity`` created gets
    ``affinity_defaults`` beside the constraint (the operator's default it would otherwise
    drop)."""
    planned = list(operations)
    if affinity_defaults:
        planned = [_with_defaults(operation, path, affinity_defaults) for operation in planned]
    if shape == "pod-template-affinity":
        # The fields are named as the view names them; the affinity is moved afterwards.
        return _in_template(_writable(planned, path, read_only), path, holder or {})
    return _writable(_in_shape(planned, path, shape, holder), path, read_only)


def written_field(key: str, shape: str) -> str:
    """The field of the placement's view (:func:`scheduling_view`) an operation written in
    ``shape`` under ``key`` of the placement's object writes: ``affinity`` for a
    ``pod-template-affinity`` placement's ``podTemplateSpec``, else ``key`` itself."""
    return _AFFINITY if shape == "pod-template-affinity" and key == _POD_TEMPLATE_SPEC else key


def _writable(
    operations: Sequence[PatchOperation], path: ConcretePath, read_only: Collection[str]
) -> list[PatchOperation]:
    """``operations`` but those on a field of ``read_only`` of the object at ``path``."""
    if not read_only:
        return list(operations)
    return [
        operation
        for operation in operations
        if not (
            operation.is_under(path)
            and operation.relative_to(path).path[:1]
            and operation.relative_to(path).path[0] in read_only
        )
    ]


def _in_template(
    operations: Sequence[PatchOperation], path: ConcretePath, holder: Mapping[str, object]
) -> list[PatchOperation]:
    """``affinity...`` as ``podTemplateSpec.spec.affinity...``, the template and its spec
    created when missing (an ``affinity`` created is added with them)."""
    template = holder.get(_POD_TEMPLATE_SPEC)
    has_template = isinstance(template, Mapping)
    has_spec = isinstance(template, Mapping) and isinstance(template.get("spec"), Mapping)
    written: list[PatchOperation] = []
    for operation in operations:
        relative = operation.relative_to(path).path if operation.is_under(path) else ()
        if relative[:1] != (_AFFINITY,):
            written.append(operation)
        elif relative == (_AFFINITY,) and operation.op == "add" and not has_spec:
            if has_template:
                at, value = (*path, _POD_TEMPLATE_SPEC, "spec"), {_AFFINITY: operation.value}
            else:
                at = (*path, _POD_TEMPLATE_SPEC)
                value = {"spec": {_AFFINITY: operation.value}}
            written.append(PatchOperation("add", at, value))
        else:
            written.append(
                PatchOperation(
                    operation.op, (*path, _POD_TEMPLATE_SPEC, "spec", *relative), operation.value
                )
            )
    return written


def _with_defaults(
    operation: PatchOperation, path: ConcretePath, defaults: Mapping[str, object]
) -> PatchOperation:
    if (
        operation.op != "add"
        or not operation.is_under(path)
        or operation.relative_to(path).path != (_AFFINITY,)
        or not isinstance(operation.value, Mapping)
    ):
        return operation
    value = {**operation.value}
    value.update({key: item for key, item in defaults.items() if key not in value})
    own, default = operation.value.get(_NODE_AFFINITY), defaults.get(_NODE_AFFINITY)
    if isinstance(own, Mapping) and isinstance(default, Mapping):
        value[_NODE_AFFINITY] = _both_node_affinities(own, default)
    return PatchOperation(operation.op, operation.path, value)


def _both_node_affinities(
    own: Mapping[str, object], default: Mapping[str, object]
) -> dict[str, object]:
    """A node affinity that holds where both hold: each required term of one joined with each
    of the other (terms are ORed, a term's expressions ANDed), the preferred terms of both
    (the constraint and the operator's default zone: both required)."""
    merged = {**default, **own}
    own_terms, default_terms = _required_terms(own), _required_terms(default)
    if own_terms and default_terms:
        merged[_REQUIRED] = {
            "nodeSelectorTerms": [
                {
                    key: [*_listed(mine.get(key)), *_listed(theirs.get(key))]
                    for key in ("matchExpressions", "matchFields")
                    if mine.get(key) or theirs.get(key)
                }
                for mine in own_terms
                for theirs in default_terms
            ]
        }
    preferred = "preferredDuringSchedulingIgnoredDuringExecution"
    if own.get(preferred) and default.get(preferred):
        merged[preferred] = [*_listed(own.get(preferred)), *_listed(default.get(preferred))]
    return merged


def _required_terms(node_affinity: Mapping[str, object]) -> list[Mapping[str, object]]:
    required = node_affinity.get(_REQUIRED)
    terms = required.get("nodeSelectorTerms") if isinstance(required, Mapping) else None
    return [term for term in _listed(terms) if isinstance(term, Mapping)]


def _listed(value: object) -> list[object]:
    return list(value) if isinstance(value, list) else []


def resolved_object(resource: Mapping[str, object], value: object) -> object | None:
    """``value`` with the templates of its strings read in ``resource``
    (:func:`resolved_default`); None when one cannot be."""
    if isinstance(value, str):
        return resolved_default(resource, value) if "{" in value else value
    if isinstance(value, Mapping):
        items = {key: resolved_object(resource, item) for key, item in value.items()}
        return None if any(item is None for item in items.values()) else items
    if isinstance(value, list):
        listed = [resolved_object(resource, item) for item in value]
        return None if any(item is None for item in listed) else listed
    return value


def _in_shape(
    operations: Sequence[PatchOperation],
    path: ConcretePath,
    shape: str,
    holder: Mapping[str, object] | None = None,
) -> list[PatchOperation]:
    if shape == "advanced-affinity":
        return _in_advanced(operations, path, holder or {})
    if shape != "node-affinity":
        return list(operations)
    written: list[PatchOperation] = []
    for operation in operations:
        relative = operation.relative_to(path).path if operation.is_under(path) else ()
        if relative[:2] == (_AFFINITY, _NODE_AFFINITY):
            written.append(PatchOperation(operation.op, (*path, *relative[1:]), operation.value))
        elif relative == (_AFFINITY,) and isinstance(operation.value, Mapping):
            value = operation.value.get(_NODE_AFFINITY)
            written.append(PatchOperation("add", (*path, _NODE_AFFINITY), value))
        else:
            written.append(operation)
    return written


def _in_advanced(
    operations: Sequence[PatchOperation], path: ConcretePath, holder: Mapping[str, object]
) -> list[PatchOperation]:
    """``affinity...`` as ``affinity.advanced...``; an ``affinity`` created goes into the
    object's own ``affinity`` when it has one (its ``antiAffinityTopologyKey`` kept beside)."""
    has_affinity = isinstance(holder.get(_AFFINITY), Mapping)
    written: list[PatchOperation] = []
    for operation in operations:
        relative = operation.relative_to(path).path if operation.is_under(path) else ()
        if relative == (_AFFINITY,) and operation.op == "add" and not has_affinity:
            written.append(PatchOperation("add", operation.path, {_ADVANCED: operation.value}))
        elif relative[:1] == (_AFFINITY,):
            written.append(
                PatchOperation(
                    operation.op, (*path, _AFFINITY, _ADVANCED, *relative[1:]), operation.value
                )
            )
        else:
            written.append(operation)
    return written


def materialized(
    operations: Sequence[PatchOperation], path: ConcretePath, missing: int
) -> list[PatchOperation]:
    """Operations planned on an empty object at ``path`` whose last ``missing`` tokens do not
    exist yet, as one ``add`` of the first missing one (holding the rest)."""
    if not missing or not operations:
        return list(operations)
    value = apply_patch({}, [operation.relative_to(path) for operation in operations])
    for token in reversed(path[len(path) - missing + 1 :]):
        value = {token: value}
    return [PatchOperation("add", path[: len(path) - missing + 1], value)]


def injection_hints(
    resource: Mapping[str, object], entry: OperatorKind
) -> list[tuple[Pointer, str, str]]:
    """For each placement of ``entry`` that ``resource`` makes an injection of (its
    ``unless`` holds and it names ``injected_by``): where, a message, and the ``spec.injections``
    entry that declares it (YAML), its images those the placement would run (as the resource
    names or the operator computes them; a placeholder where only the operator knows)."""
    hints: list[tuple[Pointer, str, str]] = []
    api_version = resource.get("apiVersion")
    for placement in entry.placements:
        if (
            not placement.injected_by
            or not placement.applies_to(str(api_version))
            or placement.exists_in(resource)
            or not all(holds(resource, condition) for condition in placement.when)
        ):
            continue
        images: list[str] = []
        for source in placement.images:
            if not source.counts_for(resource):
                continue
            found = next(
                (
                    matches
                    for pointer in source.alternatives
                    if (
                        matches := [
                            value
                            for _, value in expand(resource, pointer)
                            if isinstance(value, str) and value
                        ]
                    )
                ),
                [],
            )
            if not found:
                found = [
                    image
                    for image in (resolved_default(resource, t) for t in source.templates[:1])
                    if image is not None
                ]
            if not found and source.required:
                found = ["<the image the operator runs: name it>"]
            images.extend(image for image in found if image not in images)
        metadata = resource.get("metadata")
        name = metadata.get("name") if isinstance(metadata, Mapping) else None
        label = f"{entry.kind.lower()}-{name}" if isinstance(name, str) and name else entry.kind
        key = json.dumps(placement.injected_by)
        suggestion = (
            "injections:\n"
            f"- name: {json.dumps(label)}\n"
            f"  images: [{', '.join(json.dumps(image) for image in images)}]\n"
            f'  when: {{podAnnotations: {{{key}: "*"}}}}\n'
            f'  unless: {{podAnnotations: {{{key}: "false"}}}}\n'
        )
        condition = " and ".join(
            f"{_field_name(pointer)} is {' or '.join(values) if values else 'set'}"
            for pointer, values in placement.unless
            if holds(resource, (pointer, values))
        )
        hints.append(
            (
                placement.path,
                f"{condition}: the operator makes no pod of {entry.kind} but injects its "
                f"containers into the pods annotated {placement.injected_by} (true, its name, "
                "or its namespace's annotation): declare it in spec.injections, so that those "
                f"pods are judged with its images ({', '.join(images)}):\n{suggestion}",
                suggestion,
            )
        )
    return hints


def _field_name(pointer: Pointer) -> str:
    """``spec.mode`` of ``/spec/mode``: a pointer as messages name fields."""
    return ".".join(pointer)
