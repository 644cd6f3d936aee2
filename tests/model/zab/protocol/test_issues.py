"""Seed 003's three scenarios replayed action by action: each reaches its violation with its
naive switch on, and only then (the same story with the fix, or with another switch on, breaks
nothing)."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from model.search.bfs import Step
from model.zab.protocol.actions import Label
from model.zab.protocol.config import ZabConfig
from model.zab.protocol.invariants import violated
from model.zab.protocol.records import (
    COMMIT,
    COMMIT_INCONSISTENT,
    COMMITLD,
    PROPOSAL_INCONSISTENT,
    PROPOSE,
    State,
)
from model.zab.protocol.render import numbered_trace, sequence_diagram
from model.zab.protocol.scripted import ScriptedStep, run_script, server
from tests.model.zab.protocol import scenarios
from tests.model.zab.protocol.scenarios import C

TWO = ZabConfig(max_timeout_failures=0)
THREE = ZabConfig(max_timeout_failures=0, max_transaction_num=3)


def first_violation(trace: Sequence[Step[State, Label]]) -> int | None:
    """The number of the first step after which an invariant is violated."""
    for number, item in enumerate(trace):
        if violated(item.state):
            return number
    return None


def replay(cfg: ZabConfig, script: Sequence[ScriptedStep]) -> list[Step[State, Label]]:
    return run_script(cfg, script)


def others(issue: int) -> list[frozenset[int]]:
    """The switches a story must not break under: all off and each other switch alone, except
    Issue 1's for the stories of Issues 2 and 3, which need its fix to happen at all."""
    return {
        1: [frozenset(), frozenset({2}), frozenset({3})],
        2: [frozenset(), frozenset({3})],
        3: [frozenset(), frozenset({2})],
    }[issue]


# -- Issue 1 -------------------------------------------------------------------------------


def test_issue1_seed_story_warns_at_commit_and_breaks_at_the_next_propose() -> None:
    script = scenarios.issue1_seed(fixed=False)
    trace = replay(THREE.with_naive({1}), script)
    assert first_violation(trace) == len(script)
    assert violated(trace[-1].state) == ["ShouldNotBeTriggered"]
    assert trace[-1].state.violated == PROPOSAL_INCONSISTENT
    # PROPOSE([1,2,v2]) went to A only: C was in ackeRecv, not in ackldRecv.
    proposals = [
        s.label for s in trace[1:] if s.label and s.label.action == "LeaderBroadcastPROPOSE"
    ]
    assert [sorted(dst for _, dst, _ in p.sent) for p in proposals] == [
        [server("s1")],
        [server("s1")],
        [server("s1"), server("s3")],
    ]
    # COMMIT([1,2]) reached C, which has no [1,2]: the seed's illegal COMMIT, a warning here.
    commit = next(
        s.label for s in trace[1:] if s.label and s.label.action == "FollowerProcessCOMMIT"
    )
    assert commit.received is not None and commit.received.mzxid == (1, 2)
    assert commit.notes == ("Warn: Committing zxid without seeing txn.",)
    assert trace[-1].state.history[server(C)][-1].zxid == (1, 1)


def test_issue1_seed_story_with_the_fix_breaks_nothing() -> None:
    for naive in others(1):
        trace = replay(THREE.with_naive(naive), scenarios.issue1_seed(fixed=True))
        assert first_violation(trace) is None, naive
        final = trace[-1].state
        assert [t.zxid for t in final.history[server(C)]] == [(1, 1), (1, 2), (1, 3)]


def test_issue1_with_two_transactions() -> None:
    script = scenarios.issue1_two_transactions(fixed=False)
    trace = replay(TWO.with_naive({1}), script)
    assert first_violation(trace) == len(script)
    last = trace[-1].label
    assert last is not None and last.notes == (
        "Exception: zxid in COMMITLD not exists in history.",
    )
    for naive in others(1):
        fixed = replay(TWO.with_naive(naive), scenarios.issue1_two_transactions(fixed=True))
        assert first_violation(fixed) is None, naive


def test_issue1_naive_script_is_not_the_fixed_run() -> None:
    """With the fix the naive script drifts: C's next message is the PROPOSE it now gets."""
    with pytest.raises(AssertionError, match="FollowerProcessCOMMITLD"):
        replay(TWO, scenarios.issue1_two_transactions(fixed=False))


# -- Issue 2 -------------------------------------------------------------------------------


def test_issue2_seed_story() -> None:
    script = scenarios.issue2_seed()
    trace = replay(TWO.with_naive({2}), script)
    assert first_violation(trace) == len(script)
    assert trace[-1].state.violated == PROPOSAL_INCONSISTENT
    propose = trace[-3].label
    assert propose is not None and propose.action == "LeaderBroadcastPROPOSE"
    assert sorted(dst for _, dst, m in propose.sent if m.mtype == PROPOSE) == [0, 2]
    for naive in others(2):
        fixed = replay(TWO.with_naive(naive), script)
        assert first_violation(fixed) is None, naive
        # The redundant proposal is dropped: C keeps one [1,1,v1] and sends no ACK for it.
        last = fixed[-1]
        assert last.label is not None and last.label.sent == ()
        assert [t.zxid for t in last.state.history[server(C)]] == [(1, 1)]


# -- Issue 3 -------------------------------------------------------------------------------


def test_issue3_seed_story() -> None:
    script = scenarios.issue3_seed()
    trace = replay(THREE.with_naive({3}), script)
    assert first_violation(trace) == len(script)
    assert trace[-1].state.violated == COMMIT_INCONSISTENT
    commitld = next(
        s.label
        for s in trace[1:]
        if s.label and s.label.action == "LeaderProcessACKLD" and s.label.j == server(C)
    )
    assert [(m.mtype, m.mzxid) for _, _, m in commitld.sent] == [(COMMITLD, (1, 1))]
    last = trace[-1].label
    assert last is not None and last.received is not None
    assert (last.received.mtype, last.received.mzxid) == (COMMIT, (1, 3))
    for naive in others(3):
        fixed = replay(THREE.with_naive(naive), script)
        assert first_violation(fixed) is None, naive
        ackld = next(
            s.label
            for s in fixed[1:]
            if s.label and s.label.action == "LeaderProcessACKLD" and s.label.j == server(C)
        )
        assert [m.mzxid for _, _, m in ackld.sent] == [(1, 2)]
        assert fixed[-1].state.last_committed[server(C)].index == 3


def test_issue3_with_two_transactions() -> None:
    script = scenarios.issue3_two_transactions()
    trace = replay(TWO.with_naive({3}), script)
    assert first_violation(trace) == len(script)
    assert trace[-1].state.violated == COMMIT_INCONSISTENT
    for naive in others(3):
        assert first_violation(replay(TWO.with_naive(naive), script)) is None, naive


def test_a_scenario_renders_as_numbered_trace_and_diagram() -> None:
    cfg = TWO.with_naive({2})
    trace = replay(cfg, scenarios.issue2_seed())
    text = numbered_trace(cfg, trace)
    assert "15. LeaderProcessACKEPOCH(s2, s3): receives ACKEPOCH(0, <>) from s3; sends " in text
    assert "NEWLEADER(1, <[1,1,v1]>) to s3" in text
    assert "violatedInvariants={proposalInconsistent}" in text
    diagram = sequence_diagram(cfg, trace, final_note="VIOLATED: ShouldNotBeTriggered")
    assert "s2->s3: PROPOSE([1,1,v1])" in diagram
    assert "note over s1,s3: VIOLATED: ShouldNotBeTriggered" in diagram
    assert diagram.splitlines()[:3] == ["participant s1", "participant s2", "participant s3"]
