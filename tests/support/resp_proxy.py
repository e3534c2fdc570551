"""A loopback proxy in front of a real redis-server that rewrites its replies, for the faults a
real server cannot be made to produce. Commands are read one at a time (pipelines too) and
passed to the server; its reply goes back as it came, unless the fault says otherwise:

- ``drip``: every reply goes back one byte every 0.3 s (a server that is slow, not silent);
- ``endless-array``: MGET is answered ``*1000000000`` and nil elements for as long as the
  client reads;
- ``mget-integer``: MGET is answered by an integer (``:1``);
- ``mget-nested``: MGET is answered by an array of as many elements as keys asked, each an
  array;
- ``slow``: every reply goes back whole, :data:`SLOW_REPLY` seconds late (just under the
  client's 0.5 s deadline per operation);
- ``endless-scan``: SCAN is answered, :data:`SCAN_PAGE_DELAY` seconds late, with a page of no
  keys and a cursor that never comes back to 0.

Only MGET is rewritten by ``endless-array``, ``mget-integer`` and ``mget-nested``, only SCAN
by ``endless-scan``: the other commands reach the real server.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from typing import BinaryIO

FAULTS = ("drip", "endless-array", "mget-integer", "mget-nested", "slow", "endless-scan")
DRIP_INTERVAL = 0.3
SLOW_REPLY = 0.4
SCAN_PAGE_DELAY = 0.05


class RespFaultProxy:
    def __init__(self, upstream_port: int, fault: str) -> None:
        assert fault in FAULTS, fault
        self.upstream_port = upstream_port
        self.fault = fault
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self._listener.getsockname()[1]
        self._stopped = threading.Event()
        self._connections: list[socket.socket] = []
        self._lock = threading.Lock()

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> RespFaultProxy:
        threading.Thread(target=self._accept, name="resp-proxy", daemon=True).start()
        return self

    def stop(self) -> None:
        self._stopped.set()
        with contextlib.suppress(OSError):
            self._listener.close()
        with self._lock:
            for connection in self._connections:
                with contextlib.suppress(OSError):
                    connection.close()

    def __enter__(self) -> RespFaultProxy:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def _accept(self) -> None:
        while not self._stopped.is_set():
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(client,), daemon=True).start()

    def _serve(self, client: socket.socket) -> None:
        upstream = socket.create_connection(("127.0.0.1", self.upstream_port))
        with self._lock:
            self._connections += [client, upstream]
        requests, replies = client.makefile("rb"), upstream.makefile("rb")
        try:
            while not self._stopped.is_set():
                command, raw = _read_command(requests)
                if command is None:
                    return
                if command[0].upper() == b"MGET" and self.fault in (
                    "endless-array",
                    "mget-integer",
                    "mget-nested",
                ):
                    self._rewrite_mget(client, len(command) - 1)
                    continue
                if command[0].upper() == b"SCAN" and self.fault == "endless-scan":
                    time.sleep(SCAN_PAGE_DELAY)
                    client.sendall(b"*2\r\n$1\r\n1\r\n*0\r\n")
                    continue
                upstream.sendall(raw)
                reply = _read_reply(replies)
                if self.fault == "drip":
                    for byte in reply:
                        client.sendall(bytes([byte]))
                        time.sleep(DRIP_INTERVAL)
                elif self.fault == "slow":
                    time.sleep(SLOW_REPLY)
                    client.sendall(reply)
                else:
                    client.sendall(reply)
        except OSError:
            return  # the client went away
        finally:
            for connection in (client, upstream):
                with contextlib.suppress(OSError):
                    connection.close()

    def _rewrite_mget(self, client: socket.socket, keys: int) -> None:
        if self.fault == "mget-integer":
            client.sendall(b":1\r\n")
        elif self.fault == "mget-nested":
            client.sendall(b"*%d\r\n" % keys + b"*1\r\n$1\r\nx\r\n" * keys)
        else:
            client.sendall(b"*1000000000\r\n")
            nils = b"$-1\r\n" * 10_000
            while not self._stopped.is_set():
                client.sendall(nils)


def _read_command(stream: BinaryIO) -> tuple[list[bytes] | None, bytes]:
    header = stream.readline()
    if not header:
        return None, b""
    assert header.startswith(b"*"), header
    raw, arguments = [header], []
    for _ in range(int(header[1:])):
        length_line = stream.readline()
        data = stream.read(int(length_line[1:]) + 2)
        raw += [length_line, data]
        arguments.append(data[:-2])
    return arguments, b"".join(raw)


def _read_reply(stream: BinaryIO) -> bytes:
    """One whole reply, RESP2 or RESP3 (redis-py 8 speaks RESP3 after HELLO 3)."""
    line = stream.readline()
    if not line:
        raise OSError("the server closed the connection")
    kind, count = line[:1], line[1:].strip()
    if kind in b"$=!" and int(count) >= 0:  # bulk string, verbatim string, bulk error
        return line + stream.read(int(count) + 2)
    if kind in b"*~>" and int(count) > 0:  # array, set, push
        return line + b"".join(_read_reply(stream) for _ in range(int(count)))
    if kind in b"%|" and int(count) > 0:  # map, attribute: keys and values
        return line + b"".join(_read_reply(stream) for _ in range(2 * int(count)))
    return line
