"""Seed 003's three scenarios as scripts, and helpers to build and step states by hand.

The seed's servers A, B, C are ``s1``, ``s2``, ``s3``; B leads epoch 1. Each script is the
seed's story action by action. Where the seed's story needs a third transaction (Issues 1 and
3), a second script reaches the same defect with two, the bound the issue asks for. The stories
of Issues 2 and 3 presuppose Issue 1's fix (C gets PROPOSE through ``ackeRecv``), as in the
seed, where each was found after the one before was fixed.
"""

from __future__ import annotations

from model.zab.protocol.actions import Label, Transition, successors
from model.zab.protocol.config import ZabConfig
from model.zab.protocol.records import State
from model.zab.protocol.scripted import ScriptedStep, server, step

A, B, C = "s1", "s2", "s3"

#: "A quorum of nodes including node A and node B completed the log recovery, and entered the
#: Broadcast stage": B leads epoch 1 with A.
AB_IN_BROADCAST: tuple[ScriptedStep, ...] = (
    step("UpdateLeader", B),
    step("FollowLeader", A),
    step("ConnectAndFollowerSendCEPOCH", B, A),
    step("LeaderProcessCEPOCH", B, A),
    step("FollowerProcessNEWEPOCH", A, B),
    step("LeaderProcessACKEPOCH", B, A),
    step("FollowerProcessNEWLEADER", A, B),
    step("LeaderProcessACKLD", B, A),
    step("FollowerProcessCOMMITLD", A, B),
)

#: C "joined the cluster later": it connects, gets NEWEPOCH, and its ACKEPOCH is on its way.
C_JOINS: tuple[ScriptedStep, ...] = (
    step("FollowLeader", C),
    step("ConnectAndFollowerSendCEPOCH", B, C),
    step("LeaderProcessCEPOCH", B, C),
    step("FollowerProcessNEWEPOCH", C, B),
)

PREFIX = AB_IN_BROADCAST + C_JOINS


def issue1_seed(*, fixed: bool) -> tuple[ScriptedStep, ...]:
    """Issue 1 as the seed tells it (three transactions).

    B sends NEWLEADER(1, <[1,1,v1]>) to C, then proposes [1,2,v2]: to ``ackldRecv``, which C
    is not in yet. B processes ACK-LD from C (COMMIT-LD([1,1])), then A's ACK of [1,2], and
    COMMIT([1,2]) goes to C, which has no [1,2]. The published spec only warns there
    (``FollowerProcessCOMMIT``: "Warn: Committing zxid without seeing txn."); the next
    proposal, [1,3], is then neither C's next zxid nor in its history: illegal. With the fix C
    got PROPOSE([1,2]) after NEWLEADER and processes it before COMMIT-LD (one more step).
    """
    return (
        *PREFIX,
        step("LeaderProcessRequest", B),
        step("LeaderBroadcastPROPOSE", B),
        step("LeaderProcessACKEPOCH", B, C),
        step("LeaderProcessRequest", B),
        step("LeaderBroadcastPROPOSE", B),
        step("FollowerProcessNEWLEADER", C, B),
        *((step("FollowerProcessPROPOSE", C, B),) if fixed else ()),
        step("FollowerProcessPROPOSE", A, B),
        step("FollowerProcessPROPOSE", A, B),
        step("LeaderProcessACK", B, A),
        step("LeaderProcessACKLD", B, C),
        step("LeaderProcessACK", B, A),
        step("FollowerProcessCOMMITLD", C, B),
        step("FollowerProcessCOMMIT", C, B),
        step("LeaderProcessRequest", B),
        step("LeaderBroadcastPROPOSE", B),
        step("FollowerProcessPROPOSE", C, B),
    )


def issue1_two_transactions(*, fixed: bool) -> tuple[ScriptedStep, ...]:
    """Issue 1 with two transactions (the shortest the explorer finds, up to renaming).

    B sends NEWLEADER(1, <>) to C, then proposes [1,1,v1] to ``ackldRecv`` only; A acks and
    [1,1] is committed; C's ACK-LD is answered with COMMIT-LD([1,1]) (the last committed zxid),
    which C does not have: "zxid in COMMITLD not exists in history". With the fix C got the
    PROPOSE and processes it first.
    """
    return (
        *PREFIX,
        step("LeaderProcessACKEPOCH", B, C),
        step("FollowerProcessNEWLEADER", C, B),
        step("LeaderProcessRequest", B),
        step("LeaderBroadcastPROPOSE", B),
        step("FollowerProcessPROPOSE", A, B),
        step("LeaderProcessACK", B, A),
        step("LeaderProcessACKLD", B, C),
        *((step("FollowerProcessPROPOSE", C, B),) if fixed else ()),
        step("FollowerProcessCOMMITLD", C, B),
    )


def issue2_seed() -> tuple[ScriptedStep, ...]:
    """Issue 2 as the seed tells it (one transaction): B appends [1,1,v1], answers C's
    ACKEPOCH with NEWLEADER(1, <[1,1,v1]>) (C joins ``ackeRecv``), then broadcasts
    PROPOSE([1,1,v1]), to C too: C receives a redundant proposal."""
    return (
        *PREFIX,
        step("LeaderProcessRequest", B),
        step("LeaderProcessACKEPOCH", B, C),
        step("LeaderBroadcastPROPOSE", B),
        step("FollowerProcessNEWLEADER", C, B),
        step("FollowerProcessPROPOSE", C, B),
    )


def issue3_seed() -> tuple[ScriptedStep, ...]:
    """Issue 3 as the seed tells it (three transactions): C gets NEWLEADER(1, <[1,1,v1]>)
    and PROPOSE([1,2,v2]); B commits [1,2] on A's ACK before C's ACK-LD, so COMMIT([1,2]) does
    not go to C; B answers the ACK-LD([1,1]) with COMMIT-LD([1,1]) (naive) or COMMIT-LD([1,2])
    (fix); when [1,3] is committed, C's next pending entry is [1,2], not [1,3]: illegal."""
    return (
        *PREFIX,
        step("LeaderProcessRequest", B),
        step("LeaderBroadcastPROPOSE", B),
        step("LeaderProcessACKEPOCH", B, C),
        step("LeaderProcessRequest", B),
        step("LeaderBroadcastPROPOSE", B),
        step("FollowerProcessPROPOSE", A, B),
        step("FollowerProcessPROPOSE", A, B),
        step("LeaderProcessACK", B, A),
        step("LeaderProcessACK", B, A),
        step("FollowerProcessNEWLEADER", C, B),
        step("FollowerProcessPROPOSE", C, B),
        step("LeaderProcessACKLD", B, C),
        step("FollowerProcessCOMMITLD", C, B),
        step("LeaderProcessRequest", B),
        step("LeaderBroadcastPROPOSE", B),
        step("FollowerProcessCOMMIT", A, B),
        step("FollowerProcessCOMMIT", A, B),
        step("FollowerProcessPROPOSE", A, B),
        step("LeaderProcessACK", B, A),
        step("FollowerProcessPROPOSE", C, B),
        step("FollowerProcessCOMMIT", C, B),
    )


def issue3_two_transactions() -> tuple[ScriptedStep, ...]:
    """Issue 3 with two transactions: C gets NEWLEADER(1, <>) then PROPOSE([1,1,v1]); [1,1]
    is committed on A's ACK before C's ACK-LD([0,0]); the naive COMMIT-LD([0,0]) leaves C with
    nothing committed, so COMMIT([1,2]) does not match C's next pending entry [1,1]."""
    return (
        *PREFIX,
        step("LeaderProcessACKEPOCH", B, C),
        step("FollowerProcessNEWLEADER", C, B),
        step("LeaderProcessRequest", B),
        step("LeaderBroadcastPROPOSE", B),
        step("FollowerProcessPROPOSE", A, B),
        step("LeaderProcessACK", B, A),
        step("LeaderProcessACKLD", B, C),
        step("FollowerProcessPROPOSE", C, B),
        step("FollowerProcessCOMMITLD", C, B),
        step("LeaderProcessRequest", B),
        step("LeaderBroadcastPROPOSE", B),
        step("FollowerProcessCOMMIT", A, B),
        step("FollowerProcessPROPOSE", A, B),
        step("LeaderProcessACK", B, A),
        step("FollowerProcessPROPOSE", C, B),
        step("FollowerProcessCOMMIT", C, B),
    )


def transitions(
    cfg: ZabConfig, s: State, action: str, i: str, j: str | None = None
) -> list[Transition]:
    """The successors of ``s`` by ``action(i, j)``."""
    wanted_j = None if j is None else server(j)
    return [
        t
        for t in successors(cfg, s)
        if t.label.action == action
        and t.label.i == server(i)
        and (j is None or t.label.j == wanted_j)
    ]


def one(cfg: ZabConfig, s: State, action: str, i: str, j: str | None = None) -> Transition:
    """The one successor of ``s`` by ``action(i, j)``."""
    found = transitions(cfg, s, action, i, j)
    assert len(found) == 1, f"{action}({i}, {j}): {len(found)} successors"
    return found[0]


def sent_to(label: Label) -> dict[int, list[int]]:
    """Message types sent, by recipient."""
    out: dict[int, list[int]] = {}
    for _src, dst, m in label.sent:
        out.setdefault(dst, []).append(m.mtype)
    return out
