"""A frame the proxy took but has not sent yet, and a lane: one direction of one connection
whose frames go out in arrival order, so that a held frame holds every later one behind it.

A held frame is held by something (``hold``: the rule's action, or whatever else holds it);
released, it loses its ``hold`` and goes out when nothing held is ahead of it.
"""

from __future__ import annotations

import asyncio
import collections
from dataclasses import dataclass, field
from typing import Generic, TypeVar

R = TypeVar("R")
C = TypeVar("C")


@dataclass(eq=False)
class Pending(Generic[R, C]):
    """A frame not sent yet: its record, the exact bytes to send, its connection."""

    record: R
    raw: bytes
    connection: C
    #: What keeps it (None: released, or never held and only queued behind a held one).
    hold: object | None = None
    #: A release or a send planned for later (a delay, ``release_after``, a ping's wait).
    timer: asyncio.TimerHandle | None = None

    def cancel_timer(self) -> None:
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None


@dataclass(eq=False)
class Lane(Generic[R, C]):
    """One direction of one connection kept in order: while its head is held, every frame
    after it waits here (TCP keeps order, and the protocols rely on it)."""

    queue: collections.deque[Pending[R, C]] = field(default_factory=collections.deque)

    @property
    def head(self) -> Pending[R, C] | None:
        return self.queue[0] if self.queue else None

    def must_wait(self) -> bool:
        """Whether a new frame has to wait (something is held ahead of it)."""
        return bool(self.queue)

    def ready(self) -> list[Pending[R, C]]:
        """Take the frames at the head up to the next one still held, in order: what may go
        out now."""
        out = []
        while self.queue and self.queue[0].hold is None:
            pending = self.queue.popleft()
            pending.cancel_timer()
            out.append(pending)
        return out

    def drain(self) -> list[Pending[R, C]]:
        """Take every frame (its connection closed: they are lost), timers cancelled."""
        lost = list(self.queue)
        self.queue.clear()
        for pending in lost:
            pending.cancel_timer()
        return lost


__all__ = ["Lane", "Pending"]
