"""JaCoCo's execution data (the exec format) read, merged and written in Python.

Execution data is a probe array per loaded class, in the binary format JaCoCo's agent dumps
and its CLI reads (``ExecutionDataWriter``: a header block, session blocks, class blocks). It is
read, merged (the union of the probes, exactly as JaCoCo merges) and written here, so a run's
cumulative data costs no JVM. Which classes matter, and what their probes mean as coverage, is
the caller's (``conformance/javaclient/coverage.py``).
"""

from __future__ import annotations

import io
import struct
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from adapters.javaclient.errors import JacocoError

_BLOCK_HEADER = 0x01
_BLOCK_SESSION = 0x10
_BLOCK_CLASS = 0x11
_MAGIC = 0xC0C0
#: The exec format of JaCoCo 0.7.5 and later (0.8.x included).
_FORMAT_VERSION = 0x1007


@dataclass(frozen=True)
class SessionInfo:
    """A dump's session: the agent's id, when the probes were last reset and when dumped (ms)."""

    id: str
    start: int
    dump: int


@dataclass(frozen=True)
class ClassProbes:
    """One class's probes: JaCoCo's class id (a CRC64 of the class file), its name, and for
    each probe (a point of its control flow) whether it ran."""

    id: int
    name: str
    probes: tuple[bool, ...]

    @property
    def hits(self) -> int:
        return sum(self.probes)


@dataclass(frozen=True)
class ExecData:
    """A JaCoCo exec file's content: its sessions and its classes' probes (merged by id)."""

    sessions: tuple[SessionInfo, ...] = ()
    classes: Mapping[int, ClassProbes] = field(default_factory=dict)

    @classmethod
    def parse(cls, data: bytes) -> ExecData:
        """Read exec bytes (several dumps one after another too, as ``append=true`` writes
        them); a class met twice is merged. :class:`JacocoError` if it is no exec data."""
        reader = _Reader(data)
        sessions: list[SessionInfo] = []
        classes: dict[int, ClassProbes] = {}
        first = True
        while not reader.done():
            block = reader.byte()
            if first and block != _BLOCK_HEADER:
                raise JacocoError("not JaCoCo execution data (no exec header)")
            first = False
            if block == _BLOCK_HEADER:
                magic, version = reader.char(), reader.char()
                if magic != _MAGIC:
                    raise JacocoError(f"not JaCoCo execution data (magic {magic:#06x})")
                if version != _FORMAT_VERSION:
                    raise JacocoError(
                        f"JaCoCo exec format {version:#06x}, expected {_FORMAT_VERSION:#06x} "
                        "(JaCoCo 0.7.5 or later)"
                    )
            elif block == _BLOCK_SESSION:
                sessions.append(SessionInfo(reader.utf(), reader.long(), reader.long()))
            elif block == _BLOCK_CLASS:
                probes = ClassProbes(reader.long(), reader.utf(), reader.booleans())
                known = classes.get(probes.id)
                classes[probes.id] = probes if known is None else _union(known, probes)
            else:
                raise JacocoError(f"unknown block {block:#04x} in JaCoCo execution data")
        return cls(tuple(sessions), classes)

    def to_bytes(self) -> bytes:
        """The exec bytes (what JaCoCo's CLI reads), classes without hits left out as JaCoCo
        leaves them out."""
        out = io.BytesIO()
        out.write(struct.pack(">BHH", _BLOCK_HEADER, _MAGIC, _FORMAT_VERSION))
        for session in self.sessions:
            out.write(bytes([_BLOCK_SESSION]) + _utf(session.id))
            out.write(struct.pack(">qq", session.start, session.dump))
        for probes in sorted(self.classes.values(), key=lambda c: c.name):
            if probes.hits:
                out.write(bytes([_BLOCK_CLASS]) + struct.pack(">q", probes.id) + _utf(probes.name))
                out.write(_booleans(probes.probes))
        return out.getvalue()

    def merged(self, other: ExecData) -> ExecData:
        """The union of both: every session, and each class's probes OR-ed."""
        classes = dict(self.classes)
        for class_id, probes in other.classes.items():
            known = classes.get(class_id)
            classes[class_id] = probes if known is None else _union(known, probes)
        return ExecData((*self.sessions, *other.sessions), classes)

    def hits(self, which: Callable[[str], bool]) -> int:
        """Probes that ran, in the classes ``which`` selects (by JVM name)."""
        return sum(probes.hits for probes in self.classes.values() if which(probes.name))

    def new_hits(self, other: ExecData, which: Callable[[str], bool]) -> int:
        """Probes of ``which``'s classes that ran in ``other`` and not in this data."""
        found = 0
        for class_id, probes in other.classes.items():
            if not which(probes.name):
                continue
            known = self.classes.get(class_id)
            if known is None:
                found += probes.hits
            else:
                known = _union(known, probes)  # checks they agree
                found += known.hits - self.classes[class_id].hits
        return found


def merge_exec(*dumps: bytes) -> bytes:
    """Several dumps' exec bytes merged into one (sessions kept, probes OR-ed)."""
    merged = ExecData()
    for data in dumps:
        merged = merged.merged(ExecData.parse(data))
    return merged.to_bytes()


def _union(known: ClassProbes, other: ClassProbes) -> ClassProbes:
    if known.name != other.name or len(known.probes) != len(other.probes):
        raise JacocoError(
            f"execution data of class id {known.id:016x} disagrees: {known.name} with "
            f"{len(known.probes)} probes and {other.name} with {len(other.probes)}"
        )
    return ClassProbes(
        known.id, known.name, tuple(a or b for a, b in zip(known.probes, other.probes, strict=True))
    )


class _Reader:
    """Java's ``DataInput`` plus JaCoCo's compact varint and boolean arrays."""

    def __init__(self, data: bytes) -> None:
        self._data = data
        self._at = 0

    def done(self) -> bool:
        return self._at >= len(self._data)

    def take(self, count: int) -> bytes:
        if self._at + count > len(self._data):
            raise JacocoError("JaCoCo execution data ends in the middle of a block")
        chunk = self._data[self._at : self._at + count]
        self._at += count
        return chunk

    def byte(self) -> int:
        return self.take(1)[0]

    def char(self) -> int:
        value: int = struct.unpack(">H", self.take(2))[0]
        return value

    def long(self) -> int:
        value: int = struct.unpack(">q", self.take(8))[0]
        return value

    def utf(self) -> str:
        # Java's modified UTF-8: the same as UTF-8 for the class names and ids written here.
        return self.take(self.char()).decode("utf-8", errors="surrogateescape")

    def varint(self) -> int:
        value, shift = 0, 0
        while True:
            byte = self.byte()
            value |= (byte & 0x7F) << shift
            if not byte & 0x80:
                return value
            shift += 7

    def booleans(self) -> tuple[bool, ...]:
        count = self.varint()
        packed = self.take((count + 7) // 8)
        return tuple(bool(packed[i // 8] >> (i % 8) & 1) for i in range(count))


def _utf(text: str) -> bytes:
    encoded = text.encode("utf-8", errors="surrogateescape")
    return struct.pack(">H", len(encoded)) + encoded


def _varint(value: int) -> bytes:
    out = bytearray()
    while value >= 0x80:
        out.append(0x80 | (value & 0x7F))
        value >>= 7
    out.append(value)
    return bytes(out)


def _booleans(values: tuple[bool, ...]) -> bytes:
    packed = bytearray((len(values) + 7) // 8)
    for index, value in enumerate(values):
        if value:
            packed[index // 8] |= 1 << (index % 8)
    return _varint(len(values)) + bytes(packed)


__all__ = ["ClassProbes", "ExecData", "SessionInfo", "merge_exec"]
