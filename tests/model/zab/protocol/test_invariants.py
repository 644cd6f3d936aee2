"""The ten invariants on hand-built states: each holds on a consistent state and fails on one
that breaks exactly what it states."""

from __future__ import annotations

from model.zab.protocol.actions import initial_state
from model.zab.protocol.config import ZabConfig
from model.zab.protocol.invariants import (
    INVARIANTS,
    agreement,
    global_primary_order,
    integrity,
    leadership1,
    leadership2,
    local_primary_order,
    local_primary_order_intended,
    prefix_consistency,
    primary_integrity,
    should_not_be_triggered,
    total_order,
    violated,
)
from model.zab.protocol.records import (
    BROADCAST,
    DISCOVERY,
    FOLLOWING,
    LEADING,
    NULL,
    SYNCHRONIZATION,
    LastCommitted,
    Proposal,
    State,
    Txn,
)

S1, S2, S3 = 0, 1, 2
BASE = initial_state(ZabConfig())


def t(epoch: int, counter: int, value: int) -> Txn:
    return Txn((epoch, counter), value, 0, epoch)


def committed(*histories: tuple[Txn, ...], upto: tuple[int, ...] | None = None) -> State:
    """Servers with these histories, each committed to ``upto`` (default: all of it)."""
    counts = upto if upto is not None else tuple(len(h) for h in histories)
    return BASE._replace(
        history=histories,
        last_committed=tuple(
            LastCommitted(k, h[k - 1].zxid if k else (0, 0))
            for h, k in zip(histories, counts, strict=True)
        ),
    )


def followers(s: State, *servers: int, leader: int = S2) -> State:
    state = list(s.state)
    connect = list(s.connect_info)
    for k in servers:
        state[k] = FOLLOWING
        connect[k] = leader
    return s._replace(state=tuple(state), connect_info=tuple(connect))


def logged(s: State, *txns: tuple[int, int, Txn]) -> State:
    """``proposalMsgsLog`` with ``(source, epoch, txn)`` records."""
    return s._replace(
        proposal_msgs_log=frozenset(Proposal(src, e, x.zxid, x.value) for src, e, x in txns)
    )


def test_the_ten_in_the_seeds_order() -> None:
    assert [i.name for i in INVARIANTS] == [
        "ShouldNotBeTriggered",
        "Leadership1",
        "Leadership2",
        "PrefixConsistency",
        "Integrity",
        "Agreement",
        "TotalOrder",
        "LocalPrimaryOrder",
        "GlobalPrimaryOrder",
        "PrimaryIntegrity",
    ]
    assert violated(BASE) == []


def test_should_not_be_triggered() -> None:
    assert should_not_be_triggered(BASE)
    assert not should_not_be_triggered(BASE._replace(violated=4))


def test_leadership1() -> None:
    two = BASE._replace(
        state=(LEADING, LEADING, FOLLOWING),
        zab_state=(SYNCHRONIZATION, BROADCAST, BROADCAST),
        current_epoch=(1, 1, 1),
    )
    assert not leadership1(two)
    assert leadership1(two._replace(current_epoch=(1, 2, 2)))
    assert leadership1(two._replace(zab_state=(DISCOVERY, BROADCAST, BROADCAST)))


def test_leadership2() -> None:
    assert leadership2(BASE._replace(epoch_leader=(0b001, 0b010, *(0,) * 8)))
    assert not leadership2(BASE._replace(epoch_leader=(0b011, *(0,) * 9)))


def test_prefix_consistency() -> None:
    a, b, b2 = t(1, 1, 0), t(1, 2, 1), t(1, 2, 9)
    assert prefix_consistency(committed((a, b), (a,), ()))
    assert not prefix_consistency(committed((a, b), (a, b2), ()))
    # Only the committed prefixes count.
    assert prefix_consistency(committed((a, b), (a, b2), (), upto=(2, 1, 0)))
    # As written, a negative index breaks it.
    assert not prefix_consistency(
        committed((a,), (a,), ())._replace(
            last_committed=(
                LastCommitted(-1, (1, 1)),
                LastCommitted(1, (1, 1)),
                LastCommitted(0, (0, 0)),
            )
        )
    )


def test_integrity() -> None:
    a, b = t(1, 1, 0), t(1, 2, 1)
    s = followers(committed((a, b), (a, b), ()), S1)
    assert not integrity(s)
    assert integrity(logged(s, (S2, 1, a), (S2, 1, b)))
    # Leaders are not checked.
    assert integrity(s._replace(state=(LEADING, LEADING, 0)))


def test_agreement() -> None:
    a, b, c = t(1, 1, 0), t(1, 2, 1), t(1, 2, 7)
    ok = followers(committed((a, b), (a,), ()), S1, S3)._replace(
        state=(FOLLOWING, LEADING, FOLLOWING)
    )
    assert agreement(ok)
    split = followers(committed((a, b), (), (a, c)), S1, S3)
    assert not agreement(split)


def test_total_order() -> None:
    a, b = t(1, 1, 0), t(1, 2, 1)
    assert total_order(committed((a, b), (a, b), ()))
    assert not total_order(committed((a, b), (b, a), ()))
    # j delivered b without a: a before b is missing.
    c = t(1, 3, 2)
    assert not total_order(committed((a, b), (b, c), ()))
    # Fewer than two delivered: not checked.
    assert total_order(committed((a, b), (b,), ()))


def test_local_primary_order_is_vacuous_as_written() -> None:
    a, b = t(1, 1, 0), t(1, 2, 1)
    s = logged(committed((b, a), (), ()), (S2, 1, a), (S2, 1, b))._replace(current_epoch=(1, 1, 1))
    assert local_primary_order(s)
    assert not local_primary_order_intended(s)
    in_order = logged(committed((a, b), (), ()), (S2, 1, a), (S2, 1, b))._replace(
        current_epoch=(1, 1, 1)
    )
    assert local_primary_order_intended(in_order)


def test_global_primary_order() -> None:
    a, b = t(1, 1, 0), t(2, 1, 1)
    assert global_primary_order(committed((a, b), (), ()))
    assert not global_primary_order(committed((b, a), (), ()))
    assert global_primary_order(committed((b, a), (), (), upto=(1, 0, 0)))


def test_primary_integrity() -> None:
    old, new = t(1, 1, 0), t(2, 1, 1)
    s = followers(committed((old,), (new,), ()), S1)._replace(
        state=(FOLLOWING, LEADING, 0),
        zab_state=(BROADCAST, BROADCAST, 0),
        current_epoch=(2, 2, 0),
        learners=(0, 0b011, 0),
        connect_info=(S2, NULL, NULL),
    )
    assert not primary_integrity(s)  # s1 delivered epoch-1 [1,1] that leader s2 did not
    assert primary_integrity(s._replace(history=((old,), (old, new), ())))
    assert primary_integrity(s._replace(zab_state=(SYNCHRONIZATION, BROADCAST, 0)))
