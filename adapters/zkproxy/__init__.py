"""A TCP proxy on a ZooKeeper client's connection (issue 29); so far its codec.

Modules: ``jute`` (the encoding's primitives), ``codes`` (op codes, error codes, special
xids), ``packets`` (what one packet says: handshake, request, reply), ``framing`` (length
prefixes), ``conversation`` (one connection's packets, replies paired with requests).
"""

from adapters.zkproxy.codes import ErrorCode, Op, error_name
from adapters.zkproxy.errors import MalformedPacket, ZkProxyError
from adapters.zkproxy.packets import (
    ConnectRequest,
    ConnectResponse,
    Direction,
    PacketInfo,
    SubOp,
    WatcherEvent,
)

__all__ = [
    "ConnectRequest",
    "ConnectResponse",
    "Direction",
    "ErrorCode",
    "MalformedPacket",
    "Op",
    "PacketInfo",
    "SubOp",
    "WatcherEvent",
    "ZkProxyError",
    "error_name",
]
