"""The bookies' own recovery of a limbo ledger (``bookie_recovers_limbo``), judged as observed:
an actor no harness drives, whose steps the engine finds when an answer, the ledger's metadata
or the run's end needs them (issue 46)."""

from __future__ import annotations

import dataclasses

import pytest

from conformance.engine import BOOKIES_OWN, END_SETTLE_PAUSE_S, Execution
from conformance.observations import Observation
from conformance.operations import Operation, WriteMetadata
from conformance.targets.base import MetadataChangedOutside, MetadataSeen, TargetSnapshot
from conformance.targets.model_target import ModelTarget
from conformance.verdict import Verdict
from model.bookkeeper.actions import bookie_internal, driven_successors, init_state, successors
from model.bookkeeper.bookie import BookieLedger
from model.bookkeeper.config import ConfigError, ModelConfig
from model.bookkeeper.explore import check_exhaustively
from model.bookkeeper.interleavings import LIMBO_CRASH, LIMBO_CRASH_PREFIX, SEED_001
from model.bookkeeper.readings import BOOKIE_AS_IMPLEMENTED
from model.bookkeeper.records import STATUS_CLOSED, STATUS_NAMES, State, bookies_of
from model.bookkeeper.scripted import ScriptedStep, step, take

CFG = dataclasses.replace(
    LIMBO_CRASH.protected, clients=3, send_limit=2, bookie_recovers_limbo=True
)
#: e1 on b1 and b2, acknowledged to w1; b1 restarts empty, in limbo and fenced.
CRASHED = LIMBO_CRASH_PREFIX[:7]
#: The bookies' own client (c3) recovers the ledger: fences both bookies (b1 answers Unknown),
#: reads e1 from b2, writes it back to both, finds no e2, closes the ledger at e1; b1 leaves
#: limbo (the internal steps of BookKeeper's DataIntegrityCheckImpl, as the model has them).
OWN_RECOVERY: tuple[ScriptedStep, ...] = (
    step("ClientStartsRecovery", client="c3"),
    step("BookieSendsFencingReadLacResponse", bookie="b1"),
    step("BookieSendsFencingReadLacResponse", bookie="b2"),
    step("ClientReceivesFencingReadLacResponse", client="c3", peer="b1"),
    step("ClientReceivesFencingReadLacResponse", client="c3", peer="b2"),
    step("ClientSendsRecoveryReadRequests", client="c3"),
    step("BookieSendsReadResponse", bookie="b1"),
    step("BookieSendsReadResponse", bookie="b2"),
    step("ClientReceivesRecoveryReadResponse", client="c3", peer="b2"),
    step("ClientWritesBackEntry", client="c3"),
    step("BookieSendsAddConfirmedResponse", bookie="b1"),
    step("BookieSendsAddConfirmedResponse", bookie="b2"),
    step("RecoveryClientReceivesAddConfirmedResponse", client="c3", peer="b1"),
    step("RecoveryClientReceivesAddConfirmedResponse", client="c3", peer="b2"),
    step("ClientSendsRecoveryReadRequests", client="c3"),
    step("BookieSendsReadResponse", bookie="b2"),
    step("ClientReceivesRecoveryReadResponse", client="c3", peer="b2"),
    step("RecoveryClientClosesLedger", client="c3"),
)
LEAVES_LIMBO = step("BookieLeavesLimbo", bookie="b1")


def _run(state: State, steps: tuple[ScriptedStep, ...]) -> State:
    for scripted in steps:
        state = take(CFG, state, scripted).state
    return state


class SelfRecovering(ModelTarget):
    """The spec's bookies and store, whose bookies also act on their own when the test says
    (as BookKeeper's data-integrity service does a moment after a restart: the model's own
    steps, carried out behind the engine's back), and whose store reports a writer outside the
    model as the cluster targets do (:class:`MetadataChangedOutside`)."""

    def act_on_their_own(self, state: State, steps: tuple[ScriptedStep, ...]) -> None:
        """From the model state the target is in, the bookies take ``steps``; the target's
        bookies and store become the model's after them."""
        after = _run(state, steps)
        self._bookies = [
            BookieLedger(after.b_entries[b], after.b_fenced[b], after.b_lac[b], after.b_limbo[b])
            for b in range(CFG.bookies)
        ]
        assert self._metadata is not None
        self._metadata = type(self._metadata)(
            after.meta_status, after.meta_fragments, after.meta_last_entry
        )
        self._version = after.meta_version

    def invoke(self, op: Operation) -> Observation:
        if isinstance(op, WriteMetadata) and op.known_version != self._version:
            meta = self._metadata
            assert meta is not None
            raise MetadataChangedOutside(
                "the ledger's metadata was changed outside the model",
                MetadataSeen(
                    STATUS_NAMES[meta.status],
                    self._version,
                    tuple(
                        (f.first_entry_id, tuple(bookies_of(f.ensemble))) for f in meta.fragments
                    ),
                    meta.last_entry if meta.status == STATUS_CLOSED else None,
                ),
            )
        return super().invoke(op)


def _crashed(target: SelfRecovering) -> Execution:
    execution = Execution(CFG, target)
    assert execution.begin()
    for scripted in CRASHED:
        execution.apply(take(CFG, execution.state, scripted))
    assert not execution.stopped
    return execution


# The model ------------------------------------------------------------------------------------


def test_the_bookies_client_recovers_only_a_ledger_in_limbo_and_no_harness_drives_it() -> None:
    state = init_state(CFG)
    assert all(t.label.client != 2 for t in successors(CFG, state))
    state = _run(state, CRASHED[:6])  # e1 acknowledged, nobody in limbo
    assert all(t.label.client != 2 for t in successors(CFG, state))
    state = _run(state, CRASHED[6:])  # b1 restarted in limbo
    starts = [t for t in successors(CFG, state) if t.label.client == 2]
    assert [t.label.action for t in starts] == ["ClientStartsRecovery"] * len(starts)
    assert all(bookie_internal(CFG, t.label) for t in starts)
    assert not any(bookie_internal(CFG, t.label) for t in driven_successors(CFG, state))


def test_its_recovery_closes_the_ledger_and_the_bookie_leaves_limbo_with_its_copies() -> None:
    closed = _run(_run(init_state(CFG), CRASHED), OWN_RECOVERY)
    assert (closed.meta_status, closed.meta_version, closed.meta_last_entry) == (
        STATUS_CLOSED,
        3,
        1,
    )
    assert closed.b_limbo == (True, False)
    left = take(CFG, closed, LEAVES_LIMBO).state
    assert left.b_limbo == (False, False) and {e.id for e in left.b_entries[0]} == {1}


def test_a_recovery_over_one_in_recovery_writes_nothing_as_bookkeeper_s() -> None:
    state = _run(init_state(CFG), CRASHED)
    state = take(CFG, state, step("ClientStartsRecovery", client="c2")).state
    assert state.meta_version == 2
    own = take(CFG, state, step("ClientStartsRecovery", client="c3")).state
    assert own.meta_version == 2 and own.clients[2].meta_version == 2


def test_its_close_follows_another_recovery_s_mark_as_bookkeeper_s_close_does() -> None:
    # c3 marks the ledger IN_RECOVERY, then w2 marks it again (version 3): the spec's close
    # needs the version c3 wrote; BookKeeper's closeRecovered re-reads and closes the ledger
    # still IN_RECOVERY (4.18.0's make run: the ledger CLOSED where the model kept IN_RECOVERY).
    state = _run(init_state(CFG), CRASHED)
    state = take(CFG, state, OWN_RECOVERY[0]).state
    state = take(CFG, state, step("ClientStartsRecovery", client="c2")).state
    assert (state.meta_version, state.clients[2].meta_version) == (3, 2)
    # The bookies answer c3's requests (w2's wait on the wire).
    own = tuple(
        dataclasses.replace(scripted, sender="c3") if scripted.bookie else scripted
        for scripted in OWN_RECOVERY[1:]
    )
    closed = _run(state, own)
    assert (closed.meta_status, closed.meta_version, closed.meta_last_entry) == (
        STATUS_CLOSED,
        4,
        1,
    )
    assert closed.clients[2].meta_version == 4
    # w2 (a harness client, the spec's close) finds the ledger CLOSED: no close of its own.
    assert not any(
        t.label.action == "RecoveryClientClosesLedger" and t.label.client == 1
        for t in successors(CFG, closed)
    )


def test_the_switch_needs_limbo_and_a_client_of_the_bookies() -> None:
    with pytest.raises(ConfigError, match="needs limbo_on_unclean_shutdown"):
        ModelConfig(bookies=2, clients=3, write_quorum=2, bookie_recovers_limbo=True)
    with pytest.raises(ConfigError, match="two clients or more"):
        dataclasses.replace(CFG, clients=1)
    with pytest.raises(ConfigError, match="symmetry"):
        check_exhaustively(CFG, symmetry=True, max_states=10)


# The judge ------------------------------------------------------------------------------------


def test_metadata_the_bookies_wrote_is_explained_by_their_own_steps() -> None:
    target = SelfRecovering(CFG)
    execution = _crashed(target)
    target.act_on_their_own(execution.state, OWN_RECOVERY)
    # w2 starts recovering: its write finds the ledger CLOSED by the bookies' client.
    record = execution.apply(take(CFG, execution.state, step("ClientStartsRecovery", client="c2")))
    assert record.action == BOOKIES_OWN and not record.divergence and not execution.stopped
    assert record.bookies_own[0].startswith("ClientStartsRecovery(c3)")
    assert all(p.state.meta_status == STATUS_CLOSED for p in execution.possible)
    assert execution.state.clients[1].status is None  # w2's step was not taken
    outcome = execution.finish()
    assert outcome.verdict is Verdict.CLEAN, outcome.divergences
    assert outcome.bookies_own is not None
    assert outcome.bookies_own.explained == 1 and outcome.bookies_own.recoveries == 1
    assert "explained 1 observation(s)" in outcome.bookies_own.describe()


def test_an_answer_the_bookies_own_steps_explain_is_no_divergence() -> None:
    target = SelfRecovering(CFG)
    execution = _crashed(target)
    target.act_on_their_own(execution.state, OWN_RECOVERY[:3])  # c3 fenced b1 and b2
    # w1 adds e2: b2 answers EFENCED where the model, without the bookies' steps, says EOK.
    execution.apply(take(CFG, execution.state, step("ClientSendsAddEntryRequests", client="c1")))
    record = execution.apply(
        take(CFG, execution.state, step("BookieSendsAddConfirmedResponse", bookie="b2"))
    )
    assert record.observed is not None and record.observed["status"] == "EFENCED"
    assert not record.divergence, record.divergence
    assert record.action == "BookieSendsAddFencedResponse"
    # The fewest of the bookies' steps that explain it: c3 started, b2 answered its fence.
    assert [own.split("(")[0] for own in record.bookies_own] == [
        "ClientStartsRecovery",
        "BookieSendsFencingReadLacResponse",
    ]


def test_a_write_no_recovery_explains_is_a_divergence() -> None:
    target = SelfRecovering(CFG)
    execution = _crashed(target)
    # The ledger closed at e2, which nobody wrote: no recovery by the bookies gets there.
    target.act_on_their_own(execution.state, OWN_RECOVERY)
    assert target._metadata is not None
    target._metadata = type(target._metadata)(STATUS_CLOSED, target._metadata.fragments, 2)
    record = execution.apply(take(CFG, execution.state, step("ClientStartsRecovery", client="c2")))
    assert (
        record.divergence
        and "no sequence of the bookies' own recovery steps" in (record.divergence[0])
    )
    assert execution.finish().verdict is Verdict.DIVERGENCE


def test_without_the_switch_a_writer_outside_the_model_leaves_the_run_undecided() -> None:
    cfg = dataclasses.replace(CFG, bookie_recovers_limbo=False)
    target = SelfRecovering(cfg)
    execution = Execution(cfg, target)
    assert execution.begin()
    for scripted in CRASHED:
        execution.apply(take(cfg, execution.state, scripted))
    target._version += 1  # someone wrote the znode
    execution.apply(take(cfg, execution.state, step("ClientStartsRecovery", client="c2")))
    outcome = execution.finish()
    assert outcome.verdict is Verdict.UNDECIDED and outcome.bookies_own is None


def test_the_end_is_explained_by_what_the_bookies_did_after_the_last_step() -> None:
    target = SelfRecovering(CFG)
    execution = _crashed(target)
    target.act_on_their_own(execution.state, (*OWN_RECOVERY, LEAVES_LIMBO))
    outcome = execution.finish()
    assert outcome.verdict is Verdict.CLEAN, outcome.divergences
    assert outcome.bookies_own is not None
    assert (outcome.bookies_own.explained, outcome.bookies_own.recoveries) == (1, 1)
    assert outcome.steps[-1].action == BOOKIES_OWN
    # b1's limbo shows in no entry: the fewest steps that explain the end leave it there.
    assert {p.state.b_limbo[0] for p in execution.possible} == {True}


class TornFirstSnapshot(SelfRecovering):
    """A cluster whose end is read while the bookies' own recovery still runs: the first
    snapshot reads a bookie before the recovery's write-back reached it and the metadata after
    the close (4.18.0's ``make run``, limbo-crash); the next ones read the settled end."""

    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__(cfg)
        self.snapshots = 0

    def snapshot(self, cfg: ModelConfig) -> TargetSnapshot:
        self.snapshots += 1
        settled = super().snapshot(cfg)
        if self.snapshots > 1:
            return settled
        torn = {bookie: set() for bookie in settled.entries}
        return dataclasses.replace(settled, entries=torn)


def test_the_end_is_read_again_until_the_bookies_own_steps_have_settled() -> None:
    target = TornFirstSnapshot(CFG)
    execution = _crashed(target)
    waited: list[float] = []
    execution._sleep = waited.append
    target.act_on_their_own(execution.state, (*OWN_RECOVERY, LEAVES_LIMBO))
    outcome = execution.finish()
    # The torn end (no bookie holding anything of a closed ledger) was read again: the settled
    # one, read twice alike, is what the bookies' steps explain.
    assert outcome.verdict is Verdict.CLEAN, outcome.divergences
    assert target.snapshots == 3 and waited == [END_SETTLE_PAUSE_S] * 2
    # Compared as it was read, the torn end is a divergence no step explains.
    torn = TornFirstSnapshot(CFG)
    again = _crashed(torn)
    torn.act_on_their_own(again.state, (*OWN_RECOVERY, LEAVES_LIMBO))
    torn.snapshots = 0
    first = torn.snapshot(CFG)
    assert first.entries and not any(first.entries.values())
    assert again._matching_possible(first) is None
    assert again._compare_end(first, None) is None and again.divergences


def test_an_end_that_matches_or_no_bookies_own_client_is_read_once() -> None:
    target = TornFirstSnapshot(CFG)
    plain = Execution(dataclasses.replace(CFG, bookie_recovers_limbo=False, clients=2), target)
    plain._sleep = lambda _s: pytest.fail("no wait without the bookies' own client")
    assert plain._final_snapshot() is not None and target.snapshots == 1
    # With them: an end a state still possible is, as first read, is not read again.
    settled = SelfRecovering(CFG)
    execution = _crashed(settled)
    execution._sleep = lambda _s: pytest.fail("an end that matches is not read again")
    assert execution.finish().verdict is Verdict.CLEAN


# The bookies' own steps taken earlier than the observation that shows them ---------------------

#: ``qualify``'s limbo-crash configuration (two bookies, ack quorum 2, one add in flight).
QUALIFY_CFG = BOOKIE_AS_IMPLEMENTED.apply(SEED_001.protected)
#: 4.18.0's ``make run`` (limbo-crash, shard 2): w2 recovers e1 and writes it back; b1, which
#: confirmed the write-back, restarts empty, in limbo; then b2 takes the write-back.
RECOVERED_THEN_CRASHED = (
    step("ClientCreatesLedger", client="c1"),
    step("ClientSendsAddEntryRequests", client="c1"),
    step("BookieSendsAddConfirmedResponse", bookie="b1"),
    step("ClientReceivesAddConfirmedResponse", client="c1", peer="b1"),
    step("ClientStartsRecovery", client="c2"),
    step("BookieSendsFencingReadLacResponse", bookie="b1"),
    step("BookieSendsFencingReadLacResponse", bookie="b2"),
    step("BookieSendsAddFencedResponse", bookie="b2"),
    step("ClientReceivesFencingReadLacResponse", client="c2", peer="b1"),
    step("ClientSendsRecoveryReadRequests", client="c2"),
    step("BookieSendsReadResponse", bookie="b1"),
    step("BookieSendsReadResponse", bookie="b2", lost={"b2"}),
    step("ClientReceivesRecoveryReadResponse", client="c2", peer="b1"),
    step("ClientWritesBackEntry", client="c2"),
    step("ClientSendsRecoveryReadRequests", client="c2", lost={"b2"}),
    step("BookieSendsReadResponse", bookie="b1"),
    step("ClientReceivesRecoveryReadResponse", client="c2", peer="b1"),
    step("BookieSendsAddConfirmedResponse", bookie="b1"),
    step("RecoveryClientReceivesAddConfirmedResponse", client="c2", peer="b1"),
    step("BookieRestartsEmpty", bookie="b1"),
)
#: The bookies' client, right after the restart: b1 (limbo) answers Unknown, b2 does not hold
#: e1 yet (w2's write-back is still on its way), so the recovery closes the ledger empty.
OWN_RECOVERY_AT_ONCE = (
    step("ClientStartsRecovery", client="c3"),
    step("BookieSendsFencingReadLacResponse", bookie="b1", sender="c3"),
    step("BookieSendsFencingReadLacResponse", bookie="b2", sender="c3"),
    step("ClientReceivesFencingReadLacResponse", client="c3", peer="b1"),
    step("ClientReceivesFencingReadLacResponse", client="c3", peer="b2"),
    step("ClientSendsRecoveryReadRequests", client="c3"),
    step("BookieSendsReadResponse", bookie="b1", sender="c3"),
    step("BookieSendsReadResponse", bookie="b2", sender="c3"),
    step("ClientReceivesRecoveryReadResponse", client="c3", peer="b2"),
    step("RecoveryClientClosesLedger", client="c3"),
)
AFTER_THE_RESTART = (
    step("BookieSendsAddConfirmedResponse", bookie="b2"),
    step("RecoveryClientReceivesAddConfirmedResponse", client="c2", peer="b2"),
)


def test_the_bookies_recovery_right_after_a_restart_explains_an_end_it_no_longer_would() -> None:
    # Searched from the end, the bookies' client would read e1 from b2 (w2 wrote it back after
    # the restart) and close the ledger at e1; the ledger is CLOSED empty: their recovery read
    # b2 before the write-back reached it. Placed before the write-back, it explains the end.
    target = SelfRecovering(QUALIFY_CFG)
    execution = Execution(QUALIFY_CFG, target)
    assert execution.begin()
    for scripted in RECOVERED_THEN_CRASHED:
        execution.apply(take(QUALIFY_CFG, execution.state, scripted))
    state = execution.state
    for scripted in OWN_RECOVERY_AT_ONCE:
        state = take(QUALIFY_CFG, state, scripted).state
    assert (state.meta_status, state.meta_last_entry) == (STATUS_CLOSED, 0)
    target.act_on_their_own(execution.state, OWN_RECOVERY_AT_ONCE)
    for scripted in AFTER_THE_RESTART:
        execution.apply(take(QUALIFY_CFG, execution.state, scripted))
    assert not execution.stopped
    outcome = execution.finish()
    assert outcome.verdict is Verdict.CLEAN, outcome.divergences
    end = outcome.steps[-1]
    assert end.action == BOOKIES_OWN and end.bookies_own[0] == "earlier, before step 21:"
    assert execution.state.meta_last_entry == 0
