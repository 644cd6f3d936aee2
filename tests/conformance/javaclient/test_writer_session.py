"""Writer runs on a real cluster (the default BookKeeper release): the Java client writes
through the proxies, a dropped add makes it change its ensemble, the run judges clean."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from conformance.javaclient.plans import DROP, FrameSchedule
from conformance.javaclient.scenario import deliveries_of
from conformance.javaclient.writer_plans import WriterRunPlan, WriterShape, add_key
from conformance.javaclient.writer_session import (
    WriterRefused,
    WriterSession,
    WriterSessionOptions,
    run_writer_plan,
)


def test_a_client_that_cannot_be_routed_through_the_proxies_is_refused(tmp_path: Path) -> None:
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "org.apache.bookkeeper-bookkeeper-server-4.11.1.jar").write_bytes(b"")
    with pytest.raises(WriterRefused, match=r"BookKeeper >= 4\.12\.0"):
        WriterSession(WriterSessionOptions(tmp_path, tmp_path, WriterShape(3, 2, 2)))


@pytest.mark.cluster
def test_a_dropped_add_makes_the_client_replace_that_bookie_in_place(
    bookkeeper_home: Path, tmp_path: Path
) -> None:
    shape = WriterShape(3, 2, 2)
    plain = WriterRunPlan(shape, 3)
    dropped = WriterRunPlan(shape, 3, FrameSchedule({add_key("b2", 0): DROP}))
    with WriterSession(WriterSessionOptions(bookkeeper_home, tmp_path, shape)) as session:
        first = run_writer_plan(session, plain)
        second = run_writer_plan(session, dropped)
    assert first.verdict == "clean", first.judgement
    assert first.record.segments == [(0, (0, 1, 2))]
    assert [o.describe() for o in first.record.outcomes] == [
        "add 0 (e0): OK",
        "add 1 (e1): OK",
        "add 2 (e2): OK",
    ]
    assert second.verdict == "clean", second.judgement
    assert second.judgement is not None and second.judgement.ensemble_changes == 1
    # b2 (position 1) replaced by the spare b4, in its position.
    assert second.record.segments == [(0, (0, 3, 2))]
    assert second.record.closed_last_entry == 2
    assert 3 in second.record.stored[0] and 1 not in second.record.stored[0]


def test_a_record_keeps_the_deliveries_of_its_own_frames_only() -> None:
    class Group:
        def deliveries(self) -> dict[int, Any]:
            return {1: "old example", 7: "this one", 8: "this one too"}

    frames = [SimpleNamespace(frame_id=7), SimpleNamespace(frame_id=8)]
    kept = deliveries_of(Group(), frames)  # type: ignore[arg-type]
    assert kept == {7: "this one", 8: "this one too"}
