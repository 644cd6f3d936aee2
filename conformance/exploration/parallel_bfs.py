"""Breadth-first search on several cores: each shard of ``model.search.sharded_bfs`` in a worker
process, as TLC runs several workers.

The workers are forked from this process, so they inherit the specification (successor,
invariant and fingerprint functions are closures, never pickled). Each holds its part of the
seen set and the states it generated (its part of every level, on disk past ``new_level``'s
limit, as now). Only fingerprints, keys and ranks travel, as arrays of 64-bit integers, through
this process; states travel only when a worker holds many more than the others. The
result is the single-process search's: same counts, depth and counterexample trace whatever the
number of workers (``model.search.sharded_bfs`` says why).

Every worker is stopped on every exit path; a worker that dies (killed, out of memory) or fails
ends the search with ``ParallelSearchError`` naming it, never a hang.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import pickle
import traceback
from array import array
from collections.abc import Callable, Hashable
from multiprocessing.connection import Connection
from multiprocessing.context import ForkProcess
from typing import Any, TypeVar

from conformance.errors import ConformanceError
from conformance.exploration.worker_processes import end_worker
from model.search.bfs import (
    Check,
    Level,
    ListLevel,
    Progress,
    SearchResult,
    Successors,
    breadth_first,
    fingerprint_function,
)
from model.search.collector import young_collections_only
from model.search.sharded_bfs import (
    NO_LIMIT,
    ROUND_PARENTS,
    RankLimit,
    Shard,
    perform,
    search_levels,
)

S = TypeVar("S", bound=Hashable)
L = TypeVar("L")

#: How often a wait for a worker looks whether it is still alive.
_LIVENESS_POLL_S = 1.0


class ParallelSearchError(ConformanceError):
    """A worker of the parallel search failed or died."""


@young_collections_only()
def _serve(conn: Connection, shard: Shard[Any, Any]) -> None:
    """A worker's loop: one reply per command, ``("ok", value)`` or ``("error", text)``."""
    try:
        while True:
            command, argument = conn.recv()
            if command == "stop":
                return
            try:
                conn.send(("ok", _handle(shard, command, argument)))
            except Exception:
                conn.send(("error", traceback.format_exc()))
                return
    except (EOFError, KeyboardInterrupt):
        return  # the driver is gone or interrupted: nothing to report to
    finally:
        shard.close_all()
        conn.close()


def _arrays(blobs: list[bytes]) -> list[array[int]]:
    out = []
    for blob in blobs:
        part = array("q")
        part.frombytes(blob)
        out.append(part)
    return out


def _handle(shard: Shard[Any, Any], command: str, argument: Any) -> Any:
    """``perform``, with arrays travelling as bytes and moved states as one pickle."""
    if command in ("decide", "keep", "renumber"):
        argument = _arrays(argument)
    elif command == "take":
        argument = pickle.loads(argument)
    answer = perform(shard, command, argument)
    if command == "expand":
        proposals, generated, broken = answer
        return [part.tobytes() for part in proposals], generated, broken
    if command == "settle":
        return [part.tobytes() for part in answer]
    if command == "keep":
        keys, count = answer
        return keys.tobytes(), count
    if command == "give":
        return pickle.dumps(answer, pickle.HIGHEST_PROTOCOL)
    return answer


class _ProcessShard:
    """The driver's handle on one worker."""

    def __init__(self, index: int, process: ForkProcess, conn: Connection) -> None:
        self.index = index
        self.process = process
        self.conn = conn
        self._command = ""

    def send(self, command: str, argument: Any = None) -> None:
        self._command = command
        try:
            self.conn.send((command, argument))
        except (BrokenPipeError, ConnectionResetError) as lost:
            raise self._gone() from lost

    def receive(self) -> Any:
        try:
            while not self.conn.poll(_LIVENESS_POLL_S):
                if not self.process.is_alive():
                    raise self._gone()
            status, value = self.conn.recv()
        except (EOFError, BrokenPipeError, ConnectionResetError) as lost:
            raise self._gone() from lost
        if status != "ok":
            raise ParallelSearchError(
                f"worker {self.index} of the parallel search failed during "
                f"{self._command!r}:\n{value}"
            )
        return value

    def _gone(self) -> ParallelSearchError:
        return ParallelSearchError(
            f"worker {self.index} of the parallel search died during {self._command!r} "
            f"(exit code {self.process.exitcode}; out of memory?)"
        )

    def stop(self) -> None:
        with contextlib.suppress(OSError):  # already gone
            self.conn.send(("stop", None))
        end_worker(self.process, self.conn)


class ParallelBreadthFirst:
    """A drop-in for ``model.search.bfs.breadth_first`` that uses ``workers`` processes
    (``workers=1``: ``breadth_first`` itself, in this process). Each level is expanded in
    rounds of ``round_parents`` parents (``model.search.sharded_bfs.search_levels``)."""

    def __init__(self, workers: int, *, round_parents: int = ROUND_PARENTS) -> None:
        if workers < 1:
            raise ValueError(f"workers must be at least 1, not {workers}")
        if round_parents < 1:
            raise ValueError(f"round_parents must be at least 1, not {round_parents}")
        self.workers = workers
        self.round_parents = round_parents

    def __call__(
        self,
        init: S,
        successors: Successors[S, L],
        check: Check[S],
        *,
        canonical: Callable[[S], Hashable] | None = None,
        max_states: int | None = None,
        max_depth: int | None = None,
        progress: Callable[[Progress], None] | None = None,
        progress_every: int = 100_000,
        new_level: Callable[[], Level[S]] = ListLevel,
    ) -> SearchResult[S, L]:
        if self.workers == 1:
            return breadth_first(
                init,
                successors,
                check,
                canonical=canonical,
                max_states=max_states,
                max_depth=max_depth,
                progress=progress,
                progress_every=progress_every,
                new_level=new_level,
            )
        fingerprint = fingerprint_function(canonical)
        context = multiprocessing.get_context("fork")
        limit = RankLimit(context.Value("q", NO_LIMIT, lock=False))
        root = fingerprint(init)
        handles: list[_ProcessShard] = []
        try:
            for index in range(self.workers):
                shard: Shard[S, L] = Shard(
                    index, self.workers, successors, check, fingerprint, limit, new_level
                )
                if root % self.workers == index:
                    shard.start(root, init)
                ours, theirs = context.Pipe()
                process = context.Process(
                    target=_serve, args=(theirs, shard), name=f"bkconform-bfs-{index}"
                )
                process.daemon = True  # never outlives the search's process
                process.start()
                theirs.close()
                handles.append(_ProcessShard(index, process, ours))
            return search_levels(
                init,
                successors,
                check,
                fingerprint,
                handles,
                limit,
                max_states=max_states,
                max_depth=max_depth,
                progress=progress,
                round_parents=self.round_parents,
            )
        finally:
            for handle in handles:
                handle.stop()
