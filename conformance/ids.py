"""The one place where the spec's ids meet BookKeeper's.

The spec counts entries from 1 and uses LAC 0 for "nothing confirmed"; BookKeeper counts
entries from 0 and uses -1. Every conversion goes through these functions.
"""

from __future__ import annotations

import struct

#: Each entry's payload is its spec data (an int) as 8 big-endian bytes.
PAYLOAD = struct.Struct(">q")


def bk_entry_id(spec_entry_id: int) -> int:
    return spec_entry_id - 1


def spec_entry_id(bk_entry_id: int) -> int:
    return bk_entry_id + 1


def bk_lac(spec_lac: int) -> int:
    return spec_lac - 1


def spec_lac(bk_lac: int) -> int:
    return bk_lac + 1


def payload(data: int) -> bytes:
    return PAYLOAD.pack(data)


def data_of(payload_bytes: bytes) -> int:
    if len(payload_bytes) != PAYLOAD.size:
        raise ValueError(
            f"payload of {len(payload_bytes)} bytes is not one of ours ({PAYLOAD.size})"
        )
    value: int = PAYLOAD.unpack(payload_bytes)[0]
    return value


def ledger_length(spec_last_entry: int) -> int:
    """Cumulative ledger length up to and including a spec entry id (every payload is 8 bytes)."""
    return spec_last_entry * PAYLOAD.size
