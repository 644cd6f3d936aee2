"""Danger signals: how close a state is to the stories that lose data, for ``hypothesis.target``.

A score, not a verdict. It grows with the ingredients of the known defects: an add that has
reached ack quorum minus one while a recovery is under way (the writer may still complete it),
bookies of the last ensemble that a recovery has not fenced while it reads (Defect 1's gap),
and bookies that restarted empty while the ledger is not closed (the limbo story).
"""

from __future__ import annotations

from model.bookkeeper.config import ModelConfig
from model.bookkeeper.records import (
    READ_WRITE_PHASE,
    STATUS_CLOSED,
    STATUS_IN_RECOVERY,
    State,
    bookies_of,
)


def danger(cfg: ModelConfig, state: State) -> int:
    recovering = [c for c in state.clients if c.status == STATUS_IN_RECOVERY]
    if not recovering:
        return 0
    score = 1
    for c in state.clients:
        for op in c.pending_add_ops:
            acks = (
                bin(c.confirmed[op.entry.id - 1]).count("1")
                if op.entry.id <= len(c.confirmed)
                else 0
            )
            if acks == cfg.ack_quorum - 1:
                score += 2
    last = state.meta_fragments[-1] if state.meta_fragments else None
    if last is not None and any(c.recovery_phase == READ_WRITE_PHASE for c in recovering):
        score += sum(1 for b in bookies_of(last.ensemble) if not state.b_fenced[b])
    if state.crashes and state.meta_status != STATUS_CLOSED:
        score += state.crashes
    return score
