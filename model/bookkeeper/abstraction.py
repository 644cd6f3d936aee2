"""A coarse projection of BookKeeper states, for archive-guided exploration.

Two states share a cell when the ledger's metadata, each client's progress (status, recovery
phase, LAC, LAP, the entry being read, the last recoverable entry) and each bookie's essentials
(holds anything, fenced, in limbo) agree. Messages in flight and confirmation sets are left
out on purpose: a finer cell multiplies cells without adding new stories.
"""

from __future__ import annotations

from collections.abc import Hashable

from model.bookkeeper.records import State


def progress_cell(state: State) -> Hashable:
    return (
        state.meta_status,
        state.meta_last_entry,
        len(state.meta_fragments),
        tuple(
            (c.status, c.recovery_phase, c.lac, c.lap, c.curr_read_entry, c.last_recoverable_entry)
            for c in state.clients
        ),
        tuple(len(entries) for entries in state.b_entries),
        state.b_fenced,
        state.b_limbo,
        state.crashes,
    )
