"""Making a real BookKeeper client connect to the proxies instead of the bookies.

Which way works depends on the client's version (measured with 4.11.1 and 4.17.4, issue 8):

* ``REWRITE_SERVICE_INFO`` (clients with bookie-id resolution, 4.12+): each bookie keeps its id;
  the ``bookie-rpc`` endpoint in its ``<root>/available/<id>`` znode
  (``BookieServiceInfoFormat``) is rewritten to the proxy's host and port, and the client
  resolves the id to the proxy. A bookie that re-registers (after a ZooKeeper session loss)
  writes its real address back: a data watch re-applies the rewrite.
* ``REPLACE_REGISTRATIONS`` (clients before 4.12, which connect to the id itself): the bookies'
  ``available/`` znodes are replaced by ephemeral znodes named after the proxies'
  ``host:port``; a bookie that re-registers is removed again by a watch. New ensembles then
  name the proxies.
* ``PROXY_ENSEMBLE`` (any version, when the harness writes the ledger metadata itself): the
  ensemble lists the proxies' addresses (:func:`proxied_ensemble`); 4.12+ clients also need
  ``setBookieAddressResolverEnabled(false)`` so that they do not look the ids up.

Everything goes through ``adapters.zookeeper`` helpers with bounded waits; the watches run on
kazoo's thread and only issue asynchronous requests, so they never block it.
"""

from __future__ import annotations

import contextlib
import enum
import logging
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from types import TracebackType
from typing import Any, Protocol, Self

from kazoo.exceptions import BadVersionError, NodeExistsError, NoNodeError
from kazoo.recipe.watchers import DataWatch

from adapters.javaclient.distribution import BookKeeperVersion, distribution_version
from adapters.javaclient.errors import DistributionError
from adapters.netproxy.errors import ProxyTimeout, RoutingError, UnknownBookKeeperVersion
from adapters.zookeeper.client import DEFAULT_TIMEOUT, wait
from adapters.zookeeper.errors import MalformedRegistration, MetadataError
from adapters.zookeeper.registration import available_path
from adapters.zookeeper.service_info import (
    BOOKIE_RPC_PROTOCOL,
    BookieServiceInfo,
    Endpoint,
    parse_bookie_service_info,
    serialize_bookie_service_info,
)

log = logging.getLogger(__name__)

#: The first release whose client resolves bookie ids through ``BookieServiceInfo`` (BP-41).
FIRST_RESOLVING_VERSION = BookKeeperVersion(4, 12, 0)


class RoutingMethod(enum.Enum):
    REWRITE_SERVICE_INFO = "rewrite-service-info"
    REPLACE_REGISTRATIONS = "replace-registrations"
    PROXY_ENSEMBLE = "proxy-ensemble"


class ProxyAddress(Protocol):
    """What routing needs of a proxy (a :class:`~adapters.netproxy.BookieProxy` has it)."""

    @property
    def host(self) -> str: ...

    @property
    def port(self) -> int: ...


def routing_method_for_version(version: BookKeeperVersion | str) -> RoutingMethod:
    """The ZooKeeper-side method for a client of ``version`` (``"4.17.4"`` or parsed)."""
    if isinstance(version, str):
        try:
            version = BookKeeperVersion.parse(version)
        except DistributionError as exc:
            raise UnknownBookKeeperVersion(str(exc)) from exc
    if version.major != 4:
        raise UnknownBookKeeperVersion(
            f"BookKeeper {version}: only 4.x clients are known to this routing module"
        )
    if version >= FIRST_RESOLVING_VERSION:
        return RoutingMethod.REWRITE_SERVICE_INFO
    return RoutingMethod.REPLACE_REGISTRATIONS


def routing_method_for_distribution(home: Path) -> RoutingMethod:
    """:func:`routing_method_for_version` of the distribution unpacked at ``home``."""
    try:
        version = distribution_version(home)
    except DistributionError as exc:
        raise UnknownBookKeeperVersion(str(exc)) from exc
    return routing_method_for_version(version)


def proxied_ensemble(
    ensemble: Sequence[str], proxies: Mapping[str, ProxyAddress]
) -> tuple[str, ...]:
    """``ensemble`` (bookie ids) with each id replaced by its proxy's ``host:port``."""
    missing = [bookie_id for bookie_id in ensemble if bookie_id not in proxies]
    if missing:
        raise RoutingError(f"no proxy for ensemble members {missing}; proxies: {sorted(proxies)}")
    return tuple(f"{proxies[b].host}:{proxies[b].port}" for b in ensemble)


def rewritten_service_info(info: BookieServiceInfo, host: str, port: int) -> BookieServiceInfo:
    """``info`` with its ``bookie-rpc`` endpoints pointing at ``host:port`` (one added if none)."""
    endpoints = tuple(
        replace(endpoint, host=host, port=port)
        if endpoint.protocol == BOOKIE_RPC_PROTOCOL
        else endpoint
        for endpoint in info.endpoints
    )
    if info.rpc_endpoint() is None:
        endpoints = (*endpoints, Endpoint("bookie", host, port, BOOKIE_RPC_PROTOCOL))
    return BookieServiceInfo(endpoints, info.properties)


class _Routing:
    """Shared lifecycle of the ZooKeeper-side methods: watches, counters, ``with`` support."""

    method: RoutingMethod

    def __init__(
        self,
        zk: Any,
        ledgers_root: str,
        proxies: Mapping[str, ProxyAddress],
        *,
        timeout: float = DEFAULT_TIMEOUT,
    ) -> None:
        if not proxies:
            raise RoutingError("no proxies to route to")
        self.zk = zk
        self.ledgers_root = ledgers_root
        self.targets = {bookie_id: (p.host, p.port) for bookie_id, p in proxies.items()}
        self.timeout = timeout
        self._lock = threading.Lock()
        self._stopped = False
        self._started = False
        #: How many times a watch had to undo a bookie's re-registration, per bookie id.
        self.reapplied: dict[str, int] = dict.fromkeys(self.targets, 0)
        self.errors: list[str] = []

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def start(self) -> None:
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError

    def _watch(self, path: str, on_data: Callable[[bytes | None, Any], None]) -> None:
        def callback(data: bytes | None, stat: Any) -> bool:
            if self._stopped:
                return False  # kazoo drops a watch whose function returns False
            try:
                on_data(data, stat)
            except Exception as exc:  # a watch must not die silently
                log.exception("routing watch on %s failed", path)
                self.errors.append(f"{path}: {exc!r}")
            return True

        DataWatch(self.zk, path, callback)

    def _record_async(self, result: Any, what: str) -> None:
        def done(outcome: Any) -> None:
            try:
                outcome.get_nowait()
            except (NoNodeError, NodeExistsError, BadVersionError):
                pass  # raced with the bookie; the watch fires again with the new state
            except Exception as exc:
                log.warning("routing: %s failed: %r", what, exc)
                self.errors.append(f"{what}: {exc!r}")

        result.rawlink(done)

    def _get(self, path: str) -> tuple[bytes, Any] | None:
        try:
            data, stat = wait(
                self.zk.get_async(path), timeout=self.timeout, operation=f"get {path}"
            )
        except NoNodeError:
            return None
        return bytes(data), stat

    def _of(self, bookies: Iterable[str] | None) -> list[str]:
        """``bookies`` (default: every target); a bookie that is not a target is an error."""
        if bookies is None:
            return list(self.targets)
        chosen = list(bookies)
        unknown = sorted(set(chosen) - set(self.targets))
        if unknown:
            raise ValueError(f"not routed here: {unknown} (the targets: {sorted(self.targets)})")
        return chosen

    def _wait_until(self, condition: Callable[[], bool], timeout: float, what: str) -> None:
        deadline = time.monotonic() + timeout
        while not condition():
            if time.monotonic() > deadline:
                raise ProxyTimeout(f"{what} not in place after {timeout}s; errors: {self.errors}")
            time.sleep(0.02)


class ServiceInfoRewrite(_Routing):
    """``REWRITE_SERVICE_INFO``: point each bookie's registered endpoint at its proxy.

    ::

        with ServiceInfoRewrite(zk, "/ledgers", {"127.0.0.1:3181": proxy1, ...}) as routing:
            routing.wait_routed(5)
            ...  # a 4.12+ client resolves the bookies to the proxies
        # the bookies' own endpoints are written back
    """

    method = RoutingMethod.REWRITE_SERVICE_INFO

    def __init__(
        self,
        zk: Any,
        ledgers_root: str,
        proxies: Mapping[str, ProxyAddress],
        *,
        timeout: float = DEFAULT_TIMEOUT,
    ) -> None:
        super().__init__(zk, ledgers_root, proxies, timeout=timeout)
        self._originals: dict[str, bytes] = {}

    def _path(self, bookie_id: str) -> str:
        return available_path(self.ledgers_root, bookie_id)

    def _desired(self, bookie_id: str, data: bytes) -> bytes:
        host, port = self.targets[bookie_id]
        info = (
            parse_bookie_service_info(data, path=self._path(bookie_id))
            if data
            else BookieServiceInfo(())
        )
        return serialize_bookie_service_info(rewritten_service_info(info, host, port))

    def start(self) -> None:
        """Rewrite every registration and watch it; :class:`RoutingError` if one is missing."""
        if self._started:
            raise RoutingError("routing already started")
        self._started = True
        for bookie_id in self.targets:
            path = self._path(bookie_id)
            try:
                current = self._get(path)
                if current is None:
                    raise RoutingError(f"bookie {bookie_id} is not registered ({path} is absent)")
                self._desired(bookie_id, current[0])  # fail now on malformed data
            except MetadataError as exc:
                raise RoutingError(f"cannot read the registration of {bookie_id}: {exc}") from exc
            self._watch(path, self._on_change(bookie_id))

    def _on_change(self, bookie_id: str) -> Callable[[bytes | None, Any], None]:
        path = self._path(bookie_id)

        def apply(data: bytes | None, stat: Any) -> None:
            if data is None or stat is None:
                return  # deleted: the bookie's next registration triggers this again
            data = bytes(data)
            try:
                desired = self._desired(bookie_id, data)
            except MalformedRegistration as exc:
                self.errors.append(str(exc))
                return
            if data == desired:
                return
            with self._lock:
                if self._originals.get(bookie_id) is not None:
                    self.reapplied[bookie_id] += 1
                self._originals[bookie_id] = data
            self._record_async(
                self.zk.set_async(path, desired, version=stat.version), f"rewrite {path}"
            )

        return apply

    def routed(self, bookies: Iterable[str] | None = None) -> bool:
        """True when every registration (of ``bookies``, default all) points at its proxy
        right now."""
        for bookie_id in self._of(bookies):
            current = self._get(self._path(bookie_id))
            if current is None or current[0] != self._desired(bookie_id, current[0]):
                return False
        return True

    def wait_routed(
        self, timeout: float = DEFAULT_TIMEOUT, bookies: Iterable[str] | None = None
    ) -> None:
        """Wait (bounded) until :meth:`routed`; :class:`ProxyTimeout` otherwise. ``bookies``:
        only those (a bookie that is down has no registration to route)."""
        wanted = self._of(bookies)
        self._wait_until(lambda: self.routed(wanted), timeout, "the service-info rewrite")

    def close(self) -> None:
        """Stop watching and write each bookie's own endpoint back (where still rewritten)."""
        if self._stopped:
            return
        self._stopped = True
        for bookie_id, original in self._originals.items():
            path = self._path(bookie_id)
            with contextlib.suppress(NoNodeError, MetadataError):
                current = self._get(path)
                if current is not None and current[0] == self._desired(bookie_id, current[0]):
                    wait(
                        self.zk.set_async(path, original, version=current[1].version),
                        timeout=self.timeout,
                        operation=f"restore {path}",
                    )


class RegistrationReplace(_Routing):
    """``REPLACE_REGISTRATIONS``: the proxies register in place of the bookies.

    The proxies' znodes are ephemeral in ``zk``'s session. On :meth:`close` the proxies'
    znodes are deleted and each bookie's registration is re-created with its original data,
    as an ephemeral znode of ``zk``'s session (the bookie's own session no longer owns one):
    it lasts as long as that session, so pass the cluster's long-lived client.
    """

    method = RoutingMethod.REPLACE_REGISTRATIONS

    def __init__(
        self,
        zk: Any,
        ledgers_root: str,
        proxies: Mapping[str, ProxyAddress],
        *,
        timeout: float = DEFAULT_TIMEOUT,
    ) -> None:
        super().__init__(zk, ledgers_root, proxies, timeout=timeout)
        self._originals: dict[str, bytes] = {}
        self._proxy_paths: list[str] = []

    def proxy_id(self, bookie_id: str) -> str:
        host, port = self.targets[bookie_id]
        return f"{host}:{port}"

    def start(self) -> None:
        if self._started:
            raise RoutingError("routing already started")
        self._started = True
        try:
            for bookie_id in self.targets:
                original_path = available_path(self.ledgers_root, bookie_id)
                current = self._get(original_path)
                if current is None:
                    raise RoutingError(
                        f"bookie {bookie_id} is not registered ({original_path} is absent)"
                    )
                self._originals[bookie_id] = current[0]
                host, port = self.targets[bookie_id]
                proxy_path = available_path(self.ledgers_root, self.proxy_id(bookie_id))
                data = serialize_bookie_service_info(BookieServiceInfo.for_bookie(host, port))
                with contextlib.suppress(NodeExistsError):
                    wait(
                        self.zk.create_async(proxy_path, data, ephemeral=True),
                        timeout=self.timeout,
                        operation=f"create {proxy_path}",
                    )
                self._proxy_paths.append(proxy_path)
                self._watch(original_path, self._on_change(bookie_id, original_path))
        except MetadataError as exc:
            raise RoutingError(f"cannot replace the bookies' registrations: {exc}") from exc

    def _on_change(self, bookie_id: str, path: str) -> Callable[[bytes | None, Any], None]:
        first = [True]

        def remove(data: bytes | None, stat: Any) -> None:
            if data is None or stat is None:
                return
            with self._lock:
                if not first[0]:
                    self.reapplied[bookie_id] += 1
                first[0] = False
            self._record_async(self.zk.delete_async(path, version=stat.version), f"delete {path}")

        return remove

    def routed(self, bookies: Iterable[str] | None = None) -> bool:
        for bookie_id in self._of(bookies):
            if self._get(available_path(self.ledgers_root, bookie_id)) is not None:
                return False
            if self._get(available_path(self.ledgers_root, self.proxy_id(bookie_id))) is None:
                return False
        return True

    def wait_routed(
        self, timeout: float = DEFAULT_TIMEOUT, bookies: Iterable[str] | None = None
    ) -> None:
        wanted = self._of(bookies)
        self._wait_until(lambda: self.routed(wanted), timeout, "the registration replacement")

    def close(self) -> None:
        if self._stopped:
            return
        self._stopped = True
        for path in self._proxy_paths:
            with contextlib.suppress(NoNodeError, MetadataError):
                wait(self.zk.delete_async(path), timeout=self.timeout, operation=f"delete {path}")
        for bookie_id, data in self._originals.items():
            path = available_path(self.ledgers_root, bookie_id)
            with contextlib.suppress(NodeExistsError, MetadataError):
                wait(
                    self.zk.create_async(path, data, ephemeral=True),
                    timeout=self.timeout,
                    operation=f"restore {path}",
                )


def route_through_proxies(
    zk: Any,
    ledgers_root: str,
    proxies: Mapping[str, ProxyAddress],
    method: RoutingMethod,
    *,
    timeout: float = DEFAULT_TIMEOUT,
) -> ServiceInfoRewrite | RegistrationReplace:
    """The (unstarted) ZooKeeper-side routing for ``method``; use it in a ``with`` block."""
    if method is RoutingMethod.REWRITE_SERVICE_INFO:
        return ServiceInfoRewrite(zk, ledgers_root, proxies, timeout=timeout)
    if method is RoutingMethod.REPLACE_REGISTRATIONS:
        return RegistrationReplace(zk, ledgers_root, proxies, timeout=timeout)
    raise RoutingError(
        f"{method.value} changes nothing in ZooKeeper: write the ledger metadata with "
        "proxied_ensemble() (and disable the client's bookie address resolver on 4.12+)"
    )


__all__ = [
    "FIRST_RESOLVING_VERSION",
    "ProxyAddress",
    "RegistrationReplace",
    "RoutingMethod",
    "ServiceInfoRewrite",
    "proxied_ensemble",
    "rewritten_service_info",
    "route_through_proxies",
    "routing_method_for_distribution",
    "routing_method_for_version",
]
