"""The spec's ``AllAckedEntriesAreReadable`` in a story whose bookies the plan wiped.

A fail-over judge takes each restart without data as the spec's ``BookieRestartsEmpty``: the
wiped bookie's lost fence is what #4812 and the lost-fence bug turn on. But the plan's wipes
also lose copies by design: wipe every bookie an acknowledged entry reached and the entry is
gone, which the spec's invariant counts as a violation although it is the plan's doing, not
BookKeeper's (the check on the real cluster excuses it the same way:
``WriterStory._wiped_copies``).

:class:`ReadabilityBeyondWipes` is the invariant with that one exception: an acknowledged
entry that no bookie of its write set holds is excused when some bookie of that write set
held it earlier in the story. In the model only ``BookieRestartsEmpty`` takes an entry off a
bookie, so such a bookie lost it to a wipe, and every bookie of the write set that ever had it
did. An entry the write set never held (metadata naming bookies that never got it: #3005,
the throttled add) is a violation as the spec says.
"""

from __future__ import annotations

from model.bookkeeper.config import ModelConfig
from model.bookkeeper.invariants import Invariant, unreadable_acked_entries
from model.bookkeeper.records import State

READABILITY = "AllAckedEntriesAreReadable"


class ReadabilityBeyondWipes:
    """``AllAckedEntriesAreReadable`` that excuses the entries the plan's wipes erased.

    :meth:`observe` must see every state of the story in order (the judge calls it after each
    step); :meth:`check` is the invariant, evaluated on each new state before that."""

    def __init__(self) -> None:
        #: Model entry id -> the bookies (bit mask) that held it in some state observed.
        self.held: dict[int, int] = {}
        #: The entries excused (model entry ids), for the judge's notes.
        self.excused: set[int] = set()

    def observe(self, s: State) -> None:
        for b, entries in enumerate(s.b_entries):
            for entry in entries:
                self.held[entry.id] = self.held.get(entry.id, 0) | 1 << b

    def check(self, cfg: ModelConfig, s: State) -> bool:
        for entry_id, holders in unreadable_acked_entries(cfg, s):
            if not holders & self.held.get(entry_id, 0):
                return False  # its write set never held it
            self.excused.add(entry_id)  # every copy it had was wiped
        return True

    def replacing(self, invariants: tuple[Invariant, ...]) -> tuple[Invariant, ...]:
        """``invariants`` with the spec's readability invariant replaced by this one."""
        return tuple(
            Invariant(READABILITY, self.check) if i.name == READABILITY else i for i in invariants
        )


__all__ = ["READABILITY", "ReadabilityBeyondWipes"]
