"""Runs over manifests, assembled from a :class:`~kmultiarch.run.config.RunConfig`: read the
sources, gather the pull secrets they carry, open a session, run the engine with its resolver,
and return the engine's result with every finding of the run (the session's included)."""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator, Mapping

from kmultiarch.core.operators.pullsecrets import DockerConfig, pull_secret_configs
from kmultiarch.core.operators.workloads import may_hold_pods
from kmultiarch.core.policy.model import ScopePolicy
from kmultiarch.engine import EngineResult, read_sources, run_documents
from kmultiarch.run.config import RunConfig
from kmultiarch.run.session import ProgressFactory, Session
from kmultiarch.yaml.stream import InputSource, SourceDocument, cyclic_gc_paused

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
    with (
        _documents_frozen(),
        Session(config, pull_secrets=pull_secrets, progress=progress) as session,
    ):
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
        result.findings.extend(session.unused_overrides())
    return result


@contextlib.contextmanager
def _documents_frozen() -> Iterator[None]:
    """Keep the cyclic garbage collector off what is alive now (the documents just read, with
    their values, and the modules) for the rest of the run: they live until its end, and each
    collection of the oldest generation would walk all of them again (about a tenth of a warm
    run of 2,000 resources). Reference counting still frees them; cycles made among them are
    collected after the run. Not done when the collector is off, or when the caller froze
    objects of its own (``gc.unfreeze`` would thaw them too)."""
    if not gc.isenabled() or gc.get_freeze_count():
        yield
        return
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


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

    with cyclic_gc_paused():  # once for all the documents composed here
        values = [
            document.value
            for docs in documents.values()
            for document in docs
            if relevant(document) and document.value is not None
        ]
    return pull_secret_configs(values, operators)
