"""RESP2, the protocol Redis and Valkey speak, as plain functions over bytes: commands encoded,
replies read within caps, and the few commands the shared cache sends, each with the one reply
shape it accepts.

Nothing here touches a socket: a :class:`ReplyReader` pulls bytes from the function it is given
(a connection's receive, with the time left of its operation; a list of chunks in tests). The
bounds hold by construction: a reply is refused as soon as it passes a cap, before what it
announces is read or allocated (an array header ``*1000000000`` is refused as a header).

Errors, one tree::

    RespError               the shared level cannot be used for the rest of the run
    ├── ProtocolError       not RESP2, over a cap, or not the shape the command answers
    ├── ServerError         an error reply (-ERR, -WRONGPASS, -NOPERM, -OOM ...)
    └── TransportError      connecting, TLS, a refused or reset connection (redis_client)
        ├── DeadlineExceeded    the operation did not complete within its deadline
        └── ConnectionClosed    the server closed the connection (retried once when reused)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

#: A parsed reply: bulk strings are bytes, simple strings str, nil None, arrays lists.
Reply = bytes | str | int | None | list["Reply"]
T = TypeVar("T")

MIB = 1024 * 1024


@dataclass(frozen=True)
class Limits:
    """What one operation (a command, or a pipeline of them) may receive."""

    #: Bytes received for all the replies of an operation.
    reply_bytes: int = 32 * MIB
    #: One bulk string (a stored entry is a few hundred bytes).
    bulk_bytes: int = 1 * MIB
    #: Array elements in all the replies of an operation (an MGET asks at most 1000 keys).
    elements: int = 100_000
    #: Arrays in arrays: SCAN's reply is the deepest the cache reads (2).
    depth: int = 2
    #: A status, error or length line.
    line_bytes: int = 64 * 1024


class RespError(Exception):
    """The shared level cannot be used: its message says why, and never quotes a credential."""


class ProtocolError(RespError):
    pass


class ServerError(RespError):
    pass


class TransportError(RespError):
    pass


class DeadlineExceeded(TransportError):
    pass


class ConnectionClosed(TransportError):
    pass


def encode(arguments: Sequence[bytes]) -> bytes:
    """A command as a RESP array of bulk strings."""
    parts = [b"*%d\r\n" % len(arguments)]
    for argument in arguments:
        parts += [b"$%d\r\n" % len(argument), argument, b"\r\n"]
    return b"".join(parts)


class ReplyReader:
    """Reads the replies of one operation from ``receive`` (which returns at least one byte,
    b"" when the server closed the connection, or raises), within :class:`Limits`."""

    def __init__(self, receive: Callable[[], bytes], limits: Limits | None = None) -> None:
        self._receive = receive
        self._limits = limits or Limits()
        self._buffer = bytearray()
        self._position = 0
        #: Bytes received so far by this operation.
        self.received = 0
        self._elements = 0

    def read(self) -> Reply:
        return self._reply(0)

    def finish(self) -> None:
        """Every byte received belongs to a reply: more would be a reply no one asked for."""
        if self._position < len(self._buffer):
            raise ProtocolError("the server sent more than the replies asked for")

    def _reply(self, depth: int) -> Reply:
        line = self._line()
        kind, rest = line[:1], line[1:]
        if kind == b"+":
            return rest.decode("utf-8", "replace")
        if kind == b"-":
            raise ServerError(rest.decode("utf-8", "replace") or "an empty error reply")
        if kind == b":":
            return _integer(rest)
        if kind == b"$":
            length = _integer(rest)
            if length == -1:
                return None
            if not 0 <= length <= self._limits.bulk_bytes:
                raise ProtocolError(
                    f"a bulk string of {length} bytes (at most {self._limits.bulk_bytes})"
                )
            return self._exact(length)
        if kind == b"*":
            count = _integer(rest)
            if count == -1:
                return None
            if count < 0:
                raise ProtocolError(f"an array of {count} elements")
            if depth >= self._limits.depth:
                raise ProtocolError(f"arrays nested deeper than {self._limits.depth}")
            self._elements += count
            if self._elements > self._limits.elements:
                raise ProtocolError(
                    f"an array of {count} elements (at most {self._limits.elements} a reply)"
                )
            return [self._reply(depth + 1) for _ in range(count)]
        raise ProtocolError(f"a reply of unknown type {bytes(kind)!r}")

    def _line(self) -> bytes:
        searched = 0  # bytes after the position already searched for the line's end
        while True:
            end = self._buffer.find(b"\r\n", self._position + searched)
            if end >= 0:
                line = bytes(self._buffer[self._position : end])
                self._position = end + 2
                return line
            unread = len(self._buffer) - self._position
            if unread > self._limits.line_bytes:
                raise ProtocolError(f"a line longer than {self._limits.line_bytes} bytes")
            searched = max(0, unread - 1)
            self._pull()

    def _exact(self, length: int) -> bytes:
        while len(self._buffer) - self._position < length + 2:
            self._pull()
        end = self._position + length
        if self._buffer[end : end + 2] != b"\r\n":
            raise ProtocolError("a bulk string longer than its length says")
        data = bytes(self._buffer[self._position : end])
        self._position = end + 2
        return data

    def _pull(self) -> None:
        chunk = self._receive()
        if not chunk:
            raise ConnectionClosed("the server closed the connection")
        self.received += len(chunk)
        if self.received > self._limits.reply_bytes:
            raise ProtocolError(f"replies over {self._limits.reply_bytes} bytes")
        if self._position > 64 * 1024:
            # What was read is dropped, so that the buffer holds at most the unread bytes.
            del self._buffer[: self._position]
            self._position = 0
        self._buffer += chunk


def _integer(text: bytes) -> int:
    digits = text[1:] if text[:1] == b"-" else text
    if not digits.isdigit() or len(digits) > 18 or not digits.isascii():
        raise ProtocolError(f"{bytes(text[:40])!r} is not an integer")
    return int(text)


# The commands the shared cache sends, each with the shape of reply it accepts.


@dataclass(frozen=True)
class Command(Generic[T]):
    name: str
    arguments: tuple[bytes, ...]
    expect: Callable[[Reply], T]

    def encoded(self) -> bytes:
        return encode((self.name.encode(), *self.arguments))


def describe(reply: Reply) -> str:
    """A reply's shape in a few words, for messages (never its content)."""
    if reply is None:
        return "nil"
    if isinstance(reply, bytes):
        return f"a bulk string of {len(reply)} bytes"
    if isinstance(reply, str):
        return "a status"
    if isinstance(reply, int):
        return "an integer"
    return f"an array of {len(reply)}"


def _refused(command: str, reply: Reply, expected: str) -> ProtocolError:
    return ProtocolError(f"{command} answered {describe(reply)}, not {expected}")


def _ok(command: str) -> Callable[[Reply], None]:
    def expect(reply: Reply) -> None:
        if reply != "OK":
            raise _refused(command, reply, "OK")

    return expect


def _bulk_or_nil(reply: Reply) -> bytes | None:
    if reply is not None and not isinstance(reply, bytes):
        raise _refused("GET", reply, "a bulk string or nil")
    return reply


def _integer_reply(command: str) -> Callable[[Reply], int]:
    def expect(reply: Reply) -> int:
        if not isinstance(reply, int):
            raise _refused(command, reply, "an integer")
        return reply

    return expect


def mget(keys: Sequence[bytes]) -> Command[list[bytes | None]]:
    """``MGET``: exactly one bulk string or nil per key asked."""

    def expect(reply: Reply) -> list[bytes | None]:
        if not isinstance(reply, list) or len(reply) != len(keys):
            raise _refused("MGET", reply, f"an array of {len(keys)}")
        values: list[bytes | None] = []
        for value in reply:
            if value is not None and not isinstance(value, bytes):
                raise ProtocolError(f"MGET answered {describe(value)} for a key")
            values.append(value)
        return values

    return Command("MGET", tuple(keys), expect)


def get(key: bytes) -> Command[bytes | None]:
    return Command("GET", (key,), _bulk_or_nil)


def set_value(
    key: bytes,
    value: bytes,
    *,
    seconds: int | None = None,
    milliseconds: int | None = None,
    only_if_absent: bool = False,
) -> Command[bool]:
    """``SET key value [EX s] [PX ms] [NX]``: True when set (nil: NX found the key)."""
    arguments = [key, value]
    if seconds is not None:
        arguments += [b"EX", b"%d" % seconds]
    if milliseconds is not None:
        arguments += [b"PX", b"%d" % milliseconds]
    if only_if_absent:
        arguments.append(b"NX")

    def expect(reply: Reply) -> bool:
        if reply is None and only_if_absent:
            return False
        if reply != "OK":
            raise _refused("SET", reply, "OK")
        return True

    return Command("SET", tuple(arguments), expect)


def exists(key: bytes) -> Command[int]:
    return Command("EXISTS", (key,), _integer_reply("EXISTS"))


def delete(keys: Sequence[bytes]) -> Command[int]:
    return Command("DEL", tuple(keys), _integer_reply("DEL"))


def scan(cursor: bytes, pattern: bytes, count: int) -> Command[tuple[bytes, list[bytes]]]:
    """``SCAN cursor MATCH pattern COUNT n``: the next cursor and a list of keys (bytes: a key
    need not be UTF-8)."""

    def expect(reply: Reply) -> tuple[bytes, list[bytes]]:
        if (
            not isinstance(reply, list)
            or len(reply) != 2
            or not isinstance(reply[0], bytes)
            or not reply[0].isdigit()
            or not isinstance(reply[1], list)
            or not all(isinstance(key, bytes) for key in reply[1])
        ):
            raise _refused("SCAN", reply, "a cursor and a list of keys")
        return reply[0], [key for key in reply[1] if isinstance(key, bytes)]

    return Command("SCAN", (cursor, b"MATCH", pattern, b"COUNT", b"%d" % count), expect)


def auth(password: str, username: str | None = None) -> Command[None]:
    arguments = (username.encode(), password.encode()) if username else (password.encode(),)
    return Command("AUTH", arguments, _ok("AUTH"))


def select(database: int) -> Command[None]:
    return Command("SELECT", (b"%d" % database,), _ok("SELECT"))
