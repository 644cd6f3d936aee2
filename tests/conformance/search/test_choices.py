"""Choice lists: recorded, replayed, and written as Hypothesis reproduce blobs."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.core import decode_failure, encode_failure

from conformance.search.choices import (
    RecordingChooser,
    ReplayChooser,
    ReplayExhausted,
    from_blob,
    to_blob,
)

choice_lists = st.lists(st.integers(0, 2**16), max_size=300)


@given(choice_lists)
def test_blobs_round_trip_in_hypothesis_reproduce_format(choices: list[int]) -> None:
    blob = to_blob(choices)
    assert from_blob(blob) == choices
    # The same bytes Hypothesis's @reproduce_failure takes and prints.
    assert blob.encode() == encode_failure(choices)
    assert list(decode_failure(blob.encode())) == choices


@pytest.mark.parametrize("bad", ["", "not base64!", "AAAA", "Ag=="])
def test_a_bad_blob_is_a_clear_error(bad: str) -> None:
    with pytest.raises(ValueError, match="not an example blob"):
        from_blob(bad)


def test_replay_feeds_back_the_recorded_choices_clamped_to_range() -> None:
    replay = ReplayChooser([3, 7, 100])
    recorder = RecordingChooser(replay)
    assert [recorder.integer(0, 5), recorder.integer(0, 5), recorder.integer(0, 5)] == [3, 5, 5]
    assert recorder.made == [3, 5, 5]
    with pytest.raises(ReplayExhausted):
        replay.integer(0, 1)


def test_a_lenient_replay_reads_the_simplest_choice_past_the_end() -> None:
    replay = ReplayChooser([], strict=False)
    assert replay.integer(2, 9) == 2
