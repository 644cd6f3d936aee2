"""Fault schedules on real ZooKeeper's quorum traffic, as plain data (issue 31, Deliver 4).

A schedule is a tuple of :class:`ZabStep`: client writes, crashes and restarts of servers, and
rules on the quorum proxy (hold a learner's next packet of a type, or kill its sender the
moment it leaves), run in order on a fresh ensemble by :mod:`conformance.zab.guided`. Steps are
data, like Jepsen's operations: they print, compare, shrink (Hypothesis) and round-trip through
JSON (a finding's ``schedule.json``, replayed by ``bkconform replay``).

Servers are named by ``myid`` (``zk1``..``zkN``), by ``leader`` (whoever leads when the step
runs), or by their role when the schedule starts (:data:`ROLES`: ``first-leader``, and its
followers by ``myid``, ``follower-a``, ``follower-b``): names that stay put while leaders
change. A packet is named by ``Leader``'s name (``ACK``, ``PROPOSAL``, ``NEWLEADER``...).

The draw is guided by the spec's window (seed 003; docs/zab-model.md): besides steps drawn one
by one, :func:`schedules` draws whole *window templates*, the model's paths into the window
between a follower's NEWLEADER and its UPTODATE: a follower down while the leader commits, then
restarting into a DIFF while the leader proposes and commits, with its ACK of NEWLEADER held
or its sender killed at it, another follower's ACK held across the sync, or a proposal held on
its way to one follower until the leader dies (the paths of ZOOKEEPER-4394, 4785 and 4925).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from typing import Any

from hypothesis import strategies as st

from adapters.zkquorum.packets import PacketType
from conformance.errors import ConformanceError

VERBS = (
    "write",
    "crash",
    "restart",
    "hold",
    "cut",
    "crash_at",
    "release",
    "await",
    "wait",
    "settle",
)
DIRECTIONS = ("to-leader", "to-learner")
#: The packets a rule may name: the spec's messages on the wire (docs/zab-model.md).
PACKETS = tuple(
    t.name
    for t in (
        PacketType.ACK,
        PacketType.PROPOSAL,
        PacketType.COMMIT,
        PacketType.NEWLEADER,
        PacketType.UPTODATE,
        PacketType.DIFF,
        PacketType.ACKEPOCH,
        PacketType.LEADERINFO,
        PacketType.FOLLOWERINFO,
    )
)
_SENT_BY_LEARNER = frozenset({"ACK", "ACKEPOCH", "FOLLOWERINFO"})
#: Roles fixed when the schedule starts (three servers): the first leader and its followers.
ROLES = ("first-leader", "follower-a", "follower-b")
MAX_WRITES = 50
MAX_WAIT_MS = 2000


class ScheduleError(ConformanceError, ValueError):
    """A schedule that cannot be run as written (a bad verb, server, packet or number)."""


@dataclass(frozen=True)
class ZabStep:
    """One step: ``write`` ``count`` transactions through the writers' session; ``crash``
    (SIGKILL) or ``restart`` ``server``; ``hold`` the next ``packet`` on ``server``'s links (it
    is the learner; ``direction`` follows from the packet: a learner sends ACKs) until
    ``release``; ``cut`` the connection at that packet (not delivered, the connection closed:
    the only loss within the spec's reliable FIFO channels); ``crash_at``: kill the packet's
    sender the moment it leaves (the connection cut there); ``release`` every held packet (or,
    with ``server`` and ``packet``, those of that kind on that server's links); ``await`` (up
    to 10 s) a ``packet`` on ``server``'s links seen since the last write, crash or restart:
    the real servers have got as far as the model's path before its next step; ``wait``
    ``count`` milliseconds; ``settle``: wait (up to 30 s) until every running server
    serves and one leads (a restart does not wait: a rule may be holding the restarted
    server's sync)."""

    verb: str
    server: str = ""
    packet: str = ""
    count: int = 0

    @property
    def direction(self) -> str:
        return "to-leader" if self.packet in _SENT_BY_LEARNER else "to-learner"

    def describe(self) -> str:
        if self.verb == "write":
            return f"write {self.count}"
        if self.verb == "wait":
            return f"wait {self.count} ms"
        if self.verb == "release":
            if self.server:
                return f"release {self.server}'s held {self.packet} ({self.direction})"
            return "release held packets"
        if self.verb == "await":
            return f"await {self.server}'s {self.packet} ({self.direction})"
        if self.verb == "settle":
            return "settle (running servers serve)"
        if self.verb in ("crash", "restart"):
            return f"{self.verb} {self.server}"
        return f"{self.verb} {self.server}'s next {self.packet} ({self.direction})"


def validate_step(step: ZabStep, servers: int) -> ZabStep:
    names = {"leader", *ROLES, *(f"zk{i}" for i in range(1, servers + 1))}
    if step.verb not in VERBS:
        raise ScheduleError(f"unknown verb {step.verb!r}; verbs are {', '.join(VERBS)}")
    if not isinstance(step.count, int) or isinstance(step.count, bool):
        raise ScheduleError(f"{step.verb}: count must be a whole number, got {step.count!r}")
    if not isinstance(step.server, str) or not isinstance(step.packet, str):
        raise ScheduleError(f"{step.verb}: server and packet are names")
    if step.verb in ("crash", "restart", "hold", "cut", "crash_at") and step.server not in names:
        raise ScheduleError(f"{step.verb}: unknown server {step.server!r}; {sorted(names)}")
    if step.verb == "release" and bool(step.server) != bool(step.packet):
        raise ScheduleError("release: name both a server and a packet, or neither")
    names_a_packet = step.verb in ("hold", "cut", "crash_at", "await") or (
        step.verb == "release" and bool(step.server)
    )
    if step.verb in ("await", "release") and step.server and step.server not in names:
        raise ScheduleError(f"{step.verb}: unknown server {step.server!r}; {sorted(names)}")
    if step.verb == "await" and not step.server:
        raise ScheduleError("await: name a server and a packet")
    if names_a_packet and step.packet not in PACKETS:
        raise ScheduleError(f"{step.verb}: unknown packet {step.packet!r}; {', '.join(PACKETS)}")
    if step.verb == "write" and not 1 <= step.count <= MAX_WRITES:
        raise ScheduleError(f"write: count must be 1..{MAX_WRITES}, got {step.count}")
    if step.verb == "wait" and not 0 <= step.count <= MAX_WAIT_MS:
        raise ScheduleError(f"wait: count must be 0..{MAX_WAIT_MS} ms, got {step.count}")
    return step


def to_json(schedule: tuple[ZabStep, ...]) -> str:
    return json.dumps([asdict(step) for step in schedule], indent=1)


def from_json(text: str, servers: int = 3) -> tuple[ZabStep, ...]:
    """A schedule from :func:`to_json`'s text; ScheduleError says what is wrong with it."""
    try:
        rows: Any = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ScheduleError(f"a schedule is a JSON list of steps: {exc}") from exc
    if not isinstance(rows, list):
        raise ScheduleError("a schedule is a JSON list of steps")
    steps = []
    for number, row in enumerate(rows, start=1):
        if not isinstance(row, dict) or not set(row) <= {"verb", "server", "packet", "count"}:
            raise ScheduleError(f"step {number} is not a step: {row!r}")
        try:
            steps.append(validate_step(ZabStep(**row), servers))
        except (TypeError, ScheduleError) as exc:
            raise ScheduleError(f"step {number}: {exc}") from exc
    return tuple(steps)


def steps(servers: int = 3) -> st.SearchStrategy[ZabStep]:
    """One step, any verb."""
    names = st.sampled_from(["leader", *ROLES, *(f"zk{i}" for i in range(1, servers + 1))])
    packets = st.sampled_from(PACKETS)
    return st.one_of(
        st.builds(ZabStep, st.just("write"), count=st.integers(1, 20)),
        st.builds(ZabStep, st.just("crash"), names),
        st.builds(ZabStep, st.just("restart"), names),
        st.builds(ZabStep, st.just("hold"), names, packets),
        st.builds(ZabStep, st.just("cut"), names, packets),
        st.builds(ZabStep, st.just("crash_at"), names, packets),
        st.just(ZabStep("release")),
        st.builds(ZabStep, st.just("wait"), count=st.integers(0, 500)),
        st.just(ZabStep("settle")),
    )


@st.composite
def window_templates(draw: st.DrawFn) -> tuple[ZabStep, ...]:
    """A path into the window between a follower's NEWLEADER and its UPTODATE: the follower
    down while the leader commits, then restarting into a DIFF while the leader proposes and
    commits, with one of the window's faults on the way; or a transaction in the leader's log
    alone, synced by DIFF to the follower that leads next, while the other is down."""
    follower, other = draw(st.permutations(["follower-a", "follower-b"]))
    if draw(st.integers(0, 3)) == 0:
        # The new leader's DIFF (the path of ZOOKEEPER-4925): the other down; a write logged
        # by the leader alone (its PROPOSAL to the follower held while the write waits, then
        # lost with the leader); the leader back, syncing the follower by DIFF; then the
        # follower leads and syncs the other.
        return (
            ZabStep("crash", other),
            ZabStep("hold", follower, "PROPOSAL"),
            ZabStep("write", count=draw(st.integers(1, 3))),
            ZabStep("crash", "first-leader"),
            ZabStep("restart", "first-leader"),
            ZabStep("settle"),
            ZabStep("write", count=draw(st.integers(1, 3))),
            ZabStep("crash", "first-leader"),
            ZabStep("restart", other),
            ZabStep("settle"),
        )
    before = ZabStep("write", count=draw(st.integers(1, 40)))
    during = ZabStep("write", count=draw(st.integers(1, 10)))
    fault = draw(
        st.sampled_from(
            [
                (ZabStep("hold", follower, "ACK"),),  # its ACK of NEWLEADER
                (ZabStep("crash_at", follower, "ACK"),),  # killed as it ACKs NEWLEADER
                (ZabStep("hold", other, "ACK"),),  # an outstanding proposal (4394)
                (ZabStep("cut", follower, "PROPOSAL"),),
                (ZabStep("hold", follower, "UPTODATE"),),
                (ZabStep("crash_at", follower, "NEWLEADER"),),
            ]
        )
    )
    path = [
        ZabStep("crash", follower),
        before,
        *fault,
        ZabStep("restart", follower),
        during,
        ZabStep("wait", count=draw(st.integers(0, 300))),
        ZabStep("release"),
    ]
    if draw(st.booleans()):  # then the leader goes: who leads next decides what survives
        path += [ZabStep("crash", "leader"), ZabStep("write", count=draw(st.integers(1, 5)))]
    return tuple(path)


def schedules(
    servers: int = 3,
    max_steps: int = 24,
    paths: st.SearchStrategy[tuple[ZabStep, ...]] | None = None,
) -> st.SearchStrategy[tuple[ZabStep, ...]]:
    """A schedule: window templates (and ``paths``: the model's paths into the window,
    :func:`conformance.zab.model_paths.model_windows`) and single steps, in any order, up to
    ``max_steps``."""
    # Single steps first: Hypothesis's simplest draws (its first examples, and what a
    # shrinker would aim at) are of the first branch; a template comes apart in the shrinking
    # (:func:`smaller_schedules`).
    templates = window_templates() if paths is None else st.one_of(window_templates(), paths)
    pieces = st.one_of(st.tuples(steps(servers)), templates)
    return st.lists(pieces, min_size=1, max_size=4).map(
        lambda parts: tuple(step for part in parts for step in part)[:max_steps]
    )


def smaller_schedules(schedule: tuple[ZabStep, ...]) -> Iterator[tuple[ZabStep, ...]]:
    """Each schedule one simplification away from ``schedule``: one step taken out (never the
    last), then one write of many made a single write."""
    for index in range(len(schedule)):
        candidate = schedule[:index] + schedule[index + 1 :]
        if candidate:
            yield candidate
    for index, step in enumerate(schedule):
        if step.verb == "write" and step.count > 1:
            yield (*schedule[:index], ZabStep("write", count=1), *schedule[index + 1 :])


__all__ = [
    "PACKETS",
    "ROLES",
    "VERBS",
    "ScheduleError",
    "ZabStep",
    "from_json",
    "schedules",
    "smaller_schedules",
    "steps",
    "to_json",
    "validate_step",
    "window_templates",
]
