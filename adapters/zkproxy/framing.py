"""Splitting a ZooKeeper TCP stream into packets: a 4-byte big-endian length, then that many
bytes (the handshake and every later packet alike, both directions).

A length the proxy refuses (negative, or above ``max_packet_size``) cannot be resynchronised:
the stream has no markers, so the connection must close.
"""

from __future__ import annotations

import struct

from adapters.zkproxy.errors import MalformedPacket

_LENGTH = struct.Struct(">i")

#: Larger than any packet a default ZooKeeper accepts or sends (``jute.maxbuffer`` is about
#: 1 MiB by default, and a server configured higher rarely goes past a few MiB), small enough
#: that four ASCII bytes read as a length (a four-letter word on the client port) are refused.
DEFAULT_MAX_PACKET_SIZE = 64 * 1024 * 1024


def frame(payload: bytes) -> bytes:
    """``payload`` with its length prefix, as it goes on the wire."""
    return _LENGTH.pack(len(payload)) + payload


class PacketSplitter:
    """Accumulates stream bytes and hands out whole packet payloads, in order."""

    def __init__(self, max_packet_size: int = DEFAULT_MAX_PACKET_SIZE) -> None:
        self.max_packet_size = max_packet_size
        self._buffer = bytearray()

    def feed(self, data: bytes) -> list[bytes]:
        """The packets ``data`` completes (possibly none).

        :raises MalformedPacket: a length prefix below zero or above ``max_packet_size``.
        """
        self._buffer += data
        packets: list[bytes] = []
        offset = 0
        while len(self._buffer) - offset >= _LENGTH.size:
            (length,) = _LENGTH.unpack_from(self._buffer, offset)
            if length < 0 or length > self.max_packet_size:
                raise MalformedPacket(
                    f"packet length {length} is outside 0..{self.max_packet_size}"
                )
            end = offset + _LENGTH.size + length
            if end > len(self._buffer):
                break
            packets.append(bytes(self._buffer[offset + _LENGTH.size : end]))
            offset = end
        del self._buffer[:offset]
        return packets

    @property
    def pending(self) -> int:
        """Bytes received that do not make a whole packet yet."""
        return len(self._buffer)


__all__ = ["DEFAULT_MAX_PACKET_SIZE", "PacketSplitter", "frame"]
