"""The numbers of ZooKeeper's client protocol: operation codes, error codes, special xids.

Facts from ZooKeeper's sources: ``ZooDefs.OpCode`` (operation codes), ``KeeperException.Code``
(error codes) and ``ClientCnxn`` (the xids a client reserves). An operation is named as
``ZooDefs.OpCode`` names it (``getData``, ``closeSession``), so a log reads like ZooKeeper's.
"""

from __future__ import annotations

import enum

#: Watcher events come from the server with this xid (no request asked for them).
NOTIFICATION_XID = -1
#: Pings (requests and their replies).
PING_XID = -2
#: Authentication packets (``addAuthInfo``).
AUTH_XID = -4
#: The watches a client re-registers after reconnecting (``setWatches``/``setWatches2``).
SET_WATCHES_XID = -8


class Op(enum.Enum):
    """What a packet is: an operation by its ``ZooDefs.OpCode`` name, or one of the packets
    that carry no op code (the handshake, a watcher event) or could not be read."""

    CREATE = "create"
    DELETE = "delete"
    EXISTS = "exists"
    GET_DATA = "getData"
    SET_DATA = "setData"
    GET_ACL = "getACL"
    SET_ACL = "setACL"
    GET_CHILDREN = "getChildren"
    SYNC = "sync"
    PING = "ping"
    GET_CHILDREN2 = "getChildren2"
    CHECK = "check"
    MULTI = "multi"
    CREATE2 = "create2"
    RECONFIG = "reconfig"
    CHECK_WATCHES = "checkWatches"
    REMOVE_WATCHES = "removeWatches"
    CREATE_CONTAINER = "createContainer"
    DELETE_CONTAINER = "deleteContainer"
    CREATE_TTL = "createTTL"
    MULTI_READ = "multiRead"
    AUTH = "auth"
    SET_WATCHES = "setWatches"
    SASL = "sasl"
    GET_EPHEMERALS = "getEphemerals"
    GET_ALL_CHILDREN_NUMBER = "getAllChildrenNumber"
    SET_WATCHES2 = "setWatches2"
    ADD_WATCH = "addWatch"
    WHO_AM_I = "whoAmI"
    CREATE_SESSION = "createSession"
    CLOSE_SESSION = "closeSession"
    #: The handshake: a ConnectRequest (client) or ConnectResponse (server), which have no op
    #: code on the wire.
    CONNECT = "connect"
    #: A watcher event from the server (xid -1; ``OpCode.notification`` is 0).
    NOTIFICATION = "notification"
    #: An op code this module does not know, or a reply no request of the connection asked.
    UNKNOWN = "unknown"
    #: Bytes that did not decode (see ``PacketInfo.error``).
    UNDECODABLE = "undecodable"

    @property
    def code(self) -> int | None:
        """The op code on the wire, or None for the packets that have none."""
        return _CODES.get(self)

    @classmethod
    def from_code(cls, code: int) -> Op:
        """The operation with wire op code ``code`` (:attr:`UNKNOWN` if there is none)."""
        return _BY_CODE.get(code, cls.UNKNOWN)


_CODES: dict[Op, int] = {
    Op.NOTIFICATION: 0,
    Op.CREATE: 1,
    Op.DELETE: 2,
    Op.EXISTS: 3,
    Op.GET_DATA: 4,
    Op.SET_DATA: 5,
    Op.GET_ACL: 6,
    Op.SET_ACL: 7,
    Op.GET_CHILDREN: 8,
    Op.SYNC: 9,
    Op.PING: 11,
    Op.GET_CHILDREN2: 12,
    Op.CHECK: 13,
    Op.MULTI: 14,
    Op.CREATE2: 15,
    Op.RECONFIG: 16,
    Op.CHECK_WATCHES: 17,
    Op.REMOVE_WATCHES: 18,
    Op.CREATE_CONTAINER: 19,
    Op.DELETE_CONTAINER: 20,
    Op.CREATE_TTL: 21,
    Op.MULTI_READ: 22,
    Op.AUTH: 100,
    Op.SET_WATCHES: 101,
    Op.SASL: 102,
    Op.GET_EPHEMERALS: 103,
    Op.GET_ALL_CHILDREN_NUMBER: 104,
    Op.SET_WATCHES2: 105,
    Op.ADD_WATCH: 106,
    Op.WHO_AM_I: 107,
    Op.CREATE_SESSION: -10,
    Op.CLOSE_SESSION: -11,
}
_BY_CODE = {code: op for op, code in _CODES.items()}

#: The creates: their request is a ``CreateRequest`` (``CreateTTLRequest`` for createTTL) and
#: their successful reply starts with the created path (a sequential create's real name).
CREATES = frozenset({Op.CREATE, Op.CREATE2, Op.CREATE_CONTAINER, Op.CREATE_TTL})

#: Operations whose request body starts with the znode path (a jute ustring), per
#: ``zookeeper.jute``: the creates, ``DeleteRequest``, ``ExistsRequest``, ``GetDataRequest``,
#: ``SetDataRequest``, ``GetACLRequest``, ``SetACLRequest``, ``GetChildrenRequest``,
#: ``GetChildren2Request``, ``SyncRequest``, ``CheckVersionRequest``,
#: ``CheckWatchesRequest``, ``RemoveWatchesRequest``, ``GetEphemeralsRequest`` (a path
#: prefix), ``GetAllChildrenNumberRequest``, ``AddWatchRequest``.
PATH_OPS = CREATES | frozenset(
    {
        Op.DELETE,
        Op.EXISTS,
        Op.GET_DATA,
        Op.SET_DATA,
        Op.GET_ACL,
        Op.SET_ACL,
        Op.GET_CHILDREN,
        Op.GET_CHILDREN2,
        Op.SYNC,
        Op.CHECK,
        Op.CHECK_WATCHES,
        Op.REMOVE_WATCHES,
        Op.GET_EPHEMERALS,
        Op.GET_ALL_CHILDREN_NUMBER,
        Op.ADD_WATCH,
    }
)

#: The operations a ``multi`` (or ``multiRead``) may carry (``MultiOperationRecord``).
MULTI_SUB_OPS = CREATES | frozenset(
    {Op.DELETE, Op.SET_DATA, Op.CHECK, Op.GET_CHILDREN, Op.GET_DATA}
)


class ErrorCode(enum.IntEnum):
    """``KeeperException.Code``: the ``err`` of a reply header (0 is OK)."""

    OK = 0
    SYSTEMERROR = -1
    RUNTIMEINCONSISTENCY = -2
    DATAINCONSISTENCY = -3
    CONNECTIONLOSS = -4
    MARSHALLINGERROR = -5
    UNIMPLEMENTED = -6
    OPERATIONTIMEOUT = -7
    BADARGUMENTS = -8
    UNKNOWNSESSION = -12
    NEWCONFIGNOQUORUM = -13
    RECONFIGINPROGRESS = -14
    APIERROR = -100
    NONODE = -101
    NOAUTH = -102
    BADVERSION = -103
    NOCHILDRENFOREPHEMERALS = -108
    NODEEXISTS = -110
    NOTEMPTY = -111
    SESSIONEXPIRED = -112
    INVALIDCALLBACK = -113
    INVALIDACL = -114
    AUTHFAILED = -115
    SESSIONMOVED = -118
    NOTREADONLY = -119
    EPHEMERALONLOCALSESSION = -120
    NOWATCHER = -121
    REQUESTTIMEOUT = -122
    RECONFIGDISABLED = -123
    SESSIONCLOSEDREQUIRESASLAUTH = -124
    QUOTAEXCEEDED = -125
    THROTTLEDOP = -127


def error_name(err: int) -> str:
    """``err``'s ``KeeperException.Code`` name, or ``err <n>`` for a code it does not know."""
    try:
        return ErrorCode(err).name
    except ValueError:
        return f"err {err}"


__all__ = [
    "AUTH_XID",
    "CREATES",
    "MULTI_SUB_OPS",
    "NOTIFICATION_XID",
    "PATH_OPS",
    "PING_XID",
    "SET_WATCHES_XID",
    "ErrorCode",
    "Op",
    "error_name",
]
