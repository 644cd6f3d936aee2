"""A lane keeps one direction in order: a held head holds everything behind it."""

from __future__ import annotations

import asyncio

from adapters.proxycore.pending import Lane, Pending


def pending(name: str, *, held: bool = False) -> Pending[str, None]:
    return Pending(name, name.encode(), None, hold="rule" if held else None)


def test_frames_behind_a_held_head_go_out_in_order_once_it_is_released() -> None:
    lane: Lane[str, None] = Lane()
    assert not lane.must_wait() and lane.head is None
    first, second, third, fourth = (
        pending("1", held=True), pending("2"), pending("3", held=True), pending("4"),
    )  # fmt: skip
    for frame in (first, second, third, fourth):
        lane.queue.append(frame)
    assert lane.must_wait() and lane.ready() == []
    first.hold = None
    assert [p.record for p in lane.ready()] == ["1", "2"]  # up to the next held one
    assert lane.head is third
    third.hold = None
    assert [p.record for p in lane.ready()] == ["3", "4"]
    assert not lane.must_wait()


def test_a_later_frame_released_first_still_waits_behind_the_earlier() -> None:
    lane: Lane[str, None] = Lane()
    earlier, later = pending("1", held=True), pending("2", held=True)
    lane.queue.extend([earlier, later])
    later.hold = None
    assert lane.ready() == []
    earlier.hold = None
    assert [p.record for p in lane.ready()] == ["1", "2"]


def test_drain_takes_everything_and_cancels_timers() -> None:
    async def scenario() -> None:
        lane: Lane[str, None] = Lane()
        fired: list[str] = []
        frame = pending("1", held=True)
        frame.timer = asyncio.get_running_loop().call_later(0.01, fired.append, "1")
        lane.queue.extend([frame, pending("2")])
        assert [p.record for p in lane.drain()] == ["1", "2"]
        assert frame.timer is None and not lane.must_wait()
        await asyncio.sleep(0.05)
        assert fired == []

    asyncio.run(scenario())
