"""Jute's binary encoding, the primitives ZooKeeper's client protocol is built from.

From ``zookeeper-jute`` (``BinaryInputArchive``/``BinaryOutputArchive``): ``int`` is 4 bytes
and ``long`` 8 bytes, big-endian two's complement; ``boolean`` one byte (non-zero is true);
``buffer`` an ``int`` length then the bytes, length -1 meaning null; ``ustring`` the same with
UTF-8 text; ``vector`` an ``int`` count (-1: null) then the elements. Records are their fields
in declaration order with nothing between them.
"""

from __future__ import annotations

import struct

from adapters.zkproxy.errors import MalformedPacket

_INT = struct.Struct(">i")
_LONG = struct.Struct(">q")


class JuteReader:
    """Reads jute values from ``data`` front to back; every read checks what is left."""

    def __init__(self, data: bytes, offset: int = 0) -> None:
        self._data = data
        self.offset = offset

    @property
    def remaining(self) -> int:
        return len(self._data) - self.offset

    def _take(self, size: int, what: str) -> bytes:
        if size > self.remaining:
            raise MalformedPacket(
                f"{what} needs {size} bytes at offset {self.offset}, {self.remaining} left"
            )
        chunk = self._data[self.offset : self.offset + size]
        self.offset += size
        return chunk

    def read_int(self, what: str = "int") -> int:
        value: int = _INT.unpack(self._take(4, what))[0]
        return value

    def read_long(self, what: str = "long") -> int:
        value: int = _LONG.unpack(self._take(8, what))[0]
        return value

    def read_bool(self, what: str = "boolean") -> bool:
        return self._take(1, what)[0] != 0

    def read_buffer(self, what: str = "buffer") -> bytes | None:
        length = self.read_int(f"{what} length")
        if length == -1:
            return None
        if length < 0:
            raise MalformedPacket(f"{what} has a negative length {length}")
        return self._take(length, what)

    def read_ustring(self, what: str = "ustring") -> str | None:
        raw = self.read_buffer(what)
        if raw is None:
            return None
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise MalformedPacket(f"{what} is not UTF-8: {exc}") from exc

    def read_count(self, what: str = "vector") -> int:
        """A vector's element count; a null vector (-1) counts as empty."""
        count = self.read_int(f"{what} count")
        if count < -1:
            raise MalformedPacket(f"{what} has a negative count {count}")
        return max(count, 0)


class JuteWriter:
    """Appends jute values; :meth:`getvalue` is the record's bytes."""

    def __init__(self) -> None:
        self._parts: list[bytes] = []

    def write_int(self, value: int) -> JuteWriter:
        self._parts.append(_INT.pack(value))
        return self

    def write_long(self, value: int) -> JuteWriter:
        self._parts.append(_LONG.pack(value))
        return self

    def write_bool(self, value: bool) -> JuteWriter:
        self._parts.append(b"\x01" if value else b"\x00")
        return self

    def write_buffer(self, value: bytes | None) -> JuteWriter:
        if value is None:
            return self.write_int(-1)
        self.write_int(len(value))
        self._parts.append(bytes(value))
        return self

    def write_ustring(self, value: str | None) -> JuteWriter:
        return self.write_buffer(None if value is None else value.encode("utf-8"))

    def getvalue(self) -> bytes:
        return b"".join(self._parts)


__all__ = ["JuteReader", "JuteWriter"]
