"""Registry credentials the manifests themselves carry: the ``imagePullSecrets`` of pod specs and
of their ServiceAccounts, pointing at ``kubernetes.io/dockerconfigjson`` (or legacy
``kubernetes.io/dockercfg``) Secrets in the same stream and namespace. Pure.

What comes out are the decoded Docker configs (``{"auths": {...}}``), kept in memory only: the
registry layer reads credentials from them after the user's own docker/podman configuration.
Nothing here prints, logs or stores a secret; error messages name the Secret, never its content.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from kmultiarch.core.operators.model import api_group
from kmultiarch.core.operators.workloads import WORKFLOW_SPEC_PATHS, Operators, find_workloads
from kmultiarch.core.resources import resources_in
from kmultiarch.errors import InputError

DOCKER_CONFIG_JSON = "kubernetes.io/dockerconfigjson"
DOCKER_CFG = "kubernetes.io/dockercfg"
_DATA_KEYS = {DOCKER_CONFIG_JSON: ".dockerconfigjson", DOCKER_CFG: ".dockercfg"}
DEFAULT_SERVICE_ACCOUNT = "default"


@dataclass(frozen=True)
class DockerConfig:
    """A decoded pull secret: ``label`` names it (``Secret shop/regcred``) for messages."""

    label: str
    config: Mapping[str, object] = field(repr=False)

    def __str__(self) -> str:
        return f"DockerConfig({self.label}, <redacted>)"


def pull_secret_configs(
    values: Iterable[object],
    operators: Operators | None = None,
) -> list[DockerConfig]:
    """The Docker configs of the Secrets that some pod of ``values`` (parsed documents) names
    in its ``imagePullSecrets`` or its ServiceAccount's, in the order pods name them."""
    resources = [resource for value in values for _, resource in resources_in(value)]
    secrets: dict[tuple[str, str], Mapping[str, object]] = {}
    accounts: dict[tuple[str, str], list[str]] = {}
    for resource in resources:
        kind, metadata = resource.get("kind"), _mapping(resource.get("metadata"))
        key = (_text(metadata.get("namespace")), _text(metadata.get("name")))
        if resource.get("apiVersion") != "v1" or not key[1]:
            continue
        secret_type = resource.get("type")
        if kind == "Secret" and isinstance(secret_type, str) and secret_type in _DATA_KEYS:
            secrets[key] = resource
        elif kind == "ServiceAccount":
            accounts[key] = _names(resource.get("imagePullSecrets"))
    if not secrets:
        return []
    wanted: list[tuple[str, str]] = []
    for resource in resources:
        workflow = _workflow_spec(resource)
        for workload in find_workloads(resource, operators):
            for target in workload.targets:
                # An Argo Workflows template takes both from the workflow's spec.
                pod_level = workflow if workflow is not None else target.spec
                names = _names(pod_level.get("imagePullSecrets"))
                account = _text(pod_level.get("serviceAccountName")) or _text(
                    pod_level.get("serviceAccount")
                )
                names += accounts.get((workload.namespace, account or DEFAULT_SERVICE_ACCOUNT), [])
                wanted.extend((workload.namespace, name) for name in names)
    configs: list[DockerConfig] = []
    for key in dict.fromkeys(wanted):
        secret = secrets.get(key)
        if secret is not None:
            configs.append(_decode(secret, key))
    return configs


def _decode(secret: Mapping[str, object], key: tuple[str, str]) -> DockerConfig:
    namespace, name = key
    label = f"Secret {namespace}/{name}" if namespace else f"Secret {name}"
    secret_type = str(secret.get("type"))
    data_key = _DATA_KEYS[secret_type]
    raw: str | None = None
    data = _mapping(secret.get("data"))
    string_data = _mapping(secret.get("stringData"))
    try:
        if isinstance(string_data.get(data_key), str):
            raw = str(string_data[data_key])
        elif isinstance(data.get(data_key), str):
            # Go's decoder, as the API server uses it, skips line breaks: so does this one.
            encoded = str(data[data_key]).replace("\n", "").replace("\r", "")
            raw = base64.b64decode(encoded, validate=True).decode("utf-8")
    except (binascii.Error, ValueError):  # not base64 (or not ASCII), or not UTF-8 inside
        raise InputError(
            f"{label}: data.{data_key} is not base64 of a Docker config; fix the Secret"
        ) from None
    if raw is None:
        raise InputError(f"{label}: a {secret_type} Secret without data.{data_key}")
    try:
        config = json.loads(raw)
    except ValueError:
        raise InputError(f"{label}: data.{data_key} is not JSON; fix the Secret") from None
    if not isinstance(config, Mapping):
        raise InputError(f"{label}: data.{data_key} is not a JSON object")
    if secret_type == DOCKER_CFG:
        config = {"auths": config}  # the legacy format is the auths mapping alone
    return DockerConfig(label, config)


def _workflow_spec(resource: Mapping[str, object]) -> Mapping[str, object] | None:
    api_version, kind = resource.get("apiVersion"), resource.get("kind")
    if not isinstance(api_version, str) or not isinstance(kind, str):
        return None
    path = WORKFLOW_SPEC_PATHS.get((api_group(api_version), kind))
    if path is None:
        return None
    spec: object = resource
    for part in path:
        spec = spec.get(part) if isinstance(spec, Mapping) else None
    return spec if isinstance(spec, Mapping) else {}


def _names(value: object) -> list[str]:
    names = []
    for item in value if isinstance(value, list) else []:
        name = item.get("name") if isinstance(item, Mapping) else None
        if isinstance(name, str) and name:
            names.append(name)
    return names


def _mapping(value: object) -> Mapping[str, object]:
    return value if isinstance(value, Mapping) else {}


def _text(value: object) -> str:
    return value if isinstance(value, str) else ""
