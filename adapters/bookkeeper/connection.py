"""One TCP connection to a bookie: a single reader task, pending requests, one close funnel.

Subclasses decide how a response payload finds its waiting request (:meth:`_dispatch`) and how
pending requests are failed (:meth:`_fail_pending`). Every wait is bounded: connects by
``connect_timeout``, requests by their ``timeout``.
"""

from __future__ import annotations

import abc
import asyncio
import contextlib
import logging
from typing import Any, TypeVar

from adapters.bookkeeper.errors import (
    CloseReason,
    ConnectionClosed,
    ConnectTimeout,
    MalformedFrame,
    RequestTimeout,
)
from adapters.bookkeeper.framing import DEFAULT_MAX_FRAME_SIZE, FrameDecoder, encode_frame

log = logging.getLogger(__name__)

T = TypeVar("T")

DEFAULT_CONNECT_TIMEOUT = 5.0
DEFAULT_REQUEST_TIMEOUT = 10.0
_READ_CHUNK = 256 * 1024
_CLOSE_TIMEOUT = 2.0
# Above this many unsent bytes a sender waits for the transport to drain (bounded by its timeout).
_HIGH_WATER = 4 * 1024 * 1024


async def open_stream(
    host: str, port: int, connect_timeout: float
) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """``asyncio.open_connection`` bounded by ``connect_timeout`` (else :class:`ConnectTimeout`)."""
    try:
        async with asyncio.timeout(connect_timeout):
            return await asyncio.open_connection(host, port, limit=_READ_CHUNK)
    except TimeoutError:
        raise ConnectTimeout(
            f"connect to {host}:{port} timed out after {connect_timeout}s"
        ) from None


class BookieConnection(abc.ABC):
    """Framing, the reader task and the close funnel shared by the v3 and v2 clients."""

    def __init__(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        peer: str,
        *,
        request_timeout: float = DEFAULT_REQUEST_TIMEOUT,
        max_frame_size: int = DEFAULT_MAX_FRAME_SIZE,
    ) -> None:
        self.peer = peer
        self.request_timeout = request_timeout
        self._reader = reader
        self._writer = writer
        self._decoder = FrameDecoder(max_frame_size)
        self._closed: ConnectionClosed | None = None
        self._close_cause: BaseException | None = None
        self._close_detail = ""
        # Frames written in one event-loop turn are sent together (one syscall for a pipeline).
        self._outgoing: list[bytes] = []
        self._flush_scheduled = False
        self._read_task = asyncio.get_running_loop().create_task(
            self._read_loop(), name=f"bookie-reader-{peer}"
        )

    @property
    def closed(self) -> ConnectionClosed | None:
        """``None`` while open; afterwards the error that pending requests failed with."""
        return self._closed

    async def __aenter__(self: _Self) -> _Self:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    async def close(self) -> None:
        """Close the connection; pending requests fail with ``ConnectionClosed(USER)``."""
        self._close(CloseReason.USER, "closed by the client")
        if self._read_task is not asyncio.current_task():
            self._read_task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._read_task
        with contextlib.suppress(OSError, TimeoutError):
            async with asyncio.timeout(_CLOSE_TIMEOUT):
                await self._writer.wait_closed()

    def write_payload(self, payload: bytes) -> None:
        """Send one frame carrying ``payload`` (raises :class:`ConnectionClosed` once closed)."""
        self.write_raw(encode_frame(payload))

    def write_raw(self, data: bytes) -> None:
        """Send bytes as they are, framing included (for deliberately malformed input)."""
        if self._closed is not None:
            raise ConnectionClosed(self.peer, self._closed.reason, "connection already closed")
        self._outgoing.append(data)
        if not self._flush_scheduled:
            self._flush_scheduled = True
            asyncio.get_running_loop().call_soon(self._flush)

    def _flush(self) -> None:
        self._flush_scheduled = False
        outgoing, self._outgoing = self._outgoing, []
        if self._closed is None and outgoing:
            self._writer.write(b"".join(outgoing))

    async def _wait_response(
        self, future: asyncio.Future[T], timeout: float | None, what: str
    ) -> T:
        limit = self.request_timeout if timeout is None else timeout
        if self._writer.transport.get_write_buffer_size() > _HIGH_WATER:
            try:
                async with asyncio.timeout(limit):
                    await self._writer.drain()
            except TimeoutError:
                self._forget(future)
                raise RequestTimeout(f"{what} to {self.peer}: send buffer did not drain") from None
            except (ConnectionError, OSError):
                pass  # the reader task sees the same failure and closes the connection
        try:
            async with asyncio.timeout(limit):
                return await future
        except TimeoutError:
            self._forget(future)
            raise RequestTimeout(f"{what} to {self.peer}: no response within {limit}s") from None

    async def _read_loop(self) -> None:
        try:
            while True:
                data = await self._reader.read(_READ_CHUNK)
                if not data:
                    self._close(CloseReason.PEER_CLOSED, "end of stream")
                    return
                for payload in self._decoder.feed(data):
                    self._dispatch(payload)
        except MalformedFrame as exc:
            self._close(CloseReason.MALFORMED_FRAME, str(exc), exc)
        except (ConnectionError, OSError) as exc:
            self._close(CloseReason.CONNECTION_BROKEN, repr(exc), exc)
        except Exception as exc:
            # A decoding bug must not leave requests waiting for their timeouts.
            log.exception("reader of %s failed", self.peer)
            self._close(CloseReason.CONNECTION_BROKEN, repr(exc), exc)

    def _close(self, reason: CloseReason, detail: str, cause: BaseException | None = None) -> None:
        if self._closed is not None:
            return
        if reason is not CloseReason.USER:
            log.debug("connection to %s closed: %s %s", self.peer, reason.name, detail)
        self._closed = ConnectionClosed(self.peer, reason, detail)
        self._close_cause = cause
        self._close_detail = detail
        self._fail_pending()
        self._writer.close()

    def _closed_error(self) -> ConnectionClosed:
        """A fresh error for one pending request, chained to what closed the connection."""
        assert self._closed is not None
        error = ConnectionClosed(self.peer, self._closed.reason, self._close_detail)
        error.__cause__ = self._close_cause
        return error

    @abc.abstractmethod
    def _dispatch(self, payload: bytes) -> None:
        """Decode one response payload and complete its request (raise MalformedFrame if bad)."""

    @abc.abstractmethod
    def _fail_pending(self) -> None:
        """Fail every pending request with :meth:`_closed_error`."""

    @abc.abstractmethod
    def _forget(self, future: asyncio.Future[Any]) -> None:
        """Drop a timed-out request so a late response is ignored."""


_Self = TypeVar("_Self", bound=BookieConnection)
