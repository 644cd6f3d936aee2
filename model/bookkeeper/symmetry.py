"""Symmetry reduction over bookies and clients (the spec's ``Symmetry`` set).

``canonical_fingerprint`` gives every state of an orbit under the permutations of bookies
and of clients the same fingerprint (the smallest hash over the orbit), so an explorer stores
one state per orbit, as TLC does with ``SYMMETRY Symmetry``. ``permute`` is the renaming
itself; the fingerprint hashes the same renaming as plain tuples, without building states.

As with TLC, symmetry is only sound when the spec treats bookies and clients alike; CHOOSE in
``SelectEnsemble`` does not quite, so reduced counts are for scale, not for fidelity checks.
"""

from __future__ import annotations

import itertools
from functools import cache

from model.bookkeeper.config import ModelConfig
from model.bookkeeper.records import (
    ClientState,
    Fragment,
    Message,
    PendingAddOp,
    ReadResponse,
    State,
)

_Permutation = tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]


@cache
def _permutations(bookies: int, clients: int) -> tuple[_Permutation, ...]:
    """(bookie map, client map, bitmask table) for every non-identity permutation pair."""
    out = []
    for bmap in itertools.permutations(range(bookies)):
        table = tuple(
            sum(1 << bmap[b] for b in range(bookies) if mask >> b & 1)
            for mask in range(1 << bookies)
        )
        for cmap in itertools.permutations(range(clients)):
            if bmap == tuple(range(bookies)) and cmap == tuple(range(clients)):
                continue
            out.append((bmap, cmap, table))
    return tuple(out)


def _order(order: tuple[int, ...], bmap: tuple[int, ...]) -> tuple[int, ...]:
    # A striped ensemble's positions name bookies: renamed with them, never re-sorted.
    return tuple(bmap[b] for b in order)


def _fragment(f: Fragment | None, table: tuple[int, ...], bmap: tuple[int, ...]) -> Fragment | None:
    return (
        None
        if f is None
        else Fragment(f.id, table[f.ensemble], f.first_entry_id, _order(f.order, bmap))
    )


def _message(m: Message, bmap: tuple[int, ...], cmap: tuple[int, ...]) -> Message:
    return m._replace(bookie=bmap[m.bookie], cid=cmap[m.cid])


def _client(
    c: ClientState, bmap: tuple[int, ...], cmap: tuple[int, ...], table: tuple[int, ...]
) -> ClientState:
    return ClientState(
        id=cmap[c.id],
        meta_version=c.meta_version,
        status=c.status,
        fragments=tuple(_fragment(f, table, bmap) for f in c.fragments),  # type: ignore[misc]
        curr_fragment=_fragment(c.curr_fragment, table, bmap),
        pending_add_ops=frozenset(
            PendingAddOp(op.entry, op.fragment_id, table[op.ensemble], _order(op.order, bmap))
            for op in c.pending_add_ops
        ),
        lap=c.lap,
        lac=c.lac,
        confirmed=tuple(table[m] for m in c.confirmed),
        fenced=table[c.fenced],
        recovery_ensemble=table[c.recovery_ensemble],
        curr_read_entry=c.curr_read_entry,
        read_responses=frozenset(
            ReadResponse(r.kind, bmap[r.bookie], cmap[r.cid], r.entry, r.fence, r.code)
            for r in c.read_responses
        ),
        recovery_phase=c.recovery_phase,
        last_recoverable_entry=c.last_recoverable_entry,
        recovery_order=_order(c.recovery_order, bmap),
    )


def _by_map(values: tuple[object, ...], mapping: tuple[int, ...]) -> tuple[object, ...]:
    out: list[object] = [None] * len(values)
    for old, new in enumerate(mapping):
        out[new] = values[old]
    return tuple(out)


def permute(
    s: State, bmap: tuple[int, ...], cmap: tuple[int, ...], table: tuple[int, ...]
) -> State:
    """The state with bookie ``b`` renamed ``bmap[b]`` and client ``c`` renamed ``cmap[c]``."""
    clients = [_client(c, bmap, cmap, table) for c in s.clients]
    clients.sort(key=lambda c: c.id)
    return State(
        meta_status=s.meta_status,
        meta_fragments=tuple(_fragment(f, table, bmap) for f in s.meta_fragments),  # type: ignore[misc]
        meta_last_entry=s.meta_last_entry,
        meta_version=s.meta_version,
        b_entries=_by_map(s.b_entries, bmap),  # type: ignore[arg-type]
        b_fenced=_by_map(s.b_fenced, bmap),  # type: ignore[arg-type]
        b_lac=_by_map(s.b_lac, bmap),  # type: ignore[arg-type]
        b_limbo=_by_map(s.b_limbo, bmap),  # type: ignore[arg-type]
        crashes=s.crashes,
        clients=tuple(clients),
        messages=frozenset((_message(m, bmap, cmap), count) for m, count in s.messages),
    )


def _plain_fragment(
    f: Fragment | None, table: tuple[int, ...], bmap: tuple[int, ...]
) -> tuple[object, ...] | None:
    return None if f is None else (f.id, table[f.ensemble], f.first_entry_id, _order(f.order, bmap))


def _plain_message(m: Message, bmap: tuple[int, ...], cmap: tuple[int, ...]) -> tuple[object, ...]:
    return (m[0], bmap[m[1]], cmap[m[2]], *m[3:])


def _permuted_hash(
    s: State, bmap: tuple[int, ...], cmap: tuple[int, ...], table: tuple[int, ...]
) -> int:
    """``hash(permute(s, ...))`` without building the permuted state.

    A NamedTuple hashes as the plain tuple of its fields, so plain tuples give the same value
    at a fraction of the cost: this is what makes symmetry reduction affordable.
    """
    clients: list[tuple[object, ...]] = [()] * len(s.clients)
    for c in s.clients:
        clients[cmap[c.id]] = (
            cmap[c.id],
            c.meta_version,
            c.status,
            tuple(_plain_fragment(f, table, bmap) for f in c.fragments),
            _plain_fragment(c.curr_fragment, table, bmap),
            frozenset(
                (op.entry, op.fragment_id, table[op.ensemble], _order(op.order, bmap))
                for op in c.pending_add_ops
            ),
            c.lap,
            c.lac,
            tuple(table[m] for m in c.confirmed),
            table[c.fenced],
            table[c.recovery_ensemble],
            c.curr_read_entry,
            frozenset(_plain_message(r, bmap, cmap) for r in c.read_responses),
            c.recovery_phase,
            c.last_recoverable_entry,
            _order(c.recovery_order, bmap),
        )
    return hash(
        (
            s.meta_status,
            tuple(_plain_fragment(f, table, bmap) for f in s.meta_fragments),
            s.meta_last_entry,
            s.meta_version,
            _by_map(s.b_entries, bmap),
            _by_map(s.b_fenced, bmap),
            _by_map(s.b_lac, bmap),
            _by_map(s.b_limbo, bmap),
            s.crashes,
            tuple(clients),
            frozenset((_plain_message(m, bmap, cmap), count) for m, count in s.messages),
        )
    )


def canonical_fingerprint(cfg: ModelConfig, s: State) -> int:
    """The smallest hash over the orbit of ``s``: equal for every member of the orbit.

    Each candidate equals ``hash(permute(s, ...))`` (tested), computed without building the
    permuted state.
    """
    best = hash(s)
    for bmap, cmap, table in _permutations(cfg.bookies, cfg.clients):
        h = _permuted_hash(s, bmap, cmap, table)
        if h < best:
            best = h
    return best
