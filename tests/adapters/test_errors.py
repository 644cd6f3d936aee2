"""Which adapter errors say that trying again could help (``AdapterError.retriable``): the
transient ones (timeouts, lost connections and sessions, a cluster that did not start or
crashed) do; bad options, missing installations and answers that do not decode do not."""

from __future__ import annotations

import pytest

from adapters.agent.errors import AgentCallFailed, AgentRefused, AgentUnreachable
from adapters.bookkeeper.errors import (
    CloseReason,
    ConnectionClosed,
    ConnectTimeout,
    DigestMismatch,
    MalformedFrame,
    RequestTimeout,
    UnexpectedResponse,
    WireError,
)
from adapters.cluster.container_engine import ContainerEngineError
from adapters.cluster.errors import (
    BookieHostUnavailable,
    ClusterStartTimeout,
    ClusterStateFileError,
    ClusterUnreachable,
    FaultNotSupported,
    ProcessExited,
    UnknownNode,
)
from adapters.errors import AdapterError, ClusterError, InvalidClusterOptions, NodeStateError
from adapters.installations.bookkeeper import BookKeeperInstallError
from adapters.installations.errors import BookKeeperNotFound, JavaNotFound, ZooKeeperNotFound
from adapters.javaclient.errors import BKLedgerFenced, JavaCallTimeout, JvmGone, JvmStartError
from adapters.netproxy.errors import InvalidPolicy, ProxyClosed, ProxyTimeout
from adapters.refbookie.errors import StartupError
from adapters.zookeeper.errors import (
    InvalidLedgerId,
    MalformedMetadata,
    MetadataError,
    MetadataVersionMismatch,
    NoSuchLedger,
    ZooKeeperError,
    ZooKeeperTimeout,
    ZooKeeperUnreachable,
)

RETRIABLE: list[AdapterError] = [
    ClusterError("ZooKeeper started but does not accept sessions"),
    ClusterStartTimeout("bookie b1 did not register within 60 s"),
    ProcessExited("bookie b1 exited (code 1)"),
    ClusterUnreachable("no cluster at 127.0.0.1:2181"),
    ConnectTimeout("127.0.0.1:3181"),
    RequestTimeout("add entry 3"),
    ConnectionClosed("127.0.0.1:3181", CloseReason.PEER_CLOSED),
    ConnectionClosed("127.0.0.1:3181", CloseReason.CONNECTION_BROKEN, "reset by peer"),
    ZooKeeperError("set failed: SessionExpiredError"),
    ZooKeeperTimeout("get /ledgers/L7: no answer within 10s"),
    ZooKeeperUnreachable("127.0.0.1:2181", 10.0),
    AgentUnreachable("no answer within 5 s"),
    ProxyTimeout("no matching frame"),
    JvmGone("the JVM exited (code 137)"),
    JavaCallTimeout("openLedger did not return within 60s"),
]

NOT_RETRIABLE: list[AdapterError] = [
    InvalidClusterOptions("zero ZooKeeper servers"),
    NodeStateError("b1 is already running"),
    UnknownNode("b9"),
    FaultNotSupported("no partitions here"),
    ClusterStateFileError("no state file"),
    BookieHostUnavailable("no javac"),
    ContainerEngineError("no container engine"),
    JavaNotFound("no java"),
    ZooKeeperNotFound("no ZooKeeper"),
    BookKeeperNotFound("no BookKeeper"),
    BookKeeperInstallError("no such version"),
    WireError("something else"),
    MalformedFrame("not a frame"),
    DigestMismatch("entry 3"),
    UnexpectedResponse("no sub-response"),
    ConnectionClosed("127.0.0.1:3181", CloseReason.MALFORMED_FRAME, "garbage"),
    MetadataError("something else"),
    MalformedMetadata("not a protobuf", path="/ledgers/L7"),
    MetadataVersionMismatch("/ledgers/L7", 3),
    NoSuchLedger(7, "/ledgers/L7"),
    InvalidLedgerId("-1"),
    AgentRefused("no fault calls"),
    AgentCallFailed("kill failed"),
    InvalidPolicy("negative delay"),
    ProxyClosed("closed"),
    JvmStartError("no gateway"),
    BKLedgerFenced("BKLedgerFencedException", "fenced", -101),
    StartupError("cookie mismatch"),
]


@pytest.mark.parametrize("error", RETRIABLE, ids=lambda e: type(e).__name__)
def test_transient_failures_are_retriable(error: AdapterError) -> None:
    assert error.retriable is True


@pytest.mark.parametrize("error", NOT_RETRIABLE, ids=lambda e: type(e).__name__)
def test_what_another_attempt_would_meet_again_is_not_retriable(error: AdapterError) -> None:
    assert error.retriable is False


def test_a_closed_connection_is_retriable_unless_the_peer_sent_garbage() -> None:
    flags = {reason: ConnectionClosed("127.0.0.1:3181", reason).retriable for reason in CloseReason}
    assert flags == {
        CloseReason.USER: True,
        CloseReason.PEER_CLOSED: True,
        CloseReason.MALFORMED_FRAME: False,
        CloseReason.CONNECTION_BROKEN: True,
    }
