"""The spec's ten invariants (seed 002's list) as named predicates over a state.

Each follows its TLA+ formula. ``history[i][1..lastCommitted[i].index]`` is what server ``i``
has delivered. Where the spec would index past the end of a history (only after
``FollowerProcessCOMMITLD`` recorded an index that does not exist, which already breaks
``ShouldNotBeTriggered``, the first invariant TLC checks and reports), the prefix is cut at the
history's end instead of failing as TLC's evaluation would.

``LocalPrimaryOrder`` is, as written, always true: its ``\\E txn1, txn2 \\in txn_set(i, e)``
may take ``txn1 = txn2``, and then its first disjunct ``TxnEqual(txn1, txn2)`` holds. The
model evaluates it literally; ``local_primary_order_intended`` (not among the ten) checks what
its comment says, for every pair.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import NamedTuple

from model.zab.protocol.config import ZabConfig
from model.zab.protocol.records import (
    BROADCAST,
    FOLLOWING,
    LEADING,
    SYNCHRONIZATION,
    State,
    Zxid,
)

#: ``TxnEqual`` compares zxid and value: a delivered transaction as ``(zxid, value)``.
Delivered = tuple[Zxid, int]


def delivered(s: State, i: int) -> list[Delivered]:
    """``history[i][1..lastCommitted[i].index]`` as ``(zxid, value)`` pairs."""
    index = s.last_committed[i].index
    if index <= 0:
        return []
    return [(t.zxid, t.value) for t in s.history[i][:index]]


def should_not_be_triggered(s: State) -> bool:
    """``ShouldNotBeTriggered``: no field of ``violatedInvariants`` is TRUE."""
    return s.violated == 0


def leadership1(s: State) -> bool:
    """``Leadership1``: no two established leaders (LEADING in SYNCHRONIZATION or BROADCAST)
    share a ``currentEpoch``."""
    seen: set[int] = set()
    for i, role in enumerate(s.state):
        if role == LEADING and s.zab_state[i] in (SYNCHRONIZATION, BROADCAST):
            epoch = s.current_epoch[i]
            if epoch in seen:
                return False
            seen.add(epoch)
    return True


def leadership2(s: State) -> bool:
    """``Leadership2``: at most one server in ``epochLeader[e]`` for every epoch."""
    return all(mask.bit_count() <= 1 for mask in s.epoch_leader)


def prefix_consistency(s: State) -> bool:
    """``PrefixConsistency``: the committed prefixes of any two servers agree up to the shorter
    one. As written, a negative ``lastCommitted`` index breaks it (neither disjunct holds)."""
    n = len(s.state)
    indexes = [c.index for c in s.last_committed]
    if min(indexes) < 0:
        return False
    for i in range(n):
        for j in range(i + 1, n):
            smaller = min(indexes[i], indexes[j])
            if smaller == 0:
                continue
            hi, hj = s.history[i], s.history[j]
            for k in range(min(smaller, len(hi), len(hj))):
                if hi[k].zxid != hj[k].zxid or hi[k].value != hj[k].value:
                    return False
    return True


def integrity(s: State) -> bool:
    """``Integrity``: every transaction a follower delivered was broadcast by some primary
    (is in ``proposalMsgsLog``)."""
    proposed: set[Delivered] | None = None
    for i, role in enumerate(s.state):
        if role != FOLLOWING or s.last_committed[i].index <= 0:
            continue
        if proposed is None:
            proposed = {(p.zxid, p.data) for p in s.proposal_msgs_log}
        if any(txn not in proposed for txn in delivered(s, i)):
            return False
    return True


def agreement(s: State) -> bool:
    """``Agreement``: for followers ``f``, ``f'`` that delivered something, each transaction
    ``a`` of ``f`` and ``b`` of ``f'``: ``f'`` delivered ``a`` or ``f`` delivered ``b``."""
    followers = [
        (i, delivered(s, i))
        for i, role in enumerate(s.state)
        if role == FOLLOWING and s.last_committed[i].index > 0
    ]
    for _, di in followers:
        set_i = set(di)
        for _, dj in followers:
            set_j = set(dj)
            for a in di:
                if a in set_j:
                    continue
                if any(b not in set_i for b in dj):
                    return False
    return True


def total_order(s: State) -> bool:
    """``TotalOrder``: if ``i`` delivered ``a`` before ``b`` and ``j`` delivered ``b``, then
    ``j`` delivered ``a`` before (some occurrence of) ``b``."""
    n = len(s.state)
    prefixes = [delivered(s, i) for i in range(n)]
    for i in range(n):
        di = prefixes[i]
        if s.last_committed[i].index < 2:
            continue
        for j in range(n):
            dj = prefixes[j]
            if s.last_committed[j].index < 2:
                continue
            for i2 in range(1, len(di)):
                b = di[i2]
                later = [k for k, txn in enumerate(dj) if txn == b]
                if not later:
                    continue  # ~logOk
                for i1 in range(i2):
                    a = di[i1]
                    if not any(a in dj[:k] for k in later):
                        return False
    return True


def local_primary_order(s: State) -> bool:
    """``LocalPrimaryOrder`` as written: always TRUE (see the module's docstring)."""
    return True


def local_primary_order_intended(s: State) -> bool:
    """What ``LocalPrimaryOrder``'s comment says: if primary ``i`` broadcast ``a`` before ``b``
    in epoch ``e`` (``a``'s zxid is smaller), a server that delivered ``b`` delivered ``a``
    before it. Checked for every pair, with the spec's own ``lastCommitted[j].index >= 2``."""
    by_source: dict[tuple[int, int], set[Delivered]] = {}
    for p in s.proposal_msgs_log:
        by_source.setdefault((p.source, p.epoch), set()).add((p.zxid, p.data))
    prefixes = [delivered(s, j) for j in range(len(s.state))]
    for (i, e), txns in by_source.items():
        if e > s.current_epoch[i] or e < 1 or len(txns) < 2:
            continue
        ordered = sorted(txns)
        for x in range(len(ordered)):
            for y in range(x + 1, len(ordered)):
                pre, nxt = ordered[x], ordered[y]
                if pre[0] == nxt[0]:
                    continue  # same zxid, different value: not ordered by the formula
                for j, dj in enumerate(prefixes):
                    if s.last_committed[j].index < 2 or nxt not in dj:
                        continue
                    at = [k for k, txn in enumerate(dj) if txn == nxt]
                    if not any(k > 0 and pre in dj[:k] for k in at):
                        return False
    return True


def global_primary_order(s: State) -> bool:
    """``GlobalPrimaryOrder``: a server's delivered transactions are in epoch order."""
    for i in range(len(s.state)):
        if s.last_committed[i].index < 2:
            continue
        epochs = [zxid[0] for zxid, _ in delivered(s, i)]
        if any(a > b for a, b in itertools.pairwise(epochs)):
            return False
    return True


def primary_integrity(s: State) -> bool:
    """``PrimaryIntegrity``: for a leader ``i`` and its follower ``j``, both in BROADCAST, every
    transaction ``j`` delivered from an epoch before ``currentEpoch[i]`` is delivered by ``i``."""
    n = len(s.state)
    for i in range(n):
        if s.state[i] != LEADING or s.zab_state[i] != BROADCAST:
            continue
        mine: set[Delivered] | None = None
        for j in range(n):
            if not (
                s.learners[i] >> j & 1
                and s.state[j] == FOLLOWING
                and s.connect_info[j] == i
                and s.zab_state[j] == BROADCAST
                and s.last_committed[j].index >= 1
            ):
                continue
            if mine is None:
                mine = set(delivered(s, i))
            epoch = s.current_epoch[i]
            for txn in delivered(s, j):
                if txn[0][0] < epoch and txn not in mine:
                    return False
    return True


class Invariant(NamedTuple):
    name: str
    check: Callable[[State], bool]


#: Seed 002's ten, in its order (the README spells one ``GlobalPriamryOrder``).
INVARIANTS: tuple[Invariant, ...] = (
    Invariant("ShouldNotBeTriggered", should_not_be_triggered),
    Invariant("Leadership1", leadership1),
    Invariant("Leadership2", leadership2),
    Invariant("PrefixConsistency", prefix_consistency),
    Invariant("Integrity", integrity),
    Invariant("Agreement", agreement),
    Invariant("TotalOrder", total_order),
    Invariant("LocalPrimaryOrder", local_primary_order),
    Invariant("GlobalPrimaryOrder", global_primary_order),
    Invariant("PrimaryIntegrity", primary_integrity),
)

#: Checks that are not among the spec's invariants, by name.
EXTRA_INVARIANTS: dict[str, Invariant] = {
    "LocalPrimaryOrderIntended": Invariant(
        "LocalPrimaryOrderIntended", local_primary_order_intended
    ),
}


def invariants_for(cfg: ZabConfig) -> tuple[Invariant, ...]:
    """The invariants checked for a configuration: the spec's ten."""
    return INVARIANTS


def violated(s: State, invariants: tuple[Invariant, ...] = INVARIANTS) -> list[str]:
    """Names of the invariants ``s`` violates."""
    return [inv.name for inv in invariants if not inv.check(s)]
