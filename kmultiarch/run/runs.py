"""Runs over manifests, assembled from a :class:`~kmultiarch.run.config.RunConfig`: read the
sources, gather the pull secrets they carry, open a session, run the engine with its resolver,
and return the engine's result with every finding of the run (the session's included)."""

from __future__ import annotations

from collections.abc import Mapping

from kmultiarch.core.policy import ScopePolicy
from kmultiarch.core.pullsecrets import DockerConfig, pull_secret_configs
from kmultiarch.core.workloads import may_hold_pods
from kmultiarch.engine import EngineResult, read_sources, run_documents
from kmultiarch.run.config import RunConfig
from kmultiarch.run.session import ProgressFactory, Session
from kmultiarch.yaml.stream import InputSource, SourceDocument

__all__ = ["pull_secrets_of", "run_manifests"]


def run_manifests(
    config: RunConfig,
    sources: list[InputSource],
    *,
    edit: bool = True,
    checking: bool = False,
    progress: ProgressFactory | None = None,
) -> EngineResult:
    """Decide (and, with ``edit``, edit) every pod of ``sources``. ``checking``: a run of
    ``check`` or ``report`` (see :func:`~kmultiarch.engine.run_documents`). Bad YAML raises
    before anything is looked up."""
    policy = config.policy
    documents = read_sources(sources, policy.scope)
    pull_secrets = pull_secrets_of(documents, policy.scope)
    with Session(config, pull_secrets=pull_secrets, progress=progress) as session:
        result = run_documents(
            sources,
            documents,
            policy,
            session.resolve,
            edit=edit,
            namespace=config.namespace,
            checking=checking,
        )
        result.findings.extend(session.findings())
    return result


def pull_secrets_of(
    documents: Mapping[str, list[SourceDocument]], scope: ScopePolicy
) -> list[DockerConfig]:
    """The pull secrets (dockerconfigjson Secrets named by the pods or their ServiceAccounts)
    of the documents, decoded in memory. Documents proven to be of kinds that hold neither
    pods, Secrets nor ServiceAccounts are not composed for this."""
    operators = scope.operators

    def relevant(document: SourceDocument) -> bool:
        known = document.resource_type
        return (
            known is None
            or known in (("v1", "Secret"), ("v1", "ServiceAccount"))
            or may_hold_pods(*known, operators)
        )

    values = [
        document.value
        for docs in documents.values()
        for document in docs
        if relevant(document) and document.value is not None
    ]
    return pull_secret_configs(values, operators)
