"""Rolling upgrades and downgrades of the bookies under the real Java client, judged by the model.

BookKeeper 4.18.0 reimplemented the wire and metadata encodings (LightProto: its flagged
requests put field 100 first; docs/findings/lightproto-4.18.0-encodings.md), and a cluster in
the middle of an upgrade is where such a change shows: bookies of two releases answer one
client, a client of one release reads what bookies of the other stored. A rolling scenario
(``bkconform scenario rolling-upgrade-java-client --target local``) runs a broker's fail-over
(the fail-over role, ``--role both``: the Java client writes a ledger, a second client of the
same JVM recovers it) on bookies of one release, and restarts each bookie in turn, with its
data, into the other release (:attr:`FaultKind.UPGRADE`, :attr:`FaultKind.DOWNGRADE`: an
operator's step, the bookie stopped by SIGTERM and started again from the other distribution
with the same directories, port and id). Two of the steps come while the writer's adds are in
flight (at an add's frame: the client loses its connection to the bookie and changes its
ensemble), one while the writer is idle before the recovery, one after it.

The model judges every answer as it judges any fail-over run: to the judge an upgrade is a
restart with data (the release is a property of the bookie, not of the model). Then, the
cluster still up, every acknowledged entry is read back by a Java client of each release, in a
JVM of its own: an entry one of them cannot read (or reads wrong) is a broken
``AllAckedEntriesAreReadable`` on the real cluster. The scenario's exit code is the verdict's (0
clean, 1 a finding, 2 undecided); a run in which some bookie did not end on the target release
(a fault whose frame never came) is undecided: the rolling upgrade did not happen.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from adapters.javaclient import (
    BookKeeperJavaClient,
    ClientOptions,
    JavaClientError,
    JvmOptions,
    distribution_version,
)
from conformance.javaclient import UPGRADE_SCENARIOS
from conformance.javaclient.failover_role import FailoverRole
from conformance.javaclient.plans import FaultKind, FrameSchedule, PlannedFault
from conformance.javaclient.role import Example
from conformance.javaclient.session import ClientSession, RunUndecided
from conformance.javaclient.writer_plans import WriterRunPlan, WriterShape, add_key
from conformance.javaclient.writer_role import read_acknowledged
from conformance.javaclient.writer_story import WriterRecord

#: E=3 WQ=2 AQ=2 on four bookies (one spare): each ensemble change during the upgrade has a
#: bookie to go to, and every bookie holds entries (striping).
SHAPE = WriterShape(3, 2, 2)
ENTRIES = 8
#: The second half of the adds goes this long after the first: the first upgrade is done by
#: then, and the second comes among those adds.
SECOND_HALF_DELAY_MS = 3000
#: The recovery starts this long after the writer's last add (the second upgrade and the
#: writer's ensemble change first).
RECOVER_DELAY_MS = 3000
#: How long a reader of either release may take to open the ledger and read one entry.
READ_TIMEOUT_S = 60.0


@dataclass(frozen=True)
class RollingScenario:
    """A rolling upgrade (or downgrade) scenario: bookies of ``start`` restarted one by one
    into ``target`` while the Java client writes."""

    name: str
    kind: FaultKind
    #: The release the bookies (and by default the client) start on, and the one each bookie
    #: is restarted into.
    start: str
    target: str
    title: str

    def plan(self, target: str | None = None) -> WriterRunPlan:
        return rolling_plan(self.kind, target or self.target, origin=self.name)

    def role(self) -> FailoverRole:
        return FailoverRole(SHAPE)


ROLLING_UPGRADE = RollingScenario(
    "rolling-upgrade-java-client",
    FaultKind.UPGRADE,
    "4.17.3",
    "4.18.0",
    "A rolling upgrade 4.17.3 -> 4.18.0 of the bookies while the Java client writes and a "
    "second client recovers the ledger",
)
ROLLING_DOWNGRADE = RollingScenario(
    "rolling-downgrade-java-client",
    FaultKind.DOWNGRADE,
    "4.18.0",
    "4.17.3",
    "A rolling downgrade 4.18.0 -> 4.17.3 of the bookies while the Java client writes and a "
    "second client recovers the ledger",
)
#: The scenarios, by name (conformance.javaclient.UPGRADE_SCENARIOS names them for the CLI).
ROLLING: dict[str, RollingScenario] = {s.name: s for s in (ROLLING_UPGRADE, ROLLING_DOWNGRADE)}
if tuple(ROLLING) != UPGRADE_SCENARIOS:
    raise ValueError(f"conformance.javaclient.UPGRADE_SCENARIOS must be {tuple(ROLLING)}")


def rolling_plan(
    kind: FaultKind, release: str, *, shape: WriterShape = SHAPE, origin: str = "rolling"
) -> WriterRunPlan:
    """The fail-over of the scenarios with each bookie restarted into ``release`` in turn
    (``kind``: an upgrade or a downgrade), bookies named by the ledger's first ensemble (b1..b3,
    the spare b4): the writer adds e0..e3 pipelined; b1 is restarted as e0 reaches its proxy
    (e0, e2 and e3 are then pending at b1: the client changes its ensemble, b1 -> b4); 3 s
    later it adds e4..e7, and b2 is restarted as e4 reaches it (b2 -> b1, back on the new
    release); 3 s after the last add b3 is restarted, the writer idle, then the second client
    recovers the ledger, then b4 is restarted; the writer closes."""
    if not kind.needs_release:
        raise ValueError(f"a rolling scenario upgrades or downgrades, not {kind.value}")
    first, second, before, after = shape.names[:4]
    at_frames = (
        PlannedFault(kind, add_key(first, 0), first, release=release),
        PlannedFault(kind, add_key(second, ENTRIES // 2), second, release=release),
    )
    return WriterRunPlan(
        shape,
        ENTRIES,
        FrameSchedule(events=at_frames),
        origin=origin,
        delayed=ENTRIES // 2,
        delay_ms=SECOND_HALF_DELAY_MS,
        recover_after=ENTRIES,
        recover_delay_ms=RECOVER_DELAY_MS,
        before_recovery=(PlannedFault(kind, None, before, release=release),),
        after_recovery=(PlannedFault(kind, None, after, release=release),),
    )


@dataclass(frozen=True)
class ReadBack:
    """Every acknowledged entry as one release's Java client read it back (``OK``, ``wrong
    data`` or its error), or why it could not read at all."""

    release: str
    reads: Mapping[int, str]
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None and all(read == "OK" for read in self.reads.values())

    def as_dict(self) -> dict[str, Any]:
        return {
            "release": self.release,
            "reads": {f"e{entry}": read for entry, read in sorted(self.reads.items())},
            "read_ok": sorted(e for e, r in self.reads.items() if r == "OK"),
            **({"error": self.error} if self.error else {}),
        }

    def violations(self) -> list[str]:
        """Each acknowledged entry this client could not read: AllAckedEntriesAreReadable on
        the real cluster, for a reader of this release."""
        if self.error is not None:
            return [
                f"AllAckedEntriesAreReadable (on the real cluster): the BookKeeper "
                f"{self.release} Java client could not read the ledger back: {self.error}"
            ]
        return [
            f"AllAckedEntriesAreReadable (on the real cluster): the BookKeeper {self.release} "
            f"Java client reading e{entry} back, acknowledged to the writer: {read}"
            for entry, read in sorted(self.reads.items())
            if read != "OK"
        ]


def read_back(
    session: ClientSession,
    record: WriterRecord,
    homes: Sequence[Path],
    log_dir: Path,
    entry_bytes: int | None = None,
) -> list[ReadBack]:
    """Every entry the writer acknowledged, read back by a Java client of each of ``homes``
    (one JVM each, one after the other, the JVM's log ``reader-<release>.log`` in
    ``log_dir``), connected to the cluster's own ZooKeeper (the bookies through their
    proxies, routed as the session's client is)."""
    uri = session.endpoints.metadata_service_uri
    out = []
    for home in homes:
        release = str(distribution_version(home))
        jvm = JvmOptions(log_path=log_dir / f"reader-{release}.log", call_timeout=READ_TIMEOUT_S)
        try:
            with BookKeeperJavaClient.launch(
                ClientOptions(uri), bookkeeper_home=home, jvm_options=jvm
            ) as client:
                reads = read_acknowledged(client, record.ledger_id, record.outcomes, entry_bytes)
        except JavaClientError as exc:
            out.append(ReadBack(release, {}, f"{type(exc).__name__}: {exc}"))
            continue
        out.append(ReadBack(release, reads))
    return out


@dataclass(frozen=True)
class RollingReport:
    """What a rolling run did, for the run directory and the console."""

    scenario: str
    #: ``upgrade`` or ``downgrade``.
    kind: str
    start: str
    target: str
    client: str
    bookies_at_start: Mapping[str, str]
    bookies_at_end: Mapping[str, str]
    #: (when, what) of each restart into the other release, as the run carried it out.
    steps: tuple[tuple[float, str], ...]
    untriggered: tuple[str, ...]
    entries_written: int
    acknowledged: tuple[int, ...]
    recovery: str | None
    closed_last_entry: int | None
    read_backs: tuple[ReadBack, ...]

    @property
    def completed(self) -> bool:
        """Every bookie ended on the target release."""
        return bool(self.bookies_at_end) and all(
            release == self.target for release in self.bookies_at_end.values()
        )

    def incomplete_reason(self) -> str | None:
        if self.completed:
            return None
        left = sorted(b for b, r in self.bookies_at_end.items() if r != self.target)
        never = f" (never triggered: {', '.join(self.untriggered)})" if self.untriggered else ""
        return (
            f"the rolling {self.kind} did not reach every bookie: {', '.join(left)} still on "
            f"another release than {self.target}{never}"
        )

    def as_dict(self) -> dict[str, Any]:
        return {
            "scenario": self.scenario,
            "kind": self.kind,
            "from": self.start,
            "to": self.target,
            "client": self.client,
            "bookies_at_start": dict(self.bookies_at_start),
            "bookies_at_end": dict(self.bookies_at_end),
            "steps": [[round(at, 3), what] for at, what in self.steps],
            "untriggered": list(self.untriggered),
            "completed": self.completed,
            "entries_written": self.entries_written,
            "entries_acknowledged": len(self.acknowledged),
            "acknowledged": [f"e{e}" for e in self.acknowledged],
            "recovery": self.recovery,
            "closed_last_entry": self.closed_last_entry,
            "read_back": {rb.release: rb.as_dict() for rb in self.read_backs},
        }

    def lines(self) -> list[str]:
        out = [
            f"{self.scenario}: bookies {self.start} -> {self.target}, the Java client "
            f"{self.client}",
            f"bookies at the start: {_releases(self.bookies_at_start)}",
        ]
        out += [f"  {at:.3f} {what}" for at, what in self.steps]
        out += [f"  never triggered: {what}" for what in self.untriggered]
        out.append(f"bookies at the end: {_releases(self.bookies_at_end)}")
        acked = ", ".join(f"e{e}" for e in self.acknowledged) or "none"
        out.append(
            f"entries written: {self.entries_written}; acknowledged: {len(self.acknowledged)} "
            f"({acked})"
        )
        if self.recovery:
            out.append(f"recovery: {self.recovery}")
        out.append(f"ledger closed at: e{self.closed_last_entry}")
        for rb in self.read_backs:
            if rb.error:
                out.append(f"read back by the {rb.release} client: failed: {rb.error}")
                continue
            good = sum(1 for r in rb.reads.values() if r == "OK")
            detail = ", ".join(f"e{e} {r}" for e, r in sorted(rb.reads.items()))
            out.append(
                f"read back by the {rb.release} client: {good} of {len(self.acknowledged)} OK "
                f"({detail or 'nothing to read'})"
            )
        return out


def _releases(releases: Mapping[str, str]) -> str:
    return ", ".join(f"{name} {release}" for name, release in releases.items()) or "-"


def report_of(
    scenario: RollingScenario,
    target: str,
    session: ClientSession,
    example: Example[WriterRunPlan, WriterRecord],
    read_backs: Sequence[ReadBack],
) -> RollingReport:
    """The run's report, the bookies named as the model names them (b1..b4)."""
    record = example.record
    names = {proxy: f"b{index + 1}" for proxy, index in record.bookie_of_proxy.items()}
    releases = session.releases()

    def by_name(by_proxy: Mapping[str, str]) -> dict[str, str]:
        return dict(sorted((names.get(p, p), r) for p, r in by_proxy.items()))

    kind = scenario.kind.value
    return RollingReport(
        scenario=scenario.name,
        kind=kind,
        start=str(session.bookie_version),
        target=target,
        client=str(session.version),
        bookies_at_start=by_name(releases["bookies_at_start"]),
        bookies_at_end=by_name(releases["bookies_now"]),
        steps=tuple((at, what) for at, what in example.faults if what.startswith(kind)),
        untriggered=tuple(example.untriggered),
        entries_written=record.entries,
        acknowledged=tuple(
            o.entry_id for o in record.outcomes if o.acknowledged and o.entry_id is not None
        ),
        recovery=None if record.takeover is None else record.takeover.describe(),
        closed_last_entry=record.closed_last_entry,
        read_backs=tuple(read_backs),
    )


def check_releases(scenario: RollingScenario, start: str, target: str) -> None:
    """An upgrade goes to a newer release, a downgrade to an older one (:class:`RunUndecided`
    otherwise)."""
    from adapters.javaclient import BookKeeperVersion

    older, newer = BookKeeperVersion.parse(start), BookKeeperVersion.parse(target)
    if scenario.kind is FaultKind.UPGRADE and not newer > older:
        raise RunUndecided(f"{scenario.name}: {target} is not newer than {start}")
    if scenario.kind is FaultKind.DOWNGRADE and not newer < older:
        raise RunUndecided(f"{scenario.name}: {target} is not older than {start}")


__all__ = [
    "ENTRIES",
    "ROLLING",
    "ROLLING_DOWNGRADE",
    "ROLLING_UPGRADE",
    "SHAPE",
    "ReadBack",
    "RollingReport",
    "RollingScenario",
    "check_releases",
    "read_back",
    "report_of",
    "rolling_plan",
]
