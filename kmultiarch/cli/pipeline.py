"""What several commands do alike: run the engine with the resolver a run's options describe,
and report its findings (with the Helm template a finding came from, where one is known)."""

from __future__ import annotations

import os
import re
from dataclasses import replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from kmultiarch.core.findings import Finding
from kmultiarch.engine import EngineResult, read_sources, run_documents
from kmultiarch.errors import InputError
from kmultiarch.io.inputs import STDIN_NAME
from kmultiarch.output.safe import printable

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

    from kmultiarch.cli.session import RunOptions
    from kmultiarch.core.policy import Policy
    from kmultiarch.core.pullsecrets import DockerConfig
    from kmultiarch.core.reference import ImageRef
    from kmultiarch.core.resolution import Resolution
    from kmultiarch.io.manifestfiles import Skipped
    from kmultiarch.resolve.cache import ResolutionCache
    from kmultiarch.yaml.stream import InputSource, SourceDocument


def resolve_and_run(
    options: RunOptions,
    sources: list[InputSource],
    policy: Policy,
    *,
    edit: bool = True,
    checking: bool = False,
) -> EngineResult:
    """Run the engine with the resolver the options describe; report cache warnings. With
    ``edit=False`` the changes are decided but no document is edited (check, report)."""
    documents = read_sources(sources, policy)
    options.pull_secrets = tuple(pull_secrets_of(documents, policy))
    cache = options.open_cache()
    try:
        resolve = resolve_function(options, policy, cache)
        result = run_documents(
            sources,
            documents,
            policy,
            resolve,
            edit=edit,
            namespace=options.namespace,
            checking=checking,
        )
        report_cache_warnings(options, cache)
    finally:
        cache.close()
    return result


def report_cache_warnings(options: RunOptions, cache: ResolutionCache) -> None:
    """What the cache met during the run (damaged entries, a full disk...), said once."""
    from kmultiarch.cli.session import warn

    if not options.quiet:
        for message in cache.warnings:
            warn(message)
    cache.warnings.clear()


def pull_secrets_of(
    documents: Mapping[str, list[SourceDocument]], policy: Policy
) -> list[DockerConfig]:
    """The pull secrets (dockerconfigjson Secrets named by the pods or their ServiceAccounts)
    of the documents, decoded in memory. Documents proven to be of kinds that hold neither
    pods, Secrets nor ServiceAccounts are not composed for this."""
    from kmultiarch.core.pullsecrets import pull_secret_configs
    from kmultiarch.core.workloads import may_hold_pods

    extra_paths = policy.pod_spec_paths()

    def relevant(document: SourceDocument) -> bool:
        known = document.resource_type
        return (
            known is None
            or known in (("v1", "Secret"), ("v1", "ServiceAccount"))
            or may_hold_pods(*known, extra_paths)
        )

    values = [
        document.value
        for docs in documents.values()
        for document in docs
        if relevant(document) and document.value is not None
    ]
    return pull_secret_configs(values, extra_paths)


def resolve_function(
    options: RunOptions, policy: Policy, cache: ResolutionCache
) -> Callable[[list[ImageRef]], Mapping[ImageRef, Resolution]]:
    """The engine's ``resolve``: the options' resolver, with a progress line on a terminal."""
    from kmultiarch.io.progress import progress_line

    resolver = options.resolver(policy, cache)

    def resolve(references: list[ImageRef]) -> Mapping[ImageRef, Resolution]:
        progress = progress_line(
            options.quiet, lambda: resolver.stats.cache_hits + resolver.stats.locked
        )
        try:
            return resolver.resolve(references, progress)
        finally:
            if progress is not None:
                progress.finish()

    return resolve


def report_findings(result: EngineResult, options: RunOptions) -> None:
    from kmultiarch.cli.session import fail, warn

    for finding in result.findings:
        line = f"{finding_location(result, finding)}: {finding.message}"
        if finding.severity == "error":
            fail(line)
        elif not options.quiet:
            warn(line)


#: Helm 4 names each post-rendered document's template in this annotation; Helm 3 and
#: ``helm template`` write a ``# Source: <template>`` comment before each document.
HELM_FILENAME_ANNOTATION = "postrenderer.helm.sh/postrender-filename"
_HELM_SOURCE_COMMENT = re.compile(r"^# Source: (\S.*?)\s*$", re.MULTILINE)


def finding_location(result: EngineResult, finding: Finding) -> str:
    """Where a finding is: ``FILE:LINE: Kind name``; for a Helm stream on stdin, the chart
    template it came from instead of ``<stdin>:LINE``."""
    if finding.source == STDIN_NAME and finding.document_index is not None:
        template = helm_template_of(result, finding.source, finding.document_index)
        if template:
            return replace(finding, source=template, line=None).location()
    return finding.location()


def helm_template_of(result: EngineResult, source: str, index: int) -> str | None:
    outcomes = result.documents.get(source, [])
    if index >= len(outcomes):
        return None
    document = outcomes[index].document
    value = document.value
    metadata = value.get("metadata") if isinstance(value, dict) else None
    annotations = metadata.get("annotations") if isinstance(metadata, dict) else None
    if isinstance(annotations, dict) and isinstance(annotations.get(HELM_FILENAME_ANNOTATION), str):
        return str(annotations[HELM_FILENAME_ANNOTATION])
    match = _HELM_SOURCE_COMMENT.search(document.text)
    return match.group(1) if match else None


def note_skipped(skipped: list[Skipped], options: RunOptions) -> None:
    """Skipped files are named only with ``-v``: in a hook they are the normal case."""
    from kmultiarch.cli.session import note

    if options.verbose and not options.quiet:
        for item in skipped:
            note(f"{item.name}: skipped: {item.reason}")


def generated_at() -> str:
    """Now, or ``$SOURCE_DATE_EPOCH`` for reproducible output, as UTC ISO 8601."""
    epoch = os.environ.get("SOURCE_DATE_EPOCH", "")
    if not epoch:
        return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    try:
        moment = datetime.fromtimestamp(int(epoch), UTC)
    except (ValueError, OverflowError, OSError):
        # reproducible-builds.org: a malformed value is an error, not a silent fallback.
        raise InputError(
            f"SOURCE_DATE_EPOCH={printable(epoch[:40])!r} is not a UNIX time kmultiarch can "
            "write (seconds since 1970, up to year 9999); fix or unset it"
        ) from None
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")
