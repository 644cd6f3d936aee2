"""The one rule of the Zab drivers (``zab search``, ``zab bug``) for a server that cannot start
again after a crash.

A ZooKeeper server must come back from its own transaction log and snapshots after a crash
(``kill -9``): what it acknowledged is durable, and the ensemble counts on it to start again.
One whose start fails because it cannot load its data (``QuorumPeer.loadDataBase``: "Unable to
run quorum server") is ZooKeeper's failure, not the harness's: it will never start again
without a hand on its files. So such a start is a **finding**, a violation of durability,
wherever it happens; any other failure to start (a port taken, a timeout, the harness's own)
decides nothing and stays a shortfall of the harness, undecided.

This is the rule docs/findings/zookeeper-2332-from-the-models-path.md documents (ZOOKEEPER-2332
on 3.9.1: a follower killed at its ACK of NEWLEADER, right after it created its new log file
and before it wrote the header, leaves an empty file and exits with ``EOFException`` in
``FileHeader.deserialize`` at every start). The guided search (:mod:`.guided`) applied it
first; the known bugs' schedules (:mod:`.known_bugs`) called the same start "the ensemble
failed", undecided, and a run of ZOOKEEPER-4785 that hit ZOOKEEPER-2332 was then undecided
where the search would have called it a violation. Both use :func:`unrecoverable` now.
"""

from __future__ import annotations

import re

from adapters.cluster.errors import ProcessExited

#: What a server's start says when it cannot load its own data (``QuorumPeer.loadDataBase``
#: failed: its transaction log or snapshot is unreadable after a crash). ZooKeeper's failure,
#: not the harness's: the server will never start again without a hand on its files.
CANNOT_LOAD = ("Unable to run quorum server", "loadDataBase")

#: What the finding says after the server's name, in ``zab search`` and ``zab bug`` alike (a
#: test of a release with a known bug of this kind matches these words).
UNRECOVERABLE_HEADLINE = "cannot start again after a crash: its data does not load"


def unrecoverable(exc: BaseException) -> str | None:
    """The finding when ``exc`` is a server that exited while starting because it could not
    load its data (None for any other failure: a port taken, a timeout, the harness's own).

    ``exc`` is what :meth:`~adapters.cluster.zookeeper.ZooKeeperEnsemble.wait_until_serving`
    raises for a server that exited while starting: :class:`ProcessExited`, with the tail of
    its log. The finding names the server and the cause (the ``Caused by`` of the server's
    exception, else its first exception) and the first ZooKeeper frame of the stack."""
    if not isinstance(exc, ProcessExited):
        return None
    text = str(exc)
    if not all(marker in text for marker in CANNOT_LOAD):
        return None
    server = re.search(r"ZooKeeper (zk\d+) exited", text)
    cause = re.search(r"Caused by: ([\w.$]+(?:: [^\n]*)?)", text)
    first = re.search(r"\n(\S*(?:Exception|Error)\S*(?:: [^\n]*)?)\n", text)
    frame = re.search(r"at (org\.apache\.zookeeper\.\S+)", text)
    why = cause.group(1) if cause else (first.group(1) if first else "see its log")
    where = f" at {frame.group(1)}" if frame else ""
    name = server.group(1) if server else "a server"
    return f"{name} {UNRECOVERABLE_HEADLINE} ({why}{where})"


__all__ = ["CANNOT_LOAD", "UNRECOVERABLE_HEADLINE", "unrecoverable"]
