"""RESP2 without a network (kmultiarch/resolve/resp.py): replies read from lists of chunks,
good and bad, each cap tried, and each command's accepted reply shape."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from kmultiarch.resolve import resp
from kmultiarch.resolve.resp import (
    ConnectionClosed,
    Limits,
    ProtocolError,
    Reply,
    ReplyReader,
    ServerError,
)


def _reader(*chunks: bytes, limits: Limits | None = None) -> ReplyReader:
    pending: Iterator[bytes] = iter(chunks)
    return ReplyReader(lambda: next(pending, b""), limits)


def _bytewise(data: bytes) -> ReplyReader:
    return _reader(*(data[i : i + 1] for i in range(len(data))))


GOOD: list[tuple[bytes, Reply]] = [
    (b"+OK\r\n", "OK"),
    (b":42\r\n", 42),
    (b":-3\r\n", -3),
    (b"$5\r\nhello\r\n", b"hello"),
    (b"$0\r\n\r\n", b""),
    (b"$-1\r\n", None),
    (b"*-1\r\n", None),
    (b"*0\r\n", []),
    (b"$4\r\na\r\nb\r\n", b"a\r\nb"),  # a bulk string is binary: CRLF inside
    (b"*3\r\n$1\r\na\r\n$-1\r\n$2\r\n\xff\xfe\r\n", [b"a", None, b"\xff\xfe"]),
    (b"*2\r\n$1\r\n0\r\n*2\r\n$1\r\nk\r\n$1\r\nl\r\n", [b"0", [b"k", b"l"]]),
]


@pytest.mark.parametrize(("data", "expected"), GOOD)
def test_replies_are_read_whole_and_byte_by_byte(data: bytes, expected: Reply) -> None:
    for reader in (_reader(data), _bytewise(data)):
        assert reader.read() == expected
        reader.finish()
        assert reader.received == len(data)


BAD: list[tuple[bytes, str]] = [
    (b"*1000000000\r\n", "an array of 1000000000 elements"),
    (b"$1000000000\r\n", "a bulk string of 1000000000 bytes"),
    (b"*1\r\n*1\r\n*1\r\n:1\r\n", "nested deeper than 2"),
    (b"$3\r\nabcd\r\n", "longer than its length"),
    (b":12a\r\n", "is not an integer"),
    (b":\r\n", "is not an integer"),
    (b":99999999999999999999\r\n", "is not an integer"),
    (b"$-2\r\n", "a bulk string of -2 bytes"),
    (b"*-5\r\n", "an array of -5 elements"),
    (b"%1\r\n", "unknown type"),  # RESP3 is never asked for
    (b"x" * 70_000, "a line longer than"),
]


@pytest.mark.parametrize(("data", "message"), BAD)
def test_replies_that_break_the_protocol_or_a_cap_are_refused(data: bytes, message: str) -> None:
    with pytest.raises(ProtocolError, match=message):
        _reader(data).read()


def test_the_byte_cap_counts_every_reply_of_the_operation() -> None:
    limits = Limits(reply_bytes=100)
    reader = _reader(*[b"$10\r\n0123456789\r\n"] * 10, limits=limits)
    with pytest.raises(ProtocolError, match="replies over 100 bytes"):
        for _ in range(10):
            reader.read()


def test_the_element_cap_counts_every_array_of_the_operation() -> None:
    reader = _reader(b"*3\r\n:1\r\n:2\r\n:3\r\n" * 2, limits=Limits(elements=5))
    assert reader.read() == [1, 2, 3]
    with pytest.raises(ProtocolError, match="at most 5"):
        reader.read()


def test_an_endless_stream_stops_at_the_byte_cap_not_at_the_end() -> None:
    """A bulk string whose end never comes: reading stops at the cap, whatever follows."""
    chunks = iter([b"*1\r\n$1048576\r\n", *([b"x" * 65536] * 10_000)])
    reader = ReplyReader(lambda: next(chunks), Limits(reply_bytes=512 * 1024))
    with pytest.raises(ProtocolError, match="replies over 524288 bytes"):
        reader.read()


def test_an_error_reply_and_a_closed_connection() -> None:
    with pytest.raises(ServerError, match="WRONGPASS invalid"):
        _reader(b"-WRONGPASS invalid username-password pair\r\n").read()
    with pytest.raises(ConnectionClosed):
        _reader(b"$5\r\nhel").read()
    reader = _reader(b"+OK\r\n+OK\r\n")
    reader.read()
    with pytest.raises(ProtocolError, match="more than the replies asked for"):
        reader.finish()


def test_commands_are_arrays_of_bulk_strings() -> None:
    command = resp.set_value(b"k", b"v\r\n", milliseconds=5000, only_if_absent=True)
    assert command.encoded() == (
        b"*6\r\n$3\r\nSET\r\n$1\r\nk\r\n$3\r\nv\r\n\r\n$2\r\nPX\r\n$4\r\n5000\r\n$2\r\nNX\r\n"
    )
    assert resp.auth("pw", "user").arguments == (b"user", b"pw")
    assert resp.auth("pw").arguments == (b"pw",)


def _accepts(command: resp.Command[object], reply: Reply) -> object:
    return command.expect(reply)


SHAPES: list[tuple[resp.Command[object], Reply, object]] = [
    (resp.mget([b"a", b"b"]), [b"1", None], [b"1", None]),
    (resp.get(b"a"), None, None),
    (resp.get(b"a"), b"x", b"x"),
    (resp.set_value(b"a", b"1"), "OK", True),
    (resp.set_value(b"a", b"1", only_if_absent=True), None, False),
    (resp.exists(b"a"), 1, 1),
    (resp.delete([b"a"]), 0, 0),
    (resp.scan(b"0", b"k*", 10), [b"17", [b"k1", b"\xff"]], (b"17", [b"k1", b"\xff"])),
    (resp.select(1), "OK", None),
]


@pytest.mark.parametrize(("command", "reply", "expected"), SHAPES)
def test_each_command_accepts_its_reply_shape(
    command: resp.Command[object], reply: Reply, expected: object
) -> None:
    assert _accepts(command, reply) == expected


WRONG_SHAPES: list[tuple[resp.Command[object], Reply, str]] = [
    (resp.mget([b"a", b"b"]), 1, "MGET answered an integer, not an array of 2"),
    (resp.mget([b"a", b"b"]), [b"1"], "MGET answered an array of 1, not an array of 2"),
    (resp.mget([b"a", b"b"]), [[b"x"], [b"y"]], "MGET answered an array of 1 for a key"),
    (resp.mget([b"a"]), None, "MGET answered nil"),
    (resp.get(b"a"), [b"x"], "GET answered an array of 1"),
    (resp.get(b"a"), 3, "GET answered an integer"),
    (resp.set_value(b"a", b"1"), None, "SET answered nil"),
    (resp.set_value(b"a", b"1"), b"OK", "SET answered a bulk string"),
    (resp.exists(b"a"), b"1", "EXISTS answered a bulk string"),
    (resp.scan(b"0", b"k*", 10), [b"x", []], "SCAN answered an array of 2"),
    (resp.scan(b"0", b"k*", 10), [b"0", [1]], "SCAN answered"),
    (resp.auth("pw"), "QUEUED", "AUTH answered a status, not OK"),
]


@pytest.mark.parametrize(("command", "reply", "message"), WRONG_SHAPES)
def test_a_reply_of_another_shape_is_a_protocol_error(
    command: resp.Command[object], reply: Reply, message: str
) -> None:
    with pytest.raises(ProtocolError, match=message):
        command.expect(reply)
