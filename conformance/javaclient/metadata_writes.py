"""The client's writes of a run's ledger metadata, as the ZooKeeper proxy saw them, and their
place in a replay's recorded delivery order (issue 49, Deliver 3).

The Java client decides on what it is told and when: #3005 turns on an answer of the old
ensemble reaching the client *while* the ensemble change's metadata write is in flight (sent,
not yet answered). A record that keeps only the bookies' frames cannot say so, and a replay
that orders only them leaves the window to chance (the from-scratch finding replayed 7 and 8
times in 10). So a record keeps each write of its ledger's znode (a ``setData``, a ``multi``
touching it, a ``delete``): when its request reached the proxy (the client had sent it) and
when ZooKeeper's answer did (the proxy forwards answers as they come: the client had it then).

In a replay each write is two keys of the order (:func:`write_key`): *sent*, which only the
client makes happen (a replay waits for it), and *answered*, which the replay makes happen in
its turn by holding the write's request at the ZooKeeper proxy until the keys before it went
on (:class:`LedgerWrites`). Holding a request is a network delay a real run may have; a
reply cannot be held without holding the connection's later replies (the server answers in
order), which holding the request does anyway.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from adapters.zkproxy import (
    Direction,
    Hold,
    NotHeld,
    Op,
    PacketRecord,
    ZkMatch,
    ZooKeeperProxy,
    error_name,
)
from conformance.javaclient.plans import METADATA_WRITE, ZOOKEEPER, FrameKey

#: What writes a ledger's znode: an ensemble change and a close (``setData``, or a ``multi``
#: that carries one), a deletion.
_WRITES = frozenset({Op.SET_DATA, Op.MULTI, Op.DELETE})


@dataclass(frozen=True)
class MetadataWrite:
    """One write of the ledger's metadata by a client: when its request reached the
    ZooKeeper proxy, when the answer did (None: never, in the run), and the answer's error
    code (0: done; None: no answer)."""

    sent_at: float
    answered_at: float | None
    op: str
    err: int | None
    connection_id: int

    def describe(self) -> str:
        answer = (
            "no answer"
            if self.answered_at is None
            else f"{self.answered_at:.3f} answered {error_name(self.err or 0)}"
        )
        return f"{self.sent_at:.3f} the client's {self.op} of the ledger's metadata; {answer}"

    def to_json(self) -> dict[str, Any]:
        return {
            "sent_at": self.sent_at,
            "answered_at": self.answered_at,
            "op": self.op,
            "err": self.err,
            "connection": self.connection_id,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> MetadataWrite:
        answered = data.get("answered_at")
        err = data.get("err")
        return cls(
            float(data["sent_at"]),
            None if answered is None else float(answered),
            str(data["op"]),
            None if err is None else int(err),
            int(data.get("connection", 0)),
        )


def write_key(number: int, *, answered: bool) -> FrameKey:
    """The order's key of the ledger's ``number``-th metadata write of the run (from 0):
    sent by the client, or answered to it."""
    return FrameKey(METADATA_WRITE, ZOOKEEPER, number, answer=answered)


def writes_to_json(writes: Iterable[MetadataWrite]) -> dict[str, Any]:
    """A record's ``metadata_writes`` key (none: no key, as records written before)."""
    items = [write.to_json() for write in writes]
    return {"metadata_writes": items} if items else {}


def writes_from_json(data: Mapping[str, Any]) -> tuple[MetadataWrite, ...]:
    return tuple(MetadataWrite.from_json(item) for item in data.get("metadata_writes", ()))


def _ledger_writes(path: str) -> ZkMatch:
    return ZkMatch(_WRITES, path=path, direction=Direction.REQUEST)


def writes_from_log(packets: Iterable[PacketRecord], path: str) -> tuple[MetadataWrite, ...]:
    """The writes of ``path`` among ``packets`` (a ZooKeeper proxy's log, both directions), in
    the order their requests arrived."""
    match = _ledger_writes(path)
    listed = list(packets)
    answers = {p.answers: p for p in listed if p.info.direction is Direction.REPLY and p.answers}
    writes = []
    for packet in listed:
        if not match.matches(packet.info):
            continue
        answer = answers.get(packet.record_id)
        writes.append(
            MetadataWrite(
                packet.at,
                None if answer is None else answer.at,
                packet.info.op.value,
                None if answer is None else answer.info.err,
                packet.connection_id,
            )
        )
    return tuple(writes)


class LedgerWrites:
    """The writes of one ledger's znode at a ZooKeeper proxy, from now on: what was written
    (:meth:`writes`), and, with :meth:`hold`, each request held until :meth:`release`."""

    def __init__(self, zookeeper: ZooKeeperProxy, path: str) -> None:
        self.zookeeper = zookeeper
        self.path = path
        self._since = zookeeper.mark()
        self._rule: int | None = None

    def hold(self) -> None:
        """From now on, hold the ledger's write requests (a rule installed first decides: a
        hold of the client's writes a plan makes later does not take these)."""
        if self._rule is None:
            self._rule = self.zookeeper.add_rule(_ledger_writes(self.path), Hold())

    def held(self) -> list[PacketRecord]:
        """The write requests held by :meth:`hold`, oldest first."""
        rule = self._rule
        return [] if rule is None else [p for p in self.zookeeper.held() if p.rule_id == rule]

    def requests(self, after: int = 0) -> list[PacketRecord]:
        """The write requests of the ledger since this object was made (and after record id
        ``after``: those not seen yet), in arrival order."""
        return self.zookeeper.packets(_ledger_writes(self.path), since=max(self._since, after))

    def release(self, record_id: int) -> bool:
        """Send a held write; False if it was not held any more (something else let it go)."""
        try:
            self.zookeeper.release(record_id)
        except NotHeld:
            return False
        return True

    def answered(self, record_id: int) -> bool:
        """Whether ZooKeeper's answer to the write request ``record_id`` has come."""
        answers = ZkMatch(_WRITES, path=self.path, direction=Direction.REPLY)
        return any(p.answers == record_id for p in self.zookeeper.packets(answers, since=record_id))

    def writes(self) -> tuple[MetadataWrite, ...]:
        """What was written since this object was made."""
        return writes_from_log(self.zookeeper.packets(since=self._since), self.path)

    def close(self) -> None:
        """No more holds; every write still held goes on (in its connection's order)."""
        rule, self._rule = self._rule, None
        if rule is None:
            return
        with contextlib.suppress(Exception):
            self.zookeeper.remove_rule(rule)
        for packet in [p for p in self.zookeeper.held() if p.rule_id == rule]:
            with contextlib.suppress(NotHeld):
                self.zookeeper.release(packet.record_id)


__all__ = [
    "LedgerWrites",
    "MetadataWrite",
    "write_key",
    "writes_from_json",
    "writes_from_log",
    "writes_to_json",
]
