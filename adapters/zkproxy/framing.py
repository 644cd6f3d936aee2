"""Splitting a ZooKeeper TCP stream into packets: a 4-byte big-endian length, then that many
bytes (the handshake and every later packet alike, both directions).

A length the proxy refuses (negative, or above ``max_packet_size``) cannot be resynchronised:
the stream has no markers, so the connection must close.
"""

from __future__ import annotations

from adapters.proxycore.codec import Codec, LengthPrefixedSplitter, with_length
from adapters.zkproxy.errors import MalformedPacket

#: Larger than any packet a default ZooKeeper accepts or sends (``jute.maxbuffer`` is about
#: 1 MiB by default, and a server configured higher rarely goes past a few MiB), small enough
#: that four ASCII bytes read as a length (a four-letter word on the client port) are refused.
DEFAULT_MAX_PACKET_SIZE = 64 * 1024 * 1024


#: ``payload`` with its length prefix, as it goes on the wire.
frame = with_length


def _refuse(length: int, max_size: int) -> MalformedPacket:
    return MalformedPacket(f"packet length {length} is outside 0..{max_size}")


class PacketSplitter(LengthPrefixedSplitter):
    """Accumulates stream bytes and hands out whole packet payloads, in order.

    :raises MalformedPacket: from :meth:`feed`, a length prefix below zero or above
        ``max_packet_size``.
    """

    def __init__(self, max_packet_size: int = DEFAULT_MAX_PACKET_SIZE) -> None:
        super().__init__(max_packet_size, _refuse)

    @property
    def max_packet_size(self) -> int:
        return self.max_size


def packet_codec(max_packet_size: int = DEFAULT_MAX_PACKET_SIZE) -> Codec[bytes]:
    """ZooKeeper client packets, for the proxy core: payloads without their length prefix."""
    return Codec(lambda: PacketSplitter(max_packet_size), (MalformedPacket,), "packet")


__all__ = ["DEFAULT_MAX_PACKET_SIZE", "PacketSplitter", "frame", "packet_codec"]
