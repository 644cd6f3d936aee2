"""Entry and LAC bodies with every digest type."""

from __future__ import annotations

import hashlib

import pytest
from hypothesis import given
from hypothesis import strategies as st

from adapters.bookkeeper.entry import (
    DigestType,
    compute_digest,
    master_key,
    package_entry,
    package_lac,
    parse_entry,
    verify_entry,
    verify_lac,
)
from adapters.bookkeeper.errors import DigestMismatch, MalformedEntry

int64s = st.integers(-(2**63), 2**63 - 1)


def test_master_key_matches_golden_constant() -> None:
    assert master_key(b"golden").hex() == "615ed0089f3a2db1c1f7182910edc04428396d09"
    assert master_key(b"") == hashlib.sha1(b"ledger").digest()


def test_digest_widths_and_known_values() -> None:
    assert {d: d.length for d in DigestType} == {
        DigestType.CRC32: 8, DigestType.HMAC: 20, DigestType.CRC32C: 4, DigestType.DUMMY: 0,
    }  # fmt: skip
    # Standard check values of CRC-32 and CRC-32C over "123456789".
    assert compute_digest(DigestType.CRC32, b"", b"1234", b"56789").hex() == "00000000cbf43926"
    assert compute_digest(DigestType.CRC32C, b"", b"123456789").hex() == "e3069283"
    # README hand-decode 1: ledger 150, entry 0, lac -1, length 7, "entry-0".
    body = package_entry(DigestType.CRC32, b"golden", 150, 0, -1, 7, b"entry-0")
    assert body[32:40].hex() == "00000000e7850460"


@given(
    digest_type=st.sampled_from(list(DigestType)),
    password=st.binary(max_size=16),
    ids=st.tuples(int64s, int64s, int64s, int64s),
    payload=st.binary(max_size=300),
)
def test_entry_round_trip_and_tamper_detection(
    digest_type: DigestType, password: bytes, ids: tuple[int, int, int, int], payload: bytes
) -> None:
    body = package_entry(digest_type, password, *ids, payload)
    entry = verify_entry(body, digest_type, password)
    assert (entry.ledger_id, entry.entry_id, entry.last_add_confirmed, entry.length) == ids
    assert entry.payload == payload
    assert len(body) == 32 + digest_type.length + len(payload)
    if digest_type is not DigestType.DUMMY:
        tampered = body + b"!"
        with pytest.raises(DigestMismatch):
            verify_entry(tampered, digest_type, password)


def test_hmac_depends_on_password() -> None:
    body = package_entry(DigestType.HMAC, b"a", 1, 2, 3, 4, b"x")
    with pytest.raises(DigestMismatch):
        verify_entry(body, DigestType.HMAC, b"b")


@given(digest_type=st.sampled_from(list(DigestType)), ledger_id=int64s, lac=int64s)
def test_lac_body_round_trip(digest_type: DigestType, ledger_id: int, lac: int) -> None:
    body = package_lac(digest_type, b"pw", ledger_id, lac)
    decoded = verify_lac(body, digest_type, b"pw")
    assert (decoded.ledger_id, decoded.lac) == (ledger_id, lac)
    with pytest.raises(MalformedEntry):
        verify_lac(body + b"\0", digest_type, b"pw")


def test_short_bodies_are_malformed() -> None:
    with pytest.raises(MalformedEntry):
        parse_entry(b"\0" * 39, DigestType.CRC32)
    assert parse_entry(b"\0" * 32, DigestType.DUMMY).payload == b""
