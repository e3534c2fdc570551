"""Commands kmultiarch prints for the user to run: each carries the options that shaped the
run that printed it (the policy, the lock, offline, the namespace, the verification mode), so
that pasted as shown it takes the same decisions. One home, so that ``check``'s fix hints, the
Component's refresh command and the lock's own commands cannot drift apart."""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from typing import TYPE_CHECKING

from kmultiarch.core.scope import DEFAULT_NAMESPACE

if TYPE_CHECKING:
    from kmultiarch.cli.session import RunOptions

#: What a command reads from standard input is named so in a printed command line.
STDIN_PLACEHOLDER = "MANIFESTS"


def shaping_options(options: RunOptions, *, with_lock: bool = True) -> list[str]:
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
    if request.verify is not None:
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
    """``kmultiarch VERB [the run's options] BEFORE FILES AFTER``, shell-quoted. With no file
    (or only ``-``) the manifests came on standard input: ``< MANIFESTS`` says so."""
    named = [name for name in files if name != "-"]
    words = ["kmultiarch", *verb, *shaping_options(options, with_lock=with_lock)]
    command = shlex.join([*words, *before_files, *named, *after_files])
    return command if named else f"{command} < {STDIN_PLACEHOLDER}"
