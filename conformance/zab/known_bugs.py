"""Known ZooKeeper bugs driven from outside through the quorum proxy (issue 31, Deliver 5).

Each scenario is a schedule of holds and releases on real servers' quorum traffic
(:mod:`adapters.zkquorum.proxy`), unmodified ZooKeeper of the release asked, and a check of what
the servers did. Three so far:

**ZOOKEEPER-4394** (affected up to 3.9.2, fixed in 3.9.3): on NEWLEADER a syncing follower
cleared its not-yet-committed proposals, so a COMMIT that reaches it after NEWLEADER and before
UPTODATE finds no proposal: ``NullPointerException`` in ``Learner.syncWithLeader``, the
follower drops the connection and syncs again (availability, not loss). The schedule, on three
servers: a client writes through the leader while the other follower's ACK of that proposal is
held (the proposal stays outstanding: the leader alone is no quorum); the joining follower,
restarted, syncs (DIFF with the outstanding PROPOSAL, then NEWLEADER) and its ACK of NEWLEADER
is held (no UPTODATE yet); the other follower's ACK is released (the leader commits and sends
the joiner a COMMIT inside the window); then the joiner's ACK goes and UPTODATE follows.

The model accepts a COMMIT in that window (the spec's follower commits on COMMIT during
synchronisation), so a follower that fails its sync on it is a **divergence**; reaching the
window and seeing the follower take the COMMIT on the same connection is **clean**; a schedule
that could not be carried out (a hold lost before its release, the COMMIT not in the window)
is **undecided**, and says why.

**ZOOKEEPER-4925** (data loss; 3.9.3 only, fixed in 3.9.4): since the 3.9.3 fix of 4394, a
follower applies the transactions of a DIFF (the committed ones before NEWLEADER) without adding
them to its in-memory committed log, the log a leader serves DIFFs from. Once that follower
leads, its DIFF to a stale follower silently skips them. The schedule, on three servers (L
leads, F and S follow): S is killed (stale from here on); a client writes ``/hole`` through L
and its PROPOSAL to F is held until L is killed, so ``/hole`` is in L's log alone; L restarts:
L and F elect L (its log is longer) and F syncs by a DIFF that carries ``/hole`` before
NEWLEADER (the hole in F's committed log); a client writes ``/after`` (committed the ordinary
way); L is killed, S restarts, F leads and syncs S by DIFF. A ``/hole`` that F serves and S,
synced and serving, does not is a committed transaction lost: a **violation** of the spec's
agreement on committed history. Both there is **clean**; a schedule that did not come about
(another leader, ``/hole`` never committed, S not serving) is **undecided** and says why.

**ZOOKEEPER-4785** (transactions lost in a DIFF sync; fixed in 3.9.2 and 3.8.5): on NEWLEADER a
syncing follower wrote its new epoch, handed the synced transactions to its background disk
writer and ACKed at once; killed before the writer flushed, it comes back with the new epoch and
without them, and the new epoch wins it the next election: the others truncate to its log. A
race from outside, on three servers (A leads, B and C follow): B is killed; a client commits
``_WRITES`` transactions through A and C; A and C are killed; A and B restart and A syncs B by
DIFF; B is killed (``SIGKILL`` from the proxy's thread) the moment its ACK of NEWLEADER reaches
the proxy; A is killed; B and C restart and elect. Fewer of the transactions served than were
committed is a **violation** (the race won: a hit); all of them is **clean** (the kill came
after the flush, or the release has the fix); a schedule that did not come about is
**undecided**.

In every scenario, a server that cannot start again from its own data after a crash is a
**violation** of durability, whatever the scenario's own check would have said: the rule of
``zab search`` too (:func:`.durability.unrecoverable`). ZOOKEEPER-4785's kill at the ACK of
NEWLEADER is where ZOOKEEPER-2332 (fixed in 3.9.3) hits: the follower's new log file is left
empty and it exits with ``EOFException`` at every start
(docs/findings/zookeeper-2332-from-the-models-path.md). Any other failure to start is the
harness's: the attempt is undecided (``zab bug`` says the ensemble failed).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from kazoo.client import KazooClient
from kazoo.exceptions import KazooException
from kazoo.handlers.threading import KazooTimeoutError

from adapters.cluster.errors import ClusterError
from adapters.cluster.zookeeper import ZooKeeperEnsemble
from adapters.installations.system import zookeeper_version
from adapters.installations.zookeeper import ZooKeeperInstall
from adapters.zkproxy.errors import NotHeld, ZkProxyTimeout
from adapters.zkquorum.packets import PacketType, QuorumPacket, zxid_text
from adapters.zkquorum.proxy import (
    Action,
    Direction,
    QuorumLink,
    QuorumMatch,
    QuorumProxy,
    QuorumRecord,
)
from adapters.zookeeper.txnlog import TxnLogError, read_server
from conformance.verdict import Verdict, worst
from conformance.zab.durability import unrecoverable
from conformance.zab.proxied import proxied_ensemble
from conformance.zab.quorum_trace import QuorumTraceReport, ServerEvent, server_events, validate

#: Holds last at most this long (the ensemble's syncLimit is 10 s): a follower whose leader is
#: silent longer drops the connection by itself.
_WAIT_S = 8.0
#: What the joiner's log says when ZOOKEEPER-4394 hits.
NPE = "NullPointerException"


@dataclass
class BugRun:
    """One attempt of a known-bug scenario: what it ran on, what the proxy saw, what the
    servers said, and the verdict."""

    bug: str
    zookeeper: str
    verdict: Verdict = Verdict.UNDECIDED
    #: The packets that show the window, in order (4394: the joiner's from NEWLEADER to
    #: UPTODATE on its first connection; 4925: the two DIFF syncs).
    window: list[str] = field(default_factory=list)
    #: The evidence: the server's exception, or why the run decided nothing.
    evidence: str = ""
    connections: int = 0
    #: The server that joined, and every packet of its link to the leader from its restart.
    joiner: str = ""
    records: list[QuorumRecord] = field(default_factory=list, repr=False)
    #: Every packet of the run, on every link, and their validation against the spec.
    traffic: list[QuorumRecord] = field(default_factory=list, repr=False)
    #: The servers' crashes and restarts (the ensemble's lifecycle), beside the traffic.
    events: list[ServerEvent] = field(default_factory=list, repr=False)
    trace: QuorumTraceReport | None = None
    #: A server that could not start again from its own data after a crash (the finding of
    #: :func:`.durability.unrecoverable`); empty: none. The schedule stopped there.
    cannot_restart: str = ""

    def describe(self) -> str:
        shown = self.window
        if len(shown) > 12:  # a DIFF of hundreds of transactions: its ends, and how many
            shown = [*shown[:4], f"... {len(shown) - 8} more ...", *shown[-4:]]
        window = ", ".join(shown) or "not reached"
        connections = f"joiner connections: {self.connections}; " if self.connections else ""
        trace = f"; {self.trace.summary()}" if self.trace is not None else ""
        return (
            f"{self.bug} on ZooKeeper {self.zookeeper}: {self.verdict}; window: {window}; "
            f"{connections}{self.evidence}{trace}"
        )


@contextlib.contextmanager
def _restarts_judged(run: BugRun) -> Iterator[None]:
    """Around a scenario's schedule: a server that exits while starting because it cannot load
    its own data ends the schedule with that finding on ``run`` (:func:`_judge_restart` makes
    it the verdict); any other cluster error goes on up (the ensemble failed: undecided)."""
    try:
        yield
    except ClusterError as exc:
        found = unrecoverable(exc)
        if found is None:
            raise
        run.cannot_restart = found


def _judge_restart(run: BugRun) -> None:
    """After a scenario's own judge: a server that could not start again from its own data is
    a violation of durability (ZooKeeper's failure, not the harness's; the rule of ``zab
    search`` too), whatever that judge said of a schedule that stopped there."""
    if not run.cannot_restart:
        return
    run.verdict = worst([run.verdict, Verdict.VIOLATION])
    stopped = f"; the scenario's own check: {run.evidence}" if run.evidence else ""
    run.evidence = f"{run.cannot_restart}{stopped}"


def _validate_traffic(run: BugRun, servers: int = 3) -> None:
    """Every packet of the run against the spec's actions (:mod:`.quorum_trace`): a sender that
    broke a guard is a finding of its own, whatever the scenario's check said."""
    run.trace = validate(run.traffic, servers, run.events)
    if run.trace.verdict.finding:
        run.verdict = worst([run.verdict, run.trace.verdict])
        found = (run.trace.violations + run.trace.divergences)[0]
        run.evidence = f"{run.evidence}; the quorum trace: {found}".lstrip("; ")


def _client(server_host: str, port: int) -> KazooClient:
    client = KazooClient(hosts=f"{server_host}:{port}", timeout=15)
    client.start(timeout=15)
    return client


def zookeeper_4394(install: ZooKeeperInstall, work_dir: Path | None = None) -> BugRun:
    """One attempt of ZOOKEEPER-4394's schedule on a fresh three-server ensemble of
    ``install`` (see the module docstring)."""
    version = zookeeper_version(install.classpath) or "of unknown version"
    run = BugRun("ZOOKEEPER-4394", version)
    with proxied_ensemble(install, work_dir, "4394") as (ensemble, proxy, base):
        ensemble.start()
        with _restarts_judged(run):
            _drive_4394(ensemble, proxy, run)
        time.sleep(0.2)  # the joiner's log has its exception (or not) by now
        log = (base / "logs" / f"{run.joiner}.log").read_text(errors="replace")
    _judge_4394(run, log)
    _judge_restart(run)
    _validate_traffic(run)
    return run


def _drive_4394(ensemble: ZooKeeperEnsemble, proxy: QuorumProxy, run: BugRun) -> None:
    leader, joiner, other = _roles(ensemble)
    run.joiner = joiner
    joiner_link = QuorumLink(_sid(joiner), _sid(leader))
    other_link = QuorumLink(_sid(other), _sid(leader))
    server = ensemble.server(leader)
    client = _client(server.host, server.client_port)
    try:
        client.create("/before", b"committed everywhere")
        ensemble.crash(joiner)
        mark = proxy.mark()  # the joiner's earlier connection ends before this
        other_ack = QuorumMatch(frozenset({PacketType.ACK}), Direction.TO_LEADER, other_link)
        proxy.add_rule(other_ack, Action.HOLD, count=1)
        outstanding = client.create_async("/outstanding", b"proposed, not committed")
        held_other = proxy.wait_for(other_ack, timeout=_WAIT_S, since=mark)
        joiner_ack = QuorumMatch(frozenset({PacketType.ACK}), Direction.TO_LEADER, joiner_link)
        proxy.add_rule(joiner_ack, Action.HOLD, count=1)
        ensemble.restart(joiner, wait=False)
        held_joiner = proxy.wait_for(joiner_ack, timeout=_WAIT_S * 2, since=mark)
        proxy.release(held_other.record_id)  # the leader commits: a COMMIT into the window
        outstanding.get(timeout=_WAIT_S)
        commit = QuorumMatch(frozenset({PacketType.COMMIT}), Direction.TO_LEARNER, joiner_link)
        proxy.wait_for(commit, timeout=_WAIT_S, since=mark)
        time.sleep(0.5)  # the joiner takes the COMMIT, or fails on it and drops the connection
        # Then UPTODATE; a joiner that failed on the COMMIT has dropped the connection and the
        # hold with it (the judge reads why).
        with contextlib.suppress(NotHeld):
            proxy.release(held_joiner.record_id)
        uptodate = QuorumMatch(frozenset({PacketType.UPTODATE}), Direction.TO_LEARNER, joiner_link)
        proxy.wait_for(uptodate, timeout=_WAIT_S * 2, since=mark)
        time.sleep(0.5)
    except (ZkProxyTimeout, NotHeld) as exc:
        run.evidence = f"the schedule could not be carried out: {exc}"
    finally:
        client.stop()
        client.close()
        run.traffic = proxy.records()
        run.events = server_events(ensemble.lifecycle)
        run.records = [r for r in run.traffic[mark:] if r.link == joiner_link]


def _judge_4394(run: BugRun, log: str) -> None:
    packets = [r for r in run.records if isinstance(r.frame, QuorumPacket)]
    run.connections = len({r.connection for r in packets})
    first = packets[0].connection if packets else None
    names = [
        (r.frame.name, r.frame.describe())  # type: ignore[union-attr]
        for r in packets
        if r.connection == first and r.frame.type != PacketType.PING  # type: ignore[union-attr]
    ]
    kinds = [name for name, _text in names]
    if "NEWLEADER" in kinds:
        start = kinds.index("NEWLEADER")
        end = kinds.index("UPTODATE") if "UPTODATE" in kinds else len(kinds)
        run.window = [text for _name, text in names[start : end + 1]]
    in_window = any(text.startswith("COMMIT") for text in run.window)
    exceptions = [line.strip() for line in log.splitlines() if NPE in line]
    if exceptions:
        run.verdict = Verdict.DIVERGENCE
        run.evidence = (
            f"the joiner failed its sync on a COMMIT the model accepts: {exceptions[0][:160]}"
            f" (then synced again: {run.connections} connections)"
        )
    elif run.evidence:
        run.verdict = Verdict.UNDECIDED
    elif not in_window:
        run.verdict = Verdict.UNDECIDED
        run.evidence = "no COMMIT reached the joiner between NEWLEADER and UPTODATE"
    elif run.connections != 1 or "UPTODATE" not in kinds:
        run.verdict = Verdict.UNDECIDED
        run.evidence = f"the joiner connected {run.connections} times without an exception"
    else:
        run.verdict = Verdict.CLEAN
        run.evidence = "the joiner took the COMMIT inside the window on one connection"


@dataclass
class StaleSync:
    """What ZOOKEEPER-4925's schedule saw: the servers' roles, the two syncs' packets (each
    from DIFF to UPTODATE on the syncing server's link), and what each server serves."""

    leader: str = ""
    holder: str = ""
    stale: str = ""
    #: The held PROPOSAL's zxid: ``/hole``'s transaction.
    hole_zxid: int | None = None
    holder_sync: list[QuorumRecord] = field(default_factory=list)
    stale_sync: list[QuorumRecord] = field(default_factory=list)
    #: Does the server serve the node (after a ``sync``)? None: not asked.
    hole_on_holder: bool | None = None
    hole_on_stale: bool | None = None
    after_on_stale: bool | None = None


def zookeeper_4925(install: ZooKeeperInstall, work_dir: Path | None = None) -> BugRun:
    """One attempt of ZOOKEEPER-4925's schedule on a fresh three-server ensemble of
    ``install`` (see the module docstring)."""
    version = zookeeper_version(install.classpath) or "of unknown version"
    run = BugRun("ZOOKEEPER-4925", version)
    seen = StaleSync()
    with proxied_ensemble(install, work_dir, "4925") as (ensemble, proxy, _base):
        ensemble.start()
        with _restarts_judged(run):
            _drive_4925(ensemble, proxy, run, seen)
    _judge_4925(run, seen)
    _judge_restart(run)
    _validate_traffic(run)
    return run


def _sid(name: str) -> int:
    return int(name.removeprefix("zk"))


def _roles(ensemble: ZooKeeperEnsemble) -> tuple[str, str, str]:
    """The leader of a three-server ensemble and its two followers, by ``myid``."""
    leader = ensemble.leader()
    if leader is None:
        raise RuntimeError("the ensemble has no leader")
    first, second = sorted(name for name in ensemble.servers if name != leader)
    return leader, first, second


def _serves(ensemble: ZooKeeperEnsemble, name: str, path: str) -> bool:
    """Does ``name`` serve ``path``, after a ``sync`` (so it has caught up with its leader)?"""
    server = ensemble.server(name)
    client = _client(server.host, server.client_port)
    try:
        client.sync("/")
        return client.exists(path) is not None
    finally:
        client.stop()
        client.close()


def _write(ensemble: ZooKeeperEnsemble, name: str, path: str) -> None:
    server = ensemble.server(name)
    client = _client(server.host, server.client_port)
    try:
        client.create(path, path.encode())
    finally:
        client.stop()
        client.close()


def _sync_of(proxy: QuorumProxy, link: QuorumLink, since: int) -> list[QuorumRecord]:
    """The first connection's packets on ``link`` after ``since``, from its DIFF (or SNAP,
    TRUNC) to its UPTODATE, pings left out."""
    packets = [
        r
        for r in proxy.records(since)
        if r.link == link and isinstance(r.frame, QuorumPacket) and r.frame.type != PacketType.PING
    ]
    if not packets:
        return []
    first = [r for r in packets if r.connection == packets[0].connection]
    starts = {PacketType.DIFF, PacketType.SNAP, PacketType.TRUNC}
    kinds = [r.frame.type for r in first]  # type: ignore[union-attr]
    start = next((i for i, kind in enumerate(kinds) if kind in starts), len(first))
    end = kinds.index(PacketType.UPTODATE) if PacketType.UPTODATE in kinds else len(first) - 1
    return first[start : end + 1]


def _drive_4925(
    ensemble: ZooKeeperEnsemble, proxy: QuorumProxy, run: BugRun, seen: StaleSync
) -> None:
    leader, holder, stale = _roles(ensemble)
    seen.leader, seen.holder, seen.stale = leader, holder, stale
    holder_link = QuorumLink(_sid(holder), _sid(leader))
    stale_link = QuorumLink(_sid(stale), _sid(holder))
    try:
        _write(ensemble, leader, "/before")
        if not _serves(ensemble, stale, "/before"):
            run.evidence = f"{stale} did not serve /before: it is not stale from a known point"
            return
        ensemble.crash(stale)
        server = ensemble.server(leader)
        client = _client(server.host, server.client_port)  # its session is a transaction too
        try:
            # /hole goes to the leader's log alone: its PROPOSAL to the holder is held (what
            # follows it on that connection waits behind it) while the leader logs it, and
            # lost when the leader dies: the leader crashed after logging it, before sending.
            proposal = QuorumMatch(
                frozenset({PacketType.PROPOSAL}), Direction.TO_LEARNER, holder_link
            )
            mark = proxy.mark()
            proxy.add_rule(proposal, Action.HOLD, count=1)
            client.create_async("/hole", b"in the leader's log alone")
            held = proxy.wait_for(proposal, timeout=_WAIT_S, since=mark)
            seen.hole_zxid = held.frame.zxid  # type: ignore[union-attr]
            time.sleep(1.0)  # the leader logs it (its own ACK needs the log written)
            ensemble.crash(leader)
        finally:
            with contextlib.suppress(Exception):  # the server is gone: nothing to close
                client.stop()
                client.close()
        # The leader comes back with the longer log, leads, and syncs the holder by DIFF.
        mark = proxy.mark()
        ensemble.restart(leader, wait=False)
        ensemble.wait_until_serving([leader, holder], ensemble.start_timeout)
        if ensemble.leader() != leader:
            run.evidence = f"{ensemble.leader()} led after {leader}'s restart, not {leader}"
            return
        uptodate = QuorumMatch(frozenset({PacketType.UPTODATE}), Direction.TO_LEARNER, holder_link)
        proxy.wait_for(uptodate, timeout=_WAIT_S, since=mark)
        seen.holder_sync = _sync_of(proxy, holder_link, mark)
        _write(ensemble, leader, "/after")
        seen.hole_on_holder = _serves(ensemble, holder, "/hole")
        # The holder leads with the hole in its committed log, and syncs the stale server.
        ensemble.crash(leader)
        mark = proxy.mark()
        ensemble.restart(stale, wait=False)
        ensemble.wait_until_serving([holder, stale], ensemble.start_timeout)
        if ensemble.leader() != holder:
            run.evidence = f"{ensemble.leader()} led after {stale}'s restart, not {holder}"
            return
        uptodate = QuorumMatch(frozenset({PacketType.UPTODATE}), Direction.TO_LEARNER, stale_link)
        proxy.wait_for(uptodate, timeout=_WAIT_S, since=mark)
        seen.stale_sync = _sync_of(proxy, stale_link, mark)
        seen.after_on_stale = _serves(ensemble, stale, "/after")
        seen.hole_on_stale = _serves(ensemble, stale, "/hole")
    except (ZkProxyTimeout, NotHeld, KazooException, KazooTimeoutError) as exc:
        run.evidence = f"the schedule could not be carried out: {exc!r}"
    finally:
        run.records = run.traffic = proxy.records()
        run.events = server_events(ensemble.lifecycle)


def _describe(records: list[QuorumRecord]) -> list[str]:
    return [f"{r.link.describe()} {r.frame.describe()}" for r in records]  # type: ignore[union-attr]


def _judge_4925(run: BugRun, seen: StaleSync) -> None:
    run.joiner = seen.stale
    run.window = _describe(seen.holder_sync) + _describe(seen.stale_sync)
    hole = zxid_text(seen.hole_zxid) if seen.hole_zxid is not None else "?"
    before_newleader = []
    for record in seen.holder_sync:
        frame = record.frame
        if isinstance(frame, QuorumPacket) and frame.type == PacketType.NEWLEADER:
            break
        before_newleader.append(record)
    diffed = any(
        isinstance(r.frame, QuorumPacket)
        and r.frame.type == PacketType.COMMIT
        and r.frame.zxid == seen.hole_zxid
        for r in before_newleader
    )
    first = seen.holder_sync[0].frame if seen.holder_sync else None
    by_diff = isinstance(first, QuorumPacket) and first.type == PacketType.DIFF
    if run.evidence:
        run.verdict = Verdict.UNDECIDED
    elif not (by_diff and diffed):
        run.verdict = Verdict.UNDECIDED
        run.evidence = (
            f"{seen.holder} did not sync /hole ({hole}) by DIFF before NEWLEADER: "
            f"{', '.join(_describe(seen.holder_sync)) or 'no sync seen'}"
        )
    elif not seen.hole_on_holder:
        run.verdict = Verdict.UNDECIDED
        run.evidence = f"{seen.holder} does not serve /hole: it was never committed"
    elif not seen.after_on_stale:
        run.verdict = Verdict.UNDECIDED
        run.evidence = f"{seen.stale} does not serve /after: it did not sync from {seen.holder}"
    elif not seen.hole_on_stale:
        run.verdict = Verdict.VIOLATION
        run.evidence = (
            f"committed transaction {hole} (/hole) lost: {seen.holder}, the leader, serves it; "
            f"{seen.stale}, synced by {seen.holder}'s DIFF and serving /after, does not"
        )
    else:
        run.verdict = Verdict.CLEAN
        run.evidence = (
            f"{seen.stale} serves /hole ({hole}) after its DIFF sync from {seen.holder}, "
            f"which had synced it by DIFF"
        )


#: ZOOKEEPER-4785's DIFF: transactions the killed follower misses (under the leader's
#: 500-entry committed log, so the sync is a DIFF from memory), each with this much data (a
#: longer write for the follower's disk writer: a wider window).
_WRITES = 300
_WRITE_SIZE = 2048


@dataclass
class LostSync:
    """What ZOOKEEPER-4785's schedule saw."""

    leader: str = ""
    killed: str = ""
    other: str = ""
    written: int = 0
    #: The packet the follower was killed at (its ACK of NEWLEADER), described.
    killed_at: str = ""
    #: The killed follower's disk after the kill: its current epoch and how many of the
    #: written transactions its log holds.
    epoch_on_disk: int | None = None
    written_on_disk: int | None = None
    disk_note: str = ""
    new_leader: str | None = None
    #: How many of the written nodes each restarted server serves.
    served: dict[str, int] = field(default_factory=dict)
    sync: list[QuorumRecord] = field(default_factory=list)


def zookeeper_4785(install: ZooKeeperInstall, work_dir: Path | None = None) -> BugRun:
    """One attempt of ZOOKEEPER-4785's race on a fresh three-server ensemble of ``install``
    (see the module docstring)."""
    version = zookeeper_version(install.classpath) or "of unknown version"
    run = BugRun("ZOOKEEPER-4785", version)
    seen = LostSync()
    with proxied_ensemble(install, work_dir, "4785") as (ensemble, proxy, _base):
        ensemble.start()
        # The follower killed at its ACK of NEWLEADER may not start again (ZOOKEEPER-2332 up
        # to 3.9.2): a violation of its own, named in the evidence.
        with _restarts_judged(run):
            _drive_4785(ensemble, proxy, run, seen)
    _judge_4785(run, seen)
    _judge_restart(run)
    _validate_traffic(run)
    return run


def _write_many(ensemble: ZooKeeperEnsemble, name: str, count: int) -> None:
    server = ensemble.server(name)
    client = _client(server.host, server.client_port)
    try:
        client.create("/t", b"")
        data = bytes(_WRITE_SIZE)
        pending = [client.create_async(f"/t/{i:04d}", data) for i in range(count)]
        for result in pending:
            result.get(timeout=_WAIT_S)
    finally:
        client.stop()
        client.close()


def _count_served(ensemble: ZooKeeperEnsemble, name: str) -> int:
    server = ensemble.server(name)
    client = _client(server.host, server.client_port)
    try:
        client.sync("/")
        return len(client.get_children("/t")) if client.exists("/t") else 0
    finally:
        client.stop()
        client.close()


def _on_disk(ensemble: ZooKeeperEnsemble, name: str) -> tuple[int | None, int | None, str]:
    """The server's current epoch (its ``currentEpoch`` file), how many ``/t/`` creates its
    transaction log holds (None: the log could not be read), and what was wrong with it."""
    version_dir = ensemble.server(name).data_dir / "version-2"
    epoch_file = version_dir / "currentEpoch"
    epoch = int(epoch_file.read_text().strip()) if epoch_file.exists() else None
    try:
        txns = read_server(ensemble.server(name).data_dir).txns
    except TxnLogError as exc:  # a kill -9 in the middle of a write can leave a torn entry
        return epoch, None, f"its log is torn: {exc}"
    creates = {
        change.path
        for txn in txns
        for change in txn.changes
        if change.kind == "create" and change.path.startswith("/t/")
    }
    return epoch, len(creates), ""


def _drive_4785(
    ensemble: ZooKeeperEnsemble, proxy: QuorumProxy, run: BugRun, seen: LostSync
) -> None:
    leader, killed, other = _roles(ensemble)
    seen.leader, seen.killed, seen.other = leader, killed, other
    link = QuorumLink(_sid(killed), _sid(leader))
    try:
        # The follower holds a transaction first: its last zxid is then in the leader's
        # committed log (the last 500), and its sync a DIFF, not a snapshot.
        _write(ensemble, leader, "/before")
        if not _serves(ensemble, killed, "/before"):
            run.evidence = f"{killed} did not serve /before: its sync would not be a DIFF"
            return
        ensemble.crash(killed)
        _write_many(ensemble, leader, _WRITES)
        seen.written = _WRITES
        ensemble.crash(other)
        ensemble.crash(leader)
        # Its ACK of NEWLEADER (zxid e << 32; 3.9.1 may ACK the DIFF's proposals before it):
        # the follower dies the moment it reaches the proxy, and goes no further.
        ack = QuorumMatch(frozenset({PacketType.ACK}), Direction.TO_LEADER, link, zxid_counter=0)
        # Cut: a packet its sender died sending, and anything after it, is never delivered.
        proxy.add_rule(ack, Action.CUT, count=1, at_match=lambda _r: ensemble.kill_at_once(killed))
        mark = proxy.mark()
        ensemble.restart(leader, wait=False)
        ensemble.restart(killed, wait=False)
        at = proxy.wait_for(ack, timeout=ensemble.start_timeout, since=mark)
        seen.killed_at = at.describe()
        ensemble.crash(killed)  # reaps it
        seen.sync = _sync_of(proxy, link, mark)
        ensemble.crash(leader)
        seen.epoch_on_disk, seen.written_on_disk, seen.disk_note = _on_disk(ensemble, killed)
        ensemble.restart(killed, wait=False)
        ensemble.restart(other, wait=False)
        ensemble.wait_until_serving([killed, other], ensemble.start_timeout)
        seen.new_leader = ensemble.leader()
        for name in (killed, other):
            seen.served[name] = _count_served(ensemble, name)
    except (ZkProxyTimeout, NotHeld, KazooException, KazooTimeoutError) as exc:
        run.evidence = f"the schedule could not be carried out: {exc!r}"
    finally:
        run.records = run.traffic = proxy.records()
        run.events = server_events(ensemble.lifecycle)
        errors = proxy.errors()
        if errors and not run.evidence:
            run.evidence = f"the crash at the packet failed: {errors[0][1]}"


def _synced_by_diff(sync: list[QuorumRecord]) -> bool:
    first = sync[0].frame if sync else None
    return isinstance(first, QuorumPacket) and first.type == PacketType.DIFF


def _judge_4785(run: BugRun, seen: LostSync) -> None:
    run.joiner = seen.killed
    run.window = _describe(seen.sync)
    held = "an unreadable number" if seen.written_on_disk is None else seen.written_on_disk
    disk = (
        f"{seen.killed} had epoch {seen.epoch_on_disk} and {held} of the "
        f"{seen.written} transactions on disk after its kill at {seen.killed_at}"
        + (f" ({seen.disk_note})" if seen.disk_note else "")
    )
    short = {name: count for name, count in seen.served.items() if count < seen.written}
    if run.evidence:
        run.verdict = Verdict.UNDECIDED
    elif not seen.killed_at or len(seen.served) != 2:
        run.verdict = Verdict.UNDECIDED
        run.evidence = f"the schedule did not come about ({disk}; served: {seen.served})"
    elif not _synced_by_diff(seen.sync):
        run.verdict = Verdict.UNDECIDED
        run.evidence = (
            f"{seen.killed}'s sync was not a DIFF ({', '.join(run.window) or 'none seen'}): "
            "no window for the race"
        )
    elif short:
        run.verdict = Verdict.VIOLATION
        lost = ", ".join(f"{name} serves {count}" for name, count in sorted(short.items()))
        run.evidence = (
            f"committed transactions lost: {seen.written} were committed, {lost}; {disk}; "
            f"{seen.new_leader} led afterwards"
        )
    else:
        run.verdict = Verdict.CLEAN
        run.evidence = f"every server serves all {seen.written} transactions; {disk}"


KNOWN_BUGS = {
    "ZOOKEEPER-4394": zookeeper_4394,
    "ZOOKEEPER-4785": zookeeper_4785,
    "ZOOKEEPER-4925": zookeeper_4925,
}

__all__ = [
    "KNOWN_BUGS",
    "NPE",
    "BugRun",
    "LostSync",
    "StaleSync",
    "zookeeper_4394",
    "zookeeper_4785",
    "zookeeper_4925",
]
