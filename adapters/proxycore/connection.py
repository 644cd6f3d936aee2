"""One client connection through a proxy and its upstream connection to the server."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import struct
import time
from typing import Protocol, cast

# SO_LINGER on, 0 s: close() sends an RST and drops unsent data, as a reset connection does.
_LINGER_RESET = struct.pack("ii", 1, 0)


class ConnectionState(Protocol):
    """What a protocol's connection record keeps of a connection's end."""

    closed_at: float | None
    error: str | None


class Connection:
    """A client's connection and its upstream one; a protocol's connection adds its own state
    (a frame describer, a send queue...)."""

    def __init__(
        self, connection_id: int, client: asyncio.StreamWriter, record: ConnectionState | None
    ) -> None:
        self.id = connection_id
        self.client = client
        # StreamWriter types its transport as write-only; a socket's is a full Transport, whose
        # reading side a stall pauses.
        self.client_transport = cast(asyncio.Transport, client.transport)
        self.upstream: asyncio.StreamWriter | None = None
        #: The protocol's record of it in its log (None: the protocol logs no connections).
        self.state = record
        self.closed = False

    def writer(self, to_server: bool) -> asyncio.StreamWriter | None:
        """Where frames going that way are written (None: upstream not connected yet)."""
        return self.upstream if to_server else self.client

    def close(self, error: str | None = None, *, reset: bool = False) -> bool:
        """Close both sides: an orderly FIN after unsent data, or with ``reset`` an RST at once
        (unsent data dropped; the peers read ECONNRESET). False if it was closed already."""
        if self.closed:
            return False
        self.closed = True
        if self.state is not None:
            self.state.closed_at = time.monotonic()
            if error is not None and self.state.error is None:
                self.state.error = error
        for writer in (self.client, self.upstream):
            if writer is None:
                continue
            if reset:
                sock = writer.get_extra_info("socket")
                if sock is not None:
                    with contextlib.suppress(OSError):
                        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, _LINGER_RESET)
                writer.transport.abort()
            else:
                writer.close()
        return True


__all__ = ["Connection", "ConnectionState"]
