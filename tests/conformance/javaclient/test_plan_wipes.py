"""The spec's readability invariant in a story whose bookies the plan wiped (:mod:`.plan_wipes`)."""

from __future__ import annotations

from conformance.javaclient.plan_wipes import READABILITY, ReadabilityBeyondWipes
from model.bookkeeper.actions import init_state
from model.bookkeeper.config import ModelConfig
from model.bookkeeper.invariants import ALL_INVARIANTS, all_acked_entries_are_readable
from model.bookkeeper.records import (
    CLIENT_CLOSING,
    STATUS_CLOSED,
    STATUS_IN_RECOVERY,
    STATUS_OPEN,
    Entry,
    Fragment,
    State,
)

# E=2 WQ=AQ=2 on three bookies: b1, b2 the ensemble (bits 0 and 1), b3 the spare.
CFG = ModelConfig(bookies=3, clients=1, ensemble_size=2, write_quorum=2, ack_quorum=2)
E1 = Entry(1, 1)


def _state(holders: tuple[int, ...], *, status: int | None = STATUS_OPEN, lac: int = 1) -> State:
    s = init_state(CFG)
    writer = s.clients[0]._replace(status=status, lac=lac)
    return s._replace(
        meta_status=STATUS_OPEN,
        meta_fragments=(Fragment(1, 0b011, 1),),
        b_entries=tuple(frozenset({E1}) if b in holders else frozenset() for b in range(3)),
        clients=(writer,),
    )


def test_an_entry_its_write_set_holds_is_readable() -> None:
    invariant = ReadabilityBeyondWipes()
    state = _state((1,))
    invariant.observe(_state(()))
    assert invariant.check(CFG, state)
    assert not invariant.excused


def test_an_entry_whose_every_holder_was_wiped_is_excused() -> None:
    invariant = ReadabilityBeyondWipes()
    invariant.observe(_state((0, 1)))
    invariant.observe(_state((0,)))  # b2 wiped
    wiped = _state(())  # then b1
    assert not all_acked_entries_are_readable(CFG, wiped)  # the spec's counts it
    assert invariant.check(CFG, wiped)
    assert invariant.excused == {1}


def test_an_entry_its_write_set_never_held_is_a_violation() -> None:
    invariant = ReadabilityBeyondWipes()
    invariant.observe(_state((2,)))  # on the spare only: the metadata names b1, b2
    assert not invariant.check(CFG, _state((2,)))
    assert not invariant.check(CFG, _state(()))
    assert not invariant.excused


def test_a_closing_or_closed_writer_answers_for_its_entries_and_others_do_not() -> None:
    for answering in (STATUS_OPEN, STATUS_CLOSED, CLIENT_CLOSING):
        assert not ReadabilityBeyondWipes().check(CFG, _state((), status=answering))
    for other in (None, STATUS_IN_RECOVERY):
        assert ReadabilityBeyondWipes().check(CFG, _state((), status=other))
    assert ReadabilityBeyondWipes().check(CFG, _state((), lac=0))


def test_it_replaces_the_spec_s_readability_invariant_only() -> None:
    invariant = ReadabilityBeyondWipes()
    replaced = invariant.replacing(ALL_INVARIANTS)
    assert [i.name for i in replaced] == [i.name for i in ALL_INVARIANTS]
    for before, after in zip(ALL_INVARIANTS, replaced, strict=True):
        if before.name == READABILITY:
            assert after.check == invariant.check
        else:
            assert after is before
