"""One shard, run where it is scheduled (a Spark task or the in-process loop).

A shard opens its own target (for ``local``: its own ZooKeeper and bookies on free ports,
always stopped), runs the search with the shard's seed and budget, and writes its rows: every
step of every example run on the target, its finding if any, and last its ``shards/`` row.

An attempt that fails is retried once when the failure says trying again could help (its
``retriable`` flag, :func:`conformance.errors.is_retriable`): an exception that carries the flag
(a ``TargetError`` of a connection lost or a cluster that did not start, an adapter's timeout,
the test hook's crash), the shard timeout (a hung target or cluster may not hang again), or an
undecided search whose first target error was retriable. Anything else (a bad configuration, a
malformed answer, a bug, an undecided search with no target error) is recorded at once: a
second attempt would fail the same way. A shard whose attempts all fail is recorded with status
``error`` (:class:`~conformance.distributed.schema.RowStatus`) and verdict undecided, its error
(``Type: message``, or ``undecided: why``), whether that error was retriable, and its log, never
dropped. The hard timeout is a SIGALRM in the thread that runs the shard (Spark's Python
workers and the in-process loop run shards in their main thread); elsewhere only the search's
own time budget bounds a shard.

Test hook: ``BKCONFORM_SHARD_FAULT`` (or ``--inject-fault``, or ``ExecutionOptions.faults``)
makes chosen shards fail, to exercise the retry: ``crash@3`` (shard 3 raises on every attempt),
``crash-once@3`` (only on its first attempt), ``hang@3`` (sleeps until the timeout),
``hang-after-finding@3`` (sleeps until the timeout once the search has found something, as a
slow shrink on a real cluster would); several are separated by commas.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import os
import signal
import socket
import threading
import time
import traceback
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from adapters.installations.system import SystemUnderTest
from conformance.distributed.plan import Shard
from conformance.distributed.schema import FindingRow, RowStatus, ShardRow, StepRow
from conformance.distributed.store import write_part
from conformance.engine import StepRecord
from conformance.errors import ConformanceError, is_retriable
from conformance.gated_races import GateSchedule
from conformance.observations import Observation
from conformance.operations import Crash, Deliver, Operation
from conformance.races import Timed
from conformance.run_ledgers import FindingLedgers, ledger_record
from conformance.rundir import system_header, versions
from conformance.search.program import ExampleRun
from conformance.search.runner import SearchProgress, run_search
from conformance.search.verdict import Finding, SearchReport
from conformance.targets.base import (
    Target,
    TargetError,
    TargetSnapshot,
    invoke_concurrently,
    supports_gates,
    supports_races,
    system_under_test,
)
from conformance.targets.spec import TargetSpec
from conformance.verdict import Verdict
from model.bookkeeper.config import ModelConfig
from model.bookkeeper.render import numbered_trace, sequence_diagram
from model.bookkeeper.svg import sequence_svg

FAULT_ENV = "BKCONFORM_SHARD_FAULT"
FAULT_KINDS = ("crash", "crash-once", "hang", "hang-after-finding")
#: How long a shard may run beyond its search budget (target start and stop, shrinking).
TIMEOUT_FACTOR = 4.0
TIMEOUT_SLACK = 120.0
REFIRE_INTERVAL = 1.0


class ShardFaultError(ConformanceError, ValueError):
    """A fault specification the test hook cannot read."""


class InjectedCrash(ConformanceError, RuntimeError):
    """The test hook's crash. Retriable: it stands for a worker or cluster that crashed, which
    another attempt may not meet (``crash-once`` is retried and passes)."""

    retriable = True


class ShardTimeout(BaseException):
    """The shard outlived its timeout. A BaseException, so that Hypothesis (which catches and
    shrinks Exceptions raised while it runs an example) lets it through at once: deliberately
    outside :class:`~conformance.errors.ConformanceError`, the one class of conformance that is.
    Retriable: a target or cluster that hung once may not hang again."""

    retriable = True


@dataclass(frozen=True)
class ShardFault:
    kind: str
    shard: int

    def applies(self, shard: int, attempt: int) -> bool:
        return self.shard == shard and (self.kind != "crash-once" or attempt == 1)


def parse_faults(text: str) -> tuple[ShardFault, ...]:
    """``crash@3,hang@5`` -> the faults (ShardFaultError on anything else)."""
    faults = []
    for item in (part.strip() for part in text.split(",")):
        if not item:
            continue
        kind, at, number = item.partition("@")
        if not at or kind not in FAULT_KINDS or not number.isdigit():
            raise ShardFaultError(
                f"shard fault {item!r}: expected KIND@SHARD with KIND one of "
                f"{', '.join(FAULT_KINDS)}, e.g. crash@3"
            )
        faults.append(ShardFault(kind, int(number)))
    return tuple(faults)


@dataclass(frozen=True)
class ExecutionOptions:
    run_dir: str
    target: TargetSpec = field(default_factory=TargetSpec)
    shard_timeout: float | None = None  # None: from the shard's budget
    retries: int = 1
    faults: tuple[ShardFault, ...] = ()

    def timeout_for(self, shard: Shard) -> float | None:
        if self.shard_timeout is not None:
            return self.shard_timeout
        if shard.time_budget is None:
            return None
        return shard.time_budget * TIMEOUT_FACTOR + TIMEOUT_SLACK


class LedgerRecorder:
    """A target wrapper that notes the ledgers a shard wrote (on a shared, external, cluster
    every example has a ledger of its own, and the shard's row lists them), how long each
    crash took (on a cluster, a bookie's restart: the report's restart times) and the first
    ``TargetError`` its steps and snapshots raised (the engine turns it into an undecided
    example and keeps only its text; the shard retries on its ``retriable`` flag)."""

    def __init__(self, inner: Target, clock: Callable[[], float] = time.monotonic) -> None:
        self.inner = inner
        self.name = inner.name
        self.ledgers: list[int] = []
        self.restarts: list[float] = []
        self.target_error: TargetError | None = None
        self._clock = clock
        #: Whether the wrapped target races (the wrapper itself always could forward one).
        self.races = supports_races(inner)
        self.gates = supports_gates(inner)

    def open(self, cfg: ModelConfig) -> None:
        self.inner.open(cfg)

    def invoke(self, op: Operation) -> Observation:
        with self._noting_errors():
            if isinstance(op, Crash):
                started = self._clock()
                observed = self.inner.invoke(op)
                self.restarts.append(self._clock() - started)
            else:
                observed = self.inner.invoke(op)
        if observed.ledger is not None and observed.ledger not in self.ledgers:
            self.ledgers.append(observed.ledger)
        return observed

    def invoke_concurrently(
        self,
        ops: Sequence[Deliver],
        offsets_s: Sequence[float],
        gates: GateSchedule | None = None,
    ) -> list[Timed]:
        with self._noting_errors():
            return invoke_concurrently(self.inner, ops, offsets_s, gates)

    def snapshot(self, cfg: ModelConfig) -> TargetSnapshot | None:
        with self._noting_errors():
            return self.inner.snapshot(cfg)

    @contextlib.contextmanager
    def _noting_errors(self) -> Iterator[None]:
        try:
            yield
        except TargetError as exc:
            if self.target_error is None:
                self.target_error = exc
            raise

    def describe(self) -> dict[str, str]:
        return self.inner.describe()

    def system_under_test(self) -> SystemUnderTest:
        return self.inner.system_under_test()

    def close(self) -> None:
        self.inner.close()


@contextlib.contextmanager
def hard_timeout(seconds: float | None) -> Iterator[bool]:
    """Raise ShardTimeout in this thread after ``seconds``; yields whether it is armed."""
    if seconds is None or threading.current_thread() is not threading.main_thread():
        yield False
        return

    def expire(signum: int, frame: Any) -> None:
        raise ShardTimeout(f"the shard did not finish within its timeout of {seconds:.0f} s")

    previous = signal.signal(signal.SIGALRM, expire)
    # Then again every second: a library that catches the first (Hypothesis turns some
    # interruptions into a Flaky error, which the search handles and goes on) gets another.
    signal.setitimer(signal.ITIMER_REAL, seconds, REFIRE_INTERVAL)
    try:
        yield True
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


@dataclass
class _Attempt:
    report: SearchReport
    steps: list[StepRow]
    described: dict[str, str]
    ledgers: list[int]
    system: SystemUnderTest
    restarts: list[float]
    #: The first TargetError the search met (what made an undecided report undecided), if any.
    target_error: TargetError | None = None


class _Log:
    def __init__(self, shard: Shard) -> None:
        self.shard = shard
        self.lines: list[str] = []
        self._last_progress = 0.0

    def __call__(self, line: str) -> None:
        self.lines.append(f"{time.strftime('%H:%M:%S', time.gmtime())} {line}")

    def new_attempt(self) -> None:
        self._last_progress = 0.0

    def progress(self, p: SearchProgress) -> None:
        if p.elapsed - self._last_progress >= 5.0:
            self._last_progress = p.elapsed
            self(p.describe())

    @property
    def text(self) -> str:
        return "\n".join(self.lines) + "\n"


def _observation_json(value: dict[str, Any] | None) -> str | None:
    return None if value is None else json.dumps(value, sort_keys=True)


def step_row(shard: Shard, example: int, phase: str, record: StepRecord) -> StepRow:
    return {
        "shard": shard.shard,
        "configuration": shard.configuration,
        "target": shard.target,
        "example": example,
        "phase": phase,
        "step": record.index,
        "action": record.action,
        "description": record.description,
        "request": record.request,
        "predicted": _observation_json(record.predicted),
        "observed": _observation_json(record.observed),
        "response": None if record.observed is None else record.observed.get("status"),
        "engine_divergence": list(record.divergence),
        "violations": list(record.violations),
        "error": record.error,
    }


def trace_key(records: list[StepRecord]) -> str:
    """Identifies a shrunk trace: the same steps in the same order give the same key."""
    text = "\n".join(f"{r.action}|{r.description}" for r in records)
    return hashlib.sha256(text.encode()).hexdigest()


def finding_row(shard: Shard, finding: Finding) -> FindingRow:
    cfg = shard.config
    outcome = finding.run.outcome
    title = f"{shard.configuration}, shard {shard.shard} ({cfg.describe()})"
    problems = ", ".join(
        [*outcome.violations, *([Verdict.DIVERGENCE] if outcome.divergences else [])]
    )
    note = f"VERDICT: {outcome.verdict}" + (f" ({problems})" if problems else "")
    return {
        "shard": shard.shard,
        "configuration": shard.configuration,
        "target": shard.target,
        "seed": shard.seed,
        "verdict": Verdict.named(outcome.verdict),
        "violations": list(outcome.violations),
        "divergences": list(outcome.divergences),
        "found_by": finding.found_by,
        "found_after": float(finding.found_after),
        "found_steps": finding.found_steps,
        "shrunk_steps": len(outcome.steps),
        "trace_key": trace_key(outcome.steps),
        "trace_text": numbered_trace(cfg, outcome.trace),
        "sequence_text": sequence_diagram(cfg, outcome.trace, title=title, final_note=note),
        "sequence_svg": sequence_svg(cfg, outcome.trace, title=title, final_note=note),
        "blob": finding.blob,
    }


def shard_target(shard: Shard, options: ExecutionOptions) -> TargetSpec:
    """The target the shard runs: the qualification's, on the shard's ledger storage."""
    if shard.ledger_storage is None:
        return options.target
    return dataclasses.replace(options.target, ledger_storage=shard.ledger_storage)


def _bookie_settings_columns(spec: TargetSpec, shard: Shard) -> tuple[str | None, str | None]:
    """The row's ``ledger_storage`` and ``settings_profile``: what the shard's bookies ran
    (None for both where the suite does not configure them, or the storage refused)."""
    try:
        record = spec.settings_record(shard.config)
    except ValueError:
        return shard.ledger_storage, spec.settings_profile
    return record.get("ledger_storage"), record.get("settings_profile")


def _attempt(
    shard: Shard,
    options: ExecutionOptions,
    attempt: int,
    log: _Log,
    ledger_records: list[dict[str, Any]],
) -> _Attempt:
    """One attempt at the shard. ``ledger_records`` gets, however the attempt ends, what
    became of the ledgers it created on a cluster that outlives it (the external target)."""
    for fault in options.faults:
        if fault.applies(shard.shard, attempt) and fault.kind in ("crash", "crash-once"):
            raise InjectedCrash(f"injected crash of shard {shard.shard}, attempt {attempt}")
    steps: list[StepRow] = []
    examples = 0
    started = time.monotonic()
    first_failure: tuple[ExampleRun, str, float] | None = None

    def on_example(phase: str, run: ExampleRun) -> None:
        nonlocal examples, first_failure
        ledgers.remember(phase, run)
        steps.extend(step_row(shard, examples, phase, record) for record in run.outcome.steps)
        examples += 1
        if run.finding and first_failure is None:
            first_failure = (run, phase, time.monotonic() - started)
            if any(f.applies(shard.shard, attempt) for f in stalls_after_finding):
                log(f"injected stall of shard {shard.shard} after its first finding")
                _sleep_until_timeout(armed)

    stalls_after_finding = [f for f in options.faults if f.kind == "hang-after-finding"]
    armed = False
    spec = shard_target(shard, options)
    # The configuration as the shard's bookies store an entry sent again (their storage).
    cfg = spec.as_stored(shard.config)
    target = LedgerRecorder(spec.build(cfg))
    # On an external cluster, a finding's ledger is kept when the shard's others are deleted.
    ledgers = FindingLedgers(target.inner)
    system = system_under_test(target)
    log.new_attempt()
    try:
        with hard_timeout(options.timeout_for(shard)) as armed:
            if any(f.applies(shard.shard, attempt) and f.kind == "hang" for f in options.faults):
                log(f"injected hang of shard {shard.shard}, attempt {attempt}")
                _sleep_until_timeout(armed)
            log(system_header(system))
            target.open(cfg)
            log(f"target {target.name} open: {json.dumps(target.describe(), sort_keys=True)}")
            report = run_search(
                cfg, target, shard.settings, progress=log.progress, on_example=on_example
            )
            if report.finding is not None:
                ledgers.keep(report.finding.run)
            described = target.describe()
    except ShardTimeout as timeout:
        if first_failure is None:
            raise
        # The search found something and was shrinking it (on a real cluster, with crashes,
        # that can be slow): the shard has decided; keep the failing example as it was found
        # rather than retry and lose it again.
        report = _unshrunk(first_failure, examples, len(steps), time.monotonic() - started)
        ledgers.keep(first_failure[0])
        report.notes.append(f"{timeout}: shrinking stopped, the finding is recorded unshrunk")
        log("timeout while shrinking: the first failing example is recorded unshrunk")
        described = {}
        with contextlib.suppress(Exception):
            described = target.describe()
    finally:
        # Outside the timeout: stopping a cluster is never interrupted halfway.
        target.close()
        record = ledger_record(target.inner)
        if record is not None:
            ledger_records.append(record)
    return _Attempt(
        report, steps, described, target.ledgers, system, target.restarts, target.target_error
    )


def _system(shard: Shard, options: ExecutionOptions) -> SystemUnderTest:
    """What the shard's target runs, when no attempt got far enough to say."""
    try:
        return system_under_test(shard_target(shard, options).build(shard.config))
    except Exception as exc:
        return SystemUnderTest(f"unknown ({type(exc).__name__}: {exc})", "unknown", "unknown")


def _sleep_until_timeout(armed: bool) -> None:
    if not armed:
        raise InjectedCrash("injected hang without a timeout to end it")
    time.sleep(10**6)


def _unshrunk(
    failure: tuple[ExampleRun, str, float], examples: int, steps: int, elapsed: float
) -> SearchReport:
    run, phase, when = failure
    finding = Finding(run, run.choices, f"{phase} (unshrunk)", when, len(run.outcome.steps))
    return SearchReport(run.outcome.verdict, finding, examples, steps, elapsed)


def execute_shard(shard: Shard, options: ExecutionOptions) -> ShardRow:
    """Run the shard (retrying a retriable failure once), write its rows, and return its
    ``shards/`` row."""
    run_dir = Path(options.run_dir)
    log = _Log(shard)
    started = time.monotonic()
    result: _Attempt | None = None
    error: str | None = None
    retriable: bool | None = None  # whether the recorded error was retriable (None: no error)
    attempts = 0
    ledger_records: list[dict[str, Any]] = []
    last = options.retries + 1
    for attempt in range(1, last + 1):
        attempts = attempt
        log(f"shard {shard.shard} ({shard.configuration}, seed {shard.seed}) attempt {attempt}")
        try:
            result = _attempt(shard, options, attempt, log, ledger_records)
        except (Exception, ShardTimeout) as exc:
            error = f"{type(exc).__name__}: {exc}"
            retriable = is_retriable(exc)
            log(f"attempt {attempt} failed: {error}\n{traceback.format_exc()}")
            result = None
        else:
            if result.report.verdict != Verdict.UNDECIDED:
                error = retriable = None
                break
            error = f"undecided: {result.report.error}"
            cause = result.target_error  # what made the search undecided, if a target error
            retriable = cause is not None and is_retriable(cause)
            log(f"attempt {attempt} could not decide: {result.report.error}")
        if not retriable:
            if attempt < last:
                log(f"attempt {attempt}: not retried (trying again would not help)")
            break
    wall = time.monotonic() - started
    if result is not None:
        for note in result.report.notes:
            log(f"NOTE {note}")
    report = result.report if result is not None else None
    finding = report.finding if report is not None else None
    write_part(run_dir, "steps", shard.shard, result.steps if result is not None else [])
    write_part(run_dir, "findings", shard.shard, [finding_row(shard, finding)] if finding else [])
    status = RowStatus.ERROR if error is not None else RowStatus.DONE
    # An error decided nothing: its verdict is undecided, whatever the last attempt said.
    verdict = Verdict.UNDECIDED if report is None or error else Verdict.named(report.verdict)
    log(f"finished in {wall:.1f} s: {verdict}" + (f" ({status})" if error is not None else ""))
    system = result.system if result is not None else _system(shard, options)
    ledger_storage, settings_profile = _bookie_settings_columns(shard_target(shard, options), shard)
    row: ShardRow = {
        "shard": shard.shard,
        "configuration": shard.configuration,
        "config_summary": shard.config.describe(),
        "target": shard.target,
        "seed": shard.seed,
        "max_examples": shard.max_examples,
        "max_steps": shard.max_steps,
        "time_budget": shard.time_budget,
        "explore": shard.explore,
        "status": status,
        "verdict": verdict,
        "findings": 1 if finding else 0,
        "examples": report.examples if report else 0,
        "steps": report.steps if report else 0,
        "explorer_steps": report.explorer_steps if report else 0,
        "target_steps": len(result.steps) if result else 0,
        "elapsed": report.elapsed if report else 0.0,
        "wall": wall,
        "steps_per_second": report.steps_per_second if report else 0.0,
        "time_to_first_finding": finding.found_after if finding else None,
        "attempts": attempts,
        "error": error,
        "error_retriable": retriable,
        "log": log.text,
        "ledgers": result.ledgers if result else [],
        "ledger_records": json.dumps(ledger_records, sort_keys=True) if ledger_records else None,
        "restarts": len(result.restarts) if result else 0,
        "restart_seconds": sum(result.restarts) if result else 0.0,
        "bookies_own": (
            json.dumps(report.bookies_own.as_dict(), sort_keys=True)
            if report is not None and report.bookies_own is not None
            else None
        ),
        "versions": json.dumps(versions(), sort_keys=True),
        "target_description": json.dumps(result.described if result else {}, sort_keys=True),
        "bookies": system.bookies,
        "client": system.client,
        "zookeeper": system.zookeeper,
        "bookie_settings": system.bookie_settings or None,
        "ledger_storage": ledger_storage,
        "settings_profile": settings_profile,
        "worker": f"{socket.gethostname()}:{os.getpid()}",
        "finished_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    logs = run_dir / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    (logs / f"shard-{shard.shard:05d}.log").write_text(log.text)
    write_part(run_dir, "shards", shard.shard, [row])
    return row
