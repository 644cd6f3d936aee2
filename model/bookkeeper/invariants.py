"""The spec's invariants as named predicates over a state.

The seed copy of the spec is cut off at the first invariant; these follow the published
BookKeeperProtocol.tla (Vanlightly/bookkeeper-tlaplus). ``OnlyValidFragments`` comes from the
spec's BookKeeperProtocolWithLimbo variant and catches Defect 2.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from typing import NamedTuple

from model.bookkeeper.actions import fragment_of_entry_id, writeset
from model.bookkeeper.config import ModelConfig
from model.bookkeeper.records import (
    CLIENT_CLOSING,
    RECOVERY_ABORTED,
    STATUS_CLOSED,
    STATUS_IN_RECOVERY,
    STATUS_OPEN,
    Fragment,
    State,
)

_META_STATUSES = frozenset({None, STATUS_OPEN, STATUS_IN_RECOVERY, STATUS_CLOSED})


def type_ok(cfg: ModelConfig, s: State) -> bool:
    """``TypeOK``: the variables hold values of the right types."""
    entry_ids = range(1, cfg.send_limit + 1)
    return (
        s.meta_status in _META_STATUSES
        and s.meta_last_entry >= 0
        and s.meta_version >= 0
        and len(s.b_fenced) == cfg.bookies
        and all(isinstance(f, bool) for f in s.b_fenced)
        and len(s.b_entries) == cfg.bookies
        and all(
            e.id in entry_ids and (e.data in entry_ids or e.data == 0)
            for es in s.b_entries
            for e in es
        )
        and len(s.b_lac) == cfg.bookies
        and all(lac >= 0 for lac in s.b_lac)
    )


def no_divergence_between_client_and_metadata(cfg: ModelConfig, s: State) -> bool:
    """``NoDivergenceBetweenClientAndMetaData``.

    Once the ledger is CLOSED, no client that took part (status not Nil) has a LAC beyond the
    ledger's last entry: an acknowledged entry past the end is truncated, i.e. lost.
    """
    if s.meta_status != STATUS_CLOSED:
        return True
    # With ``fenced_writer_closes`` the writer may close the ledger while another client
    # recovers it: that client's LAC is its recovery's progress, acknowledged to nobody, and
    # it ends with the ledger's last entry (``RecoveryClientClosesLedger`` finds it closed) or
    # gives up (RECOVERY_ABORTED), still acknowledging nothing.
    # So with ``bookie_recovers_limbo``: the bookies' own client and another client may both
    # recover the ledger, and the one that closes it first ends the other's recovery, whose
    # LAC (its write-backs' progress) was acknowledged to nobody.
    exempt = cfg.fenced_writer_closes or cfg.bookie_recovers_limbo
    recovering = (STATUS_IN_RECOVERY, RECOVERY_ABORTED) if exempt else ()
    return all(
        c.status is None or c.status in recovering or c.lac <= s.meta_last_entry for c in s.clients
    )


def unreadable_acked_entries(cfg: ModelConfig, s: State) -> Iterator[tuple[int, int]]:
    """Each entry a client acknowledged that no bookie of its write set holds, with that write
    set (a bookie mask): what ``AllAckedEntriesAreReadable`` forbids."""
    for c in s.clients:
        # A CLOSING writer (``fenced_writer_closes``) still answers for what it acknowledged.
        if c.status not in (STATUS_OPEN, STATUS_CLOSED, CLIENT_CLOSING) or c.lac <= 0:
            continue
        for entry_id in range(1, c.lac + 1):
            fragment = fragment_of_entry_id(entry_id, s.meta_fragments)
            holders = writeset(cfg, fragment.ensemble, entry_id, fragment.order)
            if not any(
                holders >> b & 1 and any(e.id == entry_id for e in s.b_entries[b])
                for b in range(cfg.bookies)
            ):
                yield entry_id, holders


def all_acked_entries_are_readable(cfg: ModelConfig, s: State) -> bool:
    """``AllAckedEntriesAreReadable``: each acknowledged entry is on a bookie of its fragment."""
    return next(unreadable_acked_entries(cfg, s), None) is None


def all_committed_entries_reach_ack_quorum(cfg: ModelConfig, s: State) -> bool:
    """``AllCommittedEntriesReachAckQuorum``: once CLOSED, every entry has AQ copies.

    Only meaningful without bookie data loss; not checked when crashes are enabled.
    """
    if s.meta_status != STATUS_CLOSED or s.meta_last_entry <= 0:
        return True
    for entry_id in range(1, s.meta_last_entry + 1):
        fragment = fragment_of_entry_id(entry_id, s.meta_fragments)
        holders = writeset(cfg, fragment.ensemble, entry_id, fragment.order)
        copies = sum(
            1
            for b in range(cfg.bookies)
            if holders >> b & 1 and any(e.id == entry_id for e in s.b_entries[b])
        )
        if copies < cfg.ack_quorum:
            return False
    return True


def no_out_of_order_entries(cfg: ModelConfig, s: State) -> bool:
    """``NoOutOfOrderEntries``: every stored entry's data equals its id."""
    return all(e.id == e.data for es in s.b_entries for e in es)


def _increasing(fragments: tuple[Fragment, ...]) -> bool:
    return all(a.first_entry_id < b.first_entry_id for a, b in itertools.pairwise(fragments))


def only_valid_fragments(cfg: ModelConfig, s: State) -> bool:
    """``OnlyValidFragments``: no fragment starts at or before the start of the one before it.

    Defect 2: a recovery client that reads from entry 1 instead of from its fragment can write
    back an entry of an earlier fragment and then append a fragment that starts before the
    current one.
    """
    return _increasing(s.meta_fragments) and all(_increasing(c.fragments) for c in s.clients)


class Invariant(NamedTuple):
    name: str
    check: Callable[[ModelConfig, State], bool]


ALL_INVARIANTS: tuple[Invariant, ...] = (
    Invariant("TypeOK", type_ok),
    Invariant("NoDivergenceBetweenClientAndMetaData", no_divergence_between_client_and_metadata),
    Invariant("AllAckedEntriesAreReadable", all_acked_entries_are_readable),
    Invariant("AllCommittedEntriesReachAckQuorum", all_committed_entries_reach_ack_quorum),
    Invariant("NoOutOfOrderEntries", no_out_of_order_entries),
    Invariant("OnlyValidFragments", only_valid_fragments),
)


def invariants_for(cfg: ModelConfig) -> tuple[Invariant, ...]:
    """The invariants that are meaningful for a configuration."""
    if cfg.max_crashes:
        return tuple(i for i in ALL_INVARIANTS if i.name != "AllCommittedEntriesReachAckQuorum")
    return ALL_INVARIANTS


def violated(cfg: ModelConfig, s: State, invariants: tuple[Invariant, ...]) -> list[str]:
    """Names of the invariants ``s`` violates."""
    return [inv.name for inv in invariants if not inv.check(cfg, s)]
