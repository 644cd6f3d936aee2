"""Entry and LAC bodies: packaging and digest verification (``DigestManager``; reference §1.4).

An entry body is ``>qqqq`` (ledgerId, entryId, lastAddConfirmed, cumulative length) + digest +
payload. The digest covers the 32-byte header and the payload, skipping the digest itself. A LAC
body is ``>qq`` (ledgerId, lac) + digest over those 16 bytes.

::

    key = master_key(b"golden")
    body = package_entry(DigestType.CRC32, b"golden", 150, 0, -1, 7, b"entry-0")
    entry = verify_entry(body, DigestType.CRC32, b"golden")
"""

from __future__ import annotations

import enum
import hashlib
import hmac
import struct
import zlib
from dataclasses import dataclass

import crc32c

from adapters.bookkeeper.errors import DigestMismatch, MalformedEntry

ENTRY_HEADER = struct.Struct(">qqqq")
LAC_HEADER = struct.Struct(">qq")
_CRC32_FIELD = struct.Struct(">q")
_CRC32C_FIELD = struct.Struct(">I")


class DigestType(enum.IntEnum):
    """``LedgerMetadataFormat.DigestType`` values (DataFormats.proto)."""

    CRC32 = 1
    HMAC = 2
    CRC32C = 3
    DUMMY = 4

    @property
    def length(self) -> int:
        """Bytes the digest occupies in a body."""
        return _DIGEST_LENGTHS[self]


_DIGEST_LENGTHS = {
    DigestType.CRC32: 8,
    DigestType.HMAC: 20,
    DigestType.CRC32C: 4,
    DigestType.DUMMY: 0,
}


def master_key(password: bytes) -> bytes:
    """``SHA-1(b"ledger" + password)``: the 20-byte key bookies bind a ledger to."""
    return hashlib.sha1(b"ledger" + password).digest()


def mac_key(password: bytes) -> bytes:
    """``SHA-1(b"mac" + password)``: the HmacSHA1 key of the HMAC digest."""
    return hashlib.sha1(b"mac" + password).digest()


def compute_digest(digest_type: DigestType, password: bytes, *parts: bytes) -> bytes:
    """The digest of the concatenation of ``parts`` in its on-wire encoding."""
    if digest_type is DigestType.CRC32:
        crc = 0
        for part in parts:
            crc = zlib.crc32(part, crc)
        # java.util.zip.CRC32.getValue() is written as a long: upper four bytes zero.
        return _CRC32_FIELD.pack(crc)
    if digest_type is DigestType.CRC32C:
        value = 0
        for part in parts:
            value = crc32c.crc32c(part, value)
        return _CRC32C_FIELD.pack(value)
    if digest_type is DigestType.HMAC:
        mac = hmac.new(mac_key(password), digestmod=hashlib.sha1)
        for part in parts:
            mac.update(part)
        return mac.digest()
    return b""


@dataclass(frozen=True, slots=True)
class Entry:
    """A decoded entry body."""

    ledger_id: int
    entry_id: int
    last_add_confirmed: int
    length: int
    digest: bytes
    payload: bytes


@dataclass(frozen=True, slots=True)
class LacBody:
    """A decoded explicit-LAC body (WRITE_LAC / READ_LAC ``lacBody``)."""

    ledger_id: int
    lac: int
    digest: bytes


def package_entry(
    digest_type: DigestType,
    password: bytes,
    ledger_id: int,
    entry_id: int,
    last_add_confirmed: int,
    length: int,
    payload: bytes,
) -> bytes:
    """An entry body as a writer sends it; ``length`` is the cumulative ledger length."""
    header = ENTRY_HEADER.pack(ledger_id, entry_id, last_add_confirmed, length)
    return header + compute_digest(digest_type, password, header, payload) + payload


def parse_entry(body: bytes, digest_type: DigestType) -> Entry:
    """Split an entry body into its fields without checking the digest."""
    digest_end = ENTRY_HEADER.size + digest_type.length
    if len(body) < digest_end:
        raise MalformedEntry(
            f"entry body of {len(body)} bytes is shorter than header + {digest_type.name} digest"
            f" ({digest_end} bytes)"
        )
    ledger_id, entry_id, lac, length = ENTRY_HEADER.unpack_from(body)
    return Entry(
        ledger_id=ledger_id,
        entry_id=entry_id,
        last_add_confirmed=lac,
        length=length,
        digest=bytes(body[ENTRY_HEADER.size : digest_end]),
        payload=bytes(body[digest_end:]),
    )


def verify_entry(body: bytes, digest_type: DigestType, password: bytes) -> Entry:
    """Parse an entry body and check its digest; raises :class:`DigestMismatch` if it is wrong."""
    entry = parse_entry(body, digest_type)
    expected = compute_digest(digest_type, password, body[: ENTRY_HEADER.size], entry.payload)
    if not hmac.compare_digest(expected, entry.digest):
        raise DigestMismatch(
            f"{digest_type.name} digest mismatch for ledger {entry.ledger_id}"
            f" entry {entry.entry_id}:"
            f" stored {entry.digest.hex()}, computed {expected.hex()}"
        )
    return entry


def package_lac(digest_type: DigestType, password: bytes, ledger_id: int, lac: int) -> bytes:
    """A WRITE_LAC body: ledgerId, lac and the digest of those 16 bytes."""
    header = LAC_HEADER.pack(ledger_id, lac)
    return header + compute_digest(digest_type, password, header)


def verify_lac(body: bytes, digest_type: DigestType, password: bytes) -> LacBody:
    """Parse a LAC body and check its digest."""
    expected_size = LAC_HEADER.size + digest_type.length
    if len(body) != expected_size:
        raise MalformedEntry(
            f"LAC body of {len(body)} bytes, expected {expected_size} for {digest_type.name}"
        )
    ledger_id, lac = LAC_HEADER.unpack_from(body)
    digest = bytes(body[LAC_HEADER.size :])
    expected = compute_digest(digest_type, password, body[: LAC_HEADER.size])
    if not hmac.compare_digest(expected, digest):
        raise DigestMismatch(
            f"{digest_type.name} digest mismatch for LAC body of ledger {ledger_id}"
        )
    return LacBody(ledger_id=ledger_id, lac=lac, digest=digest)
