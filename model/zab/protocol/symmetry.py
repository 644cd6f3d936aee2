"""Symmetry reduction over servers: the spec's ``Server`` as a symmetrical set of model values.

``permute`` renames every server in a state; ``canonical_fingerprint`` gives all the states of
an orbit the same fingerprint, so the breadth-first explorer keeps one state per orbit, as TLC
does with a symmetry set. It sorts the servers by a signature that names no server and hashes
only the renamings that sort them (ties in every order), not all ``n!``: most states tell their
servers apart, and the renamed hash is what a state costs under symmetry.

Soundness: the spec treats servers alike. The election oracle is one server id that any looking
server may take (``UpdateLeader``); quorums are sizes; every ``\\E i, j \\in Server`` ranges
over all servers. The one place that can tell servers apart is the ``CHOOSE`` of
``DetermineInitialHistory`` among equally recent ACKEPOCH summaries (the model takes the
smallest sid, as TLC's record order does): it matters only if two such histories with the same
last zxid and ``currentEpoch`` differ elsewhere (their ``ackSid`` is reset by ``InitAcksid``
anyway). The counts with symmetry are therefore TLC's as long as that never happens, which the
test ``test_symmetry_counts_agree_with_orbits`` checks on a small configuration by counting
orbits of the full state space.
"""

from __future__ import annotations

import itertools
from functools import cache

from model.search.renamings import mask_table, sorted_with_ties, sorting_renamings
from model.zab.protocol.records import (
    ACKEPOCH,
    NEWLEADER,
    NULL,
    AckeEntry,
    History,
    Message,
    Proposal,
    Recorder,
    State,
    Txn,
)

#: (perm, inverse, mask table): ``perm[old] = new``.
Permutation = tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]


@cache
def permutations(servers: int) -> tuple[Permutation, ...]:
    """Every renaming of ``servers`` servers except the identity."""
    out = []
    identity = tuple(range(servers))
    for perm in itertools.permutations(range(servers)):
        if perm == identity:
            continue
        inverse = tuple(perm.index(k) for k in range(servers))
        out.append((perm, inverse, mask_table(perm)))
    return tuple(out)


def _history(history: History, table: tuple[int, ...]) -> History:
    return tuple(Txn(t.zxid, t.value, table[t.ack_sid], t.epoch) for t in history)


def _message(m: Message, table: tuple[int, ...]) -> Message:
    if m.mtype in (ACKEPOCH, NEWLEADER) and m.mhistory:
        return m._replace(mhistory=_history(m.mhistory, table))
    return m


def permute(s: State, p: Permutation) -> State:
    """The state with server ``k`` renamed ``perm[k]``."""
    perm, inv, table = p
    n = len(perm)
    order = inv  # new position k holds old server inv[k]

    def reorder(values: tuple[object, ...]) -> tuple[object, ...]:
        return tuple(values[order[k]] for k in range(n))

    pc = s.recorder.pc
    if len(pc) > 1:
        pc = (pc[0], *(perm[v] for v in pc[1:]))  # type: ignore[index]
    msgs: list[tuple[Message, ...]] = [() for _ in range(n * n)]
    for a in range(n):
        for b in range(n):
            channel = s.msgs[a * n + b]
            if channel:
                msgs[perm[a] * n + perm[b]] = tuple(_message(m, table) for m in channel)
    return State(
        state=reorder(s.state),  # type: ignore[arg-type]
        zab_state=reorder(s.zab_state),  # type: ignore[arg-type]
        accepted_epoch=reorder(s.accepted_epoch),  # type: ignore[arg-type]
        current_epoch=reorder(s.current_epoch),  # type: ignore[arg-type]
        history=tuple(_history(s.history[order[k]], table) for k in range(n)),
        last_committed=reorder(s.last_committed),  # type: ignore[arg-type]
        learners=tuple(table[s.learners[order[k]]] for k in range(n)),
        cepoch_recv=tuple(reorder(s.cepoch_recv[order[k]]) for k in range(n)),  # type: ignore[misc]
        acke_recv=tuple(
            tuple(
                None
                if (e := s.acke_recv[order[k]][order[v]]) is None
                else AckeEntry(e.connected, e.peer_last_epoch, _history(e.peer_history, table))
                for v in range(n)
            )
            for k in range(n)
        ),
        ackld_recv=tuple(reorder(s.ackld_recv[order[k]]) for k in range(n)),  # type: ignore[misc]
        send_counter=reorder(s.send_counter),  # type: ignore[arg-type]
        connect_info=tuple(
            NULL if (c := s.connect_info[order[k]]) == NULL else perm[c] for k in range(n)
        ),
        leader_oracle=NULL if s.leader_oracle == NULL else perm[s.leader_oracle],
        msgs=tuple(msgs),
        epoch_leader=tuple(table[mask] for mask in s.epoch_leader),
        proposal_msgs_log=frozenset(
            Proposal(perm[x.source], x.epoch, x.zxid, x.data) for x in s.proposal_msgs_log
        ),
        violated=s.violated,
        recorder=Recorder(
            s.recorder.n_timeout,
            s.recorder.n_transaction,
            s.recorder.max_epoch,
            s.recorder.n_restart,
            pc,
            s.recorder.n_client_request,
        ),
    )


def permuted_hash(s: State, p: Permutation) -> int:
    """``hash(permute(s, p))`` without building the renamed state.

    A NamedTuple hashes as the plain tuple of its fields, so plain tuples give the same value;
    a history (shared by ``history``, ``ackeRecv`` and the messages that carry it) is renamed
    once per call.
    """
    perm, order, table = p
    n = len(perm)
    renamed: dict[int, tuple[tuple[object, ...], ...]] = {}

    def hist(h: History) -> tuple[tuple[object, ...], ...]:
        key = id(h)
        out = renamed.get(key)
        if out is None:
            out = tuple((t[0], t[1], table[t[2]], t[3]) for t in h)
            renamed[key] = out
        return out

    msgs: list[tuple[object, ...]] = [() for _ in range(n * n)]
    for a in range(n):
        for b in range(n):
            channel = s.msgs[a * n + b]
            if channel:
                msgs[perm[a] * n + perm[b]] = tuple(
                    (m[0], m[1], m[2], m[3], hist(m[4])) if m[4] else m for m in channel
                )
    pc = s.recorder.pc
    if len(pc) > 1:
        pc = (pc[0], *(perm[v] for v in pc[1:]))  # type: ignore[index]
    connect = s.connect_info
    acke = s.acke_recv
    return hash(
        (
            tuple(s.state[k] for k in order),
            tuple(s.zab_state[k] for k in order),
            tuple(s.accepted_epoch[k] for k in order),
            tuple(s.current_epoch[k] for k in order),
            tuple(hist(s.history[k]) for k in order),
            tuple(s.last_committed[k] for k in order),
            tuple(table[s.learners[k]] for k in order),
            tuple(tuple(s.cepoch_recv[k][v] for v in order) for k in order),
            tuple(
                tuple(
                    None if (e := acke[k][v]) is None else (e[0], e[1], hist(e[2])) for v in order
                )
                for k in order
            ),
            tuple(tuple(s.ackld_recv[k][v] for v in order) for k in order),
            tuple(s.send_counter[k] for k in order),
            tuple(NULL if (c := connect[k]) == NULL else perm[c] for k in order),
            NULL if s.leader_oracle == NULL else perm[s.leader_oracle],
            tuple(msgs),
            tuple(table[mask] for mask in s.epoch_leader),
            frozenset((perm[x[0]], x[1], x[2], x[3]) for x in s.proposal_msgs_log),
            s.violated,
            (*s.recorder[:4], pc, s.recorder[5]),
        )
    )


def _signature(s: State, k: int, n: int, lengths: list[int]) -> tuple[object, ...]:
    """What server ``k`` is, in terms that renaming servers does not change: its own variables,
    sizes and counts, and whether the oracle and the last action name it, but no server id.
    Renaming ``k`` to ``perm[k]`` gives ``perm[k]`` this signature in the renamed state.
    ``lengths`` are the channels' lengths, ``msgs``' order."""
    history = s.history[k]
    return (
        s.state[k],
        s.zab_state[k],
        s.accepted_epoch[k],
        s.current_epoch[k],
        len(history),
        history[-1].zxid if history else (0, 0),
        s.last_committed[k],
        s.send_counter[k],
        s.learners[k].bit_count(),
        s.connect_info[k] == NULL,
        s.leader_oracle == k,
        sum(lengths[k * n : k * n + n]),
        sum(lengths[k::n]),
        tuple(v == k for v in s.recorder.pc[1:]),
    )


@cache
def _by_perm(servers: int) -> dict[tuple[int, ...], Permutation]:
    identity = tuple(range(servers))
    table = tuple(range(1 << servers))
    return {identity: (identity, identity, table), **{p[0]: p for p in permutations(servers)}}


@cache
def _candidates(order: tuple[int, ...], ties: tuple[bool, ...]) -> tuple[Permutation | None, ...]:
    """The renamings that sort the servers (``model.search.renamings``) with their inverses
    and mask tables; ``None`` stands for the identity."""
    by_perm = _by_perm(len(order))
    identity = tuple(range(len(order)))
    return tuple(
        None if perm == identity else by_perm[perm] for perm in sorting_renamings(order, ties)
    )


def canonical_fingerprint(s: State) -> int:
    """One fingerprint for every member of the orbit of ``s``.

    Servers are sorted by ``_signature``; the candidates are the renamings that sort them,
    servers with equal signatures taking each other's places in every order, and the
    fingerprint is the smallest hash among the renamed states. The set of renamed states is the
    same from every member of an orbit, so the minimum is too; and it is the hash of a member
    of the orbit, so two orbits differ (up to a hash collision, as with any fingerprint). Most
    states tell their servers apart, so this hashes one or two renamings where trying every
    permutation hashes ``n!``.
    """
    n = len(s.state)
    lengths = [len(channel) for channel in s.msgs]
    signatures = [_signature(s, k, n, lengths) for k in range(n)]
    best: int | None = None
    for p in _candidates(*sorted_with_ties(signatures)):
        h = hash(s) if p is None else permuted_hash(s, p)
        if best is None or h < best:
            best = h
    assert best is not None
    return best


def orbit_min_fingerprint(s: State) -> int:
    """The smallest hash over the whole orbit of ``s``: the plain definition, which tries every
    permutation. Kept to test ``canonical_fingerprint`` against."""
    best = hash(s)
    for p in permutations(len(s.state)):
        h = permuted_hash(s, p)
        if h < best:
            best = h
    return best
