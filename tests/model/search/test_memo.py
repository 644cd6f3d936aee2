"""The fingerprint memo answers as the function it remembers, full or not."""

from __future__ import annotations

from model.search.memo import remembering


def test_remembers_and_forgets_when_full() -> None:
    calls: list[int] = []

    def canonical(state: int) -> int:
        calls.append(state)
        return state % 10

    fingerprint = remembering(canonical, size=3)
    assert [fingerprint(s) for s in (11, 12, 11, 13, 12)] == [1, 2, 1, 3, 2]
    assert calls == [11, 12, 13]  # 11 and 12 remembered
    assert fingerprint(14) == 4  # full: cleared, then remembered anew
    assert fingerprint(11) == 1 and calls == [11, 12, 13, 14, 11]
