"""The renamings a symmetry reduction tries: those that sort a state's members (servers,
bookies, clients) by a key that names no member, members with equal keys taking each other's
places in every order. Shared by the models' canonical fingerprints
(``model.bookkeeper.symmetry``, ``model.zab.protocol.symmetry``).

A renaming is a ``mapping`` with ``mapping[old] = new``; members stand in bitmasks too, renamed
by ``mask_table``.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from functools import cache
from typing import Any

_TWO_IN_ORDER = ((0, 1), (False,))
_TWO_REVERSED = ((1, 0), (False,))
_TWO_TIED = ((0, 1), (True,))


def sorted_with_ties(keys: Sequence[Any]) -> tuple[tuple[int, ...], tuple[bool, ...]]:
    """The indexes in ascending order of key, and for each next position whether its key
    equals the previous one's."""
    if len(keys) == 2:  # two clients: the usual case, without a sort
        first, second = keys
        return _TWO_IN_ORDER if first < second else _TWO_REVERSED if second < first else _TWO_TIED
    order = sorted(range(len(keys)), key=keys.__getitem__)
    return tuple(order), tuple([keys[order[i]] == keys[order[i - 1]] for i in range(1, len(order))])


@cache
def sorting_renamings(
    order: tuple[int, ...], ties: tuple[bool, ...]
) -> tuple[tuple[int, ...], ...]:
    """Every renaming that sends ``order`` (indexes sorted by key) to 0..n-1 up to ties:
    ``ties[i]`` says position ``i + 1`` has the same key as position ``i``, and positions with
    equal keys may take each other's place."""
    groups: list[list[int]] = [[0]]
    for i, tied in enumerate(ties, start=1):
        if tied:
            groups[-1].append(i)
        else:
            groups.append([i])
    out = []
    for choice in itertools.product(*(itertools.permutations(g) for g in groups)):
        positions = [p for chosen in choice for p in chosen]
        mapping = [0] * len(order)
        for i, old in enumerate(order):
            mapping[old] = positions[i]
        out.append(tuple(mapping))
    return tuple(out)


@cache
def mask_table(mapping: tuple[int, ...]) -> tuple[int, ...]:
    """``table[mask]``: the bitmask of members ``mask`` after the renaming."""
    n = len(mapping)
    return tuple(sum(1 << mapping[b] for b in range(n) if mask >> b & 1) for mask in range(1 << n))
