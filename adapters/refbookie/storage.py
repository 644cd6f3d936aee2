"""Durable ledger state of the reference bookie: a journal plus a periodically flushed entry log.

* Every state change is applied in memory at once (reads see it immediately, as with a real
  bookie's write cache) and appended to the *ledger storage buffer*.
* Changes that must survive a crash before the next flush also go to the *journal*, which a
  single writer task appends and fsyncs in groups (group commit); callers wait on the returned
  future before acknowledging. Entry data is journaled only with ``journalWriteData=true``;
  master keys, fences and explicit LACs always are (reference §10: "the master key still
  reaches the journal").
* A *checkpoint* appends the buffer to the entry log, fsyncs it and truncates the journal. It
  runs every ``flushInterval`` ms and on clean shutdown. So with the journal off, a SIGKILL loses
  every entry added since the last checkpoint, although each was acknowledged.

Restart replays the entry log, then the journal; both are cut at their first torn record.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from dataclasses import dataclass, field
from pathlib import Path

from adapters.bookkeeper.entry import ENTRY_HEADER
from adapters.refbookie.records import RecordKind, decode_records, encode_record

log = logging.getLogger(__name__)

JOURNAL_FILE = "journal.log"
ENTRY_LOG_FILE = "entries.log"


@dataclass
class Ledger:
    """What this bookie knows about one ledger."""

    ledger_id: int
    #: Empty = not bound yet (a ledger created by the limbo pre-boot check); the first key wins.
    master_key: bytes = b""
    fenced: bool = False
    limbo: bool = False
    entries: dict[int, bytes] = field(default_factory=dict)
    explicit_lac: bytes | None = None
    #: Highest piggybacked LAC (body bytes 16:24) of any stored entry; -1 if none.
    last_add_confirmed: int = -1
    last_entry_id: int = -1

    def store(self, body: bytes) -> None:
        _, entry_id, lac, _ = ENTRY_HEADER.unpack_from(body)
        self.entries[entry_id] = body
        self.last_add_confirmed = max(self.last_add_confirmed, lac)
        self.last_entry_id = max(self.last_entry_id, entry_id)

    @property
    def last_entry(self) -> bytes | None:
        return self.entries.get(self.last_entry_id) if self.entries else None


class BookieStorage:
    """Ledgers in memory, backed by ``<journalDir>/current`` and ``<ledgerDir>/current``."""

    def __init__(
        self,
        journal_dir: Path,
        ledger_dir: Path,
        *,
        journal_write_data: bool = True,
        journal_sync_data: bool = True,
    ) -> None:
        self.journal_path = journal_dir / "current" / JOURNAL_FILE
        self.entry_log_path = ledger_dir / "current" / ENTRY_LOG_FILE
        self.journal_write_data = journal_write_data
        self.journal_sync_data = journal_sync_data
        self.ledgers: dict[int, Ledger] = {}
        self._ledger_buffer: list[bytes] = []
        self._journal_buffer: list[bytes] = []
        self._journal_waiters: list[asyncio.Future[None]] = []
        self._checkpoint_waiters: list[asyncio.Future[None]] = []
        self._wakeup: asyncio.Event | None = None
        self._writer: asyncio.Task[None] | None = None
        self._journal_file: int | None = None
        self._entry_log_file: int | None = None

    # -- lifecycle ---------------------------------------------------------------------------

    def load(self) -> None:
        """Create the directories and replay the entry log, then the journal."""
        for path in (self.journal_path, self.entry_log_path):
            path.parent.mkdir(parents=True, exist_ok=True)
        for path in (self.entry_log_path, self.journal_path):
            self._replay(path)

    def _replay(self, path: Path) -> None:
        if not path.exists():
            return
        data = path.read_bytes()
        records, end = decode_records(data)
        if end != len(data):
            log.warning("%s: cutting %d bytes of torn tail", path, len(data) - end)
            with path.open("r+b") as handle:
                handle.truncate(end)
        for record in records:
            self._apply(record.kind, record.ledger_id, record.data)
        log.info("replayed %d records from %s", len(records), path)

    def _apply(self, kind: RecordKind, ledger_id: int, data: bytes) -> Ledger:
        ledger = self.ledgers.get(ledger_id)
        if ledger is None:
            ledger = self.ledgers[ledger_id] = Ledger(ledger_id)
        if kind is RecordKind.MASTER_KEY:
            ledger.master_key = data
        elif kind is RecordKind.ENTRY:
            ledger.store(data)
        elif kind is RecordKind.FENCE:
            ledger.fenced = True
        elif kind is RecordKind.EXPLICIT_LAC:
            ledger.explicit_lac = data
        elif kind is RecordKind.LIMBO:
            ledger.limbo = data == b"\x01"
        return ledger

    def start(self) -> None:
        """Open the files and start the writer task (call from the event loop)."""
        flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND
        self._journal_file = os.open(self.journal_path, flags, 0o644)
        self._entry_log_file = os.open(self.entry_log_path, flags, 0o644)
        self._wakeup = asyncio.Event()
        self._writer = asyncio.get_running_loop().create_task(self._write_loop(), name="journal")

    async def close(self, *, checkpoint: bool = True) -> None:
        """Stop the writer; with ``checkpoint`` (clean shutdown) flush everything first."""
        if self._writer is None:
            return
        if checkpoint:
            await self.checkpoint()
        self._writer.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._writer
        self._writer = None
        for fd in (self._journal_file, self._entry_log_file):
            if fd is not None:
                os.close(fd)
        self._journal_file = self._entry_log_file = None

    # -- mutations ---------------------------------------------------------------------------

    def create(
        self, ledger_id: int, master_key: bytes
    ) -> tuple[Ledger, asyncio.Future[None] | None]:
        """The ledger, created and bound to ``master_key`` if it is new or not yet bound."""
        ledger = self.ledgers.get(ledger_id)
        if ledger is not None and ledger.master_key:
            return ledger, None
        return self._record(RecordKind.MASTER_KEY, ledger_id, master_key, journal=True)

    def add_entry(self, body: bytes) -> asyncio.Future[None] | None:
        """Store an entry under the ids in its body; the future resolves once it is durable
        (``None``: nothing to wait for, the journal is off for entry data)."""
        ledger_id = ENTRY_HEADER.unpack_from(body)[0]
        return self._record(RecordKind.ENTRY, ledger_id, body, journal=self.journal_write_data)[1]

    def fence(self, ledger_id: int) -> asyncio.Future[None] | None:
        ledger = self.ledgers.get(ledger_id)
        if ledger is not None and ledger.fenced:
            return None
        return self._record(RecordKind.FENCE, ledger_id, b"", journal=True)[1]

    def set_explicit_lac(self, ledger_id: int, body: bytes) -> asyncio.Future[None] | None:
        return self._record(RecordKind.EXPLICIT_LAC, ledger_id, body, journal=True)[1]

    def set_limbo(self, ledger_id: int, limbo: bool) -> None:
        flag = b"\x01" if limbo else b"\x00"
        self._record(RecordKind.LIMBO, ledger_id, flag, journal=True)

    def _record(
        self, kind: RecordKind, ledger_id: int, data: bytes, *, journal: bool
    ) -> tuple[Ledger, asyncio.Future[None] | None]:
        ledger = self._apply(kind, ledger_id, data)
        record = encode_record(kind, ledger_id, data)
        self._ledger_buffer.append(record)
        if not journal or self._wakeup is None:
            return ledger, None
        self._journal_buffer.append(record)
        return ledger, self.sync()

    def sync(self) -> asyncio.Future[None]:
        """A future that resolves when everything journaled so far is durable."""
        assert self._wakeup is not None, "storage not started"
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._journal_waiters.append(future)
        self._wakeup.set()
        return future

    def checkpoint(self) -> asyncio.Future[None]:
        """Flush the ledger storage buffer to the entry log and truncate the journal."""
        assert self._wakeup is not None, "storage not started"
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._checkpoint_waiters.append(future)
        self._wakeup.set()
        return future

    # -- the writer task ---------------------------------------------------------------------

    async def _write_loop(self) -> None:
        assert self._wakeup is not None
        while True:
            await self._wakeup.wait()
            self._wakeup.clear()
            journal, self._journal_buffer = b"".join(self._journal_buffer), []
            waiters, self._journal_waiters = self._journal_waiters, []
            checkpoints, self._checkpoint_waiters = self._checkpoint_waiters, []
            ledger = b""
            if checkpoints:
                # The buffer holds every record journaled so far, so after it is durable in the
                # entry log the journal is redundant and can be truncated.
                ledger, self._ledger_buffer = b"".join(self._ledger_buffer), []
            try:
                await asyncio.to_thread(self._persist, journal, ledger, bool(checkpoints))
            except OSError as exc:
                log.error("storage write failed: %s", exc)
                for future in waiters + checkpoints:
                    if not future.done():
                        future.set_exception(exc)
                continue
            for future in waiters + checkpoints:
                if not future.done():
                    future.set_result(None)

    def _persist(self, journal: bytes, ledger: bytes, checkpoint: bool) -> None:
        assert self._journal_file is not None and self._entry_log_file is not None
        if journal:
            _write_all(self._journal_file, journal)
            if self.journal_sync_data:
                os.fsync(self._journal_file)
        if checkpoint:
            if ledger:
                _write_all(self._entry_log_file, ledger)
            os.fsync(self._entry_log_file)
            os.ftruncate(self._journal_file, 0)
            os.fsync(self._journal_file)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]
