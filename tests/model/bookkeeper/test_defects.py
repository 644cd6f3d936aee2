"""The seeds' interleavings, replayed action by action on the model.

Each replay is the seed's sequence diagram as scripted steps; the defect appears exactly when
its switch is off, and with the switch on the same prefix cannot complete.
"""

from __future__ import annotations

import pytest

from model.bookkeeper import interleavings
from model.bookkeeper.actions import init_state
from model.bookkeeper.config import ModelConfig
from model.bookkeeper.invariants import invariants_for, violated
from model.bookkeeper.records import ADD_ENTRY_REQUEST, STATUS_CLOSED, UNKNOWN, State
from model.bookkeeper.scripted import ScriptedStep, enabled, run_script, step, take
from model.search.scripted import ScriptError


def _broken_only_at_the_end(
    cfg: ModelConfig, script: list[ScriptedStep]
) -> tuple[State, list[str]]:
    """Replay ``script``; no invariant may break before its last step. Returns the final state
    and what it breaks."""
    trace = run_script(cfg, script)
    invariants = invariants_for(cfg)
    assert all(not violated(cfg, s.state, invariants) for s in trace[:-1])
    return trace[-1].state, violated(cfg, trace[-1].state, invariants)


DEFECT_1_PREFIX = list(interleavings.DEFECT_1.steps[:15])
DEFECT_1_SUFFIX = [
    step("BookieSendsAddConfirmedResponse", bookie="b3"),
    step("ClientReceivesAddConfirmedResponse", client="c1", peer="b2"),
    step("ClientReceivesAddConfirmedResponse", client="c1", peer="b3"),
]


def test_defect_1_interleaving_violates_no_divergence_without_recovery_read_fence() -> None:
    cfg = interleavings.DEFECT_1.unprotected
    final, broken = _broken_only_at_the_end(cfg, DEFECT_1_PREFIX + DEFECT_1_SUFFIX)
    assert broken == ["NoDivergenceBetweenClientAndMetaData"]
    assert final.meta_status == STATUS_CLOSED and final.meta_last_entry == 0
    assert final.clients[0].lac == 1


def test_defect_1_prefix_cannot_complete_when_recovery_reads_fence() -> None:
    cfg = interleavings.DEFECT_1.protected
    closed = run_script(cfg, DEFECT_1_PREFIX)[-1].state
    # b3 was fenced by the recovery read: w1's add to b3 can only be rejected.
    assert closed.b_fenced == (True, True, True)
    assert not enabled(cfg, closed, DEFECT_1_SUFFIX[0])
    assert enabled(cfg, closed, step("BookieSendsAddFencedResponse", bookie="b3"))
    with pytest.raises(ScriptError, match="matches no successor"):
        run_script(cfg, DEFECT_1_PREFIX + DEFECT_1_SUFFIX)


DEFECT_2_PREFIX = list(interleavings.DEFECT_2_PREFIX)
DEFECT_2_SUFFIX = list(interleavings.DEFECT_2.steps[len(interleavings.DEFECT_2_PREFIX) :])


def test_defect_2_interleaving_creates_an_invalid_fragment_without_the_fix() -> None:
    cfg = interleavings.DEFECT_2.unprotected
    final, broken = _broken_only_at_the_end(cfg, DEFECT_2_PREFIX + DEFECT_2_SUFFIX)
    assert broken == ["OnlyValidFragments"]
    recovery = final.clients[1]
    assert [f.first_entry_id for f in recovery.fragments] == [1, 2, 1]


def test_defect_2_recovery_starts_at_the_current_fragment_with_the_fix() -> None:
    cfg = interleavings.DEFECT_2.protected
    fenced = run_script(cfg, DEFECT_2_PREFIX)[-1].state
    recovery = fenced.clients[1]
    # The floor is fragment 2's first entry - 1: entry 1 is never read again.
    assert recovery.lac == 1 and recovery.lap == 1
    assert not enabled(cfg, fenced, DEFECT_2_SUFFIX[0])
    assert enabled(cfg, fenced, step("ClientSendsRecoveryReadRequests", client="c2", entry=2))


SEED_001 = list(interleavings.LIMBO_CRASH_PREFIX)
SEED_001_SUFFIX = list(interleavings.SEED_001.steps[len(interleavings.LIMBO_CRASH_PREFIX) :])


def test_seed_001_crash_without_limbo_closes_the_ledger_short() -> None:
    cfg = interleavings.SEED_001.unprotected
    trace = run_script(cfg, SEED_001 + SEED_001_SUFFIX)
    final = trace[-1].state
    assert final.meta_status == STATUS_CLOSED and final.meta_last_entry == 0
    assert violated(cfg, final, invariants_for(cfg)) == ["NoDivergenceBetweenClientAndMetaData"]


def test_seed_001_limbo_makes_recovery_wait_for_the_healthy_bookie() -> None:
    cfg = interleavings.SEED_001.protected
    waiting = run_script(cfg, SEED_001)[-1].state
    assert waiting.b_limbo == (True, False) and waiting.b_fenced == (True, False)
    # b1 answered Unknown: it does not count as fenced, so reads cannot start on its word.
    assert waiting.clients[1].fenced == 0
    assert not enabled(cfg, waiting, SEED_001_SUFFIX[0])


def test_seed_001_limbo_diagram_repairs_the_ledger() -> None:
    cfg = interleavings.SEED_001.protected
    trace = run_script(
        cfg,
        [
            *SEED_001[:7],
            step("ClientStartsRecovery", client="c2"),
            step("BookieSendsFencingReadLacResponse", bookie="b1"),
            step("BookieSendsFencingReadLacResponse", bookie="b2"),
            step("ClientReceivesFencingReadLacResponse", client="c2", peer="b1"),
            step("ClientReceivesFencingReadLacResponse", client="c2", peer="b2"),
            step("ClientSendsRecoveryReadRequests", client="c2", entry=1),
            step("BookieSendsReadResponse", bookie="b1"),
            step("BookieSendsReadResponse", bookie="b2"),
            step("ClientReceivesRecoveryReadResponse", client="c2", peer="b1"),
            step("ClientReceivesRecoveryReadResponse", client="c2", peer="b2"),
            step("ClientWritesBackEntry", client="c2"),
            step("BookieSendsAddConfirmedResponse", bookie="b1"),
            step("BookieSendsAddConfirmedResponse", bookie="b2"),
            step("RecoveryClientReceivesAddConfirmedResponse", client="c2", peer="b1"),
            step("RecoveryClientReceivesAddConfirmedResponse", client="c2", peer="b2"),
            step("ClientSendsRecoveryReadRequests", client="c2", entry=2),
            step("BookieSendsReadResponse", bookie="b1"),
            step("BookieSendsReadResponse", bookie="b2"),
            step("ClientReceivesRecoveryReadResponse", client="c2", peer="b1"),
            step("ClientReceivesRecoveryReadResponse", client="c2", peer="b2"),
            step("RecoveryClientClosesLedger", client="c2"),
        ],
    )
    read_of_b1 = trace[14].label
    assert read_of_b1 is not None and read_of_b1.sent[0][0].code == UNKNOWN  # type: ignore[union-attr]
    final = trace[-1].state
    assert final.meta_status == STATUS_CLOSED and final.meta_last_entry == 1
    assert any(e.id == 1 for e in final.b_entries[0])  # the crashed bookie got e1 back
    assert not violated(cfg, final, invariants_for(cfg))
    assert trace[18].label is not None and trace[18].label.sent[0][0].kind == ADD_ENTRY_REQUEST


@pytest.mark.parametrize("interleaving", interleavings.ALL.values(), ids=lambda i: i.name)
def test_each_interleaving_violates_its_invariant_only_unprotected(
    interleaving: interleavings.Interleaving,
) -> None:
    # Unprotected, the story ends at its first violation (as a scenario run does).
    broken = interleaving.unprotected
    state = init_state(broken)
    for scripted in interleaving.steps:
        state = take(broken, state, scripted).state
        if violated(broken, state, invariants_for(broken)):
            break
    assert interleaving.invariant in violated(broken, state, invariants_for(broken))
    cfg = interleaving.protected
    try:
        trace = run_script(cfg, list(interleaving.steps))
    except ScriptError:
        assert interleaving.notes, "a protected story that stops must say why in its notes"
        return  # the protection stops the story (see the interleaving's notes)
    assert all(not violated(cfg, s.state, invariants_for(cfg)) for s in trace)


def test_the_limbo_scenario_runs_to_the_end_with_limbo_and_loses_e1_without() -> None:
    # The scenario `limbo-crash` delivers every message: with limbo, recovery reads past b1's
    # Unknown, takes e1 from b2, writes it back and closes at e1; without, it closes empty at
    # the first recovery decision (step 17 of 27).
    story = interleavings.LIMBO_CRASH
    final = run_script(story.protected, list(story.steps))[-1].state
    assert final.meta_status == STATUS_CLOSED and final.meta_last_entry == 1
    assert any(e.id == 1 for e in final.b_entries[0])
    cfg = story.unprotected
    state = init_state(cfg)
    stopped_at = None
    for number, scripted in enumerate(story.steps, start=1):
        state = take(cfg, state, scripted).state
        if violated(cfg, state, invariants_for(cfg)):
            stopped_at = number
            break
    assert stopped_at == 17 and state.meta_status == STATUS_CLOSED and state.meta_last_entry == 0
