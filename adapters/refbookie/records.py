"""The record format shared by the reference bookie's journal and its entry log.

A record is ``>BqI`` (kind, ledgerId, data length) + data + ``>I`` CRC32 of everything before
it. Replay stops at the first incomplete or corrupt record: that is the torn tail an unclean
shutdown leaves, and it is cut off.
"""

from __future__ import annotations

import enum
import struct
import zlib
from dataclasses import dataclass

_HEADER = struct.Struct(">BqI")
_CRC = struct.Struct(">I")


class RecordKind(enum.IntEnum):
    MASTER_KEY = 1
    ENTRY = 2
    FENCE = 3
    EXPLICIT_LAC = 4
    LIMBO = 5  # data: b"\x01" = in limbo, b"\x00" = cleared


@dataclass(frozen=True, slots=True)
class Record:
    kind: RecordKind
    ledger_id: int
    data: bytes = b""


def encode_record(kind: RecordKind, ledger_id: int, data: bytes = b"") -> bytes:
    head = _HEADER.pack(kind, ledger_id, len(data))
    return head + data + _CRC.pack(zlib.crc32(data, zlib.crc32(head)))


def decode_records(buffer: bytes) -> tuple[list[Record], int]:
    """The complete, intact records at the start of ``buffer`` and the bytes they span."""
    records: list[Record] = []
    offset = 0
    while offset + _HEADER.size + _CRC.size <= len(buffer):
        kind, ledger_id, length = _HEADER.unpack_from(buffer, offset)
        data_start = offset + _HEADER.size
        data_end = data_start + length
        if data_end + _CRC.size > len(buffer):
            break
        (crc,) = _CRC.unpack_from(buffer, data_end)
        if crc != zlib.crc32(buffer[offset:data_end]) or kind not in _KINDS:
            break
        records.append(Record(RecordKind(kind), ledger_id, bytes(buffer[data_start:data_end])))
        offset = data_end + _CRC.size
    return records, offset


_KINDS = frozenset(int(k) for k in RecordKind)
