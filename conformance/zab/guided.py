"""Fault schedules run on real ZooKeeper through the quorum proxy, judged, and searched with
Hypothesis (issue 31, Deliver 4).

:func:`run_schedule` runs one schedule (:mod:`conformance.zab.schedule`) on a fresh ensemble
whose quorum traffic passes the proxy, heals it (rules cleared, held packets released, every
server restarted), waits until the servers agree, and judges what happened:

- every acknowledged write is served by every server (after a ``sync``), and the servers serve
  the same nodes: else a **violation** (a committed transaction lost, or replicas that
  disagree);
- the quorum traffic, validated against the spec's actions (:mod:`.quorum_trace`): a
  **divergence** or a **violation**;
- a server that cannot start again from its own data after a crash is a **violation** of
  durability (:func:`.durability.unrecoverable`, the rule ``zab bug`` follows too);
- an ensemble that did not heal, or a step that could not be carried out, makes a run that
  found nothing **undecided**.

It also reports which shapes of the sync window the traffic reached (:func:`window_shapes`):
the search's coverage of the spec's window between NEWLEADER and UPTODATE.

:func:`search` draws schedules (the spec's window templates and single steps), runs each, and
on a finding shrinks it to a minimal schedule (unless told not to); its budget is seconds and
examples. The search is the kernel's (:mod:`conformance.live.search`), with
:class:`ScheduleSearch` as its role.
"""

from __future__ import annotations

import contextlib
import itertools
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from hypothesis import strategies as st
from kazoo.client import KazooClient
from kazoo.exceptions import KazooException
from kazoo.handlers.threading import KazooTimeoutError

from adapters.cluster.errors import ClusterError
from adapters.cluster.zookeeper import ZooKeeperEnsemble
from adapters.installations.zookeeper import ZooKeeperInstall
from adapters.zkproxy.errors import NotHeld, ZkProxyError, ZkProxyTimeout
from adapters.zkquorum.packets import PacketType, QuorumPacket, zxid_text
from adapters.zkquorum.proxy import Action, Direction, QuorumMatch, QuorumProxy, QuorumRecord
from conformance.live import search as live
from conformance.live.faults import FaultEvent, FaultInjector
from conformance.live.search import SearchProgress, StopAt, Stopped
from conformance.verdict import Verdict, worst
from conformance.zab.durability import unrecoverable
from conformance.zab.faults import zab_handlers
from conformance.zab.model_paths import model_windows
from conformance.zab.proxied import proxied_ensemble
from conformance.zab.quorum_trace import QuorumTraceReport, ServerEvent, server_events, validate
from conformance.zab.runner import wait_for_convergence
from conformance.zab.schedule import ZabStep, schedules, smaller_schedules

ROOT = "/g"
_CLIENT_TIMEOUT_S = 5.0
_HEAL_TIMEOUT_S = 60.0
_SETTLE_S = 30.0
#: How long ``await`` waits for its packet.
_AWAIT_S = 10.0


@dataclass
class ScheduleOutcome:
    """One schedule's run: its verdict, why, what it reached, and the proxy's records."""

    schedule: tuple[ZabStep, ...]
    verdict: Verdict = Verdict.UNDECIDED
    findings: list[str] = field(default_factory=list)
    #: What the harness could not do (a step, the heal): a run that found nothing is undecided.
    shortfalls: list[str] = field(default_factory=list)
    acknowledged: int = 0
    unknown: int = 0
    shapes: set[str] = field(default_factory=set)
    trace: QuorumTraceReport | None = None
    records: list[QuorumRecord] = field(default_factory=list, repr=False)
    #: The servers' crashes and restarts, beside the records.
    events: list[ServerEvent] = field(default_factory=list, repr=False)
    #: The crashes and restarts the schedule's steps injected (the fault injector's record).
    faults: list[FaultEvent] = field(default_factory=list, repr=False)
    seconds: float = 0.0

    def describe(self) -> str:
        why = "; ".join(self.findings[:2] or self.shortfalls[:2]) or "every check passed"
        return (
            f"{self.verdict}: {len(self.schedule)} steps, {self.acknowledged} writes acknowledged"
            f" ({self.unknown} unknown), window shapes {sorted(self.shapes) or 'none'}; {why}"
        )


def window_shapes(records: list[QuorumRecord]) -> set[str]:
    """Each learner connection that reached NEWLEADER, as ``<sync>:<packets in the window>:
    <end>``: the sync (DIFF, TRUNC, SNAP), the PROPOSALs and COMMITs the leader sent between
    NEWLEADER and UPTODATE, and whether UPTODATE came (``uptodate``) or the connection ended
    first (``cut``)."""
    by_connection: dict[tuple[object, int], list[QuorumPacket]] = {}
    for record in records:
        if isinstance(record.frame, QuorumPacket) and record.direction is Direction.TO_LEARNER:
            by_connection.setdefault((record.link, record.connection), []).append(record.frame)
    shapes = set()
    for packets in by_connection.values():
        kinds = [p.type for p in packets]
        if PacketType.NEWLEADER not in kinds:
            continue
        sync = next(
            (
                PacketType(k).name
                for k in kinds
                if k in (PacketType.DIFF, PacketType.TRUNC, PacketType.SNAP)
            ),
            "none",
        )
        start = kinds.index(PacketType.NEWLEADER)
        end = kinds.index(PacketType.UPTODATE) if PacketType.UPTODATE in kinds else len(kinds)
        inside = [
            PacketType(k).name
            for k in kinds[start + 1 : end]
            if k in (PacketType.PROPOSAL, PacketType.COMMIT)
        ]
        # Runs of one kind collapse: the shape is the order, not the count.
        collapsed = [name for name, _run in itertools.groupby(inside)]
        ending = "uptodate" if PacketType.UPTODATE in kinds else "cut"
        shapes.add(f"{sync}:{'+'.join(collapsed) or 'empty'}:{ending}")
    return shapes


def _unanswered(records: list[QuorumRecord], leader: int | None, followers: set[int]) -> list[str]:
    """What each of ``followers`` still owes ``leader`` of its last proposal: the follower's
    ACK, or the leader's COMMIT to it (empty: the traffic is quiet)."""
    proposed = [
        r.frame.zxid
        for r in records
        if isinstance(r.frame, QuorumPacket)
        and r.frame.type == PacketType.PROPOSAL
        and r.link.leader == leader
    ]
    if not proposed:
        return []
    last = max(proposed)
    seen = {
        (r.link.learner, r.frame.type, r.direction)
        for r in records
        if isinstance(r.frame, QuorumPacket) and r.link.leader == leader and r.frame.zxid == last
    }
    pending = []
    for sid in sorted(followers):
        if (sid, PacketType.ACK, Direction.TO_LEADER) not in seen:
            pending.append(f"zk{sid}'s ACK of {zxid_text(last)}")
        if (sid, PacketType.COMMIT, Direction.TO_LEARNER) not in seen:
            pending.append(f"the COMMIT of {zxid_text(last)} to zk{sid}")
    return pending


def _client(ensemble: ZooKeeperEnsemble, name: str) -> KazooClient:
    server = ensemble.server(name)
    client = KazooClient(hosts=f"{server.host}:{server.client_port}", timeout=_CLIENT_TIMEOUT_S)
    client.start(timeout=_CLIENT_TIMEOUT_S)
    return client


def _close(client: KazooClient) -> None:
    with contextlib.suppress(Exception):  # a server gone meanwhile: nothing left to close
        client.stop()
        client.close()


class _Runner:
    """Carries out one schedule's steps on an ensemble and its proxy."""

    def __init__(self, ensemble: ZooKeeperEnsemble, proxy: QuorumProxy, outcome: ScheduleOutcome):
        self.ensemble = ensemble
        self.proxy = proxy
        self.outcome = outcome
        self.acked: list[str] = []
        self.counter = itertools.count()
        self.roles: dict[str, str] = {}
        self.writer: KazooClient | None = None
        #: The proxy's record count at the last write, crash or restart: ``await`` looks
        #: from there.
        self.mark = 0
        #: No step has crashed, restarted or set a rule yet: every follower answers every
        #: proposal, so a write can wait until it is committed everywhere.
        self.untouched = True
        #: The steps' crashes and restarts (the heal after the schedule is :meth:`heal`'s:
        #: every server started at once, then all waited for).
        self.faults: FaultInjector[None] = FaultInjector(zab_handlers(ensemble, _HEAL_TIMEOUT_S))

    def start(self) -> None:
        """Fix the roles (the first leader and its followers) and open the writers' session:
        one session for every write, so that a write's PROPOSAL is the only one it makes (a new
        session is a transaction of its own)."""
        leader = self.ensemble.leader()
        if leader is None:
            raise ClusterError("the ensemble has no leader")
        followers = sorted(name for name in self.ensemble.servers if name != leader)
        self.roles = {"first-leader": leader}
        self.roles.update(zip(("follower-a", "follower-b"), followers, strict=False))
        self.writer = self.session()
        self.writer.ensure_path(ROOT)
        self.quiesce()

    def session(self) -> KazooClient:
        client = KazooClient(hosts=self.ensemble.connect_string, timeout=_CLIENT_TIMEOUT_S)
        client.start(timeout=_CLIENT_TIMEOUT_S)
        return client

    def close(self) -> None:
        if self.writer is not None:
            _close(self.writer)
            self.writer = None

    def server(self, name: str) -> str | None:
        if name == "leader":
            return self.ensemble.leader()
        return self.roles.get(name, name)

    def sid(self, name: str) -> int | None:
        server = self.server(name)
        return None if server is None else int(server.removeprefix("zk"))

    def running(self, name: str) -> bool:
        process = self.ensemble.server(name).process
        return process is not None and process.is_running()

    def step(self, step: ZabStep) -> None:
        if step.verb in ("write", "crash", "restart"):
            self.mark = len(self.proxy.records())
        if step.verb in ("crash", "restart", "hold", "cut", "crash_at"):
            self.untouched = False
        if step.verb == "write":
            self.write(step.count)
            if self.untouched:
                self.quiesce()
        elif step.verb == "crash":
            name = self.server(step.server)
            if name is not None and self.running(name):
                self.faults.inject("kill", name, None, step=step.describe())
        elif step.verb == "restart":
            name = self.server(step.server)
            if name is not None:
                # Started without waiting, as "start" does: the next steps hit it as it joins.
                self.faults.inject("start", name, None, step=step.describe())
        elif step.verb in ("hold", "cut", "crash_at"):
            self.rule(step)
        elif step.verb == "release":
            self.release(step)
        elif step.verb == "await":
            self.await_packet(step)
        elif step.verb == "wait":
            time.sleep(step.count / 1000)
        elif step.verb == "settle":
            self.settle()

    def quiesce(self) -> None:
        """Until every follower has acknowledged the leader's last proposal and been sent its
        COMMIT (bounded: ``_AWAIT_S``, else :class:`ClusterError`, and the run is undecided).
        The next step's rule must catch a packet of the schedule's path, not one of the
        traffic before it still on its way: a fresh-clone CI's run had its "hold follower-a's
        next ACK" catch the follower's ACK of the root's create, which the crash then lost, and
        the restarted follower's ACK of NEWLEADER passed, so its sync had no window."""
        leader = self.sid("first-leader")
        followers = {
            sid for sid in (self.sid("follower-a"), self.sid("follower-b")) if sid is not None
        }
        deadline = time.monotonic() + _AWAIT_S
        while True:
            pending = _unanswered(self.proxy.records(), leader, followers)
            if not pending:
                return
            if time.monotonic() > deadline:
                raise ClusterError(
                    f"the ensemble did not quiesce in {_AWAIT_S:.0f} s before the schedule's "
                    f"next step: {'; '.join(pending)}"
                )
            time.sleep(0.01)

    def settle(self) -> None:
        """Until every running server serves and one leads, or ``_SETTLE_S``: a state without a
        quorum is a state the schedule may want, not a failure of the harness."""
        running = [name for name in sorted(self.ensemble.servers) if self.running(name)]
        with contextlib.suppress(ClusterError):
            self.ensemble.wait_until_serving(running, _SETTLE_S)

    def rule(self, step: ZabStep) -> None:
        match = self.match(step)
        if match is None:
            return  # no leader to name: the rule would match nothing
        direction = Direction(step.direction)
        if step.verb == "hold":
            self.proxy.add_rule(match, Action.HOLD)
        elif step.verb == "cut":
            self.proxy.add_rule(match, Action.CUT)
        else:
            ensemble = self.ensemble

            def kill_sender(record: QuorumRecord) -> None:
                sender = (
                    record.link.learner
                    if direction is Direction.TO_LEADER
                    else (record.link.leader)
                )
                ensemble.kill_at_once(f"zk{sender}")

            # Cut: a packet its sender died sending, and anything after it, is never delivered.
            self.proxy.add_rule(match, Action.CUT, at_match=kill_sender)

    def release(self, step: ZabStep | None = None) -> None:
        """Every held packet, or those ``step`` names (its server's, of its kind)."""
        match = None if step is None or not step.server else self.match(step)
        for record in self.proxy.held():
            if match is None or match.matches(record.link, record.direction, record.frame):
                with contextlib.suppress(NotHeld):
                    self.proxy.release(record.record_id)

    def match(self, step: ZabStep) -> QuorumMatch | None:
        """The packets ``step`` names (None: its server names nobody now)."""
        sid = self.sid(step.server)
        if sid is None:
            return None
        direction = Direction(step.direction)
        return QuorumMatch(frozenset({PacketType[step.packet]}), direction, learner=sid)

    def await_packet(self, step: ZabStep) -> None:
        """Until the packet ``step`` names has been seen since the last write, crash or
        restart; a shortfall if it never comes (the real servers left the model's path)."""
        match = self.match(step)
        try:
            if match is None:
                raise ZkProxyTimeout(f"{step.server} names no server now")
            self.proxy.wait_for(match, _AWAIT_S, since=self.mark)
        except ZkProxyTimeout as exc:
            self.outcome.shortfalls.append(f"{step.describe()}: {exc}")

    def write(self, count: int) -> None:
        """``count`` creates through the writers' session, each waited for up to the client
        timeout: acknowledged, or unknown (failed, or no answer in time). A session that
        expired while the servers were down is opened again (or the writes are not tried)."""
        if self.writer is None or (
            not self.writer.connected and self.writer.client_state == "LOST"
        ):
            if self.writer is not None:
                _close(self.writer)
            try:
                self.writer = self.session()
            except (KazooException, KazooTimeoutError):
                self.writer = None
                return  # no quorum answers: the writes are not tried
        paths = [f"{ROOT}/w{next(self.counter):05d}" for _ in range(count)]
        pending = [(path, self.writer.create_async(path, b"")) for path in paths]
        for path, result in pending:
            try:
                result.get(timeout=_CLIENT_TIMEOUT_S)
                self.acked.append(path)
            except Exception:
                self.outcome.unknown += 1

    def heal(self) -> bool:
        """Rules off, holds released, every server running; True once they agree (the same
        zxid, one leader), else the shortfall is noted and nothing is judged."""
        self.proxy.clear_rules()
        self.release()
        for name in sorted(self.ensemble.servers):
            if not self.running(name):
                self.ensemble.restart(name, wait=False)
        self.ensemble.wait_until_serving(sorted(self.ensemble.servers), _HEAL_TIMEOUT_S)
        # One write after the heal: a leader of a new epoch with no transaction yet reports
        # zxid e << 32 while its followers report their last one, so an idle ensemble never
        # looks converged; the write gives every server the same last zxid.
        leader = self.ensemble.leader()
        if leader is not None:
            client = _client(self.ensemble, leader)
            try:
                client.create("/healed", b"", sequence=True)
            finally:
                _close(client)
        not_converged = wait_for_convergence(self.ensemble, _HEAL_TIMEOUT_S)
        if not_converged is not None:
            # A server still catching up serves less: comparing now would invent a loss.
            self.outcome.shortfalls.append(f"the servers did not converge: {not_converged}")
            return False
        return True

    def check(self) -> None:
        served: dict[str, set[str]] = {}
        for name in sorted(self.ensemble.servers):
            client = _client(self.ensemble, name)
            try:
                client.sync(ROOT)
                served[name] = {f"{ROOT}/{child}" for child in client.get_children(ROOT)}
            finally:
                _close(client)
        for name, paths in served.items():
            lost = [path for path in self.acked if path not in paths]
            if lost:
                self.outcome.findings.append(
                    f"{len(lost)} acknowledged writes lost on {name}: {', '.join(lost[:5])}"
                )
        if len({frozenset(paths) for paths in served.values()}) > 1:
            sizes = {name: len(paths) for name, paths in served.items()}
            self.outcome.findings.append(f"the servers serve different nodes: {sizes}")


def run_schedule(
    install: ZooKeeperInstall,
    schedule: tuple[ZabStep, ...],
    work_dir: Path | None = None,
    servers: int = 3,
) -> ScheduleOutcome:
    """Run ``schedule`` on a fresh ensemble of ``install`` and judge it (module docstring)."""
    outcome = ScheduleOutcome(schedule)
    started = time.monotonic()
    with proxied_ensemble(install, work_dir, "zab-schedule", servers) as (ensemble, proxy, _):
        runner = _Runner(ensemble, proxy, outcome)
        try:
            ensemble.start()
            runner.start()
            for step in schedule:
                runner.step(step)
            runner.close()
            if runner.heal():
                runner.check()
        except (ClusterError, ZkProxyError, KazooException, KazooTimeoutError) as exc:
            # A server that cannot load its own data again is ZooKeeper's failure, a finding;
            # anything else that stopped the run is the harness's (the one rule: .durability).
            lost = unrecoverable(exc)
            if lost is not None:
                outcome.findings.append(lost)
            else:
                outcome.shortfalls.append(f"the harness could not go on: {exc!r}")
        finally:
            outcome.records = proxy.records()
            outcome.events = server_events(ensemble.lifecycle)
            outcome.faults = list(runner.faults.events)
            for _record, error in proxy.errors():
                outcome.shortfalls.append(f"a crash at a packet failed: {error}")
            runner.close()
    outcome.acknowledged = len(runner.acked)
    judge(outcome, validate(outcome.records, servers, outcome.events))
    outcome.seconds = time.monotonic() - started
    return outcome


def judge(outcome: ScheduleOutcome, trace: QuorumTraceReport) -> None:
    """The schedule's verdict: its own checks (a finding is a violation; a shortfall of the
    harness with no finding, undecided; else clean) joined with the trace validation's."""
    outcome.trace = trace
    outcome.shapes = window_shapes(outcome.records)
    own = (
        Verdict.VIOLATION
        if outcome.findings
        else Verdict.UNDECIDED
        if outcome.shortfalls
        else Verdict.CLEAN
    )
    outcome.verdict = worst([own, trace.verdict])
    if trace.verdict.finding:
        outcome.findings += trace.violations + trace.divergences


#: Shrinking may go this long past the search's budget (each try is a real run).
SHRINK_GRACE_S = 600.0


@dataclass(frozen=True)
class ScheduleSearch:
    """Fault schedules on a fresh ensemble of ``install``, as the kernel searches them: drawn
    along the spec's window (and the model's paths into it), each run and judged by
    :func:`run_schedule`, shrunk to a 1-minimal schedule (:func:`.schedule.smaller_schedules`:
    Hypothesis' shrinker would try hundreds of real runs of many seconds, and a window
    template comes apart only step by step)."""

    install: ZooKeeperInstall
    servers: int = 3

    def plans(self) -> st.SearchStrategy[tuple[ZabStep, ...]]:
        return schedules(self.servers, paths=model_windows())

    def smaller_plans(self, plan: tuple[ZabStep, ...]) -> Iterator[tuple[ZabStep, ...]]:
        return smaller_schedules(plan)

    def perform(self, plan: tuple[ZabStep, ...]) -> ScheduleOutcome:
        return run_schedule(self.install, plan, servers=self.servers)

    def verdict(self, run: ScheduleOutcome) -> Verdict:
        return run.verdict

    def unjudged(self, run: ScheduleOutcome) -> str | None:
        return None  # an undecided schedule is counted; the search goes on

    def same_failure(self, found: ScheduleOutcome, run: ScheduleOutcome) -> bool:
        return run.verdict.finding

    def steering(self, run: ScheduleOutcome) -> Mapping[str, float]:
        return {}

    def describe(self, plan: tuple[ZabStep, ...]) -> str:
        return "; ".join(step.describe() for step in plan)


@dataclass
class SearchOutcome:
    verdict: Verdict
    examples: int = 0
    undecided: int = 0
    seconds: float = 0.0
    first_finding_s: float | None = None
    finding: ScheduleOutcome | None = None
    shapes: dict[str, int] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


def search(
    install: ZooKeeperInstall,
    *,
    seconds: float,
    max_examples: int,
    seed: int,
    shrink: bool = True,
    servers: int = 3,
    on_example: Callable[[int, ScheduleOutcome], None] | None = None,
    on_shrink: Callable[[int, ScheduleOutcome], None] | None = None,
    progress: Callable[[SearchProgress], None] | None = None,
) -> SearchOutcome:
    """Draw and run schedules (the kernel's search, :func:`conformance.live.search.search`)
    until a finding, ``seconds`` or ``max_examples``; shrink a finding to a 1-minimal schedule
    (``shrink``; within ``SHRINK_GRACE_S`` past the budget). Clean only when every example ran
    and was clean."""
    shapes: dict[str, int] = {}
    started = time.monotonic()

    def counted(number: int, outcome: ScheduleOutcome) -> None:
        for shape in outcome.shapes:
            shapes[shape] = shapes.get(shape, 0) + 1
        if on_example is not None:
            on_example(number, outcome)

    searched = live.search(
        ScheduleSearch(install, servers),
        max_examples=max_examples,
        seconds=seconds,
        seed=seed,
        shrink=shrink,
        stop_at=StopAt.FINDING,
        max_shrink_runs=None,
        shrink_until=started + seconds + SHRINK_GRACE_S,
        on_example=counted,
        on_shrink=on_shrink,
        progress=progress,
    )
    result = SearchOutcome(
        searched.verdict,
        examples=searched.examples,
        undecided=searched.undecided,
        seconds=searched.seconds,
        shapes=shapes,
    )
    if searched.finding is not None:
        result.finding = searched.finding.shrunk
        result.first_finding_s = searched.finding.seconds_to_find
    elif result.verdict is Verdict.CLEAN:
        if searched.stopped is Stopped.EXAMPLES and result.examples < max_examples:
            result.notes.append("Hypothesis ran out of schedules to draw before the budget")
    else:
        result.notes.append(
            f"{result.undecided} of {result.examples} schedules could not be judged"
            if result.examples
            else "no schedule ran"
        )
    return result


__all__ = [
    "ROOT",
    "SHRINK_GRACE_S",
    "ScheduleOutcome",
    "ScheduleSearch",
    "SearchOutcome",
    "judge",
    "run_schedule",
    "search",
    "window_shapes",
]
