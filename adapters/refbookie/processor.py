"""How the reference bookie answers each request: the documented behaviours of real bookies.

Every rule cites the reference section (``bookkeeper-protocol.md``) or golden capture it comes
from. Each handler returns the response payload, either at once (``bytes``) or as a future
that resolves when the journal has made the change durable.
"""

from __future__ import annotations

import asyncio
import shutil
from collections.abc import Callable
from pathlib import Path

from adapters.bookkeeper import v2, v3
from adapters.bookkeeper.entry import ENTRY_HEADER
from adapters.bookkeeper.proto import BookkeeperProtocol_pb2 as pb
from adapters.bookkeeper.status import StatusCode
from adapters.refbookie.storage import BookieStorage, Ledger

Reply = bytes | asyncio.Future[bytes]
AUTH_PLUGIN_NAME = "AuthDisabledPlugin"
LAST_ADD_CONFIRMED = -1
#: ``racy-fence-add`` (faulty on purpose): how long an add waits between its fence check and
#: its write; a fence read that comes in between does not stop it.
RACY_ADD_WINDOW_S = 0.005

_SUPPORTED_V3 = {
    pb.READ_ENTRY, pb.ADD_ENTRY, pb.AUTH, pb.WRITE_LAC, pb.READ_LAC, pb.GET_BOOKIE_INFO,
    pb.FORCE_LEDGER,
}  # fmt: skip


def _after(future: asyncio.Future[None] | None, make: Callable[[StatusCode], bytes]) -> Reply:
    """``make(EOK)`` once ``future`` (a journal write) is durable; ``make(EIO)`` if it failed."""
    if future is None:
        return make(StatusCode.EOK)
    reply: asyncio.Future[bytes] = asyncio.get_running_loop().create_future()

    def done(journal: asyncio.Future[None]) -> None:
        if reply.done():
            return
        failed = journal.cancelled() or journal.exception() is not None
        reply.set_result(make(StatusCode.EIO if failed else StatusCode.EOK))

    future.add_done_callback(done)
    return reply


class RequestProcessor:
    """Applies requests to :class:`BookieStorage` and builds the responses."""

    def __init__(self, storage: BookieStorage, ledger_dir: Path, faulty_mode: str = "none") -> None:
        self.storage = storage
        self.ledger_dir = ledger_dir
        # Deliberately wrong behaviours, to prove the conformance engine sees them (config.py).
        self.faulty_mode = faulty_mode

    # -- shared semantics --------------------------------------------------------------------

    def _check_key(self, ledger_id: int, key: bytes) -> bool:
        """``LedgerDescriptorImpl.checkAccess``: a bound ledger rejects a different key (EUA)."""
        ledger = self.storage.ledgers.get(ledger_id)
        return ledger is None or not ledger.master_key or ledger.master_key == key

    def add_entry(
        self, key: bytes, body: bytes, recovery: bool
    ) -> tuple[StatusCode, asyncio.Future[None] | None]:
        """``BookieImpl.addEntry`` / ``recoveryAddEntry``; the ledger id comes from the body."""
        if len(body) < ENTRY_HEADER.size:
            return StatusCode.EIO, None
        ledger_id = ENTRY_HEADER.unpack_from(body)[0]
        if not self._check_key(ledger_id, key):
            return StatusCode.EUA, None  # golden add-wrong-masterkey: key checked before fencing
        ledger, key_durable = self.storage.create(ledger_id, key)
        if ledger.fenced and not recovery:
            return StatusCode.EFENCED, None  # §1.7; limbo ledgers are fenced too (§3)
        if self.faulty_mode == "racy-fence-add":
            return StatusCode.EOK, self._write_later(body)
        entry_durable = self.storage.add_entry(body)
        return StatusCode.EOK, entry_durable or key_durable

    def _write_later(self, body: bytes) -> asyncio.Future[None]:
        """Faulty on purpose (``racy-fence-add``): the fence was checked, and the entry is
        written only ``RACY_ADD_WINDOW_S`` later: fence-versus-add is not atomic, so a fence
        read in between answers without the entry and the add still succeeds."""
        loop = asyncio.get_running_loop()
        written: asyncio.Future[None] = loop.create_future()

        def settle(durable: asyncio.Future[None]) -> None:
            if written.done():
                return
            if durable.cancelled() or durable.exception() is not None:
                written.set_exception(OSError("the journal write failed"))
            else:
                written.set_result(None)

        def write() -> None:
            durable = self.storage.add_entry(body)
            if durable is None:
                written.set_result(None)
            else:
                durable.add_done_callback(settle)

        loop.call_later(RACY_ADD_WINDOW_S, write)
        return written

    def fence(
        self, ledger_id: int, key: bytes | None
    ) -> tuple[StatusCode, asyncio.Future[None] | None]:
        """``BookieImpl.fenceLedger``: creates an unknown ledger, binds/checks the key (§1.7)."""
        if key is None or not self._check_key(ledger_id, key):
            return StatusCode.EUA, None  # golden fence-read-no-masterkey: EUA, not EBADREQ
        self.storage.create(ledger_id, key)
        return StatusCode.EOK, self.storage.fence(ledger_id)

    def read_entry(
        self, ledger_id: int, entry_id: int, *, fence: bool, key: bytes | None, protocol_v3: bool
    ) -> tuple[StatusCode, bytes | None, Ledger | None, asyncio.Future[None] | None]:
        """Status, body, ledger and fence durability future of a read (§1.7, §3)."""
        fence_durable = None
        if (
            fence
            and entry_id != LAST_ADD_CONFIRMED
            and self.faulty_mode == "ignore-recovery-read-fence"
        ):
            fence = False  # faulty on purpose: recovery reads do not fence
        if fence:
            status, fence_durable = self.fence(ledger_id, key)
            if status is not StatusCode.EOK:
                return status, None, None, None
        ledger = self.storage.ledgers.get(ledger_id)
        if ledger is None:
            return StatusCode.ENOLEDGER, None, None, None
        if entry_id == LAST_ADD_CONFIRMED:
            body = None if ledger.limbo else ledger.last_entry  # getLastEntry checks limbo first
        else:
            body = ledger.entries.get(entry_id)
        if ledger.limbo and self.faulty_mode == "no-limbo-unknown" and body is None:
            return StatusCode.ENOENTRY, None, ledger, None  # faulty on purpose: limbo ignored
        if ledger.limbo and (body is None or (protocol_v3 and not fence)):
            # Missing entries, LAC reads, and v3 plain reads (whose readLastAddConfirmed throws)
            # all surface DataUnknownException (golden limbo-read-v3 / -read-last / -fence-read).
            return StatusCode.EUNKNOWNLEDGERSTATE, None, ledger, None
        if body is None:
            # Answered at once, without waiting for the fence journal write (§1.7).
            return StatusCode.ENOENTRY, None, ledger, None
        return StatusCode.EOK, body, ledger, fence_durable

    # -- v3 ----------------------------------------------------------------------------------

    def handle_v3(self, request: v3.Request) -> Reply:
        operation = request.header.operation
        response = pb.Response(
            header=pb.BKPacketHeader(
                version=pb.VERSION_THREE, operation=operation, txnId=request.header.txnId
            )
        )
        if operation not in _SUPPORTED_V3 or not _has_sub_request(request, operation):
            # Unknown/unsupported op (range read, v3 batch read, TLS, entry lists): header and
            # status only (golden unknown-op-range-read / unknown-op-batch-read).
            response.status = pb.EBADREQ
            return v3.encode_message(response)
        if request.header.version != pb.VERSION_THREE:
            return self._bad_version(request, response)
        if operation == pb.ADD_ENTRY:
            return self._v3_add(request.addRequest, response)
        if operation == pb.READ_ENTRY:
            return self._v3_read(request.readRequest, response)
        if operation == pb.READ_LAC:
            return self._v3_read_lac(request.readLacRequest.ledgerId, response)
        if operation == pb.WRITE_LAC:
            return self._v3_write_lac(request.writeLacRequest, response)
        if operation == pb.FORCE_LEDGER:
            return self._v3_force(request.forceLedgerRequest.ledgerId, response)
        if operation == pb.GET_BOOKIE_INFO:
            return self._v3_bookie_info(request.getBookieInfoRequest, response)
        response.status = pb.EOK
        response.authResponse.authPluginName = AUTH_PLUGIN_NAME
        response.authResponse.payload = b""
        return v3.encode_message(response)

    def _bad_version(self, request: v3.Request, response: v3.Response) -> bytes:
        """Golden bad-version-read/-add: EBADVERSION outside and in the sub-response."""
        status = pb.EBADVERSION
        response.status = status
        operation = request.header.operation
        if operation == pb.READ_ENTRY:
            sub = response.readResponse
            sub.status, sub.ledgerId = status, request.readRequest.ledgerId
            sub.entryId = request.readRequest.entryId
        elif operation == pb.ADD_ENTRY:
            add = response.addResponse
            add.status, add.ledgerId = status, request.addRequest.ledgerId
            add.entryId = request.addRequest.entryId
        elif operation == pb.READ_LAC:
            lac = response.readLacResponse
            lac.status, lac.ledgerId = status, request.readLacRequest.ledgerId
        elif operation == pb.WRITE_LAC:
            write = response.writeLacResponse
            write.status, write.ledgerId = status, request.writeLacRequest.ledgerId
        elif operation == pb.FORCE_LEDGER:
            force = response.forceLedgerResponse
            force.status, force.ledgerId = status, request.forceLedgerRequest.ledgerId
        elif operation == pb.GET_BOOKIE_INFO:
            response.getBookieInfoResponse.status = status
        return v3.encode_message(response)

    def _v3_add(self, add: pb.AddRequest, response: v3.Response) -> Reply:
        recovery = add.HasField("flag") and add.flag == pb.AddRequest.RECOVERY_ADD
        status, durable = self.add_entry(add.masterKey, add.body, recovery)

        def make(journal_status: StatusCode) -> bytes:
            final = status if status is not StatusCode.EOK else journal_status
            response.status = final  # type: ignore[assignment]
            sub = response.addResponse
            sub.status = final  # type: ignore[assignment]
            sub.ledgerId, sub.entryId = add.ledgerId, add.entryId  # echoed from the request
            return v3.encode_message(response)

        return _after(durable, make) if status is StatusCode.EOK else make(status)

    def _v3_read(self, read: pb.ReadRequest, response: v3.Response) -> Reply:
        fence = read.HasField("flag") and read.flag == pb.ReadRequest.FENCE_LEDGER
        key = read.masterKey if read.HasField("masterKey") else None
        status, body, ledger, durable = self.read_entry(
            read.ledgerId, read.entryId, fence=fence, key=key, protocol_v3=True
        )

        def make(journal_status: StatusCode) -> bytes:
            final = status if status is not StatusCode.EOK else journal_status
            response.status = final  # type: ignore[assignment]
            sub = response.readResponse
            sub.status = final  # type: ignore[assignment]
            sub.ledgerId, sub.entryId = read.ledgerId, read.entryId
            if final is StatusCode.EOK and body is not None:
                sub.body = body
                if not fence and ledger is not None:
                    # Plain reads piggyback the bookie's LAC; fence reads do not (golden).
                    sub.maxLAC = ledger.last_add_confirmed
            return v3.encode_message(response)

        return _after(durable, make) if status is StatusCode.EOK else make(status)

    def _v3_read_lac(self, ledger_id: int, response: v3.Response) -> bytes:
        ledger = self.storage.ledgers.get(ledger_id)
        sub = response.readLacResponse
        sub.ledgerId = ledger_id
        lac_body = last_entry = None
        if ledger is not None and not ledger.limbo:
            lac_body, last_entry = ledger.explicit_lac, ledger.last_entry
        if lac_body is not None:
            sub.lacBody = lac_body
        if last_entry is not None:
            sub.lastEntryBody = last_entry
        # ReadLacProcessorV3: with neither body the status becomes ENOENTRY, which also hides
        # missing ledgers (golden read-lac-missing) and limbo (golden limbo-read-lac-v3).
        status = pb.EOK if lac_body is not None or last_entry is not None else pb.ENOENTRY
        response.status = sub.status = status
        return v3.encode_message(response)

    def _v3_write_lac(self, write: pb.WriteLacRequest, response: v3.Response) -> Reply:
        def make(status: StatusCode) -> bytes:
            response.status = status  # type: ignore[assignment]
            sub = response.writeLacResponse
            sub.status = status  # type: ignore[assignment]
            sub.ledgerId = write.ledgerId
            return v3.encode_message(response)

        if not self._check_key(write.ledgerId, write.masterKey):
            return make(StatusCode.EUA)
        self.storage.create(write.ledgerId, write.masterKey)
        return _after(self.storage.set_explicit_lac(write.ledgerId, write.body), make)

    def _v3_force(self, ledger_id: int, response: v3.Response) -> Reply:
        def make(status: StatusCode) -> bytes:
            response.status = status  # type: ignore[assignment]
            sub = response.forceLedgerResponse
            sub.status = status  # type: ignore[assignment]
            sub.ledgerId = ledger_id
            return v3.encode_message(response)

        return _after(self.storage.sync(), make)

    def _v3_bookie_info(self, info: pb.GetBookieInfoRequest, response: v3.Response) -> bytes:
        requested = info.requested if info.HasField("requested") else 0
        usage = shutil.disk_usage(self.ledger_dir)
        sub = response.getBookieInfoResponse
        response.status = sub.status = pb.EOK
        total = usage.total if requested & pb.GetBookieInfoRequest.TOTAL_DISK_CAPACITY else 0
        free = usage.free if requested & pb.GetBookieInfoRequest.FREE_DISK_SPACE else 0
        sub.totalDiskCapacity, sub.freeDiskSpace = total, free
        return v3.encode_message(response)

    # -- v2 ----------------------------------------------------------------------------------

    def handle_v2(self, request: v2.V2Request) -> Reply:
        if isinstance(request, v2.V2AuthRequest):
            message = pb.AuthMessage(authPluginName=AUTH_PLUGIN_NAME, payload=b"")
            auth = v2.V2AuthResponse(message.SerializeToString(), version=request.version)
            return v2.encode_response(auth)
        if isinstance(request, v2.V2AddRequest):
            status, durable = self.add_entry(request.master_key, request.body, request.is_recovery)
            add = request

            def make_add(journal_status: StatusCode) -> bytes:
                final = status if status is not StatusCode.EOK else journal_status
                return v2.encode_response(v2.v2_response_for(add, final))

            return _after(durable, make_add) if status is StatusCode.EOK else make_add(status)
        read = request
        read_status, body, _, fence_durable = self.read_entry(
            read.ledger_id, read.entry_id, fence=read.is_fencing, key=read.master_key,
            protocol_v3=False,
        )  # fmt: skip

        def make_read(journal_status: StatusCode) -> bytes:
            final = read_status if read_status is not StatusCode.EOK else journal_status
            payload = body if final is StatusCode.EOK and body is not None else b""
            return v2.encode_response(v2.v2_response_for(read, final, payload))

        if read_status is StatusCode.EOK:
            return _after(fence_durable, make_read)
        return make_read(read_status)


def _has_sub_request(request: v3.Request, operation: int) -> bool:
    field: str = {
        pb.READ_ENTRY: "readRequest",
        pb.ADD_ENTRY: "addRequest",
        pb.AUTH: "authRequest",
        pb.WRITE_LAC: "writeLacRequest",
        pb.READ_LAC: "readLacRequest",
        pb.GET_BOOKIE_INFO: "getBookieInfoRequest",
        pb.FORCE_LEDGER: "forceLedgerRequest",
    }[operation]  # type: ignore[index]
    return request.HasField(field)
