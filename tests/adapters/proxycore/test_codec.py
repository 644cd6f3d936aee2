"""The length-prefixed splitter: payloads across chunk boundaries, and a refused length."""

from __future__ import annotations

import pytest

from adapters.proxycore.codec import LengthPrefixedSplitter, with_length


class Refused(ValueError):
    pass


def splitter(max_size: int = 100) -> LengthPrefixedSplitter:
    return LengthPrefixedSplitter(max_size, lambda length, limit: Refused(f"{length}/{limit}"))


def test_payloads_come_out_whole_and_in_order_whatever_the_chunks() -> None:
    stream = with_length(b"one") + with_length(b"") + with_length(b"three")
    for cut in range(len(stream) + 1):
        split = splitter()
        got = split.feed(stream[:cut]) + split.feed(stream[cut:])
        assert got == [b"one", b"", b"three"], cut
        assert split.pending == 0


def test_a_partial_payload_waits_for_the_rest() -> None:
    split = splitter()
    assert split.feed(with_length(b"abcdef")[:7]) == []
    assert split.pending == 7
    assert split.feed(b"def") == [b"abcdef"]


@pytest.mark.parametrize("length", [-1, 101])
def test_a_length_outside_the_limit_is_refused(length: int) -> None:
    with pytest.raises(Refused, match=f"{length}/100"):
        splitter().feed(length.to_bytes(4, "big", signed=True))


def test_with_length_prefixes_the_big_endian_length() -> None:
    assert with_length(b"xy") == b"\x00\x00\x00\x02xy"
