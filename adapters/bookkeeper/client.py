"""Asyncio clients for ONE bookie: :class:`BookieClient` (v3) and :class:`V2BookieClient` (v2).

These are a test's hand on the wire: each call sends exactly one request, built from its
arguments, and returns the bookie's answer as a typed result. No retries, no hidden requests,
no status-to-exception mapping (a status is an observation, see :class:`StatusCode`).

::

    async with await BookieClient.connect("127.0.0.1", 3181) as bookie:
        fenced = await bookie.read(150, -1, fence=True, master_key=master_key(b"golden"))
        if fenced.status is StatusCode.EOK:
            print(verify_entry(fenced.body, DigestType.CRC32, b"golden").last_add_confirmed)

v3 responses are matched by ``txnId`` (they may arrive out of order); v2 responses by
``(opcode, ledgerId, entryId)``, first come first served among identical keys.
"""

from __future__ import annotations

import asyncio
import collections
import itertools
import logging
from dataclasses import dataclass
from typing import Any

from adapters.bookkeeper import v2, v3
from adapters.bookkeeper.connection import (
    DEFAULT_CONNECT_TIMEOUT,
    DEFAULT_REQUEST_TIMEOUT,
    BookieConnection,
    open_stream,
)
from adapters.bookkeeper.errors import MalformedFrame
from adapters.bookkeeper.framing import DEFAULT_MAX_FRAME_SIZE
from adapters.bookkeeper.proto import BookkeeperProtocol_pb2 as pb
from adapters.bookkeeper.status import StatusCode, V2ReturnCode

log = logging.getLogger(__name__)

#: Entry id meaning "the last entry this bookie stores" (``BookieProtocol.LAST_ADD_CONFIRMED``).
LAST_ADD_CONFIRMED = -1


@dataclass(frozen=True, slots=True)
class AddResult:
    """Answer to ADD_ENTRY; ``status`` follows the Java client's outer/sub-status rule."""

    status: StatusCode
    ledger_id: int
    entry_id: int


@dataclass(frozen=True, slots=True)
class ReadResult:
    """Answer to READ_ENTRY; ``entry_id`` echoes the *requested* id (-1 for LAC reads)."""

    status: StatusCode
    ledger_id: int
    entry_id: int
    body: bytes | None = None
    #: The bookie's known LAC, piggybacked on ordinary v3 reads (absent on fence reads and v2).
    max_lac: int | None = None
    lac_update_timestamp: int | None = None


@dataclass(frozen=True, slots=True)
class ReadLacResult:
    """Answer to READ_LAC: the explicit LAC body and/or the last entry body."""

    status: StatusCode
    ledger_id: int
    lac_body: bytes | None = None
    last_entry_body: bytes | None = None


@dataclass(frozen=True, slots=True)
class LedgerStatusResult:
    """Answer to WRITE_LAC or FORCE_LEDGER."""

    status: StatusCode
    ledger_id: int


@dataclass(frozen=True, slots=True)
class BookieInfoResult:
    """Answer to GET_BOOKIE_INFO."""

    status: StatusCode
    total_disk_capacity: int | None = None
    free_disk_space: int | None = None


@dataclass(frozen=True, slots=True)
class AuthResult:
    """Answer to AUTH (``AuthDisabledPlugin`` on a bookie without auth)."""

    status: StatusCode
    plugin_name: str | None = None
    payload: bytes | None = None


class BookieClient(BookieConnection):
    """A v3 connection to one bookie; create it with :meth:`connect`, end it with :meth:`close`."""

    def __init__(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        peer: str,
        *,
        request_timeout: float = DEFAULT_REQUEST_TIMEOUT,
        max_frame_size: int = DEFAULT_MAX_FRAME_SIZE,
        first_txn_id: int = 1,
    ) -> None:
        super().__init__(
            reader, writer, peer, request_timeout=request_timeout, max_frame_size=max_frame_size
        )
        self._pending: dict[int, asyncio.Future[v3.Response]] = {}
        self._txn_ids = itertools.count(first_txn_id)

    @classmethod
    async def connect(
        cls,
        host: str,
        port: int,
        *,
        connect_timeout: float = DEFAULT_CONNECT_TIMEOUT,
        request_timeout: float = DEFAULT_REQUEST_TIMEOUT,
        max_frame_size: int = DEFAULT_MAX_FRAME_SIZE,
        first_txn_id: int = 1,
    ) -> BookieClient:
        """Open a connection (bounded by ``connect_timeout``); no AUTH is sent."""
        reader, writer = await open_stream(host, port, connect_timeout)
        return cls(
            reader,
            writer,
            f"{host}:{port}",
            request_timeout=request_timeout,
            max_frame_size=max_frame_size,
            first_txn_id=first_txn_id,
        )

    def next_txn_id(self) -> int:
        """The txnId the next convenience call will use (calls increment it by one)."""
        return next(self._txn_ids)

    @property
    def pending_count(self) -> int:
        return len(self._pending)

    async def send(self, request: v3.Request, *, timeout: float | None = None) -> v3.Response:
        """Send ``request`` exactly as given and wait for the response with its txnId."""
        return await self.send_payload(
            v3.encode_message(request), request.header.txnId, timeout=timeout
        )

    async def send_payload(
        self, payload: bytes, txn_id: int, *, timeout: float | None = None
    ) -> v3.Response:
        """Send arbitrary payload bytes in one frame; wait for a response carrying ``txn_id``.

        For requests the builders refuse to make (an undefined header version, say). A bookie
        that cannot decode the bytes resets the connection: that surfaces as ConnectionClosed.
        """
        future = self._register(txn_id)
        self.write_payload(payload)
        return await self._wait_response(future, timeout, f"txn {txn_id}")

    def _register(self, txn_id: int) -> asyncio.Future[v3.Response]:
        if self._closed is not None:
            raise self._closed_error()
        if txn_id in self._pending:
            raise ValueError(f"txnId {txn_id} is already pending on {self.peer}")
        future: asyncio.Future[v3.Response] = asyncio.get_running_loop().create_future()
        self._pending[txn_id] = future
        return future

    def _dispatch(self, payload: bytes) -> None:
        response = v3.decode_response(payload)
        future = self._pending.pop(response.header.txnId, None)
        if future is None:
            log.debug(
                "%s: dropping response for unknown txnId %d", self.peer, response.header.txnId
            )
        elif not future.done():
            future.set_result(response)

    def _fail_pending(self) -> None:
        pending, self._pending = self._pending, {}
        for future in pending.values():
            if not future.done():
                future.set_exception(self._closed_error())

    def _forget(self, future: asyncio.Future[Any]) -> None:
        for txn_id, candidate in list(self._pending.items()):
            if candidate is future:
                del self._pending[txn_id]

    # -- typed operations -------------------------------------------------------------------

    async def add(
        self,
        ledger_id: int,
        entry_id: int,
        master_key: bytes,
        body: bytes,
        *,
        recovery: bool = False,
        priority: int | None = None,
        write_flags: int | None = None,
        txn_id: int | None = None,
        timeout: float | None = None,
    ) -> AddResult:
        """ADD_ENTRY (``recovery=True``: RECOVERY_ADD; pass ``priority=100`` like Java does)."""
        txn = self.next_txn_id() if txn_id is None else txn_id
        request = v3.add_request(
            txn, ledger_id, entry_id, master_key, body,
            recovery=recovery, priority=priority, write_flags=write_flags,
        )  # fmt: skip
        response = await self.send(request, timeout=timeout)
        sub = response.addResponse
        if not response.HasField("addResponse"):
            return AddResult(StatusCode(response.status), ledger_id, entry_id)
        return AddResult(v3.effective_status(response), sub.ledgerId, sub.entryId)

    async def read(
        self,
        ledger_id: int,
        entry_id: int,
        *,
        fence: bool = False,
        piggyback: bool = False,
        master_key: bytes | None = None,
        previous_lac: int | None = None,
        timeout_ms: int | None = None,
        priority: int | None = None,
        txn_id: int | None = None,
        timeout: float | None = None,
    ) -> ReadResult:
        """READ_ENTRY; ``entry_id=-1`` reads the last entry; ``fence=True`` needs ``master_key``
        on a real bookie (else EUA), but is sent as given."""
        txn = self.next_txn_id() if txn_id is None else txn_id
        request = v3.read_request(
            txn, ledger_id, entry_id, fence=fence, piggyback=piggyback, master_key=master_key,
            previous_lac=previous_lac, timeout_ms=timeout_ms, priority=priority,
        )  # fmt: skip
        response = await self.send(request, timeout=timeout)
        if not response.HasField("readResponse"):
            return ReadResult(StatusCode(response.status), ledger_id, entry_id)
        sub = response.readResponse
        return ReadResult(
            status=v3.effective_status(response),
            ledger_id=sub.ledgerId,
            entry_id=sub.entryId,
            body=sub.body if sub.HasField("body") else None,
            max_lac=sub.maxLAC if sub.HasField("maxLAC") else None,
            lac_update_timestamp=(
                sub.lacUpdateTimestamp if sub.HasField("lacUpdateTimestamp") else None
            ),
        )

    async def read_lac(
        self, ledger_id: int, *, txn_id: int | None = None, timeout: float | None = None
    ) -> ReadLacResult:
        """READ_LAC (note: real bookies answer ENOENTRY for missing and limbo ledgers)."""
        txn = self.next_txn_id() if txn_id is None else txn_id
        response = await self.send(v3.read_lac_request(txn, ledger_id), timeout=timeout)
        if not response.HasField("readLacResponse"):
            return ReadLacResult(StatusCode(response.status), ledger_id)
        sub = response.readLacResponse
        return ReadLacResult(
            status=v3.effective_status(response),
            ledger_id=sub.ledgerId,
            lac_body=sub.lacBody if sub.HasField("lacBody") else None,
            last_entry_body=sub.lastEntryBody if sub.HasField("lastEntryBody") else None,
        )

    async def write_lac(
        self,
        ledger_id: int,
        lac: int,
        master_key: bytes,
        body: bytes,
        *,
        txn_id: int | None = None,
        timeout: float | None = None,
    ) -> LedgerStatusResult:
        """WRITE_LAC with a body from :func:`~adapters.bookkeeper.entry.package_lac`."""
        txn = self.next_txn_id() if txn_id is None else txn_id
        request = v3.write_lac_request(txn, ledger_id, lac, master_key, body)
        response = await self.send(request, timeout=timeout)
        if not response.HasField("writeLacResponse"):
            return LedgerStatusResult(StatusCode(response.status), ledger_id)
        sub = response.writeLacResponse
        return LedgerStatusResult(v3.effective_status(response), sub.ledgerId)

    async def force_ledger(
        self, ledger_id: int, *, txn_id: int | None = None, timeout: float | None = None
    ) -> LedgerStatusResult:
        """FORCE_LEDGER: completes when the bookie's journal is durable."""
        txn = self.next_txn_id() if txn_id is None else txn_id
        response = await self.send(v3.force_ledger_request(txn, ledger_id), timeout=timeout)
        if not response.HasField("forceLedgerResponse"):
            return LedgerStatusResult(StatusCode(response.status), ledger_id)
        sub = response.forceLedgerResponse
        return LedgerStatusResult(v3.effective_status(response), sub.ledgerId)

    async def get_bookie_info(
        self,
        requested: int | None = pb.GetBookieInfoRequest.TOTAL_DISK_CAPACITY
        | pb.GetBookieInfoRequest.FREE_DISK_SPACE,
        *,
        txn_id: int | None = None,
        timeout: float | None = None,
    ) -> BookieInfoResult:
        """GET_BOOKIE_INFO; ``requested`` is a bitwise OR of ``GetBookieInfoRequest.Flags``."""
        txn = self.next_txn_id() if txn_id is None else txn_id
        response = await self.send(v3.get_bookie_info_request(txn, requested), timeout=timeout)
        if not response.HasField("getBookieInfoResponse"):
            return BookieInfoResult(StatusCode(response.status))
        sub = response.getBookieInfoResponse
        return BookieInfoResult(
            status=v3.effective_status(response),
            total_disk_capacity=(
                sub.totalDiskCapacity if sub.HasField("totalDiskCapacity") else None
            ),
            free_disk_space=sub.freeDiskSpace if sub.HasField("freeDiskSpace") else None,
        )

    async def auth(
        self,
        plugin_name: str = "AuthDisabledPlugin",
        payload: bytes = b"",
        *,
        txn_id: int | None = None,
        timeout: float | None = None,
    ) -> AuthResult:
        """AUTH; on a bookie without auth it is a harmless ping."""
        txn = self.next_txn_id() if txn_id is None else txn_id
        response = await self.send(v3.auth_request(txn, plugin_name, payload), timeout=timeout)
        if not response.HasField("authResponse"):
            return AuthResult(StatusCode(response.status))
        sub = response.authResponse
        return AuthResult(StatusCode(response.status), sub.authPluginName, sub.payload)


_V2Key = tuple[int, int, int]
_V2_RETURN_CODES = frozenset(int(code) for code in V2ReturnCode)


class V2BookieClient(BookieConnection):
    """A v2 connection to one bookie: adds and reads (the bookie decodes nothing else over v2)."""

    def __init__(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        peer: str,
        *,
        request_timeout: float = DEFAULT_REQUEST_TIMEOUT,
        max_frame_size: int = DEFAULT_MAX_FRAME_SIZE,
    ) -> None:
        super().__init__(
            reader, writer, peer, request_timeout=request_timeout, max_frame_size=max_frame_size
        )
        self._pending: dict[_V2Key, collections.deque[asyncio.Future[v2.V2Response]]] = {}

    @classmethod
    async def connect(
        cls,
        host: str,
        port: int,
        *,
        connect_timeout: float = DEFAULT_CONNECT_TIMEOUT,
        request_timeout: float = DEFAULT_REQUEST_TIMEOUT,
        max_frame_size: int = DEFAULT_MAX_FRAME_SIZE,
    ) -> V2BookieClient:
        reader, writer = await open_stream(host, port, connect_timeout)
        return cls(
            reader,
            writer,
            f"{host}:{port}",
            request_timeout=request_timeout,
            max_frame_size=max_frame_size,
        )

    @property
    def pending_count(self) -> int:
        return sum(len(queue) for queue in self._pending.values())

    async def send(
        self, request: v2.V2AddRequest | v2.V2ReadRequest, *, timeout: float | None = None
    ) -> v2.V2Response:
        """Send ``request`` exactly as given; wait for the response with the same op and ids."""
        opcode = v2.OpCode.ADDENTRY if isinstance(request, v2.V2AddRequest) else v2.OpCode.READENTRY
        key = (int(opcode), request.ledger_id, request.entry_id)
        if self._closed is not None:
            raise self._closed_error()
        future: asyncio.Future[v2.V2Response] = asyncio.get_running_loop().create_future()
        self._pending.setdefault(key, collections.deque()).append(future)
        self.write_payload(v2.encode_request(request))
        return await self._wait_response(future, timeout, f"v2 {opcode.name} {key[1]}/{key[2]}")

    async def add(
        self,
        master_key: bytes,
        body: bytes,
        *,
        recovery: bool = False,
        high_priority: bool = False,
        timeout: float | None = None,
    ) -> AddResult:
        """ADDENTRY; ledger and entry id travel in ``body`` only (Java sets HIGH_PRIORITY with
        RECOVERY_ADD: flags 0x6)."""
        flags = (v2.Flag.RECOVERY_ADD if recovery else 0) | (
            v2.Flag.HIGH_PRIORITY if high_priority else 0
        )
        response = await self.send(v2.V2AddRequest(master_key, body, int(flags)), timeout=timeout)
        return AddResult(response.status, response.ledger_id, response.entry_id)

    async def read(
        self,
        ledger_id: int,
        entry_id: int,
        *,
        fence: bool = False,
        master_key: bytes | None = None,
        high_priority: bool = False,
        timeout: float | None = None,
    ) -> ReadResult:
        """READENTRY (``fence`` sets DO_FENCING and needs the 20-byte ``master_key``)."""
        flags = (v2.Flag.DO_FENCING if fence else 0) | (
            v2.Flag.HIGH_PRIORITY if high_priority else 0
        )
        request = v2.V2ReadRequest(ledger_id, entry_id, int(flags), master_key)
        response = await self.send(request, timeout=timeout)
        body = response.payload if response.status is StatusCode.EOK else None
        return ReadResult(response.status, response.ledger_id, response.entry_id, body)

    def _dispatch(self, payload: bytes) -> None:
        response = v2.decode_response(payload)
        if isinstance(response, v2.V2AuthResponse):
            log.debug("%s: dropping unsolicited v2 AUTH response", self.peer)
            return
        if response.rc not in _V2_RETURN_CODES:
            raise MalformedFrame(f"v2 response with unknown return code {response.rc}")
        key = (response.opcode, response.ledger_id, response.entry_id)
        queue = self._pending.get(key)
        if not queue:
            log.debug("%s: dropping v2 response with no pending request %s", self.peer, key)
            return
        future = queue.popleft()
        if not queue:
            del self._pending[key]
        if not future.done():
            future.set_result(response)

    def _fail_pending(self) -> None:
        pending, self._pending = self._pending, {}
        for queue in pending.values():
            for future in queue:
                if not future.done():
                    future.set_exception(self._closed_error())

    def _forget(self, future: asyncio.Future[Any]) -> None:
        for key, queue in list(self._pending.items()):
            if future in queue:
                queue.remove(future)
                if not queue:
                    del self._pending[key]


__all__ = [
    "LAST_ADD_CONFIRMED",
    "AddResult",
    "AuthResult",
    "BookieClient",
    "BookieInfoResult",
    "LedgerStatusResult",
    "ReadLacResult",
    "ReadResult",
    "V2BookieClient",
]
