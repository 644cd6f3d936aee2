"""The seeds' interleavings, in the spec's terms, as scripted steps.

Each is written so that it runs under both settings of the switch it is about: where the
outcome depends on the switch (a bookie confirms or rejects an add), the step names both
outcomes. With the switch off the interleaving ends in the seed's violation; with it on it
completes without one (or stops where the model shows the protection: `blocked_at`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from model.bookkeeper.config import ModelConfig
from model.bookkeeper.readings import SPEC_AS_INTENDED
from model.bookkeeper.scripted import ScriptedStep, step

ADD_ANSWERED = ("BookieSendsAddConfirmedResponse", "BookieSendsAddFencedResponse")
ADD_ANSWER_RECEIVED = ("ClientReceivesAddConfirmedResponse", "ClientReceivesAddFencedResponse")


@dataclass(frozen=True)
class Interleaving:
    name: str
    summary: str
    steps: tuple[ScriptedStep, ...]
    # Configuration with the protection on; `unprotected` switches it off.
    protected: ModelConfig
    unprotected: ModelConfig
    invariant: str
    notes: tuple[str, ...] = field(default=())


# Seed 000, Defect 1 (WQ=3, AQ=2): w1's add reaches b2 only; w2 fences b1 and b2 (the fence to
# b3 is lost); its recovery reads get NoSuchEntry from b1 and b3 (b2's answer is lost); it
# closes the ledger empty; then b3 takes w1's add, which is acknowledged beyond the end.
DEFECT_1 = Interleaving(
    name="defect1-fencing",
    summary="seed 000, Defect 1: recovery reads without the fence flag let an add through",
    steps=(
        step("ClientCreatesLedger", client="c1"),
        step("ClientSendsAddEntryRequests", client="c1", lost={"b1"}),
        step("ClientStartsRecovery", client="c2", lost={"b3"}),
        step("BookieSendsFencingReadLacResponse", bookie="b1"),
        step("BookieSendsAddConfirmedResponse", bookie="b2"),
        step("BookieSendsFencingReadLacResponse", bookie="b2"),
        step("ClientReceivesFencingReadLacResponse", client="c2", peer="b1"),
        step("ClientReceivesFencingReadLacResponse", client="c2", peer="b2"),
        step("ClientSendsRecoveryReadRequests", client="c2"),
        step("BookieSendsReadResponse", bookie="b1"),
        step("BookieSendsReadResponse", bookie="b3"),
        step("BookieSendsReadResponse", bookie="b2", lost={"b2"}),
        step("ClientReceivesRecoveryReadResponse", client="c2", peer="b1"),
        step("ClientReceivesRecoveryReadResponse", client="c2", peer="b3"),
        step("RecoveryClientClosesLedger", client="c2"),
        step(ADD_ANSWERED, bookie="b3"),
        step("ClientReceivesAddConfirmedResponse", client="c1", peer="b2"),
        step(ADD_ANSWER_RECEIVED, client="c1", peer="b3"),
    ),
    protected=ModelConfig(bookies=3, clients=2, write_quorum=3, ack_quorum=2),
    unprotected=ModelConfig(
        bookies=3, clients=2, write_quorum=3, ack_quorum=2, recovery_reads_fence=False
    ),
    invariant="NoDivergenceBetweenClientAndMetaData",
)

# Seed 000, Defect 2, in the spec's terms: w1 appends fragment 2:{b1,b3} after b2 times out;
# w2 recovers from entry 1 (no fragment floor), reads e1 from b1, writes it back, b1 times out,
# and w2 "changes the ensemble" at entry 1, after fragment 2. With the fix, w2 reads from e2.
DEFECT_2_PREFIX: tuple[ScriptedStep, ...] = (
    step("ClientCreatesLedger", client="c1"),
    step("ClientSendsAddEntryRequests", client="c1", lost={"b2"}),
    step("BookieSendsAddConfirmedResponse", bookie="b1"),
    step("ClientReceivesAddConfirmedResponse", client="c1", peer="b1"),
    step("ClientChangesEnsemble", client="c1"),
    step("ClientStartsRecovery", client="c2"),
    step("BookieSendsFencingReadLacResponse", bookie="b1"),
    step("BookieSendsFencingReadLacResponse", bookie="b3"),
    step("ClientReceivesFencingReadLacResponse", client="c2", peer="b1"),
    step("ClientReceivesFencingReadLacResponse", client="c2", peer="b3"),
)
DEFECT_2 = Interleaving(
    name="defect2-invalid-fragment",
    summary="seed 000, Defect 2: recovery from entry 1 appends a fragment before the last one",
    steps=(
        *DEFECT_2_PREFIX,
        step("ClientSendsRecoveryReadRequests", client="c2", entry=1, lost={"b3"}),
        step("BookieSendsReadResponse", bookie="b1"),
        step("ClientReceivesRecoveryReadResponse", client="c2", peer="b1"),
        step("ClientWritesBackEntry", client="c2", lost={"b1"}),
        step("RecoveryClientChangesEnsemble", client="c2"),
    ),
    protected=ModelConfig(bookies=3, clients=2, write_quorum=2, ack_quorum=1, send_limit=2),
    unprotected=ModelConfig(
        bookies=3,
        clients=2,
        write_quorum=2,
        ack_quorum=1,
        send_limit=2,
        recovery_starts_at_fragment=False,
    ),
    invariant="OnlyValidFragments",
    notes=(
        "with the fix the recovery client reads e2 first: the steps after the fencing phase "
        "take a different course, so the interleaving stops there",
    ),
)

# Seed 001 (E=WQ=AQ=2): e1 is on b1 and b2 and acknowledged; b1 crashes and loses it; w2's fence
# to b2 is lost; b1 answers the LAC read; recovery reads e1: b1 says NoSuchEntry (it should have
# it), b2's read is lost, and w2 closes the ledger empty. With limbo, b1 answers Unknown and
# recovery cannot proceed on its word. This is the seed's own story, checked under TLC's reading
# of the spec (the model tests and the qualification's limbo configurations use it).
LIMBO_CRASH_PREFIX: tuple[ScriptedStep, ...] = (
    step("ClientCreatesLedger", client="c1"),
    step("ClientSendsAddEntryRequests", client="c1"),
    step("BookieSendsAddConfirmedResponse", bookie="b1"),
    step("BookieSendsAddConfirmedResponse", bookie="b2"),
    step("ClientReceivesAddConfirmedResponse", client="c1", peer="b1"),
    step("ClientReceivesAddConfirmedResponse", client="c1", peer="b2"),
    step("BookieRestartsEmpty", bookie="b1"),
    step("ClientStartsRecovery", client="c2", lost={"b2"}),
    step("BookieSendsFencingReadLacResponse", bookie="b1"),
    step("ClientReceivesFencingReadLacResponse", client="c2", peer="b1"),
)
_LIMBO_BASE = {
    "bookies": 2,
    "clients": 2,
    "write_quorum": 2,
    "ack_quorum": 2,
    "max_crashes": 1,
    "crash_when_closed": False,
}
SEED_001 = Interleaving(
    name="seed-001",
    summary="seed 001 as written: the fence and the read to the healthy bookie are lost",
    steps=(
        *LIMBO_CRASH_PREFIX,
        step("ClientSendsRecoveryReadRequests", client="c2", lost={"b2"}),
        step("BookieSendsReadResponse", bookie="b1"),
        step("ClientReceivesRecoveryReadResponse", client="c2", peer="b1"),
        step("RecoveryClientClosesLedger", client="c2"),
    ),
    protected=ModelConfig(
        **_LIMBO_BASE,  # type: ignore[arg-type]
        limbo_on_unclean_shutdown=True,
        fence_on_unclean_shutdown=True,
    ),
    unprotected=ModelConfig(**_LIMBO_BASE),  # type: ignore[arg-type]
    invariant="NoDivergenceBetweenClientAndMetaData",
    notes=(
        "with limbo, b1's Unknown does not count towards fencing coverage: recovery waits for "
        "b2, whose fence was lost, so the interleaving stops there (the ledger is not closed)",
    ),
)

# The scenario `limbo-crash`: seed 001 with every message delivered, so that with limbo the
# story runs to its end on a real cluster. b1 loses e1 in a crash; recovery fences both bookies
# and reads e1 from both. b1 answers first. Without limbo its NoSuchEntry alone decides e1
# absent (with WQ=AQ=2 one negative answer is enough) and w2 closes the ledger empty: e1,
# acknowledged to w1, is lost. With limbo b1 answers Unknown (EUNKNOWNLEDGERSTATE on real
# bookies), which decides nothing; b2's OK decides e1 present, w2 writes it back to both
# bookies (a limbo bookie accepts recovery adds), finds no e2 and closes the ledger at e1.
# Deciding on b1's answer while b2's is still in flight needs ``late_read_answers_ignored``
# (what BookKeeper's client does; see ModelConfig), the reading SPEC_AS_INTENDED: under TLC's
# reading of the spec a decision waits until no other answer is in flight, and the seed loses
# b2's read to get there.
LIMBO_CRASH = Interleaving(
    name="limbo-crash",
    summary="seed 001: a bookie that lost its data answers recovery; limbo makes it say Unknown",
    steps=(
        *LIMBO_CRASH_PREFIX[:7],
        step("ClientStartsRecovery", client="c2"),
        step("BookieSendsFencingReadLacResponse", bookie="b1"),
        step("BookieSendsFencingReadLacResponse", bookie="b2"),
        step("ClientReceivesFencingReadLacResponse", client="c2", peer="b1"),
        step("ClientReceivesFencingReadLacResponse", client="c2", peer="b2"),
        step("ClientSendsRecoveryReadRequests", client="c2", entry=1),
        step("BookieSendsReadResponse", bookie="b1"),
        step("BookieSendsReadResponse", bookie="b2"),
        # Without limbo: b1's NoSuchEntry decides e1 absent. With limbo: Unknown, wait for b2.
        step("ClientReceivesRecoveryReadResponse", client="c2", peer="b1"),
        # Without limbo the ledger is closed empty here (the violation ends the story); with
        # limbo b2's OK for e1 is received instead.
        step(("RecoveryClientClosesLedger", "ClientReceivesRecoveryReadResponse"), client="c2"),
        step("ClientWritesBackEntry", client="c2", entry=1),
        step("BookieSendsAddConfirmedResponse", bookie="b1"),
        step("BookieSendsAddConfirmedResponse", bookie="b2"),
        step("RecoveryClientReceivesAddConfirmedResponse", client="c2", peer="b1"),
        step("RecoveryClientReceivesAddConfirmedResponse", client="c2", peer="b2"),
        step("ClientSendsRecoveryReadRequests", client="c2", entry=2),
        step("BookieSendsReadResponse", bookie="b1"),
        step("ClientReceivesRecoveryReadResponse", client="c2", peer="b1"),
        step("BookieSendsReadResponse", bookie="b2"),
        step("ClientReceivesRecoveryReadResponse", client="c2", peer="b2"),
        step("RecoveryClientClosesLedger", client="c2"),
    ),
    protected=SPEC_AS_INTENDED.apply(
        ModelConfig(
            **_LIMBO_BASE,  # type: ignore[arg-type]
            limbo_on_unclean_shutdown=True,
            fence_on_unclean_shutdown=True,
        )
    ),
    unprotected=SPEC_AS_INTENDED.apply(ModelConfig(**_LIMBO_BASE)),  # type: ignore[arg-type]
    invariant="NoDivergenceBetweenClientAndMetaData",
)

ALL = {i.name: i for i in (DEFECT_1, DEFECT_2, SEED_001, LIMBO_CRASH)}
