"""Reading a response body within a cap, decoded per its ``Content-Encoding``.

Bodies are asked for as they are (identity): a digest is over those bytes. A proxy or CDN may
compress all the same; such bodies are decoded here, and the cap applies to the decoded bytes,
so a gzip bomb stays bounded. The digest is then checked (by the caller) on the decoded bytes.
"""

from __future__ import annotations

import zlib
from typing import TYPE_CHECKING

from kmultiarch.errors import ManifestError
from kmultiarch.registry.endpoints import loggable

if TYPE_CHECKING:
    import httpx


class CappedDecoder:
    """Decodes a body per its Content-Encoding (gzip, deflate or none) a chunk at a time,
    never holding more than ``limit`` + 1 decoded bytes."""

    def __init__(self, encoding: str, limit: int) -> None:
        self.limit = limit
        self._inflate: zlib._Decompress | None
        #: deflate as RFC 9110 says (zlib-wrapped) until the first bytes prove it raw deflate.
        self._may_be_raw = encoding == "deflate"
        self._unproven = b""  # what was fed while it may still prove raw (replayed if so)
        if encoding in ("", "identity"):
            self._inflate = None
        elif encoding in ("gzip", "x-gzip"):
            self._inflate = zlib.decompressobj(16 + zlib.MAX_WBITS)
        elif encoding == "deflate":
            self._inflate = zlib.decompressobj()
        else:
            raise ValueError(f"an unsupported Content-Encoding {encoding!r}")

    def feed(self, chunk: bytes, room: int) -> bytes:
        """Decoded bytes of ``chunk``, at most ``room`` of them (more means over the cap)."""
        if self._inflate is None:
            return chunk[:room]
        try:
            decoded = self._inflate.decompress(chunk, room)
        except zlib.error as exc:
            if not self._may_be_raw:
                raise ValueError(f"a corrupt compressed body ({exc})") from exc
            # Some servers send raw deflate under "deflate" (httpx and browsers accept it).
            self._may_be_raw = False
            self._inflate = zlib.decompressobj(-zlib.MAX_WBITS)
            return self.feed(self._unproven + chunk, room)
        if self._may_be_raw:
            self._unproven += chunk
            # The zlib header (two bytes) has been checked once anything came out of it.
            self._may_be_raw = not decoded and len(self._unproven) < 2
        return decoded


async def read_decoded(
    response: httpx.Response, encoding: str, limit: int, *, strict: bool, source: str
) -> bytes:
    """The body, decoded, at most ``limit`` bytes. Over the cap: a ManifestError when the body
    is what was asked for (``strict``), else the first ``limit`` bytes (an error page)."""
    try:
        decoder = CappedDecoder(encoding, limit)
    except ValueError as exc:
        if not strict:
            return b""
        raise ManifestError(f"{source}: {loggable(str(response.url))} sent {exc}") from None
    chunks: list[bytes] = []
    size = 0
    async for chunk in response.aiter_raw():
        try:
            decoded = decoder.feed(chunk, limit + 1 - size)
        except ValueError as exc:
            if not strict:
                break
            raise ManifestError(f"{source}: {loggable(str(response.url))} sent {exc}") from None
        size += len(decoded)
        if size > limit:
            if strict:
                raise ManifestError(
                    f"{source}: {loggable(str(response.url))} is larger than the {limit}-byte cap"
                )
            chunks.append(decoded[: max(0, limit - (size - len(decoded)))])
            break
        chunks.append(decoded)
    return b"".join(chunks)
