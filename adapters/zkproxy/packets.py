"""What one ZooKeeper client-protocol packet says: the handshake records, request and reply
summaries, decoded from (and, for the handshake, tests and the expiry, encoded to) jute.

The records are ``zookeeper.jute``'s (``org.apache.zookeeper.proto``):

* the handshake: ``ConnectRequest {int protocolVersion; long lastZxidSeen; int timeOut;
  long sessionId; buffer passwd; boolean readOnly}`` from the client, ``ConnectResponse {int
  protocolVersion; int timeOut; long sessionId; buffer passwd; boolean readOnly}`` from the
  server; ``readOnly`` is absent in packets from peers older than ZooKeeper 3.4, so it is
  optional here;
* afterwards, a request is ``RequestHeader {int xid; int type}`` and the operation's request
  record, a reply ``ReplyHeader {int xid; long zxid; int err}`` and the operation's response
  record, which the reply does not name: the request with the same xid says what it is
  (:mod:`.conversation` keeps them).

A summary reads only what says what a packet *means* (its operation, znode path, expected or
resulting version, data size, watch flag); the proxy forwards the original bytes, so a field it
does not read changes nothing on the wire. Paths are the server's: a client with a chroot
sends its paths with the chroot prepended.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from adapters.zkproxy.codes import (
    AUTH_XID,
    CREATES,
    NOTIFICATION_XID,
    PATH_OPS,
    PING_XID,
    SET_WATCHES_XID,
    Op,
    error_name,
)
from adapters.zkproxy.errors import MalformedPacket
from adapters.zkproxy.jute import JuteReader, JuteWriter


class Direction(enum.Enum):
    """``REQUEST``: client to server; ``REPLY``: server to client (replies, watcher events)."""

    REQUEST = "request"
    REPLY = "reply"


@dataclass(frozen=True, slots=True)
class ConnectRequest:
    """The client's handshake: a new session (``session_id`` 0) or a reconnection to one."""

    protocol_version: int
    last_zxid_seen: int
    timeout_ms: int
    session_id: int
    passwd: bytes
    #: None: the packet ended before the field (a client older than ZooKeeper 3.4).
    read_only: bool | None = False

    def encode(self) -> bytes:
        writer = (
            JuteWriter()
            .write_int(self.protocol_version)
            .write_long(self.last_zxid_seen)
            .write_int(self.timeout_ms)
            .write_long(self.session_id)
            .write_buffer(self.passwd)
        )
        if self.read_only is not None:
            writer.write_bool(self.read_only)
        return writer.getvalue()

    @classmethod
    def decode(cls, payload: bytes) -> ConnectRequest:
        reader = JuteReader(payload)
        protocol_version = reader.read_int("protocolVersion")
        last_zxid_seen = reader.read_long("lastZxidSeen")
        timeout_ms = reader.read_int("timeOut")
        session_id = reader.read_long("sessionId")
        passwd = reader.read_buffer("passwd") or b""
        read_only = reader.read_bool("readOnly") if reader.remaining else None
        return cls(protocol_version, last_zxid_seen, timeout_ms, session_id, passwd, read_only)


@dataclass(frozen=True, slots=True)
class ConnectResponse:
    """The server's handshake: the session granted, or (``timeout_ms`` <= 0) a refusal because
    the session the client asked for is expired (``ZooKeeperServer.finishSessionInit`` answers
    timeout 0, session 0 and a zeroed password then, and both clients declare the session
    expired on it)."""

    protocol_version: int
    timeout_ms: int
    session_id: int
    passwd: bytes
    read_only: bool | None = False

    @property
    def expired(self) -> bool:
        return self.timeout_ms <= 0

    def encode(self) -> bytes:
        writer = (
            JuteWriter()
            .write_int(self.protocol_version)
            .write_int(self.timeout_ms)
            .write_long(self.session_id)
            .write_buffer(self.passwd)
        )
        if self.read_only is not None:
            writer.write_bool(self.read_only)
        return writer.getvalue()

    @classmethod
    def decode(cls, payload: bytes) -> ConnectResponse:
        reader = JuteReader(payload)
        protocol_version = reader.read_int("protocolVersion")
        timeout_ms = reader.read_int("timeOut")
        session_id = reader.read_long("sessionId")
        passwd = reader.read_buffer("passwd") or b""
        read_only = reader.read_bool("readOnly") if reader.remaining else None
        return cls(protocol_version, timeout_ms, session_id, passwd, read_only)


#: ``Watcher.Event.EventType`` by wire value.
EVENT_TYPES = {
    -1: "None",
    1: "NodeCreated",
    2: "NodeDeleted",
    3: "NodeDataChanged",
    4: "NodeChildrenChanged",
    5: "DataWatchRemoved",
    6: "ChildWatchRemoved",
    7: "PersistentWatchRemoved",
}


@dataclass(frozen=True, slots=True)
class WatcherEvent:
    """``WatcherEvent {int type; int state; ustring path}``, sent with xid -1."""

    type: int
    state: int

    @property
    def type_name(self) -> str:
        return EVENT_TYPES.get(self.type, f"type {self.type}")


@dataclass(frozen=True, slots=True)
class SubOp:
    """One operation inside a ``multi`` or ``multiRead`` request."""

    op: Op
    path: str | None
    #: The expected version of a setData, delete or check (-1: any).
    version: int | None = None


@dataclass(frozen=True, slots=True)
class PacketInfo:
    """The decoded summary of one packet (``None`` where the packet carries no such field).

    A reply carries its request's ``op``, ``path`` and ``sub_ops`` (the proxy pairs them by
    xid), so "the answer to the setData on L7" can be matched and waited for.
    """

    direction: Direction
    op: Op
    xid: int | None = None
    path: str | None = None
    #: ``multi``/``multiRead``: the operations it carries, in order.
    sub_ops: tuple[SubOp, ...] = ()
    #: Requests: the expected version (setData, delete, check, setACL; -1 is any). Replies:
    #: the znode's version in the returned Stat (setData, exists, getData).
    version: int | None = None
    #: create and setData requests: the data's length in bytes.
    data_size: int | None = None
    #: getData, exists, getChildren, getChildren2 requests: whether a watch is set.
    watch: bool | None = None
    #: Replies: the header's zxid and err (0 is OK; see :func:`.codes.error_name`).
    zxid: int | None = None
    err: int | None = None
    #: A successful create's reply: the znode created (a sequential create's real name).
    created_path: str | None = None
    #: A watcher event (``op`` NOTIFICATION; ``path`` is the event's path).
    event: WatcherEvent | None = None
    #: The handshake (``op`` CONNECT).
    connect: ConnectRequest | ConnectResponse | None = None
    #: The op code on the wire (requests), kept for UNKNOWN ones.
    op_code: int | None = None
    #: Why the packet (or its body) did not decode.
    error: str | None = None

    @property
    def decoded(self) -> bool:
        return self.op is not Op.UNDECODABLE

    @property
    def err_name(self) -> str | None:
        return None if self.err is None else error_name(self.err)

    @property
    def paths(self) -> tuple[str, ...]:
        """Every znode path the packet names: its own, or its sub-operations'."""
        own = () if self.path is None else (self.path,)
        return own + tuple(sub.path for sub in self.sub_ops if sub.path is not None)

    def describe(self) -> str:
        """A one-line summary such as ``setData /ledgers/00/0000/L0007 v3 xid=12``
        or ``setData /ledgers/00/0000/L0007 -> OK zxid=0x1f v4 xid=12``."""
        if not self.decoded:
            return f"undecodable {self.direction.value}: {self.error}"
        parts = [self.op.value if self.op is not Op.UNKNOWN else f"op {self.op_code}"]
        if self.event is not None:
            parts.append(self.event.type_name)
        if self.path is not None:
            parts.append(self.path)
        if self.sub_ops:
            parts.append("[" + ", ".join(f"{s.op.value} {s.path}" for s in self.sub_ops) + "]")
        connect = self.connect
        if isinstance(connect, ConnectRequest):
            parts.append(f"session=0x{connect.session_id:x} timeout={connect.timeout_ms}ms")
        elif isinstance(connect, ConnectResponse):
            outcome = "expired" if connect.expired else f"session=0x{connect.session_id:x}"
            parts.append(f"-> {outcome} timeout={connect.timeout_ms}ms")
        if self.err is not None:
            parts.append(f"-> {self.err_name}")
        if self.zxid is not None and self.zxid >= 0:
            parts.append(f"zxid=0x{self.zxid:x}")
        if self.created_path is not None and self.created_path != self.path:
            parts.append(f"created {self.created_path}")
        if self.version is not None:
            parts.append(f"v{self.version}")
        if self.xid is not None:
            parts.append(f"xid={self.xid}")
        if self.error is not None:
            parts.append(f"(body: {self.error})")
        return " ".join(parts)


# -- requests ---------------------------------------------------------------------------------


def describe_connect_request(payload: bytes) -> PacketInfo:
    try:
        connect = ConnectRequest.decode(payload)
    except MalformedPacket as exc:
        return PacketInfo(Direction.REQUEST, Op.UNDECODABLE, error=f"ConnectRequest: {exc}")
    return PacketInfo(Direction.REQUEST, Op.CONNECT, connect=connect)


def describe_request(payload: bytes) -> PacketInfo:
    """A request after the handshake: its header, then what its body says."""
    reader = JuteReader(payload)
    try:
        xid = reader.read_int("RequestHeader.xid")
        code = reader.read_int("RequestHeader.type")
    except MalformedPacket as exc:
        return PacketInfo(Direction.REQUEST, Op.UNDECODABLE, error=str(exc))
    op = Op.from_code(code)
    fields: dict[str, object] = {}
    error = None
    try:
        fields = _request_body(op, reader)
    except MalformedPacket as exc:
        # The header is enough to forward and pair the reply: keep what it says.
        error = str(exc)
    return PacketInfo(
        Direction.REQUEST, op, xid, op_code=code, error=error,
        **fields,  # type: ignore[arg-type]
    )  # fmt: skip


def _request_body(op: Op, reader: JuteReader) -> dict[str, object]:
    if op in (Op.MULTI, Op.MULTI_READ):
        return {"sub_ops": _multi_ops(reader)}
    if op not in PATH_OPS:
        return {}
    path = reader.read_ustring("path")
    fields: dict[str, object] = {"path": path}
    if op in CREATES or op is Op.SET_DATA:
        data = reader.read_buffer("data")
        fields["data_size"] = 0 if data is None else len(data)
        if op is Op.SET_DATA:
            fields["version"] = reader.read_int("version")
    elif op in (Op.DELETE, Op.CHECK):
        fields["version"] = reader.read_int("version")
    elif op is Op.SET_ACL:
        _skip_acls(reader)
        fields["version"] = reader.read_int("version")
    elif op in (Op.GET_DATA, Op.EXISTS, Op.GET_CHILDREN, Op.GET_CHILDREN2):
        fields["watch"] = reader.read_bool("watch")
    return fields


def _skip_acls(reader: JuteReader) -> None:
    """``vector<ACL>``, each ``ACL {int perms; Id {ustring scheme; ustring id}}``."""
    for _ in range(reader.read_count("acl")):
        reader.read_int("ACL.perms")
        reader.read_ustring("Id.scheme")
        reader.read_ustring("Id.id")


def _multi_ops(reader: JuteReader) -> tuple[SubOp, ...]:
    """``MultiOperationRecord``: ``MultiHeader {int type; boolean done; int err}`` before each
    operation's request record, and one with ``done`` set at the end. Each record must be read
    whole to find the next header."""
    ops: list[SubOp] = []
    while True:
        code = reader.read_int("MultiHeader.type")
        done = reader.read_bool("MultiHeader.done")
        reader.read_int("MultiHeader.err")
        if done:
            return tuple(ops)
        op = Op.from_code(code)
        path = reader.read_ustring("path")
        version = None
        if op in CREATES:
            reader.read_buffer("data")
            _skip_acls(reader)
            reader.read_int("flags")
            if op is Op.CREATE_TTL:
                reader.read_long("ttl")
        elif op is Op.SET_DATA:
            reader.read_buffer("data")
            version = reader.read_int("version")
        elif op in (Op.DELETE, Op.CHECK):
            version = reader.read_int("version")
        elif op in (Op.GET_CHILDREN, Op.GET_DATA):
            reader.read_bool("watch")
        else:
            raise MalformedPacket(f"op code {code} cannot be part of a multi")
        ops.append(SubOp(op, path, version))


# -- replies ----------------------------------------------------------------------------------


def describe_connect_response(payload: bytes) -> PacketInfo:
    try:
        connect = ConnectResponse.decode(payload)
    except MalformedPacket as exc:
        return PacketInfo(Direction.REPLY, Op.UNDECODABLE, error=f"ConnectResponse: {exc}")
    return PacketInfo(Direction.REPLY, Op.CONNECT, connect=connect)


_XID_OPS = {PING_XID: Op.PING, AUTH_XID: Op.AUTH, SET_WATCHES_XID: Op.SET_WATCHES}


def describe_reply(payload: bytes, request: PacketInfo | None = None) -> PacketInfo:
    """A reply after the handshake. ``request``: the request with the reply's xid, if known
    (it says which operation the reply answers; a reply names none)."""
    reader = JuteReader(payload)
    try:
        xid = reader.read_int("ReplyHeader.xid")
        zxid = reader.read_long("ReplyHeader.zxid")
        err = reader.read_int("ReplyHeader.err")
    except MalformedPacket as exc:
        return PacketInfo(Direction.REPLY, Op.UNDECODABLE, error=str(exc))
    if xid == NOTIFICATION_XID:
        try:
            event = WatcherEvent(reader.read_int("type"), reader.read_int("state"))
            path = reader.read_ustring("path")
        except MalformedPacket as exc:
            return PacketInfo(Direction.REPLY, Op.NOTIFICATION, xid, zxid=zxid, err=err,
                              error=str(exc))  # fmt: skip
        return PacketInfo(
            Direction.REPLY, Op.NOTIFICATION, xid, path, zxid=zxid, err=err, event=event
        )
    if request is not None:
        op, path, sub_ops = request.op, request.path, request.sub_ops
    else:
        op, path, sub_ops = _XID_OPS.get(xid, Op.UNKNOWN), None, ()
    fields: dict[str, object] = {}
    error = None
    if err == 0:
        try:
            fields = _reply_body(op, reader)
        except MalformedPacket as exc:
            error = str(exc)
    return PacketInfo(
        Direction.REPLY, op, xid, path, sub_ops, zxid=zxid, err=err,
        op_code=None if request is None else request.op_code, error=error,
        **fields,  # type: ignore[arg-type]
    )  # fmt: skip


def _reply_body(op: Op, reader: JuteReader) -> dict[str, object]:
    if op in CREATES:
        # CreateResponse {ustring path} (create); Create2Response {ustring path; Stat stat}.
        return {"created_path": reader.read_ustring("created path")}
    if op in (Op.SET_DATA, Op.EXISTS):
        return {"version": _stat_version(reader)}
    if op is Op.GET_DATA:
        reader.read_buffer("data")
        return {"version": _stat_version(reader)}
    return {}


def _stat_version(reader: JuteReader) -> int:
    """``Stat``'s ``version``: after czxid, mzxid, ctime and mtime (four longs)."""
    for name in ("czxid", "mzxid", "ctime", "mtime"):
        reader.read_long(f"Stat.{name}")
    return reader.read_int("Stat.version")


# -- encoding ---------------------------------------------------------------------------------


def encode_request(xid: int, op: Op, body: bytes = b"") -> bytes:
    """``RequestHeader`` then ``body`` (a packet payload, without its length prefix)."""
    code = op.code
    if code is None:
        raise ValueError(f"{op.value} has no op code: it is not a request")
    return JuteWriter().write_int(xid).write_int(code).getvalue() + body


def encode_reply(xid: int, zxid: int, err: int, body: bytes = b"") -> bytes:
    """``ReplyHeader`` then ``body`` (a packet payload, without its length prefix)."""
    return JuteWriter().write_int(xid).write_long(zxid).write_int(err).getvalue() + body


__all__ = [
    "EVENT_TYPES",
    "ConnectRequest",
    "ConnectResponse",
    "Direction",
    "PacketInfo",
    "SubOp",
    "WatcherEvent",
    "describe_connect_request",
    "describe_connect_response",
    "describe_reply",
    "describe_request",
    "encode_reply",
    "encode_request",
]
