"""Capture one release: its session's frames, its answers to the probes, its znodes.

For one BookKeeper release, on a local cluster of that release (3 bookies, a frame proxy in
front of each, the release's own Java client routed through them: the Java-client session of
:mod:`conformance.javaclient.session`):

1. the golden "session" scenario: client A creates a ledger (E3 WQ3 AQ2, CRC32, password
   ``golden``) with id 150 (the ZooKeeper id counter is advanced first, as the golden capture
   did, so that ledger ids take the same two varint bytes), adds ``entry-0``..``entry-4``, reads
   them back once all three bookies have answered every add (not only the ack quorum: what a
   read is answered must not depend on a slow bookie); client B (a second ``BookKeeper`` in
   the same JVM, as in the golden) opens it with recovery; A's add of ``entry-5`` is refused
   (fenced). Every frame is kept whole;
2. the probes of :mod:`.probes`, each on its own connection, straight to the first bookie;
3. the znodes the release wrote, from ZooKeeper's own transaction log (so the ledger's
   IN_RECOVERY version, overwritten within milliseconds, is there too): the ledger at every
   version, each bookie's registration as the bookie created it (the routing rewrites it
   afterwards), each bookie's cookie;
4. every release's shell named in ``readers`` reads this release's ledger
   (``bookkeeper shell ledgermetadata``): the CLOSED ledger the clients wrote, and copies of its
   OPEN and IN_RECOVERY versions written byte for byte under the next two ledger ids.

Everything started here stops on every way out (the session's exit stack, a ``finally`` for the
scratch directory); every wait is bounded.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from adapters.bookkeeper import framing
from adapters.bookkeeper.exchange import exchange_once
from adapters.cluster.bookkeeper_shell import parse_ledger_metadata_output, run_shell
from adapters.cluster.scratch import make_scratch_dir
from adapters.installations.zookeeper import ZooKeeperInstall
from adapters.javaclient import BKLedgerFenced, JavaDigestType, distribution_version
from adapters.netproxy import Direction, FrameRecord, ProxyGroup
from adapters.zookeeper.txnlog import read_server
from conformance.encodings.captures import (
    REQUEST,
    RESPONSE,
    CapturedFrame,
    CapturedZnode,
    ReleaseCapture,
    summarize,
)
from conformance.encodings.probes import PASSWORD, PROBES
from conformance.javaclient.session import (
    ClientSession,
    RunUndecided,
    SessionLayout,
    SessionOptions,
)

#: The golden capture's ledger id: two varint bytes (``96 01``).
GOLDEN_LEDGER_ID = 150
#: How long a Java call may take (a recovery open reads from three bookies and writes
#: ZooKeeper twice; a busy 2-core machine is slow).
JAVA_CALL_TIMEOUT_S = 60.0
#: How long the answers to a step's requests may take to arrive after the call returned.
ANSWERS_TIMEOUT_S = 10.0
#: How long one probe waits for its answer (a bookie answers in milliseconds, or resets).
PROBE_TIMEOUT_S = 5.0
#: How long one shell run may take (a JVM start and a few ZooKeeper reads).
SHELL_TIMEOUT_S = 120.0
#: The recovering client's read timeout: the golden session's recovery reads all answer.
RECOVERY_READ_TIMEOUT_S = 10


@dataclass(frozen=True)
class CaptureOptions:
    bookkeeper_home: Path
    #: Where the JVM's and the shells' logs go.
    log_dir: Path
    #: The releases whose shell reads this release's ledger: version -> home.
    readers: Mapping[str, Path] = field(default_factory=dict)
    zookeeper: ZooKeeperInstall | None = None
    ledger_id: int = GOLDEN_LEDGER_ID


@dataclass(frozen=True)
class MetadataRead:
    """One release's shell reading a ledger another (or the same) release wrote."""

    reader: str
    writer: str
    ledger_id: int
    #: Which version of the writer's ledger: "OPEN (v0)", "IN_RECOVERY (v1)", "CLOSED (v2)".
    written_as: str
    ok: bool
    shown: dict[str, str]
    ensembles: str
    output_tail: str

    def to_row(self) -> dict[str, Any]:
        return {
            "reader": self.reader,
            "writer": self.writer,
            "ledger_id": self.ledger_id,
            "written_as": self.written_as,
            "ok": self.ok,
            "shown": self.shown,
            "ensembles": self.ensembles,
            "output_tail": self.output_tail,
        }


def capture_release(options: CaptureOptions, say: Callable[[str], None] = print) -> ReleaseCapture:
    """Run the session, the probes and the metadata reads on a fresh cluster of the release.

    :raises RunUndecided: (and the session's infrastructure errors) when the cluster, the
        JVM, the proxies or a shell fails; nothing is left running.
    """
    version = str(distribution_version(options.bookkeeper_home))
    scratch = make_scratch_dir("bkconform-encodings-")
    try:
        layout = SessionLayout(
            bookies=3,
            proxies_zookeeper=False,
            recovering_client_read_timeout_s=RECOVERY_READ_TIMEOUT_S,
        )
        session_options = SessionOptions(
            bookkeeper_home=options.bookkeeper_home,
            log_dir=options.log_dir,
            layout=layout,
            java_call_timeout=JAVA_CALL_TIMEOUT_S,
            work_dir=scratch / "cluster",
            zookeeper=options.zookeeper,
        )
        say(f"[{version}] starting ZooKeeper, 3 bookies, their proxies and the Java client")
        with ClientSession(session_options) as session:
            capture = _run(session, version, options, scratch, say)
        return capture
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _run(
    session: ClientSession,
    version: str,
    options: CaptureOptions,
    scratch: Path,
    say: Callable[[str], None],
) -> ReleaseCapture:
    group = session.group
    group.keep_payloads()
    store = session.ledger_store()
    # The golden capture advanced ZooKeeper's id counter to 150 before its session.
    while (next_id := store.allocate_ledger_id()) < options.ledger_id - 1:
        pass
    if next_id != options.ledger_id - 1:
        raise RunUndecided(f"the id counter is past {options.ledger_id - 1} already ({next_id})")

    marks: list[tuple[str, int]] = []
    say(f"[{version}] session: create, add entry-0..entry-4, read them back")
    marks.append(("write", group.mark()))
    writer = session.client.create_ledger(
        3, 3, 2, JavaDigestType.CRC32, PASSWORD, timeout=JAVA_CALL_TIMEOUT_S
    )
    ledger_id = writer.ledger_id
    for entry in range(5):
        writer.add_entry(f"entry-{entry}".encode(), timeout=JAVA_CALL_TIMEOUT_S)
    # An add returns once AQ=2 of the WQ=3 bookies answered it. Read back only once the third
    # has answered every add too: a bookie still behind would answer a read with the LAC of
    # what it stored so far (maxLAC) or ENOENTRY (the client then reads elsewhere), frames set
    # by timing and not by the data written (compare.py's timing rules say the same).
    _await_answers(group, marks[-1][1], what="the adds' answers before the read-back")
    read = writer.read_entries(0, 4, timeout=JAVA_CALL_TIMEOUT_S)
    if [e.data for e in read] != [f"entry-{i}".encode() for i in range(5)]:
        raise RunUndecided(f"readEntries(0, 4) returned {read}")
    _await_answers(group, marks[-1][1])

    say(f"[{version}] session: a second client opens ledger {ledger_id} with recovery")
    marks.append(("recovery-open", group.mark()))
    session.recovering_client.open_ledger(
        ledger_id, JavaDigestType.CRC32, PASSWORD, recovery=True, timeout=JAVA_CALL_TIMEOUT_S
    )
    _await_answers(group, marks[-1][1])

    say(f"[{version}] session: the first client adds entry-5 to the fenced ledger")
    marks.append(("add-after-fence", group.mark()))
    try:
        writer.add_entry(b"entry-5", timeout=JAVA_CALL_TIMEOUT_S)
    except BKLedgerFenced:
        pass  # the golden session's end: all three bookies answer EFENCED
    else:
        raise RunUndecided("the add after the recovery open was not refused as fenced")
    _await_answers(group, marks[-1][1])
    proxy_bookies = dict(zip(session.proxies, session.bookie_ids, strict=True))
    session_frames = _session_frames(group, version, marks, proxy_bookies)

    say(f"[{version}] probes: {len(PROBES)} raw requests to {session.bookie_ids[0]}")
    probes = _probe(session, version, ledger_id)

    endpoints = session.endpoints
    # The standalone server's data directory, as the ensemble lays it out
    # (adapters/cluster/zookeeper.py: <work dir>/zookeeper/zk1/data).
    data_dir = scratch / "cluster" / "zookeeper" / "zk1" / "data"
    znodes = _znodes(data_dir, endpoints.ledgers_root, store.path(ledger_id), session.bookie_ids)

    reads = _shell_reads(
        session, version, ledger_id, znodes, options, endpoints.metadata_service_uri, say
    )
    return ReleaseCapture(
        version=version,
        session=session_frames,
        probes=probes,
        znodes=znodes,
        ledger_id=ledger_id,
        bookie_ids=tuple(session.bookie_ids),
        source=f"bkconform encodings: a local cluster of BookKeeper {version}",
        extra={"metadata_reads": [read.to_row() for read in reads]},
    )


def _await_answers(
    group: ProxyGroup,
    since: int,
    timeout: float = ANSWERS_TIMEOUT_S,
    what: str = "the step's answers",
) -> None:
    """Wait (bounded) until every v3 request logged after ``since`` has its answer on its
    connection, or that connection is closed: a client call returns once a quorum answered,
    and the last bookie's answer may come later.

    :raises RunUndecided: after ``timeout``, naming ``what`` was awaited."""
    deadline = time.monotonic() + timeout
    while True:
        frames = group.frames(since=since)
        closed = {c.connection_id for c in group.connections() if c.closed_at is not None}
        asked = {
            (f.connection_id, f.info.txn_id)
            for f in frames
            if f.info.direction is Direction.REQUEST and f.info.txn_id is not None
        }
        answered = {
            (f.connection_id, f.info.txn_id)
            for f in frames
            if f.info.direction is Direction.RESPONSE
        }
        waiting = {key for key in asked - answered if key[0] not in closed}
        if not waiting:
            return
        if time.monotonic() > deadline:
            raise RunUndecided(
                f"waiting for {what}: {len(waiting)} request(s) unanswered {timeout:.0f} s "
                "after the call returned"
            )
        time.sleep(0.05)


def _session_frames(
    group: ProxyGroup,
    version: str,
    marks: Sequence[tuple[str, int]],
    proxy_bookies: Mapping[str, str],
) -> tuple[CapturedFrame, ...]:
    """The session's frames in log order, each with its step (a response takes its
    request's) and its connection numbered by first appearance, as the golden files do."""
    frames = group.frames(since=marks[0][1])
    payloads = group.payloads(f.frame_id for f in frames)
    connections: dict[int, int] = {}
    request_step: dict[tuple[int, int | None], str] = {}
    captured = []
    for record in frames:
        step = _step_of(record, marks)
        conn = connections.setdefault(record.connection_id, len(connections) + 1)
        key = (record.connection_id, record.info.txn_id)
        is_request = record.info.direction is Direction.REQUEST
        if is_request:
            request_step[key] = step
        else:
            step = request_step.get(key, step)
        payload = payloads.get(record.frame_id)
        if payload is None:
            raise RunUndecided(f"the proxies kept no bytes of frame #{record.frame_id}")
        captured.append(
            CapturedFrame(
                version=version,
                scenario=step,
                conn=conn,
                direction=REQUEST if is_request else RESPONSE,
                bookie=proxy_bookies[record.proxy],
                frame=framing.encode_frame(payload),
                summary=summarize(payload, is_request=is_request),
            )
        )
    return tuple(captured)


def _step_of(record: FrameRecord, marks: Sequence[tuple[str, int]]) -> str:
    step = marks[0][0]
    for name, mark in marks:
        if record.frame_id > mark:
            step = name
    return step


def _probe(session: ClientSession, version: str, ledger_id: int) -> tuple[CapturedFrame, ...]:
    """Each probe on a connection of its own, straight to the first bookie (no proxy: how the
    bookie ends a connection it cannot decode, a reset or a close, is seen as it is)."""
    bookie_id = session.bookie_ids[0]
    host, port = session.bookie_address(bookie_id)
    captured = []
    for conn, probe in enumerate(PROBES, start=1):
        exchange = exchange_once(host, port, probe.build(ledger_id), timeout=PROBE_TIMEOUT_S)
        sent = [(REQUEST, exchange.request)]
        if exchange.answer is not None:
            sent.append((RESPONSE, exchange.answer))
        for direction, payload in sent:
            captured.append(
                CapturedFrame(
                    version=version,
                    scenario=probe.name,
                    conn=conn,
                    direction=direction,
                    bookie=bookie_id,
                    frame=framing.encode_frame(payload),
                    summary=summarize(payload, is_request=direction == REQUEST),
                    ending=exchange.ending.value,
                )
            )
    return tuple(captured)


def _znodes(
    data_dir: Path, ledgers_root: str, ledger_path: str, bookie_ids: Sequence[str]
) -> tuple[CapturedZnode, ...]:
    """The znodes the release wrote, from ZooKeeper's transaction log: the ledger's every
    version, and each bookie's registration and cookie as the bookie created them."""
    wanted = {ledger_path: "ledger"}
    for bookie_id in bookie_ids:
        wanted[f"{ledgers_root}/available/{bookie_id}"] = "registration"
        wanted[f"{ledgers_root}/cookies/{bookie_id}"] = "cookie"
    found: list[CapturedZnode] = []
    seen: set[tuple[str, str]] = set()
    for txn in read_server(data_dir).txns:
        for change in txn.changes:
            kind = wanted.get(change.path)
            if kind is None or change.data is None or change.kind not in ("create", "set"):
                continue
            if kind != "ledger" and (change.path, kind) in seen:
                # A registration is rewritten by the routing (ours, not the release's).
                continue
            seen.add((change.path, kind))
            found.append(
                CapturedZnode(
                    change.path, change.data, change.version, f"{kind}, {change.kind} (txn log)"
                )
            )
    if sum(1 for z in found if z.path == ledger_path) < 3:
        raise RunUndecided(
            f"ZooKeeper's log in {data_dir} holds {sum(1 for z in found if z.path == ledger_path)} "
            f"version(s) of {ledger_path}, not 3 (OPEN, IN_RECOVERY, CLOSED)"
        )
    return tuple(found)


_VERSION_NAMES = {0: "OPEN (v0)", 1: "IN_RECOVERY (v1)", 2: "CLOSED (v2)"}


def _shell_reads(
    session: ClientSession,
    version: str,
    ledger_id: int,
    znodes: Sequence[CapturedZnode],
    options: CaptureOptions,
    metadata_service_uri: str,
    say: Callable[[str], None],
) -> list[MetadataRead]:
    """Each reader's shell on the ledger the clients closed, and on copies of its OPEN and
    IN_RECOVERY versions (written byte for byte under the next ledger ids, which nothing
    allocates: the id counter stands at the session's ledger)."""
    store = session.ledger_store()
    ledger_path = store.path(ledger_id)
    versions = {z.stat_version: z.data for z in znodes if z.path == ledger_path}
    targets: list[tuple[int, str]] = [(ledger_id, _VERSION_NAMES[2])]
    for offset, stat_version in ((1, 0), (2, 1)):
        copy_id = ledger_id + offset
        store.zk.create(store.path(copy_id), versions[stat_version], makepath=True)
        targets.append((copy_id, _VERSION_NAMES[stat_version]))
    reads = []
    for reader, home in options.readers.items():
        for target_id, written_as in targets:
            say(f"[{version}] BookKeeper {reader}'s shell reads ledger {target_id} ({written_as})")
            run = run_shell(
                home,
                metadata_service_uri,
                ["ledgermetadata", "-ledgerid", str(target_id)],
                work_dir=options.log_dir / f"shell-{reader}",
                timeout=SHELL_TIMEOUT_S,
            )
            shown = parse_ledger_metadata_output(run.output)
            reads.append(
                MetadataRead(
                    reader=reader,
                    writer=version,
                    ledger_id=target_id,
                    written_as=written_as,
                    ok=run.ok and shown is not None and shown.ledger_id == target_id,
                    shown=dict(shown.fields) if shown is not None else {},
                    ensembles=shown.ensembles if shown is not None else "",
                    output_tail=run.output[-1500:],
                )
            )
    return reads


__all__ = [
    "GOLDEN_LEDGER_ID",
    "CaptureOptions",
    "MetadataRead",
    "capture_release",
]
