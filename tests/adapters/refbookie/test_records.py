"""The journal / entry-log record format."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from adapters.refbookie.records import Record, RecordKind, decode_records, encode_record

records = st.builds(
    Record,
    kind=st.sampled_from(list(RecordKind)),
    ledger_id=st.integers(-(2**63), 2**63 - 1),
    data=st.binary(max_size=64),
)


@given(items=st.lists(records, max_size=5), cut=st.integers(min_value=1, max_value=200))
def test_records_round_trip_and_torn_tails_are_cut(items: list[Record], cut: int) -> None:
    encoded = [encode_record(r.kind, r.ledger_id, r.data) for r in items]
    stream = b"".join(encoded)
    assert decode_records(stream) == (items, len(stream))
    if items:
        torn = stream[: max(0, len(stream) - cut)]
        decoded, end = decode_records(torn)
        assert decoded == items[: len(decoded)]
        assert end == sum(len(e) for e in encoded[: len(decoded)])
        assert len(decoded) < len(items)


def test_corrupt_record_stops_replay() -> None:
    first = encode_record(RecordKind.FENCE, 1)
    second = bytearray(encode_record(RecordKind.ENTRY, 1, b"body"))
    second[-1] ^= 0xFF
    assert decode_records(first + bytes(second)) == ([Record(RecordKind.FENCE, 1)], len(first))
