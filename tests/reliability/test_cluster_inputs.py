"""Hostile shapes for the readers of issue 14: Node/NodePool documents (``policy init``, drift)
and pull secrets never raise anything but a one-line InputError, whatever the document."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from kmultiarch.core.operators.pullsecrets import pull_secret_configs
from kmultiarch.core.placement.cluster import cluster_shape, drift, node_sources
from kmultiarch.core.policy.model import SchedulingPolicy
from kmultiarch.core.policy.scope import namespaces_in
from kmultiarch.errors import InputError

_KEYS = st.sampled_from(
    [
        "apiVersion",
        "kind",
        "metadata",
        "name",
        "namespace",
        "labels",
        "spec",
        "template",
        "requirements",
        "key",
        "operator",
        "values",
        "taints",
        "effect",
        "value",
        "status",
        "nodeInfo",
        "architecture",
        "operatingSystem",
        "kubernetes.io/arch",
        "kubernetes.io/os",
        "items",
        "type",
        "data",
        ".dockerconfigjson",
        "imagePullSecrets",
        "containers",
        "image",
        "serviceAccountName",
        "annotations",
    ]
)
_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.text(max_size=6)
    | st.sampled_from(
        [
            "v1",
            "Node",
            "NodePool",
            "karpenter.sh/v1",
            "List",
            "In",
            "NotIn",
            "Exists",
            "DoesNotExist",
            "arm64",
            "amd64",
            "linux",
            "Secret",
            "Pod",
            "ServiceAccount",
            "kubernetes.io/dockerconfigjson",
            "e30=",
            "Namespace",
            "NoSchedule",
        ]
    )
)
_VALUES = st.recursive(
    _SCALARS,
    lambda children: st.lists(children, max_size=3) | st.dictionaries(_KEYS, children, max_size=4),
    max_leaves=25,
)


@settings(max_examples=300, deadline=None)
@given(st.lists(_VALUES, max_size=4))
def test_cluster_and_secret_readers_never_crash(documents: list[Any]) -> None:
    sources = [source for document in documents for source in node_sources(document)]
    cluster_shape(sources)
    drift(sources, SchedulingPolicy())
    for document in documents:
        list(namespaces_in(document))
    try:
        pull_secret_configs(documents)
    except InputError as exc:
        assert "\n" not in str(exc)


@settings(max_examples=300, deadline=None)
@given(requirements=_VALUES, taints=_VALUES, labels=_VALUES, node_taints=_VALUES)
def test_nodepool_and_node_skeletons_with_fuzzed_fields(
    requirements: Any, taints: Any, labels: Any, node_taints: Any
) -> None:
    pool = {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodePool",
        "metadata": {"name": "p"},
        "spec": {"template": {"spec": {"requirements": requirements, "taints": taints}}},
    }
    node = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": "n", "labels": labels},
        "spec": {"taints": node_taints},
    }
    sources = node_sources({"apiVersion": "v1", "kind": "List", "items": [pool, node]})
    assert [source.kind for source in sources] == ["NodePool", "Node"]
    cluster_shape(sources)
    drift(sources, SchedulingPolicy())


@settings(max_examples=300, deadline=None)
@given(secret_type=_VALUES, data=_VALUES, pull=_VALUES, account=_VALUES)
def test_pull_secret_skeletons_with_fuzzed_fields(
    secret_type: Any, data: Any, pull: Any, account: Any
) -> None:
    documents = [
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": "s", "namespace": "ns"},
            "type": secret_type,
            "data": data,
        },
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": "t", "namespace": "ns"},
            "type": "kubernetes.io/dockerconfigjson",
            "data": {".dockerconfigjson": data},
        },
        {
            "apiVersion": "v1",
            "kind": "ServiceAccount",
            "metadata": {"name": "default", "namespace": "ns"},
            "imagePullSecrets": account,
        },
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "p", "namespace": "ns"},
            "spec": {
                "imagePullSecrets": [
                    {"name": "s"},
                    {"name": "t"},
                    *(pull if isinstance(pull, list) else []),
                ],
                "containers": [{"name": "c", "image": "x"}],
            },
        },
    ]
    try:
        for config in pull_secret_configs(documents):
            assert isinstance(config.config, dict)
    except InputError as exc:
        message = str(exc)
        assert "\n" not in message and message.startswith("Secret ns/")
