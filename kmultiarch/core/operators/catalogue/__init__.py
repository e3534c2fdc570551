"""The built-in catalogue of operators' kinds (:data:`CATALOGUE`): data, one module per
operator, each entry citing the operator's code it follows (repository, file, function or
field). The model it is written in, and every function that reads it, is
:mod:`kmultiarch.core.operators.model`; a policy's ``spec.podSpecs`` entry says the same things in
the same model (validated by the same checks).

Kept apart so that a run whose stream holds no catalogued kind never imports it:
:func:`kmultiarch.core.operators.catalogued.built_in_operators` answers "is this kind catalogued?"
from
:data:`kmultiarch.core.operators.catalogued.CATALOGUE_KINDS` and loads this package only for a kind
that is (a test holds the two equal).

To add an operator: a module here whose ``ENTRIES`` are its kinds, named in :data:`_MODULES`,
and its kinds in ``CATALOGUE_KINDS``.
"""

from __future__ import annotations

from kmultiarch.core.operators.catalogue import (
    agent_sandbox,
    altinity,
    argo_events,
    argo_rollouts,
    cass_operator,
    cloudnativepg,
    crossplane,
    crunchy_pgo,
    dragonfly,
    eck,
    flink,
    grafana,
    jaeger,
    jobset,
    kserve,
    kubeflow,
    kuberay,
    kubevirt,
    loki,
    lws,
    minio,
    mongodb_community,
    opentelemetry,
    opstree_redis,
    percona,
    percona_postgresql,
    prometheus,
    rabbitmq,
    rook,
    scylla,
    spark,
    starrocks,
    strimzi,
    tekton,
    tigera,
    vitess,
    volcano,
    zalando,
)
from kmultiarch.core.operators.model import OperatorKind

__all__ = ["CATALOGUE"]

#: The operators' modules, in the order docs/operators.md lists them.
_MODULES = (
    prometheus,
    eck,
    strimzi,
    kuberay,
    kubeflow,
    spark,
    tekton,
    opentelemetry,
    jaeger,
    minio,
    rook,
    flink,
    volcano,
    altinity,
    percona_postgresql,
    percona,
    mongodb_community,
    zalando,
    opstree_redis,
    crossplane,
    cloudnativepg,
    rabbitmq,
    jobset,
    argo_events,
    argo_rollouts,
    agent_sandbox,
    kubevirt,
    vitess,
    tigera,
    grafana,
    dragonfly,
    kserve,
    crunchy_pgo,
    cass_operator,
    lws,
    scylla,
    starrocks,
    loki,
)

#: The built-in catalogue: every operator's kinds.
CATALOGUE: tuple[OperatorKind, ...] = tuple(
    entry for module in _MODULES for entry in module.ENTRIES
)
