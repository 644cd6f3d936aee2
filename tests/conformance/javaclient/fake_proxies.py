"""Stand-ins for the proxies and their group, as a :class:`~conformance.javaclient.controller.
ScheduleController` sees them: frames are handed to a proxy by the test, and what the
controller did to each (released, dropped, forged) is logged in order."""

from __future__ import annotations

from adapters.bookkeeper.status import StatusCode
from adapters.netproxy import FrameRecord


class FakeProxy:
    """Holds the frames the test gives it (:attr:`frames`); logs ``release #id``, ``drop #id``
    and ``forge #id STATUS`` into the shared ``log``; keeps the matches of its rules."""

    def __init__(self, log: list[str], name: str = "") -> None:
        self.name, self.log = name, log
        self.frames: dict[int, FrameRecord] = {}
        self.matches: list[object] = []

    def add_rule(self, *args: object, **kwargs: object) -> int:
        self.matches.append(args[0] if args else None)
        return len(self.matches)

    def remove_rule(self, rule_id: int) -> None:
        pass

    def held(self) -> list[FrameRecord]:
        return list(self.frames.values())

    def release(self, frame_id: int) -> None:
        self.frames.pop(frame_id)
        self.log.append(f"release #{frame_id}")

    def discard(self, frame_id: int) -> None:
        self.frames.pop(frame_id)
        self.log.append(f"drop #{frame_id}")

    def forge(self, frame_id: int, status: StatusCode) -> None:
        self.frames.pop(frame_id)
        self.log.append(f"forge #{frame_id} {status.name}")

    def release_all(self) -> None:
        for frame_id in list(self.frames):
            self.release(frame_id)


class FakeGroup:
    """The proxies' group: ``mark`` is the last frame id seen (``last``), which says how many
    frames have passed since a held one."""

    def __init__(self, last: int = 0) -> None:
        self.last = last

    def mark(self) -> int:
        return self.last
