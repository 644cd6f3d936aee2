"""Proxy schedules: Defect 1's recipe as rules, installed on real proxies and applied to real
frames (three reference bookies; our Python wire client stands in for the recovering client
here, sending the frames a recovery sends, so that the schedule, the proxies' log and the
judgement are tested together without a BookKeeper distribution)."""

from __future__ import annotations

import asyncio

import pytest

from adapters.bookkeeper.status import StatusCode
from adapters.netproxy import (
    Direction,
    Drop,
    FrameFlag,
    FrameInfo,
    Hold,
    Operation,
    Protocol,
    ProxyGroup,
)
from adapters.refbookie.server import BookieServer
from conformance.javaclient.recovery_role import writer_add
from conformance.javaclient.schedule import (
    HOLD_MARGIN_S,
    ScheduleError,
    defect1_schedule,
    install,
)
from conformance.javaclient.story import RecoveryRecord, judge
from conformance.verdict import Verdict
from tests.conformance.javaclient.recorded import recipe_answers, recipe_writer
from tests.conformance.javaclient.standin import LEDGER, recover_like_java


def _info(direction: Direction, entry: int, *flags: FrameFlag) -> FrameInfo:
    return FrameInfo(direction, Operation.READ_ENTRY, Protocol.V3, LEDGER, entry, frozenset(flags))


def test_the_defect_1_schedule_names_frames_by_meaning() -> None:
    drop, hold = defect1_schedule(LEDGER, 300)
    assert (drop.bookie, drop.action, drop.times) == ("b3", Drop(), 1)
    assert drop.match.matches(_info(Direction.REQUEST, -1, FrameFlag.FENCE_LEDGER))
    assert not drop.match.matches(_info(Direction.REQUEST, 0, FrameFlag.FENCE_LEDGER))
    assert not drop.match.matches(_info(Direction.REQUEST, -1))
    assert (hold.bookie, hold.action) == ("b2", Hold(release_after=0.3 + HOLD_MARGIN_S))
    # b2's answer to the recovery read of e0, whether or not the read fenced.
    assert hold.match.matches(_info(Direction.RESPONSE, 0))
    assert hold.match.matches(_info(Direction.RESPONSE, 0, FrameFlag.FENCE_LEDGER))
    assert not hold.match.matches(_info(Direction.REQUEST, 0))
    assert not hold.match.matches(_info(Direction.RESPONSE, -1, FrameFlag.FENCE_LEDGER))
    assert drop.describe() == "b3: request READ_ENTRY entry -1 +FENCE_LEDGER -> Drop()"


def test_installing_needs_the_proxy_of_every_named_bookie() -> None:
    with ProxyGroup(call_timeout=5.0) as group:
        b1 = group.add("p1", "127.0.0.1", 9)
        with pytest.raises(ScheduleError, match=r"names bookies \['b2', 'b3'\]"):
            install({"b1": b1}, defect1_schedule(LEDGER, 300))
        assert b1.rules() == []
        proxies = {name: group.add(f"p{name[1]}", "127.0.0.1", 9) for name in ("b2", "b3")}
        ids = install({"b1": b1, **proxies}, defect1_schedule(LEDGER, 300))
        assert len(ids) == 2
        assert [rule.action for _id, rule, _left in proxies["b3"].rules()] == [Drop()]


@pytest.mark.cluster
@pytest.mark.parametrize("fence_reads", [False, True], ids=["unfenced", "fenced"])
def test_the_schedule_on_real_frames_gives_the_verdict(
    bookies: list[BookieServer], fence_reads: bool
) -> None:
    direct = [("127.0.0.1", bookie.port) for bookie in bookies]
    assert writer_add(direct[1], LEDGER, 5.0) is StatusCode.EOK
    with ProxyGroup(call_timeout=5.0) as group:
        proxies = {f"b{i + 1}": group.add(f"b{i + 1}", *direct[i]) for i in range(3)}
        install(proxies, defect1_schedule(LEDGER, 300))
        # b2's answer is held 0.8 s (0.3 + HOLD_MARGIN_S): b3's read, sent at 0.3 s, has 0.5 s
        # to be answered first; the held answer has 0.7 s left of the stand-in's 1.5 s timeout.
        asyncio.run(recover_like_java([(p.host, p.port) for p in proxies.values()], fence_reads))
        frames, deliveries = group.frames(), group.deliveries()
    late = writer_add(direct[2], LEDGER, 5.0)
    assert late is (StatusCode.EFENCED if fence_reads else StatusCode.EOK)
    record = RecoveryRecord(
        ledger_id=LEDGER,
        bookie_of_proxy={"b1": 0, "b2": 1, "b3": 2},
        frames=frames,
        deliveries=deliveries,
        writer=recipe_writer(),
        writer_answers=recipe_answers(recipe_writer(), late),
        # This stand-in does not write metadata; two NoSuchEntry answers close a Java
        # recovery at -1, which is what the real client writes.
        closed_last_entry=-1,
    )
    judgement = judge(record)
    assert judgement.reads_fenced is fence_reads
    if fence_reads:
        assert judgement.verdict is Verdict.CLEAN, judgement.outcome.divergences
    else:
        assert judgement.outcome.violations == ["NoDivergenceBetweenClientAndMetaData"]
        assert sum("without FENCE_LEDGER" in d for d in judgement.outcome.divergences) == 3
    assert [f.decision for f in frames if f.decision != "forward"] == ["drop", "hold"]
