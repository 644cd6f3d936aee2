"""A stand-in ZooKeeper server and a raw client for the proxy's fast tests (no JVM).

The server answers as ZooKeeper does where the proxy cares: the handshake (a new session, a
resumed one, or "expired" for a session closed earlier), each request in order with its xid,
a Stat or created path where the real one sends them, and closeSession (the session ends,
the connection closes). It records the requests it received, in order, per connection.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import socket
import struct
import threading
import time
from dataclasses import dataclass
from types import TracebackType

from adapters.zkproxy.framing import PacketSplitter
from adapters.zkproxy.jute import JuteReader
from tests.adapters.zkproxy.jute_bytes import (
    boolean,
    buffer,
    framed,
    i32,
    i64,
    reply_header,
    request_header,
    stat,
    ustring,
)

SESSION_TIMEOUT_MS = 6000


@dataclass(frozen=True)
class Received:
    connection: int
    xid: int
    op_code: int
    at: float


class FakeZooKeeper:
    """``with FakeZooKeeper() as server: server.port``; stopped (thread joined) on exit."""

    def __init__(self) -> None:
        self.received: list[Received] = []
        self.closed_sessions: set[int] = set()
        #: Seconds to wait before carrying out a closeSession (to widen an expiry's window).
        self.close_session_delay = 0.0
        #: Set when a closeSession arrives (before its delay).
        self.close_requested = threading.Event()
        self._session_ids = itertools.count(0x100)
        self._connection_ids = itertools.count(1)
        self._zxid = itertools.count(1)
        self._lock = threading.Lock()
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="fake-zookeeper")
        self._server: asyncio.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()
        self.port = 0

    def __enter__(self) -> FakeZooKeeper:
        self._thread.start()
        future = asyncio.run_coroutine_threadsafe(self._start(), self._loop)
        self.port = future.result(5)
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        asyncio.run_coroutine_threadsafe(self._stop(), self._loop).result(5)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5)
        self._loop.close()

    def requests(self, connection: int | None = None) -> list[Received]:
        with self._lock:
            return [r for r in self.received if connection is None or r.connection == connection]

    def wait_for_requests(self, count: int, timeout: float = 5.0) -> list[Received]:
        deadline = time.monotonic() + timeout
        while len(self.requests()) < count and time.monotonic() < deadline:
            time.sleep(0.01)
        return self.requests()

    async def _start(self) -> int:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        return int(self._server.sockets[0].getsockname()[1])

    async def _stop(self) -> None:
        assert self._server is not None
        self._server.close()
        for writer in list(self._writers):
            writer.close()
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(2):
                await self._server.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._writers.add(writer)
        connection = next(self._connection_ids)
        splitter = PacketSplitter()
        session: int | None = None
        try:
            while data := await reader.read(65536):
                for payload in splitter.feed(data):
                    if session is None:
                        session = self._handshake(payload, writer)
                        if session is None:
                            return
                        continue
                    if payload[4:8] == i32(-11):
                        self.close_requested.set()
                        await asyncio.sleep(self.close_session_delay)
                    if not self._answer(connection, session, payload, writer):
                        return
                await writer.drain()
        except (ConnectionError, OSError):
            pass
        finally:
            self._writers.discard(writer)
            writer.close()

    def _handshake(self, payload: bytes, writer: asyncio.StreamWriter) -> int | None:
        reader = JuteReader(payload)
        reader.read_int()
        reader.read_long()
        reader.read_int()
        asked = reader.read_long()
        if asked in self.closed_sessions:
            writer.write(framed(i32(0) + i32(0) + i64(0) + buffer(bytes(16)) + boolean(False)))
            return None
        session = asked or next(self._session_ids)
        passwd = session.to_bytes(16, "big")
        writer.write(
            framed(i32(0) + i32(SESSION_TIMEOUT_MS) + i64(session) + buffer(passwd) + b"\0")
        )
        return session

    def _answer(
        self, connection: int, session: int, payload: bytes, writer: asyncio.StreamWriter
    ) -> bool:
        reader = JuteReader(payload)
        xid, code = reader.read_int(), reader.read_int()
        with self._lock:
            self.received.append(Received(connection, xid, code, time.monotonic()))
        zxid = next(self._zxid)
        if code == -11:  # closeSession
            self.closed_sessions.add(session)
            writer.write(framed(reply_header(xid, zxid, 0)))
            return False
        body = b""
        if code in (3, 5):  # exists, setData: Stat
            body = stat(version=1, mzxid=zxid)
        elif code == 4:  # getData: data, Stat
            body = buffer(b"data") + stat(version=1, mzxid=zxid)
        elif code == 1:  # create: the path
            body = ustring(reader.read_ustring() or "")
        writer.write(framed(reply_header(xid, zxid, 0) + body))
        return True


class RawClient:
    """A blocking client speaking the protocol by hand (every read bounded)."""

    def __init__(self, address: tuple[str, int], timeout: float = 5.0) -> None:
        self.sock = socket.create_connection(address, timeout=timeout)
        self.sock.settimeout(timeout)
        self._splitter = PacketSplitter()
        self._ready: list[bytes] = []
        self.session_id = 0
        self.timeout_ms = 0

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> RawClient:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def connect(self, session_id: int = 0, passwd: bytes = bytes(16)) -> int:
        """The handshake; returns the negotiated timeout (0: the session is expired)."""
        self.send_payload(
            i32(0) + i64(0) + i32(SESSION_TIMEOUT_MS) + i64(session_id) + buffer(passwd) + b"\0"
        )
        reader = JuteReader(self.read_packet())
        reader.read_int()
        self.timeout_ms = reader.read_int()
        self.session_id = reader.read_long()
        return self.timeout_ms

    def send_payload(self, payload: bytes) -> None:
        self.sock.sendall(framed(payload))

    def send(self, xid: int, op_code: int, body: bytes = b"") -> None:
        self.send_payload(request_header(xid, op_code) + body)

    def get_data(self, xid: int, path: str) -> None:
        self.send(xid, 4, ustring(path) + boolean(False))

    def set_data(self, xid: int, path: str, data: bytes = b"x", version: int = -1) -> None:
        self.send(xid, 5, ustring(path) + buffer(data) + i32(version))

    def ping(self) -> None:
        self.send(-2, 11)

    def read_packet(self, timeout: float | None = None) -> bytes:
        if timeout is not None:
            self.sock.settimeout(timeout)
        while not self._ready:
            data = self.sock.recv(65536)
            if not data:
                raise ConnectionResetError("the proxy closed the connection")
            self._ready.extend(self._splitter.feed(data))
        return self._ready.pop(0)

    def read_reply(self, timeout: float | None = None) -> tuple[int, int, int]:
        """The next reply's ``(xid, zxid, err)``."""
        xid, zxid, err = struct.unpack(">iqi", self.read_packet(timeout)[:16])
        return xid, zxid, err

    def nothing_arrives(self, within: float) -> bool:
        try:
            self.read_packet(within)
        except TimeoutError:
            return True
        return False
