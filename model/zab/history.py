"""The observed history of one run, as plain values the checkers read.

Three sources, all gathered by the runner and none trusted more than the others:

- each server's delivered transactions (``ServerLog``), read from its transaction log after
  the run; everything up to the server's latest snapshot counts as delivered too, because
  ZooKeeper restores from the snapshot and replays only later log entries;
- leadership samples (``LeaderSample``): a server reporting ``Mode: leader`` with a zxid whose
  high 32 bits are its epoch;
- client operations (``ClientOp``): invoke and completion with the outcome ``ok``, ``fail``
  (a definite error: the operation had no effect) or ``unknown`` (timeout, lost connection:
  it may or may not have taken effect), and the zxids the API returned.

A zxid is ``epoch << 32 | counter``; ordering zxids orders transactions.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

Outcome = Literal["ok", "fail", "unknown"]
OpKind = Literal["create", "set", "delete", "multi", "read", "exists", "sync"]
WRITE_KINDS: frozenset[str] = frozenset({"create", "set", "delete", "multi"})


def epoch_of(zxid: int) -> int:
    return zxid >> 32


def counter_of(zxid: int) -> int:
    return zxid & 0xFFFFFFFF


def zxid_hex(zxid: int) -> str:
    return f"0x{zxid:x}"


@dataclass(frozen=True)
class Change:
    """One znode change inside a transaction (a multi holds several).

    ``version`` is the znode's data version after the change (set), 0 for a create and -1
    where the log does not say (delete).
    """

    kind: Literal["create", "set", "delete", "check"]
    path: str
    data: bytes | None = None
    version: int = -1


@dataclass(frozen=True)
class Txn:
    """One logged transaction. ``digest`` identifies its content: equal zxids on two servers
    must carry equal digests. ``changes`` is empty for session and other system txns."""

    zxid: int
    digest: str
    type_name: str
    session: int = 0
    changes: tuple[Change, ...] = ()


@dataclass(frozen=True)
class ServerLog:
    """What one server delivered: every zxid up to ``snapshot_zxid`` (restored from its
    snapshot, contents not compared) followed by ``txns`` in log order."""

    server: str
    txns: tuple[Txn, ...]
    snapshot_zxid: int = 0

    def delivers(self, zxid: int, logged: frozenset[int]) -> bool:
        return zxid <= self.snapshot_zxid or zxid in logged


@dataclass(frozen=True)
class LeaderSample:
    """``server`` reported ``Mode: leader`` at ``time`` (monotonic seconds) with ``zxid``."""

    time: float
    server: str
    zxid: int

    @property
    def epoch(self) -> int:
        return epoch_of(self.zxid)


@dataclass(frozen=True)
class ClientOp:
    """One client operation, invoked by ``process`` (a client) in its ``session``.

    Writes carry a unique ``tag`` in their data (``create``/``set``, and the first such
    change of a ``multi``), which is how the checkers find them in the servers' logs.
    ``expected_version`` is the version a conditional set or delete names (-1: any).
    For reads: ``value`` and ``mzxid`` of what was read (``found`` False: no such znode).
    ``zxid``: the write's zxid where the API returned it (create2's czxid, set's mzxid).
    """

    index: int
    process: int
    kind: OpKind
    path: str
    outcome: Outcome
    invoke_time: float
    complete_time: float
    session: int = 0
    tag: str | None = None
    data: bytes | None = None
    expected_version: int = -1
    zxid: int | None = None
    version: int | None = None
    found: bool = True
    value: bytes | None = None
    mzxid: int | None = None
    error: str | None = None
    sub_ops: tuple[tuple[str, str, bytes | None, int], ...] = ()

    @property
    def is_write(self) -> bool:
        return self.kind in WRITE_KINDS


@dataclass(frozen=True)
class History:
    """Everything one run observed."""

    servers: tuple[ServerLog, ...]
    leaders: tuple[LeaderSample, ...] = ()
    ops: tuple[ClientOp, ...] = ()
    notes: tuple[str, ...] = field(default=())
    scope: str = "/"
    """Integrity judges only changes under this path prefix (the runner's own setup, such
    as creating the workload's root znode, happens outside it)."""

    @property
    def quorum(self) -> int:
        return len(self.servers) // 2 + 1
