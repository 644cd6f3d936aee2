"""Known ZooKeeper bugs driven from outside through the quorum proxy (issue 31, Deliver 5).

Each scenario is a schedule of holds and releases on real servers' quorum traffic
(:mod:`adapters.zkquorum.proxy`), unmodified ZooKeeper of the release asked, and a check of what
the servers did. One so far:

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
"""

from __future__ import annotations

import contextlib
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from kazoo.client import KazooClient

from adapters.cluster.zookeeper import ZooKeeperEnsemble, ZooKeeperTuning
from adapters.installations.system import zookeeper_version
from adapters.installations.zookeeper import ZooKeeperInstall
from adapters.zkproxy.errors import NotHeld, ZkProxyTimeout
from adapters.zkquorum.packets import PacketType, QuorumPacket
from adapters.zkquorum.proxy import (
    Action,
    Direction,
    QuorumLink,
    QuorumMatch,
    QuorumProxy,
    QuorumRecord,
)
from conformance.verdict import Verdict

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
    #: The joiner's packets from NEWLEADER to UPTODATE on its first connection, in order.
    window: list[str] = field(default_factory=list)
    #: The evidence: the server's exception, or why the run decided nothing.
    evidence: str = ""
    connections: int = 0
    #: The server that joined, and every packet of its link to the leader from its restart.
    joiner: str = ""
    records: list[QuorumRecord] = field(default_factory=list, repr=False)

    def describe(self) -> str:
        window = ", ".join(self.window) or "not reached"
        return (
            f"{self.bug} on ZooKeeper {self.zookeeper}: {self.verdict}; window: {window}; "
            f"joiner connections: {self.connections}; {self.evidence}"
        )


def _client(server_host: str, port: int) -> KazooClient:
    client = KazooClient(hosts=f"{server_host}:{port}", timeout=15)
    client.start(timeout=15)
    return client


def zookeeper_4394(install: ZooKeeperInstall, work_dir: Path | None = None) -> BugRun:
    """One attempt of ZOOKEEPER-4394's schedule on a fresh three-server ensemble of
    ``install`` (see the module docstring)."""
    version = zookeeper_version(install.classpath) or "of unknown version"
    run = BugRun("ZOOKEEPER-4394", version)
    with tempfile.TemporaryDirectory(prefix="bkconform-4394-") as scratch:
        base = work_dir or Path(scratch)
        with QuorumProxy() as proxy:
            ensemble = ZooKeeperEnsemble(
                install, base, size=3, tuning=ZooKeeperTuning(sync_limit=40), quorum_proxy=proxy
            )
            ensemble.start()
            try:
                _drive_4394(ensemble, proxy, run)
            finally:
                ensemble.stop()
            log = (base / "logs" / f"{run.joiner}.log").read_text(errors="replace")
        _judge_4394(run, log)
    return run


def _drive_4394(ensemble: ZooKeeperEnsemble, proxy: QuorumProxy, run: BugRun) -> None:
    leader = ensemble.leader()
    if leader is None:
        raise RuntimeError("the ensemble has no leader")
    leader_id = int(leader.removeprefix("zk"))
    joiner, other = sorted(name for name in ensemble.servers if name != leader)
    run.joiner = joiner
    joiner_link = QuorumLink(int(joiner.removeprefix("zk")), leader_id)
    other_link = QuorumLink(int(other.removeprefix("zk")), leader_id)
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
        run.records = [r for r in proxy.records(mark) if r.link == joiner_link]


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


KNOWN_BUGS = {"ZOOKEEPER-4394": zookeeper_4394}

__all__ = ["KNOWN_BUGS", "NPE", "BugRun", "zookeeper_4394"]
