"""The spec's paths into its window: the model's shortest runs from an established ensemble to
a follower between NEWLEADER and COMMIT-LD meeting a proposal, a restart or the loss of its
leader, and on to its leading (issue 31, Deliver 4; seed 003's three naive readings all live
there, and so do ZOOKEEPER-4394, 4785 and 4925).

Whether a follower is in the window depends on the path, not only on the state (a follower that
rejoins its leader in the same epoch has the same epochs before and after NEWLEADER), so the
search runs over :class:`WindowState`: the spec's state, the followers in the window (and which
of them got transactions they lacked), and how far the path is through the goal's stages. Its
elections are ZooKeeper's, not the spec's free oracle (:func:`elects_as_zookeeper`), because a
path is only useful to real servers if they would take it: a server leads only when no one
leads and it has the highest epoch, then zxid, then rank in a quorum of the servers looking.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import NamedTuple

from model.search.bfs import Step, breadth_first
from model.zab.protocol.actions import Label, last_zxid, successors
from model.zab.protocol.config import ZabConfig
from model.zab.protocol.records import (
    FOLLOWING,
    LEADING,
    LOOKING,
    SYNCHRONIZATION,
    State,
    Zxid,
)
from model.zab.protocol.scripted import run_script, step

#: The stages a goal's path passes, in order, each a step taken while a follower is in the
#: window (or, after the first, by that follower); and what the goal is. A COMMIT inside the
#: window is no goal: the spec sends COMMIT only to followers that acknowledged NEWLEADER, after
#: their COMMIT-LD on the same FIFO channel, so it cannot happen there (real servers do send
#: COMMITs in the window: ZOOKEEPER-4394).
WINDOW_GOALS: dict[str, tuple[tuple[str, ...], str]] = {
    "propose-in-window": (
        ("propose",),
        "a follower between NEWLEADER and COMMIT-LD takes a PROPOSE",
    ),
    "propose-after-diff": (
        ("propose-diffed",),
        "a follower synced with transactions it missed takes a PROPOSE before COMMIT-LD",
    ),
    "follower-restarts-after-diff": (
        ("restart-diffed",),
        "a follower synced with transactions it missed restarts before COMMIT-LD",
    ),
    "leader-goes-after-diff": (
        ("leader-goes-diffed",),
        "the leader restarts or loses a follower while another, synced with transactions it "
        "missed, is before COMMIT-LD",
    ),
    "diffed-follower-leads": (
        ("leader-goes-diffed", "marked-leads"),
        "a follower synced with transactions it missed loses its leader in the window, then leads",
    ),
    "restarted-follower-leads": (
        ("restart-diffed", "marked-leads"),
        "a follower synced with transactions it missed restarts in the window, then leads",
    ),
}

#: The first election of three servers, s1 leading: every server in BROADCAST in epoch 1,
#: nothing in flight. Real schedules start from an ensemble in this state (its first leader,
#: its two followers), so the model's paths do too.
ESTABLISHED = (
    step("UpdateLeader", "s1"),
    step("FollowLeader", "s2"),
    step("FollowLeader", "s3"),
    step("ConnectAndFollowerSendCEPOCH", "s1", "s2"),
    step("ConnectAndFollowerSendCEPOCH", "s1", "s3"),
    step("LeaderProcessCEPOCH", "s1", "s2"),
    step("LeaderProcessCEPOCH", "s1", "s3"),
    step("FollowerProcessNEWEPOCH", "s2", "s1"),
    step("FollowerProcessNEWEPOCH", "s3", "s1"),
    step("LeaderProcessACKEPOCH", "s1", "s2"),
    step("LeaderProcessACKEPOCH", "s1", "s3"),
    step("FollowerProcessNEWLEADER", "s2", "s1"),
    step("FollowerProcessNEWLEADER", "s3", "s1"),
    step("LeaderProcessACKLD", "s1", "s2"),
    step("LeaderProcessACKLD", "s1", "s3"),
    step("FollowerProcessCOMMITLD", "s2", "s1"),
    step("FollowerProcessCOMMITLD", "s3", "s1"),
)

#: A client's write committed everywhere on top of :data:`ESTABLISHED`: the start of the paths
#: that need an acknowledged write to lose (a shortest path commits nothing).
COMMITTED_WRITE = (
    step("LeaderProcessRequest", "s1"),
    step("LeaderBroadcastPROPOSE", "s1"),
    step("FollowerProcessPROPOSE", "s2", "s1"),
    step("FollowerProcessPROPOSE", "s3", "s1"),
    step("LeaderProcessACK", "s1", "s2"),
    step("LeaderProcessACK", "s1", "s3"),
    step("FollowerProcessCOMMIT", "s2", "s1"),
    step("FollowerProcessCOMMIT", "s3", "s1"),
)

#: ZooKeeper's tie-break among servers of equal epoch and zxid is the highest myid. A fresh
#: ensemble of three elects its highest myid first, so s1 (the first leader) ranks highest;
#: s2 and s3 are its followers by ascending myid (``follower-a``, ``follower-b``).
RANK = (3, 1, 2)


class WindowState(NamedTuple):
    """A state of the spec with what the path did: the followers (bitmasks) between NEWLEADER
    and COMMIT-LD, and those of them whose NEWLEADER brought transactions they lacked (a DIFF
    on real servers); the stages of the goal passed, and the follower the first stage was
    about (-1 before it)."""

    state: State
    window: int
    diffed: int
    stage: int
    marked: int


def established(cfg: ZabConfig, *, written: bool = False) -> State:
    """The state after :data:`ESTABLISHED` (and :data:`COMMITTED_WRITE`, ``written``)."""
    if cfg.servers != 3:
        raise ValueError(f"the window's paths start from three servers, not {cfg.servers}")
    return run_script(cfg, ESTABLISHED + (COMMITTED_WRITE if written else ()))[-1].state


def elects_as_zookeeper(state: State, label: Label, rank: Sequence[int] = RANK) -> bool:
    """Whether ZooKeeper's election could make this step: an ``UpdateLeader(i)`` only while
    nobody leads and ``i`` has the highest (epoch, last zxid, rank) in a quorum of the servers
    looking (fast leader election elects the highest vote of those it hears from; the looking
    servers with higher votes must then be down: :func:`outvoting` names them). Every other
    step is allowed."""
    if label.action != "UpdateLeader":
        return True
    if LEADING in state.state:
        return False
    looking = [k for k, role in enumerate(state.state) if role == LOOKING]
    mine = vote(state, label.i, rank)
    voters = [k for k in looking if vote(state, k, rank) <= mine]
    return 2 * len(voters) > len(state.state)


def vote(state: State, server: int, rank: Sequence[int] = RANK) -> tuple[int, Zxid, int]:
    """A server's vote in fast leader election: its epoch, its last zxid, its rank (myid)."""
    return (state.current_epoch[server], last_zxid(state.history[server]), rank[server])


def outvoting(state: State, leader: int, rank: Sequence[int] = RANK) -> list[int]:
    """The looking servers whose vote beats ``leader``'s: down while it is elected."""
    mine = vote(state, leader, rank)
    return [
        k
        for k, role in enumerate(state.state)
        if role == LOOKING and k != leader and vote(state, k, rank) > mine
    ]


def in_window(state: State, follower: int) -> bool:
    return state.state[follower] == FOLLOWING and state.zab_state[follower] == SYNCHRONIZATION


def step_window(
    before: WindowState, label: Label, after: State, stages: Sequence[str]
) -> WindowState:
    """The window, and the goal's progress, after ``label`` took ``before.state`` to ``after``."""
    window, diffed = before.window, before.diffed
    stage, marked = before.stage, before.marked
    if stage < len(stages):
        follower = stage_follower(stages[stage], before, label)
        if follower is not None:
            stage, marked = stage + 1, follower
    i = label.i
    took_newleader = label.action == "FollowerProcessNEWLEADER" and in_window(after, i)
    if took_newleader and after.current_epoch[i] == after.accepted_epoch[i]:
        window |= 1 << i
        if len(after.history[i]) > len(before.state.history[i]):
            diffed |= 1 << i
    # A follower leaves the window at COMMIT-LD, or when it stops following (a restart, a
    # timeout, its leader's shutdown).
    for follower in range(len(after.state)):
        if window >> follower & 1 and not in_window(after, follower):
            window &= ~(1 << follower)
            diffed &= ~(1 << follower)
    return WindowState(after, window, diffed, stage, marked)


def stage_follower(stage: str, before: WindowState, label: Label) -> int | None:
    """The follower a step passes ``stage`` for (None: it does not pass it). ``-diffed``
    stages count only followers whose NEWLEADER brought transactions they lacked."""
    name, _, diffed = stage.partition("-")
    window = before.diffed if diffed else before.window
    state = before.state
    if name == "propose" and label.action == "FollowerProcessPROPOSE":
        return label.i if window >> label.i & 1 else None
    if name == "restart" and label.action == "Restart":
        return label.i if window >> label.i & 1 else None
    if name == "leader" and label.action in ("Restart", "Timeout"):
        leader = label.i
        if state.state[leader] != LEADING:
            return None
        lost = label.j if label.action == "Timeout" else None
        for follower in range(len(state.state)):
            if (
                follower != lost
                and window >> follower & 1
                and state.connect_info[follower] == leader
            ):
                return follower
        return None
    if name == "marked" and label.action == "UpdateLeader":
        return label.i if label.i == before.marked else None
    return None


class WindowPath(NamedTuple):
    """The model's shortest path to a goal: its steps from the established state (the first
    step is that state, with no label), the states searched, and the goal."""

    goal: str
    steps: list[Step[State, Label]]
    searched: int
    written: bool = False


def path_into(
    cfg: ZabConfig,
    goal: str,
    *,
    written: bool = False,
    max_states: int = 2_000_000,
    allowed: Callable[[State, Label], bool] = elects_as_zookeeper,
) -> WindowPath | None:
    """The shortest path from :func:`established` (with a committed write first,
    ``written``) to ``goal`` (breadth first over :class:`WindowState`, steps filtered by
    ``allowed``); None when the bounds of ``cfg`` (or ``max_states``) leave no such path."""
    if goal not in WINDOW_GOALS:
        raise ValueError(f"unknown goal {goal!r}; goals are {', '.join(WINDOW_GOALS)}")
    stages = WINDOW_GOALS[goal][0]
    start = WindowState(established(cfg, written=written), 0, 0, 0, -1)

    def successors_of(node: WindowState) -> list[tuple[Label, WindowState]]:
        return [
            (t.label, step_window(node, t.label, t.state, stages))
            for t in successors(cfg, node.state)
            if allowed(node.state, t.label)
        ]

    def check(node: WindowState) -> list[str]:
        return [goal] if node.stage == len(stages) else []

    result = breadth_first(start, successors_of, check, max_states=max_states)
    if result.violation is None:
        return None
    steps = [Step(s.label, s.state.state) for s in result.violation.trace]
    return WindowPath(goal, steps, result.distinct_states, written)


__all__ = [
    "COMMITTED_WRITE",
    "ESTABLISHED",
    "RANK",
    "WINDOW_GOALS",
    "WindowPath",
    "WindowState",
    "elects_as_zookeeper",
    "established",
    "in_window",
    "outvoting",
    "path_into",
    "stage_follower",
    "step_window",
    "vote",
]
