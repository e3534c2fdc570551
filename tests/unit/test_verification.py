"""kmultiarch.core.verification.verdicts: the start command, the search for the file a container
starts over hand-made layers (PATH as runc looks it up, WorkingDir, scripts, env, Windows),
the verdicts, and their JSON form as the cache keeps it."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st
from support.executables import EM_AARCH64, EM_X86_64, PE_AMD64, elf, pe

from kmultiarch.core.images.answers import AnswerError
from kmultiarch.core.images.platform import Platform
from kmultiarch.core.verification.binaries import FileHead
from kmultiarch.core.verification.layers import LayerIndex, TarHeader
from kmultiarch.core.verification.verdicts import (
    DEFAULT_PATH,
    NeedLayer,
    PlatformVerification,
    StartConfig,
    layer_compression,
    parse_layers,
    search_start_file,
    verification_from_json,
    verification_json,
)

DIGEST = "sha256:" + "a" * 64
ARM64 = Platform.parse("linux/arm64")
X86 = elf(EM_X86_64, size=64)
ARM = elf(EM_AARCH64, size=64)


def layer(*files: tuple[str, bytes | str, int], windows: bool = False) -> LayerIndex:
    """A layer read whole: (path, content, mode) files (first bytes kept), and
    (path, "->target", 0) symbolic links."""
    index = LayerIndex(f"sha256:{len(files):064x}", windows=windows)
    for path, content, mode in files:
        if isinstance(content, str):
            index.add(TarHeader(path, "symlink", 0o777, 0, content.removeprefix("->")))
            continue
        entry = index.add(TarHeader(path, "file", mode, len(content)))
        assert entry is not None
        index.heads[entry.data] = FileHead(content[:1024], len(content))
    index.complete = True
    return index


def search(
    layers: list[LayerIndex], platform: Platform = ARM64, **config: object
) -> NeedLayer | PlatformVerification:
    return search_start_file(layers, StartConfig(**config), platform, DIGEST)  # type: ignore[arg-type]


def verdict(layers: list[LayerIndex], **config: object) -> tuple[str, str, str | None]:
    found = search(layers, **config)
    assert isinstance(found, PlatformVerification), found
    return found.status, found.file, found.code


BASE = layer(
    ("bin/busybox", ARM, 0o755),
    ("bin/sh", "->busybox", 0),
    ("usr/bin/env", "->/bin/busybox", 0),
    ("usr/local/bin/app", X86, 0o755),
    ("usr/bin/app", ARM, 0o755),
    ("usr/bin/data", ARM, 0o644),
    ("opt/app/run", ARM, 0o755),
    ("srv/entry.sh", b"#!/bin/sh\n", 0o755),
    ("srv/env.sh", b"#!/usr/bin/env sh\n", 0o755),
    ("srv/split.sh", b"#!/usr/bin/env -S -i sh -e\n", 0o755),
    ("srv/unsplit.sh", b"#!/usr/bin/env sh -e\n", 0o755),
    ("srv/missing.sh", b"#!/usr/bin/python3\n", 0o755),
    ("srv/x86.sh", b"#!/usr/local/bin/app\n", 0o755),
    ("srv/loop.sh", b"#!/srv/loop.sh\n", 0o755),
    ("srv/text", b"hello\n", 0o755),
)


@pytest.mark.parametrize(
    ("config", "expected"),
    [
        ({}, ("unverified", "", "no-entrypoint")),
        ({"cmd": ("",)}, ("unverified", "", "no-entrypoint")),
        ({"entrypoint": ("/bin/busybox",)}, ("verified", "/bin/busybox", None)),
        ({"cmd": ("/bin/sh", "-c", "true")}, ("verified", "/bin/busybox", None)),
        # PATH: the first directory holding an executable file wins (the default PATH
        # has /usr/local/bin before /usr/bin).
        ({"entrypoint": ("app",)}, ("mismatch", "/usr/local/bin/app", None)),
        (
            {"entrypoint": ("app",), "env": ("PATH=/usr/bin:/usr/local/bin",)},
            ("verified", "/usr/bin/app", None),
        ),
        ({"entrypoint": ("data",), "env": ("PATH=/usr/bin",)}, ("unverified", "", "not-found")),
        (
            {"entrypoint": ("run",), "env": ("PATH=:/bin",), "working_dir": "/opt/app"},
            ("verified", "/opt/app/run", None),
        ),
        ({"entrypoint": ("./run",), "working_dir": "/opt/app"}, ("verified", "/opt/app/run", None)),
        ({"entrypoint": ("nothing",)}, ("unverified", "", "not-found")),
        ({"entrypoint": ("/usr/bin",)}, ("unverified", "", "not-found")),
        # Scripts: the interpreter must run, and env's program too.
        ({"entrypoint": ("/srv/entry.sh",)}, ("verified", "/bin/busybox", None)),
        ({"entrypoint": ("/srv/env.sh",)}, ("verified", "/bin/busybox", None)),
        ({"entrypoint": ("/srv/split.sh",)}, ("verified", "/bin/busybox", None)),
        ({"entrypoint": ("/srv/unsplit.sh",)}, ("unverified", "", "interpreter")),
        ({"entrypoint": ("/srv/missing.sh",)}, ("unverified", "", "interpreter")),
        ({"entrypoint": ("/srv/x86.sh",)}, ("mismatch", "/usr/local/bin/app", None)),
        ({"entrypoint": ("/srv/loop.sh",)}, ("unverified", "", "interpreter")),
        ({"entrypoint": ("/srv/text",)}, ("unverified", "/srv/text", "not-executable")),
    ],
)
def test_the_start_file_and_its_verdict(
    config: dict[str, object], expected: tuple[str, str, str | None]
) -> None:
    assert verdict([BASE], **config) == expected


def test_the_default_path_is_the_runtimes() -> None:
    assert StartConfig().path() == DEFAULT_PATH
    assert StartConfig(env=("PATH=/x", "PATH=/y")).path() == "/y"
    assert StartConfig(env=("Path=C:\\x",)).path(windows=True) == "C:\\x"


@pytest.mark.parametrize(
    ("command", "args", "expected"),
    [
        (None, None, ("/entry", "serve", "--port=80")),
        (["/bin/sh"], None, ("/bin/sh",)),  # a command drops the image's Cmd
        (None, ["debug"], ("/entry", "debug")),
        (["/bin/sh"], ["-c", "x"], ("/bin/sh", "-c", "x")),
    ],
)
def test_kubernetes_command_and_args(
    command: list[str] | None, args: list[str] | None, expected: tuple[str, ...]
) -> None:
    config = StartConfig(entrypoint=("/entry",), cmd=("serve", "--port=80"))
    assert config.arguments(command, args) == expected


def test_the_search_names_the_layer_to_read_and_the_path_to_watch() -> None:
    unread = LayerIndex("sha256:" + "b" * 64)
    assert search([unread, BASE], entrypoint=("/bin/busybox",)) == NeedLayer(0, "bin")
    partial = LayerIndex("sha256:" + "c" * 64)
    partial.add(TarHeader("app", "dir", 0o755, 0))
    partial.add(TarHeader("app/server", "file", 0o755, 100))
    # A layer not read whole answers nothing: a later entry may replace what it showed.
    assert search([partial, BASE], entrypoint=("/app/server",)) == NeedLayer(0, "app")
    partial.complete = True
    # Read whole, the file's first bytes not kept: read it again, watching that file.
    assert search([partial, BASE], entrypoint=("/app/server",)) == NeedLayer(0, "app/server", 1)


def test_the_via_of_a_script_and_its_links() -> None:
    found = search([BASE], entrypoint=("/srv/env.sh",))
    assert isinstance(found, PlatformVerification)
    assert found.via == ("/srv/env.sh", "/usr/bin/env", "/bin/sh")


WINDOWS = layer(
    ("Files/App/Server.EXE", pe(PE_AMD64), 0o644),
    ("Files/Windows/System32/cmd.exe", pe(PE_AMD64), 0o644),
    ("Files/App/run.cmd", b"@echo off\r\n", 0o644),
    windows=True,
)
WIN_AMD64 = Platform.parse("windows/amd64:10.0.17763")


@pytest.mark.parametrize(
    ("config", "expected"),
    [
        ({"entrypoint": ("C:\\App\\Server.exe",)}, ("verified", "/App/Server.EXE", None)),
        ({"entrypoint": ("c:/app/server.EXE",)}, ("verified", "/App/Server.EXE", None)),
        (
            {"entrypoint": ("server",), "working_dir": "C:\\app"},
            ("verified", "/App/Server.EXE", None),
        ),
        (
            {"entrypoint": ("cmd", "/S", "/C", "x")},
            ("verified", "/Windows/System32/cmd.exe", None),
        ),
        ({"entrypoint": ("D:\\app.exe",)}, ("unverified", "", "not-found")),
        ({"entrypoint": ("C:\\App\\run.cmd",)}, ("unverified", "/App/run.cmd", "not-executable")),
    ],
)
def test_windows_start_files(
    config: dict[str, object], expected: tuple[str, str, str | None]
) -> None:
    found = search([WINDOWS], WIN_AMD64, **config)
    assert isinstance(found, PlatformVerification), found
    assert (found.status, found.file, found.code) == expected


def test_a_pe_in_a_linux_image_and_an_elf_in_a_windows_one_are_mismatches() -> None:
    linux = layer(("app", pe(PE_AMD64), 0o755))
    assert verdict([linux], entrypoint=("/app",))[0] == "mismatch"
    windows = layer(("Files/app.exe", X86, 0o644), windows=True)
    found = search([windows], WIN_AMD64, entrypoint=("C:\\app.exe",))
    assert isinstance(found, PlatformVerification) and found.status == "mismatch"


@pytest.mark.parametrize(
    ("media_type", "compression"),
    [
        ("application/vnd.oci.image.layer.v1.tar", "none"),
        ("application/vnd.oci.image.layer.v1.tar+gzip", "gzip"),
        ("application/vnd.oci.image.layer.v1.tar+zstd", "zstd"),
        ("application/vnd.docker.image.rootfs.diff.tar.gzip", "gzip"),
        ("application/vnd.docker.image.rootfs.foreign.diff.tar.gzip", "gzip"),
        ("application/vnd.oci.image.layer.nondistributable.v1.tar+gzip", "gzip"),
        ("application/vnd.oci.image.layer.v1.tar+gzip+encrypted", None),
        ("application/vnd.in-toto+json", None),
        ("", None),
    ],
)
def test_layer_media_types(media_type: str, compression: str | None) -> None:
    assert layer_compression(media_type) == compression


def test_parse_layers_and_refusals() -> None:
    document = {
        "layers": [
            {"mediaType": "application/vnd.oci.image.layer.v1.tar", "digest": DIGEST, "size": 3},
            {"digest": "sha256:" + "b" * 64, "urls": ["https://x/y", 3]},
        ]
    }
    first, second = parse_layers(json.dumps(document).encode())
    assert (first.digest, first.size, second.size, second.urls) == (DIGEST, 3, -1, ("https://x/y",))
    for bad in (b"[]", b"{}", b'{"layers": [{"digest": "sha256:zz"}]}', b"{", b'{"layers":[1]}'):
        with pytest.raises(ValueError):
            parse_layers(bad)
    with pytest.raises(ValueError, match="Entrypoint"):
        StartConfig.parse(b'{"config": {"Entrypoint": [1]}}')
    assert StartConfig.parse(b'{"config": null}') == StartConfig()


_TEXT = st.text(max_size=40)


@given(
    status=st.sampled_from(["verified", "mismatch", "unverified"]),
    platform=st.sampled_from(["linux/amd64", "linux/arm/v6", "windows/amd64:10.0.1"]),
    file=_TEXT,
    machine=_TEXT,
    reason=_TEXT,
    code=st.sampled_from([None, "budget", "not-found", "interpreter"]),
    via=st.lists(_TEXT, max_size=5),
)
def test_verdicts_round_trip_through_json(
    status: str, platform: str, file: str, machine: str, reason: str, code: str | None,
    via: list[str],
) -> None:  # fmt: skip
    result = PlatformVerification(
        Platform.parse(platform),
        DIGEST,
        status,
        file,
        machine,
        reason,
        code,
        tuple(via),  # type: ignore[arg-type]
    )
    document = json.loads(json.dumps(verification_json(result)))
    assert verification_from_json(document) == result


@pytest.mark.parametrize(
    "change",
    [
        {"status": "fine"},
        {"digest": "sha256:zz"},
        {"platform": "unknown-os"},
        {"code": "because"},
        {"via": "not a list"},
        {"file": 3},
        {"reason": "x" * 5000},
    ],
)
def test_planted_verdicts_are_refused(change: dict[str, object]) -> None:
    good = verification_json(PlatformVerification(ARM64, DIGEST, "verified", "/x", "aarch64"))
    with pytest.raises(AnswerError):
        verification_from_json({**good, **change})


def test_only_the_images_own_verdicts_are_kept_for_good() -> None:
    def cacheable(status: str, code: str | None) -> bool:
        return PlatformVerification(ARM64, DIGEST, status, code=code).cacheable  # type: ignore[arg-type]

    assert cacheable("verified", None) and cacheable("mismatch", None)
    assert cacheable("unverified", "no-entrypoint") and cacheable("unverified", "not-found")
    for code in ("budget", "expanded", "deadline", "registry", "damaged", "foreign-layer"):
        assert not cacheable("unverified", code)
