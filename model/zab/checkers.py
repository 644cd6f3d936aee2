"""The checkers: each reads a :class:`History` once (dictionaries and sorted lists, no search
over interleavings) and returns a Jepsen-style result: ``valid`` True, False or "unknown"
(nothing to judge), a count of what was checked, and evidence for every anomaly (the first
:data:`MAX_EVIDENCE` of them in full).

Server-side properties follow seed 002 (Junqueira et al., DSN 2011) read over delivered
sequences; "committed" means delivered by a quorum of servers or acknowledged to a client.
Client-side properties are what BookKeeper relies on: acknowledged writes are durable,
conditional writes behave as compare-and-set, a session's writes apply in order and it reads
its own writes, and reads are sequentially consistent (not linearizable: a read may return a
stale value, but never one older than what its session already saw).
"""

from __future__ import annotations

import bisect
import itertools
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Literal

from model.zab.history import (
    Change,
    ClientOp,
    History,
    ServerLog,
    Txn,
    counter_of,
    epoch_of,
    zxid_hex,
)

MAX_EVIDENCE = 10
Validity = bool | Literal["unknown"]


@dataclass(frozen=True)
class CheckResult:
    name: str
    valid: Validity
    checked: int
    anomalies: int = 0
    evidence: tuple[dict[str, Any], ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "valid": self.valid,
            "checked": self.checked,
            "anomalies": self.anomalies,
            "evidence": list(self.evidence),
        }


@dataclass
class _Findings:
    name: str
    checked: int = 0
    anomalies: list[dict[str, Any]] = field(default_factory=list)
    count: int = 0

    def flag(self, anomaly: str, **details: Any) -> None:
        self.count += 1
        if len(self.anomalies) < MAX_EVIDENCE:
            self.anomalies.append({"anomaly": anomaly, **details})

    def result(self) -> CheckResult:
        valid: Validity
        if self.count:
            valid = False
        elif self.checked == 0:
            valid = "unknown"
        else:
            valid = True
        return CheckResult(self.name, valid, self.checked, self.count, tuple(self.anomalies))


class Index:
    """What every checker needs, computed once in one pass over each log."""

    def __init__(self, history: History) -> None:
        self.history = history
        self.logged: dict[str, frozenset[int]] = {
            s.server: frozenset(t.zxid for t in s.txns) for s in history.servers
        }
        self.by_zxid: dict[int, Txn] = {}
        self.conflicts: list[tuple[int, str, str]] = []
        for server in history.servers:
            for txn in server.txns:
                seen = self.by_zxid.setdefault(txn.zxid, txn)
                if seen.digest != txn.digest:
                    self.conflicts.append((txn.zxid, server.server, seen.digest))
        self.union: list[Txn] = [self.by_zxid[z] for z in sorted(self.by_zxid)]
        self.tags: dict[str, Txn] = {}
        self.path_events: dict[str, list[tuple[int, Change]]] = defaultdict(list)
        for txn in self.union:
            for change in txn.changes:
                tag = tag_of(change.data)
                if tag is not None:
                    self.tags.setdefault(tag, txn)
                if change.kind != "check":
                    self.path_events[change.path].append((txn.zxid, change))
        self.path_zxids = {p: [z for z, _ in ev] for p, ev in self.path_events.items()}
        self.ops_by_tag = {op.tag: op for op in history.ops if op.tag is not None}
        acknowledged = {
            self.tags[op.tag].zxid
            for op in history.ops
            if op.outcome == "ok" and op.tag is not None and op.tag in self.tags
        }
        quorum = history.quorum
        self.delivered_by: dict[int, int] = {
            z: sum(1 for s in history.servers if self.delivers(s, z)) for z in self.by_zxid
        }
        self.committed = sorted(
            z for z, n in self.delivered_by.items() if n >= quorum or z in acknowledged
        )
        self.committed_set = frozenset(self.committed)

    def delivers(self, server: ServerLog, zxid: int) -> bool:
        return server.delivers(zxid, self.logged[server.server])

    def txn_of(self, op: ClientOp) -> Txn | None:
        return self.tags.get(op.tag) if op.tag is not None else None


def tag_of(data: bytes | None) -> str | None:
    """The runner writes ``b"<tag>"`` or ``b"<tag>|..."``; the tag names the client op."""
    if not data:
        return None
    head = data.split(b"|", 1)[0]
    try:
        text = head.decode("ascii")
    except UnicodeDecodeError:
        return None
    return text if text.startswith("w") and text[1:].isdigit() else None


# Server-side (seed 002) --------------------------------------------------------------------


def leadership(index: Index) -> CheckResult:
    """At most one established leader per epoch."""
    found = _Findings("Leadership")
    leaders: dict[int, set[str]] = defaultdict(set)
    for sample in index.history.leaders:
        found.checked += 1
        leaders[sample.epoch].add(sample.server)
    for epoch, servers in sorted(leaders.items()):
        if len(servers) > 1:
            found.flag("two-leaders-one-epoch", epoch=epoch, leaders=sorted(servers))
    return found.result()


def prefix_consistency(index: Index) -> CheckResult:
    """A zxid names the same transaction on every server that has it."""
    found = _Findings("PrefixConsistency", checked=sum(len(s.txns) for s in index.history.servers))
    for zxid, server, first in index.conflicts:
        found.flag(
            "different-txn-same-zxid", zxid=zxid_hex(zxid), server=server, other_digest=first
        )
    return found.result()


def integrity(index: Index) -> CheckResult:
    """Every delivered change was requested by a client (its tag names an invoked write;
    a delete names a path some client deleted), and no definitely failed write took effect."""
    found = _Findings("Integrity")
    deleted_paths = {path for op in index.history.ops for path in _deleted_paths(op)}
    distinct = {(t.zxid, t.digest): t for s in index.history.servers for t in s.txns}
    for txn in distinct.values():
        for change in txn.changes:
            if change.kind == "check" or not change.path.startswith(index.history.scope):
                continue
            found.checked += 1
            tag = tag_of(change.data)
            if change.kind == "delete":
                if change.path not in deleted_paths:
                    found.flag("unrequested-delete", zxid=zxid_hex(txn.zxid), path=change.path)
                continue
            op = index.ops_by_tag.get(tag) if tag is not None else None
            if op is None:
                found.flag(
                    "unrequested-change",
                    zxid=zxid_hex(txn.zxid),
                    path=change.path,
                    kind=change.kind,
                )
            elif op.outcome == "fail":
                found.flag(
                    "failed-op-took-effect",
                    zxid=zxid_hex(txn.zxid),
                    op=op.index,
                    error=op.error,
                )
    return found.result()


def _deleted_paths(op: ClientOp) -> Iterable[str]:
    if op.kind == "delete":
        yield op.path
    for kind, path, _data, _version in op.sub_ops:
        if kind == "delete":
            yield path


def agreement(index: Index) -> CheckResult:
    """If f1 delivers a and f2 delivers b, then f2 delivers a or f1 delivers b."""
    found = _Findings("Agreement")
    servers = index.history.servers
    only: dict[str, list[int]] = {s.server: [] for s in servers}
    for zxid in index.committed:
        found.checked += 1
        holders = [s for s in servers if index.delivers(s, zxid)]
        if len(holders) < len(servers):
            for s in holders:
                only[s.server].append(zxid)
    for i, first in enumerate(servers):
        for second in servers[i + 1 :]:
            a = [z for z in only[first.server] if not index.delivers(second, z)]
            b = [z for z in only[second.server] if not index.delivers(first, z)]
            if a and b:
                found.flag(
                    "diverged",
                    servers=[first.server, second.server],
                    only_first=zxid_hex(a[0]),
                    only_second=zxid_hex(b[0]),
                )
    return found.result()


def total_order(index: Index) -> CheckResult:
    """Each server delivers in zxid order, and a server that delivers b delivers every
    committed a < b (so a before b everywhere)."""
    found = _Findings("TotalOrder")
    for server in index.history.servers:
        previous = server.snapshot_zxid
        for txn in server.txns:
            found.checked += 1
            if txn.zxid <= previous:
                found.flag(
                    "out-of-order",
                    server=server.server,
                    zxid=zxid_hex(txn.zxid),
                    after=zxid_hex(previous),
                )
            previous = max(previous, txn.zxid)
        last = previous
        stop = bisect.bisect_right(index.committed, last)
        for zxid in index.committed[:stop]:
            if not index.delivers(server, zxid):
                found.flag(
                    "missing-committed",
                    server=server.server,
                    zxid=zxid_hex(zxid),
                    delivered_up_to=zxid_hex(last),
                )
    return found.result()


def local_primary_order(index: Index) -> CheckResult:
    """What a primary broadcast in order is committed in order: within one epoch the
    committed counters have no gap (a gap is a proposal skipped while a later one committed),
    unless some server's snapshot covers it."""
    found = _Findings("LocalPrimaryOrder")
    snapshot_cover = max((s.snapshot_zxid for s in index.history.servers), default=0)
    by_epoch: dict[int, list[int]] = defaultdict(list)
    for zxid in index.committed:
        by_epoch[epoch_of(zxid)].append(counter_of(zxid))
    for epoch, counters in sorted(by_epoch.items()):
        for before, after in itertools.pairwise(counters):
            found.checked += 1
            if after != before + 1 and (epoch << 32 | after - 1) > snapshot_cover:
                found.flag(
                    "gap-in-epoch",
                    epoch=epoch,
                    committed=zxid_hex(epoch << 32 | after),
                    missing=zxid_hex(epoch << 32 | before + 1),
                )
    return found.result()


def global_primary_order(index: Index) -> CheckResult:
    """A server delivers transactions of an older epoch before those of a newer one."""
    found = _Findings("GlobalPrimaryOrder")
    for server in index.history.servers:
        epoch = epoch_of(server.snapshot_zxid)
        for txn in server.txns:
            found.checked += 1
            if epoch_of(txn.zxid) < epoch:
                found.flag(
                    "older-epoch-after-newer",
                    server=server.server,
                    zxid=zxid_hex(txn.zxid),
                    after_epoch=epoch,
                )
            epoch = max(epoch, epoch_of(txn.zxid))
    return found.result()


def primary_integrity(index: Index) -> CheckResult:
    """The primary of epoch e delivers every committed transaction of older epochs before it
    broadcasts its own (the order part is TotalOrder's; this checks it has them at all)."""
    found = _Findings("PrimaryIntegrity")
    servers = {s.server: s for s in index.history.servers}
    leader_of: dict[int, str] = {}
    for sample in index.history.leaders:
        leader_of.setdefault(sample.epoch, sample.server)
    # Per server, the committed zxids it lacks, in order: one pass each, then a bisect per epoch.
    missing = {
        name: [z for z in index.committed if not index.delivers(server, z)]
        for name, server in servers.items()
    }
    for epoch, name in sorted(leader_of.items()):
        primary = servers.get(name)
        if primary is None:
            continue
        own = next((t.zxid for t in primary.txns if epoch_of(t.zxid) == epoch), None)
        if own is None:
            continue
        found.checked += 1
        lacking = missing[name][: bisect.bisect_left(missing[name], epoch << 32)]
        for zxid in lacking:
            found.flag(
                "primary-missing-older-txn",
                primary=name,
                epoch=epoch,
                missing=zxid_hex(zxid),
                first_broadcast=zxid_hex(own),
            )
    return found.result()


# Client-visible ----------------------------------------------------------------------------


def durability(index: Index) -> CheckResult:
    """Every acknowledged write is committed (delivered by a quorum), at the zxid the client
    was told; acknowledged deletes are matched by count per path."""
    found = _Findings("AcknowledgedWritesDurable")
    quorum = index.history.quorum
    acked_deletes: Counter[str] = Counter()
    for op in index.history.ops:
        if op.outcome != "ok" or not op.is_write:
            continue
        found.checked += 1
        if op.kind == "delete":
            acked_deletes[op.path] += 1
            continue
        txn = index.txn_of(op)
        if txn is None:
            found.flag("acknowledged-write-lost", op=op.index, kind=op.kind, path=op.path)
            continue
        if index.delivered_by[txn.zxid] < quorum:
            found.flag(
                "acknowledged-write-not-on-quorum",
                op=op.index,
                zxid=zxid_hex(txn.zxid),
                servers=index.delivered_by[txn.zxid],
            )
        if op.zxid is not None and op.zxid != txn.zxid:
            found.flag(
                "acknowledged-at-other-zxid",
                op=op.index,
                told=zxid_hex(op.zxid),
                logged=zxid_hex(txn.zxid),
            )
    committed_deletes: Counter[str] = Counter(
        change.path
        for zxid in index.committed
        for change in index.by_zxid[zxid].changes
        if change.kind == "delete"
    )
    for path, count in sorted(acked_deletes.items()):
        if committed_deletes[path] < count:
            found.flag(
                "acknowledged-delete-lost",
                path=path,
                acknowledged=count,
                committed=committed_deletes[path],
            )
    return found.result()


def compare_and_set(index: Index) -> CheckResult:
    """Per znode, the committed changes form a valid version sequence (create at 0, each set
    one more, no create over an existing znode, no delete of a missing one), and each
    conditional set took effect exactly at the version it named."""
    found = _Findings("VersionsCompareAndSet")
    for path, events in index.path_events.items():
        exists: bool | None = None  # None: state before the first logged event is unknown
        version: int | None = None
        for zxid, change in events:
            if zxid not in index.committed_set:
                continue
            found.checked += 1
            where = {"path": path, "zxid": zxid_hex(zxid)}
            if change.kind == "create":
                if exists:
                    found.flag("create-over-existing", **where)
                exists, version = True, 0
            elif change.kind == "delete":
                if exists is False:
                    found.flag("delete-of-missing", **where)
                exists, version = False, None
            elif change.kind == "set":
                if exists is False:
                    found.flag("set-of-missing", **where)
                elif version is not None and change.version != version + 1:
                    found.flag(
                        "version-skipped",
                        previous=version,
                        logged=change.version,
                        **where,
                    )
                exists, version = True, change.version
    for op in index.history.ops:
        if op.kind != "set" or op.outcome == "fail":
            continue
        txn = index.txn_of(op)
        if txn is None:
            continue
        found.checked += 1
        logged = next((c for c in txn.changes if c.kind == "set" and c.path == op.path), None)
        if logged is None:
            found.flag("set-logged-as-other-change", op=op.index, zxid=zxid_hex(txn.zxid))
            continue
        if op.expected_version >= 0 and logged.version != op.expected_version + 1:
            found.flag(
                "conditional-set-at-wrong-version",
                op=op.index,
                expected=op.expected_version,
                logged=logged.version,
            )
        if op.outcome == "ok" and op.version is not None and op.version != logged.version:
            found.flag(
                "acknowledged-version-differs",
                op=op.index,
                told=op.version,
                logged=logged.version,
            )
    return found.result()


def _sessions(ops: Iterable[ClientOp]) -> dict[tuple[int, int], list[ClientOp]]:
    sessions: dict[tuple[int, int], list[ClientOp]] = defaultdict(list)
    for op in sorted(ops, key=lambda o: o.invoke_time):
        sessions[(op.process, op.session)].append(op)
    return sessions


def _write_zxid(index: Index, op: ClientOp) -> int | None:
    if op.outcome != "ok" or op.kind == "delete":
        return None
    if op.zxid is not None:
        return op.zxid
    txn = index.txn_of(op)
    return txn.zxid if txn is not None else None


def session_order(index: Index) -> CheckResult:
    """A session's acknowledged writes apply in the order it issued them (FIFO client order),
    and it reads its own writes: a read after its write of a path sees that write or later."""
    found = _Findings("SessionOrder")
    for (process, session), ops in _sessions(index.history.ops).items():
        last_write = 0
        own: dict[str, int] = {}
        for op in ops:
            zxid = _write_zxid(index, op)
            if zxid is not None:
                found.checked += 1
                if zxid <= last_write:
                    found.flag(
                        "session-writes-reordered",
                        process=process,
                        session=session,
                        op=op.index,
                        zxid=zxid_hex(zxid),
                        after=zxid_hex(last_write),
                    )
                last_write = max(last_write, zxid)
                for path in _written_paths(op):
                    own[path] = zxid
            elif op.kind == "read" and op.outcome == "ok" and op.path in own:
                found.checked += 1
                written = own[op.path]
                if op.found and op.mzxid is not None and op.mzxid < written:
                    found.flag(
                        "own-write-not-read",
                        process=process,
                        session=session,
                        op=op.index,
                        read_mzxid=zxid_hex(op.mzxid),
                        written=zxid_hex(written),
                    )
                elif not op.found and not _deleted_after(index, op.path, written):
                    found.flag(
                        "own-write-not-read",
                        process=process,
                        session=session,
                        op=op.index,
                        read="no node",
                        written=zxid_hex(written),
                    )
    return found.result()


def _written_paths(op: ClientOp) -> list[str]:
    if op.kind == "multi":
        return [path for kind, path, _d, _v in op.sub_ops if kind in ("create", "set")]
    return [op.path]


def _deleted_after(index: Index, path: str, zxid: int) -> bool:
    zxids = index.path_zxids.get(path, [])
    events = index.path_events.get(path, [])
    start = bisect.bisect_right(zxids, zxid)
    return any(change.kind == "delete" for _z, change in events[start:])


def sequential_reads(index: Index) -> CheckResult:
    """Each read returns a committed value (the data the log holds at the read's mzxid), and
    within a session reads never go back before what the session already saw or wrote: the
    value read must still have been current at or after that point."""
    found = _Findings("SequentialReads")
    absence: dict[str, tuple[int | None, bool]] = defaultdict(lambda: (None, True))
    for path, path_events in index.path_events.items():
        creates = [z for z, c in path_events if c.kind == "create" and z in index.committed_set]
        absence[path] = (
            creates[-1] if creates else None,
            path_events[-1][1].kind == "delete",
        )
    for (process, session), ops in _sessions(index.history.ops).items():
        floor = 0
        for op in ops:
            zxid = _write_zxid(index, op)
            if zxid is not None:
                floor = max(floor, zxid)
                continue
            if op.kind != "read" or op.outcome != "ok":
                continue
            where = {"process": process, "session": session, "op": op.index, "path": op.path}
            zxids = index.path_zxids.get(op.path, [])
            events = index.path_events.get(op.path, [])
            if op.found:
                if op.mzxid is None:
                    continue
                at = bisect.bisect_left(zxids, op.mzxid)
                if at == len(zxids) or zxids[at] != op.mzxid:
                    continue  # written before the logs begin: covered by a snapshot
                found.checked += 1
                change = events[at][1]
                if op.mzxid not in index.committed_set or change.data != op.value:
                    found.flag(
                        "read-uncommitted-or-wrong-value",
                        mzxid=zxid_hex(op.mzxid),
                        **where,
                    )
                later = zxids[at + 1] if at + 1 < len(zxids) else None
                if later is not None and later <= floor:
                    found.flag(
                        "stale-read",
                        mzxid=zxid_hex(op.mzxid),
                        overwritten_at=zxid_hex(later),
                        session_saw=zxid_hex(floor),
                        **where,
                    )
                floor = max(floor, op.mzxid)
            else:
                found.checked += 1
                last_create, final_missing = absence[op.path]
                if not final_missing and last_create is not None and last_create <= floor:
                    found.flag(
                        "stale-no-node",
                        created_at=zxid_hex(last_create),
                        session_saw=zxid_hex(floor),
                        **where,
                    )
    return found.result()


SERVER_CHECKERS: tuple[Callable[[Index], CheckResult], ...] = (
    leadership,
    prefix_consistency,
    integrity,
    agreement,
    total_order,
    local_primary_order,
    global_primary_order,
    primary_integrity,
)
CLIENT_CHECKERS: tuple[Callable[[Index], CheckResult], ...] = (
    durability,
    compare_and_set,
    session_order,
    sequential_reads,
)


@dataclass(frozen=True)
class CheckReport:
    """All checkers' results and their validity together: valid is False if any found an
    anomaly, "unknown" if a required one (:data:`REQUIRED`) could not judge anything, else
    True. Not a run's verdict: the runner (``conformance.zab.runner``) makes that, in the
    project's one vocabulary, from this and from how the run went."""

    valid: Validity
    results: tuple[CheckResult, ...]

    def to_json(self) -> dict[str, Any]:
        return {"valid": self.valid, "checkers": {r.name: r.to_json() for r in self.results}}


REQUIRED = ("PrefixConsistency", "TotalOrder", "AcknowledgedWritesDurable")


def check(history: History) -> CheckReport:
    index = Index(history)
    results = tuple(checker(index) for checker in SERVER_CHECKERS + CLIENT_CHECKERS)
    valid: Validity
    if any(r.valid is False for r in results):
        valid = False
    elif any(r.valid == "unknown" for r in results if r.name in REQUIRED):
        valid = "unknown"
    else:
        valid = True
    return CheckReport(valid, results)
