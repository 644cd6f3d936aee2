"""The client's writes of a ledger's metadata read from the ZooKeeper proxy's log, as record
data, and their keys in a recorded order."""

from __future__ import annotations

import time

from adapters.zkproxy import Direction, Op, PacketInfo, PacketRecord, SubOp, ZooKeeperProxy
from conformance.javaclient.metadata_writes import (
    LedgerWrites,
    MetadataWrite,
    write_key,
    writes_from_json,
    writes_from_log,
    writes_to_json,
)
from conformance.javaclient.plans import FrameKey, FrameSchedule, PlanError
from tests.adapters.zkproxy.fake_server import FakeZooKeeper, RawClient

PATH = "/ledgers/00/0000/L0007"


def _packet(
    record_id: int,
    at: float,
    direction: Direction,
    op: Op,
    path: str | None = PATH,
    *,
    answers: int | None = None,
    err: int | None = None,
    sub_ops: tuple[SubOp, ...] = (),
) -> PacketRecord:
    info = PacketInfo(direction, op, xid=record_id, path=path, err=err, sub_ops=sub_ops)
    return PacketRecord(record_id, 3, at, info, 10, "forward", answers=answers)


def test_the_writes_of_the_ledger_s_znode_are_read_with_their_answers() -> None:
    log = [
        _packet(1, 1.0, Direction.REQUEST, Op.GET_DATA),  # a read: not a write
        _packet(2, 1.1, Direction.REQUEST, Op.SET_DATA),
        _packet(3, 1.1, Direction.REQUEST, Op.SET_DATA, "/ledgers/00/0000/L0008"),  # another
        _packet(4, 1.3, Direction.REPLY, Op.SET_DATA, answers=2, err=0),
        # A multi that carries a setData of the ledger (a close in some releases), unanswered.
        _packet(5, 2.0, Direction.REQUEST, Op.MULTI, None, sub_ops=(SubOp(Op.SET_DATA, PATH),)),
        _packet(6, 2.5, Direction.REQUEST, Op.SET_DATA),
        _packet(7, 2.6, Direction.REPLY, Op.SET_DATA, answers=6, err=-103),  # BadVersion
    ]
    assert writes_from_log(log, PATH) == (
        MetadataWrite(1.1, 1.3, "setData", 0, 3),
        MetadataWrite(2.0, None, "multi", None, 3),
        MetadataWrite(2.5, 2.6, "setData", -103, 3),
    )


def test_writes_are_record_data_and_a_record_without_them_reads_as_before() -> None:
    writes = (MetadataWrite(1.1, 1.3, "setData", 0, 3), MetadataWrite(2.0, None, "multi", None, 4))
    assert writes_from_json(writes_to_json(writes)) == writes
    assert writes_to_json(()) == {}
    assert writes_from_json({}) == ()
    assert "answered OK" in writes[0].describe() and "no answer" in writes[1].describe()


def test_a_write_s_keys_are_plan_data_and_say_what_they_are() -> None:
    sent, answered = write_key(0, answered=False), write_key(0, answered=True)
    assert sent.describe() == "the client's metadata write 1 sent"
    assert answered.describe() == "ZooKeeper's answer to the client's metadata write 1"
    b1 = FrameKey("add", "b1", 0, answer=True)
    schedule = FrameSchedule(order=(sent, b1, answered))
    assert FrameSchedule.from_json(schedule.to_json(), ("b1", "b2")).order == (sent, b1, answered)
    # ZooKeeper is no bookie name: a frame key naming it is still refused.
    try:
        FrameKey.from_json({"kind": "add", "bookie": "zookeeper", "entry": 0}, ("b1",))
    except PlanError:
        pass
    else:
        raise AssertionError("an add to 'zookeeper' was accepted")


def test_a_ledger_s_writes_at_the_proxy_are_held_released_answered_and_recorded() -> None:
    with (
        FakeZooKeeper() as server,
        ZooKeeperProxy("127.0.0.1", server.port, call_timeout=5.0) as proxy,
        RawClient((proxy.host, proxy.port)) as raw,
    ):
        assert raw.connect() > 0
        writes = LedgerWrites(proxy, PATH)
        writes.hold()
        raw.get_data(1, PATH)  # a read: not held
        assert raw.read_reply()[0] == 1
        raw.set_data(2, "/ledgers/00/0000/L0008")  # another ledger's write: not held
        assert raw.read_reply()[0] == 2
        raw.set_data(3, PATH)
        deadline = time.monotonic() + 5.0
        while not writes.held() and time.monotonic() < deadline:
            time.sleep(0.01)
        [held] = writes.held()
        assert [p.record_id for p in writes.requests()] == [held.record_id]
        assert writes.requests(after=held.record_id) == []  # none after it
        assert not writes.answered(held.record_id)
        assert writes.release(held.record_id)
        assert not writes.release(held.record_id)  # not held any more: something let it go
        assert raw.read_reply()[0] == 3
        while not writes.answered(held.record_id) and time.monotonic() < deadline:
            time.sleep(0.01)
        assert writes.answered(held.record_id)
        writes.close()
        [write] = writes.writes()
        assert write.op == "setData" and write.err == 0
        assert write.answered_at is not None and write.answered_at >= write.sent_at
        assert proxy.rules() == []  # the hold is gone with close
