"""Connecting to ZooKeeper is bounded in time and fails with a typed error."""

from __future__ import annotations

import socket
import threading
import time

import pytest

from adapters.zookeeper.client import connect_zookeeper, wait
from adapters.zookeeper.errors import (
    InvalidConnectString,
    ZooKeeperTimeout,
    ZooKeeperUnreachable,
)


def _unused_loopback_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def test_unreachable_server_raises_with_the_connect_string() -> None:
    connect_string = f"127.0.0.1:{_unused_loopback_port()}"
    threads_before = threading.active_count()
    with pytest.raises(ZooKeeperUnreachable, match=connect_string) as info:
        connect_zookeeper(connect_string, timeout=1.0)
    assert info.value.connect_string == connect_string
    # The half-started client was stopped: no reconnect thread survives.
    deadline = time.monotonic() + 5
    while threading.active_count() > threads_before and time.monotonic() < deadline:
        time.sleep(0.05)
    assert threading.active_count() <= threads_before


@pytest.mark.parametrize("connect_string", ["", "127.0.0.1:notaport"])
def test_unusable_connect_strings_raise_a_typed_error(connect_string: str) -> None:
    with pytest.raises(InvalidConnectString):
        connect_zookeeper(connect_string, timeout=1.0)


class _NeverAnswers:
    def get(self, block: bool = True, timeout: float | None = None) -> object:
        class KazooTimeoutError(Exception):
            pass

        raise KazooTimeoutError


def test_wait_turns_a_handler_timeout_into_a_typed_error() -> None:
    with pytest.raises(ZooKeeperTimeout, match="get /x"):
        wait(_NeverAnswers(), timeout=0.01, operation="get /x")
