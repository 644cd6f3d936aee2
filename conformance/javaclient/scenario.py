"""``defect1-java-client``: Defect 1's recipe with the REAL Java client as the recovering w2.

On a local cluster started from a BookKeeper distribution (bookies of that version), with one
frame proxy per bookie:

1. w1, our Python wire client, writes the ledger metadata (ensemble b1, b2, b3; E=WQ=3, AQ=2)
   and adds e0 to b2 only, directly (the proxies never see w1);
2. the proxies get the schedule (default :func:`~.schedule.defect1_schedule`: w2's fence read
   to b3 is dropped, b2's answer to the recovery read of e0 is held past the speculative read
   timeout);
3. w2, the distribution's own Java client, recovers the ledger (``openLedger``) through the
   proxies, routed as its version needs (:mod:`adapters.netproxy.routing`): a 4.12+ client
   resolves the bookie ids through their rewritten registrations; an older one connects to
   the ensemble's ids themselves, so the metadata names the proxies' addresses;
4. w1 adds e0 directly to b3.

What was observed (frame log, w1's answers, the closed metadata) is a
:class:`~.story.RecoveryRecord`; :func:`~.story.judge` tells the story. The run is the
recovering role's (:class:`~.recovery_role.RecoveryRole`) on its session, with the proxies
arranged by the recipe's rules instead of a search's controller. Every process, proxy, routing
change and JVM is stopped on every exit path.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from adapters.cluster.bookies import BookieSettings
from adapters.installations.zookeeper import ZooKeeperInstall
from adapters.javaclient import BookKeeperVersion
from adapters.netproxy.routing import RoutingMethod
from conformance.javaclient import SCENARIO_NAME
from conformance.javaclient.plans import BOOKIES, DEFECT_1_WRITER, FrameSchedule, RecoveryPlan
from conformance.javaclient.recovery_role import RecoveryRole
from conformance.javaclient.schedule import ScheduledRule, defect1_schedule, install
from conformance.javaclient.session import (
    INFRASTRUCTURE_ERRORS,
    ClientSession,
    RunUndecided,
    SessionOptions,
)
from conformance.javaclient.story import RecoveryRecord
from conformance.verdict import Verdict

NAME = SCENARIO_NAME
#: The first release whose recovery reads carry the fence flag (the fix of #2614).
FIRST_FENCING_RELEASE = BookKeeperVersion(4, 14, 0)

ScheduleFactory = Callable[[int, int], Sequence[ScheduledRule]]


@dataclass(frozen=True)
class JavaScenarioOptions:
    bookkeeper_home: Path
    #: Where the JVM's log goes (the run directory).
    log_dir: Path
    speculative_read_timeout_ms: int = 300
    read_entry_timeout_s: int = 5
    java_call_timeout: float = 60.0
    request_timeout: float = 10.0
    #: ``(ledger id, speculative read timeout ms)`` -> the proxies' rules.
    schedule: ScheduleFactory = defect1_schedule
    work_dir: Path | None = None
    #: The cluster's ZooKeeper (None: ZOOKEEPER_HOME, else the default release).
    zookeeper: ZooKeeperInstall | None = None
    #: The Java client's own distribution (None: the bookies').
    client_home: Path | None = None
    #: The bookies' ledger storage and settings profile (the default: the suite's).
    bookie_settings: BookieSettings = field(default_factory=BookieSettings)


@dataclass
class JavaScenarioRun:
    record: RecoveryRecord
    version: BookKeeperVersion
    routing: RoutingMethod
    schedule: tuple[ScheduledRule, ...]
    bookie_ids: list[str]
    #: Proxy name -> ``bookie id via proxy address``.
    proxies: dict[str, str] = field(default_factory=dict)
    #: The bookies' release (None: the client's, ``version``).
    bookie_version: BookKeeperVersion | None = None

    def describe(self) -> dict[str, str]:
        return {
            "target": "local",
            "bookkeeper": str(self.bookie_version or self.version),
            "client_bookkeeper": str(self.version),
            "routing": self.routing.value,
            "bookie_ids": ",".join(self.bookie_ids),
            "ledger_id": str(self.record.ledger_id),
            "recovering_client": f"BookKeeper Java client {self.version} (py4j)",
        }


def expected_verdict(version: BookKeeperVersion) -> Verdict:
    """What issue 8 measured: clients before 4.14.0 lose e0, later ones are safe."""
    return Verdict.CLEAN if version >= FIRST_FENCING_RELEASE else Verdict.VIOLATION


#: Issue 8's w1 (e0 at b2 before the recovery, at b3 after it); the schedule is the recipe's
#: rules, installed by the scenario itself.
RECIPE = RecoveryPlan(DEFECT_1_WRITER, FrameSchedule(), origin="issue 8's recipe")


def run_recovery(options: JavaScenarioOptions) -> JavaScenarioRun:
    """Carry out the scenario once; :class:`RunUndecided` when the run itself fails."""
    role = RecoveryRole(
        speculative_read_timeout_ms=options.speculative_read_timeout_ms,
        read_entry_timeout_s=options.read_entry_timeout_s,
    )
    session_options = SessionOptions(
        options.bookkeeper_home,
        options.log_dir,
        role.layout(),
        java_call_timeout=options.java_call_timeout,
        request_timeout=options.request_timeout,
        work_dir=options.work_dir,
        zookeeper=options.zookeeper,
        client_home=options.client_home,
        bookie_settings=options.bookie_settings,
    )
    schedules: list[tuple[ScheduledRule, ...]] = []
    try:
        with ClientSession(session_options) as session:
            by_bookie = dict(zip(BOOKIES, session.proxies.values(), strict=True))

            @contextlib.contextmanager
            def arranged(ledger_id: int, _names: Mapping[str, str]) -> Iterator[object]:
                schedule = tuple(options.schedule(ledger_id, options.speculative_read_timeout_ms))
                schedules.append(schedule)
                rule_ids = install(by_bookie, schedule)
                try:
                    yield rule_ids
                finally:
                    for rule, rule_id in zip(schedule, rule_ids, strict=True):
                        by_bookie[rule.bookie].remove_rule(rule_id)

            record = role.perform(session, RECIPE, arranged)
            return JavaScenarioRun(
                record,
                session.version,
                session.routing_method,
                schedules[0],
                list(session.bookie_ids),
                session.routes(),
                session.bookie_version,
            )
    except INFRASTRUCTURE_ERRORS as exc:
        if isinstance(exc, RunUndecided):
            raise
        raise RunUndecided(f"{type(exc).__name__}: {exc}") from exc


__all__ = [
    "FIRST_FENCING_RELEASE",
    "NAME",
    "RECIPE",
    "JavaScenarioOptions",
    "JavaScenarioRun",
    "expected_verdict",
    "run_recovery",
]
