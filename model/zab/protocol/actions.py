"""Every action of the spec's ``Next``, as functions from a state to its labelled successors.

``successors(config, state)`` returns one ``Transition(label, state)`` per successor. A
``Label`` names the TLA+ action and its arguments ``i`` and ``j`` in the spec's order (for
``LeaderProcessCEPOCH(i, j)``, ``i`` is the leader and ``j`` the follower whose CEPOCH it
processes), the message processed, the messages sent and the spec's ``PrintT`` texts.

Each action keeps the spec's guards and effects, disjunct for disjunct. Where the spec's
``CHOOSE`` picks among several values, the model takes the one TLC takes for records ordered by
field (see ``determine_initial_history``). The three naive readings of seed 003 are switches of
the configuration (``model.zab.protocol.config``).

Performance: a successor is built by copying the state's fields into a list, replacing the
changed ones and calling ``State._make``; sets of servers are bitmasks.
"""

from __future__ import annotations

from typing import NamedTuple, TypeVar

from model.errors import ModelError
from model.zab.protocol.config import MAXEPOCH, ZabConfig
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
    FOLLOWER_TO_LEADER,
    FOLLOWING,
    LEADER_TO_FOLLOWER,
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
    ZERO_ZXID,
    AckeEntry,
    CepochEntry,
    History,
    LastCommitted,
    Message,
    Proposal,
    Recorder,
    State,
    Txn,
    Zxid,
    init_state,
)

T = TypeVar("T")


class SpecError(ModelError, RuntimeError):
    """The spec's expression has no value here (TLC would stop with an evaluation error)."""


class Label(NamedTuple):
    """What a step did: the spec's action with its arguments, and its messages.

    ``sent`` lists ``(from, to, message)``; ``notes`` the texts of the spec's ``PrintT`` that
    this step evaluates (its ``Exception: ...`` and ``Warn: ...`` lines).
    """

    action: str
    i: int
    j: int | None = None
    received: Message | None = None
    sent: tuple[tuple[int, int, Message], ...] = ()
    notes: tuple[str, ...] = ()


class Transition(NamedTuple):
    label: Label
    state: State


def initial_state(cfg: ZabConfig) -> State:
    """``Init``."""
    return init_state(cfg.servers, record_pc=cfg.record_pc)


# Field positions of State, for building successors from a list of its fields.
_STATE = 0
_ZAB = 1
_ACCEPTED = 2
_CURRENT = 3
_HISTORY = 4
_COMMITTED = 5
_LEARNERS = 6
_CEPOCH_RECV = 7
_ACKE_RECV = 8
_ACKLD_RECV = 9
_SEND_COUNTER = 10
_CONNECT = 11
_ORACLE = 12
_MSGS = 13
_EPOCH_LEADER = 14
_LOG = 15
_VIOLATED = 16
_RECORDER = 17

_make = State._make


def _set(values: tuple[T, ...], index: int, value: T) -> tuple[T, ...]:
    return (*values[:index], value, *values[index + 1 :])


# --------------------------------------------------------------------------------------------
# Helpers of the spec
# --------------------------------------------------------------------------------------------


def is_quorum(mask: int, servers: int) -> bool:
    """``IsQuorum``: ``Cardinality(Q) * 2 > Cardinality(Server)``."""
    return mask.bit_count() * 2 > servers


def _members(entries: tuple[object | None, ...]) -> int:
    """The sids of a ``cepochRecv`` / ``ackeRecv`` / ``ackldRecv`` set (connected or not)."""
    mask = 0
    for sid, entry in enumerate(entries):
        if entry is not None:
            mask |= 1 << sid
    return mask


def last_zxid(history: History) -> Zxid:
    """``LastZxidOfHistory``."""
    return history[-1].zxid if history else ZERO_ZXID


def zxid_to_index(history: History, zxid: Zxid) -> int:
    """``ZxidToIndex``: 0 for ``<<0, 0>>``; the 1-based index of the one entry with ``zxid``;
    -1 if it appears twice or more; ``Len(his) + 1`` if it does not appear."""
    if zxid == ZERO_ZXID:
        return 0
    found = 0
    for index, txn in enumerate(history, start=1):
        if txn.zxid == zxid:
            if found:
                return -1
            found = index
    return found if found else len(history) + 1


def is_next_zxid(cur: Zxid, nxt: Zxid) -> bool:
    """``IsNextZxid``."""
    if nxt[1] == 1:
        return cur[0] < nxt[0]
    return nxt[1] > 1 and cur[0] == nxt[0] and cur[1] + 1 == nxt[1]


def determine_initial_history(entries: tuple[AckeEntry | None, ...]) -> History:
    """``DetermineInitialHistory``: the history of the most recent state summary among the
    ACKEPOCHs received (``MoreResentOrEqual``: larger ``currentEpoch``, then larger last zxid).

    The spec's ``CHOOSE ss \\in ss_set`` takes, among equally recent summaries, the first in
    TLC's order of the records ``[sid, currentEpoch, lastZxid]``, which compares fields in the
    order of their names (``currentEpoch``, ``lastZxid``, ``sid``): the smallest ``sid``.
    """
    best: AckeEntry | None = None
    best_key: tuple[int, Zxid] = (-1, ZERO_ZXID)
    for entry in entries:
        if entry is None:
            continue
        key = (entry.peer_last_epoch, last_zxid(entry.peer_history))
        if best is None or key > best_key:
            best, best_key = entry, key
    if best is None:  # pragma: no cover - the leader's own record is always there
        raise SpecError("DetermineInitialHistory: ackeRecv is empty")
    return best.peer_history


def init_acksid(i: int, history: History) -> History:
    """``InitAcksid``: every entry acknowledged by the leader alone."""
    mask = 1 << i
    return tuple(Txn(t.zxid, t.value, mask, t.epoch) for t in history)


def update_acksid(history: History, target: int, end_zxid: Zxid) -> History:
    """``UpdateAcksid``: add ``target`` to the acks of every entry up to ``end_zxid``."""
    bit = 1 << target
    out: list[Txn] = []
    for index, txn in enumerate(history):
        if txn.zxid > end_zxid:
            out.extend(history[index:])
            break
        if not txn.ack_sid & bit:
            txn = Txn(txn.zxid, txn.value, txn.ack_sid | bit, txn.epoch)
        out.append(txn)
    return tuple(out)


def packets_for_checking(source: int, epoch: int, history: History) -> frozenset[Proposal]:
    """``SetPacketsForChecking``: one ``proposalMsgsLog`` record per entry of ``history``."""
    return frozenset(Proposal(source, epoch, t.zxid, t.value) for t in history)


def current_counter(s: State, i: int) -> int:
    """``CurrentCounter``: the counter of the last zxid if it is of the current epoch, else 0."""
    zxid = last_zxid(s.history[i])
    return zxid[1] if zxid[0] == s.current_epoch[i] else 0


def last_ack_index_from_follower(history: History, j: int) -> int:
    """``LastAckIndexFromFollower``: the last index that ``j`` acknowledged, or -1."""
    bit = 1 << j
    for index in range(len(history), 0, -1):
        if history[index - 1].ack_sid & bit:
            return index
    return -1


def _check(value: int, bound: int | None) -> bool:
    """``CheckParameterLimit``: TRUE when the parameter is absent."""
    return bound is None or value < bound


def check_timeout(cfg: ZabConfig, s: State) -> bool:
    """``CheckTimeout``."""
    return _check(s.recorder.n_timeout, cfg.max_timeout_failures)


def check_restart(cfg: ZabConfig, s: State) -> bool:
    """``CheckRestart``: ``CheckTimeout`` and ``nRestart < MaxRestarts``."""
    return check_timeout(cfg, s) and _check(s.recorder.n_restart, cfg.max_restarts)


def check_epoch(cfg: ZabConfig, s: State) -> bool:
    """``CheckEpoch``."""
    return _check(s.recorder.max_epoch, cfg.max_epoch)


def check_transaction_num(cfg: ZabConfig, s: State) -> bool:
    """``CheckTransactionNum``."""
    return _check(s.recorder.n_transaction, cfg.max_transaction_num)


def update_recorder(
    cfg: ZabConfig, old: Recorder, name: str, i: int, j: int | None, f: list[object]
) -> Recorder:
    """``UpdateRecorder(<<name, i, j>>)`` given the successor's other fields ``f``."""
    n_timeout, n_restart = old.n_timeout, old.n_restart
    if name == "Timeout":
        n_timeout += 1
    elif name == "Restart":
        n_timeout += 1
        n_restart += 1
    n_transaction, n_client_request = old.n_transaction, old.n_client_request
    if name == "LeaderProcessRequest":
        n_transaction = max(len(h) for h in f[_HISTORY])  # type: ignore[attr-defined]
        n_client_request += 1
    max_epoch = old.max_epoch
    if name == "LeaderProcessCEPOCH":
        max_epoch = max(f[_ACCEPTED])  # type: ignore[call-overload]
    pc: tuple[str | int, ...] = ()
    if cfg.record_pc:
        pc = (name, i) if j is None else (name, i, j)
    return Recorder(n_timeout, n_transaction, max_epoch, n_restart, pc, n_client_request)


# --------------------------------------------------------------------------------------------
# Building a successor
# --------------------------------------------------------------------------------------------


class _Succ:
    """The fields of a successor under construction (a copy of the state's), with the
    channels as a mutable list, and what its label will say."""

    __slots__ = ("f", "m", "n", "notes", "s", "sent")

    def __init__(self, s: State) -> None:
        self.s = s
        self.n = len(s.state)
        self.f: list[object] = list(s)
        self.m: list[tuple[Message, ...]] | None = None
        self.sent: list[tuple[int, int, Message]] = []
        self.notes: list[str] = []

    # -- per-server fields -------------------------------------------------------------------

    def put(self, field: int, index: int, value: object) -> None:
        self.f[field] = _set(self.f[field], index, value)  # type: ignore[arg-type]

    def flag(self, bit: int, note: str) -> None:
        self.f[_VIOLATED] = self.f[_VIOLATED] | bit  # type: ignore[operator]
        self.notes.append(note)

    # -- msgs --------------------------------------------------------------------------------

    def _msgs(self) -> list[tuple[Message, ...]]:
        if self.m is None:
            self.m = list(self.s.msgs)
        return self.m

    def discard(self, i: int, j: int) -> None:
        """``Discard(i, j)``: drop the head of ``msgs[i][j]``."""
        m = self._msgs()
        k = i * self.n + j
        if m[k]:
            m[k] = m[k][1:]

    def send(self, i: int, j: int, msg: Message) -> None:
        """``Send(i, j, m)``."""
        m = self._msgs()
        k = i * self.n + j
        m[k] = (*m[k], msg)
        self.sent.append((i, j, msg))

    def reply(self, i: int, j: int, msg: Message) -> None:
        """``Reply(i, j, m)``: discard the head of ``msgs[j][i]`` and send ``m`` to ``j``."""
        self.discard(j, i)
        self.send(i, j, msg)

    def clean(self, i: int, j: int) -> None:
        """``Clean(i, j)``: empty both channels between ``i`` and ``j``."""
        m = self._msgs()
        m[j * self.n + i] = ()
        m[i * self.n + j] = ()

    def clean_input_buffer(self, mask: int) -> None:
        """``CleanInputBuffer(S)``: empty every channel into a server of ``S``."""
        m = self._msgs()
        n = self.n
        for v in range(n):
            if mask >> v & 1:
                for src in range(n):
                    m[src * n + v] = ()

    def broadcast(self, i: int, entries: tuple[object | None, ...], msg: Message) -> None:
        """Append ``msg`` to ``msgs[i][v]`` for every connected ``v`` of ``entries`` (a
        ``cepochRecv`` / ``ackeRecv`` / ``ackldRecv`` set) that is a learner of ``i``, ``v /= i``
        (``Broadcast`` and the ``DiscardAndBroadcast*`` operators after their discard)."""
        learners: int = self.f[_LEARNERS][i]  # type: ignore[index]
        for v, entry in enumerate(entries):
            if v == i or entry is None or not learners >> v & 1:
                continue
            connected = entry if isinstance(entry, bool) else entry.connected  # type: ignore[attr-defined]
            if connected:
                self.send(i, v, msg)

    # -- state switching utilities -----------------------------------------------------------

    def follower_shutdown(self, i: int) -> None:
        """``FollowerShutdown(i)``."""
        self.put(_STATE, i, LOOKING)
        self.put(_ZAB, i, ELECTION)
        self.put(_CONNECT, i, NULL)

    def leader_shutdown(self, i: int) -> None:
        """``LeaderShutdown(i)``: every learner of ``i`` (``i`` included) goes back to
        election, their input buffers are emptied, and ``i`` has no learners."""
        s = self.s
        mask = s.learners[i]
        state = list(s.state)
        zab = list(s.zab_state)
        connect = list(s.connect_info)
        for v in range(self.n):
            if mask >> v & 1:
                state[v] = LOOKING
                zab[v] = ELECTION
                connect[v] = NULL
        self.f[_STATE] = tuple(state)
        self.f[_ZAB] = tuple(zab)
        self.f[_CONNECT] = tuple(connect)
        self.clean_input_buffer(mask)
        self.put(_LEARNERS, i, 0)

    def remove_learner(self, i: int, j: int) -> None:
        """``RemoveLearner(i, j)``: ``j`` leaves ``learners[i]`` and is marked disconnected in
        ``cepochRecv[i]``, ``ackeRecv[i]`` and ``ackldRecv[i]``."""
        s = self.s
        self.put(_LEARNERS, i, s.learners[i] & ~(1 << j))
        cepoch = s.cepoch_recv[i][j]
        if cepoch is not None:
            self.put(_CEPOCH_RECV, i, _set(s.cepoch_recv[i], j, CepochEntry(False, cepoch.epoch)))
        acke = s.acke_recv[i][j]
        if acke is not None:
            entry = AckeEntry(False, acke.peer_last_epoch, acke.peer_history)
            self.put(_ACKE_RECV, i, _set(s.acke_recv[i], j, entry))
        if s.ackld_recv[i][j] is not None:
            self.put(_ACKLD_RECV, i, _set(s.ackld_recv[i], j, False))

    def switch_to_leader(self, i: int) -> None:
        """``SwitchToLeader(i)``."""
        s = self.s
        n = self.n
        self.put(_STATE, i, LEADING)
        self.put(_ZAB, i, DISCOVERY)
        self.put(_LEARNERS, i, 1 << i)
        self.put(_CEPOCH_RECV, i, _set((None,) * n, i, CepochEntry(True, s.accepted_epoch[i])))
        self.put(
            _ACKE_RECV,
            i,
            _set((None,) * n, i, AckeEntry(True, s.current_epoch[i], s.history[i])),
        )
        self.put(_ACKLD_RECV, i, _set((None,) * n, i, True))
        self.put(_SEND_COUNTER, i, 0)

    def switch_to_follower(self, i: int) -> None:
        """``SwitchToFollower(i)``."""
        self.put(_STATE, i, FOLLOWING)
        self.put(_ZAB, i, DISCOVERY)

    # -- the successor -----------------------------------------------------------------------

    def done(
        self,
        cfg: ZabConfig,
        name: str,
        i: int,
        j: int | None,
        received: Message | None,
        out: list[Transition],
        *,
        record: bool = True,
    ) -> None:
        f = self.f
        if self.m is not None:
            f[_MSGS] = tuple(self.m)
        if record:
            f[_RECORDER] = update_recorder(cfg, self.s.recorder, name, i, j, f)
        label = Label(name, i, j, received, tuple(self.sent), tuple(self.notes))
        out.append(Transition(label, _make(f)))


# --------------------------------------------------------------------------------------------
# Election (the leader oracle)
# --------------------------------------------------------------------------------------------


def update_leader(cfg: ZabConfig, s: State, i: int, out: list[Transition]) -> None:
    """``UpdateLeader(i)``: a looking server makes itself the oracle's leader and leads."""
    if s.state[i] != LOOKING or s.leader_oracle == i:
        return
    t = _Succ(s)
    t.f[_ORACLE] = i
    t.switch_to_leader(i)
    t.done(cfg, "UpdateLeader", i, None, None, out)


def follow_leader(cfg: ZabConfig, s: State, i: int, out: list[Transition]) -> None:
    """``FollowLeader(i)``: a looking server follows the oracle's leader (or leads, if the
    oracle names it)."""
    if s.state[i] != LOOKING or s.leader_oracle == NULL:
        return
    t = _Succ(s)
    if s.leader_oracle == i:
        t.switch_to_leader(i)
    else:
        t.switch_to_follower(i)
    t.done(cfg, "FollowLeader", i, None, None, out)


# --------------------------------------------------------------------------------------------
# Abnormal situations
# --------------------------------------------------------------------------------------------


def timeout(cfg: ZabConfig, s: State, i: int, j: int, out: list[Transition]) -> None:
    """``Timeout(i, j)``: leader ``i`` and its follower ``j`` lose each other. ``j`` goes back
    to election; so does ``i`` (with all its learners) if the rest is no longer a quorum."""
    if not check_timeout(cfg, s):
        return
    if s.state[i] != LEADING or not s.learners[i] >> j & 1:
        return
    if s.state[j] != FOLLOWING or s.connect_info[j] != i:
        return
    t = _Succ(s)
    if is_quorum(s.learners[i] & ~(1 << j), t.n):
        t.remove_learner(i, j)
        t.follower_shutdown(j)
        t.clean(i, j)
    else:
        t.leader_shutdown(i)
    t.done(cfg, "Timeout", i, j, None, out)


def restart(cfg: ZabConfig, s: State, i: int, out: list[Transition]) -> None:
    """``Restart(i)``: ``i`` restarts with its history and epochs, forgetting what it knew to
    be committed; a follower's leader drops it (and shuts down if left without a quorum); a
    leader shuts down."""
    if not check_restart(cfg, s):
        return
    t = _Succ(s)
    role = s.state[i]
    if role == FOLLOWING:
        leader = s.connect_info[i]
        if leader != NULL:
            if is_quorum(s.learners[leader] & ~(1 << i), t.n):
                t.remove_learner(leader, i)
                t.follower_shutdown(i)
                t.clean(leader, i)
            else:
                t.leader_shutdown(leader)
        else:
            t.follower_shutdown(i)
            t.clean_input_buffer(1 << i)
    elif role == LEADING:
        t.leader_shutdown(i)
    t.put(_COMMITTED, i, NOTHING_COMMITTED)
    t.done(cfg, "Restart", i, None, None, out)


# --------------------------------------------------------------------------------------------
# Discovery
# --------------------------------------------------------------------------------------------


def connect_and_follower_send_cepoch(
    cfg: ZabConfig, s: State, i: int, j: int, out: list[Transition]
) -> None:
    """``ConnectAndFollowerSendCEPOCH(i, j)``: follower ``j`` without leader connects to the
    oracle's leader ``i`` and sends CEPOCH with its ``acceptedEpoch`` (f.p)."""
    if s.state[i] != LEADING or s.learners[i] >> j & 1:
        return
    if s.state[j] != FOLLOWING or s.connect_info[j] != NULL or s.leader_oracle != i:
        return
    t = _Succ(s)
    t.put(_LEARNERS, i, s.learners[i] | 1 << j)
    t.put(_CONNECT, j, i)
    t.send(j, i, Message(CEPOCH, mepoch=s.accepted_epoch[j]))
    t.done(cfg, "ConnectAndFollowerSendCEPOCH", i, j, None, out)


def leader_process_cepoch(
    cfg: ZabConfig, s: State, i: int, j: int, msg: Message, out: list[Transition]
) -> None:
    """``LeaderProcessCEPOCH(i, j)``. Before a quorum of CEPOCH: record it; the CEPOCH that
    completes the quorum fixes the new epoch (the largest f.p received plus one) and
    broadcasts NEWEPOCH. After: answer NEWEPOCH with the epoch already chosen."""
    if not check_epoch(cfg, s) or not s.learners[i] >> j & 1:
        return
    n = len(s.state)
    t = _Succ(s)
    recv = s.cepoch_recv[i]
    new_recv = _set(recv, j, CepochEntry(True, msg.mepoch))
    t.put(_CEPOCH_RECV, i, new_recv)
    if not is_quorum(_members(recv), n):
        if s.zab_state[i] != DISCOVERY:
            t.flag(
                STATE_INCONSISTENT,
                "Exception: CepochRecvQuorumFormed false, while zabState not DISCOVERY.",
            )
        if is_quorum(_members(new_recv), n):
            epoch = max(e.epoch for e in new_recv if e is not None) + 1
            t.put(_ACCEPTED, i, epoch)
            t.discard(j, i)
            t.broadcast(i, new_recv, Message(NEWEPOCH, mepoch=epoch))
        else:
            t.discard(j, i)
    else:
        t.reply(i, j, Message(NEWEPOCH, mepoch=s.accepted_epoch[i]))
    t.done(cfg, "LeaderProcessCEPOCH", i, j, msg, out)


def follower_process_newepoch(
    cfg: ZabConfig, s: State, i: int, j: int, msg: Message, out: list[Transition]
) -> None:
    """``FollowerProcessNEWEPOCH(i, j)``. An epoch at least f.p is accepted and answered with
    ACKEPOCH (f.a and the history); an older one sends the follower back to election."""
    if s.connect_info[i] != j:
        return
    t = _Succ(s)
    if msg.mepoch >= s.accepted_epoch[i]:
        if s.zab_state[i] == DISCOVERY:
            t.put(_ACCEPTED, i, msg.mepoch)
            t.reply(i, j, Message(ACKEPOCH, mepoch=s.current_epoch[i], mhistory=s.history[i]))
            t.put(_ZAB, i, SYNCHRONIZATION)
        else:
            t.flag(
                STATE_INCONSISTENT,
                "Exception: Follower receives NEWEPOCH, whileZabState not DISCOVERY.",
            )
            t.discard(j, i)
    else:
        t.follower_shutdown(i)
        t.clean(i, j)
        t.remove_learner(j, i)
    t.done(cfg, "FollowerProcessNEWEPOCH", i, j, msg, out)


def leader_process_ackepoch(
    cfg: ZabConfig, s: State, i: int, j: int, msg: Message, out: list[Transition]
) -> None:
    """``LeaderProcessACKEPOCH(i, j)``. The ACKEPOCH that completes a quorum makes the leader
    established: f.a := e', the initial history is the most recent one received (acked by the
    leader alone), SYNCHRONIZATION, NEWLEADER broadcast. Later ones get NEWLEADER at once."""
    if not s.learners[i] >> j & 1:
        return
    n = len(s.state)
    t = _Succ(s)
    recv = s.acke_recv[i]
    new_recv = _set(recv, j, AckeEntry(True, msg.mepoch, msg.mhistory))
    t.put(_ACKE_RECV, i, new_recv)
    epoch = s.accepted_epoch[i]
    if is_quorum(_members(recv), n):
        history = s.history[i]
        t.reply(i, j, Message(NEWLEADER, mepoch=epoch, mhistory=history))
        t.f[_LOG] = s.proposal_msgs_log | packets_for_checking(i, epoch, history)
    else:
        if s.zab_state[i] != DISCOVERY:
            t.flag(
                STATE_INCONSISTENT,
                "Exception: AckeRecvQuorumFormed false, while zabState not DISCOVERY.",
            )
        if is_quorum(_members(new_recv), n):
            t.put(_CURRENT, i, epoch)
            if 1 <= epoch <= MAXEPOCH:
                t.put(_EPOCH_LEADER, epoch - 1, s.epoch_leader[epoch - 1] | 1 << i)
            history = init_acksid(i, determine_initial_history(new_recv))
            t.put(_HISTORY, i, history)
            t.put(_ZAB, i, SYNCHRONIZATION)
            t.discard(j, i)
            t.broadcast(i, new_recv, Message(NEWLEADER, mepoch=epoch, mhistory=history))
            t.f[_LOG] = s.proposal_msgs_log | packets_for_checking(i, epoch, history)
        else:
            t.discard(j, i)
    t.done(cfg, "LeaderProcessACKEPOCH", i, j, msg, out)


# --------------------------------------------------------------------------------------------
# Synchronization
# --------------------------------------------------------------------------------------------


def follower_process_newleader(
    cfg: ZabConfig, s: State, i: int, j: int, msg: Message, out: list[Transition]
) -> None:
    """``FollowerProcessNEWLEADER(i, j)``. With f.p = e': f.a := e', the history becomes the
    leader's, ACKLD carries its last zxid. Otherwise back to election."""
    if s.connect_info[i] != j:
        return
    t = _Succ(s)
    if s.accepted_epoch[i] != msg.mepoch:
        t.follower_shutdown(i)
        t.clean(i, j)
        t.remove_learner(j, i)
    else:
        if s.zab_state[i] != SYNCHRONIZATION:
            t.flag(
                STATE_INCONSISTENT,
                "Exception: Follower receives NEWLEADER, whileZabState not SYNCHRONIZATION.",
            )
        t.put(_CURRENT, i, s.accepted_epoch[i])
        t.put(_HISTORY, i, msg.mhistory)
        t.reply(i, j, Message(ACKLD, mzxid=last_zxid(msg.mhistory)))
    t.done(cfg, "FollowerProcessNEWLEADER", i, j, msg, out)


def leader_process_ackld(
    cfg: ZabConfig, s: State, i: int, j: int, msg: Message, out: list[Transition]
) -> None:
    """``LeaderProcessACKLD(i, j)``. The ACKLD that completes a quorum commits the whole
    history, turns the leader to BROADCAST and broadcasts COMMITLD with its last zxid. Later
    ones are answered with COMMITLD carrying the last committed zxid (naive Issue 3: the
    ACKLD's own zxid)."""
    if not s.learners[i] >> j & 1:
        return
    n = len(s.state)
    t = _Succ(s)
    recv = s.ackld_recv[i]
    new_recv = _set(recv, j, True)
    t.put(_ACKLD_RECV, i, new_recv)
    t.put(_HISTORY, i, update_acksid(s.history[i], j, msg.mzxid))
    if not is_quorum(_members(recv), n):
        if s.zab_state[i] != SYNCHRONIZATION:
            t.flag(
                STATE_INCONSISTENT,
                "Exception: AckldRecvQuorumFormed false, while zabState not SYNCHRONIZATION.",
            )
        if is_quorum(_members(new_recv), n):
            zxid = last_zxid(s.history[i])
            t.put(_COMMITTED, i, LastCommitted(len(s.history[i]), zxid))
            t.put(_ZAB, i, BROADCAST)
            t.discard(j, i)
            t.broadcast(i, new_recv, Message(COMMITLD, mzxid=zxid))
        else:
            t.discard(j, i)
    else:
        if s.zab_state[i] != BROADCAST:
            t.flag(
                STATE_INCONSISTENT,
                "Exception: AckldRecvQuorumFormed true, while zabState not BROADCAST.",
            )
        zxid = msg.mzxid if cfg.naive_commitld_ackld_zxid else s.last_committed[i].zxid
        t.reply(i, j, Message(COMMITLD, mzxid=zxid))
    t.done(cfg, "LeaderProcessACKLD", i, j, msg, out)


def follower_process_commitld(
    cfg: ZabConfig, s: State, i: int, j: int, msg: Message, out: list[Transition]
) -> None:
    """``FollowerProcessCOMMITLD(i, j)``: commit up to the zxid carried, turn to BROADCAST."""
    if s.connect_info[i] != j:
        return
    t = _Succ(s)
    history = s.history[i]
    index = 0 if msg.mzxid == ZERO_ZXID else zxid_to_index(history, msg.mzxid)
    if not 0 <= index <= len(history):
        t.flag(PROPOSAL_INCONSISTENT, "Exception: zxid in COMMITLD not exists in history.")
    t.put(_COMMITTED, i, LastCommitted(index, msg.mzxid))
    t.put(_ZAB, i, BROADCAST)
    t.discard(j, i)
    t.done(cfg, "FollowerProcessCOMMITLD", i, j, msg, out)


# --------------------------------------------------------------------------------------------
# Broadcast
# --------------------------------------------------------------------------------------------


def leader_process_request(cfg: ZabConfig, s: State, i: int, out: list[Transition]) -> None:
    """``LeaderProcessRequest(i)``: a leader in BROADCAST appends a client request (its value
    is the count of requests so far) with the next zxid, acknowledged by itself."""
    if not check_transaction_num(cfg, s):
        return
    if s.state[i] != LEADING or s.zab_state[i] != BROADCAST:
        return
    t = _Succ(s)
    epoch = s.current_epoch[i]
    zxid = last_zxid(s.history[i])
    new_zxid = (zxid[0], zxid[1] + 1) if zxid[0] == epoch else (epoch, 1)
    txn = Txn(new_zxid, s.recorder.n_client_request, 1 << i, epoch)
    t.put(_HISTORY, i, (*s.history[i], txn))
    t.done(cfg, "LeaderProcessRequest", i, None, None, out)


def leader_broadcast_propose(cfg: ZabConfig, s: State, i: int, out: list[Transition]) -> None:
    """``LeaderBroadcastPROPOSE(i)``: the next entry of the current epoch not yet proposed is
    broadcast to ``ackeRecv`` (naive Issue 1: to ``ackldRecv``)."""
    if s.state[i] != LEADING or s.zab_state[i] != BROADCAST:
        return
    counter = s.send_counter[i]
    if counter >= current_counter(s, i):
        return
    epoch = s.current_epoch[i]
    history = s.history[i]
    index = zxid_to_index(history, (epoch, counter + 1))
    if not 1 <= index <= len(history):
        raise SpecError(f"LeaderBroadcastPROPOSE({i}): history[{index}] does not exist")
    txn = history[index - 1]
    t = _Succ(s)
    t.put(_SEND_COUNTER, i, counter + 1)
    targets = s.ackld_recv[i] if cfg.naive_propose_to_ackld else s.acke_recv[i]
    t.broadcast(i, targets, Message(PROPOSE, mzxid=txn.zxid, mdata=txn.value))
    t.f[_LOG] = s.proposal_msgs_log | {Proposal(i, epoch, txn.zxid, txn.value)}
    t.done(cfg, "LeaderBroadcastPROPOSE", i, None, None, out)


def follower_process_propose(
    cfg: ZabConfig, s: State, i: int, j: int, msg: Message, out: list[Transition]
) -> None:
    """``FollowerProcessPROPOSE(i, j)``: the next zxid is appended and acknowledged; one
    already in the history is dropped (naive Issue 2: flagged illegal too); any other is
    illegal."""
    if s.connect_info[i] != j:
        return
    t = _Succ(s)
    history = s.history[i]
    if is_next_zxid(last_zxid(history), msg.mzxid):
        txn = Txn(msg.mzxid, msg.mdata, 0, s.current_epoch[i])
        t.put(_HISTORY, i, (*history, txn))
        t.reply(i, j, Message(ACK, mzxid=msg.mzxid))
    else:
        index = zxid_to_index(history, msg.mzxid)
        exists = 0 < index <= len(history)
        if not exists or cfg.naive_reject_redundant_propose:
            t.flag(
                PROPOSAL_INCONSISTENT,
                "Exception: Follower receives PROPOSE, while txn is neither the next nor "
                "exists in history."
                if not exists
                else "Exception: Follower receives PROPOSE whose zxid is not the next "
                "(naive Issue 2).",
            )
        t.discard(j, i)
    t.done(cfg, "FollowerProcessPROPOSE", i, j, msg, out)


def leader_process_ack(
    cfg: ZabConfig, s: State, i: int, j: int, msg: Message, out: list[Transition]
) -> None:
    """``LeaderProcessACK(i, j)`` with ``LeaderTryToCommit``: count the ack; once the entry
    has a quorum and everything before it is committed, commit it and broadcast COMMIT to
    ``ackldRecv``."""
    if not s.learners[i] >> j & 1:
        return
    n = len(s.state)
    t = _Succ(s)
    history = s.history[i]
    committed = s.last_committed[i]
    index = zxid_to_index(history, msg.mzxid)
    exists = 1 <= index <= len(history)
    ack_index = last_ack_index_from_follower(history, j)
    if exists and (ack_index == -1 or ack_index + 1 == index):
        txn = history[index - 1]
        acked = Txn(txn.zxid, txn.value, txn.ack_sid | 1 << j, txn.epoch)
        t.put(_HISTORY, i, _set(history, index - 1, acked))
        outstanding = committed.index < len(history)
        has_committed = not msg.mzxid > committed.zxid
        all_before_committed = committed.index >= index - 1
        can_commit = all_before_committed and is_quorum(acked.ack_sid, n)  # LeaderTryToCommit
        if not outstanding or has_committed or not can_commit:
            t.discard(j, i)
        else:
            if committed.index + 1 != index:
                t.flag(COMMIT_INCONSISTENT, f"Warn: Committing zxid {msg.mzxid} not first.")
            t.put(_COMMITTED, i, LastCommitted(index, msg.mzxid))
            t.discard(j, i)
            t.broadcast(i, s.ackld_recv[i], Message(COMMIT, mzxid=msg.mzxid))
    else:
        t.flag(
            ACK_INCONSISTENT,
            "Exception: No such zxid.  / ackIndex doesn't inc monotonically.",
        )
        t.discard(j, i)
    t.done(cfg, "LeaderProcessACK", i, j, msg, out)


def follower_process_commit(
    cfg: ZabConfig, s: State, i: int, j: int, msg: Message, out: list[Transition]
) -> None:
    """``FollowerProcessCOMMIT(i, j)``: commit the next pending entry if it is the one named;
    a COMMIT naming another is illegal; one with nothing pending is only a warning."""
    if s.connect_info[i] != j:
        return
    t = _Succ(s)
    history = s.history[i]
    committed = s.last_committed[i]
    if committed.index >= len(history):
        t.notes.append("Warn: Committing zxid without seeing txn.")
    else:
        first = history[committed.index]
        if first.zxid != msg.mzxid:
            t.flag(
                COMMIT_INCONSISTENT,
                "Exception: Committing zxid not equals next pending txn zxid.",
            )
        else:
            t.put(_COMMITTED, i, LastCommitted(committed.index + 1, first.zxid))
    t.discard(j, i)
    t.done(cfg, "FollowerProcessCOMMIT", i, j, msg, out)


# --------------------------------------------------------------------------------------------
# Messages that should not exist
# --------------------------------------------------------------------------------------------


def nonexistent(s: State, i: int, j: int, msg: Message) -> bool:
    """The condition of ``FilterNonexistentMessage(i)`` on the head ``msg`` of ``msgs[j][i]``."""
    role = s.state[i]
    if role == LEADING:
        return msg.mtype in LEADER_TO_FOLLOWER or not s.learners[i] >> j & 1
    if role == FOLLOWING:
        return msg.mtype in FOLLOWER_TO_LEADER or s.connect_info[i] != j
    return True  # LOOKING


def filter_nonexistent_message(
    cfg: ZabConfig, s: State, i: int, j: int, msg: Message, out: list[Transition]
) -> None:
    """``FilterNonexistentMessage(i)`` (for the ``j`` its ``\\E`` picks): discard a message that
    should not be in the network and flag ``messageIllegal``. The recorder is unchanged."""
    if not nonexistent(s, i, j, msg):
        return
    t = _Succ(s)
    t.discard(j, i)
    t.flag(MESSAGE_ILLEGAL, "Exception: a message that should not exist (messageIllegal).")
    t.done(cfg, "FilterNonexistentMessage", i, j, msg, out, record=False)


# --------------------------------------------------------------------------------------------
# Next
# --------------------------------------------------------------------------------------------

_LEADER_RECEIVES = {
    CEPOCH: leader_process_cepoch,
    ACKEPOCH: leader_process_ackepoch,
    ACKLD: leader_process_ackld,
    ACK: leader_process_ack,
}
_FOLLOWER_RECEIVES = {
    NEWEPOCH: follower_process_newepoch,
    NEWLEADER: follower_process_newleader,
    COMMITLD: follower_process_commitld,
    PROPOSE: follower_process_propose,
    COMMIT: follower_process_commit,
}


def successors(cfg: ZabConfig, s: State) -> list[Transition]:
    """Every successor of ``s`` under ``Next``, each with its label.

    Order: election, timeouts and restarts, connections, then for each server the head of
    each of its input buffers (the action that processes it, then ``FilterNonexistentMessage``
    if it applies), then client requests and proposals.
    """
    out: list[Transition] = []
    n = len(s.state)
    roles = s.state
    for i in range(n):
        if roles[i] == LOOKING:
            update_leader(cfg, s, i, out)
            follow_leader(cfg, s, i, out)
    if check_timeout(cfg, s):
        for i in range(n):
            if roles[i] == LEADING:
                for j in range(n):
                    if j != i:
                        timeout(cfg, s, i, j, out)
        if check_restart(cfg, s):
            for i in range(n):
                restart(cfg, s, i, out)
    oracle = s.leader_oracle
    if oracle != NULL and roles[oracle] == LEADING:
        for j in range(n):
            if j != oracle:
                connect_and_follower_send_cepoch(cfg, s, oracle, j, out)
    msgs = s.msgs
    for i in range(n):
        role = roles[i]
        for j in range(n):
            channel = msgs[j * n + i]
            if not channel or j == i:
                continue
            head = channel[0]
            if role == LEADING:
                action = _LEADER_RECEIVES.get(head.mtype)
            elif role == FOLLOWING:
                action = _FOLLOWER_RECEIVES.get(head.mtype)
            else:
                action = None
            if action is not None:
                action(cfg, s, i, j, head, out)
            filter_nonexistent_message(cfg, s, i, j, head, out)
    for i in range(n):
        if roles[i] == LEADING:
            leader_process_request(cfg, s, i, out)
            leader_broadcast_propose(cfg, s, i, out)
    return out


#: The actions of ``Next``, in its order.
ACTIONS = (
    "UpdateLeader",
    "FollowLeader",
    "Timeout",
    "Restart",
    "ConnectAndFollowerSendCEPOCH",
    "LeaderProcessCEPOCH",
    "FollowerProcessNEWEPOCH",
    "LeaderProcessACKEPOCH",
    "FollowerProcessNEWLEADER",
    "LeaderProcessACKLD",
    "FollowerProcessCOMMITLD",
    "LeaderProcessRequest",
    "LeaderBroadcastPROPOSE",
    "FollowerProcessPROPOSE",
    "LeaderProcessACK",
    "FollowerProcessCOMMIT",
    "FilterNonexistentMessage",
)
