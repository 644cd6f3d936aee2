"""Ledger id allocation through ZooKeeper sequential znodes, as BookKeeper does it.

``meta/ZkLedgerIdGenerator.java``: create an ``EPHEMERAL_SEQUENTIAL`` znode
``<root>/idgen/ID-`` (``<root>/ID-`` for the flat layout), parse the 10-digit sequence suffix
as the id, and delete the znode. ZooKeeper's counter is a signed 32-bit int, so ids stop at
``Integer.MAX_VALUE``; the first id of a fresh cluster is 0.

``meta/LongZkLedgerIdGenerator.java`` (hierarchical layouts) takes over once ``<root>/idgen-long``
exists, and creates it when the short counter overflows: the largest ``HOB-NNNNNNNNNN`` child
gives the high 32 bits, a sequential ``ID-`` znode under it the low 32 bits; when the low bits
overflow, the next ``HOB-`` directory is created. Only the newest three ``HOB-`` directories
are kept.
"""

from __future__ import annotations

import collections
import contextlib
import functools
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, Final

from kazoo.client import KazooClient
from kazoo.exceptions import KazooException, NodeExistsError, NoNodeError, NotEmptyError

from adapters.zookeeper.client import DEFAULT_TIMEOUT, wait
from adapters.zookeeper.errors import LedgerIdAllocationFailed, ZooKeeperError, ZooKeeperTimeout
from adapters.zookeeper.paths import (
    HIGH_ORDER_BITS_PREFIX,
    IDGEN_PREFIX,
    SHORT_LEDGER_ID_LIMIT,
    check_layout,
    check_ledgers_root,
    id_generator_prefix,
    long_id_generator_path,
)

_KEPT_HIGH_ORDER_DIRECTORIES: Final = 3
_MAX_ATTEMPTS: Final = 8


def allocate_ledger_id(
    zk: KazooClient,
    ledgers_root: str = "/ledgers",
    layout: str = "hierarchical",
    *,
    timeout: float = DEFAULT_TIMEOUT,
) -> int:
    """Allocate a fresh ledger id exactly as a BookKeeper client on ``layout`` would.

    :raises LedgerIdAllocationFailed: the sequence suffix did not parse, or (flat layout) the
        32-bit counter is exhausted.
    """
    root = check_ledgers_root(ledgers_root)
    if check_layout(layout) == "flat":
        ledger_id = _sequential_id(zk, id_generator_prefix(root, layout), timeout)
        if ledger_id is None:
            raise LedgerIdAllocationFailed(f"the flat layout's id counter under {root} overflowed")
        return ledger_id

    long_path = long_id_generator_path(root)
    # BookKeeper asks whether the 63-bit generator exists, then takes a 31-bit id if it does
    # not. Both requests go out together here (one round trip, not two: a search allocates an
    # id per example); when the 63-bit generator exists, the 31-bit znode is deleted unused.
    long_exists = zk.exists_async(long_path)
    short = _create_sequential(zk, id_generator_prefix(root, layout))
    if wait(long_exists, timeout=timeout, operation=f"exists {long_path}") is None:
        ledger_id = _sequential_number(zk, id_generator_prefix(root, layout), short, timeout)
        if ledger_id is not None:
            return ledger_id
        # The 31-bit counter is used up: switch this cluster to 63-bit ids for good.
        _create_quietly(zk, long_path, timeout, makepath=True)
    else:
        # Unused: whatever became of it does not matter to the 63-bit id.
        with contextlib.suppress(LedgerIdAllocationFailed, KazooException, ZooKeeperError):
            _sequential_number(zk, id_generator_prefix(root, layout), short, timeout)
    return _allocate_long_id(zk, long_path, timeout)


def _allocate_long_id(zk: KazooClient, long_path: str, timeout: float) -> int:
    for _attempt in range(_MAX_ATTEMPTS):
        children = wait(
            zk.get_children_async(long_path), timeout=timeout, operation=f"children {long_path}"
        )
        high_bits = sorted(_high_order_bits(name) for name in children if _is_hob(name))
        if not high_bits:
            _create_quietly(zk, _hob_path(long_path, 1), timeout)
            continue
        high = high_bits[-1]
        low = _sequential_id(zk, f"{_hob_path(long_path, high)}/{IDGEN_PREFIX}", timeout)
        if low is None:
            _create_quietly(zk, _hob_path(long_path, high + 1), timeout)
            continue
        for stale in high_bits[:-_KEPT_HIGH_ORDER_DIRECTORIES]:
            _delete_quietly(zk, _hob_path(long_path, stale), timeout)
        return (high << 32) | low
    raise LedgerIdAllocationFailed(
        f"no long ledger id under {long_path} after {_MAX_ATTEMPTS} attempts"
    )


def _sequential_id(zk: KazooClient, prefix: str, timeout: float) -> int | None:
    """Create+delete one sequential znode; its number, or None if it overflowed 31 bits."""
    return _sequential_number(zk, prefix, _create_sequential(zk, prefix), timeout)


def _create_sequential(zk: KazooClient, prefix: str) -> Any:
    return zk.create_async(prefix, b"", ephemeral=True, sequence=True, makepath=True)


def _sequential_number(zk: KazooClient, prefix: str, creating: Any, timeout: float) -> int | None:
    """The number of the sequential znode ``creating`` makes (deleted again), or None if it
    overflowed 31 bits."""
    created = wait(creating, timeout=timeout, operation=f"create sequential {prefix}")
    try:
        suffix = created[len(prefix) :] if created.startswith(prefix) else ""
        try:
            number = int(suffix)
        except ValueError as exc:
            raise LedgerIdAllocationFailed(
                f"sequential znode {created!r} has no numeric suffix after {prefix!r}"
            ) from exc
    finally:
        # BookKeeper deletes the znode whatever the outcome, and does not wait for the delete
        # (it is ephemeral anyway). The session's next request is ordered after it.
        zk.delete_async(created)
    if number < 0 or number >= SHORT_LEDGER_ID_LIMIT:
        return None
    return number


def _is_hob(name: str) -> bool:
    digits = name.removeprefix(HIGH_ORDER_BITS_PREFIX)
    return name.startswith(HIGH_ORDER_BITS_PREFIX) and digits.isascii() and digits.isdigit()


def _high_order_bits(name: str) -> int:
    return int(name.removeprefix(HIGH_ORDER_BITS_PREFIX))


def _hob_path(long_path: str, high: int) -> str:
    return f"{long_path}/{HIGH_ORDER_BITS_PREFIX}{high:010d}"


def _create_quietly(zk: KazooClient, path: str, timeout: float, *, makepath: bool = False) -> None:
    # Losing the race to another allocator is fine: the directory exists either way.
    with contextlib.suppress(NodeExistsError):
        wait(
            zk.create_async(path, b"", makepath=makepath),
            timeout=timeout,
            operation=f"create {path}",
        )


def _delete_quietly(zk: KazooClient, path: str, timeout: float) -> None:
    with contextlib.suppress(NoNodeError, NotEmptyError):
        wait(zk.delete_async(path), timeout=timeout, operation=f"delete {path}")


def allocate_ledger_ids(
    zk: KazooClient,
    ledgers_root: str = "/ledgers",
    layout: str = "hierarchical",
    *,
    count: int,
    timeout: float = DEFAULT_TIMEOUT,
) -> list[int]:
    """Up to ``count`` fresh ledger ids in one round trip: BookKeeper's sequential znodes,
    created in one ZooKeeper transaction (and deleted without waiting). Only the 31-bit
    generator of a hierarchical layout is asked for several at once; otherwise, or when the
    transaction cannot make them (no ``idgen`` parent yet, the counter used up), this is one
    :func:`allocate_ledger_id`. Never empty.
    """
    if count < 1:
        raise ValueError(f"count must be at least 1 (got {count})")
    root = check_ledgers_root(ledgers_root)
    if check_layout(layout) == "flat" or count == 1:
        return [allocate_ledger_id(zk, root, layout, timeout=timeout)]
    long_path = long_id_generator_path(root)
    prefix = id_generator_prefix(root, layout)
    long_exists = zk.exists_async(long_path)
    batch = zk.transaction()
    for _ in range(count):
        batch.create(prefix, b"", ephemeral=True, sequence=True)
    committed = batch.commit_async()
    exists = wait(long_exists, timeout=timeout, operation=f"exists {long_path}")
    results = wait(committed, timeout=timeout, operation=f"create {count} sequential {prefix}")
    created = [r for r in results if isinstance(r, str)]
    for path in created:
        zk.delete_async(path)  # as BookKeeper: not waited for; ephemeral anyway
    numbers = [_number(path, prefix) for path in created]
    ids = [n for n in numbers if n is not None and 0 <= n < SHORT_LEDGER_ID_LIMIT]
    if exists is not None or not ids:
        return [allocate_ledger_id(zk, root, layout, timeout=timeout)]
    return ids


def _number(path: str, prefix: str) -> int | None:
    suffix = path[len(prefix) :] if path.startswith(prefix) else ""
    return int(suffix) if suffix.lstrip("-").isdigit() else None


class LedgerIdsAhead:
    """Ledger ids from the cluster's generator, allocated in batches, the next batch while the
    caller waits for something else.

    A search takes a fresh ledger per example, and an allocation is a ZooKeeper write. Here
    :data:`BATCH` ids come in one transaction (:func:`allocate_ledger_ids`), and when they are
    used up the caller has the next batch allocated on a worker thread
    (:meth:`allocate_ahead`) while it does something else (a cluster target: after it has read
    an example's final state, while the search judges it and draws the next; not while its own
    requests are under way, since a session's requests wait for its writes). The ids are the
    generator's; an id allocated and never used is a gap in the sequence, as a client that
    crashes after allocating leaves one. An allocation that failed raises when an id is asked
    for, and the next ask starts again.
    """

    #: Ids per transaction: at a few milliseconds per example, one ZooKeeper write every
    #: tens of milliseconds, and at most this many ids left unused when a run ends.
    BATCH: Final = 16

    def __init__(
        self,
        zk: KazooClient,
        ledgers_root: str = "/ledgers",
        layout: str = "hierarchical",
        *,
        timeout: float = DEFAULT_TIMEOUT,
    ) -> None:
        self._allocate = functools.partial(
            allocate_ledger_ids, zk, ledgers_root, layout, count=self.BATCH, timeout=timeout
        )
        self._timeout = timeout
        self._worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="ledger-ids-ahead")
        self._ids: collections.deque[int] = collections.deque()
        self._ahead: Future[list[int]] | None = None

    def next(self) -> int:
        """The next id: one allocated ahead, else from a batch allocated now.

        :raises LedgerIdAllocationFailed: as :func:`allocate_ledger_id`.
        :raises ZooKeeperError: no answer from ZooKeeper in time, or the session was lost.
        """
        if not self._ids:
            ahead, self._ahead = self._ahead, None
            if ahead is None:
                self._ids.extend(self._allocate())
            else:
                try:
                    # Each wait of the allocation is bounded; this bounds their sum.
                    self._ids.extend(ahead.result(timeout=4 * self._timeout))
                except TimeoutError as exc:
                    raise ZooKeeperTimeout(
                        f"no ledger id allocated within {4 * self._timeout:g}s"
                    ) from exc
        return self._ids.popleft()

    def allocate_ahead(self) -> None:
        """Start allocating the next batch if this one is used up and none is under way."""
        if not self._ids and self._ahead is None:
            self._ahead = self._worker.submit(self._allocate)

    def close(self) -> None:
        """Stop allocating ahead (an allocation under way ends on its own timeouts)."""
        self._ahead = None
        self._worker.shutdown(wait=False, cancel_futures=True)
