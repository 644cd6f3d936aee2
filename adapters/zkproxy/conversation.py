"""The packets of ONE proxied ZooKeeper connection, described in the order they pass.

Each direction starts with its half of the handshake (``ConnectRequest``, ``ConnectResponse``)
and continues with requests or replies. A reply does not name its operation, so the
conversation keeps the requests that await one, by xid: ZooKeeper answers a connection's
requests in the order it received them, but pings, auth and setWatches packets share fixed
xids and watcher events (xid -1) come unasked, so pairing is by xid (oldest first), not by
position. The Java client sends its setWatches and auth packets right behind its
ConnectRequest without waiting for the answer; that needs no special case here, because each
direction's handshake is only its own first packet.
"""

from __future__ import annotations

import collections

from adapters.zkproxy.codes import NOTIFICATION_XID
from adapters.zkproxy.packets import (
    ConnectRequest,
    ConnectResponse,
    PacketInfo,
    describe_connect_request,
    describe_connect_response,
    describe_reply,
    describe_request,
)


class Conversation:
    """Describes one connection's packets, both directions, and pairs replies with requests."""

    def __init__(self) -> None:
        self._client_started = False
        self._server_started = False
        self._awaiting: dict[int, collections.deque[tuple[PacketInfo, int]]] = {}
        self.connect_request: ConnectRequest | None = None
        self.connect_response: ConnectResponse | None = None

    def request(self, payload: bytes) -> PacketInfo:
        """What the client's next packet says (the first one is the handshake)."""
        if not self._client_started:
            self._client_started = True
            info = describe_connect_request(payload)
            if isinstance(info.connect, ConnectRequest):
                self.connect_request = info.connect
            return info
        return describe_request(payload)

    def awaiting_reply(self, info: PacketInfo, record_id: int) -> None:
        """Note that the request ``info``, logged as ``record_id``, expects a reply."""
        if info.xid is not None:
            self._awaiting.setdefault(info.xid, collections.deque()).append((info, record_id))

    def reply(self, payload: bytes) -> tuple[PacketInfo, int | None]:
        """What the server's next packet says, and the record id of the request it answers
        (None: the handshake's answer is paired by the caller; a watcher event or a reply no
        logged request asked for has none)."""
        if not self._server_started:
            self._server_started = True
            info = describe_connect_response(payload)
            if isinstance(info.connect, ConnectResponse):
                self.connect_response = info.connect
            return info, None
        xid = _peek_xid(payload)
        if xid is None or xid == NOTIFICATION_XID:
            return describe_reply(payload), None
        queue = self._awaiting.get(xid)
        if not queue:
            return describe_reply(payload), None
        request, record_id = queue.popleft()
        if not queue:
            del self._awaiting[xid]
        return describe_reply(payload, request), record_id

    @property
    def awaiting(self) -> int:
        """Requests logged that have had no reply yet."""
        return sum(len(queue) for queue in self._awaiting.values())


def _peek_xid(payload: bytes) -> int | None:
    if len(payload) < 4:
        return None
    return int.from_bytes(payload[:4], "big", signed=True)


__all__ = ["Conversation"]
