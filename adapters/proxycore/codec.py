"""How a protocol's TCP stream splits into frames: a codec is a value, one per protocol.

The core never decodes a frame itself: it asks the codec for a splitter per direction of each
connection, feeds it the bytes it reads and hands every unit it returns to the protocol, which
decodes it for matching and logging with whatever state it keeps per connection.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar

Unit = TypeVar("Unit")
Unit_co = TypeVar("Unit_co", covariant=True)

_LENGTH = struct.Struct(">i")


class Splitter(Protocol[Unit_co]):
    """One direction of one connection: the units each chunk completes, in order."""

    def feed(self, data: bytes) -> Sequence[Unit_co]: ...


@dataclass(frozen=True)
class Codec(Generic[Unit]):
    """A protocol's framing: a fresh splitter per stream, and the exceptions a splitter raises
    on a stream it cannot follow (the stream has no markers to resynchronise on, so the core
    closes that connection, naming ``malformed`` in its error)."""

    splitter: Callable[[], Splitter[Unit]]
    errors: tuple[type[Exception], ...]
    #: What was malformed, for the connection's error ("frame length", "packet").
    malformed: str


def with_length(payload: bytes) -> bytes:
    """``payload`` with its 4-byte big-endian length prefix, as it goes on the wire."""
    return _LENGTH.pack(len(payload)) + payload


class LengthPrefixedSplitter:
    """A stream of 4-byte big-endian lengths, each followed by that many bytes: hands out the
    payloads (without the prefix). A length below zero or above ``max_size`` cannot be
    resynchronised: ``refuse(length, max_size)`` is raised."""

    def __init__(self, max_size: int, refuse: Callable[[int, int], Exception]) -> None:
        self.max_size = max_size
        self._refuse = refuse
        self._buffer = bytearray()

    def feed(self, data: bytes) -> list[bytes]:
        self._buffer += data
        payloads: list[bytes] = []
        offset = 0
        while len(self._buffer) - offset >= _LENGTH.size:
            (length,) = _LENGTH.unpack_from(self._buffer, offset)
            if length < 0 or length > self.max_size:
                raise self._refuse(length, self.max_size)
            end = offset + _LENGTH.size + length
            if end > len(self._buffer):
                break
            payloads.append(bytes(self._buffer[offset + _LENGTH.size : end]))
            offset = end
        del self._buffer[:offset]
        return payloads

    @property
    def pending(self) -> int:
        """Bytes received that do not make a whole payload yet."""
        return len(self._buffer)


__all__ = ["Codec", "LengthPrefixedSplitter", "Splitter", "with_length"]
