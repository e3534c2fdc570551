"""kmultiarch.core.verification.binaries: machines from ELF and PE headers, ARM attributes, ``#!``
lines, and whether a machine runs where a manifest says (tables of hand-made headers; the real
BusyBox programs where they are at hand)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.executables import (
    BINARIES,
    EM_386,
    EM_AARCH64,
    EM_PPC64,
    EM_RISCV,
    EM_S390,
    EM_X86_64,
    PE_AMD64,
    PE_ARM64,
    PE_I386,
    arm_elf,
    elf,
    pe,
)

from kmultiarch.core.images.platform import Platform
from kmultiarch.core.verification.binaries import (
    ExecutableProbe,
    FileHead,
    Machine,
    NotExecutable,
    Script,
    identify,
    parse_shebang,
    runs_as_claimed,
)

EM_MIPS, EM_LOONGARCH = 8, 258


def probed(data: bytes, chunk: int = 4096, *, deep: bool = True) -> FileHead:
    probe = ExecutableProbe(len(data), deep=deep)
    for start in range(0, len(data), chunk):
        probe.feed(data[start : start + chunk])
        if probe.satisfied:
            break
    return probe.result()


def machine_of(data: bytes) -> Machine:
    found = identify(probed(data))
    assert isinstance(found, Machine), found
    return found


@pytest.mark.parametrize(
    ("data", "name", "platform"),
    [
        (elf(EM_X86_64), "x86-64", "linux/amd64"),
        (elf(EM_AARCH64), "aarch64", "linux/arm64"),
        (elf(EM_386, bits=32), "i386", "linux/386"),
        (elf(EM_PPC64), "ppc64le", "linux/ppc64le"),
        (elf(EM_PPC64, little=False), "ppc64", "linux/ppc64"),
        (elf(EM_S390, little=False), "s390x", "linux/s390x"),
        (elf(EM_RISCV), "riscv64", "linux/riscv64"),
        (elf(EM_MIPS), "mips64le", "linux/mips64le"),
        (elf(EM_LOONGARCH), "loongarch64", "linux/loong64"),
        (elf(EM_X86_64, kind=3), "x86-64", "linux/amd64"),  # a PIE (ET_DYN)
        (elf(EM_X86_64, bits=32), "x32", None),
        (elf(EM_AARCH64, little=False), "aarch64_be", None),
        (elf(EM_S390, bits=32, little=False), "s390", None),
        (elf(EM_RISCV, bits=32), "riscv32", None),
        (elf(0x1234), "ELF machine 0x1234 (64-bit, little endian)", None),
        (pe(PE_AMD64), "PE AMD64", "windows/amd64"),
        (pe(PE_ARM64), "PE ARM64", "windows/arm64"),
        (pe(PE_I386, lfanew=0x200), "PE i386", "windows/386"),
        (pe(0x5064), "PE machine 0x5064", None),
        (arm_elf(10), "arm (EABI5, v7)", "linux/arm/v7"),
        (arm_elf(6), "arm (EABI5, v6)", "linux/arm/v6"),
        (arm_elf(4), "arm (EABI5, v5)", "linux/arm/v5"),
        (arm_elf(14), "arm (EABI5, v8)", "linux/arm/v8"),
        (arm_elf(10, table_first=True), "arm (EABI5, v7)", "linux/arm/v7"),
        (arm_elf(None), "arm (EABI5)", "linux/arm"),
        (arm_elf(10, eabi=0), "arm (OABI, v7)", None),
    ],
)
def test_machines(data: bytes, name: str, platform: str | None) -> None:
    machine = machine_of(data)
    assert machine.name == name
    assert (str(machine.platform) if machine.platform else None) == platform


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (b"", "an empty file"),
        (elf(EM_X86_64, kind=1), "not a program (a relocatable object)"),
        (elf(EM_X86_64, kind=4), "not a program (a core dump)"),
        (b"\x7fELF\x02\x01" + bytes(10), "truncated or malformed ELF header"),
        (b"MZ" + bytes(100), "an MS-DOS executable without a PE header"),
        (b"\xcf\xfa\xed\xfe" + bytes(100), "Mach-O"),
        (b"PK\x03\x04 a zip", "neither ELF, PE nor a #! script"),
        (b"#!/" + b"x" * 300 + b"\n", "longer than the 256 bytes"),
        (b"#!   \n", "names no interpreter"),
    ],
)
def test_not_executables(data: bytes, reason: str) -> None:
    found = identify(probed(data))
    assert isinstance(found, NotExecutable)
    assert reason in found.reason


@pytest.mark.parametrize(
    ("line", "interpreter", "argument"),
    [
        (b"#!/bin/sh\necho", "/bin/sh", ""),
        (b"#! /bin/sh -e\n", "/bin/sh", "-e"),
        (b"#!/usr/bin/env python3 -u\n", "/usr/bin/env", "python3 -u"),
        (b"#!\t/bin/bash\t-x  \r\n", "/bin/bash", "-x"),
        (b"#!/usr/bin/env -S node --harmony\n", "/usr/bin/env", "-S node --harmony"),
        (b"#!/bin/sh", "/bin/sh", ""),  # a whole file without newline
        (b"#!relative/interp arg\n", "relative/interp", "arg"),
    ],
)
def test_shebang_lines(line: bytes, interpreter: str, argument: str) -> None:
    assert identify(FileHead(line, len(line))) == Script(interpreter, argument)


def test_a_long_shebang_line_runs_when_the_interpreter_name_ends_within_256_bytes() -> None:
    """Linux 5.1+: without a newline in the first 256 bytes, the script runs when the
    interpreter's name ends there (its argument may be cut), and not otherwise."""
    cut = parse_shebang(b"#!/bin/sh " + b"a" * 300, whole=False)
    assert cut == Script("/bin/sh", "a" * (256 - len("#!/bin/sh ")))
    assert isinstance(parse_shebang(b"#!/" + b"a" * 300, whole=False), NotExecutable)
    assert parse_shebang(b"#!/bin/sh\n" + bytes(1000)) == Script("/bin/sh", "")


@pytest.mark.parametrize(
    ("data", "claimed", "runs"),
    [
        (elf(EM_X86_64), "linux/amd64", True),
        (elf(EM_X86_64), "linux/arm64", False),
        (elf(EM_AARCH64), "linux/arm64", True),
        (elf(EM_AARCH64), "linux/arm64/v8", True),
        (elf(EM_AARCH64), "linux/arm/v7", False),
        (elf(EM_386, bits=32), "linux/amd64", True),  # IA-32 emulation
        (elf(EM_X86_64), "linux/386", False),
        (arm_elf(10), "linux/arm/v7", True),
        (arm_elf(10), "linux/arm/v6", False),
        (arm_elf(10), "linux/arm/v8", True),
        (arm_elf(6), "linux/arm/v7", True),
        (arm_elf(None), "linux/arm/v6", True),  # variant unknown: the machine is what counts
        (arm_elf(10), "linux/arm64", False),  # many arm64 CPUs have no AArch32
        (arm_elf(10, eabi=0), "linux/arm/v7", False),
        (elf(EM_X86_64, bits=32), "linux/amd64", False),  # x32
        (pe(PE_AMD64), "windows/amd64", True),
        (pe(PE_AMD64), "windows/amd64:10.0.17763", True),
        (pe(PE_AMD64), "windows/arm64", False),
        (pe(PE_I386), "windows/amd64", True),  # WOW64
        (pe(PE_AMD64), "linux/amd64", False),
        (elf(EM_X86_64), "windows/amd64", False),
    ],
)
def test_runs_as_claimed(data: bytes, claimed: str, runs: bool) -> None:
    assert runs_as_claimed(machine_of(data), Platform.parse(claimed)) is runs


def test_the_probe_stops_after_the_header_unless_arm() -> None:
    data = elf(EM_X86_64, size=1 << 20)
    probe = ExecutableProbe(len(data))
    probe.feed(data[:64])
    assert probe.satisfied
    arm = arm_elf(10, padding=200_000)
    probe = ExecutableProbe(len(arm))
    probe.feed(arm[:4096])
    assert not probe.satisfied  # its attributes lie ahead
    assert len(probe.result().head) <= 1024


def test_a_passing_probe_keeps_a_smaller_table() -> None:
    """A file watched in passing (not the one looked for) keeps at most 4 KiB of section
    headers: one with more sections is identified without its variant."""
    many = arm_elf(10)
    assert isinstance(identify(probed(many, deep=False)), Machine)


@settings(max_examples=60, deadline=None)
@given(
    cpu_arch=st.sampled_from([4, 6, 10, 14]),
    table_first=st.booleans(),
    padding=st.integers(0, 70_000),
    chunks=st.lists(st.integers(1, 9000), min_size=1, max_size=30),
)
def test_the_probe_gives_the_same_answer_however_the_bytes_come(
    cpu_arch: int, table_first: bool, padding: int, chunks: list[int]
) -> None:
    data = arm_elf(cpu_arch, padding=padding, table_first=table_first)
    whole = identify(probed(data, chunk=len(data)))
    probe = ExecutableProbe(len(data))
    position, index = 0, 0
    while position < len(data) and not probe.satisfied:
        size = chunks[index % len(chunks)]
        probe.feed(data[position : position + size])
        position, index = position + size, index + 1
    assert identify(probe.result()) == whole
    assert isinstance(whole, Machine) and whole.platform is not None
    assert whole.platform.variant


@pytest.mark.parametrize(
    ("arch", "name"), [("amd64", "x86-64"), ("arm64", "aarch64"), ("armhf", "arm (EABI5, v7)")]
)
def test_debian_busybox(arch: str, name: str) -> None:
    """The real programs, when scripts/fetch-test-binaries has fetched them."""
    path = BINARIES / arch / "busybox"
    if not path.is_file():
        pytest.skip(f"{path} not fetched (scripts/fetch-test-binaries)")
    assert machine_of(path.read_bytes()).name == name


@pytest.mark.parametrize("cpu_arch", [4, 6, 10, 14])
@pytest.mark.parametrize("table_first", [True, False])
def test_an_attribute_section_starting_in_the_chunk_that_completes_the_table_is_kept(
    cpu_arch: int, table_first: bool
) -> None:
    """The section table may be complete in the middle of the chunk where the ARM attributes
    start (a small file read 3 bytes at a time): the section was refused as already passed,
    and the variant lost (arm (EABI5) instead of arm (EABI5, v5)). Every chunk size gives the
    whole file's answer."""
    data = arm_elf(cpu_arch, padding=0, table_first=table_first)
    whole = identify(probed(data, chunk=len(data)))
    assert whole.platform.variant, whole
    assert [size for size in range(1, 300) if identify(probed(data, chunk=size)) != whole] == []
