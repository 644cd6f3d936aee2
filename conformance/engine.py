"""Execution: model transitions carried out on a target, step by step, and judged.

For each step the engine looks the step's action up in the action table
(:mod:`model.bookkeeper.action_table`) and turns it into at most one operation
(:mod:`conformance.operations`), which the target carries out with ``invoke``:

- a bookie's answer (``Effect.ANSWER``): :class:`Deliver` of the request it processes; the real
  answer is compared with the model's reply (a mismatch is a *divergence*); if the model loses
  the reply, the real answer is discarded;
- a client step that sends or receives (``Effect.NONE``): nothing on the wire (requests wait in
  the model's outbox until their bookie's step; answers were taken at the bookie's step);
- a metadata write (``Effect.METADATA_WRITE``): :class:`CreateLedger` or :class:`WriteMetadata`,
  a compare-and-set whose end is compared with the one the table gives the action;
- a crash (``Effect.CRASH``): :class:`Crash`, the bookie restarts with its data lost.

After each step the model's invariants are checked (a broken one is a *violation*). At the end,
each bookie's stored entries and the ledger metadata are compared with the model's state.

The engine keeps every model state still possible (:mod:`conformance.possible_states`): a race
that more than one serial order explains leaves one state per order, each step is taken from
each of them, an answer drops those it contradicts, and a divergence is an answer that none of
them predicts. Without races there is one state, and the engine is the step-by-step judge above.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from conformance.gated_races import GateSchedule
from conformance.observations import Observation, differences, predicted
from conformance.operations import (
    Crash,
    CreateLedger,
    Deliver,
    FreshLedger,
    LedgerView,
    Operation,
    WriteMetadata,
    operation_record,
)
from conformance.possible_states import (
    MAX_POSSIBLE_STATES,
    InternalSearchExhausted,
    Possible,
    after_internal_steps,
    certain_violations,
    corresponding,
    distinct,
    with_internal_steps_earlier,
)
from conformance.races import (
    RaceTally,
    Restart,
    describe_request,
    explain_from,
    is_bookie_step,
    is_restart_step,
    member_of,
)
from conformance.targets.base import (
    MetadataChangedOutside,
    MetadataSeen,
    Target,
    TargetError,
    TargetSnapshot,
    invoke_concurrently,
)
from conformance.verdict import Verdict, run_verdict
from model.bookkeeper.action_table import (
    Actor,
    Effect,
    Move,
    Phase,
    WriteEnd,
    spec_action,
    the_action,
)
from model.bookkeeper.actions import (
    Label,
    Transition,
    bookie_internal,
    driven_successors,
    init_state,
)
from model.bookkeeper.config import ModelConfig
from model.bookkeeper.invariants import invariants_for, violated
from model.bookkeeper.records import (
    STATUS_CLOSED,
    STATUS_NAMES,
    AddEntryRequest,
    FenceRequest,
    ReadRequest,
    State,
    bookies_of,
)
from model.bookkeeper.render import describe_message, describe_step
from model.search.bfs import Step


@dataclass
class StepRecord:
    """One line of ``history.jsonl``."""

    index: int
    action: str
    description: str
    operation: dict[str, Any] | None = None  # what the target was asked to do
    request: str | None = None
    predicted: dict[str, Any] | None = None
    observed: dict[str, Any] | None = None
    divergence: list[str] = field(default_factory=list)
    violations: list[str] = field(default_factory=list)
    error: str | None = None  # the target failed: this step decided nothing
    #: A step of a race (:mod:`conformance.races`): which race, its place in the serial
    #: order that explained it, and when its request was sent and answered (ms from the
    #: race's first send).
    race: dict[str, Any] | None = None
    #: How many model states are still possible after this step, where more than one is
    #: (:mod:`conformance.possible_states`); None: one.
    possible_states: int | None = None
    #: The bookies' own steps (``bookie_recovers_limbo``) that explain this step's
    #: observation, taken before it (their recovery of a limbo ledger, by themselves).
    bookies_own: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if v not in (None, [])}


@dataclass
class Outcome:
    """``verdict``: clean, violation, divergence or undecided (the target failed us)."""

    verdict: Verdict
    steps: list[StepRecord]
    trace: list[Step[State, Label]]
    violations: list[str] = field(default_factory=list)
    divergences: list[str] = field(default_factory=list)
    error: str | None = None
    note: str | None = None
    #: For an error: what lay under it (the adapter's or the library's exception, as
    #: ``Type: message``) and whether trying again could help, for the report.
    cause: str | None = None
    retriable: bool | None = None
    #: The run's races (requests in flight together) and their judging; None: it raced none.
    races: RaceTally | None = None
    #: What the bookies did on their own (``bookie_recovers_limbo``); None: the model has no
    #: such actor.
    bookies_own: BookiesOwnTally | None = None

    @property
    def exit_code(self) -> int:
        return self.verdict.exit_code


@dataclass(frozen=True)
class _Judged:
    """An observation judged, kept to be judged again from an earlier state (the bookies' own
    steps taken before it: :func:`~conformance.possible_states.with_internal_steps_earlier`):
    the states still possible before it, and what was observed: a harness step's answer
    (``label``; ``observed`` None: nothing of it seen), the metadata read where the harness
    was to write (``seen``), or the run's end (``snapshot``). A race (``barrier``) is not
    judged again: nothing earlier than it is tried."""

    before: tuple[Possible, ...]
    index: int
    label: Label | None = None
    observed: Observation | None = None
    seen: MetadataSeen | None = None
    snapshot: TargetSnapshot | None = None
    barrier: bool = False


class Execution:
    """One run of the model on one target. ``apply`` steps; ``finish`` judges the end."""

    def __init__(
        self,
        cfg: ModelConfig,
        target: Target | None,
        on_record: Callable[[StepRecord], None] | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        """``target`` None: a run whose steps are observed on the real system
        (``apply_observed``), with no target to invoke or read. ``on_record`` is called with
        each step's record as soon as the step is judged (the run directory streams them to
        ``history.jsonl``). ``sleep``: how the end waits for the bookies' own steps to settle
        (a test's is instant)."""
        self.cfg = cfg
        self._sleep = sleep
        self.target = target
        self.on_record = on_record
        #: Every model state still possible, the primary (the explanation found first) first.
        self.possible: list[Possible] = [Possible.initial(init_state(cfg))]
        self.records: list[StepRecord] = []
        self.invariants = invariants_for(cfg)
        self.violations: list[str] = []
        self.divergences: list[str] = []
        self.error: str | None = None
        self.failure: TargetError | None = None  # the target error behind ``error``
        self.race_tally = RaceTally()
        self.bookies_own = BookiesOwnTally()
        #: Every observation judged, when the bookies act on their own (``_Judged``).
        self._judged: list[_Judged] = []

    @property
    def state(self) -> State:
        """The primary state still possible: steps are chosen from it."""
        return self.possible[0].state

    @state.setter
    def state(self, state: State) -> None:
        """Start from ``state`` alone (a test's prefix), the trace as it is."""
        self.possible = [Possible(state, self.possible[0].trace)]
        self._judged.clear()

    @property
    def trace(self) -> list[Step[State, Label]]:
        """The primary state's trace."""
        return list(self.possible[0].trace)

    @property
    def stopped(self) -> bool:
        """A finding or an error ends the run: after a divergence the model no longer
        describes the target, and after a violation the story has been told."""
        return bool(self.violations or self.divergences or self.error)

    def begin(self) -> bool:
        """Give the example a fresh ledger on the target; False (and the error kept) when the
        target could not: the example then decides nothing."""
        if self.target is None:
            return True
        try:
            self.target.invoke(FreshLedger())
        except TargetError as exc:
            self.error, self.failure = str(exc), exc
            return False
        return True

    def enabled(self) -> list[Transition]:
        return driven_successors(self.cfg, self.state)

    def apply(self, transition: Transition) -> StepRecord:
        """Take a step chosen from the model: its operation runs on the target, and what the
        target answers is judged."""
        return self._step(transition, self._on_target)

    def apply_race(
        self,
        transitions: Sequence[Transition],
        offsets_s: Sequence[float] = (),
        gates: GateSchedule | None = None,
    ) -> list[StepRecord]:
        """Send the requests of ``transitions`` (bookie steps enabled now, at most one per
        request) to the target together, each on a connection of its own, ``offsets_s[i]``
        seconds after the first (none: all at once), and judge the answers by the serial
        orders the model allows (:func:`conformance.races.explain`). Explained: the model
        takes the steps of the explaining order, one record each. Not: a divergence naming the
        requests and the orders tried; the run stops. ``gates``: two requests to one bookie
        run by that gate schedule (:mod:`conformance.gated_races`): each record says what the
        gate did to its request, and the run's race tally counts what the schedule reached."""
        if self.target is None:
            raise TargetError("this run has no target: its steps are observed, not invoked")
        if not all(is_bookie_step(t) or is_restart_step(t) for t in transitions):
            raise ValueError("only bookie steps and restarts race")
        requests = [member_of(t) for t in transitions]
        if len(requests) < 2 or len(set(requests)) != len(requests):
            raise ValueError(f"a race needs two or more distinct requests, got {requests}")
        if sum(isinstance(r, Restart) for r in requests) > 1:
            raise ValueError("a race holds at most one restart")
        ops = [operation_for(t.label, self.state, t.state)[0] for t in transitions]  # type: ignore[index]
        offsets = list(offsets_s) or [0.0] * len(ops)
        try:
            answers = invoke_concurrently(self.target, ops, offsets, gates)  # type: ignore[arg-type]
        except TargetError as exc:
            self.error, self.failure = str(exc), exc
            return []
        explanation = explain_from(self.cfg, [p.state for p in self.possible], requests, answers)
        race = self.race_tally.races + 1
        first_sent = min(a.invoked for a in answers)
        if gates is not None:
            reports = [a.gate for a in answers]
            if any(r is None for r in reports):
                self.error = "the target ran a gated race without saying what its gates did"
                self.failure = None
                return []
            self.race_tally.gates.add(requests, gates, reports)  # type: ignore[arg-type]

        def timing(i: int) -> dict[str, Any]:
            gate = answers[i].gate
            return {
                "race": race,
                "requests": len(requests),
                "sent_ms": round((answers[i].invoked - first_sent) * 1000, 3),
                "answered_ms": round((answers[i].completed - first_sent) * 1000, 3),
                "orders_tried": explanation.tried,
                **({} if gate is None else {"gate": gate.describe()}),
            }

        if not explanation.explained:
            self.race_tally.add(explanation, len(self.possible))
            race_record = {
                "race": race,
                "requests": len(requests),
                **({} if gates is None else {"gate_schedule": gates.as_dict()}),
                "orders_tried": explanation.tried,
                "answers": [
                    {
                        "request": describe_request(requests[i]),
                        **{k: v for k, v in timing(i).items() if k.endswith("_ms") or k == "gate"},
                        "observed": _answer_dict(answers[i].observation),
                    }
                    for i in range(len(requests))
                ],
                "orders": explanation.failures,
            }
            request = explanation.describe_order(range(len(ops)))
            return [self.no_step("Race", explanation.finding(), request=request, race=race_record)]
        # Every explaining order from every state still possible leaves a state: all are kept.
        after = []
        for explaining in explanation.explaining:
            possible = self.possible[explaining.start]
            for _i, step in explaining.steps:
                possible = possible.then(self.cfg, self.invariants, step)
            after.append(possible)
        kept = distinct(after)
        self.race_tally.add(explanation, len(kept))
        # The records tell the first explaining order's story.
        first = explanation.explaining[0]
        lost = [
            describe_request(requests[i])
            for i in range(len(requests))
            if answers[i].observation is None
        ]
        records = []
        state = self.possible[first.start].state
        for position, (i, step) in enumerate(first.steps, start=1):
            race_info = {**timing(i), "position": position}
            if len(explanation.explaining) > 1:
                race_info["orders_explaining"] = len(explanation.explaining)
            if lost and isinstance(requests[i], Restart):
                race_info["lost"] = lost  # no answer: the restart lost them, as the model's
            records.append(self._race_record(step, state, answers[i].observation, race_info))
            state = step.state
        if len(kept) > MAX_POSSIBLE_STATES:
            self.error = (
                f"{len(kept)} model states explain the answers so far, more than the "
                f"{MAX_POSSIBLE_STATES} the judge keeps: this run decides nothing (it does not "
                "guess among them)"
            )
            self.failure = None
            records[-1].error = self.error
        else:
            self.possible = kept
        self._conclude_step(records[-1])
        for record in records:
            self._record(record)
        self._keep_judged(_Judged((), records[-1].index, barrier=True))
        return records

    def _race_record(
        self,
        step: Transition,
        before: State,
        observed: Observation | None,
        race: dict[str, Any],
    ) -> StepRecord:
        """The record of one step of an explaining order (its answer is the one observed)."""
        label = step.label
        record = StepRecord(len(self.records) + 1, label.action, describe_step(label), race=race)
        record.index += int(race["position"]) - 1
        planned = operation_for(label, before, step.state)
        assert planned is not None and observed is not None, label
        op, expected = planned
        record.operation = operation_record(op)
        record.request = describe_message(label.received) if label.received else None
        record.observed = observed.as_dict()
        if expected is not None:
            record.predicted = expected.as_dict()
        return record

    def apply_observed(
        self,
        transition: Transition,
        *,
        observed: Observation | None = None,
        request: str | None = None,
    ) -> StepRecord:
        """Take a step that already happened on the real system (the Java client's runs: its
        frames at the proxies, its metadata read back): ``observed`` is what was seen of its
        answer, judged against the model's prediction as ``apply`` judges a target's; None:
        nothing of it was seen. ``request`` says what was seen happen."""

        def judge(
            label: Label, before: State, after: State, record: StepRecord
        ) -> Observation | None:
            planned = operation_for(label, before, after)
            if planned is not None:
                record.operation = operation_record(planned[0])
            record.request = request
            if observed is not None:
                record.observed = observed.as_dict()
            return observed

        return self._step(transition, judge)

    def no_step(
        self,
        action: str,
        finding: str,
        *,
        request: str | None = None,
        race: dict[str, Any] | None = None,
    ) -> StepRecord:
        """What happened on the real system is no step the model allows from here: a
        divergence, recorded as a step of its own; the story cannot go on."""
        record = StepRecord(
            len(self.records) + 1,
            action,
            "(no model step)",
            request=request,
            divergence=[finding],
            race=race,
        )
        self.divergences.append(finding)
        self._record(record)
        return record

    def add_divergence(self, finding: str, *, on_last_step: bool = True) -> None:
        """A divergence found by looking at more than one step (the Java client's frames
        against the spec's client, its close against the model's)."""
        self.divergences.append(finding)
        if on_last_step and self.records:
            self.records[-1].divergence.append(finding)

    def add_violation(self, finding: str) -> None:
        """An invariant broken on the real system, seen by reading it rather than in the
        model's state (an entry the Java client acknowledged that no bookie of its write set
        returns): the verdict is a violation whatever the model's story says."""
        if finding not in self.violations:
            self.violations.append(finding)
        if self.records:
            self.records[-1].violations.append(finding)

    def _step(
        self,
        transition: Transition,
        observe: Callable[[Label, State, State, StepRecord], Observation | None],
    ) -> StepRecord:
        """Take ``transition`` (from the primary state): ``observe`` carries it out (or reads
        what happened) and returns what was seen of its answer (None: nothing to compare); the
        answer is judged from every state still possible."""
        label, before = transition.label, self.state
        kept_before = tuple(self.possible)
        record = StepRecord(len(self.records) + 1, label.action, describe_step(label))
        try:
            observed = observe(label, before, transition.state, record)
        except MetadataChangedOutside as exc:
            if self.cfg.internal_client is None:
                self.error = record.error = str(exc)
                self.failure = exc
                observed = None
            else:
                judged = _Judged(kept_before, record.index, seen=exc.seen)
                self._metadata_changed_outside(exc, record, judged)
                self._keep_judged(judged)
                return record
        except TargetError as exc:
            self.error = record.error = str(exc)
            self.failure = exc
            observed = None
        judged = _Judged(kept_before, record.index, label=label, observed=observed)
        self._judge(transition, observed, record, judged)
        self._conclude_step(record)
        self._record(record)
        self._keep_judged(judged)
        return record

    def _keep_judged(self, judged: _Judged) -> None:
        if self.cfg.internal_client is not None:
            self._judged.append(judged)

    def _advance(self, possibles: Sequence[Possible], judged: _Judged) -> list[Possible]:
        """The states ``judged``'s observation leaves from ``possibles``, as the step judged it
        (the bookies' own steps searched from them when none explains it); empty: none.
        :class:`InternalSearchExhausted` from that search."""
        if judged.label is None:
            seen, snapshot = judged.seen, judged.snapshot

            def accept(p: Possible) -> bool:
                if seen is not None:
                    return _metadata_is(p.state, seen)
                assert snapshot is not None
                return not state_differences(self.cfg, p.state, snapshot)

            found = [p for p in possibles if accept(p)]
            if found:
                return found
            return distinct(after_internal_steps(self.cfg, self.invariants, possibles, accept))
        label, observed = judged.label, judged.observed

        def survivors(states: Sequence[Possible]) -> list[Possible]:
            return [
                possible.then(self.cfg, self.invariants, step)
                for possible in states
                for step in corresponding(self.cfg, possible.state, label)
                if not _judged(step, possible.state, observed)[1]
            ]

        kept = survivors(possibles)
        if not kept and observed is not None:
            kept = survivors(
                after_internal_steps(
                    self.cfg,
                    self.invariants,
                    possibles,
                    lambda p: bool(survivors([p])),
                )
            )
        return distinct(kept)

    def _explain_earlier(self, failing: _Judged, record: StepRecord) -> list[Possible] | None:
        """The states that explain ``failing`` and every observation before it with the
        bookies' own steps placed before an earlier one (4.18.0 starts their recovery as the
        bookie comes back; the harness may have changed a bookie since). Empty: none does (a
        divergence); None, and the run undecided, when the search passed a bound."""
        judged = [*self._judged, failing]
        barriers = [n for n, j in enumerate(judged) if j.barrier]
        first = barriers[-1] + 1 if barriers else 0
        window = judged[first:]
        bounded: list[str] = []

        def replay(states: Sequence[Possible], k: int) -> list[Possible]:
            # Every state the bookies' steps reach is judged at once: the observations drop
            # most of them, and only what survives them all must fit in the judge's bound.
            kept = list(states)
            for later in window[k:]:
                try:
                    kept = self._advance(kept, later)
                except InternalSearchExhausted as exc:
                    bounded.append(str(exc))
                    return []
                if not kept:
                    return []
            if len(kept) > MAX_POSSIBLE_STATES:
                bounded.append(
                    f"{len(kept)} model states explain it, more than the {MAX_POSSIBLE_STATES} "
                    "the judge keeps"
                )
                return []
            return kept

        try:
            k, explained = with_internal_steps_earlier(
                self.cfg, self.invariants, [j.before for j in window], replay
            )
        except InternalSearchExhausted as exc:
            bounded.append(str(exc))
            explained = []
        if not explained:
            if bounded:
                self.error = record.error = (
                    "could not tell what the bookies did on their own: no sequence of their "
                    f"steps explains the observation from the states kept, and placed earlier "
                    f"the search passed a bound ({bounded[0]}); this run decides nothing"
                )
                self.failure = None
                return None
            return []
        placed = window[k].index
        since = min(len(p.trace) for p in window[k].before)
        own = [
            describe_step(step.label)
            for step in explained[0].trace[since:]
            if step.label is not None and bookie_internal(self.cfg, step.label)
        ]
        record.bookies_own = [f"earlier, before step {placed}:", *own]
        self.bookies_own.explained += 1
        self.bookies_own.steps += len(own)
        return explained

    def _metadata_changed_outside(
        self, exc: MetadataChangedOutside, record: StepRecord, judged: _Judged
    ) -> StepRecord:
        """The ledger's metadata was written by someone the harness does not drive, before the
        step's own write: the bookies' own recovery, if some sequence of its steps from a
        state still possible reaches that metadata. Those states are kept and the step is not
        taken (its write was not made: the harness chooses again from the new states); none:
        a divergence, for the bookies' own recovery is in the model."""
        seen = exc.seen
        record.action, record.description = BOOKIES_OWN, "(no model step: the bookies' own)"
        record.observed = {
            "kind": "metadata",
            "status": seen.status,
            "version": seen.version,
            "fragments": [[first, list(bookies)] for first, bookies in seen.fragments],
            **({"last_entry": seen.last_entry} if seen.last_entry is not None else {}),
        }
        explained = self._after_internal_steps(lambda p: _metadata_is(p.state, seen), record)
        if explained is None:
            return self._concluded(record)
        if not explained:
            explained = self._explain_earlier(judged, record)
            if explained is None:
                return self._concluded(record)
        if not explained:
            record.divergence = [
                f"the ledger's metadata was written outside the harness ({seen.status} at "
                f"version {seen.version}), and no sequence of the bookies' own recovery steps "
                "from a model state still possible writes it"
            ]
            return self._concluded(record)
        self.possible = explained
        return self._concluded(record)

    def _after_internal_steps(
        self, accept: Callable[[Possible], bool], record: StepRecord
    ) -> list[Possible] | None:
        """The states, one each, the bookies' own steps lead to that ``accept`` takes (their
        story on ``record``, counted in ``bookies_own``); None, and the run undecided, when the
        search for them passed its bound."""
        try:
            explained = distinct(
                after_internal_steps(self.cfg, self.invariants, self.possible, accept)
            )
        except InternalSearchExhausted as exc:
            self.error = record.error = (
                f"could not tell what the bookies did on their own: {exc}; this run decides nothing"
            )
            self.failure = None
            return None
        if len(explained) > MAX_POSSIBLE_STATES:
            self.error = record.error = (
                f"{len(explained)} model states of the bookies' own steps explain "
                f"the observation, more than the {MAX_POSSIBLE_STATES} the judge keeps: this "
                "run decides nothing"
            )
            self.failure = None
            return None
        if explained:
            own = _internal_tail(self.cfg, explained[0].trace)
            record.bookies_own = [describe_step(label) for label in own]
            self.bookies_own.explained += 1
            self.bookies_own.steps += len(own)
        return explained

    def _concluded(self, record: StepRecord) -> StepRecord:
        self._conclude_step(record)
        self._record(record)
        return record

    def _judge(
        self,
        transition: Transition,
        observed: Observation | None,
        record: StepRecord,
        judged: _Judged,
    ) -> None:
        """Advance every state still possible by the step, keeping those whose prediction is
        the answer observed; none: a divergence, and the primary's step is taken."""
        survivors: list[tuple[Possible, Transition, Observation | None]] = []
        primary_differences: list[str] = []
        for n, possible in enumerate(self.possible):
            steps = (
                [transition]
                if n == 0
                else corresponding(self.cfg, possible.state, transition.label)
            )
            for step in steps:
                expected, diffs = _judged(step, possible.state, observed)
                if n == 0:
                    primary_differences = diffs
                    if expected is not None:
                        record.predicted = expected.as_dict()
                if not diffs:
                    survivors.append(
                        (possible.then(self.cfg, self.invariants, step), step, expected)
                    )
        if not survivors and self.cfg.internal_client is not None and observed is not None:
            # What the bookies did on their own (their recovery of a limbo ledger) may be what
            # the answer shows: the states their steps lead to, judged the same way.
            label = transition.label

            def explains(possible: Possible) -> bool:
                return any(
                    not _judged(step, possible.state, observed)[1]
                    for step in corresponding(self.cfg, possible.state, label)
                )

            explained = self._after_internal_steps(explains, record)
            if explained is None:
                self.possible = [self.possible[0].then(self.cfg, self.invariants, transition)]
                return
            for possible in explained:
                for step in corresponding(self.cfg, possible.state, label):
                    expected, diffs = _judged(step, possible.state, observed)
                    if not diffs:
                        survivors.append(
                            (possible.then(self.cfg, self.invariants, step), step, expected)
                        )
        if not survivors and self.cfg.internal_client is not None and observed is not None:
            earlier = self._explain_earlier(judged, record)
            if earlier is None:
                self.possible = [self.possible[0].then(self.cfg, self.invariants, transition)]
                return
            if earlier:
                last = earlier[0].trace[-1].label
                assert last is not None
                record.action, record.description = last.action, describe_step(last)
                self.possible = earlier
                return
        if not survivors:
            if len(self.possible) > 1:
                primary_differences = [
                    f"{d} (no other of the {len(self.possible)} model states still possible "
                    "predicts the answer)"
                    for d in primary_differences
                ]
            record.divergence = primary_differences
            self.possible = [self.possible[0].then(self.cfg, self.invariants, transition)]
            return
        _kept, step, expected = survivors[0]
        if step is not transition:  # the primary was dropped: the record tells the survivor's
            record.action, record.description = step.label.action, describe_step(step.label)
            record.predicted = expected.as_dict() if expected is not None else None
        self.possible = distinct(possible for possible, _step, _expected in survivors)

    def _conclude_step(self, record: StepRecord) -> None:
        """After a step: the invariants broken for certain (on every trace still possible),
        the divergences, and how many states are still possible."""
        certain = certain_violations(self.possible)
        now = [v for v in violated(self.cfg, self.state, self.invariants) if v in certain]
        newly = [v for v in sorted(certain) if v not in now and v not in self.violations]
        record.violations = now + newly
        self.violations.extend(v for v in record.violations if v not in self.violations)
        self.divergences.extend(f"step {record.index}: {d}" for d in record.divergence)
        if len(self.possible) > 1:
            record.possible_states = len(self.possible)

    def _record(self, record: StepRecord) -> None:
        self.records.append(record)
        if self.on_record is not None:
            self.on_record(record)

    def _on_target(
        self, label: Label, before: State, after: State, record: StepRecord
    ) -> Observation | None:
        planned = operation_for(label, before, after)
        if planned is None:
            return None
        if self.target is None:
            raise TargetError("this run has no target: its steps are observed, not invoked")
        op, _expected = planned
        record.operation = operation_record(op)
        if isinstance(op, Deliver):
            record.request = describe_message(op.request)
        observed = self.target.invoke(op)
        record.observed = observed.as_dict()
        return observed

    def _matching_possible(self, snapshot: TargetSnapshot) -> int | None:
        """The index of the first state still possible that is ``snapshot`` (None: none is)."""
        for n, possible in enumerate(self.possible):
            if not state_differences(self.cfg, possible.state, snapshot):
                return n
        return None

    def _compare_end(self, snapshot: TargetSnapshot, matching: int | None) -> None:
        """The target's end against every state still possible: one that matches
        (``matching``, from :meth:`_matching_possible`) explains it (it becomes the primary);
        none: the primary's differences are the divergences."""
        if matching is not None:
            n = matching
            self.possible = [self.possible[n], *self.possible[:n], *self.possible[n + 1 :]]
            return
        if self.cfg.internal_client is not None:
            # The bookies may have gone on by themselves after the last step (recovered the
            # ledger, left limbo): the end is explained if their steps reach it.
            record = StepRecord(len(self.records) + 1, BOOKIES_OWN, "(the run's end)")
            explained = self._after_internal_steps(
                lambda p: not state_differences(self.cfg, p.state, snapshot), record
            )
            if explained == []:
                judged = _Judged(tuple(self.possible), record.index, snapshot=snapshot)
                explained = self._explain_earlier(judged, record)
            if explained:
                self.possible = explained
                self._concluded(record)
                return
            if explained is None:
                self._record(record)
                return
        self.divergences.extend(state_differences(self.cfg, self.state, snapshot))

    def _final_snapshot(self) -> tuple[TargetSnapshot, int | None] | None:
        """The target's end. A snapshot reads the bookies and the metadata side by side, not at
        one instant; with the bookies' own recovery still running (4.18.0 starts it as a bookie
        starts, in the background) a read of a bookie may come before its write-back lands and
        the metadata read after the close that follows: an end no order of steps reaches (seen
        in ``make run``'s limbo-crash on 4.18.0). So where the bookies act on their own and no
        state still possible is the end as read, it is read again until two reads in a row
        agree (at most :data:`END_SETTLE_READS` more, :data:`END_SETTLE_PAUSE_S` apart); still
        moving, the last is compared. An end that matches is never read twice. With the end,
        the index of the state still possible that matches it (None: none does)."""
        assert self.target is not None
        snapshot = self.target.snapshot(self.cfg)
        if snapshot is None:
            return None
        matching = self._matching_possible(snapshot)
        if matching is not None or self.cfg.internal_client is None:
            return snapshot, matching
        for _ in range(END_SETTLE_READS):
            self._sleep(END_SETTLE_PAUSE_S)
            again = self.target.snapshot(self.cfg)
            if again is None or again == snapshot:
                return snapshot, None  # the same end as before (or no other): none matched it
            snapshot = again
            matching = self._matching_possible(snapshot)
            if matching is not None:
                return snapshot, matching
        return snapshot, matching

    def finish(self, note: str | None = None) -> Outcome:
        """Compare the target's final state with the model's and give the verdict."""
        if self.target is not None and not self.error and not self.divergences:
            try:
                end = self._final_snapshot()
            except TargetError as exc:
                self.error, self.failure = str(exc), exc
                end = None
            if end is not None:
                self._compare_end(*end)
        verdict = run_verdict(
            violations=bool(self.violations),
            divergences=bool(self.divergences),
            error=bool(self.error),
        )
        failure = self.failure if self.error else None
        cause = failure.cause if failure is not None else None
        return Outcome(
            verdict,
            self.records,
            self.trace,
            self.violations,
            self.divergences,
            self.error,
            note,
            cause=f"{type(cause).__name__}: {cause}" if cause is not None else None,
            retriable=failure.retriable if failure is not None else None,
            races=self.race_tally if self.race_tally.races else None,
            bookies_own=self._bookies_own_at_end(),
        )

    def _bookies_own_at_end(self) -> BookiesOwnTally | None:
        if self.cfg.internal_client is None:
            return None
        kept = [s.label for s in self.trace if s.label is not None]
        internal = self.cfg.internal_client
        self.bookies_own.recoveries = sum(
            1 for label in kept if label.client == internal and label.action == _STARTS_RECOVERY
        )
        self.bookies_own.left_limbo = sum(1 for label in kept if label.action == _LEAVES_LIMBO)
        self.bookies_own.examples = 1 if self.bookies_own.acted else 0
        return self.bookies_own


#: The record of what the bookies did on their own, where no model step of the harness's is.
BOOKIES_OWN = "BookiesOwnSteps"
#: Where the bookies act on their own, the end's snapshot is read again until two in a row
#: agree: at most this many more reads, this long apart (a bookie's recovery of one small
#: ledger takes tens of milliseconds).
END_SETTLE_READS = 10
END_SETTLE_PAUSE_S = 0.1
_STARTS_RECOVERY = the_action(actor=Actor.CLIENT, phase=Phase.FENCING, move=Move.SEND)
_LEAVES_LIMBO = the_action(actor=Actor.SERVICE)


@dataclass
class BookiesOwnTally:
    """How often a run's observations were explained by the bookies' own steps
    (``bookie_recovers_limbo``), how many such steps that took, and in the end how many
    recoveries the bookies started and how many bookies left limbo (on the trace kept)."""

    explained: int = 0
    steps: int = 0
    recoveries: int = 0
    left_limbo: int = 0
    #: Runs (examples) in which the bookies' own steps explained something.
    examples: int = 0

    @property
    def acted(self) -> bool:
        return self.explained > 0

    def merge(self, other: BookiesOwnTally) -> None:
        self.examples += other.examples
        self.explained += other.explained
        self.steps += other.steps
        self.recoveries += other.recoveries
        self.left_limbo += other.left_limbo

    def as_dict(self) -> dict[str, int]:
        return dict(self.__dict__)

    def describe(self) -> str:
        if not self.acted:
            return "the bookies' own recovery explained nothing (it did not act, or not in sight)"
        return (
            f"the bookies' own recovery acted in {self.examples} run(s): it explained "
            f"{self.explained} observation(s) in {self.steps} model step(s), "
            f"{self.recoveries} recovery(ies) started, {self.left_limbo} bookie(s) left limbo"
        )


def _judged(
    step: Transition, before: State, observed: Observation | None
) -> tuple[Observation | None, list[str]]:
    """The answer ``step`` (from ``before``) predicts, and how ``observed`` differs from it."""
    planned = operation_for(step.label, before, step.state)
    expected = planned[1] if planned is not None else None
    if expected is None or observed is None:
        return expected, []
    return expected, differences(expected, observed)


def _internal_tail(cfg: ModelConfig, trace: Sequence[Step[State, Label]]) -> list[Label]:
    """The bookies' own steps at the end of ``trace``, in order."""
    tail: list[Label] = []
    for step in reversed(trace):
        if step.label is None or not bookie_internal(cfg, step.label):
            break
        tail.append(step.label)
    return tail[::-1]


def _metadata_is(s: State, seen: MetadataSeen) -> bool:
    """Whether the model's metadata is what was read of the ledger's."""
    if s.meta_status is None or STATUS_NAMES[s.meta_status] != seen.status:
        return False
    if s.meta_version != seen.version:
        return False
    fragments = tuple((f.first_entry_id, tuple(bookies_of(f.ensemble))) for f in s.meta_fragments)
    if fragments != seen.fragments:
        return False
    return seen.last_entry is None or s.meta_last_entry == seen.last_entry


def _answer_dict(observed: Observation | None) -> dict[str, Any]:
    return {"no answer": True} if observed is None else observed.as_dict()


def operation_for(
    label: Label, before: State, after: State
) -> tuple[Operation, Observation | None] | None:
    """The operation a model step asks of a target, and the observation the model predicts for
    it (None: nothing to compare, as for a crash); None for a step the target takes no part in.
    Everything is read off the step's record in the action table, never off its name."""
    action = spec_action(label.action)
    if action.effect is Effect.ANSWER:
        request = label.received
        assert isinstance(request, (AddEntryRequest, FenceRequest, ReadRequest)), label
        ((reply, _delivered),) = label.sent
        return Deliver(request), predicted(reply)
    if action.effect is Effect.CRASH:
        assert label.bookie is not None, label
        return Crash(label.bookie), None
    if action.effect is not Effect.METADATA_WRITE:
        return None
    assert label.client is not None, label
    succeeds = action.write_ends is WriteEnd.SUCCEEDS
    expected = Observation(
        "metadata", "OK" if succeeds else "MetadataVersionMismatch", success=succeeds
    )
    if before.meta_status is None:
        return CreateLedger(label.client, _view(after)), expected
    # A write that succeeds must find the znode at the spec's current version; one that fails
    # holds a client's stale version, and what it would write does not matter: the
    # compare-and-set refuses it. It writes the current metadata back unchanged.
    version = before.meta_version if succeeds else before.clients[label.client].meta_version
    assert version is not None, label
    written = _view(after if succeeds else before)
    op = WriteMetadata(label.action, label.client, version, before.meta_version, written)
    return op, expected


def _view(s: State) -> LedgerView:
    assert s.meta_status is not None
    return LedgerView(s.meta_status, s.meta_fragments, s.meta_last_entry)


def state_differences(cfg: ModelConfig, s: State, snapshot: TargetSnapshot) -> list[str]:
    """Where the target's bookies and metadata differ from the model's state."""
    diffs = []
    for bookie in range(cfg.bookies):
        model_held = {e.id for e in s.b_entries[bookie]}
        held = snapshot.entries.get(bookie, set())
        if model_held != held:
            diffs.append(
                f"final state: bookie b{bookie + 1} holds {sorted(held)}, "
                f"model {sorted(model_held)}"
            )
    if s.meta_status is None:
        if snapshot.meta_status is not None:
            diffs.append(
                f"final state: ledger metadata exists ({snapshot.meta_status}), model has none"
            )
        return diffs
    status = STATUS_NAMES[s.meta_status]
    if snapshot.meta_status != status:
        diffs.append(f"final state: metadata status {snapshot.meta_status}, model {status}")
    if s.meta_status == STATUS_CLOSED and snapshot.meta_last_entry != s.meta_last_entry:
        diffs.append(
            f"final state: metadata last entry {snapshot.meta_last_entry}, "
            f"model {s.meta_last_entry}"
        )
    fragments = [(f.first_entry_id, bookies_of(f.ensemble)) for f in s.meta_fragments]
    if snapshot.meta_fragments != fragments:
        diffs.append(
            f"final state: metadata fragments {snapshot.meta_fragments}, model {fragments}"
        )
    return diffs
