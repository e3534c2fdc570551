"""What machine a file is built for, read from its first bytes; and ``#!`` lines.

Pure: bytes in, plain values out. An ELF file says its machine in ``e_machine`` with its class
(32 or 64 bit) and byte order (System V gABI); 32-bit ARM says its architecture version
(v5, v6, v7, v8) in the ``Tag_CPU_arch`` attribute of its ``.ARM.attributes`` section, found
through the section headers. A PE file (Windows) says its machine in the COFF header that
``e_lfanew`` points to. A script names its interpreter on its ``#!`` line, as Linux reads it
(``fs/binfmt_script.c``: at most 256 bytes, the interpreter, then one optional argument).

:class:`ExecutableProbe` keeps what identifying a file needs while its bytes stream past once
(from a layer being decompressed), within fixed bounds: the first bytes, the ELF section
header table, and candidate attribute sections (an attribute section usually lies before the
section headers, so it has passed when they tell where it is).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from typing import Literal

from kmultiarch.core.images.platform import Platform

__all__ = [
    "HEAD_BYTES",
    "ExecutableProbe",
    "FileHead",
    "Identified",
    "Machine",
    "NotExecutable",
    "Script",
    "identify",
    "parse_shebang",
    "runs_as_claimed",
]

#: Bytes kept from the start of every file looked at: ELF and PE headers, a ``#!`` line.
HEAD_BYTES = 1024
#: Linux reads this much of a script for its ``#!`` line (BINPRM_BUF_SIZE).
SHEBANG_BYTES = 256
#: How much of a 32-bit ARM file is read, past its headers, to find its attributes.
ARM_ATTRIBUTES_READ_LIMIT = 32 * 1024 * 1024

ELF_MAGIC = b"\x7fELF"
_EM_386 = 3
_EM_MIPS = 8
_EM_PPC = 20
_EM_PPC64 = 21
_EM_S390 = 22
_EM_ARM = 40
_EM_X86_64 = 62
_EM_AARCH64 = 183
_EM_RISCV = 243
_EM_LOONGARCH = 258
_SHT_ARM_ATTRIBUTES = 0x70000003
_ET_EXEC = 2
_ET_DYN = 3
_ELF_TYPES = {0: "no file type", 1: "a relocatable object", 4: "a core dump"}

# (e_machine, 64-bit, little endian) -> (name, architecture of its platform or "").
_ELF_MACHINES: dict[tuple[int, bool, bool], tuple[str, str]] = {
    (_EM_X86_64, True, True): ("x86-64", "amd64"),
    (_EM_X86_64, False, True): ("x32", ""),
    (_EM_386, False, True): ("i386", "386"),
    (_EM_AARCH64, True, True): ("aarch64", "arm64"),
    (_EM_AARCH64, True, False): ("aarch64_be", ""),
    (_EM_ARM, False, True): ("arm", "arm"),
    (_EM_ARM, False, False): ("armeb", ""),
    (_EM_PPC64, True, True): ("ppc64le", "ppc64le"),
    (_EM_PPC64, True, False): ("ppc64", "ppc64"),
    (_EM_PPC, False, False): ("ppc", ""),
    (_EM_S390, True, False): ("s390x", "s390x"),
    (_EM_S390, False, False): ("s390", ""),
    (_EM_RISCV, True, True): ("riscv64", "riscv64"),
    (_EM_RISCV, False, True): ("riscv32", ""),
    (_EM_MIPS, True, True): ("mips64le", "mips64le"),
    (_EM_MIPS, True, False): ("mips64", "mips64"),
    (_EM_MIPS, False, True): ("mipsle", "mipsle"),
    (_EM_MIPS, False, False): ("mips", "mips"),
    (_EM_LOONGARCH, True, True): ("loongarch64", "loong64"),
}

# PE COFF Machine -> (name, architecture).
_PE_MACHINES = {
    0x8664: ("PE AMD64", "amd64"),
    0xAA64: ("PE ARM64", "arm64"),
    0x014C: ("PE i386", "386"),
    0x01C4: ("PE ARMv7 Thumb-2", "arm"),
}

# Tag_CPU_arch (ARM IHI 0045, "Addenda to the ARM ABI") -> the platform variant it needs.
_ARM_CPU_ARCH_VARIANT = {
    0: "v4",  # pre-v4
    1: "v4",
    2: "v4",  # v4T
    3: "v5",  # v5T
    4: "v5",  # v5TE
    5: "v5",  # v5TEJ
    6: "v6",
    7: "v6",  # v6KZ
    8: "v6",  # v6T2
    9: "v6",  # v6K
    10: "v7",
    11: "v6",  # v6-M
    12: "v6",  # v6S-M
    13: "v7",  # v7E-M
    14: "v8",  # v8-A (AArch32)
    15: "v8",  # v8-R
    16: "v8",  # v8-M baseline
    17: "v8",  # v8-M mainline
    18: "v8",  # v8.1-A
    19: "v8",  # v8.2-A
    20: "v8",  # v8.3-A
    21: "v8",  # v8.1-M mainline
    22: "v9",  # v9-A
}
_TAG_FILE = 1
_TAG_CPU_ARCH = 6
#: Architectures whose binaries also run on another's nodes, as every kernel there builds
#: them: i386 programs on amd64 (IA-32 emulation, WOW64 on Windows).
_ALSO_RUNS_ON = {"386": frozenset({"amd64"})}


@dataclass(frozen=True)
class Machine:
    """The machine a binary is built for: its format, its name as people say it
    (``x86-64``, ``aarch64``, ``arm (EABI5, v7)``, ``PE AMD64``), and the platform it runs
    on (None for machines no platform names, such as ``x32`` or ``aarch64_be``)."""

    format: Literal["elf", "pe"]
    name: str
    platform: Platform | None


@dataclass(frozen=True)
class Script:
    """A ``#!`` script: the interpreter the kernel starts, and its one optional argument."""

    interpreter: str
    argument: str


@dataclass(frozen=True)
class NotExecutable:
    """A file kmultiarch cannot tell a machine for, and why (in words)."""

    reason: str


Identified = Machine | Script | NotExecutable


@dataclass(frozen=True)
class FileHead:
    """What an :class:`ExecutableProbe` kept of a file: its first bytes, and for 32-bit ARM
    the section header table and the candidate attribute sections (offset, bytes)."""

    head: bytes
    size: int
    section_headers: bytes = b""
    section_headers_offset: int = 0
    attributes: tuple[tuple[int, bytes], ...] = ()


def identify(file: FileHead) -> Identified:
    """The machine ``file`` is built for, the interpreter it names, or why neither."""
    head = file.head
    if head.startswith(ELF_MAGIC):
        return _identify_elf(file)
    if head.startswith(b"MZ"):
        return _identify_pe(head)
    if head.startswith(b"#!"):
        return parse_shebang(head, whole=file.size <= len(head))
    if not head:
        return NotExecutable("an empty file")
    if head[:4] in (
        b"\xfe\xed\xfa\xce",
        b"\xfe\xed\xfa\xcf",
        b"\xce\xfa\xed\xfe",
        b"\xcf\xfa\xed\xfe",
    ):
        return NotExecutable("a Mach-O (macOS) executable")
    return NotExecutable(f"neither ELF, PE nor a #! script (it starts with {head[:4]!r})")


def parse_shebang(head: bytes, *, whole: bool = False) -> Script | NotExecutable:
    """The interpreter and argument of a ``#!`` line, as Linux reads them: spaces and tabs
    after ``#!`` skipped, the interpreter up to the next space or tab, the rest of the line
    (trimmed) one argument. ``whole``: ``head`` is the whole file (it may lack a newline)."""
    if not head.startswith(b"#!"):
        return NotExecutable("not a #! script")
    buffer = head[:SHEBANG_BYTES]
    end = buffer.find(b"\n")
    if end < 0:
        # No newline in what Linux reads: it runs the script only if the interpreter's name
        # ends (a space, a tab, or the end of a shorter file) within it; an argument may be cut.
        name = buffer[2:].lstrip(b" \t")
        ended = any(mark in name for mark in (b" ", b"\t", b"\0"))
        if not ended and (len(head) > SHEBANG_BYTES or not whole):
            return NotExecutable(
                f"its #! line is longer than the {SHEBANG_BYTES} bytes Linux reads"
            )
        end = len(buffer)
    line = buffer[2:end].split(b"\0", 1)[0].replace(b"\t", b" ").strip(b" \r")
    if not line:
        return NotExecutable("its #! line names no interpreter")
    interpreter, _, argument = line.partition(b" ")
    return Script(_text(interpreter), _text(argument.strip(b" ")))


def runs_as_claimed(machine: Machine, claimed: Platform) -> bool:
    """Whether a binary of ``machine`` runs on nodes of the ``claimed`` platform: same OS and
    architecture (i386 also on amd64), and for 32-bit ARM a variant no newer than claimed
    (an arm/v7 binary fails on an arm/v6 node; a binary whose variant is unknown passes)."""
    actual = machine.platform
    if actual is None or actual.os != claimed.os:
        return False
    if actual.architecture != claimed.architecture:
        return claimed.architecture in _ALSO_RUNS_ON.get(actual.architecture, frozenset())
    if actual.architecture == "arm" and actual.variant and claimed.variant:
        return _variant_number(actual.variant) <= _variant_number(claimed.variant)
    return True


def _variant_number(variant: str) -> int:
    digits = variant.lstrip("v")
    return int(digits) if digits.isdigit() else 0


def _text(raw: bytes) -> str:
    return raw.decode("utf-8", "surrogateescape")


# -- ELF ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _ElfHeader:
    is64: bool
    little: bool
    kind: int
    machine: int
    flags: int
    shoff: int
    shentsize: int
    shnum: int

    @property
    def order(self) -> str:
        return "<" if self.little else ">"

    @property
    def table_size(self) -> int:
        return self.shentsize * self.shnum


def _elf_header(head: bytes) -> _ElfHeader | None:
    if len(head) < 52 or head[4] not in (1, 2) or head[5] not in (1, 2):
        return None
    is64, little = head[4] == 2, head[5] == 1
    if is64 and len(head) < 64:
        return None
    order = "<" if little else ">"
    kind, machine = struct.unpack_from(f"{order}HH", head, 16)
    if is64:
        shoff, flags = struct.unpack_from(f"{order}QI", head, 40)
        shentsize, shnum = struct.unpack_from(f"{order}HH", head, 58)
    else:
        shoff, flags = struct.unpack_from(f"{order}II", head, 32)
        shentsize, shnum = struct.unpack_from(f"{order}HH", head, 46)
    return _ElfHeader(is64, little, kind, machine, flags, shoff, shentsize, shnum)


def _identify_elf(file: FileHead) -> Identified:
    header = _elf_header(file.head)
    if header is None:
        return NotExecutable("a truncated or malformed ELF header")
    if header.kind not in (_ET_EXEC, _ET_DYN):
        what = _ELF_TYPES.get(header.kind, f"ELF type {header.kind}")
        return NotExecutable(f"an ELF file that is not a program ({what})")
    known = _ELF_MACHINES.get((header.machine, header.is64, header.little))
    if known is None:
        bits = 64 if header.is64 else 32
        order = "little" if header.little else "big"
        return Machine("elf", f"ELF machine {header.machine:#x} ({bits}-bit, {order} endian)", None)
    name, architecture = known
    if header.machine == _EM_ARM and header.little:
        return _arm_machine(file, header)
    platform = Platform.create("linux", architecture) if architecture else None
    return Machine("elf", name, platform)


def _arm_machine(file: FileHead, header: _ElfHeader) -> Machine:
    eabi = header.flags >> 24
    variant = _arm_variant(file, header)
    details = [f"EABI{eabi}" if eabi else "OABI"]
    if variant:
        details.append(variant)
    name = f"arm ({', '.join(details)})"
    if not eabi:
        # The old ABI runs only on kernels built with OABI_COMPAT, which no distribution's
        # ARM kernel for Kubernetes nodes has.
        return Machine("elf", name, None)
    return Machine("elf", name, Platform("linux", "arm", variant))


def _arm_variant(file: FileHead, header: _ElfHeader) -> str:
    """The variant ``Tag_CPU_arch`` says, when the kept bytes hold the attribute section."""
    table = file.section_headers
    if not table or header.shentsize < 40 or len(table) < header.table_size:
        return ""
    order = header.order
    for index in range(header.shnum):
        base = index * header.shentsize
        kind, _, _, offset, size = struct.unpack_from(f"{order}IIIII", table, base + 4)
        if kind != _SHT_ARM_ATTRIBUTES:
            continue
        for start, data in file.attributes:
            if start == offset and len(data) >= size:
                arch = _cpu_arch(data[:size], order)
                return _ARM_CPU_ARCH_VARIANT.get(arch, "") if arch is not None else ""
        return ""
    return ""


def _cpu_arch(section: bytes, order: str) -> int | None:
    """``Tag_CPU_arch`` of the file-scope ``aeabi`` attributes, or None."""
    if not section.startswith(b"A"):
        return None
    position = 1
    while position + 4 <= len(section):
        (length,) = struct.unpack_from(f"{order}I", section, position)
        end = min(position + length, len(section))
        if length < 5:
            return None
        name_end = section.find(b"\0", position + 4, end)
        if name_end >= 0 and section[position + 4 : name_end] == b"aeabi":
            found = _file_cpu_arch(section, name_end + 1, end, order)
            if found is not None:
                return found
        position += length
    return None


def _file_cpu_arch(section: bytes, position: int, end: int, order: str) -> int | None:
    while position + 5 <= end:
        tag = section[position]
        (size,) = struct.unpack_from(f"{order}I", section, position + 1)
        if size < 5:
            return None
        if tag == _TAG_FILE:
            return _attribute(section, position + 5, min(position + size, end), _TAG_CPU_ARCH)
        position += size
    return None


def _attribute(data: bytes, position: int, end: int, wanted: int) -> int | None:
    """The integer value of attribute ``wanted`` (tags before it are skipped by the ABI's
    rule: tags 4, 5, 67 and odd tags from 32 take a NUL-terminated string, others a ULEB128)."""
    while position < end:
        tag, position = _uleb128(data, position, end)
        if tag < 0:
            return None
        if tag == wanted:
            value, _ = _uleb128(data, position, end)
            return value if value >= 0 else None
        if tag in (4, 5, 67) or (tag >= 32 and tag % 2 == 1):
            terminator = data.find(b"\0", position, end)
            if terminator < 0:
                return None
            position = terminator + 1
        elif tag == 32:
            return None  # Tag_also_compatible_with: a nested pair; CPU_arch comes earlier
        else:
            _, position = _uleb128(data, position, end)
    return None


def _uleb128(data: bytes, position: int, end: int) -> tuple[int, int]:
    value = shift = 0
    while position < end and shift < 64:
        byte = data[position]
        position += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, position
        shift += 7
    return -1, position


# -- PE -------------------------------------------------------------------------------------


def _pe_offset(head: bytes) -> int | None:
    if len(head) < 0x40:
        return None
    (offset,) = struct.unpack_from("<I", head, 0x3C)
    return int(offset)


def _identify_pe(head: bytes) -> Identified:
    offset = _pe_offset(head)
    if offset is None or len(head) < offset + 6:
        return NotExecutable("an MZ file whose PE header kmultiarch did not read")
    if head[offset : offset + 4] != b"PE\0\0":
        return NotExecutable("an MS-DOS executable without a PE header")
    (code,) = struct.unpack_from("<H", head, offset + 4)
    known = _PE_MACHINES.get(code)
    if known is None:
        return Machine("pe", f"PE machine {code:#06x}", None)
    name, architecture = known
    return Machine("pe", name, Platform.create("windows", architecture))


# -- the probe ------------------------------------------------------------------------------


@dataclass
class _Region:
    start: int
    length: int
    data: bytearray = field(default_factory=bytearray)

    def take(self, position: int, chunk: bytes) -> None:
        """Copy the part of ``chunk`` (which starts at ``position``) that falls in here."""
        end = self.start + self.length
        low, high = max(position, self.start + len(self.data)), min(position + len(chunk), end)
        if low < high and low == self.start + len(self.data):
            self.data += chunk[low - position : high - position]

    @property
    def full(self) -> bool:
        return len(self.data) >= self.length


#: The bytes that start every subsection of ARM attributes: 'A', a 4-byte length, "aeabi\0".
_AEABI = b"aeabi\0"


class ExecutableProbe:
    """Watches a file's bytes go past, once, and keeps what :func:`identify` needs.

    ``size`` is the file's size (from its tar header). ``deep``: the file is the one being
    looked for, so a larger section header table may be kept. :attr:`satisfied` turns True as
    soon as nothing more can be learnt (for most files, after their first 64 bytes): a reader
    may stop there.
    """

    def __init__(self, size: int, *, deep: bool = True) -> None:
        self.size = size
        self.position = 0
        self._head = bytearray()
        self._table_cap = 64 * 1024 if deep else 4 * 1024
        self._candidate_cap = 16 if deep else 4
        self._table: _Region | None = None
        self._candidates: list[_Region] = []
        self._arm = False
        self._decided = False
        self._carry = b""
        self.satisfied = size == 0

    def feed(self, chunk: bytes) -> None:
        if self.satisfied or not chunk:
            return
        position = self.position
        self.position += len(chunk)
        if len(self._head) < HEAD_BYTES:
            self._head += chunk[: HEAD_BYTES - len(self._head)]
        if not self._decided and (len(self._head) >= 64 or self.position >= self.size):
            self._decide()
            if self._arm and position:
                self._watch_arm(0, bytes(self._head[:position]))  # what passed before
        if self._arm:
            self._watch_arm(position, chunk)
        if self.position >= self.size or (
            self._decided and not self._arm and len(self._head) >= self._head_needed()
        ):
            self.satisfied = True

    def result(self) -> FileHead:
        table = self._table
        return FileHead(
            bytes(self._head),
            self.size,
            bytes(table.data) if table is not None and table.full else b"",
            table.start if table is not None else 0,
            tuple((c.start, bytes(c.data)) for c in self._candidates),
        )

    def _head_needed(self) -> int:
        """How much of the head identifying the file needs."""
        head = bytes(self._head)
        if head.startswith(b"MZ"):
            offset = _pe_offset(head)
            return min(HEAD_BYTES, offset + 6) if offset is not None else HEAD_BYTES
        if head.startswith(b"#!"):
            return SHEBANG_BYTES
        return 64

    def _decide(self) -> None:
        self._decided = True
        header = _elf_header(bytes(self._head)) if self._head.startswith(ELF_MAGIC) else None
        if header is None or header.machine != _EM_ARM or header.is64 or not header.little:
            return
        if self.size > ARM_ATTRIBUTES_READ_LIMIT:
            return
        if 0 < header.table_size <= self._table_cap and header.shoff + header.table_size <= (
            self.size
        ):
            self._table = _Region(header.shoff, header.table_size)
            self._arm = True

    def _watch_arm(self, position: int, chunk: bytes) -> None:
        assert self._table is not None
        self._table.take(position, chunk)
        for candidate in self._candidates:
            candidate.take(position, chunk)
        window = self._carry + chunk
        base = position - len(self._carry)
        found = window.find(_AEABI)
        while found >= 0 and len(self._candidates) < self._candidate_cap:
            start = base + found - 5
            if found >= 5 and window[found - 5] == ord("A") and not self._known(start):
                region = _Region(start, 512)
                region.take(base, window)
                self._candidates.append(region)
            found = window.find(_AEABI, found + 1)
        self._carry = window[-(len(_AEABI) + 4) :]
        if self._table.full and all(
            len(c.data) >= min(c.length, self.size - c.start) for c in self._candidates
        ):
            self._arm = self._attributes_ahead(base, window)
            if not self._arm:
                self.satisfied = True

    def _known(self, start: int) -> bool:
        return any(candidate.start == start for candidate in self._candidates)

    def _attributes_ahead(self, base: int, window: bytes) -> bool:
        """With the section table read: whether the attribute section lies still ahead (then
        it is kept when it passes); False when it has passed or there is none. ``window``
        (from ``base``) is what is still at hand: the chunk being read and the bytes kept
        before it, so a section starting in it is kept from its first byte (the table may be
        complete in the middle of the chunk that starts the section)."""
        assert self._table is not None
        header = _elf_header(bytes(self._head))
        if header is None or header.shentsize < 40:
            return False
        table = bytes(self._table.data)
        for index in range(header.shnum):
            kind, _, _, offset, size = struct.unpack_from(
                "<IIIII", table, index * header.shentsize + 4
            )
            if kind == _SHT_ARM_ATTRIBUTES:
                if offset < base or self._known(offset) or size > 64 * 1024:
                    return False
                region = _Region(offset, size)
                region.take(base, window)
                self._candidates.append(region)
                return True
        return False
