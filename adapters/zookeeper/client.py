"""Bounded-time access to ZooKeeper through kazoo.

kazoo's synchronous calls wait forever if the server stops answering, so every request in this
adapter goes through :func:`wait`, which waits on the async form with a timeout and turns
connection-level failures into :class:`~adapters.zookeeper.errors.ZooKeeperError`. Data-level
kazoo errors (``NoNodeError``, ``NodeExistsError``, ``BadVersionError``, ``NotEmptyError``) pass
through unchanged, because only the caller knows what they mean (a missing ledger, a lost CAS...).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any, Protocol, TypeVar

from kazoo.client import KazooClient
from kazoo.exceptions import (
    ConnectionClosedError,
    ConnectionLoss,
    OperationTimeoutError,
    SessionExpiredError,
)

from adapters.zookeeper.errors import (
    InvalidConnectString,
    ZooKeeperError,
    ZooKeeperTimeout,
    ZooKeeperUnreachable,
)

DEFAULT_TIMEOUT = 10.0
"""Seconds to wait for one ZooKeeper request (or for a session to be established)."""

_T_co = TypeVar("_T_co", covariant=True)


class AsyncResult(Protocol[_T_co]):
    """The part of kazoo's ``IAsyncResult`` this adapter uses."""

    def get(self, block: bool = ..., timeout: float | None = ...) -> _T_co: ...


def connect_zookeeper(
    connect_string: str,
    *,
    timeout: float = DEFAULT_TIMEOUT,
    session_timeout: float = 10.0,
) -> KazooClient:
    """Start a kazoo client and wait at most ``timeout`` seconds for its session.

    ``connect_string`` is kazoo's ``hosts`` (``"127.0.0.1:2181,127.0.0.1:2182/optional/chroot"``).
    On failure the half-started client is stopped, so no reconnect thread is left behind.

    :raises ZooKeeperUnreachable: no session within ``timeout``; the message names the hosts.
    :raises InvalidConnectString: kazoo cannot parse ``connect_string``.
    """
    try:
        client = KazooClient(hosts=connect_string, timeout=session_timeout)
    except ValueError as exc:
        raise InvalidConnectString(
            f"bad ZooKeeper connect string {connect_string!r}: {exc}"
        ) from exc
    try:
        client.start(timeout=timeout)
    except client.handler.timeout_exception as exc:
        _stop_quietly(client)
        raise ZooKeeperUnreachable(connect_string, timeout) from exc
    except Exception:
        _stop_quietly(client)
        raise
    return client


@contextlib.contextmanager
def zookeeper_session(
    connect_string: str, *, timeout: float = DEFAULT_TIMEOUT
) -> Iterator[KazooClient]:
    """``with zookeeper_session("127.0.0.1:2181") as zk: ...``; the client is always closed."""
    client = connect_zookeeper(connect_string, timeout=timeout)
    try:
        yield client
    finally:
        _stop_quietly(client)


def wait(result: AsyncResult[_T_co], *, timeout: float, operation: str) -> _T_co:
    """Wait for a kazoo async result for at most ``timeout`` seconds.

    ``operation`` (e.g. ``"get /ledgers/LAYOUT"``) goes into the error message.

    :raises ZooKeeperTimeout: no answer in time.
    :raises ZooKeeperError: the connection or the session was lost.
    """
    try:
        return result.get(block=True, timeout=timeout)
    except (ConnectionLoss, SessionExpiredError, ConnectionClosedError) as exc:
        raise ZooKeeperError(f"{operation} failed: {type(exc).__name__}: {exc}") from exc
    except OperationTimeoutError as exc:
        raise ZooKeeperTimeout(f"{operation}: ZooKeeper operation timed out") from exc
    except Exception as exc:
        if _is_kazoo_wait_timeout(exc):
            raise ZooKeeperTimeout(f"{operation}: no answer within {timeout}s") from exc
        raise


def _is_kazoo_wait_timeout(exc: BaseException) -> bool:
    # Each kazoo handler has its own timeout class (threading: KazooTimeoutError); they share
    # the name, so match on it rather than importing every handler.
    return type(exc).__name__ == "KazooTimeoutError"


def _stop_quietly(client: Any) -> None:
    # Teardown must not mask the error that caused it, and stop() on a dead client may raise.
    with contextlib.suppress(Exception):
        client.stop()
    with contextlib.suppress(Exception):
        client.close()
