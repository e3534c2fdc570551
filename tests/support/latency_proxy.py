"""A TCP proxy on 127.0.0.1 that adds network latency in front of a real server.

Each direction delays every chunk by half the round-trip time (latency, not bandwidth: chunks
in flight overlap), and a new connection waits one round trip before its first byte goes
through, as a TCP handshake would. Used by the benchmarks to put a real registry "50 ms away".
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from dataclasses import dataclass, field


@dataclass
class ProxyStats:
    connections: int = 0
    bytes_up: int = 0
    bytes_down: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)


class LatencyProxy:
    def __init__(self, upstream_host: str, upstream_port: int, rtt: float) -> None:
        self.upstream = (upstream_host, upstream_port)
        self.rtt = rtt
        self.stats = ProxyStats()
        self.port = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._server: asyncio.base_events.Server | None = None
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()

    @property
    def host(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self) -> LatencyProxy:
        self._thread = threading.Thread(target=self._run, name="latency-proxy", daemon=True)
        self._thread.start()
        if not self._ready.wait(10):
            raise RuntimeError("latency proxy did not start")
        return self

    def _run(self) -> None:
        self._loop = asyncio.new_event_loop()
        self._loop.run_until_complete(self._serve())
        self._ready.set()
        self._loop.run_forever()

    async def _serve(self) -> None:
        self._server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]

    async def _handle(
        self, client_reader: asyncio.StreamReader, client_writer: asyncio.StreamWriter
    ) -> None:
        # Cancelled only at shutdown: end quietly (asyncio logs a connection callback whose
        # task ended cancelled).
        with contextlib.suppress(asyncio.CancelledError):
            await self._relay(client_reader, client_writer)

    async def _relay(
        self, client_reader: asyncio.StreamReader, client_writer: asyncio.StreamWriter
    ) -> None:
        with self.stats._lock:
            self.stats.connections += 1
        await asyncio.sleep(self.rtt)  # the handshake
        try:
            upstream_reader, upstream_writer = await asyncio.open_connection(*self.upstream)
        except OSError:
            client_writer.close()
            return
        up = asyncio.create_task(self._pipe(client_reader, upstream_writer, up=True))
        down = asyncio.create_task(self._pipe(upstream_reader, client_writer, up=False))
        try:
            await asyncio.wait({up, down}, return_when=asyncio.FIRST_COMPLETED)
            await asyncio.sleep(self.rtt)
        finally:
            for task in (up, down):
                task.cancel()
            await asyncio.gather(up, down, return_exceptions=True)
        for writer in (upstream_writer, client_writer):
            with contextlib.suppress(Exception):
                writer.close()

    async def _pipe(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, *, up: bool
    ) -> None:
        queue: asyncio.Queue[tuple[float, bytes]] = asyncio.Queue()

        async def deliver() -> None:
            while True:
                due, chunk = await queue.get()
                if not chunk:
                    with contextlib.suppress(Exception):
                        writer.write_eof()
                    return
                delay = due - time.monotonic()
                if delay > 0:
                    await asyncio.sleep(delay)
                writer.write(chunk)
                await writer.drain()

        sender = asyncio.create_task(deliver())
        try:
            while True:
                chunk = await reader.read(65536)
                with self.stats._lock:
                    if up:
                        self.stats.bytes_up += len(chunk)
                    else:
                        self.stats.bytes_down += len(chunk)
                await queue.put((time.monotonic() + self.rtt / 2, chunk))
                if not chunk:
                    break
            await sender
        except (ConnectionError, asyncio.CancelledError):
            sender.cancel()
            with contextlib.suppress(asyncio.CancelledError, ConnectionError):
                await sender
            raise

    def stop(self) -> None:
        if self._loop is None:
            return
        loop = self._loop

        async def shutdown() -> None:
            if self._server is not None:
                self._server.close()
            current = asyncio.current_task()
            tasks = [task for task in asyncio.all_tasks() if task is not current]
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

        asyncio.run_coroutine_threadsafe(shutdown(), loop).result(5)
        loop.call_soon_threadsafe(loop.stop)
        if self._thread is not None:
            self._thread.join(5)
        loop.close()

    def __enter__(self) -> LatencyProxy:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()
