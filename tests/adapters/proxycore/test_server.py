"""The proxy server with a minimal protocol on it: bytes forwarded as they came, a held frame
holding its direction in order, a malformed stream or an unreachable server closing the
connection, and a close that leaves nothing behind. Every wait here is bounded."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import pytest

from adapters.loop_thread import LoopThreadErrors
from adapters.proxycore.codec import Codec, LengthPrefixedSplitter, with_length
from adapters.proxycore.connection import Connection
from adapters.proxycore.pending import Lane, Pending
from adapters.proxycore.records import DeliveryRecord, RecordLog
from adapters.proxycore.server import ProxyServer, Route, Sides

WAIT = 5.0


class Closed(Exception):
    pass


class Late(TimeoutError):
    pass


class StartFailed(Exception):
    pass


class BadLength(ValueError):
    pass


@dataclass
class Seen:
    record_id: int
    to_server: bool
    payload: bytes


@dataclass
class Ended:
    closed_at: float | None = None
    error: str | None = None


class _Connection(Connection):
    def __init__(self, connection_id: int, client: asyncio.StreamWriter) -> None:
        self.ended = Ended()
        super().__init__(connection_id, client, self.ended)
        self.requests: Lane[Seen, _Connection] = Lane()


class HoldingProxy(ProxyServer[bytes, _Connection]):
    """Holds the client's frames that start with ``H``; the rest wait behind a held one."""

    def __init__(self) -> None:
        codec = Codec(
            lambda: LengthPrefixedSplitter(64, lambda n, m: BadLength(f"{n} > {m}")),
            (BadLength,),
            "length",
        )
        super().__init__(
            codec, who="the test proxy", sides=Sides("client", "server", "the server"),
            errors=LoopThreadErrors(Closed, Late, StartFailed), connect_timeout=1.0,
        )  # fmt: skip
        self.log: RecordLog[Seen, Ended] = RecordLog()
        self.held: dict[int, Pending[Seen, _Connection]] = {}

    def _new_connection(self, client: asyncio.StreamWriter, peer: str, route: Route) -> _Connection:
        connection = _Connection(self.log.next_connection_id(), client)
        self.log.add_connection(connection.ended)
        return connection

    def _on_unit(self, connection: _Connection, to_server: bool, unit: bytes) -> None:
        record = self.log.add(lambda record_id: Seen(record_id, to_server, unit))
        pending = Pending(record, with_length(unit), connection)
        if not to_server:
            connection.client.write(pending.raw)
            return
        if unit.startswith(b"H"):
            pending.hold = "held"
            self.held[record.record_id] = pending
        if pending.hold is None and not connection.requests.must_wait():
            self._send(pending)
        else:
            connection.requests.queue.append(pending)

    def release(self, record_id: int) -> None:
        pending = self.held.pop(record_id)
        pending.hold = None
        for ready in pending.connection.requests.ready():
            self._send(ready)

    def _send(self, pending: Pending[Seen, _Connection]) -> None:
        upstream = pending.connection.upstream
        assert upstream is not None
        upstream.write(pending.raw)
        self.log.add_delivery(DeliveryRecord(pending.record.record_id, time.monotonic(), True))

    def _on_closed(self, connection: _Connection, lost: str) -> None:
        for pending in connection.requests.drain():
            self.held.pop(pending.record.record_id, None)
            record_id = pending.record.record_id
            self.log.add_delivery(DeliveryRecord(record_id, time.monotonic(), False, lost))


async def echo(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    while data := await reader.read(1024):
        writer.write(data)
    writer.close()


def run(test: Callable[[HoldingProxy, int], Awaitable[None]], *, upstream: bool = True) -> None:
    async def scenario() -> None:
        server = await asyncio.start_server(echo, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        if not upstream:
            server.close()
            await server.wait_closed()
        proxy = HoldingProxy()
        listening = await proxy._listen("127.0.0.1", 0, Route("127.0.0.1", port))
        try:
            async with asyncio.timeout(WAIT):
                await test(proxy, listening.sockets[0].getsockname()[1])
        finally:
            await proxy.close()
            server.close()
        assert proxy.open_connections == 0 and proxy._tasks == set()

    asyncio.run(scenario())


async def read_frames(reader: asyncio.StreamReader, count: int) -> list[bytes]:
    frames = []
    for _ in range(count):
        length = int.from_bytes(await reader.readexactly(4), "big")
        frames.append(await reader.readexactly(length))
    return frames


async def until(condition: Callable[[], bool]) -> None:
    while not condition():
        await asyncio.sleep(0.005)


def test_frames_go_through_byte_for_byte_and_are_logged() -> None:
    async def test(proxy: HoldingProxy, port: int) -> None:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        stream = with_length(b"one") + with_length(b"two")
        writer.write(stream[:5])  # a frame split across reads
        await asyncio.sleep(0.01)
        writer.write(stream[5:])
        assert await read_frames(reader, 2) == [b"one", b"two"]
        await until(lambda: len(proxy.log.records) == 4)
        assert [(s.to_server, s.payload) for s in proxy.log.records] == [
            (True, b"one"), (True, b"two"), (False, b"one"), (False, b"two"),
        ]  # fmt: skip
        writer.close()

    run(test)


def test_a_held_frame_holds_its_direction_and_the_rest_follow_in_order() -> None:
    async def test(proxy: HoldingProxy, port: int) -> None:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        for payload in (b"a", b"H1", b"b", b"H2", b"c"):
            writer.write(with_length(payload))
        assert await read_frames(reader, 1) == [b"a"]
        await until(lambda: len(proxy.held) == 2)
        assert [p.record.payload for p in proxy.held.values()] == [b"H1", b"H2"]
        proxy.release(4)  # the later hold, released first: still behind the earlier
        await asyncio.sleep(0.05)
        assert reader.at_eof() is False and not reader._buffer  # nothing more came
        proxy.release(2)
        assert await read_frames(reader, 4) == [b"H1", b"b", b"H2", b"c"]
        writer.close()

    run(test)


def test_a_closed_proxy_loses_what_it_held_and_refuses_to_go_on() -> None:
    holder: list[HoldingProxy] = []

    async def test(proxy: HoldingProxy, port: int) -> None:
        holder.append(proxy)
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(with_length(b"Hx") + with_length(b"y"))
        await until(lambda: len(proxy.log.records) == 2)
        await proxy.close()
        await proxy.close()  # idempotent
        assert await reader.read() == b""  # the client sees its connection end
        with pytest.raises(Closed):
            proxy._check_open()

    run(test)
    deliveries = holder[0].log.deliveries
    assert [(d.record_id, d.delivered, d.reason) for d in deliveries.values()] == [
        (1, False, "proxy closed"), (2, False, "proxy closed"),
    ]  # fmt: skip
    assert holder[0].log.connections[0].closed_at is not None


def test_a_malformed_length_closes_the_connection_naming_it() -> None:
    async def test(proxy: HoldingProxy, port: int) -> None:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write((1000).to_bytes(4, "big"))
        assert await reader.read() == b""
        error = proxy.log.connections[0].error
        assert error == "malformed length from the client: 1000 > 64"
        writer.close()

    run(test)


def test_an_unreachable_server_closes_the_client_connection() -> None:
    async def test(proxy: HoldingProxy, port: int) -> None:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        assert await reader.read() == b""
        error = proxy.log.connections[0].error
        assert error is not None and error.startswith("cannot reach the server 127.0.0.1:")
        writer.close()

    run(test, upstream=False)
