"""The variables of the Zab protocol spec (``Zab.tla``) as immutable, hashable Python values.

One ``State`` holds every variable of the spec's ``vars``. Per-server functions are tuples
indexed by server (``s1`` is index 0); sets of servers are bitmasks; ``NullPoint`` is
``NULL`` (-1). The leader's ``cepochRecv``, ``ackeRecv`` and ``ackldRecv`` are sets of records
with one record per ``sid`` (every update replaces the record of its ``sid``), so each is a
tuple indexed by ``sid`` holding the rest of the record or ``None``: the same information, one
to one. ``msgs[i][j]`` (the input buffer of ``j`` from ``i``) is ``msgs[i * n + j]``, a tuple
used as a FIFO queue.

Two states are equal exactly when the spec's states are, so distinct-state counts can be
compared with TLC's. Constants are plain ``int``s (enum members hash through Python code).
"""

from __future__ import annotations

from typing import NamedTuple

from model.bitsets import members
from model.zab.protocol.config import MAXEPOCH

#: ``NullPoint``: no server (``connectInfo`` of a follower without leader, ``leaderOracle``).
NULL = -1

# state[i]
LOOKING = 0
FOLLOWING = 1
LEADING = 2
STATE_NAMES = ("LOOKING", "FOLLOWING", "LEADING")

# zabState[i]
ELECTION = 0
DISCOVERY = 1
SYNCHRONIZATION = 2
BROADCAST = 3
ZAB_STATE_NAMES = ("ELECTION", "DISCOVERY", "SYNCHRONIZATION", "BROADCAST")

# Message types (mtype). CEPOCH, ACKEPOCH, ACKLD and ACK go from a follower to its leader; the
# others from a leader to a follower.
CEPOCH = 0
NEWEPOCH = 1
ACKEPOCH = 2
NEWLEADER = 3
ACKLD = 4
COMMITLD = 5
PROPOSE = 6
ACK = 7
COMMIT = 8
MTYPE_NAMES = (
    "CEPOCH",
    "NEWEPOCH",
    "ACKEPOCH",
    "NEWLEADER",
    "ACKLD",
    "COMMITLD",
    "PROPOSE",
    "ACK",
    "COMMIT",
)
FOLLOWER_TO_LEADER = frozenset({CEPOCH, ACKEPOCH, ACKLD, ACK})
LEADER_TO_FOLLOWER = frozenset({NEWEPOCH, NEWLEADER, COMMITLD, PROPOSE, COMMIT})

# violatedInvariants, one bit per field.
STATE_INCONSISTENT = 1
PROPOSAL_INCONSISTENT = 2
COMMIT_INCONSISTENT = 4
ACK_INCONSISTENT = 8
MESSAGE_ILLEGAL = 16
VIOLATION_NAMES = {
    STATE_INCONSISTENT: "stateInconsistent",
    PROPOSAL_INCONSISTENT: "proposalInconsistent",
    COMMIT_INCONSISTENT: "commitInconsistent",
    ACK_INCONSISTENT: "ackInconsistent",
    MESSAGE_ILLEGAL: "messageIllegal",
}

#: A zxid ``<<epoch, counter>>``. Python compares tuples as ``ZxidCompare`` does.
Zxid = tuple[int, int]
ZERO_ZXID: Zxid = (0, 0)


class Txn(NamedTuple):
    """A history entry ``[zxid, value, ackSid, epoch]``; ``ack_sid`` is a bitmask."""

    zxid: Zxid
    value: int
    ack_sid: int
    epoch: int


History = tuple[Txn, ...]


class LastCommitted(NamedTuple):
    """``lastCommitted[i]``: ``[index, zxid]``."""

    index: int  # type: ignore[assignment]  # the spec's name; shadows tuple.index
    zxid: Zxid


NOTHING_COMMITTED = LastCommitted(0, ZERO_ZXID)


class Message(NamedTuple):
    """A message of ``msgs``. Only the fields of its ``mtype`` are used (the others keep their
    defaults), so two messages are equal exactly when the spec's records are:

    CEPOCH / NEWEPOCH ``mepoch``; ACKEPOCH / NEWLEADER ``mepoch``, ``mhistory``; ACKLD /
    COMMITLD / ACK / COMMIT ``mzxid``; PROPOSE ``mzxid``, ``mdata``.
    """

    mtype: int
    mepoch: int = 0
    mzxid: Zxid = ZERO_ZXID
    mdata: int = 0
    mhistory: History = ()


class CepochEntry(NamedTuple):
    """The rest of a ``cepochRecv`` record ``[sid, connected, epoch]``."""

    connected: bool
    epoch: int


class AckeEntry(NamedTuple):
    """The rest of an ``ackeRecv`` record ``[sid, connected, peerLastEpoch, peerHistory]``."""

    connected: bool
    peer_last_epoch: int
    peer_history: History


class Proposal(NamedTuple):
    """A record of ``proposalMsgsLog``: ``[source, epoch, zxid, data]``."""

    source: int
    epoch: int
    zxid: Zxid
    data: int


class Recorder(NamedTuple):
    """``recorder``: ``[nTimeout, nTransaction, maxEpoch, nRestart, pc, nClientRequest]``.

    ``pc`` is the last action, ``(name, i)`` or ``(name, i, j)`` (``("Init",)`` at first);
    ``()`` when the configuration does not record it.
    """

    n_timeout: int
    n_transaction: int
    max_epoch: int
    n_restart: int
    pc: tuple[str | int, ...]
    n_client_request: int


class State(NamedTuple):
    """One state of the spec: every variable of ``vars``."""

    # serverVars
    state: tuple[int, ...]
    zab_state: tuple[int, ...]
    accepted_epoch: tuple[int, ...]
    current_epoch: tuple[int, ...]
    history: tuple[History, ...]
    last_committed: tuple[LastCommitted, ...]
    # leaderVars
    learners: tuple[int, ...]
    cepoch_recv: tuple[tuple[CepochEntry | None, ...], ...]
    acke_recv: tuple[tuple[AckeEntry | None, ...], ...]
    ackld_recv: tuple[tuple[bool | None, ...], ...]
    send_counter: tuple[int, ...]
    # followerVars
    connect_info: tuple[int, ...]
    # electionVars
    leader_oracle: int
    # msgVars
    msgs: tuple[tuple[Message, ...], ...]
    # verifyVars
    epoch_leader: tuple[int, ...]
    proposal_msgs_log: frozenset[Proposal]
    violated: int
    recorder: Recorder

    @property
    def servers(self) -> int:
        return len(self.state)

    def channel(self, i: int, j: int) -> tuple[Message, ...]:
        """``msgs[i][j]``: the messages from ``i`` waiting at ``j``, oldest first."""
        return self.msgs[i * len(self.state) + j]


def init_state(servers: int, *, record_pc: bool = True) -> State:
    """``Init``."""
    n = servers
    return State(
        state=(LOOKING,) * n,
        zab_state=(ELECTION,) * n,
        accepted_epoch=(0,) * n,
        current_epoch=(0,) * n,
        history=((),) * n,
        last_committed=(NOTHING_COMMITTED,) * n,
        learners=(0,) * n,
        cepoch_recv=((None,) * n,) * n,
        acke_recv=((None,) * n,) * n,
        ackld_recv=((None,) * n,) * n,
        send_counter=(0,) * n,
        connect_info=(NULL,) * n,
        leader_oracle=NULL,
        msgs=((),) * (n * n),
        epoch_leader=(0,) * MAXEPOCH,
        proposal_msgs_log=frozenset(),
        violated=0,
        recorder=Recorder(0, 0, 0, 0, ("Init",) if record_pc else (), 0),
    )


def server_name(index: int) -> str:
    """``0`` -> ``"s1"``."""
    return f"s{index + 1}"


#: The server indexes in a bitmask, ascending (the same function: no call on the hot path).
servers_of = members


def format_servers(mask: int) -> str:
    return "{" + ",".join(server_name(i) for i in servers_of(mask)) + "}"


def format_zxid(zxid: Zxid) -> str:
    return f"[{zxid[0]},{zxid[1]}]"


def format_value(value: int) -> str:
    """A request value, 1-based as in the seeds' pictures (the spec's values count requests
    from 0: the first request's value is 0, shown ``v1``)."""
    return f"v{value + 1}"


def format_txn(txn: Txn) -> str:
    """As in the seeds' pictures: ``[epoch,counter,v<value>]``."""
    return f"[{txn.zxid[0]},{txn.zxid[1]},{format_value(txn.value)}]"


def format_history(history: History) -> str:
    return "<" + ", ".join(format_txn(t) for t in history) + ">"
