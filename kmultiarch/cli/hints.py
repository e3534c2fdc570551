"""Commands kmultiarch prints for the user to run: each carries the options that shaped the
run that printed it (the policy, the lock, offline, the namespace, the verification mode), so
that pasted as shown it takes the same decisions. One home, so that ``check``'s fix hints, the
Component's refresh command and the lock's own commands cannot drift apart."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from kmultiarch.core.resources import DEFAULT_NAMESPACE
from kmultiarch.core.shellwords import file_operand, shell_join

if TYPE_CHECKING:
    from kmultiarch.cli.session import RunOptions

#: What a command reads from standard input is named so in a printed command line.
STDIN_PLACEHOLDER = "MANIFESTS"


#: Commands that do not take every shaping option: ``verify`` reads the registry itself (no
#: lock, no --verify: it is the verification), ``inspect`` only resolves.
_WITHOUT_LOCK = frozenset({"verify"})
_WITHOUT_VERIFY = frozenset({"verify", "inspect"})


def shaping_options(
    options: RunOptions, *, with_lock: bool = True, with_verify: bool = True
) -> list[str]:
    """The command-line words that shaped this run's decisions, in the order ``--help`` lists
    them. ``with_lock=False`` for ``lock`` itself, which asks every registry afresh."""
    request = options.request
    words: list[str] = []
    if options.config:
        words += ["--config", options.config]
    if with_lock and request.lock:
        words += ["--lock", str(request.lock)]
    if with_lock and request.offline:
        words.append("--offline")
    if request.namespace and request.namespace != DEFAULT_NAMESPACE:
        words += ["--namespace", request.namespace]
    if with_verify and request.verify is not None:
        words += ["--verify", request.verify]
    return words


def command_line(
    options: RunOptions,
    verb: Sequence[str],
    files: Sequence[str] = (),
    *,
    with_lock: bool = True,
    before_files: Sequence[str] = (),
    after_files: Sequence[str] = (),
) -> str:
    """``kmultiarch VERB [the run's options] BEFORE FILES AFTER``, shell-quoted so that it runs
    as printed in every format whatever the file names (core/shellwords: ``$'...'`` for names
    holding control or invisible characters or bytes that are not UTF-8, ``./-x.yaml`` for a
    name that starts with ``-``), with the options VERB takes. With no file (or only ``-``)
    the manifests came on standard input: ``< MANIFESTS`` says so; ``verify`` and ``inspect``
    take images, never stdin."""
    named = [file_operand(name) for name in files if name != "-"]
    shaping = shaping_options(
        options,
        with_lock=with_lock and verb[0] not in _WITHOUT_LOCK,
        with_verify=verb[0] not in _WITHOUT_VERIFY,
    )
    words = ["kmultiarch", *verb, *shaping]
    command = shell_join([*words, *before_files, *named, *after_files])
    reads_stdin = not named and verb[0] not in _WITHOUT_VERIFY
    return f"{command} < {STDIN_PLACEHOLDER}" if reads_stdin else command


def command_for(options: RunOptions) -> Callable[[Sequence[str], Sequence[str]], str]:
    """:func:`command_line` for these options, as the pure core asks for one (triage)."""
    return lambda verb, arguments: command_line(options, verb, arguments)
