"""Symmetry reduction over bookies and clients (the spec's ``Symmetry`` set).

``canonical_fingerprint`` gives every state of an orbit under the permutations of bookies
and of clients the same fingerprint, so an explorer stores one state per orbit, as TLC does
with ``SYMMETRY Symmetry``. ``permute`` is the renaming itself; ``_permuted_hash`` hashes the
same renaming as plain tuples, without building states.

The fingerprint is the smallest hash over the orbit members whose bookies, and whose
clients, are in ascending order of a key. The smallest hash over the whole orbit (still
here as ``orbit_min_fingerprint``, the tests' reference) costs one hash per renaming, 12
for 3 bookies and 2 clients, and was nine tenths of a symmetric search. The keys are what
makes the smaller candidate set sound: a key names nothing but its owner's own values and
how it relates to the others' *own* values (never an index), so renaming a state carries
each key to the renamed owner, ``key(pi(s))[pi(k)] == key(s)[k]`` (tested on random
reachable states). Then the members of an orbit with sorted keys are the same set whichever
member one starts from, and so is the smallest hash among them. Candidates are the renamings
that sort the keys, permuting freely within ties (``model.search.renamings``, cached per order and
tie pattern).

Two levels of key, because a key must cost less than the hashes it saves:

- ``quick_keys``: own values (a bookie's entries, fenced, LAC, limbo; a client's status,
  LAP, LAC, phase, sizes) and how many messages of each kind and delivery count it has.
  In the Defect-1 search they leave one candidate in 93% of states.
- ``signatures``, only when quick keys tie, to order within the tie: the contents of each
  message and read response with the other end's own values, the client sets (fenced,
  confirmed, ensembles, pending adds) each bookie is in, and their sizes for clients. Sums of
  hashes make these multisets, independent of the order of ids. Almost every tie left is
  a true automorphism (every candidate gives the same hash).

Keys are only compared, never part of the fingerprint: a coarser key only means more
candidates, never a wrong merge, and two keys whose hashes collide merely tie.

As with TLC, symmetry is only sound when the spec treats bookies and clients alike; CHOOSE in
``SelectEnsemble`` does not quite, so reduced counts are for scale, not for fidelity checks.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from functools import cache

from model.bookkeeper.config import ModelConfig
from model.bookkeeper.records import (
    KIND_NAMES,
    ClientState,
    Fragment,
    Message,
    ReadResponse,
    State,
)
from model.search.renamings import mask_table, sorted_with_ties, sorting_renamings

_Permutation = tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]


@cache
def _permutations(bookies: int, clients: int) -> tuple[_Permutation, ...]:
    """(bookie map, client map, bitmask table) for every non-identity permutation pair."""
    out = []
    for bmap in itertools.permutations(range(bookies)):
        table = mask_table(bmap)
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
            op._replace(ensemble=table[op.ensemble], order=_order(op.order, bmap))
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


def _plain_fragments(
    fragments: tuple[Fragment, ...], table: tuple[int, ...], bmap: tuple[int, ...]
) -> tuple[tuple[object, ...], ...]:
    # Unpacked and inlined (no call per fragment): this runs for every candidate renaming.
    return tuple(
        [
            (i, table[e], first, tuple([bmap[b] for b in o]) if o else ())
            for i, e, first, o in fragments
        ]
    )


@cache
def _inverse(mapping: tuple[int, ...]) -> tuple[int, ...]:
    out = [0] * len(mapping)
    for old, new in enumerate(mapping):
        out[new] = old
    return tuple(out)


def _permuted_hash(
    s: State, bmap: tuple[int, ...], cmap: tuple[int, ...], table: tuple[int, ...]
) -> int:
    """``hash(permute(s, ...))`` without building the permuted state.

    A NamedTuple hashes as the plain tuple of its fields, so plain tuples give the same value
    at a fraction of the cost: this is what makes symmetry reduction affordable. Written
    flat (comprehensions, no helper call per message or fragment): it is the inner loop.
    """
    clients: list[tuple[object, ...]] = [()] * len(s.clients)
    for c in s.clients:
        new_id = cmap[c.id]
        curr = c.curr_fragment
        ro = c.recovery_order
        clients[new_id] = (
            new_id,
            c.meta_version,
            c.status,
            _plain_fragments(c.fragments, table, bmap),
            None
            if curr is None
            else (
                curr.id,
                table[curr.ensemble],
                curr.first_entry_id,
                tuple([bmap[b] for b in curr.order]) if curr.order else (),
            ),
            frozenset(
                [
                    (entry, fid, table[e], tuple([bmap[b] for b in o]) if o else (), lac)
                    for entry, fid, e, o, lac in c.pending_add_ops
                ]
            ),
            c.lap,
            c.lac,
            tuple([table[m] for m in c.confirmed]),
            table[c.fenced],
            table[c.recovery_ensemble],
            c.curr_read_entry,
            frozenset([(r[0], bmap[r[1]], cmap[r[2]], *r[3:]) for r in c.read_responses]),
            c.recovery_phase,
            c.last_recoverable_entry,
            tuple([bmap[b] for b in ro]) if ro else (),
        )
    inv = _inverse(bmap)
    entries, fenced, lac, limbo = s.b_entries, s.b_fenced, s.b_lac, s.b_limbo
    return hash(
        (
            s.meta_status,
            _plain_fragments(s.meta_fragments, table, bmap),
            s.meta_last_entry,
            s.meta_version,
            tuple([entries[b] for b in inv]),
            tuple([fenced[b] for b in inv]),
            tuple([lac[b] for b in inv]),
            tuple([limbo[b] for b in inv]),
            s.crashes,
            tuple(clients),
            frozenset([((m[0], bmap[m[1]], cmap[m[2]], *m[3:]), n) for m, n in s.messages]),
        )
    )


def orbit_min_fingerprint(cfg: ModelConfig, s: State) -> int:
    """The smallest hash over the whole orbit of ``s`` (every renaming): the reference that
    ``canonical_fingerprint`` must agree with orbit for orbit (tests only: 12 hashes a state
    for 3 bookies and 2 clients)."""
    best = hash(s)
    for bmap, cmap, table in _permutations(cfg.bookies, cfg.clients):
        h = _permuted_hash(s, bmap, cmap, table)
        if h < best:
            best = h
    return best


# --------------------------------------------------------------------------------------------
# Signatures: what a bookie or client looks like without naming any other bookie or client
# --------------------------------------------------------------------------------------------


def _client_own(c: ClientState) -> int:
    # The client's values that name no bookie and no client.
    return hash(
        (
            c.meta_version,
            c.status,
            c.lap,
            c.lac,
            c.curr_read_entry,
            c.recovery_phase,
            c.last_recoverable_entry,
            len(c.fragments),
            c.curr_fragment is None,
        )
    )


def _client_masks(c: ClientState) -> tuple[int, ...]:
    # Every bookie set of a client, in an order that names nobody (field, then position).
    return (
        c.fenced,
        c.recovery_ensemble,
        *c.confirmed,
        *[f.ensemble for f in c.fragments],
        0 if c.curr_fragment is None else c.curr_fragment.ensemble,
    )


def signatures(s: State) -> tuple[list[int], list[int]]:
    """A key per bookie and per client that renaming leaves with its owner.

    ``sig(permute(s, b, c))[b[k]] == sig(s)[k]`` for every renaming (tested): each key is
    built from the owner's own values and from how it relates to the others' *own* values,
    never from an index. Sums of hashes make the contributions of messages and masks a
    multiset, so their order (the order of ids) does not matter. Keys are ints, only compared
    for order and equality: two different signatures with the same hash merely tie.
    """
    nb = len(s.b_fenced)
    bookie_own = [
        hash((s.b_entries[b], s.b_fenced[b], s.b_lac[b], s.b_limbo[b])) for b in range(nb)
    ]
    client_own = [_client_own(c) for c in s.clients]
    bsig = bookie_own[:]
    csig = client_own[:]
    for message, count in s.messages:
        kind_rest = (message[0], count, message[3:])
        b = message[1]
        cid = message[2]
        bsig[b] += hash((kind_rest, client_own[cid]))
        csig[cid] += hash((kind_rest, bookie_own[b]))
    for i, c in enumerate(s.clients):
        own = client_own[i]
        masks = _client_masks(c)
        # Which of the client's sets each bookie is in (a bit per set, in the sets' order).
        for b in range(nb):
            bits = 0
            for m in masks:
                bits = bits + bits + (m >> b & 1)
            if bits:
                bsig[b] += hash((own, bits))
        for op in c.pending_add_ops:
            h = hash((op.entry, op.fragment_id, own))
            for b in range(nb):
                if op.ensemble >> b & 1:
                    bsig[b] += h
        for r in c.read_responses:
            h = hash((r.kind, r.entry, r.fence, r.code))
            bsig[r.bookie] += hash((h, own))
            csig[i] += hash((h, bookie_own[r.bookie]))
        # A striped ensemble's positions name bookies; a bookie's position does not.
        for pos, b in enumerate(c.recovery_order):
            bsig[b] += hash((own, pos))
        csig[i] += hash(
            (
                tuple(m.bit_count() for m in masks),
                frozenset((op.entry, op.fragment_id) for op in c.pending_add_ops),
            )
        )
    for j, f in enumerate(s.meta_fragments):
        h = hash((j, f.id, f.first_entry_id))
        for b in range(nb):
            if f.ensemble >> b & 1:
                bsig[b] += h
        for pos, b in enumerate(f.order):
            bsig[b] += hash((h, pos))
    return bsig, csig


#: What bookies and clients are sorted by: a quick key, or a quick key and a signature.
_Key = int | tuple[int, int]

#: A candidate renaming; None is the identity (hash the state itself).
_Candidate = tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]] | None


@cache
def _candidates(
    border: tuple[int, ...],
    bties: tuple[bool, ...],
    corder: tuple[int, ...],
    cties: tuple[bool, ...],
) -> tuple[_Candidate, ...]:
    bmaps = sorting_renamings(border, bties)
    cmaps = sorting_renamings(corder, cties)
    identity_b = tuple(range(len(border)))
    identity_c = tuple(range(len(corder)))
    return tuple(
        None if bmap == identity_b and cmap == identity_c else (bmap, cmap, mask_table(bmap))
        for bmap in bmaps
        for cmap in cmaps
    )


#: ``_WEIGHT[count % 3][kind]``: what a message of that kind and delivery count (1, 0 or -1:
#: the last row) adds to the quick key of its bookie and of its client. Six bits a (kind,
#: count), so the sum counts each up to 63 (beyond, sums may merely tie: still invariant).
#: Other counts (a copy sent again joins one in flight: 2, 3...; ``LATE`` is -2) share a row
#: by their residue: a function of the count, so still invariant, only coarser.
_WEIGHT = tuple(
    tuple(1 << 6 * (3 * kind + row) for kind in range(len(KIND_NAMES))) for row in range(3)
)


def quick_keys(s: State) -> tuple[list[int], list[int]]:
    """Cheap keys with the same invariance as :func:`signatures`: each bookie's and client's
    own values and how many messages of each kind and delivery count it has.

    Enough to tell the bookies and clients apart in nearly every state of the Defect-1 search
    (under 7% tie, and the full signatures break almost none of those ties: they are true
    automorphisms), at a fifth of the signatures' cost.
    """
    nb = len(s.b_fenced)
    bsum = [0] * nb
    csum = [0] * len(s.clients)
    weight = _WEIGHT
    for m, n in s.messages:
        w = weight[n % 3][m[0]]
        bsum[m[1]] += w
        csum[m[2]] += w
    entries, fenced, lac, limbo = s.b_entries, s.b_fenced, s.b_lac, s.b_limbo
    return (
        [hash((entries[b], fenced[b], lac[b], limbo[b], bsum[b])) for b in range(nb)],
        [
            hash(
                (
                    c.meta_version,
                    c.status,
                    c.lap,
                    c.lac,
                    c.curr_read_entry,
                    c.recovery_phase,
                    c.last_recoverable_entry,
                    len(c.fragments),
                    len(c.pending_add_ops),
                    len(c.read_responses),
                    csum[i],
                )
            )
            for i, c in enumerate(s.clients)
        ],
    )


def _has_tie(keys: list[int]) -> bool:
    return len(set(keys)) < len(keys)


def canonical_fingerprint(cfg: ModelConfig, s: State) -> int:
    """A fingerprint equal for every member of the orbit of ``s``, and (hash collisions
    aside) for no other state.

    The smallest hash over the orbit members whose bookies, and clients, are in ascending
    order of their keys; usually one, so one hash instead of one per renaming. Each candidate
    equals ``hash(permute(s, ...))`` (tested), computed without building the permuted state.
    """
    quick_b, quick_c = quick_keys(s)
    bkeys: Sequence[_Key] = quick_b
    ckeys: Sequence[_Key] = quick_c
    if _has_tie(quick_b) or _has_tie(quick_c):
        # Whether the quick keys tie is itself the same for the whole orbit, so the choice
        # of keys is too. The signatures only ever split a tie of the quick keys.
        bsig, csig = signatures(s)
        bkeys = list(zip(quick_b, bsig, strict=True))
        ckeys = list(zip(quick_c, csig, strict=True))
    candidates = _candidates(*sorted_with_ties(bkeys), *sorted_with_ties(ckeys))
    if len(candidates) == 1:
        only = candidates[0]
        return hash(s) if only is None else _permuted_hash(s, *only)
    best: int | None = None
    for candidate in candidates:
        h = hash(s) if candidate is None else _permuted_hash(s, *candidate)
        if best is None or h < best:
            best = h
    assert best is not None
    return best
