"""Breadth-first search split into shards by fingerprint: the deterministic core of the
multi-process search (``conformance.exploration.parallel_bfs`` runs each shard in a worker process).

Each shard owns the fingerprints ``fp % shards == index``: their part of the seen set. States
stay in the shard that generated them; only fingerprints, keys and ranks travel. A level is
expanded in rounds, each shard expanding the same share of its states in each (states cluster
by rank in the shards that made them, so rounds by rank would leave one shard idle). A round
takes two steps, each shard doing its own part of each:

1. **expand**: the shard's states of the round each give their successors; those not known
   to be seen become candidates, checked against the invariants as they are met, and their
   (fingerprint, key, parent) are proposed to the fingerprint's owner;
2. **decide**: each owner takes every proposal for its fingerprints, drops those seen in an
   earlier level and keeps, for each of the others, the smallest key of the level so far.

The number of new states is known after each round (it does not depend on who wins them):
the driver reports progress and checks the state limit. At the level's end:

3. **settle**: each owner records its leaders as seen and tells each shard which it won;
4. **keep**: each shard keeps the candidates it won, ordered by key: its part of the next
   level;
5. **renumber**: each shard learns the place of its states in the whole next level. Then the
   driver may move states from a shard with many to one with few (``give``, ``take``), so
   that the work stays even.

The result is the single-process search's (``model.search.bfs``), state for state. A
candidate's key is (place of its parent in the level, index among the parent's successors):
the order in which the single-process search would have met it. Where several candidates share
a fingerprint (a state met twice, or, under symmetry, two members of one orbit) the smallest
key wins, as the single-process search keeps the first it meets; where several new states
break an invariant, the one with the smallest key is the violation, the one the single-process
search would have stopped at. So counts, depth and the counterexample trace do not depend on
the number of shards, even where symmetry reduction is not quite sound (an orbit's
representative is always the same state). Invariants must be symmetric, as TLC requires.

Once a shard meets a violating candidate, no shard expands a parent ranked after its parent
(``RankLimit``); the driver has every shard expand the rest of the level up to that rank and
takes the smallest of the shards' first violations. It may count more states than the
single-process search on the way to a violation, never a different violation.

Pure: no processes, no clock, no files (a caller may pass disk-backed levels).
"""

from __future__ import annotations

import heapq
from array import array
from bisect import bisect_left
from collections.abc import Callable, Hashable, Iterator, Sequence
from dataclasses import dataclass
from itertools import islice
from typing import Any, Generic, Protocol, TypeVar

from model.errors import ModelError
from model.search.bfs import (
    Check,
    Level,
    ListLevel,
    Progress,
    SearchResult,
    Step,
    Successors,
    Violation,
    fingerprint_function,
    rebuild_trace,
)
from model.search.collector import young_collections_only

S = TypeVar("S", bound=Hashable)
L = TypeVar("L")

#: A key is ``parent_rank << KEY_BITS | successor_index``: a state has fewer successors.
KEY_BITS = 20


NO_LIMIT = (1 << 62) - 1


class Cell(Protocol):
    """Where a ``RankLimit`` keeps its value: a plain attribute, or shared memory
    (``multiprocessing.Value``) for shards in several processes."""

    value: int


class _LocalCell:
    def __init__(self) -> None:
        self.value = NO_LIMIT


class RankLimit:
    """The rank past which no shard need expand in this level: the parent of a violating
    candidate already met. Shared by the shards of one search, reset by the driver at each
    level's start. ``lower`` is not atomic across processes: a race can keep the larger of
    two ranks, which only makes a shard expand more, never skip a parent that could lead to
    the first violation."""

    def __init__(self, cell: Cell | None = None) -> None:
        self._cell: Cell = cell if cell is not None else _LocalCell()

    def get(self) -> int:
        return int(self._cell.value)

    def lower(self, rank: int) -> None:
        if rank < self._cell.value:
            self._cell.value = rank

    def reset(self) -> None:
        self._cell.value = NO_LIMIT


@dataclass(frozen=True)
class FirstViolation:
    key: int
    fingerprint: int
    invariants: list[str]


def _triples(values: array[int]) -> Iterator[tuple[int, int, int]]:
    it = iter(values)
    return zip(it, it, it, strict=True)


class Shard(Generic[S, L]):
    """One shard's part of the seen set and of the level, and the steps of a level.
    Proposals, decisions and keys travel as ``array("q")``."""

    def __init__(
        self,
        index: int,
        shards: int,
        successors: Successors[S, L],
        check: Check[S],
        fingerprint: Callable[[S], int],
        limit: RankLimit,
        new_level: Callable[[], Level[S]] = ListLevel,
    ) -> None:
        self.index = index
        self.shards = shards
        self._successors = successors
        self._check = check
        self._fingerprint = fingerprint
        self._limit = limit
        self._new_level = new_level
        #: The owned fingerprints seen, each with its parent's (None: the initial state).
        self.seen: dict[int, int | None] = {}
        #: Fingerprints of other shards this shard proposed: seen there since.
        self._proposed: set[int] = set()
        #: The level: the states in ``_level`` whose fingerprint is in ``_members`` (all of
        #: them when None), in rank order; ``_ranks`` has one rank per member.
        self._level: Level[S] = new_level()
        self._members: set[int] | None = None
        self._ranks = array("q")
        #: This level's candidates: fingerprint -> key; their states are in ``_met``, in the
        #: order met, which is the order of their keys.
        self._candidates: dict[int, int] = {}
        #: As owner, this level's best proposal of each new fingerprint so far:
        #: fingerprint -> (key, parent, proposing shard).
        self._best: dict[int, tuple[int, int, int]] = {}
        #: The level's states read so far, across rounds, and where the reading stands.
        self._cursor: Iterator[tuple[int, tuple[int, S]]] | None = None
        self._read = 0
        self._met: Level[S] = new_level()
        self._met_fingerprints = array("q")  # the same order, in memory
        #: The candidates that break invariants, and which.
        self._broken: dict[int, list[str]] = {}
        self._keys = array("q")
        self.generated = 0

    def start(self, fingerprint: int, state: S) -> None:
        """The initial state, on the shard that owns it: the level of rank 0."""
        self.seen[fingerprint] = None
        self._level.append((fingerprint, state))
        self._ranks.append(0)

    def _states(self) -> Iterator[tuple[int, S]]:
        members = self._members
        if members is None:
            yield from self._level
            return
        for item in self._level:
            if item[0] in members:
                yield item

    def expand(self, portion: tuple[int, int] = (1, 1)) -> tuple[list[array[int]], bool]:
        """Step 1, for a round: this shard's states of the level up to ``portion`` (k, n) of
        them, k/n of the way through its level, not yet expanded. Returns the proposals per
        owner, (fingerprint, key, parent) triples, and whether it has met a candidate that
        breaks an invariant in this level.

        Candidates are checked here, so that a violation stops the level early: a violating
        candidate is new (a state seen before that broke an invariant would have ended the
        search), so the first violation of the level has a key at most its key, and no shard
        need expand a parent of a higher rank (``RankLimit``).

        The level is in rank order, so keys grow as states are met: the first candidate met
        for a fingerprint has this shard's smallest key for it, and candidates' states can be
        stored as they come (on disk past the level's limit) in key order. A fingerprint is
        proposed once a level: in a later round its key would be larger."""
        part, parts = portion
        shards, seen, proposed = self.shards, self.seen, self._proposed
        fingerprint, candidates, check = self._fingerprint, self._candidates, self._check
        limit, met, met_fingerprints = self._limit, self._met, self._met_fingerprints
        outgoing = [array("q") for _ in range(shards)]
        me = self.index
        if self._cursor is None:
            self._cursor = zip(self._ranks, self._states(), strict=True)
        total = len(self._ranks)
        for rank, (parent, state) in islice(
            self._cursor, max(0, total * part // parts - self._read)
        ):
            self._read += 1
            if rank > limit.get():
                self._read = total  # the ranks only grow: nothing left is needed
                break
            base = rank << KEY_BITS
            options = self._successors(state)
            if len(options) >> KEY_BITS:
                raise ModelError(f"a state with {len(options)} successors: keys hold fewer")
            self.generated += len(options)
            for n, (_label, succ) in enumerate(options):
                fp = fingerprint(succ)
                if fp in seen or fp in proposed or fp in candidates:
                    continue
                key = base | n
                candidates[fp] = key
                met.append((fp, succ))
                met_fingerprints.append(fp)
                owner = fp % shards
                outgoing[owner].extend((fp, key, parent))
                if owner != me:
                    proposed.add(fp)
                broken = check(succ)
                if broken:
                    self._broken[fp] = broken
                    limit.lower(rank)
        return outgoing, bool(self._broken)

    def decide(self, proposals: Sequence[array[int]]) -> int:
        """Step 2, on the owner: the proposals of a round for its fingerprints; those seen in
        an earlier level lose, and of the others the smallest key of the level so far leads.
        Returns how many fingerprints are new to the level: the count of new states does not
        depend on who wins them."""
        seen, best = self.seen, self._best
        new = 0
        for source, triples in enumerate(proposals):
            for fp, key, parent in _triples(triples):
                if fp in seen:
                    continue
                current = best.get(fp)
                if current is None:
                    best[fp] = (key, parent, source)
                    new += 1
                elif key < current[0]:
                    best[fp] = (key, parent, source)
        return new

    def first_violation(self) -> FirstViolation | None:
        """This shard's candidate of the level, of the smallest key, that breaks an invariant
        (once every parent up to the ``RankLimit`` is expanded, the level's first violation is
        the smallest of the shards' answers: any other candidate of its fingerprint has a
        larger key)."""
        if not self._broken:
            return None
        fp = min(self._broken, key=self._candidates.__getitem__)
        return FirstViolation(self._candidates[fp], fp, self._broken[fp])

    def settle(self) -> list[array[int]]:
        """Step 3, on the owner, at the level's end: the leaders win; they are recorded as
        seen, with their parents. Returns the winners per proposing shard."""
        seen = self.seen
        won = [array("q") for _ in range(self.shards)]
        for fp, (_key, parent, source) in self._best.items():
            seen[fp] = parent
            won[source].append(fp)
        self._best = {}
        return won

    def keep(self, won: Sequence[array[int]]) -> array[int]:
        """Step 4: the candidates this shard won become its part of the next level, ordered
        by key. Returns their keys, in order."""
        candidates = self._candidates
        wins = {fp for part in won for fp in part}
        # The states met become the level, those lost filtered out as it is read: copying
        # the winners would write a spilled level to disk twice.
        self._level.close()
        self._level, self._members = self._met, wins
        self._met = self._new_level()
        met_fingerprints, self._met_fingerprints = self._met_fingerprints, array("q")
        keys = array("q")
        for fp in met_fingerprints:  # in key order
            if fp in wins:
                keys.append(candidates[fp])
        self._candidates = {}
        self._broken = {}
        self._cursor, self._read = None, 0
        self._keys = keys
        return keys

    def renumber(self, keys_by_shard: Sequence[Sequence[int]]) -> None:
        """Step 5: a state's rank is its place among every shard's keys (all distinct)."""
        others = [keys for k, keys in enumerate(keys_by_shard) if k != self.index]
        ranks = array("q")
        for place, key in enumerate(self._keys):
            ranks.append(place + sum(bisect_left(other, key) for other in others))
        self._ranks = ranks
        self._keys = array("q")

    def give(self, count: int) -> list[tuple[int, int, S]]:
        """The last ``count`` states of the level (rank, fingerprint, state), for another
        shard; this shard keeps the rest."""
        stay = len(self._ranks) - count
        given: list[tuple[int, int, S]] = []

        def staying() -> Iterator[tuple[int, tuple[int, S]]]:
            for place, (rank, item) in enumerate(zip(self._ranks, self._states(), strict=True)):
                if place < stay:
                    yield rank, item
                else:
                    given.append((rank, *item))

        self._refill(staying())
        return given

    def take(self, moved: Sequence[tuple[int, int, S]]) -> None:
        """States another shard gave, merged into the level by rank."""
        ours = (
            (rank, fp, state) for rank, (fp, state) in zip(self._ranks, self._states(), strict=True)
        )
        self._refill(
            (rank, (fp, state)) for rank, fp, state in heapq.merge(ours, moved, key=lambda x: x[0])
        )

    def _refill(self, items: Iterator[tuple[int, tuple[int, S]]]) -> None:
        """The level made of ``items`` (read while the old level is still open)."""
        level: Level[S] = self._new_level()
        ranks = array("q")
        for rank, item in items:
            level.append(item)
            ranks.append(rank)
        self._level.close()
        self._level, self._ranks, self._members = level, ranks, None
        self._cursor, self._read = None, 0

    def parent_of(self, fingerprint: int) -> int | None:
        return self.seen[fingerprint]

    def close_all(self) -> None:
        self._level.close()
        self._met.close()


class ShardHandle(Protocol):
    """How the driver reaches a shard: in this process, or in a worker. A command is sent to
    every shard before any answer is awaited, so that workers run side by side. The commands
    are the steps' names; what travels (an ``array("q")`` or its bytes, states or their
    pickle) is the handle's business, the driver only passes it on."""

    def send(self, command: str, argument: Any = None) -> None: ...

    def receive(self) -> Any: ...


def perform(shard: Shard[Any, Any], command: str, argument: Any) -> Any:
    """One command on a shard in this process. ``expand`` (a portion): (proposals per owner,
    generated so far, whether a violation was met); ``decide``: how many are new;
    ``first_violation``; ``settle``: winners per proposer; ``keep``: (keys of the shard's
    part of the next level, their count)."""
    if command == "expand":
        proposals, broken = shard.expand(argument)
        return proposals, shard.generated, broken
    if command == "decide":
        return shard.decide(argument)
    if command == "first_violation":
        return shard.first_violation()
    if command == "settle":
        return shard.settle()
    if command == "keep":
        keys = shard.keep(argument)
        return keys, len(keys)
    if command == "renumber":
        shard.renumber(argument)
        return None
    if command == "give":
        return shard.give(argument)
    if command == "take":
        shard.take(argument)
        return None
    if command == "parent":
        return shard.parent_of(argument)
    raise ValueError(f"unknown command {command!r}")


class InProcessShard:
    """A shard called directly (the tests): ``send`` performs, ``receive`` answers."""

    def __init__(self, shard: Shard[Any, Any]) -> None:
        self.shard = shard
        self._answer: Any = None

    def send(self, command: str, argument: Any = None) -> None:
        self._answer = perform(self.shard, command, argument)

    def receive(self) -> Any:
        return self._answer


def _everywhere(
    handles: Sequence[ShardHandle], command: str, arguments: Sequence[Any]
) -> list[Any]:
    for handle, argument in zip(handles, arguments, strict=True):
        handle.send(command, argument)
    return [handle.receive() for handle in handles]


def _call(handle: ShardHandle, command: str, argument: Any = None) -> Any:
    handle.send(command, argument)
    return handle.receive()


#: Moving states evens the shards out when the largest holds this much more than its share.
REBALANCE_OVER = 1.1

#: A level is expanded in rounds of about this many parents, so that progress, the state limit
#: and a violation are seen within a level, not only at its end.
ROUND_PARENTS = 1 << 16


def search_levels(
    init: S,
    successors: Successors[S, L],
    check: Check[S],
    fingerprint: Callable[[S], int],
    handles: Sequence[ShardHandle],
    limit: RankLimit,
    *,
    max_states: int | None = None,
    max_depth: int | None = None,
    progress: Callable[[Progress], None] | None = None,
    round_parents: int = ROUND_PARENTS,
) -> SearchResult[S, L]:
    """The level loop over shards, the owner of the initial state holding it
    (``Shard.start``). A level of N states is expanded in N / ``round_parents`` rounds
    (rounded up), each shard expanding the same share of its states in each, so that they
    work side by side; ``max_states`` is checked after each round: the search stops after
    the round that reaches it."""
    if round_parents < 1:
        raise ValueError(f"round_parents must be at least 1, not {round_parents}")
    shards = len(handles)
    distinct, generated, depth = 1, 1, 1

    def result(complete: bool, violation: Violation[S, L] | None, why: str) -> SearchResult[S, L]:
        return SearchResult(distinct, depth, generated, complete, violation, why)

    def expand_and_decide(portion: tuple[int, int]) -> tuple[int, bool]:
        """One round: new states, and whether any shard has met a violation."""
        nonlocal generated
        expanded = _everywhere(handles, "expand", [portion] * shards)
        generated = 1 + sum(made for _proposals, made, _broken in expanded)
        new = _everywhere(
            handles,
            "decide",
            [[expanded[source][0][owner] for source in range(shards)] for owner in range(shards)],
        )
        return sum(new), any(broken for _proposals, _made, broken in expanded)

    broken = check(init)
    if broken:
        return result(False, Violation(broken, [Step(None, init)]), "violation")
    level_size = 1
    while level_size:
        if max_depth is not None and depth >= max_depth:
            return result(False, None, f"depth limit {max_depth} reached")
        limit.reset()
        next_size = 0
        rounds = -(-level_size // round_parents)
        for part in range(1, rounds + 1):
            new, violated = expand_and_decide((part, rounds))
            if violated and part < rounds:
                # The rest of the level up to the violating parent's rank: every candidate
                # of a smaller key is then met.
                more, _ = expand_and_decide((rounds, rounds))
                new += more
            next_size += new
            distinct += new
            if violated:
                found = _everywhere(handles, "first_violation", [None] * shards)
                first = min((f for f in found if f is not None), key=lambda v: v.key)
                _everywhere(handles, "settle", [None] * shards)  # parents recorded
                trace = rebuild_trace(
                    first.fingerprint,
                    init,
                    lambda fp: _call(handles[fp % shards], "parent", fp),
                    successors,
                    fingerprint,
                )
                depth += 1
                return result(False, Violation(first.invariants, trace), "violation")
            if progress is not None:
                progress(Progress(distinct, depth, next_size))
            if max_states is not None and distinct >= max_states and new:
                depth += 1
                return result(False, None, f"state limit {max_states} reached")
        won = _everywhere(handles, "settle", [None] * shards)
        kept = _everywhere(
            handles,
            "keep",
            [[won[owner][index] for owner in range(shards)] for index in range(shards)],
        )
        keys = [part for part, _count in kept]
        _everywhere(handles, "renumber", [keys] * shards)
        level_size = next_size
        if level_size:
            depth += 1
            _rebalance(handles, [int(count) for _part, count in kept])
    return result(True, None, "exhausted")


def _rebalance(handles: Sequence[ShardHandle], sizes: list[int]) -> None:
    """Move states from the fullest shards to the emptiest until none holds more than
    ``REBALANCE_OVER`` times its share. Which shard expands a state changes no result."""
    share = sum(sizes) / len(sizes)
    while True:
        big = max(range(len(sizes)), key=sizes.__getitem__)
        small = min(range(len(sizes)), key=sizes.__getitem__)
        if sizes[big] <= max(REBALANCE_OVER * share, share + 1):
            return
        count = min(sizes[big] - int(share), int(share) + 1 - sizes[small])
        if count <= 0:
            return
        _call(handles[small], "take", _call(handles[big], "give", count))
        sizes[big] -= count
        sizes[small] += count


@young_collections_only()
def sharded_breadth_first(
    init: S,
    successors: Successors[S, L],
    check: Check[S],
    *,
    shards: int,
    canonical: Callable[[S], Hashable] | None = None,
    max_states: int | None = None,
    max_depth: int | None = None,
    progress: Callable[[Progress], None] | None = None,
    new_level: Callable[[], Level[S]] = ListLevel,
    round_parents: int = ROUND_PARENTS,
) -> SearchResult[S, L]:
    """The sharded search with every shard in this process: the same result as
    ``breadth_first`` whatever ``shards`` is (tested), as the multi-process search's is."""
    fingerprint = fingerprint_function(canonical)
    limit = RankLimit()
    parts = [
        Shard(k, shards, successors, check, fingerprint, limit, new_level) for k in range(shards)
    ]
    root = fingerprint(init)
    parts[root % shards].start(root, init)
    try:
        return search_levels(
            init,
            successors,
            check,
            fingerprint,
            [InProcessShard(part) for part in parts],
            limit,
            max_states=max_states,
            max_depth=max_depth,
            progress=progress,
            round_parents=round_parents,
        )
    finally:
        for part in parts:
            part.close_all()
