"""Ledger metadata znodes: create, read, compare-and-set, list, delete.

Follows ``meta/AbstractZkLedgerManager.java`` (reference section 2.2): a ledger znode is
PERSISTENT, created with its parents created optimistically (empty data); every update is
``setData(path, data, expectedVersion)``, so a writer holding a stale version loses with
:class:`MetadataVersionMismatch` (BookKeeper's ``MetadataVersionException``). The znode's
ZooKeeper data version *is* the metadata version: 0 after create, +1 per update.

Create the znode before writing entries to bookies, as the Java client does: a bookie's
garbage collector deletes ledgers it cannot find in ZooKeeper.

:meth:`LedgerStore.remove` deletes a ledger as BookKeeper's ``removeLedgerMetadata`` does (the
whole of what a client's ``deleteLedger`` does in ZooKeeper; the bookies' garbage collection
then frees the entries): the ledger znode at a version (or any), a missing znode counting as
deleted; under the hierarchical layouts its parents too, from the deepest up, each while it
has no children left (``ZkUtils.asyncDeleteFullPathOptimistic``), never the ledgers root.
:meth:`LedgerStore.read_many` and :meth:`LedgerStore.remove_many` do the same for many ledgers
with their requests pipelined (one round trip per batch, not per ledger).
"""

from __future__ import annotations

import contextlib
import posixpath
from collections.abc import Callable, Iterable, Mapping, Sequence

from kazoo.client import KazooClient
from kazoo.exceptions import BadVersionError, NodeExistsError, NoNodeError, NotEmptyError

from adapters.zookeeper.client import DEFAULT_TIMEOUT, wait
from adapters.zookeeper.errors import (
    InvalidExpectedVersion,
    InvalidLedgerPath,
    LedgerExists,
    MetadataError,
    MetadataVersionMismatch,
    NoSuchLedger,
)
from adapters.zookeeper.idgen import LedgerIdsAhead, allocate_ledger_id
from adapters.zookeeper.metadata import (
    LedgerMetadata,
    parse_ledger_metadata,
    serialize_ledger_metadata,
)
from adapters.zookeeper.paths import (
    LEDGER_NODE_PREFIX,
    check_layout,
    check_ledgers_root,
    is_reserved_znode,
    ledger_id_from_path,
    ledger_path,
)

ANY_VERSION = -1
"""ZooKeeper's "whatever the current version is" for delete."""

#: Requests :meth:`LedgerStore.read_many` and :meth:`LedgerStore.remove_many` keep in flight.
BATCH = 256

_SHORT_LEVEL_WIDTHS = (2, 4)
_LONG_LEVEL_WIDTHS = (3, 4, 4, 4)
_LEAF_DIGITS = 4


class LedgerStore:
    """The ledger metadata of one BookKeeper cluster, seen through a kazoo client.

    ::

        store = LedgerStore(zk, "/ledgers", "hierarchical")
        ledger_id = store.allocate_ledger_id()
        version = store.create(ledger_id, metadata)
        metadata, version = store.read(ledger_id)
        metadata, version = store.mark_in_recovery(ledger_id, metadata, version)

    Every ZooKeeper request waits at most ``timeout`` seconds.
    """

    def __init__(
        self,
        zk: KazooClient,
        ledgers_root: str = "/ledgers",
        layout: str = "hierarchical",
        *,
        timeout: float = DEFAULT_TIMEOUT,
    ) -> None:
        self.zk = zk
        self.ledgers_root = check_ledgers_root(ledgers_root)
        self.layout = check_layout(layout)
        self.timeout = timeout

    def path(self, ledger_id: int) -> str:
        """The znode of ``ledger_id`` under this store's layout."""
        return ledger_path(ledger_id, self.ledgers_root, self.layout)

    def allocate_ledger_id(self) -> int:
        """A fresh id from ``idgen`` (``idgen-long`` beyond 2**31-1), like the Java client."""
        return allocate_ledger_id(self.zk, self.ledgers_root, self.layout, timeout=self.timeout)

    def ids_ahead(self) -> LedgerIdsAhead:
        """Fresh ids, each allocated while the last one is in use (close it when done)."""
        return LedgerIdsAhead(self.zk, self.ledgers_root, self.layout, timeout=self.timeout)

    def create(self, ledger_id: int, metadata: LedgerMetadata) -> int:
        """Create the ledger's znode; return its version (0).

        :raises LedgerExists: the znode already exists.
        """
        path = self.path(ledger_id)
        data = serialize_ledger_metadata(metadata)
        try:
            _created, stat = wait(
                self.zk.create_async(path, data, makepath=True, include_data=True),
                timeout=self.timeout,
                operation=f"create {path}",
            )
        except NodeExistsError as exc:
            raise LedgerExists(ledger_id, path) from exc
        return int(stat.version)

    def read(self, ledger_id: int) -> tuple[LedgerMetadata, int]:
        """The ledger's metadata and znode version.

        :raises NoSuchLedger: no znode.
        :raises MalformedMetadata: the znode does not parse.
        """
        path = self.path(ledger_id)
        try:
            data, stat = wait(
                self.zk.get_async(path), timeout=self.timeout, operation=f"get {path}"
            )
        except NoNodeError as exc:
            raise NoSuchLedger(ledger_id, path) from exc
        return parse_ledger_metadata(data, path=path), int(stat.version)

    def exists(self, ledger_id: int) -> bool:
        path = self.path(ledger_id)
        stat = wait(self.zk.exists_async(path), timeout=self.timeout, operation=f"exists {path}")
        return stat is not None

    def write(self, ledger_id: int, metadata: LedgerMetadata, expected_version: int) -> int:
        """Compare-and-set the ledger's metadata; return the new version.

        :raises MetadataVersionMismatch: the znode is no longer at ``expected_version``.
        :raises NoSuchLedger: no znode.
        """
        path = self.path(ledger_id)
        if (
            isinstance(expected_version, bool)
            or not isinstance(expected_version, int)
            or expected_version < 0
        ):
            # ZooKeeper reads -1 as "any version", which would silently drop the CAS.
            raise InvalidExpectedVersion(
                f"expected_version must be an int >= 0, not {expected_version!r}"
            )
        data = serialize_ledger_metadata(metadata)
        try:
            stat = wait(
                self.zk.set_async(path, data, version=expected_version),
                timeout=self.timeout,
                operation=f"set {path} @ {expected_version}",
            )
        except BadVersionError as exc:
            raise MetadataVersionMismatch(path, expected_version) from exc
        except NoNodeError as exc:
            raise NoSuchLedger(ledger_id, path) from exc
        return int(stat.version)

    def delete(self, ledger_id: int, expected_version: int = ANY_VERSION) -> None:
        """Delete the ledger's znode (only at ``expected_version`` unless it is -1).

        :raises NoSuchLedger: no znode.
        :raises MetadataVersionMismatch: the znode is at another version.
        """
        path = self.path(ledger_id)
        try:
            wait(
                self.zk.delete_async(path, version=expected_version),
                timeout=self.timeout,
                operation=f"delete {path}",
            )
        except NoNodeError as exc:
            raise NoSuchLedger(ledger_id, path) from exc
        except BadVersionError as exc:
            raise MetadataVersionMismatch(path, expected_version) from exc

    def remove(self, ledger_id: int, expected_version: int = ANY_VERSION) -> bool:
        """Delete the ledger as BookKeeper does (see the module docstring): True if its znode
        was deleted, False if there was none (BookKeeper's delete succeeds then too).

        :raises MetadataVersionMismatch: the znode is at another version than
            ``expected_version`` (unless that is -1).
        """
        failure = self.remove_many({ledger_id: expected_version})[ledger_id]
        if isinstance(failure, Exception):
            raise failure
        return failure

    def read_many(
        self, ledger_ids: Iterable[int]
    ) -> dict[int, tuple[LedgerMetadata, int] | MetadataError]:
        """Each ledger's metadata and znode version, or the error reading it gave
        (:class:`NoSuchLedger`, :class:`MalformedMetadata`), with up to :data:`BATCH` reads in
        flight.

        :raises ZooKeeperError: ZooKeeper did not answer (connection or session lost, timeout).
        """
        found: dict[int, tuple[LedgerMetadata, int] | MetadataError] = {}
        ids = list(ledger_ids)
        for start in range(0, len(ids), BATCH):
            batch = [(i, self.path(i)) for i in ids[start : start + BATCH]]
            pending = [(i, path, self.zk.get_async(path)) for i, path in batch]
            for ledger_id, path, result in pending:
                try:
                    data, stat = wait(result, timeout=self.timeout, operation=f"get {path}")
                except NoNodeError:
                    found[ledger_id] = NoSuchLedger(ledger_id, path)
                    continue
                try:
                    found[ledger_id] = (parse_ledger_metadata(data, path=path), int(stat.version))
                except MetadataError as exc:
                    found[ledger_id] = exc
        return found

    def remove_many(self, versions: Mapping[int, int]) -> dict[int, bool | MetadataError]:
        """:meth:`remove` for each ledger of ``versions`` (ledger id -> expected version, -1:
        any), pipelined: per ledger, True (deleted), False (no znode) or the
        :class:`MetadataVersionMismatch` that kept it. Emptied parents go afterwards, once
        each.

        :raises ZooKeeperError: ZooKeeper did not answer (connection or session lost, timeout).
        """
        outcome: dict[int, bool | MetadataError] = {}
        ids = list(versions)
        for start in range(0, len(ids), BATCH):
            batch = [(i, self.path(i), versions[i]) for i in ids[start : start + BATCH]]
            pending = [
                (i, path, version, self.zk.delete_async(path, version=version))
                for i, path, version in batch
            ]
            for ledger_id, path, version, result in pending:
                try:
                    wait(result, timeout=self.timeout, operation=f"delete {path}")
                except NoNodeError:
                    outcome[ledger_id] = False
                except BadVersionError:
                    outcome[ledger_id] = MetadataVersionMismatch(path, version)
                else:
                    outcome[ledger_id] = True
        if self.layout != "flat":
            self._remove_empty_parents(self.path(i) for i, done in outcome.items() if done)
        return outcome

    def _remove_empty_parents(self, removed: Iterable[str]) -> None:
        """Each parent of the removed ledger znodes that has no children left, deepest first,
        up to (not including) the ledgers root, as ``asyncDeleteFullPathOptimistic`` does: a
        parent that has children again, or is gone, is left and so are its own parents."""
        level = {posixpath.dirname(path) for path in removed}
        while level:
            emptied: set[str] = set()
            for parent in sorted(level):
                if parent == self.ledgers_root or not parent.startswith(self.ledgers_root + "/"):
                    continue
                stat = wait(
                    self.zk.exists_async(parent), timeout=self.timeout, operation=f"exists {parent}"
                )
                if stat is None or stat.numChildren:
                    continue
                try:
                    wait(
                        self.zk.delete_async(parent, version=ANY_VERSION),
                        timeout=self.timeout,
                        operation=f"delete {parent}",
                    )
                except (NoNodeError, NotEmptyError):
                    continue  # another client got there first, or created a ledger under it
                emptied.add(posixpath.dirname(parent))
            level = emptied

    def list_ledgers(self) -> list[int]:
        """Every ledger id with a znode under this layout, ascending.

        Znodes that are not canonical ledger paths (reserved names, stray nodes) are skipped,
        as BookKeeper's ledger iterators skip them.
        """
        ids: set[int] = set()
        for name in self._children(self.ledgers_root):
            if is_reserved_znode(name):
                continue
            child = f"{self.ledgers_root}/{name}"
            if self.layout == "flat":
                self._collect(child, ids)
            elif self.layout == "hierarchical" and _is_digits(name, _SHORT_LEVEL_WIDTHS[0]):
                self._walk(child, _SHORT_LEVEL_WIDTHS[1:], ids)
            elif _is_digits(name, _LONG_LEVEL_WIDTHS[0]):
                self._walk(child, _LONG_LEVEL_WIDTHS[1:], ids)
        return sorted(ids)

    # --- compare-and-set state changes ---------------------------------------------------------

    def update(
        self,
        ledger_id: int,
        current: LedgerMetadata,
        expected_version: int,
        change: Callable[[LedgerMetadata], LedgerMetadata],
    ) -> tuple[LedgerMetadata, int]:
        """Write ``change(current)`` if the znode is still at ``expected_version``.

        :raises MetadataVersionMismatch: someone else updated the ledger first.
        :raises InvalidMetadataTransition: ``change`` is not allowed from ``current``.
        """
        updated = change(current)
        return updated, self.write(ledger_id, updated, expected_version)

    def mark_in_recovery(
        self, ledger_id: int, current: LedgerMetadata, expected_version: int
    ) -> tuple[LedgerMetadata, int]:
        """OPEN -> IN_RECOVERY, the recovery client's first metadata write."""
        return self.update(ledger_id, current, expected_version, LedgerMetadata.to_in_recovery)

    def close_ledger(
        self,
        ledger_id: int,
        current: LedgerMetadata,
        expected_version: int,
        *,
        last_entry_id: int,
        length: int,
    ) -> tuple[LedgerMetadata, int]:
        """OPEN or IN_RECOVERY -> CLOSED at ``last_entry_id`` with ``length`` bytes."""
        return self.update(
            ledger_id,
            current,
            expected_version,
            lambda metadata: metadata.to_closed(last_entry_id, length),
        )

    def append_segment(
        self,
        ledger_id: int,
        current: LedgerMetadata,
        expected_version: int,
        *,
        first_entry_id: int,
        bookies: Sequence[str],
    ) -> tuple[LedgerMetadata, int]:
        """An ensemble change: a new segment of ``bookies`` from ``first_entry_id`` on."""
        return self.update(
            ledger_id,
            current,
            expected_version,
            lambda metadata: metadata.with_new_segment(first_entry_id, bookies),
        )

    def replace_segment(
        self,
        ledger_id: int,
        current: LedgerMetadata,
        expected_version: int,
        *,
        first_entry_id: int,
        bookies: Sequence[str],
    ) -> tuple[LedgerMetadata, int]:
        """Replace the bookies of the segment that starts at ``first_entry_id``."""
        return self.update(
            ledger_id,
            current,
            expected_version,
            lambda metadata: metadata.with_replaced_segment(first_entry_id, bookies),
        )

    # --- tree walking ---------------------------------------------------------------------------

    def _walk(self, path: str, widths: Sequence[int], ids: set[int]) -> None:
        for name in self._children(path):
            child = f"{path}/{name}"
            if widths:
                if _is_digits(name, widths[0]):
                    self._walk(child, widths[1:], ids)
            elif name.startswith(LEDGER_NODE_PREFIX) and _is_digits(name[1:], _LEAF_DIGITS):
                self._collect(child, ids)

    def _collect(self, path: str, ids: set[int]) -> None:
        with contextlib.suppress(InvalidLedgerPath):
            ids.add(ledger_id_from_path(path, self.ledgers_root, self.layout))

    def _children(self, path: str) -> list[str]:
        try:
            children: list[str] = wait(
                self.zk.get_children_async(path),
                timeout=self.timeout,
                operation=f"children {path}",
            )
        except NoNodeError:
            # A hierarchy level may vanish between listing its parent and reading it.
            return []
        return sorted(children)


def _is_digits(name: str, width: int) -> bool:
    return len(name) == width and name.isascii() and name.isdigit()


__all__ = ["ANY_VERSION", "BATCH", "LedgerStore"]
