"""A frame-level TCP proxy per bookie: decode, log and schedule every frame (issue 8).

Modules: ``frames`` (what a frame means, decoded with ``adapters.bookkeeper``), ``policy``
(matches and actions), ``forge`` (answers with another status), ``log`` (the frame log),
``core`` (the asyncio proxy of one bookie, and its connection faults),
``group`` (proxies on a background loop with a synchronous facade), ``routing`` (making
clients connect through the proxies, per BookKeeper version). See docs/adapters/netproxy.md.
"""

from adapters.netproxy.errors import (
    InvalidPolicy,
    NetProxyError,
    NotHeld,
    ProxyClosed,
    ProxyStartError,
    ProxyTimeout,
    RoutingError,
    UnknownBookKeeperVersion,
)
from adapters.netproxy.frames import Direction, FrameFlag, FrameInfo, Operation, Protocol
from adapters.netproxy.group import BookieProxy, ProxyGroup
from adapters.netproxy.log import ConnectionRecord, DeliveryRecord, FrameRecord
from adapters.netproxy.policy import (
    ANY_FRAME,
    Delay,
    Disconnect,
    Drop,
    Forge,
    Forward,
    FrameMatch,
    Hold,
    Reorder,
    Rule,
)

__all__ = [
    "ANY_FRAME",
    "BookieProxy",
    "ConnectionRecord",
    "Delay",
    "DeliveryRecord",
    "Direction",
    "Disconnect",
    "Drop",
    "Forge",
    "Forward",
    "FrameFlag",
    "FrameInfo",
    "FrameMatch",
    "FrameRecord",
    "Hold",
    "InvalidPolicy",
    "NetProxyError",
    "NotHeld",
    "Operation",
    "Protocol",
    "ProxyClosed",
    "ProxyGroup",
    "ProxyStartError",
    "ProxyTimeout",
    "Reorder",
    "RoutingError",
    "Rule",
    "UnknownBookKeeperVersion",
]
