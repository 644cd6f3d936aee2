"""Expiring a client's session from outside, as ZooKeeper's own tests do: connect to the
server with the session's id and password (the server re-attaches the session to this new
connection), then close the session (``closeSession``). The session and its ephemeral znodes
are gone at once; the client learns it at its next handshake, when the server answers its
reconnection with timeout 0 (``ZooKeeperServer.finishSessionInit``), which both the Java
client and kazoo report as an expired session.

The proxy speaks the protocol itself here, on its own event loop, rather than start a second
client library (kazoo would bring its own threads).
"""

from __future__ import annotations

import asyncio
import collections
import contextlib

from adapters.zkproxy.codes import NOTIFICATION_XID, PING_XID, Op, error_name
from adapters.zkproxy.errors import ExpiryFailed, MalformedPacket, ZkProxyTimeout
from adapters.zkproxy.framing import PacketSplitter, frame
from adapters.zkproxy.jute import JuteReader
from adapters.zkproxy.log import ExpiryOutcome, SessionRecord
from adapters.zkproxy.packets import ConnectRequest, ConnectResponse, encode_request

_CLOSE_XID = 1
_READ_CHUNK = 64 * 1024


async def close_session(
    host: str, port: int, session: SessionRecord, *, timeout: float
) -> ExpiryOutcome:
    """Close ``session`` on the ZooKeeper server at ``host:port`` within ``timeout`` seconds.

    :raises ExpiryFailed: the server could not be reached, hung up, or answered the
        closeSession with an error.
    :raises ZkProxyTimeout: it did not finish within ``timeout``.
    """
    writer: asyncio.StreamWriter | None = None
    try:
        async with asyncio.timeout(timeout):
            reader, writer = await asyncio.open_connection(host, port)
            packets = _Packets(reader)
            # lastZxidSeen 0: the server refuses a client that has seen more than it has, and
            # 0 is never more. The session's own timeout keeps the server from renegotiating.
            hello = ConnectRequest(0, 0, session.timeout_ms, session.session_id, session.passwd)
            writer.write(frame(hello.encode()))
            answer = ConnectResponse.decode(await packets.next())
            if answer.expired:
                return ExpiryOutcome.ALREADY_EXPIRED
            writer.write(frame(encode_request(_CLOSE_XID, Op.CLOSE_SESSION)))
            while True:
                header = JuteReader(await packets.next())
                xid = header.read_int("xid")
                header.read_long("zxid")
                err = header.read_int("err")
                if xid in (NOTIFICATION_XID, PING_XID):
                    continue  # not ours: the session's watches may fire on this connection
                if xid == _CLOSE_XID:
                    break
            if err != 0:
                raise ExpiryFailed(
                    f"the server answered closeSession of 0x{session.session_id:x} with "
                    f"{error_name(err)}"
                )
            return ExpiryOutcome.EXPIRED
    except TimeoutError:
        raise ZkProxyTimeout(
            f"closing session 0x{session.session_id:x} at {host}:{port} took over {timeout}s"
        ) from None
    except (OSError, MalformedPacket) as exc:
        raise ExpiryFailed(
            f"cannot close session 0x{session.session_id:x} at {host}:{port}: {exc}"
        ) from exc
    finally:
        if writer is not None:
            writer.close()
            with contextlib.suppress(OSError, TimeoutError):
                async with asyncio.timeout(1.0):
                    await writer.wait_closed()


class _Packets:
    """The packets of one connection, one at a time (a read may bring several)."""

    def __init__(self, reader: asyncio.StreamReader) -> None:
        self._reader = reader
        self._splitter = PacketSplitter()
        self._ready: collections.deque[bytes] = collections.deque()

    async def next(self) -> bytes:
        while not self._ready:
            data = await self._reader.read(_READ_CHUNK)
            if not data:
                raise ExpiryFailed("the server closed the connection")
            self._ready.extend(self._splitter.feed(data))
        return self._ready.popleft()


__all__ = ["close_session"]
