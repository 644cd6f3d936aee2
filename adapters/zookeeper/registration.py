"""Bookie registration, discovery and cookies, as ``discover/ZKRegistrationManager.java`` does them.

* A bookie announces itself with an EPHEMERAL znode ``<root>/available/<bookieId>`` (read-only
  bookies: ``<root>/available/readonly/<bookieId>``) holding ``BookieServiceInfoFormat``. If a
  znode from an older session is still there, the bookie waits for it to expire first.
* Clients list ``available/`` minus ``readonly``, plus ``available/readonly/``.
* The bookie's cookie lives at ``<root>/cookies/<bookieId>`` (PERSISTENT); a bookie whose
  configuration no longer matches its stored cookie refuses to start.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from kazoo.client import KazooClient
from kazoo.exceptions import NodeExistsError, NoNodeError

from adapters.zookeeper.bookie_id import check_bookie_id
from adapters.zookeeper.client import DEFAULT_TIMEOUT, wait
from adapters.zookeeper.cookie import (
    CURRENT_COOKIE_LAYOUT_VERSION,
    Cookie,
    new_cookie,
    parse_cookie,
    serialize_cookie,
)
from adapters.zookeeper.errors import (
    BookieAlreadyRegistered,
    ClusterNotFormatted,
    CookieMismatch,
    MalformedRegistration,
    NoSuchCookie,
)
from adapters.zookeeper.paths import AVAILABLE_NODE, COOKIES_NODE, READONLY_NODE, check_ledgers_root
from adapters.zookeeper.service_info import (
    BookieServiceInfo,
    parse_bookie_service_info,
    parse_legacy_bookie_id,
    serialize_bookie_service_info,
)


@dataclass(frozen=True)
class BookieAddress:
    """Where a registered bookie accepts connections."""

    host: str
    port: int
    readonly: bool = False


def available_path(ledgers_root: str, bookie_id: str, *, readonly: bool = False) -> str:
    """``<root>/available/<id>`` or ``<root>/available/readonly/<id>``."""
    base = f"{check_ledgers_root(ledgers_root)}/{AVAILABLE_NODE}"
    if readonly:
        base = f"{base}/{READONLY_NODE}"
    return f"{base}/{check_bookie_id(bookie_id)}"


def cookie_path(ledgers_root: str, bookie_id: str) -> str:
    """``<root>/cookies/<id>``."""
    return f"{check_ledgers_root(ledgers_root)}/{COOKIES_NODE}/{check_bookie_id(bookie_id)}"


def register_bookie(
    zk: KazooClient,
    ledgers_root: str,
    bookie_id: str,
    host: str,
    port: int,
    *,
    readonly: bool = False,
    timeout: float = DEFAULT_TIMEOUT,
) -> str:
    """Register ``bookie_id`` as available at ``host:port``; return the ephemeral znode's path.

    The znode belongs to ``zk``'s session and disappears with it. If the znode exists and
    belongs to this session already, nothing changes. If another session owns it, this waits up
    to ``timeout`` seconds for it to go (as a restarting bookie waits for its old session to
    expire). Registering read-only also removes the writable registration, like BookKeeper.

    :raises ClusterNotFormatted: ``<root>/available`` does not exist.
    :raises BookieAlreadyRegistered: another session kept the znode for ``timeout`` seconds.
    """
    path = available_path(ledgers_root, bookie_id, readonly=readonly)
    data = serialize_bookie_service_info(BookieServiceInfo.for_bookie(host, port))
    available = f"{check_ledgers_root(ledgers_root)}/{AVAILABLE_NODE}"
    if wait(zk.exists_async(available), timeout=timeout, operation=f"exists {available}") is None:
        raise ClusterNotFormatted(f"no {available}: the cluster is not formatted")
    if readonly:
        _create_if_absent(zk, f"{available}/{READONLY_NODE}", timeout)

    if not _wait_until_free_or_ours(zk, path, timeout):
        try:
            wait(
                zk.create_async(path, data, ephemeral=True),
                timeout=timeout,
                operation=f"create ephemeral {path}",
            )
        except NodeExistsError as exc:
            raise BookieAlreadyRegistered(f"{path} was registered concurrently") from exc
    if readonly:
        _delete_if_present(zk, available_path(ledgers_root, bookie_id), timeout)
    return path


def unregister_bookie(
    zk: KazooClient,
    ledgers_root: str,
    bookie_id: str,
    *,
    readonly: bool = False,
    timeout: float = DEFAULT_TIMEOUT,
) -> None:
    """Remove the bookie's registration znode (no error if it is already gone)."""
    _delete_if_present(zk, available_path(ledgers_root, bookie_id, readonly=readonly), timeout)


def list_bookies(
    zk: KazooClient,
    ledgers_root: str,
    *,
    include_readonly: bool = True,
    timeout: float = DEFAULT_TIMEOUT,
) -> dict[str, BookieAddress]:
    """Registered bookies by id, with the address a BookKeeper client would connect to.

    The address comes from the ``bookie-rpc`` endpoint of the znode's
    ``BookieServiceInfoFormat``, or from the id itself (``host:port``) when the znode is empty
    or has no such endpoint. A bookie registered both ways is reported writable.

    :raises ClusterNotFormatted: ``<root>/available`` does not exist.
    :raises MalformedRegistration: a znode's data does not parse, or it names no address.
    """
    root = check_ledgers_root(ledgers_root)
    available = f"{root}/{AVAILABLE_NODE}"
    try:
        writable = wait(
            zk.get_children_async(available), timeout=timeout, operation=f"children {available}"
        )
    except NoNodeError as exc:
        raise ClusterNotFormatted(f"no {available}: the cluster is not formatted") from exc
    bookies: dict[str, BookieAddress] = {}
    if include_readonly:
        readonly_dir = f"{available}/{READONLY_NODE}"
        try:
            readonly = wait(
                zk.get_children_async(readonly_dir),
                timeout=timeout,
                operation=f"children {readonly_dir}",
            )
        except NoNodeError:
            readonly = []
        for bookie_id in sorted(readonly):
            address = _read_address(zk, f"{readonly_dir}/{bookie_id}", bookie_id, True, timeout)
            if address is not None:
                bookies[bookie_id] = address
    for bookie_id in sorted(writable):
        if bookie_id == READONLY_NODE:
            continue
        address = _read_address(zk, f"{available}/{bookie_id}", bookie_id, False, timeout)
        if address is not None:
            bookies[bookie_id] = address
    return dict(sorted(bookies.items()))


def ensure_cookie(
    zk: KazooClient,
    ledgers_root: str,
    bookie_id: str,
    *,
    bookie_host: str,
    journal_dir: str,
    ledger_dirs: Sequence[str],
    instance_id: str,
    index_dirs: Sequence[str] | None = None,
    layout_version: int = CURRENT_COOKIE_LAYOUT_VERSION,
    timeout: float = DEFAULT_TIMEOUT,
) -> None:
    """Write the bookie's cookie, or check that the stored one matches this configuration.

    The cookie text is what BookKeeper writes (layout version 5 by default:
    ``indexDirs`` = ``ledger_dirs`` unless ``index_dirs`` is given).

    :raises CookieMismatch: a stored cookie differs (the message lists the fields).
    :raises ClusterNotFormatted: the ledgers root does not exist.
    """
    wanted = new_cookie(
        bookie_host=bookie_host,
        journal_dirs=journal_dir,
        ledger_dirs=ledger_dirs,
        instance_id=instance_id,
        index_dirs=index_dirs,
        layout_version=layout_version,
    )
    path = cookie_path(ledgers_root, bookie_id)
    stored = _read_cookie_or_none(zk, path, timeout)
    if stored is None:
        _create_if_absent(zk, path.rsplit("/", 1)[0], timeout)
        try:
            wait(
                zk.create_async(path, serialize_cookie(wanted)),
                timeout=timeout,
                operation=f"create {path}",
            )
            return
        except NodeExistsError:
            stored = _read_cookie_or_none(zk, path, timeout)
            if stored is None:
                raise CookieMismatch(f"cookie {path} appeared and vanished concurrently") from None
    differences = wanted.mismatches(stored)
    if differences:
        raise CookieMismatch(f"stored cookie {path} differs: {'; '.join(differences)}")


def read_cookie(
    zk: KazooClient, ledgers_root: str, bookie_id: str, *, timeout: float = DEFAULT_TIMEOUT
) -> Cookie:
    """The bookie's stored cookie.

    :raises NoSuchCookie: none is stored.
    :raises MalformedCookie: it does not parse.
    """
    path = cookie_path(ledgers_root, bookie_id)
    cookie = _read_cookie_or_none(zk, path, timeout)
    if cookie is None:
        raise NoSuchCookie(f"no cookie at {path}")
    return cookie


def _read_cookie_or_none(zk: KazooClient, path: str, timeout: float) -> Cookie | None:
    try:
        data, _stat = wait(zk.get_async(path), timeout=timeout, operation=f"get {path}")
    except NoNodeError:
        return None
    return parse_cookie(data, path=path)


def _read_address(
    zk: KazooClient, path: str, bookie_id: str, readonly: bool, timeout: float
) -> BookieAddress | None:
    try:
        data, _stat = wait(zk.get_async(path), timeout=timeout, operation=f"get {path}")
    except NoNodeError:
        # The bookie's session ended between the listing and this read.
        return None
    if data:
        endpoint = parse_bookie_service_info(data, path=path).rpc_endpoint()
        if endpoint is not None:
            return BookieAddress(endpoint.host, endpoint.port, readonly)
    legacy = parse_legacy_bookie_id(bookie_id)
    if legacy is None:
        raise MalformedRegistration(
            f"bookie {bookie_id!r} publishes no bookie-rpc endpoint and is not host:port", path=path
        )
    return BookieAddress(legacy[0], legacy[1], readonly)


def _wait_until_free_or_ours(zk: KazooClient, path: str, timeout: float) -> bool:
    """True if ``path`` is already our session's; False once it is free to create."""
    deleted = threading.Event()

    def on_change(event: Any) -> None:
        if event.type == "DELETED":
            deleted.set()

    stat = wait(zk.exists_async(path, watch=on_change), timeout=timeout, operation=f"exists {path}")
    if stat is None:
        return False
    if stat.ephemeralOwner == zk.client_id[0]:
        return True
    if not deleted.wait(timeout):
        raise BookieAlreadyRegistered(
            f"{path} is still held by session 0x{stat.ephemeralOwner:x} after {timeout}s"
        )
    return False


def _create_if_absent(zk: KazooClient, path: str, timeout: float) -> None:
    try:
        wait(zk.create_async(path, b""), timeout=timeout, operation=f"create {path}")
    except NodeExistsError:
        pass
    except NoNodeError as exc:
        raise ClusterNotFormatted(f"cannot create {path}: its parent does not exist") from exc


def _delete_if_present(zk: KazooClient, path: str, timeout: float) -> None:
    with contextlib.suppress(NoNodeError):
        wait(zk.delete_async(path), timeout=timeout, operation=f"delete {path}")
