"""A small Redis (or Valkey) client for the shared cache level: the address in a URL, and one
connection that runs commands and pipelines of them, each operation within one deadline.

Why not redis-py: its timeout is per socket read, so a server that sends a byte every 0.3 s
held a run for ever, and its parser reads whatever array length it is sent (an endless
``*1000000000`` grew a run to 413 MB in 15 s). Here each operation (a command, or a pipeline:
sent together, replies read together) has one deadline that every send and receive is given
the time left of, and its replies are read within :class:`~kmultiarch.resolve.resp.Limits`.
Connecting (address lookup, TCP, TLS, ``AUTH``, ``SELECT``) is an operation of its own.

URLs are redis-py's: ``redis://[[user]:password@]host[:port][/db]``, ``rediss://`` (TLS,
verified against the system's CAs or a CA file, host name checked), ``unix:///path`` (the
database in ``?db=N``); ``?password=``, ``?username=`` and ``?db=`` in the query, as redis-py
reads them. A URL is checked whole before anything connects: :class:`InvalidCacheUrl` says
what is wrong with it and never quotes a credential.
"""

from __future__ import annotations

import contextlib
import ipaddress
import re
import socket
import ssl
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar
from urllib.parse import parse_qsl, unquote

from kmultiarch.resolve.resp import (
    Command,
    ConnectionClosed,
    DeadlineExceeded,
    Limits,
    ReplyReader,
    TransportError,
    auth,
    select,
)

SCHEMES = ("redis", "rediss", "unix")
DEFAULT_PORT = 6379
#: Connect and operation deadlines (seconds): well under a second, so a cache never slows a run.
TIMEOUT = 0.5
_RECEIVE_SIZE = 64 * 1024
_HOST_NAME = re.compile(r"[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?")
_QUERY_KEYS = frozenset({"db", "password", "username"})
A = TypeVar("A")
B = TypeVar("B")


class InvalidCacheUrl(ValueError):
    """A shared cache URL that cannot name a server; the message says why, without the URL."""


@dataclass(frozen=True)
class RedisAddress:
    """Where the server is, how to log in and which database to use."""

    scheme: str
    host: str = ""
    port: int = DEFAULT_PORT
    #: The socket of a unix:// URL.
    path: str = ""
    database: int = 0
    username: str | None = field(default=None, repr=False)
    password: str | None = field(default=None, repr=False)

    @classmethod
    def parse(cls, url: str) -> RedisAddress:
        scheme, separator, rest = url.partition("://")
        if not separator or scheme not in SCHEMES:
            raise InvalidCacheUrl("it must start with redis://, rediss:// or unix://")
        rest, _, fragment = rest.partition("#")
        if fragment:
            raise InvalidCacheUrl("it has a #fragment")
        rest, _, query_text = rest.partition("?")
        authority, _, path = rest.partition("/")
        userinfo, at, hostport = authority.rpartition("@")
        username, password = _credentials(userinfo if at else None)
        query = _query(query_text)
        if "password" in query:
            if password is not None:
                raise InvalidCacheUrl("it gives a password both before the host and in ?password=")
            password = query["password"]
        if "username" in query:
            if username is not None:
                raise InvalidCacheUrl("it gives a user both before the host and in ?username=")
            username = query["username"]
        if username and password is None:
            raise InvalidCacheUrl(
                "it names a user without a password: write user:password@ (or :password@)"
            )
        if scheme == "unix":
            if hostport:
                raise InvalidCacheUrl("unix:// takes a path, not a host: unix:///path/redis.sock")
            if not path:
                raise InvalidCacheUrl("it names no socket: unix:///path/redis.sock")
            return cls(
                scheme,
                path="/" + unquote(path),
                database=_database(query.get("db", "0")),
                username=username,
                password=password,
            )
        host, port = _host_and_port(hostport)
        # The query's db wins over the path's, as with redis-py.
        database = _database(query.get("db", unquote(path) or "0"))
        return cls(
            scheme, host=host, port=port, database=database, username=username, password=password
        )

    @property
    def shown(self) -> str:
        """The URL without any credential, for messages."""
        if self.scheme == "unix":
            return f"unix://{self.path}" + (f"?db={self.database}" if self.database else "")
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.scheme}://{host}:{self.port}/{self.database}"


def shown_url(url: str) -> str:
    """``url`` without user info or credentials in its query, for messages: its canonical
    form when it is valid, else what is left of it once they are cut (never raises)."""
    try:
        return RedisAddress.parse(url).shown
    except InvalidCacheUrl:
        pass
    scheme, separator, rest = url.partition("://")
    if not separator:
        return "(not a URL)"
    rest, query_mark, _ = rest.partition("?")
    rest = rest.partition("#")[0]
    authority, slash, path = rest.partition("/")
    host = authority.rpartition("@")[2]
    return f"{scheme}://{host}{slash}{path}" + ("?..." if query_mark else "")


def _credentials(userinfo: str | None) -> tuple[str | None, str | None]:
    if not userinfo:
        return None, None
    user, colon, password = userinfo.partition(":")
    if not colon:
        raise InvalidCacheUrl(
            "it has a user name but no password before the host: write user:password@ "
            "(or :password@)"
        )
    return (unquote(user) or None), unquote(password)


def _query(text: str) -> dict[str, str]:
    if not text:
        return {}
    try:
        pairs = parse_qsl(text, keep_blank_values=True, strict_parsing=True)
    except ValueError:
        raise InvalidCacheUrl("its query is not name=value pairs") from None
    query: dict[str, str] = {}
    for name, value in pairs:
        if name not in _QUERY_KEYS:
            raise InvalidCacheUrl(
                f"its query names {name[:40]!r}: kmultiarch reads only db, username and "
                "password there"
            )
        if name in query:
            raise InvalidCacheUrl(f"its query gives {name} twice")
        query[name] = value
    return query


def _host_and_port(hostport: str) -> tuple[str, int]:
    if hostport.startswith("["):
        inside, bracket, after = hostport[1:].partition("]")
        try:
            if not bracket:
                raise ValueError(inside)
            host = str(ipaddress.IPv6Address(unquote(inside)))
        except ValueError:
            raise InvalidCacheUrl(
                "its host in brackets is not an IPv6 address: write redis://[::1]:6379/0"
            ) from None
        if after and not after.startswith(":"):
            raise InvalidCacheUrl("something follows the IPv6 address that is not :port")
        port_text = after[1:] if after else None
    else:
        host, colon, port_text_or_empty = hostport.partition(":")
        port_text = port_text_or_empty if colon else None
        host = unquote(host)
        if not host:
            raise InvalidCacheUrl("it names no host: redis://host:6379/0")
        if not _HOST_NAME.fullmatch(host):
            raise InvalidCacheUrl(
                "its host is not a host name or an address (an IPv6 address goes in brackets)"
            )
    if port_text is None:
        return host, DEFAULT_PORT
    if not (port_text.isdigit() and port_text.isascii() and 1 <= int(port_text) <= 65535):
        raise InvalidCacheUrl(f"its port {port_text[:20]!r} is not a number from 1 to 65535")
    return host, int(port_text)


def _database(text: str) -> int:
    if not (text.isdigit() and text.isascii() and len(text) <= 9):
        raise InvalidCacheUrl(f"its database {text[:20]!r} is not a number (0, 1 ...)")
    return int(text)


class RedisClient:
    """One connection, opened at the first operation, reopened once at once when the server
    closed it (a restart between two operations). Threads may share it: an operation holds its
    lock from the first byte sent to the last byte read."""

    def __init__(
        self,
        address: RedisAddress,
        *,
        timeout: float = TIMEOUT,
        ca: str | None = None,
        limits: Limits | None = None,
    ) -> None:
        self.address = address
        self.timeout = timeout
        self.ca = ca
        self.limits = limits or Limits()
        self._socket: socket.socket | None = None
        self._lock = threading.Lock()

    def run(self, command: Command[A], *, timeout: float | None = None) -> A:
        """The command's reply, within ``timeout`` (the client's when None)."""
        reply: A = self._operation([command], timeout)[0]
        return reply

    def run_pair(
        self, first: Command[A], second: Command[B], *, timeout: float | None = None
    ) -> tuple[A, B]:
        """Two commands in one round trip (a pipeline, not a transaction)."""
        replies = self._operation([first, second], timeout)
        return replies[0], replies[1]

    def close(self) -> None:
        connection, self._socket = self._socket, None
        if connection is not None:
            with contextlib.suppress(OSError):
                connection.close()

    def _operation(self, commands: Sequence[Command[Any]], timeout: float | None) -> list[Any]:
        with self._lock:
            reused = self._socket is not None
            try:
                return self._exchange(
                    commands, retry=reused, timeout=self.timeout if timeout is None else timeout
                )
            except BaseException:
                self.close()
                raise

    def _exchange(
        self, commands: Sequence[Command[Any]], *, retry: bool, timeout: float
    ) -> list[Any]:
        if self._socket is None:
            self._socket = self._connect(timeout)
        deadline = time.monotonic() + timeout
        connection = self._socket
        reader = ReplyReader(lambda: _receive(connection, deadline), self.limits)
        try:
            _send(connection, b"".join(command.encoded() for command in commands), deadline)
            replies = [command.expect(reader.read()) for command in commands]
        except ConnectionClosed:
            if not retry or reader.received:
                raise
            # The server closed a connection that served before (it restarted): once more, at
            # once, on a new one.
            self.close()
            return self._exchange(commands, retry=False, timeout=timeout)
        reader.finish()
        return replies

    def _connect(self, timeout: float) -> socket.socket:
        deadline = time.monotonic() + timeout
        connection = self._open_socket(deadline)
        try:
            if self.address.scheme == "rediss":
                connection = self._tls(connection, deadline)
            setup: list[Command[None]] = []
            if self.address.password is not None:
                setup.append(auth(self.address.password, self.address.username))
            if self.address.database:
                setup.append(select(self.address.database))
            if setup:
                reader = ReplyReader(lambda: _receive(connection, deadline), self.limits)
                _send(connection, b"".join(command.encoded() for command in setup), deadline)
                for command in setup:
                    command.expect(reader.read())
                reader.finish()
        except BaseException:
            with contextlib.suppress(OSError):
                connection.close()
            raise
        return connection

    def _open_socket(self, deadline: float) -> socket.socket:
        if self.address.scheme == "unix":
            connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                connection.settimeout(_left(deadline, "connecting"))
                connection.connect(self.address.path)
            except OSError as exc:
                connection.close()
                raise _transport_error(exc, "connecting") from None
            except BaseException:
                connection.close()
                raise
            return connection
        try:
            addresses = _addresses(self.address.host, self.address.port, deadline)
        except OSError as exc:
            raise _transport_error(exc, "looking up the host") from None
        failure = TransportError("connecting: the host has no address")
        for family, kind, protocol, _, address in addresses:
            connection = socket.socket(family, kind, protocol)
            try:
                connection.settimeout(_left(deadline, "connecting"))
                connection.connect(address)
            except OSError as exc:  # the next address, or this error
                connection.close()
                failure = _transport_error(exc, "connecting")
                if isinstance(failure, DeadlineExceeded):
                    break
                continue
            except BaseException:
                connection.close()
                raise
            connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            return connection
        raise failure

    def _tls(self, connection: socket.socket, deadline: float) -> socket.socket:
        try:
            context = ssl.create_default_context(cafile=self.ca)
        except OSError as exc:
            raise TransportError(
                f"cannot read the CA bundle {self.ca} ({exc.strerror or exc})"
            ) from None
        wrapped = context.wrap_socket(
            connection, server_hostname=self.address.host, do_handshake_on_connect=False
        )
        try:
            wrapped.settimeout(_left(deadline, "the TLS handshake"))
            wrapped.do_handshake()
        except ssl.SSLCertVerificationError as exc:
            raise TransportError(
                f"TLS certificate not trusted ({exc.verify_message or exc.reason}); give the "
                "server's CA with --cache-ca"
            ) from None
        except OSError as exc:
            raise _transport_error(exc, "the TLS handshake") from None
        return wrapped


def _left(deadline: float, doing: str) -> float:
    left = deadline - time.monotonic()
    if left <= 0:
        raise DeadlineExceeded(f"{doing} took longer than the deadline")
    return left


def _send(connection: socket.socket, data: bytes, deadline: float) -> None:
    view = memoryview(data)
    while view:
        try:
            connection.settimeout(_left(deadline, "sending"))
            sent = connection.send(view)
        except OSError as exc:
            raise _transport_error(exc, "sending") from None
        view = view[sent:]


def _receive(connection: socket.socket, deadline: float) -> bytes:
    try:
        connection.settimeout(_left(deadline, "the reply"))
        return connection.recv(_RECEIVE_SIZE)
    except OSError as exc:
        raise _transport_error(exc, "the reply") from None


def _transport_error(exc: OSError, doing: str) -> TransportError:
    """A socket's exception as one of ours: what failed, never the address or a credential."""
    if isinstance(exc, TimeoutError):
        return DeadlineExceeded(f"{doing} took longer than the deadline")
    if isinstance(exc, ConnectionResetError | BrokenPipeError | ConnectionAbortedError):
        return ConnectionClosed("the server closed the connection")
    if isinstance(exc, ssl.SSLError):
        return TransportError(f"TLS failed while {doing} ({exc.reason or exc})")
    return TransportError(f"{doing}: {exc.strerror or type(exc).__name__}")


def _addresses(host: str, port: int, deadline: float) -> list[Any]:
    """The host's addresses, the lookup bounded by the deadline: getaddrinfo cannot be
    interrupted, so a name is looked up in a daemon thread that a slow resolver may keep."""
    try:
        ipaddress.ip_address(host)
    except ValueError:
        pass
    else:
        return socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_NUMERICHOST)
    found: list[Any] = []
    failed: list[BaseException] = []

    def look_up() -> None:
        try:
            found.extend(socket.getaddrinfo(host, port, type=socket.SOCK_STREAM))
        except OSError as exc:
            failed.append(exc)

    lookup = threading.Thread(target=look_up, name="kmultiarch-redis-lookup", daemon=True)
    lookup.start()
    lookup.join(_left(deadline, "looking up the host"))
    if lookup.is_alive():
        raise DeadlineExceeded("looking up the host took longer than the deadline")
    if failed or not found:
        raise TransportError("cannot look up the host name")
    return found
