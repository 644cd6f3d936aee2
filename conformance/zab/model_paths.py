"""The model's paths into the window, turned into schedules for real servers (issue 31,
Deliver 4).

:func:`model.zab.protocol.windows.path_into` finds the spec's shortest path from an established
ensemble to each window goal; :func:`compile_path` turns it into :class:`ZabStep`\\ s. Real
servers take every internal step on their own (connecting, syncing, proposing, acknowledging),
so a schedule only does what the servers cannot do by themselves, and holds back what would
otherwise happen too soon:

- the *outside* steps become actions: ``LeaderProcessRequest`` a write; ``Restart(i)`` a crash
  of ``i``, and ``Timeout(l, f)`` a crash of the follower ``f`` (a crash loses what a timeout
  keeps only in memory; ZooKeeper logs before it acknowledges), each started again at the
  server's next step in the path; an ``UpdateLeader(i)`` the real election would not make
  (:func:`~model.zab.protocol.windows.outvoting`) crashes the servers that would outvote it;
- a message the path sends before an outside step and takes after it is held at the proxy from
  before that step until the path takes it (never, if the path loses it): the proxy keeps each
  link's order, as the spec's channels do;
- before each outside step the schedule awaits, at the proxy, the last packet the path sent
  since the previous one: the real servers have come as far as the path.

Spec servers map to the schedule's roles: ``s1`` (the established leader) is ``first-leader``,
``s2`` and ``s3`` are ``follower-a`` and ``follower-b``. The spec's messages map to quorum
packets as ``docs/zab-model.md`` lists them (CEPOCH is FOLLOWERINFO, NEWEPOCH LEADERINFO, ACK-LD
the ACK of NEWLEADER, COMMIT-LD UPTODATE). Whether the real run reached the window is measured,
not assumed: the run's window shapes say so.
"""

from __future__ import annotations

import functools
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass

from hypothesis import strategies as st

from conformance.zab.schedule import ZabStep
from model.search.bfs import Step
from model.zab.protocol.actions import Label
from model.zab.protocol.config import ZabConfig
from model.zab.protocol.records import (
    ACK,
    ACKEPOCH,
    ACKLD,
    BROADCAST,
    CEPOCH,
    COMMIT,
    COMMITLD,
    FOLLOWER_TO_LEADER,
    FOLLOWING,
    LOOKING,
    NEWEPOCH,
    NEWLEADER,
    PROPOSE,
    Message,
    State,
)
from model.zab.protocol.render import describe_step
from model.zab.protocol.windows import WINDOW_GOALS, WindowPath, outvoting, path_into

#: Spec server index -> the schedule's role.
ROLE_OF = ("first-leader", "follower-a", "follower-b")
#: The spec's message types as quorum packets.
PACKET_OF = {
    CEPOCH: "FOLLOWERINFO",
    NEWEPOCH: "LEADERINFO",
    ACKEPOCH: "ACKEPOCH",
    NEWLEADER: "NEWLEADER",
    ACKLD: "ACK",
    COMMITLD: "UPTODATE",
    PROPOSE: "PROPOSAL",
    ACK: "ACK",
    COMMIT: "COMMIT",
}
#: The bounds the paths are searched in: one more epoch than the established one's, up to two
#: transactions, three timeouts (a restart counts as one) of which two may be restarts. Every
#: goal's path is found within them in under a second.
SEARCH_BOUNDS = ZabConfig(
    max_epoch=3,
    max_transaction_num=2,
    max_timeout_failures=3,
    max_restarts=2,
    record_pc=False,
)
_OUTSIDE = frozenset({"LeaderProcessRequest", "Restart", "Timeout"})


@dataclass(frozen=True)
class _Sent:
    """One message of the path: who sent it to whom, in which segment (the outside steps cut
    the path into segments), and the segment that takes it (None: it is lost)."""

    sender: int
    receiver: int
    message: Message
    segment: int
    taken: int | None = None

    @property
    def learner(self) -> int:
        return self.sender if self.message.mtype in FOLLOWER_TO_LEADER else self.receiver

    def step(self, verb: str) -> ZabStep:
        return ZabStep(verb, ROLE_OF[self.learner], PACKET_OF[self.message.mtype])


@dataclass(frozen=True)
class ModelSchedule:
    """A goal's path in the model and the schedule compiled from it."""

    goal: str
    path: tuple[str, ...]
    schedule: tuple[ZabStep, ...]
    searched: int
    #: The path starts after a client's write was committed everywhere (the schedule's first
    #: step: a write, acknowledged before anything else happens).
    written: bool = False

    @property
    def name(self) -> str:
        return f"{self.goal}+committed" if self.written else self.goal

    def describe(self) -> str:
        model = "\n".join(f"    {n:2d}. {line}" for n, line in enumerate(self.path, 1))
        steps = "\n".join(f"    {n:2d}. {s.describe()}" for n, s in enumerate(self.schedule, 1))
        after = ", after a write committed everywhere" if self.written else ""
        return (
            f"{self.name}: {WINDOW_GOALS[self.goal][1]}{after}\n  the model's path "
            f"({self.searched} states searched):\n{model}\n  the schedule:\n{steps}"
        )


def _segments(labels: Sequence[Label]) -> list[int]:
    """Each step's segment: the count of outside steps up to and including it."""
    segment, out = 0, []
    for label in labels:
        if label.action in _OUTSIDE:
            segment += 1
        out.append(segment)
    return out


def _messages(steps: Sequence[Step[State, Label]], segments: Sequence[int]) -> list[_Sent]:
    """Every message the path sends, with the segment that takes it. A PROPOSE leaves real
    servers with its write, so it counts as sent in its request's segment."""
    n = steps[0].state.servers
    queues: dict[tuple[int, int], deque[int]] = {}
    sent: list[_Sent] = []
    request_segment: dict[tuple[int, int], int] = {}
    for index, step in enumerate(steps[1:]):
        label, segment = step.label, segments[index]
        assert label is not None
        if label.action == "LeaderProcessRequest":
            history = step.state.history[label.i]
            request_segment[history[-1].zxid] = segment
        if label.received is not None and label.j is not None:
            queue = queues.get((label.j, label.i))
            if queue:
                taken = queue.popleft()
                sent[taken] = _replace_taken(sent[taken], segment)
        for sender, receiver, message in label.sent:
            at = segment
            if message.mtype == PROPOSE:
                at = request_segment.get(message.mzxid, segment)
            queues.setdefault((sender, receiver), deque()).append(len(sent))
            sent.append(_Sent(sender, receiver, message, at))
        # A channel the step emptied (a timeout, a restart, a shutdown) lost its messages.
        for (sender, receiver), queue in queues.items():
            while len(queue) > len(step.state.msgs[sender * n + receiver]):
                queue.popleft()
    return sent


def _replace_taken(sent: _Sent, segment: int) -> _Sent:
    return _Sent(sent.sender, sent.receiver, sent.message, sent.segment, segment)


def compile_path(steps: Sequence[Step[State, Label]]) -> tuple[ZabStep, ...]:
    """The schedule that drives real servers along ``steps`` (a path from the established
    state; its first step has no label)."""
    labels = [step.label for step in steps[1:] if step.label is not None]
    segments = _segments(labels)
    messages = _messages(steps, segments)
    holds: dict[int, list[ZabStep]] = {}
    releases: dict[int, list[ZabStep]] = {}
    last_sent: dict[int, _Sent] = {}
    for message in messages:
        if _held(message):
            holds.setdefault(message.segment, []).append(message.step("hold"))
            if message.taken is not None:
                releases.setdefault(message.taken, []).append(message.step("release"))
        last_sent[message.segment] = message
    for segment, step in _unproposed(steps, segments, messages):
        holds.setdefault(segment, []).append(step)
    out: list[ZabStep] = []
    down: set[int] = set()
    for index, label in enumerate(labels):
        segment = segments[index]
        before = steps[index].state
        starting = {_actor(label)} if label.action not in ("Restart", "Timeout") else set()
        if label.action == "UpdateLeader":
            # The real election elects ``i`` only with those that would outvote it down and
            # a quorum of the others up (those the spec has looking).
            higher = outvoting(before, label.i)
            for server in higher:
                if server not in down:
                    out.append(ZabStep("crash", ROLE_OF[server]))
                    down.add(server)
            starting |= {k for k, role in enumerate(before.state) if role == LOOKING} - set(higher)
        for server in sorted(starting & down):
            out.append(ZabStep("restart", ROLE_OF[server]))
            down.discard(server)
        if label.action not in _OUTSIDE:
            continue
        if segment - 1 in last_sent:
            out.append(last_sent[segment - 1].step("await"))
        out.extend(_unique(holds.get(segment, [])))
        if label.action == "LeaderProcessRequest":
            out.append(ZabStep("write", count=1))
        else:
            crashed = label.i if label.action == "Restart" else label.j
            assert crashed is not None
            out.append(ZabStep("crash", ROLE_OF[crashed]))
            down.add(crashed)
        out.extend(_unique(releases.get(segment, [])))
    if segments and segments[-1] in last_sent:
        out.append(last_sent[segments[-1]].step("await"))
    if labels and labels[-1].action == "UpdateLeader":
        out.append(ZabStep("settle"))  # the election the path ends in, before the heal
    return _merge_writes(out)


def _unproposed(
    steps: Sequence[Step[State, Label]], segments: Sequence[int], messages: Sequence[_Sent]
) -> list[tuple[int, ZabStep]]:
    """A request the path never proposes still leaves a real leader at once, as a PROPOSAL to
    each follower in broadcast: held (for good) on their links, in the request's segment. A
    follower still syncing gets it in its sync instead, so its links are left alone."""
    proposed = {m.message.mzxid for m in messages if m.message.mtype == PROPOSE}
    out = []
    for index, step in enumerate(steps[1:]):
        label = step.label
        if label is None or label.action != "LeaderProcessRequest":
            continue
        if step.state.history[label.i][-1].zxid in proposed:
            continue
        before = steps[index].state
        for follower, role in enumerate(before.state):
            if (
                role == FOLLOWING
                and before.connect_info[follower] == label.i
                and before.zab_state[follower] == BROADCAST
            ):
                out.append((segments[index], ZabStep("hold", ROLE_OF[follower], "PROPOSAL")))
    return out


def _held(message: _Sent) -> bool:
    """Held: the path takes it in a later segment than it is sent in, or never."""
    return message.taken is None or message.taken > message.segment


def _actor(label: Label) -> int:
    """The server that takes the step: ``j`` of ``ConnectAndFollowerSendCEPOCH(i, j)`` (the
    follower connecting), ``i`` otherwise."""
    if label.action == "ConnectAndFollowerSendCEPOCH" and label.j is not None:
        return label.j
    return label.i


def _unique(steps: list[ZabStep]) -> list[ZabStep]:
    """One hold (or release) per learner and packet: a rule holds the link from its packet
    on, so what follows on that link waits behind it anyway."""
    return list(dict.fromkeys(steps))


def _merge_writes(steps: list[ZabStep]) -> tuple[ZabStep, ...]:
    out: list[ZabStep] = []
    for step in steps:
        if step.verb == "write" and out and out[-1].verb == "write":
            out[-1] = ZabStep("write", count=out[-1].count + step.count)
        else:
            out.append(step)
    return tuple(out)


#: Each goal is searched twice: from the established ensemble, and from it after a write
#: committed everywhere (:data:`~model.zab.protocol.windows.COMMITTED_WRITE`): the shortest
#: paths commit nothing, and a write nobody acknowledged cannot be found lost.
WRITTEN_VARIANTS = (False, True)


@functools.cache
def model_schedules(bounds: ZabConfig = SEARCH_BOUNDS) -> tuple[ModelSchedule, ...]:
    """Every window goal's paths within ``bounds`` (:data:`WRITTEN_VARIANTS`), compiled
    (a goal without a path is left out: its absence is the model's answer that the window
    cannot be reached so)."""
    found = []
    for goal in WINDOW_GOALS:
        for written in WRITTEN_VARIANTS:
            path: WindowPath | None = path_into(bounds, goal, written=written)
            if path is None:
                continue
            labels = [step.label for step in path.steps[1:] if step.label is not None]
            first = (ZabStep("write", count=1),) if written else ()
            found.append(
                ModelSchedule(
                    goal,
                    tuple(describe_step(label) for label in labels),
                    (*first, *compile_path(path.steps)),
                    path.searched,
                    written,
                )
            )
    return tuple(found)


def model_windows() -> st.SearchStrategy[tuple[ZabStep, ...]]:
    """One of the model's paths into the window, compiled (searched once, on the first
    draw)."""
    return st.deferred(lambda: st.sampled_from([m.schedule for m in model_schedules()]))


__all__ = [
    "PACKET_OF",
    "ROLE_OF",
    "SEARCH_BOUNDS",
    "WRITTEN_VARIANTS",
    "ModelSchedule",
    "compile_path",
    "model_schedules",
]
