"""Ending the forked worker processes of a multi-process search (``parallel_bfs``, the
explorer's ``search.portfolio``): each is told to stop its own way first, then given a few
seconds, then killed, so that no worker outlives the search that started it."""

from __future__ import annotations

from multiprocessing.connection import Connection
from multiprocessing.context import ForkProcess

#: How long a worker told to stop may take before it is killed (s).
STOP_TIMEOUT_S = 5.0


def end_worker(process: ForkProcess, conn: Connection) -> None:
    """Wait for ``process`` to end (``STOP_TIMEOUT_S``), kill it if it has not, and close the
    search's end of its pipe."""
    process.join(STOP_TIMEOUT_S)
    if process.is_alive():
        process.kill()
        process.join(STOP_TIMEOUT_S)
    conn.close()
