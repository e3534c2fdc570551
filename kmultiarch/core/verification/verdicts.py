"""Honest platforms: does the program a container starts run on the platform its manifest
claims? The start command, the search for its file over an image's layers, and the verdict.

Pure. :func:`search_start_file` is a sans-I/O search: given the layers read so far
(:class:`~kmultiarch.core.verification.layers.LayerIndex`, top first) it either says which layer to
read next, watching which path (:class:`NeedLayer`), or gives the verdict
(:class:`PlatformVerification`); the caller streams layers and asks again. Every outcome is
data: ``verified``, ``mismatch`` (the file, its machine, the claimed platform) or
``unverified`` with a reason and a :data:`UnverifiedCode`.

The start command is what runc executes: the config's ``Entrypoint`` followed by its ``Cmd``
(Kubernetes' ``command`` and ``args`` replace them as the kubelet does); a name without a
slash is looked up in the ``PATH`` of the config's ``Env`` (runc's ``exec.LookPath``: the
first regular file with an execute bit; an image without ``PATH`` gets the runtime's
default), relative to ``WorkingDir``; ``#!`` scripts are followed to their interpreter
(``env`` and its program included), as Linux does, at most four deep.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, cast, get_args

from kmultiarch.core.images.answers import AnswerError, checked_digest
from kmultiarch.core.images.platform import Platform
from kmultiarch.core.images.reference import ImageRef
from kmultiarch.core.verification.binaries import (
    Machine,
    NotExecutable,
    Script,
    identify,
    runs_as_claimed,
)
from kmultiarch.core.verification.layers import (
    Ambiguous,
    IndexedEntry,
    LayerIndex,
    Pending,
    Resolved,
    Unresolvable,
    path_key,
    resolve,
    windows_path,
)
from kmultiarch.errors import InvalidPlatformError

__all__ = [
    "CACHEABLE_CODES",
    "DEFAULT_PATH",
    "ImageVerification",
    "LayerRef",
    "NeedLayer",
    "PlatformVerification",
    "StartConfig",
    "UnverifiedCode",
    "VerifyStatus",
    "claim_key",
    "layer_compression",
    "parse_layers",
    "search_start_file",
    "verification_from_json",
    "verification_json",
]

VerifyStatus = Literal["verified", "mismatch", "unverified"]

#: Why a platform is unverified. The first group says something of the image itself (the
#: answer cannot change: cached for good); the second of this run (bounds, the network).
UnverifiedCode = Literal[
    "no-entrypoint",  # neither Entrypoint nor Cmd: nothing to start
    "not-found",  # the start file is not in the image, or is no executable file
    "interpreter",  # a script whose interpreter cannot be found
    "not-executable",  # a file of no format kmultiarch reads (or not a program)
    "layer-media-type",  # a layer kmultiarch does not read (encrypted, unknown)
    "ambiguous",  # the runtimes do not build one known file system from the layers
    "digest",  # a layer's bytes do not match its digest (or its size)
    "foreign-layer",  # a layer its registry does not serve (Windows base layers)
    "budget",  # the download budget ran out
    "expanded",  # the cap on decompressed bytes was reached
    "deadline",  # the deadline passed
    "registry",  # the registry failed to serve a manifest, config or layer
    "damaged",  # a layer that is not a tar archive, or a broken compressed stream
]
CACHEABLE_CODES: frozenset[str] = frozenset(
    {
        "no-entrypoint",
        "not-found",
        "interpreter",
        "not-executable",
        "layer-media-type",
        "ambiguous",
    }
)
_CODES = frozenset(get_args(UnverifiedCode))
_STATUSES = frozenset(get_args(VerifyStatus))

#: The PATH containerd and Docker give a container whose image sets none.
DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
DEFAULT_WINDOWS_PATH = "C:\\Windows\\system32;C:\\Windows"
#: What ``env -i`` leaves execvp to search (glibc's _CS_PATH).
_ENV_EMPTY_PATH = "/bin:/usr/bin"
#: Scripts whose interpreter is a script, and so on: Linux stops after four.
MAX_SCRIPT_DEPTH = 4
#: Longest text kept in a result (paths, reasons) and most steps listed.
_MAX_TEXT = 4096
_MAX_STEPS = 64


# -- the results ----------------------------------------------------------------------------


@dataclass(frozen=True)
class PlatformVerification:
    """The verdict for one platform manifest of an image.

    ``file`` is the executable read (``/bin/busybox``), ``machine`` what it is built for
    (``x86-64``); ``via`` the paths that led there (symbolic links, scripts, ``env``);
    ``reason`` a sentence (why unverified, what mismatches); ``code`` the kind of
    ``unverified`` reason.
    """

    platform: Platform
    digest: str
    status: VerifyStatus
    file: str = ""
    machine: str = ""
    reason: str = ""
    code: UnverifiedCode | None = None
    via: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        # Bounded when made as when read back (caches, the lock): a path from an image may
        # be a megabyte long, and a verdict written must read back, not as damage.
        for name in ("file", "machine", "reason"):
            object.__setattr__(self, name, _clipped(getattr(self, name)))
        if len(self.via) > _MAX_STEPS or any(len(step) > _MAX_TEXT for step in self.via):
            kept = self.via
            if len(kept) > _MAX_STEPS:
                kept = kept[: _MAX_STEPS - 1] + kept[-1:]
            object.__setattr__(self, "via", tuple(_clipped(step) for step in kept))

    @property
    def cacheable(self) -> bool:
        """Whether the verdict is the image's own (for good: the manifest is content-
        addressed), not this run's (a budget, a deadline, a registry failure)."""
        return self.status != "unverified" or self.code in CACHEABLE_CODES


@dataclass(frozen=True)
class ImageVerification:
    """Every platform manifest of one image, verified; ``error`` when the image could not
    be read at all (not resolved, no digest known)."""

    reference: ImageRef
    digest: str | None
    platforms: tuple[PlatformVerification, ...] = ()
    error: str | None = None

    @property
    def mismatched(self) -> frozenset[Platform]:
        """Platforms whose start file is of another machine: what ``enforce`` would drop."""
        return frozenset(p.platform for p in self.platforms if p.status == "mismatch")

    def for_platform(self, platform: Platform) -> PlatformVerification | None:
        return next((p for p in self.platforms if p.platform == platform), None)


def claim_key(digest: str, platform: Platform) -> str:
    """How a verdict is keyed: it answers "does manifest ``digest`` run on ``platform``",
    and an index may list one manifest under several platforms (each claim is judged)."""
    return f"{digest}@{platform}"


def verification_json(result: PlatformVerification) -> dict[str, Any]:
    """A verdict as JSON (the cache's and ``verify -o json``'s form)."""
    document: dict[str, Any] = {
        "platform": str(result.platform),
        "digest": result.digest,
        "status": result.status,
        "file": result.file or None,
        "machine": result.machine or None,
        "reason": result.reason or None,
    }
    if result.code is not None:
        document["code"] = result.code
    if result.via:
        document["via"] = list(result.via)
    return document


def verification_from_json(document: Mapping[str, Any]) -> PlatformVerification:
    """A verdict read back (from a cache): every field checked; ValueError says which is
    wrong."""
    try:
        platform = Platform.parse(_text_field(document, "platform", required=True))
    except InvalidPlatformError as exc:
        raise AnswerError("platform", str(exc)) from exc
    digest = checked_digest(document.get("digest"))
    status = document.get("status")
    if status not in _STATUSES:
        raise AnswerError("status", f"{status!r} is not one of {sorted(_STATUSES)}")
    checked_status = cast(VerifyStatus, status)
    code = document.get("code")
    if code is not None and code not in _CODES:
        raise AnswerError("code", f"{code!r} is not a known reason")
    via = document.get("via", [])
    if (
        not isinstance(via, list)
        or len(via) > _MAX_STEPS
        or not all(isinstance(step, str) and len(step) <= _MAX_TEXT for step in via)
    ):
        raise AnswerError("via", "expected a short list of paths")
    return PlatformVerification(
        platform,
        digest,
        checked_status,
        _text_field(document, "file"),
        _text_field(document, "machine"),
        _text_field(document, "reason"),
        code,
        tuple(via),
    )


def _clipped(text: str) -> str:
    """``text`` within what a verdict read back may hold (its end marked)."""
    return text if len(text) <= _MAX_TEXT else text[: _MAX_TEXT - 1] + "\u2026"


def _text_field(document: Mapping[str, Any], key: str, *, required: bool = False) -> str:
    value = document.get(key)
    if value is None and not required:
        return ""
    if not isinstance(value, str) or len(value) > _MAX_TEXT:
        raise AnswerError(key, "expected a string")
    return value


# -- what an image manifest and config say ---------------------------------------------------


@dataclass(frozen=True)
class LayerRef:
    """One layer of an image manifest: where it is, its media type, its size, the URLs a
    foreign (non-distributable) layer names."""

    digest: str
    media_type: str
    size: int
    urls: tuple[str, ...] = ()
    #: The annotation naming a table of contents a runtime may build the layer from instead
    #: of its tar stream (eStargz, zstd:chunked), if any.
    lazy: str = ""

    @property
    def foreign(self) -> bool:
        return "foreign" in self.media_type or "nondistributable" in self.media_type


#: Layer annotations of formats a runtime may pull lazily, building the files from a table of
#: contents rather than from the tar stream (containerd's stargz snapshotter; CRI-O's partial
#: pulls of zstd:chunked and eStargz in containers/storage).
LAZY_LAYER_ANNOTATIONS = (
    "containerd.io/snapshot/stargz/toc.digest",
    "io.github.containers.zstd-chunked.manifest-checksum",
    "io.github.containers.zstd-chunked.manifest-position",
)


def parse_layers(body: bytes) -> tuple[LayerRef, ...]:
    """The layers of an image manifest, bottom first as the manifest lists them."""
    document = _json_object(body, "image manifest")
    layers = document.get("layers")
    if not isinstance(layers, list):
        raise ValueError("the image manifest has no 'layers' list")
    found = []
    for position, layer in enumerate(layers):
        if not isinstance(layer, Mapping):
            raise ValueError(f"layer {position} of the image manifest is not an object")
        try:
            digest = checked_digest(layer.get("digest"))
        except AnswerError as exc:
            raise ValueError(f"layer {position}: {exc}") from exc
        media_type, size, urls = layer.get("mediaType"), layer.get("size"), layer.get("urls")
        annotations = layer.get("annotations")
        lazy = ""
        if isinstance(annotations, Mapping):
            lazy = next((key for key in LAZY_LAYER_ANNOTATIONS if key in annotations), "")
        found.append(
            LayerRef(
                digest,
                media_type if isinstance(media_type, str) else "",
                size if isinstance(size, int) and not isinstance(size, bool) else -1,
                tuple(u for u in urls if isinstance(u, str)) if isinstance(urls, list) else (),
                lazy,
            )
        )
    return tuple(found)


Compression = Literal["gzip", "zstd", "none"]


def layer_compression(media_type: str) -> Compression | None:
    """How a layer of ``media_type`` is compressed, or None for a layer kmultiarch does not
    read (encrypted, an artifact's blob, a type it does not know)."""
    kind = media_type.strip().lower()
    if "encrypted" in kind:
        return None
    for suffixes, compression in (
        (("tar+gzip", ".tar.gzip", "tar.gz"), "gzip"),
        (("tar+zstd", ".tar.zstd"), "zstd"),
        ((".tar", "rootfs.diff.tar"), "none"),
    ):
        if kind.endswith(suffixes):
            return compression  # type: ignore[return-value]
    return None


@dataclass(frozen=True)
class StartConfig:
    """What an image config says of how its container starts."""

    entrypoint: tuple[str, ...] = ()
    cmd: tuple[str, ...] = ()
    env: tuple[str, ...] = ()
    working_dir: str = ""
    user: str = ""

    @classmethod
    def parse(cls, body: bytes) -> StartConfig:
        """The ``config`` part of an image config (a config without one starts nothing)."""
        document = _json_object(body, "image config")
        config = document.get("config") or {}
        if not isinstance(config, Mapping):
            raise ValueError("the image config's 'config' is not an object")
        return cls(
            _strings(config, "Entrypoint"),
            _strings(config, "Cmd"),
            _strings(config, "Env"),
            _string(config, "WorkingDir"),
            _string(config, "User"),
        )

    def arguments(
        self, command: Sequence[str] | None = None, args: Sequence[str] | None = None
    ) -> tuple[str, ...]:
        """The process's arguments: Entrypoint then Cmd; a Kubernetes ``command`` replaces
        the Entrypoint and drops the Cmd, ``args`` replaces the Cmd."""
        entrypoint = tuple(command) if command else self.entrypoint
        cmd = tuple(args) if args else (() if command else self.cmd)
        return entrypoint + cmd

    def path(self, windows: bool = False) -> str:
        """The PATH the runtime searches: the config's, else the runtime's default."""
        for variable in reversed(self.env):
            name, equals, value = variable.partition("=")
            if equals and (name.upper() == "PATH" if windows else name == "PATH"):
                return value
        return DEFAULT_WINDOWS_PATH if windows else DEFAULT_PATH


def _json_object(body: bytes, what: str) -> Mapping[str, Any]:
    try:
        document = json.loads(body)
    except (ValueError, RecursionError) as exc:
        raise ValueError(f"the {what} is not JSON ({exc})") from None
    if not isinstance(document, dict):
        raise ValueError(f"the {what} is not a JSON object")
    return document


def _strings(config: Mapping[str, Any], key: str) -> tuple[str, ...]:
    value = config.get(key)
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,)
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise ValueError(f"the image config's {key} is not a list of strings")
    return tuple(value)


def _string(config: Mapping[str, Any], key: str) -> str:
    value = config.get(key)
    return value if isinstance(value, str) else ""


# -- the search -----------------------------------------------------------------------------


#: What the search needs next: read layer ``layer`` (0 is the top) watching ``path`` (a
#: lookup waits for it, or its first bytes are wanted). The merged view's own answer.
NeedLayer = Pending


@dataclass(frozen=True)
class _Found:
    path: str
    layer: int
    entry: IndexedEntry
    via: tuple[str, ...]


@dataclass(frozen=True)
class _NotFound:
    reason: str


@dataclass(frozen=True)
class _Unclear:
    """The runtimes may find the program here, or not, or another file: never verified."""

    reason: str


@dataclass
class _Search:
    layers: Sequence[LayerIndex]
    start: StartConfig
    claimed: Platform
    digest: str
    windows: bool
    via: list[str] = field(default_factory=list)
    #: Called at each step of the search (a PATH directory, a program): raises when the
    #: run's deadline passed, so a long PATH cannot outlast it.
    check: Callable[[], None] | None = None

    def tick(self) -> None:
        if self.check is not None:
            self.check()

    def verdict(
        self,
        status: VerifyStatus,
        *,
        file: str = "",
        machine: str = "",
        reason: str = "",
        code: UnverifiedCode | None = None,
    ) -> PlatformVerification:
        return PlatformVerification(
            self.claimed, self.digest, status, file, machine, reason, code, tuple(self.via)
        )

    def unverified(self, code: UnverifiedCode, reason: str, file: str = "") -> PlatformVerification:
        return self.verdict("unverified", file=file, reason=reason, code=code)


def search_start_file(
    layers: Sequence[LayerIndex],
    start: StartConfig,
    claimed: Platform,
    digest: str,
    *,
    command: Sequence[str] | None = None,
    args: Sequence[str] | None = None,
    check: Callable[[], None] | None = None,
) -> NeedLayer | PlatformVerification:
    """The verdict for the platform manifest ``digest`` (claimed ``claimed``) from the
    layers read so far (top first), or the layer to read next.

    Every executable the start needs must run: a script's interpreter, ``env`` and the
    program it starts. The first of another machine makes a ``mismatch``. Only layers read
    whole (their bytes checked against their digest) answer; where the runtimes would not
    build one known file, the verdict is ``unverified`` (``ambiguous``), never ``verified``.
    ``check`` is called at each step (the run's deadline). Linear in the entries and PATH."""
    search = _Search(layers, start, claimed, digest, windows=claimed.os == "windows", check=check)
    arguments = start.arguments(command, args)
    if not arguments or not arguments[0]:
        return search.unverified(
            "no-entrypoint", "the image config has no Entrypoint or Cmd: nothing to start"
        )
    wanted: list[tuple[str, str]] = [(arguments[0], "")]  # (program, PATH for a bare name)
    depth = 0
    verified: PlatformVerification | None = None
    while wanted:
        program, path_override = wanted.pop(0)
        search.tick()
        found = _find_program(search, program, path_override)
        if not isinstance(found, _Found):
            if isinstance(found, NeedLayer):
                return found
            if isinstance(found, _Unclear):
                return search.unverified("ambiguous", found.reason)
            code: UnverifiedCode = "interpreter" if depth else "not-found"
            return search.unverified(code, found.reason)
        search.via.extend(found.via)
        outcome = _examine(search, found)
        if isinstance(outcome, (NeedLayer, PlatformVerification)):
            if isinstance(outcome, PlatformVerification) and outcome.status == "verified":
                verified = outcome
                continue
            return outcome
        depth += 1
        if depth > MAX_SCRIPT_DEPTH:
            return search.unverified(
                "interpreter", f"scripts nest deeper than {MAX_SCRIPT_DEPTH} interpreters"
            )
        search.via.append(found.path)
        wanted = _interpreter_programs(search, outcome, found.path) + wanted
    assert verified is not None
    return verified


def _examine(search: _Search, found: _Found) -> NeedLayer | PlatformVerification | Script:
    """The verdict on one file found, or the script it is (to follow), or the layer to read
    for its first bytes."""
    layer = search.layers[found.layer]
    entry = found.entry
    if entry.data < 0:
        return search.unverified("ambiguous", f"{found.path} is a hard link to another layer")
    if not entry.readable:
        return search.unverified(
            "not-executable", f"{found.path} is stored as a sparse file", found.path
        )
    head = layer.heads.get(entry.data)
    if head is None:
        return NeedLayer(found.layer, path_key(entry.path, search.windows), entry.data)
    identified = identify(head)
    if (
        isinstance(identified, Machine)
        and identified.platform is not None
        and identified.platform.architecture == "arm"
        and not identified.platform.variant
        and entry.data not in layer.deep
    ):
        # Read in passing, with a small section table: its ARM architecture version may be
        # past it. Read the file again, to its end, before its variant is taken as unknown.
        return NeedLayer(found.layer, path_key(entry.path, search.windows), entry.data)
    if isinstance(identified, Script):
        if search.windows:
            return search.unverified(
                "not-executable", f"{found.path} is a script, which Windows does not start"
            )
        return identified
    if isinstance(identified, NotExecutable):
        reason = identified.reason
        if search.windows and found.path.lower().endswith((".bat", ".cmd")):
            reason = "a batch file, run by cmd.exe"
        return search.unverified("not-executable", f"{found.path}: {reason}", found.path)
    return _compare(search, found.path, identified)


def _compare(search: _Search, path: str, machine: Machine) -> PlatformVerification:
    if runs_as_claimed(machine, search.claimed):
        return search.verdict("verified", file=path, machine=machine.name)
    built = f" ({machine.platform})" if machine.platform is not None else ""
    return search.verdict(
        "mismatch",
        file=path,
        machine=machine.name,
        reason=f"{path} is built for {machine.name}{built}; the manifest claims {search.claimed}",
    )


def _interpreter_programs(
    search: _Search, script: Script, script_path: str
) -> list[tuple[str, str]]:
    """What a script starts: its interpreter, and for ``env`` the program env runs."""
    interpreter = script.interpreter
    if not interpreter.startswith("/"):
        interpreter = _join(search.start.working_dir or "/", interpreter)
    programs = [(interpreter, "")]
    if interpreter.rpartition("/")[2] == "env" and script.argument:
        program, path = _env_program(script.argument, search.start.path())
        if program:
            programs.append((program, path))
    return programs


#: env options followed by a value as the next word.
_ENV_VALUED = frozenset({"-u", "--unset", "-C", "--chdir", "-P"})


def _env_program(argument: str, path: str) -> tuple[str, str]:
    """The program ``env`` runs given the ``#!`` line's one argument (split into words only
    after ``-S``, as env does), and the PATH it searches."""
    words = argument.split() if argument.startswith("-S") else [argument]
    if words and words[0].startswith("-S"):
        first = words.pop(0)[2:]
        if first:
            words.insert(0, first)
    skip_value = False
    for word in words:
        if skip_value:
            skip_value = False
            continue
        if word in ("-i", "--ignore-environment", "-"):
            path = _ENV_EMPTY_PATH
            continue
        if word in _ENV_VALUED:
            skip_value = True
            continue
        if word.startswith("-") or ("=" in word and not word.startswith("/")):
            continue
        return word, path
    return "", path


def _find_program(
    search: _Search, program: str, path_override: str
) -> _Found | NeedLayer | _NotFound | _Unclear:
    """The file ``program`` names, as runc (or env) finds it."""
    windows = search.windows
    working_dir = search.start.working_dir or "/"
    if windows:
        return _find_windows_program(search, program)
    if "/" in program:
        return _resolve_file(search, _join(working_dir, program), require_exec=False)
    path = path_override or search.start.path()
    for directory in path.split(":"):
        search.tick()
        candidate = _join(_join(working_dir, directory or "."), program)
        found = _resolve_file(search, candidate, require_exec=True)
        if not isinstance(found, _NotFound):
            return found
    return _NotFound(f"{program} is not found in PATH {path}")


def _find_windows_program(
    search: _Search, program: str
) -> _Found | NeedLayer | _NotFound | _Unclear:
    text = program.replace("/", "\\")
    if len(text) >= 2 and text[1] == ":" and text[0].upper() != "C":
        return _NotFound(f"{program} is on drive {text[0]}:, not in the image")
    names = [text] if "." in text.rpartition("\\")[2] else [text + ".exe", text]
    working_dir = windows_path(search.start.working_dir or "C:\\")
    if "\\" in text or ":" in text:
        directories = [""]
    else:
        path = search.start.path(windows=True)
        directories = [working_dir, *(windows_path(d) for d in path.split(";") if d)]
    for directory in directories:
        search.tick()
        for name in names:
            candidate = _join(directory or working_dir, windows_path(name))
            found = _resolve_file(search, candidate, require_exec=False)
            if not isinstance(found, _NotFound):
                return found
    return _NotFound(f"{program} is not found in the image")


def _resolve_file(
    search: _Search, path: str, *, require_exec: bool
) -> _Found | NeedLayer | _NotFound | _Unclear:
    resolved = resolve(search.layers, path, windows=search.windows, check=search.check)
    if isinstance(resolved, Pending):
        return resolved
    if isinstance(resolved, Ambiguous):
        return _Unclear(f"{path}: {resolved.reason}")
    if isinstance(resolved, Unresolvable):
        return _NotFound(resolved.reason)
    return _as_file(search.layers, resolved, path, require_exec)


def _as_file(
    layers: Sequence[LayerIndex], resolved: Resolved, path: str, require_exec: bool
) -> _Found | _NotFound:
    entry = resolved.located.entry
    if entry is None or entry.kind not in ("file", "hardlink"):
        kind = "a directory" if resolved.located.is_dir else f"a {entry.kind if entry else ''}"
        return _NotFound(f"{path} is {kind}, not a file")
    if require_exec and not layers[resolved.located.layer].mode_of(entry) & 0o111:
        return _NotFound(f"{path} is not executable")
    via = resolved.links if resolved.links else ()
    return _Found(resolved.path, resolved.located.layer, entry, via)


def _join(directory: str, path: str) -> str:
    if path.startswith("/"):
        return path
    return f"{directory.rstrip('/')}/{path}"
