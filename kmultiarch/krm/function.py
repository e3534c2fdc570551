"""The KRM function: a ResourceList in, the same ResourceList with edited items and results out.

The ResourceList is edited as one YAML document, so item comments and the annotations kustomize
and kpt rely on (``internal.config.kubernetes.io/*``, ``config.kubernetes.io/path|index``,
``kustomize.config.k8s.io/id``) pass through untouched. Every finding becomes a result with
``severity``, ``message``, ``resourceRef``, ``field.path`` and ``file``; one ``info`` result
summarises the run.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kmultiarch.core.findings import INVALID_INPUT, RUN_SUMMARY, Finding
from kmultiarch.core.operators.pullsecrets import pull_secret_configs
from kmultiarch.core.patch import PatchOperation
from kmultiarch.core.policy.model import API_VERSION, KIND, Policy
from kmultiarch.core.policy.reading import Where
from kmultiarch.core.policy.schema import SPEC, ConfigMapForm, policy_from_object, policy_from_spec
from kmultiarch.engine import EngineResult, run_documents, summarise
from kmultiarch.errors import (
    InputError,
    KeyPath,
    ManifestStreamError,
    PolicyError,
    format_field_path,
)
from kmultiarch.io.inputs import MAX_INPUT_BYTES
from kmultiarch.run.config import RunConfig
from kmultiarch.run.session import ProgressFactory, Session
from kmultiarch.yaml.stream import (
    MAX_DOCUMENT_BYTES,
    InputSource,
    SourceDocument,
    read_single_document,
    read_stream,
)

RESOURCE_LIST_VERSIONS = ("config.kubernetes.io/v1", "config.kubernetes.io/v1alpha1")
PATH_ANNOTATIONS = ("internal.config.kubernetes.io/path", "config.kubernetes.io/path")
INDEX_ANNOTATIONS = ("internal.config.kubernetes.io/index", "config.kubernetes.io/index")
STDIN = "<stdin>"

#: The ConfigMap's data keys for ``spec.exclude``'s (flat: a ConfigMap's values are strings):
#: data key -> (key under ``spec.exclude``, how its string gives it).
_CONFIGMAP_EXCLUDE: dict[str, tuple[str, ConfigMapForm]] = {
    "excludeNamespaces": ("namespaces", "list"),
    "excludeKinds": ("kinds", "list"),
    "excludeNamespaceSelector": ("namespaceSelector", "yaml"),
}
#: Every key a ConfigMap functionConfig's ``data`` may give -> the spec path it fills and how
#: its string gives the value: the schema's keys that a ConfigMap can give, by their own
#: names, and the exclusions.
CONFIGMAP_KEYS: dict[str, tuple[KeyPath, ConfigMapForm]] = {
    **{key.name: (("spec", key.name), key.configmap) for key in SPEC if key.configmap},
    **{
        data_key: (("spec", "exclude", name), form)
        for data_key, (name, form) in _CONFIGMAP_EXCLUDE.items()
    },
}


@dataclass
class FunctionOutput:
    text: str
    exit_code: int
    #: What this run found (its results in ``text`` are their view), for the adapter to echo.
    findings: list[Finding] = field(default_factory=list)
    #: The ResourceList read (for the files its items came from), when it could be read.
    resource_list: Mapping[str, Any] = field(default_factory=dict)

    @property
    def results(self) -> list[dict[str, Any]]:
        """The KRM results of :attr:`findings` (kyaml's ``framework.Result``)."""
        return [krm_result(finding, self.resource_list) for finding in self.findings]

    def location(self, finding: Finding) -> str:
        """Where a finding is, as kustomize users know it: the file its item came from (the
        ``config.kubernetes.io/path`` annotation) and the resource."""
        file = _file_of(self.resource_list, _item_index(finding.path))
        where = [part for part in (file.get("path"), _display_name(finding)) if part]
        return ": ".join(str(part) for part in where)


def read_resource_list(text: str) -> SourceDocument:
    """The ResourceList on stdin. kustomize sends every resource in this one document, so it
    may be as large as any input (the input cap); each item is held to the per-document cap,
    as the documents of a plain stream are."""
    documents = [
        doc
        for doc in read_stream(text, STDIN, max_document_bytes=MAX_INPUT_BYTES)
        if doc.value is not None
    ]
    if (
        len(documents) != 1
        or not isinstance(documents[0].value, Mapping)
        or (documents[0].value.get("kind") != "ResourceList")
    ):
        raise InputError(
            f"{STDIN}: expected one ResourceList (apiVersion: config.kubernetes.io/v1, kind: "
            "ResourceList); to transform a plain stream, use `kmultiarch fn POLICY.yaml` with "
            "the stream on stdin, or `kmultiarch mutate`"
        )
    items = documents[0].value.get("items")
    for position, item in enumerate(items if isinstance(items, list) else ()):
        size = len(json.dumps(item, default=str))
        if size > MAX_DOCUMENT_BYTES:
            raise InputError(
                f"{STDIN}: items[{position}] is about {size} bytes, more than the "
                f"{MAX_DOCUMENT_BYTES} accepted for one resource (Kubernetes stores objects "
                "of at most 1.5 MB)"
            )
    return documents[0]


def policy_from_function_config(
    config: object, source: str = "functionConfig", *, base_dir: Path | None = None
) -> Policy:
    """A MultiArchPolicy, a ConfigMap with string data, or nothing (the defaults)."""
    if config is None:
        return Policy()
    if not isinstance(config, Mapping):
        raise PolicyError("expected a MultiArchPolicy or a ConfigMap", source=source)
    if config.get("kind") == KIND:
        return policy_from_object(config, source, base_dir=base_dir)
    if config.get("kind") == "ConfigMap":
        return policy_from_configmap(config.get("data"), source, base_dir=base_dir)
    raise PolicyError(
        f"expected apiVersion: {API_VERSION}, kind: {KIND}, or a ConfigMap; got "
        f"kind {config.get('kind')!r}",
        source=source,
    )


def policy_from_configmap(data: object, source: str, *, base_dir: Path | None = None) -> Policy:
    """The policy a ConfigMap's string data says (:data:`CONFIGMAP_KEYS`)."""
    if data is None:
        return Policy()
    if not isinstance(data, Mapping):
        raise PolicyError("expected a mapping of strings", source=source, path=("data",))
    spec: dict[str, Any] = {}
    for key, text in data.items():
        where = Where(source, ("data", str(key)))
        if not isinstance(text, str):
            raise where.error("ConfigMap values are strings")
        if key not in CONFIGMAP_KEYS:
            raise where.error(f"unknown key (known keys: {', '.join(sorted(CONFIGMAP_KEYS))})")
        path, form = CONFIGMAP_KEYS[key]
        parent = spec
        for part in path[1:-1]:
            parent = parent.setdefault(str(part), {})
        parent[str(path[-1])] = _configmap_value(text, form, where)
    try:
        return policy_from_spec(spec, source, base_dir=base_dir)
    except PolicyError as exc:
        # The spec was built from ``data``: name the key the user wrote.
        raise _in_data(exc) from exc


def _configmap_value(text: str, form: ConfigMapForm, where: Where) -> object:
    """The value a ConfigMap's string gives, read as its key's form says."""
    if form == "list":
        return [item.strip() for item in text.split(",") if item.strip()]
    if form == "string":
        return text.strip()
    # The reader of policy files (and manifests), not a bare yaml.load: a self-referential
    # alias (``&a [*a]``) gives a cyclic value that reading the spec would walk for ever, and
    # duplicate keys, tags, depth and alias bombs are refused here as in a policy file.
    try:
        return read_single_document(text, "the value")
    except ManifestStreamError as exc:
        raise where.error(f"not valid YAML/JSON: {exc}") from exc


def _in_data(error: PolicyError) -> PolicyError:
    """A policy error about the spec built from a ConfigMap, about the data key it came from:
    ``spec.exclude.kinds`` is ``data.excludeKinds``, ``spec.platforms[1]`` ``data.platforms[1]``."""
    for data_key, (path, _) in CONFIGMAP_KEYS.items():
        if error.path[: len(path)] == path:
            return error.rerooted(path, ("data", data_key))
    return error


def run_function(
    text: str,
    configure: Callable[[Policy], RunConfig],
    *,
    policy_override: Policy | None = None,
    default_policy: Callable[[], Policy] | None = None,
    progress: ProgressFactory | None = None,
) -> FunctionOutput:
    """Process a ResourceList. ``configure(policy)`` gives the run's configuration for the
    policy its functionConfig says (its ``spec.lock`` and ``spec.cache`` included), or, when it
    carries none, ``default_policy()`` (the command line's ``--config``); the run is assembled
    from it (:mod:`kmultiarch.run`)."""
    document = read_resource_list(text)
    value = document.value
    assert isinstance(value, Mapping)
    function_config = value.get("functionConfig")
    try:
        if policy_override is not None:
            policy = policy_override
        elif function_config is None and default_policy is not None:
            policy = default_policy()
        else:
            policy = policy_from_function_config(function_config)
    except PolicyError as exc:
        return _refused(document, value, str(exc))
    if not isinstance(value.get("items", []), list):
        return _refused(document, value, "items: expected a list of resources")
    # The pull secrets of the items (Secrets named by the pods' or ServiceAccounts'
    # imagePullSecrets), for the resolver to try after the user's own credentials.
    try:
        pull_secrets = pull_secret_configs([value], policy.scope.operators)
    except InputError as exc:
        return _refused(document, value, str(exc))
    config = configure(policy)  # the run's policy: the options win (--verify)
    with Session(config, pull_secrets=pull_secrets, progress=progress) as session:
        result = run_documents(
            [InputSource(STDIN, text)],
            {STDIN: [document]},
            config.policy,
            session.resolve,
            edit=False,
        )
        result.findings.extend(session.findings())
        result.findings.extend(session.unused_overrides())
    findings = [
        *result.findings,
        Finding(RUN_SUMMARY, "info", "kmultiarch: " + summarise(result)),
    ]
    failed = any(finding.severity == "error" for finding in findings)
    outcome = result.documents[STDIN][0]
    if failed:
        # As with mutate: when the run fails, no item is changed; the results say why.
        outcome.operations.clear()
        outcome.repins.clear()
    output = FunctionOutput("", 1 if failed else 0, findings, value)
    outcome.operations.append(_results_operation(value, output.results))
    result.apply_edits()
    output.text = result.output_of(STDIN)
    return output


def _refused(document: SourceDocument, value: Mapping[str, Any], message: str) -> FunctionOutput:
    """The ResourceList back unchanged but for one error result."""
    from kmultiarch.yaml.edit import apply_operations

    output = FunctionOutput("", 1, [Finding(INVALID_INPUT, "error", message)], value)
    output.text = apply_operations(document, [_results_operation(value, output.results)])
    return output


def _results_operation(value: Mapping[str, Any], results: list[dict[str, Any]]) -> PatchOperation:
    existing = value.get("results")
    combined = [*existing, *results] if isinstance(existing, list) else results
    return PatchOperation("replace" if "results" in value else "add", ("results",), combined)


def krm_result(finding: Finding, resource_list: Mapping[str, Any]) -> dict[str, Any]:
    """A finding as a KRM result: message, severity, resourceRef, field, file, tags."""
    result: dict[str, Any] = {"message": finding.message, "severity": finding.severity}
    if finding.resource is not None:
        # kyaml's ResourceIdentifier (kyaml/yaml/types.go: TypeMeta and NameMeta) has no
        # generateName: a resource named only by it is named in the message.
        reference = finding.resource.as_dict()
        reference.pop("generateName", None)
        result["resourceRef"] = reference
    index = _item_index(finding.path)
    field_path = finding.path[2:] if index is not None else finding.path
    if field_path:
        result["field"] = {"path": format_field_path(field_path)}
    file = _file_of(resource_list, index)
    if file:
        result["file"] = file
    if finding.image:
        result["tags"] = {"image": finding.image}
    return result


def _item_index(path: tuple[str | int, ...]) -> int | None:
    """The item of the ResourceList a path from its root goes through (``items``, index)."""
    if len(path) >= 2 and path[0] == "items" and isinstance(path[1], int):
        return path[1]
    return None


def _display_name(finding: Finding) -> str:
    return finding.resource.display_name if finding.resource is not None else ""


def _file_of(resource_list: Mapping[str, Any], index: int | None) -> dict[str, Any]:
    items = resource_list.get("items")
    if (
        index is None
        or not isinstance(items, list)
        or index >= len(items)
        or not isinstance(items[index], Mapping)
    ):
        return {}
    metadata = items[index].get("metadata")
    annotations = metadata.get("annotations") if isinstance(metadata, Mapping) else None
    if not isinstance(annotations, Mapping):
        return {}
    file: dict[str, Any] = {}
    for key in PATH_ANNOTATIONS:
        if isinstance(annotations.get(key), str):
            file["path"] = annotations[key]
            break
    for key in INDEX_ANNOTATIONS:
        raw = annotations.get(key)
        if isinstance(raw, str) and raw.isdigit():
            file["index"] = int(raw)
            break
    return file


__all__ = ["EngineResult", "FunctionOutput", "policy_from_function_config", "run_function"]
