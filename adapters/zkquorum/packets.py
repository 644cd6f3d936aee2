"""ZooKeeper's quorum packets, the leader-follower protocol on the quorum port (issue 31).

Facts from ZooKeeper's sources: ``zookeeper.jute`` (``QuorumPacket { int type; long zxid;
buffer data; vector<Id> authinfo; }``, ``LearnerInfo``, ``TxnHeader``), ``Leader``'s packet
types, and ``LearnerHandler``/``Learner`` (what each packet's data holds). A learner connects
to the leader's quorum port and the two exchange jute records back to back, with no length
prefix and no preface (quorum SASL off, as the suite runs it). One exception: after a
``SNAP`` the leader writes its whole database as a raw snapshot, then the string
``BenWasHere`` as a signature, and only then quorum packets again (:class:`QuorumStream`
passes the snapshot on in chunks, to the signature).

The names follow ``Leader``'s (``PROPOSAL``, ``NEWLEADER``, ``UPTODATE``); docs/zab-model.md
maps them onto the Zab specification's actions.
"""

from __future__ import annotations

import enum
import struct
from dataclasses import dataclass, field

from adapters.errors import AdapterError
from adapters.zkproxy.codes import Op
from adapters.zkproxy.errors import MalformedPacket
from adapters.zkproxy.jute import JuteReader, JuteWriter


class PacketType(enum.IntEnum):
    """``Leader``'s quorum packet types."""

    REQUEST = 1
    PROPOSAL = 2
    ACK = 3
    COMMIT = 4
    PING = 5
    REVALIDATE = 6
    SYNC = 7
    INFORM = 8
    COMMITANDACTIVATE = 9
    NEWLEADER = 10
    FOLLOWERINFO = 11
    UPTODATE = 12
    DIFF = 13
    TRUNC = 14
    SNAP = 15
    OBSERVERINFO = 16
    LEADERINFO = 17
    ACKEPOCH = 18
    INFORMANDACTIVATE = 19


def type_name(code: int) -> str:
    try:
        return PacketType(code).name
    except ValueError:
        return f"type-{code}"


def zxid_text(zxid: int) -> str:
    """``0x100000003`` as ZooKeeper logs it (epoch in the high 32 bits, counter in the low)."""
    return f"0x{zxid & 0xFFFFFFFFFFFFFFFF:x}"


def epoch_of(zxid: int) -> int:
    return (zxid >> 32) & 0xFFFFFFFF


def counter_of(zxid: int) -> int:
    return zxid & 0xFFFFFFFF


#: ``TxnHeader``: the header of a transaction in a PROPOSAL's or an INFORM's data.
@dataclass(frozen=True)
class TxnHeader:
    client_id: int
    cxid: int
    zxid: int
    time: int
    type: int

    @property
    def op(self) -> str:
        """The transaction's ``ZooDefs.OpCode`` name (``create``, ``setData``; ``error`` for a
        failed request's record)."""
        if self.type == -1:
            return "error"
        known = Op.from_code(self.type)
        return known.value if known is not Op.UNKNOWN else f"op-{self.type}"


@dataclass(frozen=True)
class QuorumPacket:
    """One ``QuorumPacket``; ``authinfo`` as (scheme, id) pairs (None: a null vector)."""

    type: int
    zxid: int
    data: bytes | None = None
    authinfo: tuple[tuple[str | None, str | None], ...] | None = None

    @property
    def name(self) -> str:
        return type_name(self.type)

    def encode(self) -> bytes:
        writer = JuteWriter().write_int(self.type).write_long(self.zxid).write_buffer(self.data)
        if self.authinfo is None:
            writer.write_int(-1)
        else:
            writer.write_int(len(self.authinfo))
            for scheme, ident in self.authinfo:
                writer.write_ustring(scheme).write_ustring(ident)
        return writer.getvalue()

    def txn_header(self) -> TxnHeader | None:
        """The transaction header a PROPOSAL or an INFORM carries (None for other packets,
        and for data too short to hold one)."""
        if self.type not in (PacketType.PROPOSAL, PacketType.INFORM) or not self.data:
            return None
        reader = JuteReader(self.data)
        try:
            return TxnHeader(
                reader.read_long("clientId"),
                reader.read_int("cxid"),
                reader.read_long("zxid"),
                reader.read_long("time"),
                reader.read_int("type"),
            )
        except MalformedPacket:
            return None

    def describe(self) -> str:
        """``PROPOSAL 0x100000003 create``, ``ACK 0x100000003``, ``LEADERINFO 0x200000000``."""
        text = f"{self.name} {zxid_text(self.zxid)}"
        header = self.txn_header()
        if header is not None:
            text += f" {header.op}"
        elif self.type == PacketType.FOLLOWERINFO and self.data and len(self.data) >= 8:
            text += f" sid={struct.unpack('>q', self.data[:8])[0]}"
        return text


class _Incomplete(AdapterError):
    """Not enough bytes yet for the next record (control flow of :class:`QuorumStream`; never
    leaves this module)."""


def _need(data: bytes, offset: int, size: int) -> None:
    if offset + size > len(data):
        raise _Incomplete


def _read_packet(data: bytes, offset: int, max_size: int) -> tuple[QuorumPacket, int]:
    """The packet at ``offset`` and the offset after it; _Incomplete when ``data`` ends
    first; MalformedPacket when the bytes cannot be one."""
    start = offset
    _need(data, offset, 16)
    kind, zxid, length = struct.unpack_from(">iqi", data, offset)
    offset += 16
    if length < -1 or length > max_size:
        raise MalformedPacket(
            f"a quorum packet ({type_name(kind)}) with a data length of {length} at offset {start}"
        )
    payload = None
    if length >= 0:
        _need(data, offset, length)
        payload = bytes(data[offset : offset + length])
        offset += length
    _need(data, offset, 4)
    (count,) = struct.unpack_from(">i", data, offset)
    offset += 4
    if count < -1 or count > 1024:
        raise MalformedPacket(f"a quorum packet with {count} auth ids at offset {start}")
    authinfo: list[tuple[str | None, str | None]] | None = None if count == -1 else []
    for _ in range(max(count, 0)):
        pair: list[str | None] = []
        for _what in ("scheme", "id"):
            _need(data, offset, 4)
            (size,) = struct.unpack_from(">i", data, offset)
            offset += 4
            if size < -1 or size > max_size:
                raise MalformedPacket(f"an auth id of {size} bytes at offset {start}")
            if size == -1:
                pair.append(None)
                continue
            _need(data, offset, size)
            pair.append(bytes(data[offset : offset + size]).decode("utf-8", errors="replace"))
            offset += size
        assert authinfo is not None
        authinfo.append((pair[0], pair[1]))
    return QuorumPacket(kind, zxid, payload, None if authinfo is None else tuple(authinfo)), offset


#: What ends the raw snapshot a SNAP is followed by: the jute string ``BenWasHere``.
SNAPSHOT_SIGNATURE = JuteWriter().write_ustring("BenWasHere").getvalue()


@dataclass(frozen=True)
class SnapshotChunk:
    """Bytes of the raw snapshot after a SNAP (not decoded), passed on as they arrive; the
    ``last`` ends with the signature, and ``total`` is then the whole snapshot's size."""

    size: int
    last: bool = False
    total: int = 0


Frame = QuorumPacket | SnapshotChunk


@dataclass
class QuorumStream:
    """One direction of one quorum connection, decoded as its bytes arrive: :meth:`feed`
    returns every frame complete so far, each with the bytes it was made of (a proxy forwards
    exactly those)."""

    max_packet_size: int = 64 * 1024 * 1024
    _buffer: bytearray = field(default_factory=bytearray)
    _in_snapshot: bool = False
    _snapshot_size: int = 0

    def feed(self, chunk: bytes) -> list[tuple[Frame, bytes]]:
        self._buffer += chunk
        frames: list[tuple[Frame, bytes]] = []
        while self._buffer:
            if self._in_snapshot:
                end = self._buffer.find(SNAPSHOT_SIGNATURE)
                if end < 0:
                    # Keep what could be the start of a signature split across chunks.
                    keep = len(SNAPSHOT_SIGNATURE) - 1
                    if len(self._buffer) > keep:
                        size = len(self._buffer) - keep
                        self._snapshot_size += size
                        frames.append((SnapshotChunk(size), bytes(self._buffer[:size])))
                        del self._buffer[:size]
                    break
                end += len(SNAPSHOT_SIGNATURE)
                self._snapshot_size += end
                last = SnapshotChunk(end, last=True, total=self._snapshot_size)
                frames.append((last, bytes(self._buffer[:end])))
                del self._buffer[:end]
                self._in_snapshot, self._snapshot_size = False, 0
                continue
            try:
                packet, end = _read_packet(bytes(self._buffer), 0, self.max_packet_size)
            except _Incomplete:
                break
            frames.append((packet, bytes(self._buffer[:end])))
            del self._buffer[:end]
            if packet.type == PacketType.SNAP:
                self._in_snapshot = True
        return frames

    @property
    def pending(self) -> int:
        """Bytes received that do not make a whole frame yet."""
        return len(self._buffer)


__all__ = [
    "SNAPSHOT_SIGNATURE",
    "Frame",
    "PacketType",
    "QuorumPacket",
    "QuorumStream",
    "SnapshotChunk",
    "TxnHeader",
    "counter_of",
    "epoch_of",
    "type_name",
    "zxid_text",
]
