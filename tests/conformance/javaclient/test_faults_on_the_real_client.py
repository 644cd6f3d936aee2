"""Each fault of a plan taking effect on the REAL Java client (the default BookKeeper release, as
the writer on a ledger of E=3 WQ=2 AQ=2 over four bookies): what the client's callbacks, its
ensemble changes, the metadata or the proxies' logs show afterwards. One session (cluster,
proxies, ZooKeeper proxy, JVM) serves every test; each run is a fresh ledger."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from conformance.javaclient.plans import (
    FaultKind,
    FrameSchedule,
    PlannedFault,
    forge,
    hold_for,
)
from conformance.javaclient.role import Example
from conformance.javaclient.run import session_options, write_example
from conformance.javaclient.search import run_plan
from conformance.javaclient.session import ClientSession
from conformance.javaclient.writer_plans import WriterRunPlan, WriterShape, add_key
from conformance.javaclient.writer_role import WriterRole
from conformance.live.faults import HEAL_STEP
from conformance.verdict import Verdict

pytestmark = [pytest.mark.cluster, pytest.mark.slow]

SHAPE = WriterShape(3, 2, 2)
ROLE = WriterRole(SHAPE)
#: e0's write set is b1, b2 (positions 0 and 1 of the first ensemble); b4 is the spare.
E0_TO_B2 = add_key("b2", 0)
B2_ANSWER_E0 = add_key("b2", 0).__class__("add", "b2", 0, answer=True)


@pytest.fixture(scope="module")
def session(bookkeeper_home: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    run_dir = tmp_path_factory.mktemp("faults")
    with ClientSession(session_options(ROLE, bookkeeper_home, run_dir)) as started:
        yield started


def _run(session: Any, schedule: FrameSchedule, entries: int = 2) -> Example[Any, Any]:
    example = run_plan(session, ROLE, WriterRunPlan(SHAPE, entries, schedule))
    assert example.unapplied is None, example.unapplied
    return example


def _b2_replaced(example: Example[Any, Any]) -> bool:
    """b2 (model bookie 1) left the ensemble: the spare b4 (3) took its position."""
    return any(bookies == (0, 3, 2) for _first, bookies in example.record.segments)


def _callbacks(example: Example[Any, Any]) -> list[str]:
    return [outcome.describe() for outcome in example.record.outcomes]


def test_a_forged_error_answer_to_a_request_makes_the_client_replace_the_bookie(
    session: Any,
) -> None:
    example = _run(session, FrameSchedule({E0_TO_B2: forge("EIO")}))
    assert _b2_replaced(example), example.record.segments
    assert _callbacks(example) == ["add 0 (e0): OK", "add 1 (e1): OK"]
    assert 1 not in example.record.stored[0]  # b2 never got e0: the request was answered
    assert any(f.decision == "forged" for f in example.record.frames)


def test_a_forged_error_in_place_of_a_stored_entrys_answer(session: Any) -> None:
    example = _run(session, FrameSchedule({B2_ANSWER_E0: forge("EIO")}))
    assert _b2_replaced(example), example.record.segments
    assert 1 in example.record.stored[0]  # b2 stored e0; the client was told it failed


def test_a_forged_fenced_answer_fails_the_handle(session: Any) -> None:
    example = _run(session, FrameSchedule({B2_ANSWER_E0: forge("EFENCED")}))
    assert any("LedgerFenced" in line for line in _callbacks(example)), _callbacks(example)


@pytest.mark.parametrize(
    ("status", "replaced", "callback"),
    [
        ("ETOOMANYREQUESTS", True, "OK"),
        ("ENOLEDGER", True, "OK"),
        ("EUA", False, "UnauthorizedAccess"),
    ],
)
def test_each_forged_status_makes_the_client_change_its_ensemble_or_fail(
    session: Any, status: str, replaced: bool, callback: str
) -> None:
    example = _run(session, FrameSchedule({B2_ANSWER_E0: forge(status)}))
    assert _b2_replaced(example) is replaced, (status, example.record.segments)
    assert callback in _callbacks(example)[0], (status, _callbacks(example))


def test_a_restart_keeps_what_the_bookie_stored(session: Any) -> None:
    # b2 is killed and started again (its data kept) when its answer to e0 leaves it: e0 is
    # acknowledged and b2 still returns it afterwards.
    restart = PlannedFault(FaultKind.RESTART, B2_ANSWER_E0, "b2")
    example = _run(session, FrameSchedule(events=(restart,)))
    assert _callbacks(example)[0] == "add 0 (e0): OK"
    assert 1 in example.record.stored[0], example.record.stored


def test_a_pause_at_a_frame_times_the_bookies_adds_out(session: Any) -> None:
    # b2 stops as e1 reaches it: the client times e1 out (its add timeout is 1 s, checked every
    # 1 s) and replaces b2; b2's late answers are ignored. The run resumes b2 when it ends (at
    # about 2 s), so the pause's 6 s only bound how late the client's check may come: with 3 s
    # one fresh-clone CI's client kept b2 (a 1 s delay in the client's timeout checks would do
    # it), and the story below is what a repeat would show.
    pause = PlannedFault(FaultKind.PAUSE, add_key("b2", 1), "b2", 6000)
    example = _run(session, FrameSchedule(events=(pause,)))
    story = ROLE.frame_lines(example.record)
    assert any(1 not in bookies for _first, bookies in example.record.segments), story
    assert example.judgement is not None and example.judgement.ensemble_changes >= 1, story


def test_an_answer_held_past_the_add_timeout_arrives_after_the_ensemble_change(
    session: Any,
) -> None:
    # 6 s against a timeout that fires 1-2 s after the send (1 s, checked every 1 s): 4 s of
    # slack, as the pause test above needed after 3 s (1 s of slack) failed once on CI.
    example = _run(session, FrameSchedule({B2_ANSWER_E0: hold_for(6000)}))
    assert _b2_replaced(example), example.record.segments
    record = example.record
    proxy_of = {name: proxy for proxy, name in ROLE.names(record).items()}
    answer = next(
        f
        for f in record.frames
        if f.proxy == proxy_of["b2"]
        and f.info.entry_id == 0
        and f.info.direction.value == "response"
    )
    delivered = record.deliveries[answer.frame_id]
    resent = min(f.at for f in record.frames if f.proxy == proxy_of["b4"])  # to the spare
    # The client had timed e0 out on b2 and resent it to the spare before b2's answer came.
    assert delivered.delivered and delivered.at > resent


@pytest.mark.parametrize(
    ("kind", "duration_ms"),
    [
        (FaultKind.CRASH, 0),
        (FaultKind.PAUSE, 6000),
        # Refusing new connections matters once the pooled ones are gone (a reset below).
        (FaultKind.REFUSE, 3000),
    ],
)
def test_a_bookie_fault_at_the_start_makes_the_client_replace_it(
    session: Any, kind: FaultKind, duration_ms: int
) -> None:
    # A crash or a refusal fails b2's add at once (order). The pause relies on the add timeout
    # (1-2 s after the send) firing before the 6 s resume: 4 s of slack, as in the test above.
    events = [PlannedFault(kind, None, "b2", duration_ms)]
    if kind is FaultKind.REFUSE:
        events.append(PlannedFault(FaultKind.RESET, None, "b2"))
    example = _run(session, FrameSchedule(events=tuple(events)))
    assert _b2_replaced(example), (kind, example.record.segments, _callbacks(example))
    assert _callbacks(example) == ["add 0 (e0): OK", "add 1 (e1): OK"]


def test_a_reset_connection_fails_the_pending_add_on_that_bookie(session: Any) -> None:
    event = PlannedFault(FaultKind.RESET, E0_TO_B2, "b2")
    # Held 300 ms: under half the 1 s add timeout, so the reset, not the timeout, fails it.
    example = _run(session, FrameSchedule({E0_TO_B2: hold_for(300)}, (event,)))
    assert _b2_replaced(example) or len(example.record.segments) >= 1
    assert ("fault", event.describe()) in example.decisions


def test_held_metadata_writes_delay_the_ensemble_change(session: Any) -> None:
    hold = PlannedFault(FaultKind.HOLD_METADATA, None, None, 2500)
    example = _run(session, FrameSchedule({E0_TO_B2: forge("EIO")}, (hold,)))
    assert _b2_replaced(example), example.record.segments
    zookeeper = session.zookeeper_proxy
    held = [r for r in zookeeper.packets() if r.decision == "hold"]
    assert held, "no metadata write was held"
    first = min(f.at for f in example.record.frames)
    acknowledged = [o.at for o in example.record.outcomes if o.at is not None]
    # The hold starts before the client's first frame and lasts 2.5 s: 0.5 s of slack, minus
    # the client's delay from the hold's start to its first frame (longer on a slower machine).
    assert acknowledged and max(acknowledged) - first > 2.0


def test_an_expired_session_is_seen_by_the_client(session: Any) -> None:
    expire = PlannedFault(FaultKind.EXPIRE_SESSION)
    example = _run(session, FrameSchedule(events=(expire,)))
    assert session.zookeeper_proxy.expiries(), "no expiry recorded"
    assert ("fault", expire.describe()) in example.decisions


def test_a_bookie_restarted_empty_at_the_same_address_has_lost_what_it_acknowledged(
    session: Any,
) -> None:
    # When b2's answer to e0 leaves it, b2 is wiped and started again (its answer goes on once
    # it has): the client's e0 is acknowledged, and b2, a fresh bookie, no longer has it.
    restart = PlannedFault(FaultKind.RESTART_EMPTY, B2_ANSWER_E0, "b2")
    example = _run(session, FrameSchedule(events=(restart,)))
    story = (example.decisions, example.record.segments, example.record.stored)
    assert _callbacks(example)[0] == "add 0 (e0): OK", story
    assert 1 not in example.record.stored[0] and example.record.stored[0], story


def test_a_stalled_connection_holds_the_clients_adds_back(session: Any) -> None:
    # The proxy stops reading from the client: b2's adds wait in the sockets until the stall
    # ends (the client times them out and replaces b2, unless it is slower than the stall).
    # Either branch passes: a slow client's frames reach b2 only after the 3 s stall, over 2 s
    # after its first frame if that came within 1 s of the stall's start.
    stall = PlannedFault(FaultKind.STALL, None, "b2", 3000)
    example = _run(session, FrameSchedule(events=(stall,)))
    record = example.record
    proxy_of = {name: proxy for proxy, name in ROLE.names(record).items()}
    first = min(f.at for f in record.frames)
    to_b2 = [f.at for f in record.frames if f.proxy == proxy_of["b2"]]
    assert _b2_replaced(example) or (to_b2 and min(to_b2) - first > 2.0), (
        record.segments,
        _callbacks(example),
    )


@pytest.mark.parametrize("writers", [1, 2])
def test_two_writers_ledgers_written_together_are_each_judged(session: Any, writers: int) -> None:
    from conformance.javaclient.plans import DROP

    plan = WriterRunPlan(SHAPE, 2, FrameSchedule({E0_TO_B2: DROP}), ledgers=2, writers=writers)
    example = run_plan(session, ROLE, plan)
    assert example.unapplied is None, example.unapplied
    record = example.record
    (other,) = record.others
    assert other.ledger_id != record.ledger_id
    # The drop was the first ledger's: it changed its ensemble; the other kept its own.
    assert _b2_replaced(example), record.segments
    assert len(other.segments) == 1, other.segments
    assert [o.describe() for o in other.outcomes] == ["add 0 (e0): OK", "add 1 (e1): OK"]
    assert other.client_reads == {0: "OK", 1: "OK"}
    assert example.verdict is Verdict.CLEAN, example.judgement
    # Both ledgers' frames went through the proxies, and the other's story is told too.
    ledgers = {f.info.ledger_id for f in record.frames if f.info.ledger_id is not None}
    assert {record.ledger_id, other.ledger_id} <= ledgers
    assert any(f"-- ledger {other.ledger_id}" in line for line in ROLE.story_lines(record))
    # One client shares its connections to a bookie between the ledgers; two clients do not.
    connections = {
        f.info.ledger_id: {(f.proxy, f.connection_id)}
        for f in record.frames
        if f.info.ledger_id in (record.ledger_id, other.ledger_id)
    }
    for f in record.frames:
        if f.info.ledger_id in connections:
            connections[f.info.ledger_id].add((f.proxy, f.connection_id))
    shared = connections[record.ledger_id] & connections[other.ledger_id]
    assert bool(shared) is (writers == 1), connections


def test_a_runs_crash_pause_and_stall_are_in_its_record_json_and_judged_again_alike(
    session: Any, tmp_path: Path
) -> None:
    faults = (
        PlannedFault(FaultKind.CRASH, None, "b3"),
        PlannedFault(FaultKind.PAUSE, None, "b2", 500),
        PlannedFault(FaultKind.STALL, None, "b1", 500),
    )
    example = _run(session, FrameSchedule(events=faults))
    injected = [(e.verb, e.server) for e in example.record.faults if e.step != HEAL_STEP]
    assert injected == [("crash", "b3"), ("pause", "b2"), ("stall", "b1")]
    healed = {(e.verb, e.server) for e in example.record.faults if e.step == HEAL_STEP}
    assert healed == {("restart", "b3"), ("resume", "b2"), ("read again", "b1")}
    write_example(tmp_path, ROLE, example, "record")
    back = ROLE.record_from_json(json.loads((tmp_path / "record.json").read_text()))
    assert back.faults == example.record.faults
    assert example.judgement is not None
    assert ROLE.judge(back).outcome == example.judgement.outcome
    # Its replay (the plan read back from its JSON, as `bkconform replay` reads a run
    # directory's) injects the same faults and records them again.
    plan = ROLE.plan_from_json(json.loads(json.dumps(example.plan.to_json())))
    replayed = run_plan(session, ROLE, plan)
    assert replayed.unapplied is None, replayed.unapplied
    assert [(e.verb, e.server) for e in replayed.record.faults if e.step != HEAL_STEP] == injected
    assert {(e.verb, e.server) for e in replayed.record.faults if e.step == HEAL_STEP} == healed
