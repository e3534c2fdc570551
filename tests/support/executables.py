"""Executables and layers for the verification tests (issue 24).

Real programs: BusyBox from Debian's ``busybox-static`` package for amd64, arm64 and armhf,
fetched once by ``scripts/fetch-test-binaries`` (which ``scripts/install-tools`` runs) into
``.tools/binaries/<arch>/busybox``; a test asking for one runs the script when it is missing,
and is skipped (failed in CI) when it cannot be had. Hand-made headers for the machines no
package is fetched for: :func:`elf`, :func:`arm_elf` (with ``.ARM.attributes``), :func:`pe`.

Layers are tar archives built here entry by entry (files, directories, symbolic and hard
links, whiteouts, opaque markers), compressed with gzip, zstd or not at all; :func:`image`
puts them under an image config with an Entrypoint, Cmd, Env and WorkingDir, as a
``support.seed.Manifest`` the ``Seeder`` pushes.
"""

from __future__ import annotations

import functools
import gzip
import io
import json
import struct
import subprocess
import tarfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from .seed import (
    DOCKER_CONFIG,
    DOCKER_MANIFEST,
    OCI_CONFIG,
    OCI_MANIFEST,
    Blob,
    IndexEntry,
    Manifest,
    PlatformSpec,
    image_manifest,
    index,
    sha256_digest,
)
from .tools import REPO, missing

BINARIES = REPO / ".tools" / "binaries"
FETCH_SCRIPT = REPO / "scripts" / "fetch-test-binaries"

OCI_TAR = "application/vnd.oci.image.layer.v1.tar"
OCI_GZIP = "application/vnd.oci.image.layer.v1.tar+gzip"
OCI_ZSTD = "application/vnd.oci.image.layer.v1.tar+zstd"
DOCKER_GZIP = "application/vnd.docker.image.rootfs.diff.tar.gzip"
DOCKER_FOREIGN = "application/vnd.docker.image.rootfs.foreign.diff.tar.gzip"

EM_386, EM_ARM, EM_X86_64, EM_AARCH64 = 3, 40, 62, 183
EM_PPC64, EM_S390, EM_RISCV = 21, 22, 243
PE_AMD64, PE_ARM64, PE_I386 = 0x8664, 0xAA64, 0x014C


@functools.cache
def busybox(arch: str) -> bytes:
    """Debian's static BusyBox for ``arch`` (amd64, arm64, armhf): a real executable."""
    path = BINARIES / arch / "busybox"
    if not path.is_file():
        _fetch()
    if not path.is_file():
        missing(f"{path} is missing and scripts/fetch-test-binaries could not fetch it")
    return path.read_bytes()


@functools.cache
def _fetch() -> None:
    subprocess.run([str(FETCH_SCRIPT)], check=False, capture_output=True, timeout=600)


# -- hand-made headers ----------------------------------------------------------------------


def elf(
    machine: int,
    *,
    bits: int = 64,
    little: bool = True,
    kind: int = 2,
    flags: int = 0,
    size: int = 4096,
) -> bytes:
    """An ELF file of ``size`` bytes whose header names ``machine`` (no sections)."""
    order = "<" if little else ">"
    ident = b"\x7fELF" + bytes([2 if bits == 64 else 1, 1 if little else 2, 1, 0]) + bytes(8)
    if bits == 64:
        rest = struct.pack(f"{order}HHIQQQIHHHHHH", kind, machine, 1, 0, 64, 0, flags,
                           64, 56, 0, 64, 0, 0)  # fmt: skip
    else:
        rest = struct.pack(f"{order}HHIIIIIHHHHHH", kind, machine, 1, 0, 52, 0, flags,
                           52, 32, 0, 40, 0, 0)  # fmt: skip
    header = ident + rest
    return header + bytes(max(0, size - len(header)))


def arm_attributes(cpu_arch: int) -> bytes:
    """An ``.ARM.attributes`` section: 'A', then an ``aeabi`` subsection whose file-scope
    attributes say ``Tag_CPU_name`` "7-A" and ``Tag_CPU_arch`` ``cpu_arch``."""
    attributes = b"\x05" + b"7-A\0" + b"\x06" + bytes([cpu_arch]) + b"\x08\x01"
    file_scope = b"\x01" + struct.pack("<I", 5 + len(attributes)) + attributes
    vendor = b"aeabi\0" + file_scope
    return b"A" + struct.pack("<I", 4 + len(vendor)) + vendor


def arm_elf(
    cpu_arch: int | None = 10,
    *,
    padding: int = 100_000,
    eabi: int = 5,
    table_first: bool = False,
) -> bytes:
    """A 32-bit ARM ELF file as linkers lay them out: the header, ``padding`` bytes of
    'code', the attribute section (when ``cpu_arch`` is given), the section name table,
    then the section header table at the end (``table_first``: right after the header,
    before everything else, as some tools write it)."""
    header_size = 52
    count = 3 if cpu_arch is not None else 2
    shoff = header_size if table_first else 0
    body = bytearray(bytes(header_size) + bytes(count * 40 if table_first else 0))
    body += bytes(padding)
    sections = [struct.pack("<10I", *([0] * 10))]  # the null section
    names = b"\0.ARM.attributes\0.shstrtab\0"
    if cpu_arch is not None:
        attributes = arm_attributes(cpu_arch)
        offset = len(body)
        body += attributes
        sections.append(struct.pack("<10I", 1, 0x70000003, 0, 0, offset, len(attributes),
                                    0, 0, 1, 0))  # fmt: skip
    names_offset = len(body)
    body += names
    sections.append(struct.pack("<10I", 17, 3, 0, 0, names_offset, len(names), 0, 0, 1, 0))
    table = b"".join(sections)
    if table_first:
        body[shoff : shoff + len(table)] = table
    else:
        shoff = len(body)
        body += table
    ident = b"\x7fELF\x01\x01\x01\x00" + bytes(8)
    rest = struct.pack("<HHIIIIIHHHHHH", 2, EM_ARM, 1, 0x10000, 0, shoff, eabi << 24,
                       header_size, 32, 0, 40, len(sections), len(sections) - 1)  # fmt: skip
    body[:header_size] = ident + rest
    return bytes(body)


def pe(machine: int, *, lfanew: int = 0x80, size: int = 2048) -> bytes:
    """A PE file: the MS-DOS header pointing at ``PE\\0\\0`` and a COFF header naming
    ``machine``."""
    data = bytearray(size)
    data[0:2] = b"MZ"
    struct.pack_into("<I", data, 0x3C, lfanew)
    data[lfanew : lfanew + 4] = b"PE\0\0"
    struct.pack_into("<H", data, lfanew + 4, machine)
    return bytes(data)


def script(line: str, body: str = "exec true\n") -> bytes:
    return f"{line}\n{body}".encode()


# -- layers ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class File:
    path: str
    data: bytes
    mode: int = 0o755


@dataclass(frozen=True)
class Dir:
    path: str
    mode: int = 0o755


@dataclass(frozen=True)
class Symlink:
    path: str
    target: str


@dataclass(frozen=True)
class Hardlink:
    path: str
    target: str


def whiteout(path: str) -> File:
    """The entry that deletes ``path`` from the layers below."""
    directory, _, name = path.strip("/").rpartition("/")
    return File(f"{directory}/.wh.{name}".lstrip("/"), b"", 0o644)


def opaque(directory: str) -> File:
    """The marker that hides what the layers below hold in ``directory``."""
    return File(f"{directory.strip('/')}/.wh..wh..opq", b"", 0o644)


Entry = File | Dir | Symlink | Hardlink


def tar_bytes(entries: Iterable[Entry], *, parents: bool = True, prefix: str = "") -> bytes:
    """A tar archive of ``entries`` in order (with their parent directories first, unless
    ``parents`` is False); every name under ``prefix`` (``Files/`` for Windows)."""
    buffer = io.BytesIO()
    written: set[str] = set()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as archive:
        for entry in entries:
            path = prefix + entry.path.strip("/")
            if parents:
                parts = path.split("/")[:-1]
                for depth in range(1, len(parts) + 1):
                    directory = "/".join(parts[:depth])
                    if directory not in written:
                        written.add(directory)
                        archive.addfile(_info(directory, tarfile.DIRTYPE, 0o755))
            written.add(path)
            if isinstance(entry, File):
                info = _info(path, tarfile.REGTYPE, entry.mode)
                info.size = len(entry.data)
                archive.addfile(info, io.BytesIO(entry.data))
            elif isinstance(entry, Dir):
                archive.addfile(_info(path, tarfile.DIRTYPE, entry.mode))
            else:
                kind = tarfile.SYMTYPE if isinstance(entry, Symlink) else tarfile.LNKTYPE
                info = _info(path, kind, 0o777)
                info.linkname = (
                    entry.target if isinstance(entry, Symlink) else prefix + entry.target
                )
                archive.addfile(info)
    return buffer.getvalue()


def _info(name: str, kind: bytes, mode: int) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type, info.mode, info.mtime = kind, mode, 0
    return info


@dataclass(frozen=True)
class Layer:
    """A layer blob and its diff id (the digest of the uncompressed tar)."""

    blob: Blob
    diff_id: str


def layer(
    *entries: Entry,
    compression: str = "gzip",
    media_type: str | None = None,
    parents: bool = True,
    windows: bool = False,
) -> Layer:
    tar = tar_bytes(entries, parents=parents, prefix="Files/" if windows else "")
    return compressed_layer(tar, compression=compression, media_type=media_type)


def compressed_layer(
    tar: bytes, *, compression: str = "gzip", media_type: str | None = None
) -> Layer:
    if compression == "gzip":
        data, default = gzip.compress(tar, mtime=0), OCI_GZIP
    elif compression == "zstd":
        import zstandard

        data, default = zstandard.ZstdCompressor().compress(tar), OCI_ZSTD
    else:
        data, default = tar, OCI_TAR
    return Layer(Blob(media_type or default, data), sha256_digest(tar))


def image(
    platform: PlatformSpec,
    layers: Sequence[Layer],
    *,
    entrypoint: Sequence[str] | None = None,
    cmd: Sequence[str] | None = None,
    env: Sequence[str] | None = None,
    workdir: str | None = None,
    label: str = "",
    docker: bool = False,
) -> Manifest:
    """An image manifest over ``layers`` (bottom first) with a config saying how it starts."""
    config: dict[str, object] = {"Labels": {"org.kmultiarch.test.image": label}}
    for key, value in (("Entrypoint", entrypoint), ("Cmd", cmd), ("Env", env)):
        if value is not None:
            config[key] = list(value)
    if workdir is not None:
        config["WorkingDir"] = workdir
    document: dict[str, object] = platform.as_json()
    document["config"] = config
    document["rootfs"] = {"type": "layers", "diff_ids": [item.diff_id for item in layers]}
    blob = Blob(DOCKER_CONFIG if docker else OCI_CONFIG, json.dumps(document).encode())
    return image_manifest(
        blob,
        [item.blob for item in layers],
        media_type=DOCKER_MANIFEST if docker else OCI_MANIFEST,
    )


#: The Debian architecture of each platform architecture's BusyBox.
BUSYBOX_ARCH = {"amd64": "amd64", "arm64": "arm64", "arm": "armhf"}
AMD64 = PlatformSpec("linux", "amd64")
ARM64 = PlatformSpec("linux", "arm64")
ARM_V7 = PlatformSpec("linux", "arm", "v7")


def busybox_layer(arch: str, *extra: Entry, **options: str) -> Layer:
    """A base layer: BusyBox at /bin/busybox, /bin/sh and /usr/bin/env linked to it."""
    return layer(
        File("bin/busybox", busybox(arch)),
        Symlink("bin/sh", "busybox"),
        Symlink("usr/bin/env", "/bin/busybox"),
        *extra,
        **options,  # type: ignore[arg-type]  # compression, media_type
    )


def honest_image(*platforms: PlatformSpec) -> Manifest:
    """An index whose every platform starts (through ``sh -c``) the BusyBox built for it."""
    return index(
        [
            IndexEntry(
                image(
                    platform,
                    [busybox_layer(BUSYBOX_ARCH[platform.architecture])],
                    entrypoint=["sh", "-c", "exec busybox true"],
                    label="honest",
                ),
                platform,
            )
            for platform in platforms or (AMD64, ARM64, ARM_V7)
        ]
    )


def lying_image() -> Manifest:
    """linux/amd64 and linux/arm64, both starting the amd64 BusyBox: the arm64 manifest lies
    (a cross-build that copied the host's binary)."""
    amd64 = busybox_layer("amd64")
    return index(
        [
            IndexEntry(image(spec, [amd64], entrypoint=["/bin/busybox"], label="liar"), spec)
            for spec in (AMD64, ARM64)
        ]
    )


__all__ = [
    "AMD64",
    "ARM64",
    "ARM_V7",
    "BINARIES",
    "BUSYBOX_ARCH",
    "DOCKER_FOREIGN",
    "DOCKER_GZIP",
    "OCI_GZIP",
    "OCI_TAR",
    "OCI_ZSTD",
    "Dir",
    "File",
    "Hardlink",
    "Layer",
    "Symlink",
    "arm_attributes",
    "arm_elf",
    "busybox",
    "busybox_layer",
    "compressed_layer",
    "elf",
    "honest_image",
    "image",
    "layer",
    "lying_image",
    "opaque",
    "pe",
    "script",
    "tar_bytes",
    "whiteout",
]
