"""``kmultiarch admission configuration``: the MutatingWebhookConfiguration that registers the
server (admissionregistration.k8s.io/v1, k8s.io/api admissionregistration/v1 types.go).

- ``rules``: pods CREATE (the only moment a pod's affinity may be set: it is immutable after,
  unless the pod has scheduling gates) and ``pods/ephemeralcontainers`` UPDATE (``kubectl
  debug``: admitted or denied).
- ``reinvocationPolicy: IfNeeded``: called once more when a later webhook changed the pod, so a
  sidecar another webhook injects is judged with the pod (the engine's patches are idempotent).
- ``sideEffects: None``; ``admissionReviewVersions: [v1]``.
- ``namespaceSelector`` on the ``kubernetes.io/metadata.name`` label the API server sets on
  every Namespace (KEP-2161, GA in 1.22; older API servers set none, and NotIn then matches
  every namespace): the server's own namespace is left out (a webhook must not block
  its own start), and so are the policy's exact ``exclude.namespaces``. Globs (``legacy-*``)
  cannot be said in a label selector: the server applies them itself, as ``mutate`` does. A
  policy ``exclude.namespaceSelector`` of one requirement is said negated; of more, a selector
  cannot say "not all of these" and the server applies it (it reads the pod's Namespace).
- ``failurePolicy``: the policy's (Ignore, its default: pods are created unjudged while the
  webhook is down; Fail: no pod is created while it is down). ``timeoutSeconds`` 1-30.
"""

from __future__ import annotations

import base64
from typing import Any

from kmultiarch.core.policy.model import Policy
from kmultiarch.core.policy.scope import LabelSelector, Requirement

__all__ = ["WEBHOOK_NAME", "webhook_configuration"]

WEBHOOK_NAME = "pods.kmultiarch.dev"
NAME_LABEL = "kubernetes.io/metadata.name"
_NEGATED = {"In": "NotIn", "NotIn": "In", "Exists": "DoesNotExist", "DoesNotExist": "Exists"}


def webhook_configuration(
    policy: Policy,
    *,
    url: str | None = None,
    service: tuple[str, str, int] | None = None,
    ca_bundle: bytes | None = None,
    own_namespace: str | None = None,
    timeout_seconds: int = 10,
    name: str = "kmultiarch",
) -> dict[str, Any]:
    """The MutatingWebhookConfiguration for a server at ``url`` or in ``service`` (namespace,
    name, port), trusting ``ca_bundle`` (PEM)."""
    if (url is None) == (service is None):
        raise ValueError("give url or service, not both")
    client: dict[str, Any]
    if url is not None:
        client = {"url": url}
    else:
        assert service is not None
        namespace, service_name, port = service
        client = {
            "service": {
                "namespace": namespace,
                "name": service_name,
                "port": port,
                "path": "/mutate",
            }
        }
        own_namespace = own_namespace or namespace
    if ca_bundle is not None:
        client["caBundle"] = base64.b64encode(ca_bundle).decode()
    excluded = sorted(
        {
            *(n for n in policy.scope.exclude.namespaces if not _is_glob(n)),
            *([own_namespace] if own_namespace else []),
        }
    )
    expressions: list[dict[str, Any]] = []
    if excluded:
        expressions.append({"key": NAME_LABEL, "operator": "NotIn", "values": excluded})
    negated = _negated(policy.scope.exclude.namespace_selector)
    if negated is not None:
        expressions.append(negated)
    webhook: dict[str, Any] = {
        "name": WEBHOOK_NAME,
        "admissionReviewVersions": ["v1"],
        "clientConfig": client,
        "rules": [
            {
                "operations": ["CREATE"],
                "apiGroups": [""],
                "apiVersions": ["v1"],
                "resources": ["pods"],
                "scope": "Namespaced",
            },
            {
                "operations": ["UPDATE"],
                "apiGroups": [""],
                "apiVersions": ["v1"],
                "resources": ["pods/ephemeralcontainers"],
                "scope": "Namespaced",
            },
        ],
        "failurePolicy": policy.failure_policy,
        "matchPolicy": "Equivalent",
        "sideEffects": "None",
        "timeoutSeconds": max(1, min(30, timeout_seconds)),
        "reinvocationPolicy": "IfNeeded",
    }
    if expressions:
        webhook["namespaceSelector"] = {"matchExpressions": expressions}
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "MutatingWebhookConfiguration",
        "metadata": {"name": name},
        "webhooks": [webhook],
    }


def _is_glob(pattern: str) -> bool:
    """Whether the policy matches ``pattern`` as a glob (core.scope uses fnmatch)."""
    return any(character in pattern for character in "*?[")


def _negated(selector: LabelSelector | None) -> dict[str, Any] | None:
    """The one requirement that selects the namespaces ``selector`` does not (None: it has
    more than one, which a selector cannot negate)."""
    if selector is None or len(selector.requirements) != 1:
        return None
    requirement: Requirement = selector.requirements[0]
    expression: dict[str, Any] = {
        "key": requirement.key,
        "operator": _NEGATED[requirement.operator],
    }
    if requirement.values:
        expression["values"] = sorted(requirement.values)
    return expression
