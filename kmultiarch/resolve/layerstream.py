"""A layer's bytes as they arrive, decompressed within bounds: gzip (several members too),
zstd (several frames too) or plain tar.

No layer is ever held whole, in memory or on disk: each network chunk is decompressed in
pieces whose output is bounded whatever the ratio (a gzip or zstd bomb yields at most a few
MiB a step), and every byte is counted against the caller's :class:`Budget` first: the
compressed bytes against the download budget, the decompressed ones against the cap, the
time against the deadline. A bound reached raises :class:`OutOfBudget`, which says which.

zstd: the ``zstandard`` package (the standard library has zstd only from Python 3.14), fed a
few hundred bytes at a time, since the output of one of its steps is not bounded otherwise
(an RLE block yields 128 KiB for 4 input bytes).
"""

from __future__ import annotations

import time
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Protocol

from kmultiarch.core.verification.verdicts import Compression, UnverifiedCode

__all__ = ["Budget", "Expander", "OutOfBudget", "expander", "sniffed"]

#: Most bytes one decompression step may yield.
STEP_OUTPUT = 1024 * 1024
#: Input bytes handed to python-zstandard at once: its output per step is not bounded
#: otherwise (an RLE block yields 128 KiB for 4 bytes), so 128 bytes yield at most 4 MiB.
ZSTD_STEP_INPUT = 128


class OutOfBudget(Exception):
    """A bound of the verification reached: ``code`` says which, ``reason`` in words."""

    def __init__(self, code: UnverifiedCode, reason: str) -> None:
        super().__init__(reason)
        self.code: UnverifiedCode = code
        self.reason = reason


@dataclass
class Budget:
    """What one platform manifest's verification may spend: bytes downloaded, bytes
    decompressed, and a deadline (``time.monotonic()``)."""

    max_download: int
    max_expanded: int
    deadline: float
    downloaded: int = 0
    expanded: int = 0

    def download(self, size: int) -> None:
        self.downloaded += size
        _within(self.downloaded, self.max_download, "budget", "the download budget of {} ran out")
        self.check_time()

    def expand(self, size: int) -> None:
        self.expanded += size
        _within(
            self.expanded,
            self.max_expanded,
            "expanded",
            "the cap of {} of decompressed layer data was reached",
        )

    def check_time(self) -> None:
        if time.monotonic() > self.deadline:
            raise OutOfBudget("deadline", "the deadline passed before the file was found")

    @property
    def room(self) -> int:
        """Decompressed bytes still allowed."""
        return max(0, self.max_expanded - self.expanded)


def _within(spent: int, cap: int, code: UnverifiedCode, what: str) -> None:
    if spent > cap:
        raise OutOfBudget(code, what.format(_size(cap)) + " before the file was found")


def _size(value: int) -> str:
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if value >= scale and value % scale == 0:
            return f"{value // scale} {unit}"
    return f"{value} bytes"


class Expander(Protocol):
    """Decompresses a layer a chunk at a time; each piece yielded is bounded."""

    def expand(self, data: bytes) -> Iterator[bytes]: ...


class _Plain:
    def expand(self, data: bytes) -> Iterator[bytes]:
        if data:
            yield data


class _Gzip:
    """gzip members one after the other (pigz and some builders write several)."""

    def __init__(self) -> None:
        self._inflate = zlib.decompressobj(16 + zlib.MAX_WBITS)

    def expand(self, data: bytes) -> Iterator[bytes]:
        while data:
            try:
                piece = self._inflate.decompress(data, STEP_OUTPUT)
            except zlib.error as exc:
                raise OutOfBudget("damaged", f"a corrupt gzip layer ({exc})") from None
            if piece:
                yield piece
            if self._inflate.eof:
                data = self._inflate.unused_data
                self._inflate = zlib.decompressobj(16 + zlib.MAX_WBITS)
            else:
                data = self._inflate.unconsumed_tail


class _Zstd:
    """zstd frames one after the other."""

    def __init__(self, module: Any) -> None:
        self._module = module
        self._frame = module.ZstdDecompressor().decompressobj()

    def expand(self, data: bytes) -> Iterator[bytes]:
        for start in range(0, len(data), ZSTD_STEP_INPUT):
            pending = data[start : start + ZSTD_STEP_INPUT]
            while pending:
                try:
                    piece = self._frame.decompress(pending)
                except self._module.ZstdError as exc:
                    raise OutOfBudget("damaged", f"a corrupt zstd layer ({exc})") from None
                pending = b""
                if piece:
                    yield piece
                if self._frame.eof:
                    pending = self._frame.unused_data
                    self._frame = self._module.ZstdDecompressor().decompressobj()


#: The first bytes of a gzip member and of a zstd frame.
_MAGIC: tuple[tuple[bytes, Compression], ...] = (
    (b"\x1f\x8b", "gzip"),
    (b"\x28\xb5\x2f\xfd", "zstd"),
)


def sniffed(first: bytes, declared: Compression) -> Compression:
    """How a layer whose stream starts with ``first`` is compressed, whatever its media type
    says (containerd decides by these bytes too: builders and registries mislabel layers)."""
    for magic, compression in _MAGIC:
        if first.startswith(magic):
            return compression
    return "none" if len(first) >= 4 else declared


def expander(compression: Compression) -> Expander:
    """The decompressor for a layer compressed with ``compression``."""
    if compression == "gzip":
        return _Gzip()
    if compression == "zstd":
        import zstandard

        return _Zstd(zstandard)
    return _Plain()
