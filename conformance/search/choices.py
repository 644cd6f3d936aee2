"""Where an example's decisions come from: Hypothesis, or a recorded list replayed.

An example is a pure function of its *choices*, a list of bounded integers. Hypothesis draws
them while searching and shrinks them on a failure; a replay feeds a recorded list back. Only
``integers(lo, hi)`` draws are used, one Hypothesis choice each, so a choice list is also
exactly what Hypothesis's example database stores (``hypothesis.database.choices_to_bytes``),
and a trace found elsewhere can be handed to Hypothesis to shrink.
"""

from __future__ import annotations

import base64
import zlib
from typing import Protocol

from hypothesis import strategies as st
from hypothesis.database import choices_from_bytes, choices_to_bytes

from conformance.errors import ConformanceError


class Chooser(Protocol):
    def integer(self, low: int, high: int) -> int:
        """A choice in ``[low, high]``; ``low`` is the simplest (what shrinking moves toward)."""


class ReplayExhausted(ConformanceError):
    """A replayed choice list ended before the example did."""


class RecordingChooser:
    """Wraps another chooser and keeps every choice it made."""

    def __init__(self, inner: Chooser) -> None:
        self.inner = inner
        self.made: list[int] = []

    def integer(self, low: int, high: int) -> int:
        value = self.inner.integer(low, high)
        self.made.append(value)
        return value


class ReplayChooser:
    """Feeds back a recorded choice list. A value out of range is clamped, as Hypothesis does
    when a shrunk list is read by a changed example: replays stay total."""

    def __init__(self, choices: list[int], *, strict: bool = True) -> None:
        self.choices = list(choices)
        self.position = 0
        self.strict = strict

    def integer(self, low: int, high: int) -> int:
        if self.position >= len(self.choices):
            if self.strict:
                raise ReplayExhausted(f"the recorded example ends after {self.position} choices")
            return low
        value = self.choices[self.position]
        self.position += 1
        return min(max(value, low), high)


class DataChooser:
    """Draws from Hypothesis (``st.data()`` or a ``composite`` strategy's ``draw``)."""

    def __init__(self, draw: object) -> None:
        self._draw = draw

    def integer(self, low: int, high: int) -> int:
        value: int = self._draw(st.integers(low, high))  # type: ignore[operator]
        return value


def to_blob(choices: list[int]) -> str:
    """The choice list in the format of Hypothesis's ``@reproduce_failure`` blobs: base64 of a
    one-byte marker and the database encoding, zlib-compressed when that is shorter."""
    packed = choices_to_bytes(choices)
    compressed = zlib.compress(packed)
    framed = b"\1" + compressed if len(compressed) < len(packed) else b"\0" + packed
    return base64.b64encode(framed).decode("ascii")


def from_blob(blob: str) -> list[int]:
    """The choice list of a :func:`to_blob` string; a clear error for anything else."""
    try:
        framed = base64.b64decode(blob.strip().encode("ascii"), validate=True)
        marker, body = framed[:1], framed[1:]
        if marker == b"\1":
            body = zlib.decompress(body)
        elif marker != b"\0":
            raise ValueError(f"unknown marker byte {marker!r}")
    except (ValueError, zlib.error) as exc:
        raise ValueError(f"not an example blob: {exc}") from exc
    decoded = choices_from_bytes(body)
    if decoded is None or not all(isinstance(c, int) and not isinstance(c, bool) for c in decoded):
        raise ValueError("not an example blob: it does not hold integer choices")
    return [int(c) for c in decoded]


def to_bytes(choices: list[int]) -> bytes:
    """The example database's encoding of a choice list."""
    return choices_to_bytes(choices)
