"""ZooKeeper's on-disk transaction logs and snapshot names, read in Python.

Format facts (ZooKeeper's ``FileTxnLog``, ``FileHeader``, ``TxnHeader`` and the jute records
of ``zookeeper.jute``); everything is big-endian jute: ``int`` 4 bytes, ``long`` 8, ``boolean``
1, ``ustring`` and ``buffer`` an int length (-1: null) then the bytes, ``vector`` an int count
then the elements.

- A log file ``version-2/log.<hex zxid of its first txn>`` starts with a 16-byte header:
  magic ``ZKLG``, format version (2), dbid (long).
- Then entries: an Adler-32 checksum (long) of the entry bytes, the entry as a ``buffer``, and
  an end-of-record byte ``B``. Files are preallocated with zeros, so a zero length (or the end
  of the file) ends the log.
- Entry bytes: ``TxnHeader`` (clientId long, cxid int, zxid long, time long, type int), the
  record of that type, and, since 3.6, possibly a trailing digest this reader ignores.
- Snapshots are ``version-2/snapshot.<hex zxid>``: a server restores the newest one and then
  replays log entries with larger zxids. Only the name is read here (its zxid).

A truncated final entry (a crash mid-write) ends the log quietly, as it does for ZooKeeper;
anything else malformed raises :class:`TxnLogError`.
"""

from __future__ import annotations

import hashlib
import re
import struct
import zlib
from dataclasses import dataclass
from pathlib import Path

from adapters.errors import AdapterError

LOG_MAGIC = b"ZKLG"
END_OF_RECORD = 0x42

# Transaction types (ZooDefs.OpCode) this reader decodes; others are kept as opaque.
TXN_TYPES = {
    1: "create",
    2: "delete",
    5: "setData",
    7: "setACL",
    13: "check",
    14: "multi",
    15: "create2",
    16: "reconfig",
    19: "createContainer",
    20: "deleteContainer",
    21: "createTTL",
    -1: "error",
    -10: "createSession",
    -11: "closeSession",
}
_CREATES = frozenset({1, 15, 19, 21})
_DELETES = frozenset({2, 20})


class TxnLogError(AdapterError, ValueError):
    """A file is not a ZooKeeper transaction log, or an entry is corrupt."""


@dataclass(frozen=True)
class LoggedChange:
    """One znode change: ``kind`` is create/set/delete/check; ``version`` is the version after
    a set (the one checked for a check), 0 for a create, -1 for a delete."""

    kind: str
    path: str
    data: bytes | None
    version: int


@dataclass(frozen=True)
class LoggedTxn:
    session: int
    cxid: int
    zxid: int
    time_ms: int
    type_code: int
    changes: tuple[LoggedChange, ...]
    digest: str
    """Of the decoded meaning (header and changes), not of the bytes: servers may serialize
    one transaction differently (a failed multi's sub-records, seen after a DIFF sync)."""
    failed: bool = False
    raw_digest: str = ""
    """Of the entry's bytes as logged."""

    @property
    def type_name(self) -> str:
        return TXN_TYPES.get(self.type_code, f"type{self.type_code}")


class _Reader:
    def __init__(self, data: bytes, where: str) -> None:
        self.data = data
        self.pos = 0
        self.where = where

    def take(self, size: int) -> bytes:
        if size < 0 or self.pos + size > len(self.data):
            raise TxnLogError(f"{self.where}: record ends early at byte {self.pos}")
        chunk = self.data[self.pos : self.pos + size]
        self.pos += size
        return chunk

    def int32(self) -> int:
        value: int = struct.unpack(">i", self.take(4))[0]
        return value

    def int64(self) -> int:
        value: int = struct.unpack(">q", self.take(8))[0]
        return value

    def boolean(self) -> bool:
        return self.take(1) != b"\0"

    def buffer(self) -> bytes | None:
        size = self.int32()
        return None if size < 0 else self.take(size)

    def ustring(self) -> str:
        raw = self.buffer()
        if raw is None:
            return ""
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise TxnLogError(f"{self.where}: path is not UTF-8: {raw!r}") from exc


def _changes(type_code: int, body: _Reader) -> tuple[tuple[LoggedChange, ...], bool]:
    """The znode changes of one record, and whether it is a failed (error) txn."""
    if type_code in _CREATES:
        path, data = body.ustring(), body.buffer()
        return (LoggedChange("create", path, data, 0),), False
    if type_code in _DELETES:
        return (LoggedChange("delete", body.ustring(), None, -1),), False
    if type_code == 5:
        path, data, version = body.ustring(), body.buffer(), body.int32()
        return (LoggedChange("set", path, data, version),), False
    if type_code == 13:
        path, version = body.ustring(), body.int32()
        return (LoggedChange("check", path, None, version),), False
    if type_code == -1:
        return (), True
    if type_code == 14:
        changes: list[LoggedChange] = []
        failed = False
        for _ in range(max(body.int32(), 0)):
            sub_type = body.int32()
            sub = _Reader(body.buffer() or b"", body.where)
            sub_changes, sub_failed = _changes(sub_type, sub)
            changes.extend(sub_changes)
            failed = failed or sub_failed
        # A failed multi is logged with error records and changes nothing.
        return (() if failed else tuple(changes)), failed
    return (), False


def parse_entry(entry: bytes, where: str = "entry") -> LoggedTxn:
    """Decode one log entry (header and record)."""
    reader = _Reader(entry, where)
    session, cxid, zxid, time_ms, type_code = (
        reader.int64(),
        reader.int32(),
        reader.int64(),
        reader.int64(),
        reader.int32(),
    )
    changes, failed = _changes(type_code, reader)
    meaning = repr((session, cxid, zxid, time_ms, type_code, failed, changes)).encode()
    return LoggedTxn(
        session,
        cxid,
        zxid,
        time_ms,
        type_code,
        changes,
        hashlib.sha1(meaning).hexdigest(),
        failed,
        hashlib.sha1(entry).hexdigest(),
    )


def read_log_file(path: Path) -> list[LoggedTxn]:
    """Every complete entry of one log file, in file order."""
    data = path.read_bytes()
    if len(data) < 16 or data[:4] != LOG_MAGIC:
        raise TxnLogError(f"{path}: not a ZooKeeper transaction log (no ZKLG header)")
    version = struct.unpack(">i", data[4:8])[0]
    if version != 2:
        raise TxnLogError(f"{path}: unsupported log format version {version}")
    txns: list[LoggedTxn] = []
    pos = 16
    while pos + 12 <= len(data):
        checksum, size = struct.unpack(">qi", data[pos : pos + 12])
        if size == 0:
            break  # preallocated zeros: the end of the log
        end = pos + 12 + size
        if size < 0 or end + 1 > len(data):
            break  # torn final write
        entry = data[pos + 12 : end]
        where = f"{path} at byte {pos}"
        if zlib.adler32(entry) != checksum & 0xFFFFFFFF:
            raise TxnLogError(f"{where}: checksum mismatch")
        if data[end] != END_OF_RECORD:
            raise TxnLogError(f"{where}: missing end-of-record marker")
        txns.append(parse_entry(entry, where))
        pos = end + 1
    return txns


def _zxid_suffix(path: Path, prefix: str) -> int | None:
    match = re.fullmatch(prefix + r"\.([0-9a-fA-F]+)", path.name)
    return int(match.group(1), 16) if match else None


def log_files(data_dir: Path) -> list[Path]:
    """A server's log files, oldest first (``dataDir`` or its ``version-2``)."""
    directory = _version_dir(data_dir)
    found = [(z, p) for p in directory.glob("log.*") if (z := _zxid_suffix(p, "log")) is not None]
    return [p for _z, p in sorted(found)]


def latest_snapshot_zxid(data_dir: Path) -> int:
    """The zxid of the newest snapshot (0 when there is none)."""
    directory = _version_dir(data_dir)
    zxids = [
        z
        for p in directory.glob("snapshot.*")
        if (z := _zxid_suffix(p, "snapshot")) is not None and p.stat().st_size > 0
    ]
    return max(zxids, default=0)


def _version_dir(data_dir: Path) -> Path:
    version_dir = data_dir / "version-2"
    return version_dir if version_dir.is_dir() else data_dir


@dataclass(frozen=True)
class ServerTxns:
    """What a server would restore: its newest snapshot's zxid, then the later log entries."""

    snapshot_zxid: int
    txns: tuple[LoggedTxn, ...]


def read_server(data_dir: Path) -> ServerTxns:
    snapshot = latest_snapshot_zxid(data_dir)
    txns = [t for f in log_files(data_dir) for t in read_log_file(f) if t.zxid > snapshot]
    return ServerTxns(snapshot, tuple(txns))
