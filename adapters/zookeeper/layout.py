"""Cluster-level znodes: formatting a new cluster, its ``LAYOUT`` and ``INSTANCEID``.

:func:`init_new_cluster` does what ``bookkeeper shell initnewcluster`` does
(``ZKRegistrationManager.initNewCluster``): it refuses if the ledgers root exists, then creates
``<root>``, ``<root>/available``, ``<root>/available/readonly`` and ``<root>/INSTANCEID`` (a
random UUID) with empty data and open ACLs, and stores the ``LAYOUT``
(``meta/LedgerLayout.java``, format version 2)::

    2
    org.apache.bookkeeper.meta.HierarchicalLedgerManagerFactory:1

(no trailing newline). BookKeeper stores ``LAYOUT`` in a second step; here it joins the same
multi-op, so a crash cannot leave a half-formatted cluster. The resulting znodes are identical.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Final

from kazoo.client import KazooClient
from kazoo.exceptions import NodeExistsError, NoNodeError

from adapters.zookeeper.client import DEFAULT_TIMEOUT, wait
from adapters.zookeeper.errors import (
    ClusterAlreadyFormatted,
    ClusterNotFormatted,
    MalformedLayout,
    ZooKeeperError,
)
from adapters.zookeeper.paths import (
    AVAILABLE_NODE,
    INSTANCEID_NODE,
    LAYOUT_NODE,
    LAYOUTS,
    READONLY_NODE,
    check_layout,
    check_ledgers_root,
)

LAYOUT_FORMAT_VERSION: Final = 2
_MIN_LAYOUT_FORMAT_VERSION: Final = 1
MANAGER_FACTORY_CLASSES: Final = {
    "hierarchical": "org.apache.bookkeeper.meta.HierarchicalLedgerManagerFactory",
    "longhierarchical": "org.apache.bookkeeper.meta.LongHierarchicalLedgerManagerFactory",
    "flat": "org.apache.bookkeeper.meta.FlatLedgerManagerFactory",
}
"""Ledger manager factory class recorded in ``LAYOUT`` for each layout (all at version 1)."""
MANAGER_VERSION: Final = 1


@dataclass(frozen=True)
class LedgerLayout:
    """The parsed ``LAYOUT`` znode."""

    manager_factory_class: str
    manager_version: int = MANAGER_VERSION
    layout_format_version: int = LAYOUT_FORMAT_VERSION

    @classmethod
    def for_layout(cls, layout: str) -> LedgerLayout:
        return cls(MANAGER_FACTORY_CLASSES[check_layout(layout)])

    @property
    def layout(self) -> str | None:
        """``"hierarchical"``/``"longhierarchical"``/``"flat"``, or None for another factory."""
        for name, factory in MANAGER_FACTORY_CLASSES.items():
            if factory == self.manager_factory_class:
                return name
        return None


def serialize_layout(layout: LedgerLayout) -> bytes:
    """``"<formatVersion>\\n<factoryClass>:<managerVersion>"`` in UTF-8, as BookKeeper writes it."""
    text = (
        f"{layout.layout_format_version}\n{layout.manager_factory_class}:{layout.manager_version}"
    )
    return text.encode("utf-8")


def parse_layout(data: bytes, *, path: str | None = None) -> LedgerLayout:
    """Parse ``LAYOUT`` znode data the way ``LedgerLayout.parseLayout`` does.

    :raises MalformedLayout: not UTF-8, bad numbers, a format version other than 1 or 2, or
        no ``class:version`` line.
    """
    try:
        text = bytes(data).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise MalformedLayout(f"LAYOUT is not UTF-8: {bytes(data)[:60]!r}", path=path) from exc
    lines = text.split("\n")
    format_version = _java_int(lines[0], "layout format version", text, path)
    if not _MIN_LAYOUT_FORMAT_VERSION <= format_version <= LAYOUT_FORMAT_VERSION:
        raise MalformedLayout(
            f"layout format version {format_version} is not 1 or 2 in {text!r}", path=path
        )
    if len(lines) < 2:
        raise MalformedLayout(f"no ledger manager line in layout {text!r}", path=path)
    parts = lines[1].split(":")
    if len(parts) != 2:
        raise MalformedLayout(f"ledger manager line is not class:version in {text!r}", path=path)
    manager_version = _java_int(parts[1], "ledger manager version", text, path)
    return LedgerLayout(parts[0], manager_version, format_version)


def init_new_cluster(
    zk: KazooClient,
    ledgers_root: str = "/ledgers",
    layout: str = "hierarchical",
    *,
    timeout: float = DEFAULT_TIMEOUT,
) -> str:
    """Format a new BookKeeper cluster under ``ledgers_root`` and return its instance id.

    Parents of ``ledgers_root`` (for a nested root) are created first, with empty data.

    :raises ClusterAlreadyFormatted: ``ledgers_root`` already exists.
    """
    root = check_ledgers_root(ledgers_root)
    layout_bytes = serialize_layout(LedgerLayout.for_layout(layout))
    if wait(zk.exists_async(root), timeout=timeout, operation=f"exists {root}") is not None:
        raise ClusterAlreadyFormatted(f"ledgers root {root} already exists")
    parent = root.rsplit("/", 1)[0]
    if parent:
        wait(zk.ensure_path_async(parent), timeout=timeout, operation=f"ensure_path {parent}")

    instance_id = str(uuid.uuid4())
    transaction = zk.transaction()
    transaction.create(root, b"")
    transaction.create(f"{root}/{AVAILABLE_NODE}", b"")
    transaction.create(f"{root}/{AVAILABLE_NODE}/{READONLY_NODE}", b"")
    transaction.create(f"{root}/{INSTANCEID_NODE}", instance_id.encode("utf-8"))
    transaction.create(f"{root}/{LAYOUT_NODE}", layout_bytes)
    results = wait(transaction.commit_async(), timeout=timeout, operation=f"format {root}")
    failures = [result for result in results if isinstance(result, Exception)]
    if any(isinstance(failure, NodeExistsError) for failure in failures):
        raise ClusterAlreadyFormatted(f"ledgers root {root} was created concurrently")
    if failures:
        raise ZooKeeperError(f"formatting {root} failed: {failures!r}")
    return instance_id


def is_formatted(
    zk: KazooClient, ledgers_root: str = "/ledgers", *, timeout: float = DEFAULT_TIMEOUT
) -> bool:
    """True if ``ledgers_root`` and its ``LAYOUT`` exist (what a bookie needs to start)."""
    layout_path = f"{check_ledgers_root(ledgers_root)}/{LAYOUT_NODE}"
    stat = wait(zk.exists_async(layout_path), timeout=timeout, operation=f"exists {layout_path}")
    return stat is not None


def read_layout(
    zk: KazooClient, ledgers_root: str = "/ledgers", *, timeout: float = DEFAULT_TIMEOUT
) -> LedgerLayout:
    """Read and parse ``<root>/LAYOUT``.

    :raises ClusterNotFormatted: no ``LAYOUT`` znode.
    :raises MalformedLayout: the znode does not parse.
    """
    path = f"{check_ledgers_root(ledgers_root)}/{LAYOUT_NODE}"
    try:
        data, _stat = wait(zk.get_async(path), timeout=timeout, operation=f"get {path}")
    except NoNodeError as exc:
        raise ClusterNotFormatted(f"no {path}: the cluster is not formatted") from exc
    return parse_layout(data, path=path)


def read_instance_id(
    zk: KazooClient, ledgers_root: str = "/ledgers", *, timeout: float = DEFAULT_TIMEOUT
) -> str:
    """The cluster's ``INSTANCEID`` (a UUID string), as bookies put it in their cookies.

    :raises ClusterNotFormatted: no ``INSTANCEID`` znode.
    :raises MalformedLayout: it is not UTF-8.
    """
    path = f"{check_ledgers_root(ledgers_root)}/{INSTANCEID_NODE}"
    try:
        data, _stat = wait(zk.get_async(path), timeout=timeout, operation=f"get {path}")
    except NoNodeError as exc:
        raise ClusterNotFormatted(f"no {path}: the cluster is not formatted") from exc
    try:
        return bytes(data).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise MalformedLayout(f"INSTANCEID is not UTF-8: {data!r}", path=path) from exc


def _java_int(text: str, what: str, layout: str, path: str | None) -> int:
    stripped = text[1:] if text[:1] in "+-" else text
    if not stripped.isascii() or not stripped.isdigit():
        raise MalformedLayout(f"bad {what} {text!r} in layout {layout!r}", path=path)
    value = int(text)
    if not -(2**31) <= value < 2**31:
        raise MalformedLayout(f"{what} {text!r} overflows an int in {layout!r}", path=path)
    return value


__all__ = [
    "LAYOUTS",
    "LAYOUT_FORMAT_VERSION",
    "MANAGER_FACTORY_CLASSES",
    "LedgerLayout",
    "init_new_cluster",
    "is_formatted",
    "parse_layout",
    "read_instance_id",
    "read_layout",
    "serialize_layout",
]
