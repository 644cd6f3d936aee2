"""The spec's paths into its window: the goals, ZooKeeper's elections, and what cannot happen."""

from __future__ import annotations

import pytest

from model.search.bfs import breadth_first
from model.zab.protocol.actions import Label, successors
from model.zab.protocol.config import ZabConfig
from model.zab.protocol.records import BROADCAST, FOLLOWING, LEADING, LOOKING
from model.zab.protocol.windows import (
    WINDOW_GOALS,
    WindowState,
    elects_as_zookeeper,
    established,
    in_window,
    outvoting,
    path_into,
    step_window,
)

BOUNDS = ZabConfig(
    max_epoch=3, max_transaction_num=2, max_timeout_failures=3, max_restarts=2, record_pc=False
)


def test_the_paths_start_from_an_established_ensemble_led_by_s1() -> None:
    state = established(BOUNDS)
    assert state.state == (LEADING, FOLLOWING, FOLLOWING)
    assert state.zab_state == (BROADCAST,) * 3
    assert not any(state.msgs)
    with pytest.raises(ValueError, match="three servers"):
        established(ZabConfig(servers=5))


@pytest.mark.parametrize("goal", list(WINDOW_GOALS))
def test_each_goal_is_reached_by_its_last_step(goal: str) -> None:
    path = path_into(BOUNDS, goal)
    assert path is not None and path.goal == goal
    labels = [step.label for step in path.steps[1:]]
    assert path.steps[0].label is None and path.steps[0].state == established(BOUNDS)
    last = labels[-1]
    assert last is not None
    stages = WINDOW_GOALS[goal][0]
    expected = {
        "propose": "FollowerProcessPROPOSE",
        "restart": "Restart",
        "leader": ("Restart", "Timeout"),
        "marked": "UpdateLeader",
    }[stages[-1].partition("-")[0]]
    assert last.action in expected
    if "diffed" in goal or "after-diff" in goal:
        # A NEWLEADER on the way brought the follower transactions it lacked.
        assert any(
            label is not None
            and label.action == "FollowerProcessNEWLEADER"
            and label.received is not None
            and label.received.mhistory
            for label in labels
        )


def test_the_window_follower_is_the_one_that_leads_at_the_end() -> None:
    path = path_into(BOUNDS, "restarted-follower-leads")
    assert path is not None
    labels = [s.label for s in path.steps[1:] if s.label is not None]
    restarted = next(label.i for label in labels if label.action == "Restart")
    assert labels[-1] == Label("UpdateLeader", restarted)


def test_an_unknown_goal_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown goal 'commit'"):
        path_into(BOUNDS, "commit")


def test_a_goal_out_of_the_bounds_has_no_path() -> None:
    # Without a timeout or a restart no follower ever leaves BROADCAST again.
    still = ZabConfig(max_epoch=3, max_transaction_num=2, max_timeout_failures=0, record_pc=False)
    assert path_into(still, "propose-in-window") is None


def test_zookeepers_election_elects_the_highest_vote_of_a_quorum() -> None:
    state = established(BOUNDS)
    looking = state._replace(state=(LOOKING,) * 3, leader_oracle=-1)
    # Equal epochs and logs: the rank decides (s1 ranks highest), so s1 may lead with any
    # quorum; s3 outvotes s2, so s2 needs s1 and s3 down, and two of three is no quorum.
    assert elects_as_zookeeper(looking, Label("UpdateLeader", 0))
    assert elects_as_zookeeper(looking, Label("UpdateLeader", 2))  # with s2, s1 down
    assert not elects_as_zookeeper(looking, Label("UpdateLeader", 1))
    assert outvoting(looking, 2) == [0] and outvoting(looking, 0) == []
    assert not elects_as_zookeeper(state, Label("UpdateLeader", 1))  # s1 still leads
    assert elects_as_zookeeper(state, Label("Timeout", 0, 1))  # not an election


def test_a_follower_is_in_the_window_from_newleader_to_commit_ld() -> None:
    path = path_into(BOUNDS, "propose-in-window")
    assert path is not None
    node = WindowState(path.steps[0].state, 0, 0, 0, -1)
    seen = []
    for step in path.steps[1:]:
        assert step.label is not None
        node = step_window(node, step.label, step.state, ("propose",))
        seen.append((step.label.action, node.window))
    newleader = next(k for k, (a, _) in enumerate(seen) if a == "FollowerProcessNEWLEADER")
    assert all(window == 0 for _, window in seen[:newleader])
    assert all(window == 0b010 for _, window in seen[newleader:])
    assert in_window(path.steps[-1].state, 1)


@pytest.mark.parametrize(("timeouts", "transactions"), [(1, 2), (2, 1)])
def test_the_spec_never_sends_a_commit_into_the_window(timeouts: int, transactions: int) -> None:
    # COMMIT goes to followers that acknowledged NEWLEADER, behind their COMMIT-LD on the same
    # FIFO channel: in the fixed spec no follower takes one in the window (real servers do:
    # ZOOKEEPER-4394). Exhaustive within these bounds.
    cfg = ZabConfig(
        max_epoch=3,
        max_transaction_num=transactions,
        max_timeout_failures=timeouts,
        max_restarts=0,
        record_pc=False,
    )

    def successors_of(node: WindowState) -> list[tuple[Label, WindowState]]:
        out = []
        for t in successors(cfg, node.state):
            commit = t.label.action == "FollowerProcessCOMMIT" and node.window >> t.label.i & 1
            after = step_window(node, t.label, t.state, ())
            out.append((t.label, after._replace(stage=1 if commit else 0)))
        return out

    start = WindowState(established(cfg), 0, 0, 0, -1)
    result = breadth_first(start, successors_of, lambda n: ["commit"] if n.stage else [])
    assert result.complete and result.violation is None
    assert result.distinct_states > 1000
