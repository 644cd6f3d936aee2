"""The proxy's life on its event loop: listen, accept a client, connect it upstream, pump
both directions frame by frame through the protocol, close everything.

Every method here runs on the proxy's event loop (not thread-safe). A protocol subclasses
:class:`ProxyServer`: it makes its connections (:meth:`ProxyServer._new_connection`) and
decides about each frame (:meth:`ProxyServer._on_unit`); the server never looks inside a
frame. Every wait is bounded: the upstream connect, a drain, the close.
"""

from __future__ import annotations

import abc
import asyncio
import contextlib
import logging
import socket
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from adapters.loop_thread import LoopThreadErrors, listen, wait_server_closed
from adapters.proxycore.codec import Codec
from adapters.proxycore.connection import Connection

log = logging.getLogger(__name__)

Unit = TypeVar("Unit")
Conn = TypeVar("Conn", bound=Connection)

DEFAULT_CONNECT_TIMEOUT = 5.0
READ_CHUNK = 256 * 1024
#: Above this many unsent bytes toward a side, the pump waits (bounded) for them to drain.
HIGH_WATER = 4 * 1024 * 1024
_DRAIN_TIMEOUT = 10.0
#: How long a close lets connection tasks end on their own before cancelling them.
_CLOSE_GRACE = 2.0


@dataclass(frozen=True)
class Sides:
    """How messages name the peers: the client side, the server side, and the server when it
    cannot be reached ("bookie", "ZooKeeper")."""

    client: str
    server: str
    target: str


@dataclass(frozen=True)
class Route:
    """Where a listener's connections go, and what the protocol calls that way (a quorum
    link; None when a proxy has one route)."""

    host: str
    port: int
    label: Any = None


class ProxyServer(abc.ABC, Generic[Unit, Conn]):
    """A TCP proxy on the running loop: listeners, connections, their pumps; a protocol adds
    what it does with each frame."""

    def __init__(
        self,
        codec: Codec[Unit],
        *,
        who: str,
        errors: LoopThreadErrors,
        sides: Sides,
        connect_timeout: float = DEFAULT_CONNECT_TIMEOUT,
        high_water: int = HIGH_WATER,
    ) -> None:
        self.codec = codec
        self.who = who
        self.errors = errors
        self.sides = sides
        self.connect_timeout = connect_timeout
        self.high_water = high_water
        self._servers: list[asyncio.Server] = []
        self._connections: dict[int, Conn] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self._closed = False

    # -- for the protocol ----------------------------------------------------------------------

    @abc.abstractmethod
    def _new_connection(self, client: asyncio.StreamWriter, peer: str, route: Route) -> Conn:
        """A new client connection (logged, if the protocol logs them)."""

    @abc.abstractmethod
    def _on_unit(self, connection: Conn, to_server: bool, unit: Unit) -> None:
        """Decide about one frame the codec split off (forward, hold, drop...)."""

    def _on_accepted(self, connection: Conn) -> None:
        """A connection was accepted (before its upstream is connected)."""

    def _on_read(self, connection: Conn, to_server: bool) -> None:
        """Bytes were read from one side (before they are split)."""

    def _on_closed(self, connection: Conn, lost: str) -> None:
        """A connection closed: what it still keeps unsent is lost, for reason ``lost``."""

    def _on_close(self) -> None:
        """The proxy closes (its connections are closed already): let go of the rest."""

    # -- lifecycle -----------------------------------------------------------------------------

    @property
    def closed(self) -> bool:
        return self._closed

    def _check_open(self) -> None:
        if self._closed:
            raise self.errors.closed(f"{self.who} is closed")

    async def _listen(self, host: str, port: int, route: Route) -> asyncio.Server:
        """Listen on ``host:port`` (0: a free port) for connections to ``route``."""
        server = await listen(
            self._acceptor(route), host, port, limit=READ_CHUNK, error=self.errors.start,
            who=self.who,
        )  # fmt: skip
        self._servers.append(server)
        return server

    async def _serve(self, listener: socket.socket, route: Route) -> asyncio.Server:
        """Serve ``route`` on a socket already listening."""
        server = await asyncio.start_server(self._acceptor(route), sock=listener, limit=READ_CHUNK)
        self._servers.append(server)
        return server

    async def close(self) -> None:
        """Stop listening, close every connection, let go of what waits; idempotent."""
        if self._closed:
            return
        self._closed = True
        for server in self._servers:
            server.close()
        for connection in list(self._connections.values()):
            self._close_connection(connection, None, lost="proxy closed")
        self._on_close()
        # Closed transports end their connections' tasks a loop turn or two later; cancel only
        # what is still running after that (a cancelled connection task is noise on 3.11).
        tasks = list(self._tasks)
        if tasks:
            _, running = await asyncio.wait(tasks, timeout=_CLOSE_GRACE)
            for task in running:
                task.cancel()
            await asyncio.gather(*running, return_exceptions=True)
        for server in self._servers:
            await wait_server_closed(server)

    @property
    def open_connections(self) -> int:
        return sum(1 for c in self._connections.values() if not c.closed)

    def _close_connection(
        self,
        connection: Conn,
        error: str | None,
        *,
        reset: bool = False,
        lost: str = "connection closed",
    ) -> None:
        if connection.close(error, reset=reset):
            self._on_closed(connection, lost)

    def _track(self, task: asyncio.Task[None]) -> None:
        """Keep ``task`` until it ends (a close waits for it, then cancels it)."""
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    # -- one connection ----------------------------------------------------------------------------

    def _acceptor(
        self, route: Route
    ) -> Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]:
        async def accept(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            await self._accept(route, reader, writer)

        return accept

    async def _accept(
        self, route: Route, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        peer = writer.get_extra_info("peername")
        connection = self._new_connection(writer, f"{peer[0]}:{peer[1]}", route)
        self._connections[connection.id] = connection
        self._on_accepted(connection)
        try:
            if self._closed:
                self._close_connection(connection, "proxy closed")
                return
            try:
                async with asyncio.timeout(self.connect_timeout):
                    up_reader, connection.upstream = await asyncio.open_connection(
                        route.host, route.port, limit=READ_CHUNK
                    )
            except (OSError, TimeoutError) as exc:
                detail = "timed out" if isinstance(exc, TimeoutError) else str(exc)
                self._close_connection(
                    connection,
                    f"cannot reach {self.sides.target} {route.host}:{route.port}: {detail}",
                )
                return
            await asyncio.gather(
                self._pump(connection, True, reader), self._pump(connection, False, up_reader)
            )
        except asyncio.CancelledError:
            # Only close() cancels, and only a connection that outlived it: end quietly (the
            # server's done-callback would report a cancelled connection task as an error).
            if not self._closed:
                raise
        finally:
            self._close_connection(connection, None)
            with contextlib.suppress(OSError, TimeoutError, asyncio.CancelledError):
                async with asyncio.timeout(1.0):
                    await writer.wait_closed()
            self._tasks.discard(task)

    async def _pump(self, connection: Conn, to_server: bool, reader: asyncio.StreamReader) -> None:
        splitter = self.codec.splitter()
        source = self.sides.client if to_server else self.sides.server
        try:
            while not connection.closed:
                data = await reader.read(READ_CHUNK)
                if not data:
                    self._close_connection(connection, None)
                    return
                self._on_read(connection, to_server)
                try:
                    units = splitter.feed(data)
                except self.codec.errors as exc:
                    log.warning("%s conn %d: %s", self.who, connection.id, exc)
                    self._close_connection(
                        connection, f"malformed {self.codec.malformed} from the {source}: {exc}"
                    )
                    return
                for unit in units:
                    self._on_unit(connection, to_server, unit)
                writer = connection.writer(to_server)
                if (
                    writer is not None
                    and writer.transport.get_write_buffer_size() > self.high_water
                ):
                    async with asyncio.timeout(_DRAIN_TIMEOUT):
                        await writer.drain()
        except (ConnectionError, OSError, TimeoutError) as exc:
            self._close_connection(connection, f"{source} side failed: {exc!r}")


__all__ = ["DEFAULT_CONNECT_TIMEOUT", "ProxyServer", "Route", "Sides"]
