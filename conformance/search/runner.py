"""The search: Hypothesis generates examples on the target; the model's explorer proposes
traces when Hypothesis alone finds nothing; Hypothesis shrinks whatever fails.

Phases, in order, while the time budget lasts:

1. **Hypothesis** (``hypothesis.find`` over the example strategy of
   ``conformance.search.program``): examples run on the target step by step; the swarm and
   ``hypothesis.target`` on the danger score bias generation; failures saved in the example
   database are replayed first, so a finding of an earlier run comes back at once.
2. **Explorer** (only when phase 1 found nothing): the model's archive-guided simulation
   (``model.bookkeeper.explore.simulate_randomly``; ``explorer_workers`` of them at once,
   :mod:`conformance.search.portfolio`), pure and fast, looks for a trace that breaks an
   invariant. Uniform random walks do not find Defect 1 (TLC's own simulation did
   not, in 150 s); this does, in seconds. On a cluster target it gets half the remaining
   budget; when the model stays clean, the traces that first reached each of its archived
   corners (the most dangerous first) are replayed on the cluster: a *corpus* of deep,
   distinct stories that random examples rarely reach, where a wrong answer is a divergence.
3. **Shrink**: a failure from either phase is handed to Hypothesis as a choice list in its
   example database; Hypothesis replays it *on the target* (so a real cluster must really
   misbehave, or diverge from the model) and shrinks it to a minimal example.

Deterministic for a seed, but for the time budget, which only decides when to stop.

Progress: whatever phase runs, ``progress`` hears of it at least every
:data:`PROGRESS_INTERVAL_S` seconds (once a second while steps run on the target): the phase,
its counts, the findings so far and the budget left (:meth:`SearchProgress.describe`); in the
explorer phase the explorer's own counts too, also while the search's process waits for its
workers in other processes. The CLI prints these lines; a Spark shard logs them.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import random
import time
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, fields, replace
from typing import Any, Protocol

from hypothesis import HealthCheck, Phase, Verbosity, find, settings, target
from hypothesis import strategies as st
from hypothesis.database import ExampleDatabase, InMemoryExampleDatabase
from hypothesis.errors import Flaky, NoSuchExample

from conformance.engine import BookiesOwnTally, StepRecord
from conformance.races import RaceTally
from conformance.search.choices import Chooser, DataChooser, RecordingChooser, ReplayChooser
from conformance.search.choices import to_bytes as choices_bytes
from conformance.search.danger import danger
from conformance.search.portfolio import ExplorerProgress, explore_portfolio
from conformance.search.program import (
    ExampleRun,
    bookies_own_steps_in,
    encode_trace,
    gate_proposals,
    race_proposals,
    run_example,
)
from conformance.search.verdict import SearchReport, SearchTally, conclude
from conformance.targets.base import Target, supports_gates, supports_races
from conformance.verdict import Verdict
from model.bookkeeper.action_table import ENCODING_VERSION
from model.bookkeeper.actions import Label
from model.bookkeeper.config import ModelConfig
from model.bookkeeper.explore import minimise
from model.bookkeeper.records import State
from model.search.bfs import Step

#: The meaning of an example's choices: the action table's encoding version (its order of
#: actions, pinned there), so that old database entries are never misread.
PROGRAM_VERSION = ENCODING_VERSION
MINIMISE_ROUNDS = 3
#: The model steps the explorer walks, with gates, to find the races at one bookie whose every
#: gate schedule is run first (a few seconds: the configurations' races are shallow).
GATE_EXPLORER_STEPS = 20_000
#: The longest a search goes without a progress report, whatever it is doing (s): the
#: heartbeat of the explorer, the corpus's preparation, shrinking (issue 48: a search that
#: explored for 15 minutes in silence looked hung). Read when a search starts (tests set it).
PROGRESS_INTERVAL_S = 10.0
#: While steps run on the target, a report at most this often (s).
STEP_PROGRESS_S = 1.0
#: The phases a finding is shrunk in by Hypothesis: reported as ``shrink`` once one is found.
_SHRUNK_IN = frozenset({"hypothesis", "corpus", "gates"})


@dataclass(frozen=True)
class SearchSettings:
    """How much to search. ``time_budget`` bounds phases 1 and 2 (shrinking is bounded by
    Hypothesis itself); ``None`` means no bound."""

    max_examples: int = 50
    max_steps: int = 60
    seed: int = 0
    time_budget: float | None = 120.0
    explore: bool = True
    #: Steps may race requests to bookies (:mod:`conformance.races`).
    races: bool = False
    #: With ``races``: a race of two requests to one bookie may be run by a gate schedule,
    #: the bookie's threads held where they meet (:mod:`conformance.gated_races`); the race
    #: proposals start with every schedule of each pair of request kinds.
    gates: bool = False
    #: Shrink a finding (Hypothesis, then causal deletion on the model). Off: the first
    #: failing example is the finding, as run (a quick yes/no; its replay is as exact).
    shrink: bool = True
    #: Explorers run at once, one per core (:mod:`conformance.search.portfolio`); 1: the
    #: explorer alone, in this process.
    explorer_workers: int = 1
    #: The explorer's model steps at most, per worker (None: half of the time left on a
    #: cluster target, all of it on the model). With no time budget, a search bounded by
    #: examples and steps alone: a slower or a faster machine gets the same verdict.
    explorer_steps: int | None = None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    def check(self) -> None:
        """Refuse budgets that cannot check anything (ValueError, with the option's name)."""
        if self.max_examples < 1:
            raise ValueError(f"--max-examples must be at least 1 (got {self.max_examples})")
        if self.max_steps < 1:
            raise ValueError(f"--steps must be at least 1 (got {self.max_steps})")
        if self.explorer_workers < 1:
            raise ValueError(f"--explorer-workers must be at least 1 (got {self.explorer_workers})")
        if self.explorer_steps is not None and self.explorer_steps < 1:
            raise ValueError(f"--explorer-steps must be at least 1 (got {self.explorer_steps})")
        if self.time_budget is not None and not self.time_budget > 0:
            raise ValueError(
                f"--seconds must be positive (got {self.time_budget:g}): a search with no "
                "time checks nothing"
            )

    def describe_budget(self) -> str:
        return "unbounded" if self.time_budget is None else f"{self.time_budget:g} s"

    def corpus_until_time_is_up(self, target: str) -> bool:
        """Whether, on ``target``, the explorer's corpus follows the generated examples until
        the time budget is spent (a cluster target, the explorer on, a time budget): then a
        search runs more examples than ``max_examples``. Without a time budget the corpus is
        cut at ``max_examples``; on the model the explorer's steps are the search's."""
        return target != "model" and self.explore and self.time_budget is not None

    def describe_examples(self, target: str) -> str:
        """What a search runs on ``target``, in words: its generated examples, then the
        corpus when :meth:`corpus_until_time_is_up`."""
        examples = f"{self.max_examples} generated examples of up to {self.max_steps} steps"
        if self.corpus_until_time_is_up(target):
            examples += ", then the explorer's corpus while time is left"
        return examples


#: Named budgets, shared by ``bkconform run --profile`` and ``pytest --bk-profile``.
PROFILES: dict[str, SearchSettings] = {
    "ci": SearchSettings(max_examples=50, max_steps=60, time_budget=30.0),
    "nightly": SearchSettings(max_examples=1_000, max_steps=80, time_budget=1_800.0),
    "qualify": SearchSettings(max_examples=10_000, max_steps=100, time_budget=4 * 3_600.0),
}


@dataclass
class SearchProgress:
    """Where a search is: its phase (``replay``, ``hypothesis``, ``explorer``, ``corpus``,
    ``shrink``, ``minimise``; ``replays`` for a finding's replays after the search), the
    examples and steps run on the target, the time since it started, its findings, and what
    is left of its budget."""

    phase: str
    examples: int
    steps: int
    elapsed: float
    findings: int
    #: The search's time budget (s; None: unbounded).
    budget: float | None = None
    #: The examples the phase may still run (None: the phase is bounded by time alone).
    examples_left: int | None = None
    #: When (``elapsed``) the phase ends at the latest, before the budget does (the explorer
    #: on a cluster target: half of the time left).
    phase_until: float | None = None
    #: The explorer's counts, in the explorer phase.
    explorer: ExplorerProgress | None = None

    @property
    def steps_per_second(self) -> float:
        return self.steps / self.elapsed if self.elapsed > 0 else 0.0

    @property
    def time_left(self) -> float | None:
        """The seconds left of the budget (0 once spent; None: unbounded)."""
        return None if self.budget is None else max(0.0, self.budget - self.elapsed)

    def left(self) -> list[str]:
        """What is left of the budget, in words (nothing when no budget was told)."""
        left = []
        if self.examples_left is not None:
            left.append(f"{self.examples_left} examples")
        if self.phase_until is not None:
            left.append(f"{max(0.0, self.phase_until - self.elapsed):.0f} s for the {self.phase}")
        if self.budget is not None:
            left.append(f"{self.time_left:.0f} s of {self.budget:g} s")
            if self.time_left == 0 and self.phase in ("shrink", "minimise"):
                left[-1] += " (a finding is shrunk all the same)"
        return left

    def describe(self, *, rate: bool = False) -> str:
        """``[explorer] 50 examples, 372 steps, 0 findings, 16 s; left: 1784 s of 1800 s;
        explorer: 2 workers running, 10,432 walks, 198,233 model steps, 1,204 cells``
        (``rate``: the target's steps per second after the steps)."""
        line = f"[{self.phase}] {self.examples} examples, {self.steps} steps"
        if rate:
            line += f", {self.steps_per_second:,.0f} steps/s"
        line += f", {self.findings} findings, {self.elapsed:.0f} s"
        left = self.left()
        if left:
            line += "; left: " + ", ".join(left)
        if self.explorer is not None:
            line += "; explorer: " + self.explorer.describe()
        return line


class StepSink(Protocol):
    """Where a search's steps go as soon as they are judged (the run directory's history).
    Examples are numbered from 1 in the order they run on the target, whatever the phase."""

    def step(self, example: int, phase: str, record: StepRecord) -> None: ...

    def example_done(self, example: int) -> None:
        """The example ended (also when Hypothesis stopped it midway)."""


#: ModelConfig's fields when the key's format was fixed: always described.
KEYED_FIELDS = frozenset(
    {
        "bookies",
        "clients",
        "write_quorum",
        "ack_quorum",
        "send_limit",
        "inflight_limit",
        "ensemble_size",
        "recovery_reads_fence",
        "recovery_starts_at_fragment",
        "max_crashes",
        "crash_when_open",
        "crash_in_recovery",
        "crash_when_closed",
        "limbo_on_unclean_shutdown",
        "fence_on_unclean_shutdown",
        "late_read_answers_ignored",
        "effective_ensemble_size",
    }
)
#: Switches added to ModelConfig after the key's format was fixed (every field since, so that
#: a new switch cannot be forgotten): described only when on, so that every configuration
#: without them keeps its key (and its saved findings).
LATER_SWITCHES = frozenset(f.name for f in fields(ModelConfig)) - KEYED_FIELDS


def database_key(
    cfg: ModelConfig, target_name: str, max_steps: int, *, races: bool = False, gates: bool = False
) -> bytes:
    """Where a configuration's failures live in the example database (an example that may
    race, or gate its races, reads its choices differently: a key of its own)."""
    config = {k: v for k, v in asdict(cfg).items() if k not in LATER_SWITCHES or v}
    described = json.dumps(
        {
            "program": PROGRAM_VERSION,
            "config": config,
            "target": target_name,
            "max_steps": max_steps,
            **({"races": True} if races else {}),
            **({"gates": True} if gates else {}),
        },
        sort_keys=True,
    )
    return b"bkconform-" + hashlib.sha256(described.encode()).hexdigest()[:32].encode()


class _Search:
    """The mutable bookkeeping of one search (counts, the clock, the stop conditions)."""

    def __init__(
        self,
        cfg: ModelConfig,
        target_: Target,
        search: SearchSettings,
        progress: Callable[[SearchProgress], None] | None,
        clock: Callable[[], float],
        on_example: Callable[[str, ExampleRun], None] | None = None,
        sink: StepSink | None = None,
    ) -> None:
        self.on_example = on_example
        self.sink = sink
        self.started_examples = 0  # numbers the sink's examples, aborted ones included
        self.cfg = cfg
        self.target = target_
        self.search = search
        self.progress = progress
        self.clock = clock
        self.started = clock()
        self.examples = 0
        self.steps = 0  # steps run on the target
        self.explorer_steps = 0  # steps the explorer took in the model alone
        self.phase = "hypothesis"
        self.shrinking = False
        self.error: str | None = None
        self.first_found: tuple[str, float, int] | None = None
        self.best: ExampleRun | None = None  # the shortest failing example run so far
        #: How often Hypothesis stopped a phase, no failure seen, for a replay that took
        #: another path (Flaky): nondeterministic answers, a race's above all.
        self.interruptions = 0
        self.races = RaceTally()  # the races of every example run on the target
        #: What the bookies did on their own in every example (None: no such actor).
        self.bookies_own = BookiesOwnTally() if cfg.internal_client is not None else None
        self._last_progress = 0.0
        self._last_report: SearchProgress | None = None
        #: The longest the search goes without a report (s; the module's, when it started).
        self.interval = PROGRESS_INTERVAL_S
        #: The examples count at which the phase ends (None: bounded by time alone).
        self.examples_until: int | None = None
        #: When (elapsed) the phase ends at the latest, before the budget (the explorer's).
        self.phase_until: float | None = None
        #: The explorer's latest counts (reported in the explorer phase).
        self.explorer: ExplorerProgress | None = None

    def elapsed(self) -> float:
        return self.clock() - self.started

    def out_of_time(self) -> bool:
        budget = self.search.time_budget
        return budget is not None and self.elapsed() >= budget

    def idle(self) -> bool:
        """No more examples should run: a target error, or the budget (not while shrinking)."""
        return self.error is not None or (not self.shrinking and self.out_of_time())

    def count_step(self) -> None:
        self.steps += 1
        if self.progress is not None:
            now = self.clock()
            if now - self._last_progress >= min(STEP_PROGRESS_S, self.interval):
                self.report(now)

    def heartbeat(self) -> None:
        """A report, if none was made for ``interval`` seconds: called wherever the search
        may spend long without running a step on the target."""
        if self.progress is not None:
            now = self.clock()
            if now - self._last_progress >= self.interval:
                self.report(now)

    def explorer_progress(self, counts: ExplorerProgress) -> None:
        """The explorer's counts, told after each of its rounds and while it waits."""
        self.explorer = counts
        self.heartbeat()

    def shown_phase(self) -> str:
        """The phase as reported: ``shrink`` once Hypothesis shrinks a finding."""
        if self.shrinking and self.search.shrink and self.phase in _SHRUNK_IN:
            return "shrink"
        return self.phase

    def _progress(self, now: float) -> SearchProgress:
        phase = self.shown_phase()
        examples_left = (
            None
            if self.examples_until is None or phase == "shrink"
            else max(0, self.examples_until - self.examples)
        )
        return SearchProgress(
            phase,
            self.examples,
            self.steps,
            now - self.started,
            1 if self.first_found else 0,
            budget=self.search.time_budget,
            examples_left=examples_left,
            phase_until=self.phase_until,
            explorer=self.explorer if self.phase == "explorer" else None,
        )

    def report(self, now: float | None = None) -> None:
        if self.progress is None:
            return
        now = self.clock() if now is None else now
        report = self._progress(now)
        self._last_progress, self._last_report = now, report
        self.progress(report)

    def report_if_changed(self) -> None:
        """A report, unless the last one said the same but for the time (the search's last
        word, after the explorer's own, on the model)."""
        if self.progress is None:
            return
        now = self.clock()
        last = self._last_report
        if last is None or replace(last, elapsed=0.0) != replace(self._progress(now), elapsed=0.0):
            self.report(now)

    def example(self, draw: Callable[..., Any]) -> ExampleRun | None:
        """One example on the target, its choices drawn by Hypothesis; None when the search
        is idle (draws nothing)."""
        if self.idle():
            return None
        run = self._run(DataChooser(draw))
        target(float(run.max_danger), label="danger")
        return run

    def replay(self, choices: list[int]) -> ExampleRun | None:
        """One example on the target, its choices given (a proposal, run as it is outside
        Hypothesis); None when the search is idle."""
        if self.idle():
            return None
        return self._run(ReplayChooser(choices, strict=False))

    def _run(self, chooser: Chooser) -> ExampleRun:
        self.heartbeat()  # Hypothesis's own work between examples, shrinking above all
        recorder = RecordingChooser(chooser)
        # Client libraries of the target (kazoo's retry jitter) use the global random
        # generator; Hypothesis forbids strategies to change it, and nothing of the example's
        # own depends on it: put it back as it was.
        saved = random.getstate()
        self.started_examples += 1
        number, phase, sink = self.started_examples, self.phase, self.sink
        try:
            run = run_example(
                self.cfg,
                self.target,
                recorder,
                max_steps=self.search.max_steps,
                on_step=self.count_step,
                on_record=None if sink is None else lambda r: sink.step(number, phase, r),
                races=self.search.races,
                gates=self.search.gates,
            )
        finally:
            random.setstate(saved)
            if sink is not None:
                sink.example_done(number)
        run.choices = recorder.made
        self.examples += 1
        if run.outcome.races is not None:
            self.races.merge(run.outcome.races)
        if self.bookies_own is not None and run.outcome.bookies_own is not None:
            self.bookies_own.merge(run.outcome.bookies_own)
        if self.on_example is not None:
            self.on_example(self.phase, run)
        if run.outcome.verdict is Verdict.UNDECIDED:
            # A target error stops the search, retriable or not: the search itself never tries
            # again; whoever ran it decides on the error's flag (a shard retries the whole
            # attempt: conformance/distributed/shard.py).
            self.error = run.outcome.error
        elif run.finding:
            self.shrinking = True
            if self.best is None or len(run.outcome.steps) < len(self.best.outcome.steps):
                self.best = run
            if self.first_found is None:
                self.first_found = (self.phase, self.elapsed(), len(run.outcome.steps))
        return run

    def hypothesis_settings(
        self, phases: tuple[Phase, ...], db: ExampleDatabase, max_examples: int = 0
    ) -> Any:
        return settings(
            max_examples=max_examples or self.search.max_examples,
            phases=phases,
            database=db,
            deadline=None,
            suppress_health_check=list(HealthCheck),
            derandomize=False,
            report_multiple_bugs=False,
            # Quiet: Hypothesis' own reports are not ours to print. When the budget runs out
            # mid-phase, example() draws nothing and Hypothesis calls that inconsistent data
            # generation (a Flaky, handled in run_search) and printed "You can reproduce this
            # failure by adding @seed(...)" for a run that failed nothing.
            verbosity=Verbosity.quiet,
        )


def _failing(run: ExampleRun | None) -> bool:
    return run is not None and run.finding


def run_search(
    cfg: ModelConfig,
    target_: Target,
    search: SearchSettings,
    *,
    database: ExampleDatabase | None = None,
    progress: Callable[[SearchProgress], None] | None = None,
    clock: Callable[[], float] = time.monotonic,
    on_example: Callable[[str, ExampleRun], None] | None = None,
    sink: StepSink | None = None,
) -> SearchReport:
    """Search ``cfg`` on an opened target. ``database``: where failures are kept across runs
    (default: in memory, forgotten after the run). ``on_example(phase, run)`` sees every
    example run on the target (phases: replay, hypothesis, corpus, shrink, minimise);
    ``sink`` every step of every example, as soon as it is judged."""
    # pragma: no mutate block
    # Outside `make mutate`'s mutmut scope: the phases' orchestration (each mutant would rerun
    # whole searches). The verdict is conclude()'s (conformance/search/verdict.py, mutated);
    # the error paths decided here are tools/verdict_mutations.py's, applied one by one.
    state = _Search(cfg, target_, search, progress, clock, on_example, sink)
    db = database if database is not None else InMemoryExampleDatabase()
    if search.races and not supports_races(target_):
        raise ValueError(
            f"the {target_.name} target cannot put requests in flight together: no races"
        )
    if search.gates and not (search.races and supports_gates(target_)):
        raise ValueError(
            f"gates hold a bookie's threads in a race: --races, on a target whose bookies load "
            f"the gate agent (--target local --gates), not {target_.name}"
        )
    key = database_key(cfg, target_.name, search.max_steps, races=search.races, gates=search.gates)
    strategy = st.composite(lambda draw: state.example(draw))()
    notes: list[str] = []

    def run_find(
        phases: tuple[Phase, ...], seeded: bool, *, restart: int = 0, max_examples: int = 0
    ) -> ExampleRun | None:
        # A seeded run is reproducible but Hypothesis then ignores the database; the reuse
        # runs read it (and shrink with Hypothesis's own randomness). ``restart``: the how
        # many'th start of a phase Hypothesis stopped (another seed); ``max_examples``: its
        # examples, if fewer than the budget's.
        if not search.shrink:
            phases = tuple(p for p in phases if p is not Phase.shrink)
        try:
            found: ExampleRun | None = find(
                strategy,
                _failing,
                settings=state.hypothesis_settings(phases, db, max_examples),
                random=random.Random(search.seed + 7919 * restart) if seeded else None,
                database_key=key,
            )
        except NoSuchExample:
            return None
        except Flaky:
            # Hypothesis saw the same choices behave differently: we stopped running examples
            # (a target error, or the budget), or the target answered differently, which a
            # race may (its answers decide which of the model's orders the next steps follow).
            if state.best is not None:
                if not state.idle():
                    notes.append(
                        "the target answered the same example differently on a replay "
                        "(nondeterminism); the finding is the shortest failing run seen"
                    )
                return state.best
            if not state.idle():
                state.interruptions += 1
            return None
        return found

    def save_proposal(trace: list[Step[State, Label]]) -> None:
        # One choice more than the example reads: Hypothesis takes an entry that replays
        # exactly for an example it has already shrunk, and would not shrink it again.
        encoded = encode_trace(cfg, trace, search.max_steps, races=search.races)
        db.save(key, choices_bytes([*encoded, 0]))

    def propose(trace: list[Step[State, Label]]) -> ExampleRun | None:
        """Hand a model trace to Hypothesis: replayed on the target, then shrunk."""
        save_proposal(trace)
        return keep(run_find((Phase.reuse, Phase.shrink), seeded=False))

    def replay_corpus(archive: list[list[Step[State, Label]]]) -> ExampleRun | None:
        def rank(trace: list[Step[State, Label]]) -> tuple[int, int]:
            return (-max(danger(cfg, s.state) for s in trace), -len(trace))

        # A trace with the bookies' own steps (their recovery of a limbo ledger) cannot be
        # replayed: no example can make a bookie's service act; the judge observes it.
        fitting = sorted(
            (
                t
                for t in archive
                if 1 < len(t) <= search.max_steps + 1 and not bookies_own_steps_in(cfg, t)
            ),
            key=rank,
        )
        races: list[list[int]] = []
        if search.races:
            # The races the model says matter, wherever the explorer's traces reach them
            # (those where each answer depends on the order first), before the traces.
            races = race_proposals(
                cfg,
                fitting,
                search.max_steps,
                limit=search.max_examples,
                should_stop=idle,
                gates=search.gates,
            )
        # While the time budget lasts, every archived corner (the most dangerous first): the
        # explorer's archive holds thousands, and a corpus cut at ``max_examples`` left most of
        # a cluster search's budget unused (issue 32: a shard's target idle after 50 traces).
        # Without a time budget, ``max_examples`` bounds the corpus. Encoded as they come.
        corpus = (
            fitting
            if search.corpus_until_time_is_up(target_.name)
            else fitting[: search.max_examples]
        )
        state.examples_until = state.examples + len(races) + len(corpus)
        state.report()
        return replay_proposals(
            itertools.chain(
                races,
                (
                    encode_trace(cfg, trace, search.max_steps, races=search.races)
                    for trace in corpus
                ),
            )
        )

    def replay_proposals(proposals: Iterable[list[int]]) -> ExampleRun | None:
        # Each runs as it is, outside Hypothesis: a replay that leaves its proposal's path (a
        # race's answers decide which of the model's orders the next steps follow) is another
        # example, not a reason for Hypothesis to stop the phase. What fails is shrunk.
        for choices in proposals:
            run = state.replay(choices)
            if run is None:
                return None  # idle: the budget, or a target error
            if run.finding:
                # One choice more than the example reads: Hypothesis takes an entry that
                # replays exactly for an example it has already shrunk, and would not shrink
                # it again.
                db.save(key, choices_bytes([*run.choices, 0]))
                shrunk = run_find((Phase.reuse, Phase.shrink), seeded=False)
                if shrunk is None:
                    notes.append(
                        "the failing example did not fail when Hypothesis ran it again (a "
                        "race's answers need not repeat): the finding is the run as first "
                        "seen, unshrunk"
                    )
                return keep(shrunk if shrunk is not None else run)
        return None

    def replay_gate_schedules() -> ExampleRun | None:
        """Every gate schedule of each pair of request kinds the model's traces race at one
        bookie (:func:`gate_proposals`), before anything is drawn: the explorer walks the
        model for :data:`GATE_EXPLORER_STEPS` steps to find where such races happen."""
        explored = explore_portfolio(
            cfg,
            seed=search.seed,
            depth=search.max_steps,
            workers=1,
            should_stop=state.out_of_time,
            max_steps=GATE_EXPLORER_STEPS,
        )
        state.explorer_steps += explored.steps
        fitting = [
            t
            for t in explored.archive or []
            if 1 < len(t) <= search.max_steps + 1 and not bookies_own_steps_in(cfg, t)
        ]
        proposals = gate_proposals(cfg, fitting, search.max_steps, should_stop=idle)
        state.examples_until = state.examples + len(proposals)
        state.report()
        return replay_proposals(proposals)

    def idle() -> bool:
        state.heartbeat()  # asked while the corpus's races are sought in the model
        return state.idle()

    def keep(run: ExampleRun | None) -> ExampleRun | None:
        if run is not None:
            db.save(key, choices_bytes(run.choices))
        return run

    found = None
    if any(True for _ in db.fetch(key)):
        state.phase = "replay"
        state.report()
        found = run_find((Phase.reuse,), seeded=False)
    if found is None and search.gates and not state.idle():
        state.phase = "gates"
        state.report()
        found = replay_gate_schedules()
        state.examples_until = None
    if found is None and not state.idle():
        state.phase = "hypothesis"
        first = state.examples
        state.examples_until = first + search.max_examples
        state.report()
        # Bounded: a restart follows an interruption, and each takes examples to happen.
        for restart in range(search.max_examples):
            interrupted = state.interruptions
            left = search.max_examples - (state.examples - first)
            found = keep(
                run_find(
                    (Phase.generate, Phase.target, Phase.shrink),
                    seeded=True,
                    restart=restart,
                    max_examples=left,
                )
            )
            # Hypothesis stops a phase when a replay takes another path (Flaky, no failure):
            # start it again with another seed while examples and time are left.
            if found is not None or state.interruptions == interrupted or state.idle():
                break
            if state.examples - first >= search.max_examples:
                break
        state.examples_until = None
        if state.interruptions:
            notes.append(
                f"Hypothesis stopped {state.interruptions} time(s) when a replay took another "
                "path than the first run of its choices (a race's answers need not repeat); "
                "the phase went on with another seed"
            )
    if found is None and state.error is None and search.explore and not state.out_of_time():
        state.phase = "explorer"
        # On a real cluster the explorer gets half of what is left; its archive of distinct
        # corners is then replayed on the cluster (below).
        on_model = target_.name == "model"
        remaining = None if search.time_budget is None else search.time_budget - state.elapsed()
        explorer_until = (
            None
            if remaining is None or on_model or search.explorer_steps is not None
            else state.elapsed() + remaining / 2
        )
        state.phase_until = explorer_until
        state.report()

        def explorer_done() -> bool:
            return state.out_of_time() or (
                explorer_until is not None and state.elapsed() >= explorer_until
            )

        explored = explore_portfolio(
            cfg,
            seed=search.seed,
            depth=search.max_steps,
            workers=search.explorer_workers,
            should_stop=explorer_done,
            max_steps=search.explorer_steps,
            progress=state.explorer_progress,
        )
        state.explorer_steps += explored.steps
        # Its last word: every worker's counts, done.
        state.explorer = ExplorerProgress(
            search.explorer_workers,
            0,
            explored.walks,
            explored.steps,
            explored.cells or 0,
            search.explorer_steps,
        )
        state.report()
        state.phase_until = None
        if explored.violation is not None and bookies_own_steps_in(cfg, explored.violation.trace):
            # The model breaks an invariant only with the bookies' own steps, which no example
            # can force on a target: whatever the target does, this run cannot say clean.
            state.error = (
                "the explorer's trace breaks the model's invariants "
                f"({', '.join(explored.violation.invariants)}) with the bookies' own recovery "
                "steps, which no example can force on a target: undecided (the trace is the "
                "model's finding: bkconform model)"
            )
        elif explored.violation is not None:
            trace = explored.violation.trace
            state.first_found = ("explorer", state.elapsed(), len(trace) - 1)
            state.phase = "shrink"
            state.shrinking = True
            state.report()
            found = propose(trace)
            if found is None and state.error is None:
                # The model broke an invariant and the replay did not: whatever the target
                # did, this run cannot say it is clean.
                state.error = (
                    "the explorer's trace breaks the model's invariants, but replayed on the "
                    "target it did not fail: a bug in bkconform's replay (please report it)"
                )
        elif not on_model and explored.archive and not state.idle():
            # The model is clean here, but the cluster may still answer wrongly in the deep
            # corners the explorer reached: replay the most dangerous of them on the cluster.
            state.phase = "corpus"
            found = replay_corpus(explored.archive)
    # Hypothesis deletes runs of choices; a message's send, delivery and receipt are apart in
    # the trace. Causal deletion on the model proposes shorter traces; the target decides.
    for _ in range(MINIMISE_ROUNDS if search.shrink else 0):
        if found is None or found.outcome.verdict is not Verdict.VIOLATION:
            break
        if bookies_own_steps_in(cfg, found.outcome.trace):
            break  # no shorter trace can force the bookies' own steps
        shorter = minimise(cfg, found.outcome.trace)
        if len(shorter) >= len(found.outcome.trace):
            break
        state.phase = "minimise"
        state.examples_until = None
        again = propose(shorter)
        if again is None or len(again.outcome.steps) >= len(found.outcome.steps):
            break
        found = again
    state.report_if_changed()  # the search's last word
    tally = SearchTally(
        state.examples,
        state.steps,
        state.elapsed(),
        state.explorer_steps,
        state.races if state.races.races else None,
        state.bookies_own,
    )
    return conclude(found, state.first_found, state.error, tally, notes, search.describe_budget())


def replay_choices(
    cfg: ModelConfig,
    target_: Target,
    choices: list[int],
    *,
    max_steps: int,
    on_record: Callable[[StepRecord], None] | None = None,
    races: bool = False,
    race_jitter: Callable[[], float] | None = None,
    gates: bool = False,
) -> ExampleRun:
    """Run one recorded example again on an opened target (``on_record``, ``races``,
    ``race_jitter``, ``gates``: as run_example)."""
    run = run_example(
        cfg,
        target_,
        ReplayChooser(choices, strict=False),
        max_steps=max_steps,
        on_record=on_record,
        races=races,
        race_jitter=race_jitter,
        gates=gates,
    )
    run.choices = list(choices)
    return run
