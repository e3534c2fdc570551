"""Tar archives written byte by byte for the layer reader's tests: ustar headers (any field,
a bad size field too), PAX records, GNU long names, and what the reader makes of them."""

from __future__ import annotations

from kmultiarch.core.verification.layers import TarHeader, TarStream

BLOCK = 512


def header(
    name: str,
    typeflag: bytes = b"0",
    size: int = 0,
    *,
    mode: int = 0o755,
    link: str = "",
    magic: bytes = b"ustar\x0000",
    prefix: str = "",
    size_field: bytes | None = None,
) -> bytes:
    block = bytearray(BLOCK)
    block[0:100] = name.encode()[:100].ljust(100, b"\0")
    block[100:108] = f"{mode:07o}\0".encode()
    block[124:136] = size_field if size_field is not None else f"{size:011o}\0".encode()
    block[156:157] = typeflag
    block[157:257] = link.encode().ljust(100, b"\0")
    block[257:265] = magic
    block[345:500] = prefix.encode().ljust(155, b"\0")
    block[148:156] = b" " * 8
    block[148:156] = f"{sum(block):06o}\0 ".encode()
    return bytes(block)


def data(payload: bytes) -> bytes:
    return payload + bytes(-len(payload) % BLOCK)


def pax(records: dict[str, str], typeflag: bytes = b"x", name: str = "PaxHeader") -> bytes:
    body = b""
    for key, value in records.items():
        text = f" {key}={value}\n"
        length = len(text) + 1
        while len(str(length)) + len(text) != length:
            length = len(str(length)) + len(text)
        body += f"{length}{text}".encode()
    return header(name, typeflag, len(body), mode=0o644) + data(body)


def long_name(name: str, typeflag: bytes = b"L") -> bytes:
    payload = name.encode() + b"\0"
    return header("././@LongLink", typeflag, len(payload), mode=0o644) + data(payload)


END = bytes(2 * BLOCK)


def entries(archive: bytes) -> list[TarHeader]:
    found: list[TarHeader] = []
    stream = TarStream(lambda h: found.append(h) or None)  # type: ignore[func-returns-value]
    stream.feed(archive)
    return found
