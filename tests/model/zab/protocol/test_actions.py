"""Each action's guards and effects, on hand-built states (s1 = 0, s2 = 1, s3 = 2)."""

from __future__ import annotations

import pytest

from model.zab.protocol.actions import (
    ACTIONS,
    SpecError,
    determine_initial_history,
    initial_state,
    is_next_zxid,
    successors,
    update_acksid,
    zxid_to_index,
)
from model.zab.protocol.config import ZabConfig
from model.zab.protocol.records import (
    ACK,
    ACK_INCONSISTENT,
    ACKEPOCH,
    ACKLD,
    BROADCAST,
    CEPOCH,
    COMMIT,
    COMMIT_INCONSISTENT,
    COMMITLD,
    DISCOVERY,
    ELECTION,
    FOLLOWING,
    LEADING,
    LOOKING,
    MESSAGE_ILLEGAL,
    NEWEPOCH,
    NEWLEADER,
    NOTHING_COMMITTED,
    NULL,
    PROPOSAL_INCONSISTENT,
    PROPOSE,
    STATE_INCONSISTENT,
    SYNCHRONIZATION,
    AckeEntry,
    CepochEntry,
    LastCommitted,
    Message,
    Proposal,
    State,
    Txn,
)
from model.zab.protocol.scripted import run_script
from tests.model.zab.protocol.scenarios import AB_IN_BROADCAST, PREFIX, one, sent_to, transitions

CFG = ZabConfig()
S1, S2, S3 = 0, 1, 2


def with_msgs(s: State, **channels: tuple[Message, ...]) -> State:
    """``s`` with channels set by name: ``m21=(...)`` is ``msgs[s2][s1]``."""
    msgs = list(s.msgs)
    n = len(s.state)
    for name, queue in channels.items():
        src, dst = int(name[1]) - 1, int(name[2]) - 1
        msgs[src * n + dst] = queue
    return s._replace(msgs=tuple(msgs))


def leader_with_followers(*followers: int, zab: int = DISCOVERY) -> State:
    """s2 leads (oracle) with the given followers connected, everyone in ``zab``."""
    s = initial_state(CFG)
    state = [LOOKING, LEADING, LOOKING]
    zab_state = [ELECTION, zab, ELECTION]
    connect = [NULL, NULL, NULL]
    for f in followers:
        state[f] = FOLLOWING
        zab_state[f] = zab
        connect[f] = S2
    learners = [0, 1 << S2 | sum(1 << f for f in followers), 0]
    return s._replace(
        state=tuple(state),
        zab_state=tuple(zab_state),
        connect_info=tuple(connect),
        learners=tuple(learners),
        leader_oracle=S2,
        cepoch_recv=(
            (None,) * 3,
            (None, CepochEntry(True, 0), None),
            (None,) * 3,
        ),
        acke_recv=((None,) * 3, (None, AckeEntry(True, 0, ()), None), (None,) * 3),
        ackld_recv=((None,) * 3, (None, True, None), (None,) * 3),
    )


def txn(epoch: int, counter: int, value: int, acks: int = 0) -> Txn:
    return Txn((epoch, counter), value, acks, epoch)


# -- helpers of the spec --------------------------------------------------------------------


def test_zxid_to_index() -> None:
    h = (txn(1, 1, 0), txn(1, 2, 1))
    assert zxid_to_index(h, (0, 0)) == 0
    assert zxid_to_index((), (1, 1)) == 1
    assert zxid_to_index(h, (1, 2)) == 2
    assert zxid_to_index(h, (2, 1)) == 3
    assert zxid_to_index((txn(1, 1, 0), txn(1, 1, 5)), (1, 1)) == -1


def test_is_next_zxid() -> None:
    assert is_next_zxid((0, 0), (1, 1))
    assert is_next_zxid((1, 3), (2, 1))
    assert is_next_zxid((1, 1), (1, 2))
    assert not is_next_zxid((1, 1), (1, 3))
    assert not is_next_zxid((2, 1), (1, 1))
    assert not is_next_zxid((0, 0), (1, 2))


def test_update_acksid_stops_after_the_acked_zxid() -> None:
    h = (txn(1, 1, 0, 0b010), txn(1, 2, 1, 0b010), txn(1, 3, 2, 0b010))
    assert [t.ack_sid for t in update_acksid(h, S1, (1, 2))] == [0b011, 0b011, 0b010]


def test_determine_initial_history_takes_the_most_recent_then_the_smallest_sid() -> None:
    old = (txn(1, 1, 0),)
    newer_epoch = AckeEntry(True, 2, ())
    longer = AckeEntry(True, 1, (txn(1, 1, 0), txn(1, 2, 1)))
    same_a = AckeEntry(True, 1, (txn(1, 1, 7),))
    same_b = AckeEntry(False, 1, (txn(1, 1, 9),))
    assert determine_initial_history((AckeEntry(True, 1, old), None, newer_epoch)) == ()
    assert determine_initial_history((AckeEntry(True, 1, old), longer, None))[-1].zxid == (1, 2)
    assert determine_initial_history((None, same_a, same_b))[0].value == 7
    assert determine_initial_history((same_b, same_a, None))[0].value == 9


def test_every_action_of_next_but_the_filter_occurs_in_the_first_levels() -> None:
    """Breadth-first over the first 30,000 states: every action of Next labels some step,
    except FilterNonexistentMessage, which the spec says "should not be triggered"."""
    seen: set[str] = set()
    frontier = [initial_state(CFG)]
    visited = set(frontier)
    while frontier and len(visited) < 30_000:
        nxt = []
        for s in frontier:
            for t in successors(CFG, s):
                seen.add(t.label.action)
                if t.state not in visited:
                    visited.add(t.state)
                    nxt.append(t.state)
        frontier = nxt
    assert set(ACTIONS) - seen == {"FilterNonexistentMessage"}


# -- election -------------------------------------------------------------------------------


def test_update_leader() -> None:
    s = initial_state(CFG)._replace(
        accepted_epoch=(0, 3, 0), current_epoch=(0, 2, 0), history=((), (txn(2, 1, 0),), ())
    )
    t = one(CFG, s, "UpdateLeader", "s2")
    after = t.state
    assert after.leader_oracle == S2
    assert (after.state[S2], after.zab_state[S2], after.learners[S2]) == (LEADING, DISCOVERY, 2)
    assert after.cepoch_recv[S2] == (None, CepochEntry(True, 3), None)
    assert after.acke_recv[S2] == (None, AckeEntry(True, 2, (txn(2, 1, 0),)), None)
    assert after.ackld_recv[S2] == (None, True, None)
    assert after.recorder.pc == ("UpdateLeader", S2)
    # Not again while the oracle names it, and not for a server that is not looking.
    assert not transitions(CFG, after, "UpdateLeader", "s2")
    assert transitions(CFG, after, "UpdateLeader", "s1")
    assert not transitions(
        CFG, s._replace(state=(LOOKING, FOLLOWING, LOOKING)), "UpdateLeader", "s2"
    )


def test_follow_leader() -> None:
    s = initial_state(CFG)
    assert not transitions(CFG, s, "FollowLeader", "s1")  # no oracle yet
    s = one(CFG, s, "UpdateLeader", "s2").state
    after = one(CFG, s, "FollowLeader", "s1").state
    assert (after.state[S1], after.zab_state[S1], after.connect_info[S1]) == (
        FOLLOWING,
        DISCOVERY,
        NULL,
    )
    assert after.learners == s.learners
    # The oracle's own server leads again when it follows the oracle.
    back = s._replace(state=(LOOKING, LOOKING, LOOKING), zab_state=(ELECTION,) * 3)
    assert one(CFG, back, "FollowLeader", "s2").state.state[S2] == LEADING


# -- timeouts and restarts ------------------------------------------------------------------


def test_timeout_keeps_the_leader_with_a_quorum() -> None:
    s = with_msgs(
        leader_with_followers(S1, S3),
        m21=(Message(NEWEPOCH, mepoch=1),),
        m12=(Message(CEPOCH),),
        m23=(Message(NEWEPOCH, mepoch=1),),
    )
    s = s._replace(
        cepoch_recv=(
            (None,) * 3,
            (CepochEntry(True, 0), CepochEntry(True, 0), None),
            (None,) * 3,
        )
    )
    after = one(CFG, s, "Timeout", "s2", "s1").state
    assert after.state == (LOOKING, LEADING, FOLLOWING)
    assert after.connect_info == (NULL, NULL, S2)
    assert after.learners[S2] == 0b110
    assert after.cepoch_recv[S2][S1] == CepochEntry(False, 0)
    assert after.channel(S2, S1) == () and after.channel(S1, S2) == ()
    assert after.channel(S2, S3) == (Message(NEWEPOCH, mepoch=1),)
    assert after.recorder.n_timeout == 1
    # MaxTimeoutFailures = 1: no further timeout nor restart.
    assert not [t for t in successors(CFG, after) if t.label.action in ("Timeout", "Restart")]


def test_timeout_without_a_quorum_shuts_the_leader_down() -> None:
    s = with_msgs(leader_with_followers(S1), m21=(Message(NEWEPOCH, mepoch=1),))
    after = one(CFG, s, "Timeout", "s2", "s1").state
    assert after.state == (LOOKING,) * 3
    assert after.zab_state == (ELECTION,) * 3
    assert after.learners == (0, 0, 0)
    assert after.msgs == initial_state(CFG).msgs
    assert after.cepoch_recv == s.cepoch_recv  # LeaderShutdown leaves them
    assert after.leader_oracle == S2


def test_timeout_guards() -> None:
    s = leader_with_followers(S1)
    assert not transitions(CFG, s, "Timeout", "s2", "s3")  # not a learner
    assert not transitions(ZabConfig(max_timeout_failures=0), s, "Timeout", "s2", "s1")


def test_restart_of_a_leader_and_of_a_looking_server() -> None:
    s = leader_with_followers(S1)._replace(
        last_committed=(NOTHING_COMMITTED, LastCommitted(1, (1, 1)), LastCommitted(1, (1, 1)))
    )
    after = one(CFG, s, "Restart", "s2").state
    assert after.state == (LOOKING,) * 3
    assert after.last_committed[S2] == NOTHING_COMMITTED
    assert (after.recorder.n_timeout, after.recorder.n_restart) == (1, 1)
    looking = one(CFG, s, "Restart", "s3").state
    assert looking.state == s.state
    assert looking.last_committed[S3] == NOTHING_COMMITTED
    assert not transitions(ZabConfig(max_restarts=0), s, "Restart", "s2")


def test_restart_of_followers() -> None:
    s = with_msgs(leader_with_followers(S1, S3), m12=(Message(CEPOCH),), m32=(Message(CEPOCH),))
    after = one(CFG, s, "Restart", "s1").state
    assert after.state == (LOOKING, LEADING, FOLLOWING)
    assert after.channel(S1, S2) == () and after.channel(S3, S2) == (Message(CEPOCH),)
    alone = leader_with_followers(S1)
    assert one(CFG, alone, "Restart", "s1").state.state == (LOOKING,) * 3
    # A follower without a leader: its input buffers are emptied.
    orphan = with_msgs(
        initial_state(CFG)._replace(
            state=(FOLLOWING, LOOKING, LOOKING), zab_state=(DISCOVERY, 0, 0)
        ),
        m21=(Message(NEWEPOCH, mepoch=1),),
    )
    after = one(CFG, orphan, "Restart", "s1").state
    assert after.state[S1] == LOOKING and after.channel(S2, S1) == ()


# -- discovery ------------------------------------------------------------------------------


def test_connect_and_follower_send_cepoch() -> None:
    s = leader_with_followers()._replace(
        state=(FOLLOWING, LEADING, FOLLOWING), zab_state=(DISCOVERY,) * 3, accepted_epoch=(4, 0, 0)
    )
    t = one(CFG, s, "ConnectAndFollowerSendCEPOCH", "s2", "s1")
    assert t.state.learners[S2] == 0b011
    assert t.state.connect_info[S1] == S2
    assert t.state.channel(S1, S2) == (Message(CEPOCH, mepoch=4),)
    # Only to the oracle's leader.
    assert not transitions(CFG, s._replace(leader_oracle=S3), "ConnectAndFollowerSendCEPOCH", "s2")


def test_leader_process_cepoch_forms_a_quorum_and_broadcasts_newepoch() -> None:
    s = with_msgs(leader_with_followers(S1, S3), m12=(Message(CEPOCH, mepoch=2),))
    s = s._replace(accepted_epoch=(2, 1, 0))
    t = one(CFG, s, "LeaderProcessCEPOCH", "s2", "s1")
    after = t.state
    assert after.accepted_epoch[S2] == 3  # max(f.p) + 1
    assert after.recorder.max_epoch == 3
    assert sent_to(t.label) == {S1: [NEWEPOCH]}  # s3 sent no CEPOCH yet
    assert after.channel(S1, S2) == ()
    # A later CEPOCH is answered at once with the epoch chosen.
    late = with_msgs(after, m32=(Message(CEPOCH, mepoch=0),))
    late = late._replace(recorder=late.recorder._replace(max_epoch=1))
    t2 = one(CFG, late, "LeaderProcessCEPOCH", "s2", "s3")
    assert [(m.mtype, m.mepoch) for _, _, m in t2.label.sent] == [(NEWEPOCH, 3)]
    assert t2.state.cepoch_recv[S2][S3] == CepochEntry(True, 0)
    # CheckEpoch: no CEPOCH processed at all once maxEpoch reaches MaxEpoch.
    assert not transitions(CFG, after._replace(msgs=late.msgs), "LeaderProcessCEPOCH", "s2")


def test_leader_process_cepoch_without_quorum_and_out_of_discovery() -> None:
    cfg = ZabConfig(servers=5, max_epoch=3)
    s = initial_state(cfg)
    s = s._replace(
        state=(FOLLOWING, LEADING, LOOKING, LOOKING, LOOKING),
        zab_state=(DISCOVERY, SYNCHRONIZATION, 0, 0, 0),
        connect_info=(S2, NULL, NULL, NULL, NULL),
        learners=(0, 0b11, 0, 0, 0),
        leader_oracle=S2,
        cepoch_recv=(
            (None,) * 5,
            (None, CepochEntry(True, 0), None, None, None),
            *((None,) * 5,) * 3,
        ),
    )
    msgs = list(s.msgs)
    msgs[S1 * 5 + S2] = (Message(CEPOCH),)
    s = s._replace(msgs=tuple(msgs))
    t = one(cfg, s, "LeaderProcessCEPOCH", "s2", "s1")
    assert t.label.sent == () and t.state.accepted_epoch == s.accepted_epoch
    assert t.state.violated == STATE_INCONSISTENT


def test_follower_process_newepoch() -> None:
    s = with_msgs(leader_with_followers(S1), m21=(Message(NEWEPOCH, mepoch=1),))
    s = s._replace(current_epoch=(0, 0, 0), history=((txn(0, 1, 5),), (), ()))
    t = one(CFG, s, "FollowerProcessNEWEPOCH", "s1", "s2")
    assert t.state.accepted_epoch[S1] == 1 and t.state.zab_state[S1] == SYNCHRONIZATION
    assert t.state.channel(S1, S2) == (Message(ACKEPOCH, mepoch=0, mhistory=(txn(0, 1, 5),)),)
    # An epoch older than f.p sends the follower back to election.
    old = s._replace(accepted_epoch=(2, 0, 0))
    after = one(CFG, old, "FollowerProcessNEWEPOCH", "s1", "s2").state
    assert after.state[S1] == LOOKING and after.learners[S2] == 0b010
    assert after.channel(S2, S1) == ()
    # Not in DISCOVERY: flagged, discarded.
    sync = s._replace(zab_state=(SYNCHRONIZATION, DISCOVERY, ELECTION))
    flagged = one(CFG, sync, "FollowerProcessNEWEPOCH", "s1", "s2").state
    assert flagged.violated == STATE_INCONSISTENT and flagged.channel(S2, S1) == ()


def test_leader_process_ackepoch_establishes_the_leader() -> None:
    follower_history = (txn(1, 1, 0, 0b110), txn(1, 2, 1, 0b010))
    s = with_msgs(
        leader_with_followers(S1, S3),
        m12=(Message(ACKEPOCH, mepoch=1, mhistory=follower_history),),
    )
    s = s._replace(
        accepted_epoch=(2, 2, 0),
        current_epoch=(1, 1, 0),
        history=(follower_history, (txn(1, 1, 0, 0b010),), ()),
        acke_recv=(
            (None,) * 3,
            (None, AckeEntry(True, 1, (txn(1, 1, 0, 0b010),)), None),
            (None,) * 3,
        ),
    )
    t = one(CFG, s, "LeaderProcessACKEPOCH", "s2", "s1")
    after = t.state
    assert after.current_epoch[S2] == 2 and after.zab_state[S2] == SYNCHRONIZATION
    assert after.epoch_leader[1] == 0b010
    assert after.history[S2] == (txn(1, 1, 0, 0b010), txn(1, 2, 1, 0b010))  # InitAcksid
    assert [(m.mtype, m.mhistory) for _, _, m in t.label.sent] == [(NEWLEADER, after.history[S2])]
    assert Proposal(S2, 2, (1, 2), 1) in after.proposal_msgs_log
    # A later ACKEPOCH gets NEWLEADER with the leader's history now.
    late = with_msgs(after, m32=(Message(ACKEPOCH),))
    t2 = one(CFG, late, "LeaderProcessACKEPOCH", "s2", "s3")
    assert t2.label.sent == ((S2, S3, Message(NEWLEADER, mepoch=2, mhistory=after.history[S2])),)
    assert t2.state.history == after.history


# -- synchronization ------------------------------------------------------------------------


def test_follower_process_newleader() -> None:
    history = (txn(1, 1, 0, 0b010),)
    s = with_msgs(
        leader_with_followers(S1, zab=SYNCHRONIZATION),
        m21=(Message(NEWLEADER, mepoch=1, mhistory=history),),
    )
    s = s._replace(accepted_epoch=(1, 1, 0))
    after = one(CFG, s, "FollowerProcessNEWLEADER", "s1", "s2").state
    assert after.current_epoch[S1] == 1 and after.history[S1] == history
    assert after.channel(S1, S2) == (Message(ACKLD, mzxid=(1, 1)),)
    assert after.zab_state[S1] == SYNCHRONIZATION
    stale = one(CFG, s._replace(accepted_epoch=(2, 1, 0)), "FollowerProcessNEWLEADER", "s1", "s2")
    assert stale.state.state[S1] == LOOKING and stale.state.history[S1] == ()


def test_leader_process_ackld_commits_and_broadcasts_commitld() -> None:
    history = (txn(1, 1, 0, 0b010), txn(1, 2, 1, 0b010))
    s = with_msgs(
        leader_with_followers(S1, S3, zab=SYNCHRONIZATION), m12=(Message(ACKLD, mzxid=(1, 1)),)
    )
    s = s._replace(history=((), history, ()))
    t = one(CFG, s, "LeaderProcessACKLD", "s2", "s1")
    after = t.state
    assert after.zab_state[S2] == BROADCAST
    assert after.last_committed[S2] == LastCommitted(2, (1, 2))
    assert [t.ack_sid for t in after.history[S2]] == [0b011, 0b010]
    assert t.label.sent == ((S2, S1, Message(COMMITLD, mzxid=(1, 2))),)


@pytest.mark.parametrize("naive", [False, True])
def test_leader_process_ackld_after_the_quorum(naive: bool) -> None:
    cfg = CFG.with_naive({3} if naive else set())
    s = with_msgs(leader_with_followers(S1, S3, zab=BROADCAST), m32=(Message(ACKLD, mzxid=(1, 1)),))
    s = s._replace(
        history=((), (txn(1, 1, 0, 0b011), txn(1, 2, 1, 0b011)), ()),
        last_committed=(NOTHING_COMMITTED, LastCommitted(2, (1, 2)), NOTHING_COMMITTED),
        ackld_recv=((None,) * 3, (True, True, None), (None,) * 3),
    )
    t = one(cfg, s, "LeaderProcessACKLD", "s2", "s3")
    assert t.label.sent == ((S2, S3, Message(COMMITLD, mzxid=(1, 1) if naive else (1, 2))),)
    assert t.state.ackld_recv[S2] == (True, True, True)
    assert t.state.violated == 0


def test_follower_process_commitld() -> None:
    s = with_msgs(
        leader_with_followers(S1, zab=SYNCHRONIZATION), m21=(Message(COMMITLD, mzxid=(1, 2)),)
    )
    s = s._replace(history=((txn(1, 1, 0), txn(1, 2, 1)), (), ()))
    after = one(CFG, s, "FollowerProcessCOMMITLD", "s1", "s2").state
    assert after.last_committed[S1] == LastCommitted(2, (1, 2))
    assert after.zab_state[S1] == BROADCAST
    missing = one(CFG, s._replace(history=((), (), ())), "FollowerProcessCOMMITLD", "s1", "s2")
    assert missing.state.violated == PROPOSAL_INCONSISTENT


# -- broadcast ------------------------------------------------------------------------------


def test_leader_process_request() -> None:
    s = leader_with_followers(S1, zab=BROADCAST)._replace(
        current_epoch=(1, 2, 0), history=((), (txn(1, 1, 0, 0b010),), ())
    )
    s = s._replace(recorder=s.recorder._replace(n_client_request=1, n_transaction=1))
    after = one(CFG, s, "LeaderProcessRequest", "s2").state
    assert after.history[S2][-1] == Txn((2, 1), 1, 0b010, 2)  # a new epoch starts at counter 1
    assert (after.recorder.n_transaction, after.recorder.n_client_request) == (2, 2)
    assert not transitions(CFG, after, "LeaderProcessRequest", "s2")  # MaxTransactionNum 2
    same = s._replace(current_epoch=(1, 1, 0))
    assert one(CFG, same, "LeaderProcessRequest", "s2").state.history[S2][-1].zxid == (1, 2)
    assert not transitions(
        CFG, s._replace(zab_state=(0, SYNCHRONIZATION, 0)), "LeaderProcessRequest", "s2"
    )


@pytest.mark.parametrize("naive", [False, True])
def test_leader_broadcast_propose(naive: bool) -> None:
    cfg = CFG.with_naive({1} if naive else set())
    s = leader_with_followers(S1, S3, zab=BROADCAST)._replace(
        current_epoch=(1, 1, 1),
        history=((), (txn(1, 1, 4, 0b010),), ()),
        acke_recv=(
            (None,) * 3,
            (AckeEntry(True, 0, ()), AckeEntry(True, 0, ()), AckeEntry(True, 0, ())),
            (None,) * 3,
        ),
        ackld_recv=((None,) * 3, (True, True, None), (None,) * 3),
    )
    t = one(cfg, s, "LeaderBroadcastPROPOSE", "s2")
    assert sent_to(t.label) == ({S1: [PROPOSE]} if naive else {S1: [PROPOSE], S3: [PROPOSE]})
    assert t.label.sent[0][2] == Message(PROPOSE, mzxid=(1, 1), mdata=4)
    assert t.state.send_counter[S2] == 1
    assert t.state.proposal_msgs_log == {Proposal(S2, 1, (1, 1), 4)}
    assert not transitions(cfg, t.state, "LeaderBroadcastPROPOSE", "s2")  # nothing left
    # A disconnected record of ackeRecv gets nothing.
    acke = s.acke_recv[S2]
    off = s._replace(
        acke_recv=(
            s.acke_recv[0],
            (acke[0], acke[1], AckeEntry(False, 0, ())),
            s.acke_recv[2],
        )
    )
    assert S3 not in sent_to(one(CFG, off, "LeaderBroadcastPROPOSE", "s2").label)


def test_leader_broadcast_propose_of_a_missing_entry_is_a_spec_error() -> None:
    s = leader_with_followers(S1, zab=BROADCAST)._replace(
        current_epoch=(1, 1, 1), history=((), (txn(1, 2, 4),), ())
    )
    with pytest.raises(SpecError):
        successors(CFG, s)


@pytest.mark.parametrize("naive", [False, True])
def test_follower_process_propose(naive: bool) -> None:
    cfg = CFG.with_naive({2} if naive else set())
    base = leader_with_followers(S1, zab=BROADCAST)._replace(current_epoch=(1, 1, 0))
    nxt = with_msgs(base, m21=(Message(PROPOSE, mzxid=(1, 1), mdata=0),))
    after = one(cfg, nxt, "FollowerProcessPROPOSE", "s1", "s2").state
    assert after.history[S1] == (Txn((1, 1), 0, 0, 1),)
    assert after.channel(S1, S2) == (Message(ACK, mzxid=(1, 1)),)
    redundant = nxt._replace(history=((Txn((1, 1), 0, 0, 1),), (), ()))
    r = one(cfg, redundant, "FollowerProcessPROPOSE", "s1", "s2").state
    assert r.history == redundant.history and r.channel(S2, S1) == ()
    assert r.violated == (PROPOSAL_INCONSISTENT if naive else 0)
    gap = with_msgs(base, m21=(Message(PROPOSE, mzxid=(1, 2), mdata=1),))
    assert (
        one(cfg, gap, "FollowerProcessPROPOSE", "s1", "s2").state.violated == PROPOSAL_INCONSISTENT
    )


def test_leader_process_ack_commits_in_order() -> None:
    s = with_msgs(leader_with_followers(S1, S3, zab=BROADCAST), m12=(Message(ACK, mzxid=(1, 1)),))
    s = s._replace(
        history=((), (txn(1, 1, 0, 0b010), txn(1, 2, 1, 0b010)), ()),
        ackld_recv=((None,) * 3, (True, True, True), (None,) * 3),
    )
    t = one(CFG, s, "LeaderProcessACK", "s2", "s1")
    assert t.state.last_committed[S2] == LastCommitted(1, (1, 1))
    assert sent_to(t.label) == {S1: [COMMIT], S3: [COMMIT]}
    assert t.state.history[S2][0].ack_sid == 0b011
    # A first ACK may be for any entry (ackIndex = -1); later ones must follow the last.
    first = with_msgs(s, m12=(Message(ACK, mzxid=(1, 2)),))
    assert one(CFG, first, "LeaderProcessACK", "s2", "s1").state.violated == 0
    again = with_msgs(t.state, m12=(Message(ACK, mzxid=(1, 1)),))
    assert one(CFG, again, "LeaderProcessACK", "s2", "s1").state.violated == ACK_INCONSISTENT
    unknown = with_msgs(s, m12=(Message(ACK, mzxid=(1, 5)),))
    assert one(CFG, unknown, "LeaderProcessACK", "s2", "s1").state.violated == ACK_INCONSISTENT


def test_leader_process_ack_without_quorum_or_already_committed() -> None:
    cfg = ZabConfig(servers=5)
    s = initial_state(cfg)
    msgs = list(s.msgs)
    msgs[S1 * 5 + S2] = (Message(ACK, mzxid=(1, 1)),)
    s = s._replace(
        state=(FOLLOWING, LEADING, FOLLOWING, FOLLOWING, LOOKING),
        zab_state=(BROADCAST,) * 4 + (ELECTION,),
        connect_info=(S2, NULL, S2, S2, NULL),
        learners=(0, 0b1111, 0, 0, 0),
        leader_oracle=S2,
        history=((), (txn(1, 1, 0, 0b010),), (), (), ()),
        msgs=tuple(msgs),
    )
    t = one(cfg, s, "LeaderProcessACK", "s2", "s1")
    assert t.state.last_committed[S2] == NOTHING_COMMITTED and t.label.sent == ()
    assert t.state.history[S2][0].ack_sid == 0b011
    done = s._replace(
        last_committed=(NOTHING_COMMITTED, LastCommitted(1, (1, 1)), *(NOTHING_COMMITTED,) * 3)
    )
    t2 = one(cfg, done, "LeaderProcessACK", "s2", "s1")
    assert t2.label.sent == () and t2.state.violated == 0


def test_follower_process_commit() -> None:
    s = with_msgs(leader_with_followers(S1, zab=BROADCAST), m21=(Message(COMMIT, mzxid=(1, 1)),))
    s = s._replace(history=((txn(1, 1, 0), txn(1, 2, 1)), (), ()))
    assert one(CFG, s, "FollowerProcessCOMMIT", "s1", "s2").state.last_committed[S1] == (
        LastCommitted(1, (1, 1))
    )
    wrong = s._replace(
        last_committed=(LastCommitted(1, (1, 1)), NOTHING_COMMITTED, NOTHING_COMMITTED)
    )
    assert (
        one(CFG, wrong, "FollowerProcessCOMMIT", "s1", "s2").state.violated == COMMIT_INCONSISTENT
    )
    nothing = s._replace(history=((), (), ()))
    t = one(CFG, nothing, "FollowerProcessCOMMIT", "s1", "s2")
    assert t.state.violated == 0 and t.label.notes == ("Warn: Committing zxid without seeing txn.",)


# -- messages that should not exist ---------------------------------------------------------


def test_filter_nonexistent_message() -> None:
    s = with_msgs(initial_state(CFG), m21=(Message(NEWEPOCH, mepoch=1),))
    t = one(CFG, s, "FilterNonexistentMessage", "s1", "s2")
    assert t.state.violated == MESSAGE_ILLEGAL and t.state.channel(S2, S1) == ()
    assert t.state.recorder == s.recorder  # UnchangeRecorder
    # A leader receiving a leader's message, a follower receiving from another server.
    lead = with_msgs(leader_with_followers(S1), m32=(Message(COMMIT, mzxid=(1, 1)),))
    assert transitions(CFG, lead, "FilterNonexistentMessage", "s2", "s3")
    fol = with_msgs(leader_with_followers(S1), m31=(Message(COMMIT, mzxid=(1, 1)),))
    assert transitions(CFG, fol, "FilterNonexistentMessage", "s1", "s3")
    ok = with_msgs(leader_with_followers(S1), m21=(Message(NEWEPOCH, mepoch=1),))
    assert not transitions(CFG, ok, "FilterNonexistentMessage", "s1")


def test_the_fixed_prefix_reaches_broadcast_without_flags() -> None:
    trace = run_script(CFG, AB_IN_BROADCAST)
    final = trace[-1].state
    assert final.zab_state[:2] == (BROADCAST, BROADCAST)
    assert final.violated == 0
    trace = run_script(CFG, PREFIX)
    assert trace[-1].state.channel(S3, S2) == (Message(ACKEPOCH),)
    assert trace[-1].state.acke_recv[S2][S3] is None
    assert ACKLD and COMMITLD and DISCOVERY  # imported for the hand-built states above
