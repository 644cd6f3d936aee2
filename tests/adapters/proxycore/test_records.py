"""The record log: ids in order, finds after a mark, waits that end or time out."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

import pytest

from adapters.proxycore.records import DeliveryRecord, RecordLog


@dataclass
class Note:
    record_id: int
    text: str


class Late(TimeoutError):
    pass


def add(log: RecordLog[Note, str], text: str) -> Note:
    return log.add(lambda record_id: Note(record_id, text))


def test_ids_are_places_in_the_log_and_since_counts_them() -> None:
    log: RecordLog[Note, str] = RecordLog()
    notes = [add(log, text) for text in "abcb"]
    assert [note.record_id for note in notes] == [1, 2, 3, 4] and log.last_id == 4
    assert log.records_after(2) == notes[2:]
    assert log.records_after(0, lambda n: n.text == "b") == [notes[1], notes[3]]
    assert log.find_record(lambda n: n.text == "b", since=2) is notes[3]
    assert log.find_record(lambda n: n.text == "z") is None


def test_connections_and_deliveries_are_kept() -> None:
    log: RecordLog[Note, str] = RecordLog()
    assert [log.next_connection_id(), log.next_connection_id()] == [1, 2]
    log.add_connection("c1")
    log.add_delivery(DeliveryRecord(3, 1.0, False, "drop"))
    assert log.connections == ["c1"]
    assert log.deliveries[3].frame_id == 3 and not log.deliveries[3].delivered


def test_a_wait_ends_when_a_fitting_record_arrives_after_the_mark() -> None:
    async def scenario() -> Note:
        log: RecordLog[Note, str] = RecordLog()
        add(log, "x")
        waiting = asyncio.ensure_future(
            log.wait_for_record(
                lambda n: n.text == "x", since=1, timeout=5, timed_out=lambda n: Late()
            )
        )
        await asyncio.sleep(0)
        add(log, "y")
        assert not waiting.done()
        add(log, "x")
        return await waiting

    assert asyncio.run(scenario()) == Note(3, "x")


def test_a_wait_with_nothing_fitting_times_out_and_leaves_no_waiter() -> None:
    async def scenario() -> RecordLog[Note, str]:
        log: RecordLog[Note, str] = RecordLog()
        add(log, "a")
        with pytest.raises(Late, match="1 later"):
            await log.wait_for_record(
                lambda n: n.text == "z",
                since=0,
                timeout=0.05,
                timed_out=lambda later: Late(f"{later} later"),
            )
        return log

    assert asyncio.run(scenario())._waiters == []
