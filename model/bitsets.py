"""Sets of small indexes (bookies, servers) as int bitmasks: hashable, compact, fast to
compare, which is what the explorers' seen sets want."""

from __future__ import annotations


def members(mask: int) -> list[int]:
    """The indexes in a bitmask, ascending."""
    out = []
    index = 0
    while mask:
        if mask & 1:
            out.append(index)
        mask >>= 1
        index += 1
    return out
