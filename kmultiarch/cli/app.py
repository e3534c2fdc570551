"""The ``kmultiarch`` command line: a thin click adapter over the engine.

Commands return an exit code; only :func:`run` turns errors into messages: a
:class:`KmultiarchError` becomes one line on stderr and its exit code, anything unexpected
exit 3 with the traceback written to a log file (never to the terminal).
"""

from __future__ import annotations

import contextlib
import io
import os
import sys
import tempfile
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from kmultiarch.cli.session import CACHE_KEY_ENV, RunOptions, append_to_warnings_file, fail
from kmultiarch.core.policy.model import VERIFY_MODES
from kmultiarch.errors import KmultiarchError
from kmultiarch.output.safe import printable
from kmultiarch.run.config import RunRequest
from kmultiarch.version import __version__

EXIT_UNEXPECTED = 3
F = TypeVar("F", bound=Callable[..., Any])


def resolver_options(function: F) -> F:
    """The options every resolving command takes, gathered into a RunOptions argument."""
    options = [
        click.option(
            "--config",
            "config",
            envvar="KMULTIARCH_CONFIG",
            metavar="PATH",
            help="MultiArchPolicy file (default: $KMULTIARCH_CONFIG, else built-in defaults).",
        ),
        click.option("--no-cache", is_flag=True, help="Do not read or write the disk cache."),
        click.option(
            "--cache-dir",
            envvar="KMULTIARCH_CACHE_DIR",
            metavar="DIR",
            help="Cache directory (default: $KMULTIARCH_CACHE_DIR or $XDG_CACHE_HOME/kmultiarch).",
        ),
        click.option(
            "--cache-url",
            envvar="KMULTIARCH_CACHE_URL",
            metavar="URL",
            help="A shared cache level: redis://[user:pass@]host:port/db, rediss:// or unix:// "
            "(Redis or Valkey), read after the local cache and written with it.",
        ),
        click.option(
            "--cache-ca",
            envvar="KMULTIARCH_CACHE_CA",
            metavar="PEM",
            help="CA bundle to verify a rediss:// --cache-url (default: the system's).",
        ),
        _cache_key_file_option(),
        click.option(
            "--cache-ttl",
            type=click.FloatRange(min=0),
            default=3600.0,
            envvar="KMULTIARCH_CACHE_TTL",
            show_default=True,
            metavar="SECONDS",
            help="How long a tag -> digest answer is trusted before a HEAD revalidates it.",
        ),
        click.option(
            "--concurrency",
            type=click.IntRange(1, 256),
            default=32,
            envvar="KMULTIARCH_CONCURRENCY",
            show_default=True,
            help="Images looked up at once.",
        ),
        click.option(
            "--timeout",
            type=click.FloatRange(min=0.1),
            default=10.0,
            envvar="KMULTIARCH_TIMEOUT",
            show_default=True,
            metavar="SECONDS",
            help="Connect/read timeout of one registry request (an attempt may take twice that).",
        ),
        click.option(
            "--retries",
            type=click.IntRange(0, 10),
            default=2,
            show_default=True,
            envvar="KMULTIARCH_RETRIES",
            help="Retries on connection errors, 5xx and 429.",
        ),
        click.option(
            "-n",
            "--namespace",
            default="default",
            show_default=True,
            envvar="KMULTIARCH_NAMESPACE",
            metavar="NAMESPACE",
            help="The namespace of resources without metadata.namespace (as kubectl and helm "
            "take it), for spec.exclude and the namespace selector.",
        ),
        click.option("-v", "--verbose", count=True, help="Log each registry request to stderr."),
        click.option("-q", "--quiet", is_flag=True, help="Only errors on stderr."),
    ]

    def wrapper(**kwargs: Any) -> Any:
        cache_dir = kwargs.pop("cache_dir")
        request = RunRequest(
            no_cache=kwargs.pop("no_cache"),
            cache_dir=Path(cache_dir) if cache_dir else None,
            cache_ttl=kwargs.pop("cache_ttl"),
            cache_url=kwargs.pop("cache_url", None),
            cache_ca=kwargs.pop("cache_ca", None),
            cache_key_file=kwargs.pop("cache_key_file", None),
            cache_key=os.environ.get(CACHE_KEY_ENV) or None,
            concurrency=kwargs.pop("concurrency"),
            timeout=kwargs.pop("timeout"),
            retries=kwargs.pop("retries"),
            lock=kwargs.pop("lock", None),
            offline=kwargs.pop("offline", False),
            namespace=kwargs.pop("namespace"),
            verify=kwargs.pop("verify_mode", None),
        )
        run_options = RunOptions(
            kwargs.pop("config"),
            request,
            verbose=kwargs.pop("verbose"),
            quiet=kwargs.pop("quiet"),
        )
        _configure_logging(run_options.verbose)
        return function(run_options, **kwargs)

    wrapper.__name__ = function.__name__
    wrapper.__doc__ = function.__doc__
    for option in reversed(options):
        wrapper = option(wrapper)
    return wrapper  # type: ignore[return-value]


def _cache_key_file_option() -> Callable[[F], F]:
    return click.option(
        "--cache-key-file",
        envvar="KMULTIARCH_CACHE_KEY_FILE",
        metavar="FILE",
        help="A file holding the key that signs the shared cache's entries (default: "
        "$KMULTIARCH_CACHE_KEY, the key itself): entries not signed with it are not used.",
    )


def lock_options(function: F) -> F:
    """``--lock FILE`` and ``--offline``, for commands decorated with :func:`resolver_options`
    (put this decorator above that one)."""
    function = click.option(
        "--offline",
        is_flag=True,
        envvar="KMULTIARCH_OFFLINE",
        help="Never contact a registry: images missing from the lock fail (or warn, per "
        "failurePolicy).",
    )(function)
    return click.option(
        "--lock",
        "lock",
        envvar="KMULTIARCH_LOCK",
        metavar="FILE",
        help="Lock file (from `kmultiarch lock`): images in it are never looked up "
        "(default: the policy's lock:).",
    )(function)


def verify_option(function: F) -> F:
    """``--verify MODE``, for commands decorated with :func:`resolver_options` (put this
    decorator above that one)."""
    return click.option(
        "--verify",
        "verify_mode",
        type=click.Choice(VERIFY_MODES),
        default=None,
        envvar="KMULTIARCH_VERIFY",
        help="Check that the program each image starts is built for the platforms it claims "
        "(docs/verify.md): warn reports a platform-mismatch, enforce also keeps pods off the "
        "platform (default: the policy's spec.verify.mode, else off).",
    )(function)


def _configure_logging(verbose: int) -> None:
    if verbose:
        import logging  # only -v logs: a run without it does not pay for the module

        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("kmultiarch: %(levelname)s: %(message)s"))
        logger = logging.getLogger("kmultiarch")
        logger.handlers[:] = [handler]
        logger.setLevel(logging.DEBUG)
        logger.propagate = False


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="kmultiarch", message="%(prog)s %(version)s")
def cli() -> None:
    """Add tolerations and node affinity to rendered Kubernetes manifests, from the platforms
    their images support."""


@cli.command()
@click.argument("images", nargs=-1, required=True)
@click.option(
    "-o", "--output", type=click.Choice(["text", "json"]), default="text", show_default=True
)
@lock_options
@resolver_options
def inspect(options: RunOptions, images: tuple[str, ...], output: str) -> int:
    """Print the platforms of each IMAGE, resolved from its registry."""
    from kmultiarch.cli.commands.inspect import inspect_images

    return inspect_images(options, list(images), output)


@cli.command()
@click.argument("images", nargs=-1, required=True)
@click.option(
    "-o", "--output", type=click.Choice(["text", "json"]), default="text", show_default=True
)
@click.option(
    "--max-bytes",
    metavar="SIZE",
    help="Layer bytes one platform manifest may download before it is left unverified "
    "(default: the policy's spec.verify.maxBytes, else 64MiB).",
)
@click.option(
    "--max-expanded",
    metavar="SIZE",
    help="Decompressed layer bytes one platform manifest may read, bounding a gzip bomb "
    "(default: spec.verify.maxExpandedBytes, else 1GiB).",
)
@click.option(
    "--deadline",
    type=click.FloatRange(min=0.1),
    metavar="SECONDS",
    help="Time one platform manifest may take (default: spec.verify.deadline, else 30).",
)
@resolver_options
def verify(
    options: RunOptions,
    images: tuple[str, ...],
    output: str,
    max_bytes: str | None,
    max_expanded: str | None,
    deadline: float | None,
) -> int:
    """Check that the program each platform of each IMAGE starts is built for that platform
    (ELF or PE machine of the entrypoint, read from the layers). Exit 1 on a mismatch."""
    from kmultiarch.cli.commands.verify import verify_images

    return verify_images(options, list(images), output, max_bytes, max_expanded, deadline)


@cli.command()
@click.argument("paths", nargs=-1)
@click.option(
    "-o",
    "--output",
    type=click.Choice(["yaml", "patch", "kustomize", "helmrelease-patches"]),
    default="yaml",
    show_default=True,
    help="yaml: the transformed stream; patch: RFC 6902 patches per changed document; "
    "kustomize: a kustomize Component in --output-dir (docs/flux.md); helmrelease-patches: "
    "a Flux HelmRelease's postRenderers.",
)
@click.option(
    "--output-dir",
    metavar="DIR",
    help="With --output kustomize: the directory of the Component (created; files of an "
    "earlier run replaced or removed, no other file touched).",
)
@click.option(
    "-i",
    "--in-place",
    is_flag=True,
    help="Rewrite the changed files (atomically) instead of printing.",
)
@verify_option
@lock_options
@resolver_options
def mutate(
    options: RunOptions,
    paths: tuple[str, ...],
    output: str,
    output_dir: str | None,
    in_place: bool,
) -> int:
    """Add tolerations and node affinity to the manifests in PATHs (files, directories, or -
    for stdin; stdin when none) and print the result."""
    from kmultiarch.cli.commands.mutate import mutate as run_mutate

    if in_place and (not paths or "-" in paths):
        raise click.UsageError("--in-place needs file or directory paths, not stdin")
    if (output == "kustomize") != (output_dir is not None):
        raise click.UsageError("--output kustomize and --output-dir DIR go together")
    if in_place and output in ("kustomize", "helmrelease-patches"):
        raise click.UsageError(f"--in-place cannot be combined with --output {output}")
    return run_mutate(options, list(paths), output, in_place, output_dir)


@cli.command(context_settings={"ignore_unknown_options": False})
@click.argument("arguments", nargs=-1)
@verify_option
@lock_options
@resolver_options
def fn(options: RunOptions, arguments: tuple[str, ...]) -> int:
    """KRM function. Without arguments: a ResourceList on stdin, the ResourceList with results
    on stdout. With POLICY [FILE...] (kyaml standalone form, kustomize legacy exec plugin): the
    MultiArchPolicy file, then manifests (stdin when none); a plain stream on stdout."""
    from kmultiarch.cli.commands.fn import krm_function

    return krm_function(options, list(arguments))


@cli.command(
    "helm-postrender",
    context_settings={"ignore_unknown_options": True, "help_option_names": []},
)
@click.argument("arguments", nargs=-1, type=click.UNPROCESSED)
def helm_postrender(arguments: tuple[str, ...]) -> int:
    """Helm 4 post-renderer (run by plugin/helm): `mutate` on stdin. Helm 4 hides a
    post-renderer's stderr, so a failure is reported as a document Helm refuses, whose file name
    is the error message: Helm fails and shows it. ARGUMENTS are mutate's options."""
    from kmultiarch.cli.commands.helm import helm_postrender as run_postrender

    return run_postrender(list(arguments), run)


_SKIP_NON_MANIFESTS = click.option(
    "--skip-non-manifests",
    is_flag=True,
    help="Skip files that are not Kubernetes manifests (Helm templates, kustomizations, CI "
    "configs, YAML without apiVersion and kind, YAML that does not parse) instead of failing: "
    "for hooks handed every YAML file.",
)


@cli.command()
@click.argument("paths", nargs=-1)
@click.option(
    "-o",
    "--output",
    type=click.Choice(["text", "json", "github", "sarif", "gitlab", "markdown"]),
    default=None,
    help="text: a table; github: workflow annotations; sarif: SARIF 2.1.0; json: for scripts "
    "(default: github when GITHUB_ACTIONS=true, else text).",
)
@click.option("--diff", is_flag=True, help="Also show the unified diff mutate would apply.")
@click.option(
    "--component",
    metavar="DIR",
    help="The committed kustomize Component of `mutate --output kustomize` (docs/flux.md): "
    "the changes it makes are not failures, and check fails when DIR differs from what mutate "
    "would write now.",
)
@_SKIP_NON_MANIFESTS
@verify_option
@lock_options
@resolver_options
def check(
    options: RunOptions,
    paths: tuple[str, ...],
    output: str | None,
    diff: bool,
    component: str | None,
    skip_non_manifests: bool,
) -> int:
    """Exit 1 when mutate would change the manifests in PATHs, when a pod has no platform where
    all its images run, or (failurePolicy: Fail) when an image cannot be resolved."""
    from kmultiarch.cli.commands.check import check_manifests

    if diff and output == "sarif":
        raise click.UsageError("--diff cannot be combined with --output sarif")
    return check_manifests(
        options, list(paths), output, diff, skip_non_manifests, component=component
    )


@cli.command()
@click.argument("paths", nargs=-1)
@click.option(
    "--cluster",
    "clusters",
    multiple=True,
    required=True,
    metavar="FILE",
    help="The cluster's state: `kubectl get pods,events,nodes -A -o json` (or -o yaml), a "
    "List or objects; - for stdin; repeatable (add replicasets,jobs and operators' resources "
    "for the owner chain).",
)
@click.option(
    "-o",
    "--output",
    type=click.Choice(["text", "json", "github", "sarif", "markdown"]),
    default=None,
    help="As check's (default: github when GITHUB_ACTIONS=true, else text).",
)
@click.option(
    "--max-object-size",
    type=click.IntRange(min=1024),
    default=8 * 1024 * 1024,
    show_default=True,
    metavar="BYTES",
    help="Largest object of a dump (its text); larger is refused.",
)
@click.option(
    "--max-objects",
    type=click.IntRange(min=1),
    default=200_000,
    show_default=True,
    metavar="N",
    help="Objects triage may keep over all dumps (failing pods, their events, nodes, owners): "
    "bounds memory whatever the dumps' size.",
)
@verify_option
@lock_options
@resolver_options
def triage(
    options: RunOptions,
    paths: tuple[str, ...],
    clusters: tuple[str, ...],
    output: str | None,
    max_object_size: int,
    max_objects: int,
) -> int:
    """Trace the architecture failures of a cluster's pods (exec format error, no image for
    the node's platform, FailedScheduling, NotTriggerScaleUp) to the workloads of the manifests
    in PATHs, with a cause and the command that fixes it. Exit 1 when a failure is found."""
    from kmultiarch.cli.commands.triage import triage_cluster
    from kmultiarch.io.clusterdump import DumpLimits

    if list(clusters).count("-") > 1 or ("-" in clusters and "-" in paths):
        raise click.UsageError("stdin (-) can be read once: by --cluster or by PATHs")
    limits = DumpLimits(max_object_bytes=max_object_size, max_kept=max_objects)
    return triage_cluster(options, list(paths), list(clusters), output, limits)


@cli.command()
@click.argument("files", nargs=-1, required=True)
@_SKIP_NON_MANIFESTS
@click.option(
    "--repin",
    is_flag=True,
    help="Also rewrite an image pinned to one platform's manifest of its tag's index "
    "(NAME:TAG@DIGEST, check's platform-pinned-digest) to the index digest, changing nothing "
    "else on the line.",
)
@verify_option
@lock_options
@resolver_options
def fix(options: RunOptions, files: tuple[str, ...], skip_non_manifests: bool, repin: bool) -> int:
    """Rewrite FILES (or the manifests in directories) in place, atomically; exit 1 when any
    file changed, listing them (a pre-commit fixer)."""
    from kmultiarch.cli.commands.fix import fix_files

    if "-" in files:
        raise click.UsageError("fix rewrites files: give file or directory paths, not stdin")
    return fix_files(options, list(files), skip_non_manifests, repin=repin)


@cli.command()
@click.argument("paths", nargs=-1)
@click.option(
    "-o",
    "--output",
    type=click.Choice(["text", "json", "html"]),
    default="text",
    show_default=True,
    help="html: one self-contained page.",
)
@click.option(
    "--suggest-upgrades",
    is_flag=True,
    help="For each image lacking a cluster platform, look for the nearest newer version tag "
    "(from the registry's tag list) that has it.",
)
@verify_option
@lock_options
@resolver_options
def report(options: RunOptions, paths: tuple[str, ...], output: str, suggest_upgrades: bool) -> int:
    """Every image in the manifests (or in `kubectl get pods -A -o yaml`) with its platforms
    and the workloads using it; how many workloads are multi-arch, arm64-only, amd64-only or
    unresolvable."""
    from kmultiarch.cli.commands.report import report_images

    if suggest_upgrades and options.request.offline:
        raise click.UsageError("--suggest-upgrades lists tags at the registry: not with --offline")
    return report_images(options, list(paths), output, suggest_upgrades)


@cli.command()
@click.argument("paths", nargs=-1)
@click.option(
    "-o",
    "--output",
    "lock_file",
    default=None,
    metavar="FILE",
    help="The lock file to write (or, with --check, to check); default: the policy's lock:, "
    "else kmultiarch.lock.",
)
@click.option(
    "--check",
    "check_only",
    is_flag=True,
    help="Write nothing; list entries whose tag now points to another digest (and, given "
    "PATHs, images missing from the lock); exit 1 when there is any.",
)
@verify_option
@resolver_options
def lock(
    options: RunOptions, paths: tuple[str, ...], lock_file: str | None, check_only: bool
) -> int:
    """Resolve every image of the manifests in PATHs (stdin when none) and write a lock file."""
    from kmultiarch.cli.commands.lock import lock_images

    return lock_images(options, list(paths), lock_file, check_only)


@cli.group()
def policy() -> None:
    """Write a MultiArchPolicy."""


@policy.command("init")
@click.argument("paths", nargs=-1)
@click.option(
    "--name", default="cluster", show_default=True, help="metadata.name of the policy written."
)
def policy_init(paths: tuple[str, ...], name: str) -> int:
    """Print a MultiArchPolicy for the cluster described by PATHs (stdin when none): Node
    objects (`kubectl get nodes -o yaml`) or Karpenter NodePools. Platforms come from the node
    labels or the NodePool requirements, tolerations from the taints of platforms that no
    untainted node or NodePool offers."""
    from kmultiarch.cli.commands.policy import init_policy

    return init_policy(list(paths), name)


@cli.group()
def cache() -> None:
    """Show or clear the platform cache."""


_CACHE_URL = click.option(
    "--cache-url", envvar="KMULTIARCH_CACHE_URL", metavar="URL", help="The shared level too."
)
_CACHE_CA = click.option(
    "--cache-ca",
    envvar="KMULTIARCH_CACHE_CA",
    metavar="PEM",
    help="CA bundle to verify a rediss:// --cache-url.",
)


@cache.command("info")
@click.option("--cache-dir", envvar="KMULTIARCH_CACHE_DIR", metavar="DIR")
@_CACHE_URL
@_CACHE_CA
@_cache_key_file_option()
def cache_info(
    cache_dir: str | None, cache_url: str | None, cache_ca: str | None, cache_key_file: str | None
) -> int:
    """Where the cache is and what it holds (and the shared level's entries, with a URL: with
    a key, how many are signed with it)."""
    from kmultiarch.cli.commands.cache import show_cache_info, show_shared_info

    code = show_cache_info(Path(cache_dir) if cache_dir else None)
    return show_shared_info(cache_url, cache_ca, cache_key_file) if cache_url else code


@cache.command("clear")
@click.option("--cache-dir", envvar="KMULTIARCH_CACHE_DIR", metavar="DIR")
@_CACHE_URL
@_CACHE_CA
def cache_clear(cache_dir: str | None, cache_url: str | None, cache_ca: str | None) -> int:
    """Remove every cached answer (in the shared level too, with a URL: every entry under
    kmultiarch:v1:, signed or not)."""
    from kmultiarch.cli.commands.cache import clear_cache, clear_shared

    code = clear_cache(Path(cache_dir) if cache_dir else None)
    return clear_shared(cache_url, cache_ca) if cache_url else code


@cli.group()
def admission() -> None:
    """Serve the engine as a mutating admission webhook (docs/admission.md)."""


@admission.command("serve")
@click.option(
    "--listen",
    default="0.0.0.0:8443",
    show_default=True,
    envvar="KMULTIARCH_LISTEN",
    metavar="HOST:PORT",
    help="Where to serve HTTPS (POST /mutate, GET /healthz /readyz /metrics).",
)
@click.option(
    "--tls-cert-file",
    required=True,
    metavar="PEM",
    help="Server certificate (re-read when it changes).",
)
@click.option(
    "--tls-key-file", required=True, metavar="PEM", help="Its private key (re-read with it)."
)
@click.option(
    "--kubeconfig",
    envvar="KUBECONFIG",
    metavar="FILE",
    help="The API server to read pull secrets, namespaces and nodes from (default: "
    "$KUBECONFIG, else the in-cluster service account).",
)
@lock_options
@resolver_options
def admission_serve(
    options: RunOptions,
    listen: str,
    tls_cert_file: str,
    tls_key_file: str,
    kubeconfig: str | None,
) -> int:
    """Answer AdmissionReviews for pods with the JSONPatch `mutate` would apply (--config
    POLICY, --lock, --cache-url as for mutate)."""
    from kmultiarch.cli.commands.admission import serve

    return serve(options, listen, tls_cert_file, tls_key_file, kubeconfig)


@admission.command("configuration")
@click.option("--url", metavar="URL", help="The server's https:// URL (…/mutate).")
@click.option(
    "--service", metavar="NAMESPACE/NAME[:PORT]", help="The server's Service (port 443 default)."
)
@click.option(
    "--ca-file", required=True, metavar="PEM", help="The CA that signed the server's certificate."
)
@click.option(
    "--config", "config", envvar="KMULTIARCH_CONFIG", metavar="PATH", help="MultiArchPolicy file."
)
@click.option(
    "--timeout-seconds",
    type=click.IntRange(1, 30),
    default=10,
    show_default=True,
    help="How long the API server waits for the webhook.",
)
@click.option("--name", default="kmultiarch", show_default=True, help="metadata.name.")
def admission_configuration(
    url: str | None,
    service: str | None,
    ca_file: str,
    config: str | None,
    timeout_seconds: int,
    name: str,
) -> int:
    """Print the MutatingWebhookConfiguration that registers the server."""
    from kmultiarch.cli.commands.admission import configuration

    return configuration(config, url, service, ca_file, timeout_seconds, name)


def run(argv: list[str]) -> int:
    """Run the CLI and map every outcome to an exit code."""
    _utf8_streams()
    try:
        result = cli.main(args=argv, prog_name="kmultiarch", standalone_mode=False)
    except click.exceptions.Exit as exc:
        return int(exc.exit_code)
    except click.ClickException as exc:
        _show_usage_error(exc)
        return 2
    except click.exceptions.Abort:
        fail("aborted")
        return 130
    except KmultiarchError as exc:
        fail(str(exc))
        return exc.exit_code
    except BrokenPipeError:
        # The reader went away (`kmultiarch ... | head`): nothing more to say.
        _silence_stdout()
        return 1
    except KeyboardInterrupt:
        fail("interrupted")
        return 130
    except Exception as exc:  # noqa: BLE001 - the last line of defence: no traceback shown
        _report_crash(exc)
        return EXIT_UNEXPECTED
    return int(result or 0)


def _show_usage_error(exc: click.ClickException) -> None:
    """click's usage, hint and ``Error:`` line, the message made printable: it quotes the
    value that was refused, which may come from anywhere (a CI variable, a file name)."""
    shown = io.StringIO()
    exc.show(file=shown)
    # The usage and the hint before 'Error: ' are click's text about kmultiarch's commands.
    ours, marker, message = shown.getvalue().partition("Error: ")
    message = printable(message.rstrip("\n"))
    click.echo(f"{ours}{marker}{message}", err=True)
    append_to_warnings_file(f"kmultiarch: error: {printable(exc.format_message())}")


def _report_crash(exc: BaseException) -> None:
    """One short line that names the exception's type and the log holding the details: never
    the exception's message, which may quote input (a manifest, a Secret). Nothing here may
    fail in turn: a second traceback would print the first one's message."""
    try:
        where = f"please report it with the log at {_write_crash_log()}"
    except Exception as log_error:  # noqa: BLE001 - a crash log that cannot be written
        where = f"no log could be written ({type(log_error).__name__})"
    with contextlib.suppress(Exception):
        fail(f"unexpected error ({type(exc).__name__}); this is a bug in kmultiarch: {where}")


def _utf8_streams() -> None:
    """Manifests are UTF-8 whatever the locale (kubectl reads UTF-8): stdout writes UTF-8, and
    stderr escapes what its encoding cannot show instead of failing on it."""
    for stream, errors in ((sys.stdout, "strict"), (sys.stderr, "backslashreplace")):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            with contextlib.suppress(ValueError, OSError):
                reconfigure(encoding="utf-8", errors=errors)


def _silence_stdout() -> None:
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except OSError:
        pass


def _write_crash_log() -> str:
    handle, path = tempfile.mkstemp(prefix="kmultiarch-crash-", suffix=".log")  # mode 0600
    # UTF-8 whatever the locale; backslashreplace: a message may hold bytes that are not UTF-8.
    with os.fdopen(handle, "w", encoding="utf-8", errors="backslashreplace") as log_file:
        log_file.write(f"kmultiarch {__version__}, Python {sys.version}\n")
        log_file.write(_crash_details())
    return path


def _crash_details() -> str:
    """The command line and the traceback, without a credential from either: URLs lose their
    user info and query credentials, secrets of the environment and of argv are cut."""
    try:
        from kmultiarch.cli.redaction import redact, redacted_argv, secrets_in

        details = f"argv: {redacted_argv(sys.argv)!r}\n\n{traceback.format_exc()}"
        return redact(details, secrets_in(sys.argv, os.environ))
    except Exception as exc:  # noqa: BLE001 - better no details than a secret, or no log
        return f"(no details: redacting them failed with {type(exc).__name__})\n"
