"""Shared cache URLs (kmultiarch/resolve/redis_client.py): what redis-py accepts, checked before
anything connects, and shown without a credential; and the client's deadline against a local
socket that answers slowly."""

from __future__ import annotations

import socket
import threading
import time

import pytest

from kmultiarch.resolve.redis_client import (
    InvalidCacheUrl,
    RedisAddress,
    RedisClient,
    shown_url,
)
from kmultiarch.resolve.resp import DeadlineExceeded, get

GOOD = [
    ("redis://cache.internal", RedisAddress("redis", "cache.internal", 6379), None, None),
    ("redis://127.0.0.1:6380/2", RedisAddress("redis", "127.0.0.1", 6380, database=2), None, None),
    ("rediss://h:1/0", RedisAddress("rediss", "h", 1), None, None),
    ("redis://:pw@h/1", RedisAddress("redis", "h", database=1), None, "pw"),
    ("redis://u:p%40ss%2F@h", RedisAddress("redis", "h"), "u", "p@ss/"),
    ("redis://h/0?password=q%26p&username=u", RedisAddress("redis", "h"), "u", "q&p"),
    ("redis://h/1?db=3", RedisAddress("redis", "h", database=3), None, None),
    ("redis://[::1]:7000/0", RedisAddress("redis", "::1", 7000), None, None),
    ("redis://[::1]", RedisAddress("redis", "::1"), None, None),
    ("unix:///run/redis.sock", RedisAddress("unix", path="/run/redis.sock"), None, None),
    (
        "unix://:pw@/run/redis.sock?db=4",
        RedisAddress("unix", path="/run/redis.sock", database=4),
        None,
        "pw",
    ),
]


@pytest.mark.parametrize(("url", "address", "username", "password"), GOOD)
def test_urls_redis_py_accepts(
    url: str, address: RedisAddress, username: str | None, password: str | None
) -> None:
    parsed = RedisAddress.parse(url)
    assert (parsed.scheme, parsed.host, parsed.port, parsed.path, parsed.database) == (
        address.scheme,
        address.host,
        address.port,
        address.path,
        address.database,
    )
    assert (parsed.username, parsed.password) == (username, password)
    # The shown form names the same server and holds no credential.
    assert RedisAddress.parse(parsed.shown) == address
    assert "pw" not in parsed.shown and "@" not in parsed.shown and "q&p" not in parsed.shown
    assert "pw" not in repr(parsed)


BAD = [
    ("http://h", "must start with redis://"),
    ("redis://h:99999/0", "port '99999' is not a number from 1 to 65535"),
    ("redis://h:abc/0", "port 'abc'"),
    ("redis://h:0", "port '0'"),
    ("redis://h:/0", "port ''"),
    ("redis://[::1:6379/0", "not an IPv6 address"),
    ("redis://[zz]:6379", "not an IPv6 address"),
    ("redis://[::1]x", "not :port"),
    ("redis://:6379/0", "no host"),
    ("redis://h o/0", "not a host name"),
    ("redis://h/x", "database 'x'"),
    ("redis://h/0/1", "database '0/1'"),
    ("redis://h/0?timeout=1", "kmultiarch reads only db, username and password"),
    ("redis://h/0?db=1&db=2", "gives db twice"),
    ("redis://:a@h/0?password=b", "password both"),
    ("redis://user@h", "user name but no password"),
    ("redis://h/0?username=u", "user without a password"),
    ("redis://h/0#frag", "fragment"),
    ("unix://host/run/redis.sock", "takes a path, not a host"),
    ("unix://", "names no socket"),
]


@pytest.mark.parametrize(("url", "message"), BAD)
def test_urls_that_name_no_server_say_why(url: str, message: str) -> None:
    with pytest.raises(InvalidCacheUrl, match=message.replace("[", r"\[")):
        RedisAddress.parse(url)


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("redis://u:secret@h:99999/0?password=also", "redis://h:99999/0?..."),
        ("redis://:secret@[::1/0", "redis://[::1/0"),
        ("redis://u:se@cret@h/0", "redis://h:6379/0"),
        ("redis://h:6379/0?password=secret", "redis://h:6379/0"),
        ("not a url secret", "(not a URL)"),
    ],
)
def test_a_shown_url_holds_no_credential_even_when_invalid(url: str, shown: str) -> None:
    assert shown_url(url) == shown


def test_an_operation_has_one_deadline_not_one_per_read() -> None:
    """A server that sends one byte every 0.1 s (each read well inside the timeout): the
    operation ends at its deadline."""
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]

    def drip() -> None:
        connection, _ = listener.accept()
        connection.recv(1024)
        for byte in b"$100\r\n" + b"x" * 100:
            try:
                connection.sendall(bytes([byte]))
            except OSError:
                return
            time.sleep(0.1)

    threading.Thread(target=drip, daemon=True).start()
    client = RedisClient(RedisAddress.parse(f"redis://127.0.0.1:{port}"), timeout=0.5)
    started = time.monotonic()
    with pytest.raises(DeadlineExceeded):
        client.run(get(b"k"))
    assert 0.45 < time.monotonic() - started < 0.8
    client.close()
    listener.close()
