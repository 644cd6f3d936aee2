"""One Zab conformance run: start an ensemble, drive the program's clients and faults while
sampling the leader, heal, wait for the servers to converge, stop them, read their logs, and
judge the whole history.

The run's verdict is the project's one verdict (:class:`conformance.verdict.Verdict`): the
checkers' report (:class:`model.zab.checkers.CheckReport`) read as clean, violation or
undecided, and undecided whenever the harness could not carry the run out as asked.

While the run goes, every client invoke and completion, leader sample and fault event is also
handed to a :class:`HistoryStream` (the run directory's writer) as it happens, so that a run
killed midway leaves its history up to then.

Every wait is bounded; the ensemble, the clients and the helper threads are stopped on every
exit path (``finally``), including errors and interrupts.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from adapters.cluster.network_namespaces import partitions_supported
from adapters.cluster.zookeeper import ZooKeeperEnsemble
from adapters.installations.zookeeper import ZooKeeperInstall, locate_zookeeper
from adapters.zkquorum.proxy import QuorumProxy
from adapters.zookeeper.client import zookeeper_session
from adapters.zookeeper.observe import LeaderSampler, server_status
from adapters.zookeeper.txnlog import LoggedTxn, read_server
from conformance.live.faults import FaultEvent
from conformance.verdict import Verdict, worst
from conformance.zab.clients import Client, Recorder, run_client
from conformance.zab.faults import ScheduledFaults
from conformance.zab.program import ROOT, FaultStep, Program
from conformance.zab.quorum_trace import QuorumTraceReport, server_events, validate
from model.zab.checkers import CheckReport, check
from model.zab.history import Change, ClientOp, History, LeaderSample, ServerLog, Txn

_CHANGE_KINDS = {"create": "create", "set": "set", "delete": "delete", "check": "check"}


@dataclass(frozen=True)
class RunSettings:
    servers: int = 3
    op_timeout: float = 5.0
    converge_timeout: float = 60.0
    run_timeout: float = 900.0
    faults: tuple[str, ...] = ()
    rate: float = 0.0
    """Total client operations per second (0: as fast as the ensemble answers)."""
    pin_clients: bool = True
    """Even-numbered clients talk to one chosen server only (reads and writes through it, as
    a pinned reader would); odd-numbered ones may use any server."""
    quorum_proxy: bool = False
    """Route the servers' quorum traffic through the quorum proxy and validate it against the
    Zab spec (:mod:`conformance.zab.quorum_trace`); not with partitions."""


class HistoryStream(Protocol):
    """Where a run hands each part of its history as it happens (from the client, sampler
    and fault threads: implementations must be thread-safe)."""

    def invoked(self, op: ClientOp) -> None:
        """A client invokes ``op`` (what is known then: its outcome is still unknown)."""

    def completed(self, op: ClientOp) -> None:
        """``op`` completed (ok, fail or unknown)."""

    def leader(self, sample: LeaderSample) -> None:
        """A server answered ``srvr`` as the leader."""

    def fault(self, event: FaultEvent) -> None:
        """The fault injector did something (or found nothing to do it to)."""


class StreamingSampler(LeaderSampler):
    """A :class:`LeaderSampler` that also hands every leader sample to ``on_sample`` as it is
    taken (on the sampler's thread)."""

    def __init__(
        self,
        endpoints: Mapping[str, tuple[str, int]],
        on_sample: Callable[[LeaderSample], None],
    ) -> None:
        super().__init__(endpoints)
        self._on_sample = on_sample

    def sample_once(self) -> None:
        # Only this thread appends to ``samples``: what it appended is what is new.
        seen = len(self.samples)
        super().sample_once()
        for status in self.samples[seen:]:
            self._on_sample(LeaderSample(status.time, status.server, status.zxid))


@dataclass
class RunOutcome:
    history: History
    report: CheckReport
    """Every checker's result, as the checkers judged the history."""
    verdict: Verdict
    """The run's verdict: the report's, or undecided where the harness broke down."""
    fault_events: list[FaultEvent]
    timings: dict[str, float]
    notes: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    zookeeper: str = ""
    probes: int = 0
    client_servers: dict[int, str] = field(default_factory=dict)
    quorum_trace: QuorumTraceReport | None = None
    """The quorum traffic's validation (with ``RunSettings.quorum_proxy``); its verdict is
    part of ``verdict``."""

    def sizes(self) -> dict[str, Any]:
        ops = self.history.ops
        return {
            "client_ops": len(ops),
            "ok": sum(1 for o in ops if o.outcome == "ok"),
            "fail": sum(1 for o in ops if o.outcome == "fail"),
            "unknown": sum(1 for o in ops if o.outcome == "unknown"),
            "server_txns": {s.server: len(s.txns) for s in self.history.servers},
            "snapshot_zxids": {s.server: hex(s.snapshot_zxid) for s in self.history.servers},
            "leader_samples": len(self.history.leaders),
            "epochs_led": len({s.epoch for s in self.history.leaders}),
            "fault_events": len(self.fault_events),
        }


def to_model_txn(txn: LoggedTxn) -> Txn:
    changes = tuple(
        Change(_CHANGE_KINDS[c.kind], c.path, c.data, c.version)  # type: ignore[arg-type]
        for c in txn.changes
    )
    return Txn(txn.zxid, txn.digest, txn.type_name, txn.session, changes)


def read_server_logs(ensemble: ZooKeeperEnsemble) -> tuple[tuple[ServerLog, ...], list[str]]:
    """Every server's restored history, and notes on transactions whose bytes differ between
    servers while their meaning is the same (not a finding, but worth knowing)."""
    logs = []
    raw: dict[int, dict[str, str]] = {}
    for name, server in ensemble.servers.items():
        restored = read_server(server.data_dir)
        logs.append(
            ServerLog(name, tuple(to_model_txn(t) for t in restored.txns), restored.snapshot_zxid)
        )
        for txn in restored.txns:
            raw.setdefault(txn.zxid, {})[f"{txn.digest}:{txn.raw_digest}"] = name
    differing = [
        zxid
        for zxid, variants in raw.items()
        if len(variants) > 1 and len({v.split(":")[0] for v in variants}) == 1
    ]
    notes = []
    if differing:
        notes.append(
            f"{len(differing)} txns are logged with different bytes but the same meaning on "
            f"different servers (first {hex(min(differing))}); see docs/zab.md"
        )
    return tuple(logs), notes


def run_verdict(report: CheckReport, harness_errors: list[str]) -> Verdict:
    """The run's verdict: the checkers' report read in the one vocabulary, except that a clean
    report over a run whose clients or faults broke down is undecided (the history may be
    incomplete or the faults may not have happened). Findings stay findings."""
    verdict = Verdict.of_validity(report.valid)
    if verdict is Verdict.CLEAN and harness_errors:
        return Verdict.UNDECIDED
    return verdict


def shortfalls(errors: list[str], fault_errors: list[str], skipped: list[str]) -> list[str]:
    """Everything that keeps a run from being clean, whatever the checkers say: clients that
    crashed, servers that did not converge (``errors``), faults that failed or could not be
    healed, and requested faults that were not injected (``skipped``): the run did not test
    what was asked."""
    return [
        *errors,
        *fault_errors,
        *(f"requested fault not injected: {reason}" for reason in skipped),
    ]


def without_partitions(steps: tuple[FaultStep, ...]) -> tuple[FaultStep, ...]:
    return tuple(step for step in steps if not any(verb == "isolate" for verb, _ in step.actions))


def assign_servers(ensemble: ZooKeeperEnsemble, clients: int, pin: bool) -> dict[int, str]:
    """Which server each client talks to: a server's name, or "any"."""
    names = sorted(ensemble.servers)
    return {
        process: names[(process // 2) % len(names)] if pin and process % 2 == 0 else "any"
        for process in range(clients)
    }


def wait_for_convergence(ensemble: ZooKeeperEnsemble, timeout: float) -> str | None:
    """Wait until every server serves, one leads, and all report the same zxid.
    Returns None when converged, else what was last seen."""
    deadline = time.monotonic() + timeout
    seen = ""
    while time.monotonic() < deadline:
        with ensemble.network():
            statuses = {
                name: server_status(name, server.host, server.client_port, 1.0)
                for name, server in ensemble.servers.items()
            }
        seen = ", ".join(
            f"{n}={s.mode}@{s.zxid:#x}" if s else f"{n}=down" for n, s in statuses.items()
        )
        if all(statuses.values()):
            zxids = {s.zxid for s in statuses.values() if s}
            modes = [s.mode for s in statuses.values() if s]
            if len(zxids) == 1 and modes.count("leader") == 1:
                return None
        time.sleep(0.2)
    return seen


def run_program(
    program: Program,
    work_dir: Path,
    settings: RunSettings,
    *,
    install: ZooKeeperInstall | None = None,
    on_progress: Callable[[str], None] | None = None,
    stream: HistoryStream | None = None,
) -> RunOutcome:
    """Run ``program`` on a fresh ensemble under ``work_dir``; ``stream`` gets the history as
    it happens (the servers' logs are only read at the end, into the outcome)."""
    say = on_progress or (lambda _message: None)
    timings: dict[str, float] = {}
    notes: list[str] = []
    skipped: list[str] = []
    steps = program.faults
    wants_partitions = "partition" in settings.faults or any(
        verb == "isolate" for step in steps for verb, _ in step.actions
    )
    if wants_partitions and settings.quorum_proxy:
        raise ValueError("the quorum proxy does not run with partitions: leave one out")
    if wants_partitions and (reason := partitions_supported()) is not None:
        skipped.append(f"partition: network namespaces not permitted here: {reason}")
        steps = without_partitions(steps)
        wants_partitions = False
    install = install or locate_zookeeper()
    proxy = QuorumProxy() if settings.quorum_proxy else None
    # Absolute: each server runs with its own directory as the working directory.
    ensemble = ZooKeeperEnsemble(
        install,
        work_dir.resolve(),
        size=settings.servers,
        partitions=wants_partitions,
        quorum_proxy=proxy,
    )
    recorder = (
        Recorder(on_invoke=stream.invoked, on_complete=stream.completed) if stream else Recorder()
    )
    clients: list[Client] = []
    stop = threading.Event()
    errors: list[str] = []
    injector: ScheduledFaults | None = None
    sampler: LeaderSampler | None = None
    on_fault = stream.fault if stream else None
    started = time.monotonic()
    client_servers: dict[int, str] = {}
    try:
        if proxy is not None:
            proxy.start()
        ensemble.start()
        timings["ensemble_start_s"] = time.monotonic() - started
        say(f"ensemble of {settings.servers} serving: {ensemble.modes()}")
        # Clients, the sampler and their threads live where the servers can be reached (the
        # hub namespace when partitions are on); threads started inside inherit it.
        with ensemble.network(), zookeeper_session(ensemble.connect_string, timeout=30) as admin:
            admin.ensure_path(ROOT)
        endpoints = ensemble.client_endpoints()
        sampler = StreamingSampler(endpoints, stream.leader) if stream else LeaderSampler(endpoints)
        with ensemble.network():
            sampler.__enter__()
        client_servers = assign_servers(ensemble, program.clients, settings.pin_clients)
        for process in range(program.clients):
            connect = client_servers[process]
            if connect != "any":
                host, port = ensemble.client_endpoints()[connect]
                connect_string = f"{host}:{port}"
            else:
                connect_string = ensemble.connect_string
            with ensemble.network():
                clients.append(Client(process, connect_string, settings.op_timeout))
        injector = ScheduledFaults(ensemble, steps, lambda: recorder.completed, on_event=on_fault)
        interval = program.clients / settings.rate if settings.rate > 0 else 0.0

        def client_failed(exc: BaseException) -> None:
            errors.append(f"client crashed: {type(exc).__name__}: {exc}")

        threads = [
            threading.Thread(
                target=run_client,
                args=(c, program.ops_of(c.process), recorder, stop, client_failed, interval),
                name=f"zab-client-{c.process}",
                daemon=True,
            )
            for c in clients
        ]
        workload_started = time.monotonic()
        injector.start()
        for thread in threads:
            thread.start()
        deadline = workload_started + settings.run_timeout
        for thread in threads:
            thread.join(max(0.0, deadline - time.monotonic()))
        if any(t.is_alive() for t in threads):
            notes.append(f"workload did not finish within {settings.run_timeout}s; stopped")
            stop.set()
            for thread in threads:
                thread.join(settings.op_timeout * 2)
        timings["workload_s"] = time.monotonic() - workload_started
        timings["ops_per_second"] = recorder.completed / max(timings["workload_s"], 1e-9)
        injector.finish()
        say(f"workload done: {recorder.completed} ops in {timings['workload_s']:.1f}s")
        for client in clients:
            with contextlib.suppress(Exception):
                client.close()
        clients = []
        converge_started = time.monotonic()
        not_converged = wait_for_convergence(ensemble, settings.converge_timeout)
        timings["converge_s"] = time.monotonic() - converge_started
        if not_converged is not None:
            # Servers that never agree leave logs that may simply be behind: the checks
            # over them cannot pass the run.
            errors.append(
                f"servers did not converge within {settings.converge_timeout}s: {not_converged}"
            )
        sampler.stop()
    finally:
        stop.set()
        if injector is not None:
            with contextlib.suppress(Exception):
                injector.finish(timeout=10)
        if sampler is not None:
            sampler.stop()
        for client in clients:
            with contextlib.suppress(Exception):
                client.close()
        ensemble.stop()
        records = proxy.records() if proxy is not None and proxy.running else []
        if proxy is not None:
            proxy.close()
    trace = (
        validate(records, settings.servers, server_events(ensemble.lifecycle))
        if proxy is not None
        else None
    )
    harness_errors = shortfalls(errors, injector.errors if injector else [], skipped)
    notes.extend(harness_errors)
    check_started = time.monotonic()
    logs, log_notes = read_server_logs(ensemble)
    notes.extend(log_notes)
    leaders = tuple(
        LeaderSample(s.time, s.server, s.zxid)
        for s in (sampler.leader_samples() if sampler else [])
    )
    history = History(logs, leaders, tuple(recorder.snapshot()), tuple(notes), f"{ROOT}/")
    report = check(history)
    verdict = run_verdict(report, harness_errors)
    if trace is not None:
        verdict = worst([verdict, trace.verdict])
    timings["check_s"] = time.monotonic() - check_started
    timings["total_s"] = time.monotonic() - started
    return RunOutcome(
        history,
        report,
        verdict,
        injector.events if injector else [],
        timings,
        notes,
        skipped,
        install.describe(),
        sampler.probes if sampler else 0,
        client_servers,
        trace,
    )
