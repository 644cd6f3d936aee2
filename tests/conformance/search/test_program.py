"""Examples: how choices become steps, and back."""

from __future__ import annotations

import dataclasses
import itertools
import random
from collections.abc import Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from adapters.cluster.gates import At, GatePoint
from conformance.engine import Execution
from conformance.gated_races import Gated, GateReport, GateSchedule, Stop, schedules
from conformance.operations import Crash, Deliver
from conformance.races import Member, Timed, member_of, raceable
from conformance.scenarios import SCENARIOS
from conformance.search.choices import ReplayChooser
from conformance.search.danger import danger
from conformance.search.program import (
    ENCODING_SWARM,
    RACE_OFFSETS_S,
    Swarm,
    decide,
    encode,
    encode_trace,
    gate_proposals,
    race_proposals,
    run_example,
)
from conformance.targets.model_target import ModelTarget
from conformance.verdict import Verdict
from model.bookkeeper.action_table import ALL_ACTIONS
from model.bookkeeper.actions import init_state, successors
from model.bookkeeper.config import ModelConfig
from model.bookkeeper.explore import replay
from model.bookkeeper.records import AddEntryRequest, FenceRequest, State
from model.bookkeeper.scripted import run_script, step
from tests.conformance.racing_prefix import ADD_AND_FENCE_WAIT_AT_B1

CONFIGS = [
    ModelConfig(bookies=2, clients=2, write_quorum=2, ack_quorum=1),
    SCENARIOS["defect1-fencing"].config(protected=False),
    SCENARIOS["limbo-crash"].config(protected=True),
]


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(CONFIGS), st.integers(0, 2**32 - 1))
def test_every_step_of_a_walk_encodes_to_choices_that_decide_it(
    cfg: ModelConfig, seed: int
) -> None:
    trace, _ = replay(cfg, walk_seed=seed, depth=25)
    for before, after in itertools.pairwise(trace):
        assert after.label is not None
        enabled = successors(cfg, before.state)
        choices = encode(enabled, ENCODING_SWARM, after.label)
        assert decide(enabled, ENCODING_SWARM, ReplayChooser(choices)).label == after.label


@settings(max_examples=20, deadline=None)
@given(st.integers(0, 2**32 - 1))
def test_an_encoded_trace_replays_as_an_example(seed: int) -> None:
    cfg = CONFIGS[1]
    trace, _ = replay(cfg, walk_seed=seed, depth=30)
    choices = encode_trace(cfg, trace, max_steps=60)
    run = run_example(cfg, ModelTarget(cfg), ReplayChooser(choices), max_steps=60)
    taken = [s.label for s in run.outcome.trace[1:]]
    expected = [s.label for s in trace[1 : len(taken) + 1]]
    assert taken == expected
    # It stops early only at a finding.
    assert len(taken) == len(trace) - 1 or run.finding


def test_the_seed_trace_of_defect_1_is_a_finding_when_replayed_as_an_example() -> None:
    scenario = SCENARIOS["defect1-fencing"]
    cfg = scenario.config(protected=False)
    trace = run_script(cfg, scenario.interleaving.steps)
    choices = ReplayChooser(encode_trace(cfg, trace, 60))
    run = run_example(cfg, ModelTarget(cfg), choices, max_steps=60)
    assert run.outcome.verdict == "violation"
    assert "NoDivergenceBetweenClientAndMetaData" in run.outcome.violations


def test_zero_choices_are_the_simplest_swarm() -> None:
    assert Swarm.draw(ReplayChooser([0, 0])) == Swarm(frozenset(), 0)


def test_a_swarm_switches_some_kinds_off_and_sets_a_loss_rate() -> None:
    rng = random.Random(5)
    swarms = [Swarm.draw(_RandomChooser(rng)) for _ in range(300)]
    assert {s.loss_percent for s in swarms} == {0, 5, 15, 30, 50}
    assert any(s.disabled for s in swarms) and any(not s.disabled for s in swarms)
    assert all(len(s.disabled) < len(ALL_ACTIONS) for s in swarms)


def test_switched_off_kinds_are_never_decided_while_others_are_enabled() -> None:
    cfg = CONFIGS[1]
    rng = random.Random(7)
    state = init_state(cfg)
    swarm = Swarm(frozenset({"ClientStartsRecovery"}), 0)
    for _ in range(40):
        enabled = successors(cfg, state)
        if not enabled:
            break
        chosen = decide(enabled, swarm, _RandomChooser(rng))
        kinds = {t.label.action for t in enabled}
        if kinds != {"ClientStartsRecovery"}:
            assert chosen.label.action != "ClientStartsRecovery"
        state = chosen.state


def test_without_loss_no_message_is_lost() -> None:
    cfg = CONFIGS[1]
    rng = random.Random(3)
    state = init_state(cfg)
    for _ in range(40):
        enabled = successors(cfg, state)
        if not enabled:
            break
        chosen = decide(enabled, Swarm(), _RandomChooser(rng))
        assert chosen.label.lost == 0
        state = chosen.state


def test_encoding_a_loss_without_loss_is_refused() -> None:
    cfg = CONFIGS[1]
    walks = (replay(cfg, walk_seed=seed, depth=40)[0] for seed in range(100))
    lossy = next(
        (a, b) for trace in walks for a, b in itertools.pairwise(trace) if b.label and b.label.lost
    )
    with pytest.raises(ValueError, match="lost message"):
        encode(successors(cfg, lossy[0].state), Swarm(), lossy[1].label)  # type: ignore[arg-type]


def test_danger_is_zero_before_recovery_and_grows_with_its_ingredients() -> None:
    scenario = SCENARIOS["defect1-fencing"]
    cfg = scenario.config(protected=False)
    trace = run_script(cfg, scenario.interleaving.steps)
    scores = [danger(cfg, s.state) for s in trace]
    assert scores[0] == 0
    # The recovery's reads leave the writer's third bookie unfenced: the score rises.
    assert max(scores) >= 2
    assert scores[-1] == 0  # closed: recovery is over


class _RandomChooser:
    def __init__(self, rng: random.Random) -> None:
        self.rng = rng

    def integer(self, low: int, high: int) -> int:
        return self.rng.randint(low, high)


def test_an_encoded_trace_replays_when_only_restarts_could_race() -> None:
    # With crashes on, two bookies' restarts are enabled together before any request: no
    # race can hold both, so draw_race draws nothing there, and the encoding must not either
    # (it once did: every explorer trace of a racing search with crashes replayed wrongly).
    cfg = ModelConfig(bookies=2, clients=2, write_quorum=2, ack_quorum=1, max_crashes=1)
    trace = run_script(
        cfg,
        [
            step("ClientCreatesLedger", client="c1"),
            step("BookieRestartsEmpty", bookie="b1"),
            step("ClientSendsAddEntryRequests", client="c1"),
        ],
    )
    choices = encode_trace(cfg, trace, max_steps=10, races=True)
    run = run_example(cfg, ModelTarget(cfg), ReplayChooser(choices), max_steps=10, races=True)
    assert [s.label for s in run.outcome.trace] == [s.label for s in trace]


def test_an_encoded_race_of_the_only_two_candidates_replays_with_its_offsets() -> None:
    # After c1 sends e1 to its two bookies, exactly two requests could be processed: no third
    # member can be asked for, and the encoding must not ask either.
    cfg = ModelConfig(bookies=2, clients=2, write_quorum=2, ack_quorum=1)
    trace = run_script(
        cfg,
        [
            step("ClientCreatesLedger", client="c1"),
            step("ClientSendsAddEntryRequests", client="c1"),
        ],
    )
    racing = raceable(successors(cfg, trace[-1].state))
    assert len(racing) == 2
    pair = (member_of(racing[1]), member_of(racing[0]))
    choices = encode_trace(cfg, trace, max_steps=10, then_race=pair, race_offsets=(2, 0))
    chooser = ReplayChooser(choices)
    run = run_example(cfg, ModelTarget(cfg), chooser, max_steps=10, races=True)
    assert chooser.position == len(choices)  # every choice read, none left over
    raced = [r.race for r in run.outcome.steps if r.race]
    assert len(raced) == 2 and raced[0]["requests"] == 2  # type: ignore[index]
    # pair[0] was sent 1 ms after pair[1]: the model target serves pair[1] first.
    first = next(r for r in run.outcome.steps if r.race)
    assert first.description.startswith(f"BookieSendsAddConfirmedResponse(b{pair[1].bookie + 1})")


def test_a_race_jitter_delays_each_raced_request_by_its_draw(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    cfg = ModelConfig(bookies=2, clients=2, write_quorum=2, ack_quorum=1)
    trace = run_script(
        cfg,
        [
            step("ClientCreatesLedger", client="c1"),
            step("ClientSendsAddEntryRequests", client="c1"),
        ],
    )
    racing = raceable(successors(cfg, trace[-1].state))
    pair = (member_of(racing[0]), member_of(racing[1]))
    choices = encode_trace(cfg, trace, max_steps=10, then_race=pair, race_offsets=(2, 0))
    sent: list[tuple[float, ...]] = []
    original = Execution.apply_race

    def spy(
        self: Execution,
        transitions: object,
        offsets_s: tuple[float, ...] = (),
        gates: GateSchedule | None = None,
    ) -> object:
        sent.append(tuple(offsets_s))
        return original(self, transitions, offsets_s, gates)  # type: ignore[arg-type]

    monkeypatch.setattr(Execution, "apply_race", spy)
    draws = iter([0.0003, 0.0001])
    run = run_example(
        cfg,
        ModelTarget(cfg),
        ReplayChooser(choices),
        max_steps=10,
        races=True,
        race_jitter=lambda: next(draws),
    )
    assert run.outcome.verdict == "clean"
    assert sent == [(RACE_OFFSETS_S[2] + 0.0003, RACE_OFFSETS_S[0] + 0.0001)]


class _GatedModelTarget(ModelTarget):
    """The model's bookies, serving a gated race as its schedule orders it (the request held
    first answers last), each answer with its gate's report; the schedules it was given."""

    gates = True

    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__(cfg)
        self.schedules: list[GateSchedule] = []

    def invoke_concurrently(  # type: ignore[override]
        self,
        ops: Sequence[Deliver | Crash],
        offsets_s: Sequence[float],
        gates: GateSchedule | None = None,
    ) -> list[Timed]:
        if gates is None:
            return super().invoke_concurrently(ops, offsets_s)
        self.schedules.append(gates)
        offsets = [1.0 if i == gates.held else 0.0 for i in range(len(ops))]
        answers = super().invoke_concurrently(ops, offsets)
        reports = {gates.held: GateReport(gates.first, Gated.HELD, 1)}
        reports[gates.other] = GateReport(gates.second, Gated.NOT_HELD)
        return [dataclasses.replace(a, gate=reports[i]) for i, a in enumerate(answers)]


#: c1's add of e2 and c2's fence read wait at b1 (tests/conformance/test_races.py's prefix).
RACING_AT_B1 = ModelConfig(
    bookies=3, clients=2, write_quorum=3, ack_quorum=2, send_limit=2, inflight_limit=2
)
RACING_AT_B1_STEPS = list(ADD_AND_FENCE_WAIT_AT_B1)


def _add_and_fence_at_b1(cfg: ModelConfig, state: State) -> tuple[Member, Member]:
    racing = [member_of(t) for t in raceable(successors(cfg, state))]
    at_b1 = [m for m in racing if getattr(m, "bookie", None) == 0]
    add = next(m for m in at_b1 if isinstance(m, AddEntryRequest))
    fence = next(m for m in at_b1 if isinstance(m, FenceRequest))
    return add, fence


@pytest.mark.parametrize("held", [0, 1])
def test_an_encoded_gated_race_replays_with_its_schedule(held: int) -> None:
    cfg = RACING_AT_B1
    trace = run_script(cfg, RACING_AT_B1_STEPS)
    pair = _add_and_fence_at_b1(cfg, trace[-1].state)
    schedule = GateSchedule(
        held, Stop(GatePoint.STORAGE_ADD if held == 0 else GatePoint.SET_FENCED, At.ENTRY)
    )
    choices = encode_trace(cfg, trace, 20, then_race=pair, gates=True, schedule=schedule)
    target = _GatedModelTarget(cfg)
    chooser = ReplayChooser(choices)
    run = run_example(cfg, target, chooser, max_steps=20, races=True, gates=True)
    assert chooser.position == len(choices)
    (given,) = target.schedules
    # The schedule's ``held`` names a place in ``pair``; the race's own order may differ.
    raced = next(r for r in run.outcome.steps if r.race)
    assert given.first == schedule.first
    held_request = pair[held]
    assert isinstance(held_request, AddEntryRequest) == (given.first.point is GatePoint.STORAGE_ADD)
    assert "gate" in raced.race  # type: ignore[operator]
    races = run.outcome.races
    assert races is not None and races.gates.gated == 1 and races.gates.reached == 1
    assert run.outcome.verdict is Verdict.CLEAN


def test_gate_proposals_list_every_schedule_of_each_pair_of_kinds_once() -> None:
    cfg = RACING_AT_B1
    trace = run_script(cfg, RACING_AT_B1_STEPS)
    pair = _add_and_fence_at_b1(cfg, trace[-1].state)
    every = schedules(pair)  # type: ignore[arg-type]
    # One pair of kinds (an add and a fence read): its schedules once, not once per trace.
    proposed = gate_proposals(cfg, [trace, trace], 20)
    assert len(proposed) == len(every)
    target = _GatedModelTarget(cfg)
    for choices in proposed[:3]:
        run_example(cfg, target, ReplayChooser(choices), max_steps=20, races=True, gates=True)
    assert target.schedules == every[:3]
    assert gate_proposals(cfg, [trace], 20, should_stop=lambda: True) == []
    # The races proposed beside them are not gated, and are read as an example that may gate.
    ungated = race_proposals(cfg, [trace], 20, gates=True)
    assert len(ungated) == 2
    for choices in ungated:
        run_example(cfg, target, ReplayChooser(choices), max_steps=20, races=True, gates=True)
    assert len(target.schedules) == 3


def test_an_example_that_may_gate_draws_no_gate_first() -> None:
    cfg = RACING_AT_B1
    trace = run_script(cfg, RACING_AT_B1_STEPS)
    pair = _add_and_fence_at_b1(cfg, trace[-1].state)
    plain = encode_trace(cfg, trace, 20, then_race=pair, gates=True)
    target = _GatedModelTarget(cfg)
    run_example(cfg, target, ReplayChooser(plain), max_steps=20, races=True, gates=True)
    assert target.schedules == []
    with pytest.raises(ValueError, match="may gate"):
        encode_trace(
            cfg,
            trace,
            20,
            then_race=pair,
            schedule=GateSchedule(0, Stop(GatePoint.SET_FENCED, At.ENTRY)),
        )
