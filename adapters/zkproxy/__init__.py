"""A TCP proxy on a ZooKeeper client's connection: decode, log and hold its requests, expire
its session, reset its connection (issue 29).

Modules: ``jute`` (the encoding's primitives), ``codes`` (op codes, error codes, special
xids), ``packets`` (what one packet says: handshake, request, reply), ``framing`` (length
prefixes), ``conversation`` (one connection's packets, replies paired with requests),
``rules`` (matches and holds), ``log`` (the packet log), ``expiry`` (closing a session from
outside), ``core`` (the asyncio proxy), ``proxy`` (the proxy on a background loop with a
synchronous facade). See docs/adapters/zkproxy.md.
"""

from adapters.zkproxy.codes import ErrorCode, Op, error_name
from adapters.zkproxy.errors import (
    ExpiryFailed,
    InvalidRule,
    MalformedPacket,
    NoSession,
    NotHeld,
    ZkProxyClosed,
    ZkProxyError,
    ZkProxyStartError,
    ZkProxyTimeout,
)
from adapters.zkproxy.log import (
    ConnectionRecord,
    DeliveryRecord,
    ExpiryOutcome,
    ExpiryRecord,
    PacketRecord,
    SessionRecord,
)
from adapters.zkproxy.packets import (
    ConnectRequest,
    ConnectResponse,
    Direction,
    PacketInfo,
    SubOp,
    WatcherEvent,
)
from adapters.zkproxy.proxy import ZooKeeperProxy
from adapters.zkproxy.rules import ANY_PACKET, Hold, Rule, ZkMatch

__all__ = [
    "ANY_PACKET",
    "ConnectRequest",
    "ConnectResponse",
    "ConnectionRecord",
    "DeliveryRecord",
    "Direction",
    "ErrorCode",
    "ExpiryFailed",
    "ExpiryOutcome",
    "ExpiryRecord",
    "Hold",
    "InvalidRule",
    "MalformedPacket",
    "NoSession",
    "NotHeld",
    "Op",
    "PacketInfo",
    "PacketRecord",
    "Rule",
    "SessionRecord",
    "SubOp",
    "WatcherEvent",
    "ZkMatch",
    "ZkProxyClosed",
    "ZkProxyError",
    "ZkProxyStartError",
    "ZkProxyTimeout",
    "ZooKeeperProxy",
    "error_name",
]
