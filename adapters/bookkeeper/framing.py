"""Length-prefixed framing shared by v2 and v3: ``[int32 big-endian N][N bytes]``.

The server side of a bookie uses ``LengthFieldBasedFrameDecoder(maxFrameSize, 0, 4, 0, 4)``;
the default ``nettyMaxFrameSizeBytes`` is 5 MiB (protocol reference §1.1).
"""

from __future__ import annotations

import struct

from adapters.bookkeeper.errors import FrameTooLarge, MalformedFrame

DEFAULT_MAX_FRAME_SIZE = 5 * 1024 * 1024
_LENGTH = struct.Struct(">i")


def encode_frame(payload: bytes) -> bytes:
    """Prefix ``payload`` with its 4-byte big-endian length."""
    return _LENGTH.pack(len(payload)) + payload


def split_frame(frame: bytes) -> bytes:
    """The payload of one complete frame; :class:`MalformedFrame` unless it is exactly one."""
    decoder = FrameDecoder(max_frame_size=max(len(frame), 4))
    payloads = decoder.feed(frame)
    decoder.check_at_eof()
    if len(payloads) != 1:
        raise MalformedFrame(f"expected exactly one frame, found {len(payloads)}")
    return payloads[0]


class FrameDecoder:
    """Incremental splitter of a byte stream into frame payloads.

    ::

        decoder = FrameDecoder()
        for payload in decoder.feed(chunk):
            handle(payload)

    A negative length or one above ``max_frame_size`` raises :class:`FrameTooLarge`; the stream
    cannot be resynchronised after that, so callers close the connection.
    """

    def __init__(self, max_frame_size: int = DEFAULT_MAX_FRAME_SIZE) -> None:
        self.max_frame_size = max_frame_size
        self._buffer = bytearray()

    def feed(self, data: bytes) -> list[bytes]:
        """Append ``data`` and return the payloads of every frame it completes, in order."""
        buffer = self._buffer
        buffer += data
        payloads: list[bytes] = []
        offset = 0
        available = len(buffer)
        while available - offset >= 4:
            (length,) = _LENGTH.unpack_from(buffer, offset)
            if length < 0 or length > self.max_frame_size:
                raise FrameTooLarge(length, self.max_frame_size)
            end = offset + 4 + length
            if end > available:
                break
            payloads.append(bytes(buffer[offset + 4 : end]))
            offset = end
        if offset:
            del buffer[:offset]
        return payloads

    def check_at_eof(self) -> None:
        """Raise :class:`MalformedFrame` if the stream ended inside a frame."""
        if self._buffer:
            raise MalformedFrame(f"stream ended with {len(self._buffer)} bytes of a partial frame")
