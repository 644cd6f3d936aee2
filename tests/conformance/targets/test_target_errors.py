"""``TargetError`` keeps its cause and says whether trying again could help; the cluster
targets set that flag where they turn an adapter's error into one. No cluster: stand-in
stores, connections and providers (as ``test_cluster_target_metadata.py``)."""

from __future__ import annotations

import asyncio
import pickle
from types import SimpleNamespace
from typing import Any

import pytest

from adapters.agent.errors import AgentError, AgentRefused, AgentUnreachable
from adapters.bookkeeper.errors import MalformedFrame, RequestTimeout, WireError
from adapters.cluster.errors import (
    ClusterError,
    ClusterStartTimeout,
    FaultNotSupported,
    InvalidClusterOptions,
    ProcessExited,
)
from adapters.cluster.provider import ClusterProvider, Endpoints
from adapters.zookeeper.errors import MalformedMetadata, MetadataError, ZooKeeperTimeout
from conformance.distributed.shard import InjectedCrash, ShardTimeout
from conformance.errors import ConformanceError, is_retriable
from conformance.operations import Crash, FreshLedger
from conformance.targets.base import TargetError, UnsupportedConfiguration
from conformance.targets.external_target import ExternalTarget
from model.bookkeeper.config import ModelConfig
from tests.conformance.lying_target import path_to
from tests.conformance.targets.test_cluster_target_metadata import (
    CFG,
    FAILING_METADATA_ACTIONS,
    OPEN,
    Offline,
    Store,
    _answer,
    _invoke,
    _snapshot,
)

# TargetError itself -----------------------------------------------------------------------------


def test_a_target_error_keeps_the_error_it_was_raised_from() -> None:
    timeout = ZooKeeperTimeout("get: timed out")
    with pytest.raises(TargetError) as raised:
        try:
            raise timeout
        except MetadataError as exc:
            raise TargetError(f"no answer: {exc}", retriable=exc.retriable) from exc
    assert raised.value.cause is timeout and raised.value.__cause__ is timeout
    assert raised.value.retriable is True
    assert str(raised.value) == "no answer: get: timed out"


def test_a_cause_given_is_kept_and_is_also_the_dunder_cause() -> None:
    refused = ConnectionRefusedError(111, "Connection refused")
    error = TargetError("cannot connect", cause=refused, retriable=True)
    assert error.cause is refused and error.__cause__ is refused


def test_a_target_error_without_a_say_is_not_retriable_and_has_no_cause() -> None:
    error = TargetError("the target did something odd")
    assert (error.retriable, error.cause) == (False, None)
    assert isinstance(error, ConformanceError) and not is_retriable(error)


def test_the_flag_and_a_given_cause_survive_pickling() -> None:
    copy = pickle.loads(pickle.dumps(TargetError("x", cause=ValueError("v"), retriable=True)))
    assert (str(copy), copy.retriable, repr(copy.cause)) == ("x", True, "ValueError('v')")


def test_an_unsupported_configuration_is_never_retriable() -> None:
    error = UnsupportedConfiguration("limbo without fencing", cause=ValueError("no"))
    assert isinstance(error, TargetError) and error.retriable is False
    assert isinstance(error.cause, ValueError)
    with pytest.raises(TypeError):
        UnsupportedConfiguration("x", retriable=True)  # type: ignore[call-arg]


@pytest.mark.parametrize(
    ("error", "retriable"),
    [
        (TargetError("lost", retriable=True), True),
        (TargetError("odd"), False),
        (UnsupportedConfiguration("no"), False),
        (InjectedCrash("injected crash"), True),
        (ShardTimeout("did not finish"), True),
        (ZooKeeperTimeout("timed out"), True),
        (MalformedMetadata("not a protobuf"), False),
        (ValueError("bad input"), False),
        (KeyError("a bug"), False),
        (KeyboardInterrupt(), False),
    ],
    ids=lambda value: type(value).__name__ if isinstance(value, BaseException) else str(value),
)
def test_whether_to_try_again_is_the_error_s_own_flag(
    error: BaseException, retriable: bool
) -> None:
    assert is_retriable(error) is retriable


def test_only_a_true_flag_is_retriable() -> None:
    class Odd(Exception):
        retriable = "yes"

    assert is_retriable(Odd()) is False


# The cluster targets set the flag ---------------------------------------------------------------


def test_zookeeper_not_answering_a_metadata_write_is_retriable() -> None:
    outage = ZooKeeperTimeout("get /ledgers/L7: no answer within 10s")
    with pytest.raises(TargetError, match="ZooKeeper did not answer") as raised:
        _answer(Store(OPEN.to_in_recovery(), read=outage))
    assert raised.value.retriable is True and raised.value.cause is outage


def test_metadata_written_outside_the_model_is_not_retriable() -> None:
    closed = OPEN.to_in_recovery().to_closed(0, 10)
    (action,) = FAILING_METADATA_ACTIONS
    *_, before, close = path_to(CFG, action)
    target = Offline(Store(closed, version=before.state.meta_version + 1))
    try:
        with pytest.raises(TargetError, match="changed outside the model") as raised:
            _invoke(target, before, close)
    finally:
        target.close()
    assert raised.value.retriable is False


@pytest.mark.parametrize(
    ("failure", "retriable"),
    [(ZooKeeperTimeout("get: timed out"), True), (MalformedMetadata("not a protobuf"), False)],
)
def test_an_unreadable_final_state_is_retriable_only_for_an_outage(
    monkeypatch: pytest.MonkeyPatch, failure: MetadataError, retriable: bool
) -> None:
    with pytest.raises(TargetError, match="could not read the ledger's metadata") as raised:
        _snapshot(Store(read=failure), monkeypatch)
    assert raised.value.retriable is retriable and raised.value.cause is failure


def test_no_ledger_id_for_want_of_zookeeper_is_retriable() -> None:
    target = Offline(Store(allocate_ledger_id=ZooKeeperTimeout("create: timed out")))
    try:
        with pytest.raises(TargetError, match="could not allocate a ledger id") as raised:
            target.invoke(FreshLedger())
    finally:
        target.close()
    assert raised.value.retriable is True


class _Connection:
    """A bookie connection whose reads fail with ``failure``."""

    def __init__(self, failure: WireError) -> None:
        self.failure = failure

    async def read(self, *args: Any, **kwargs: Any) -> Any:
        await asyncio.sleep(0)
        raise self.failure

    async def close(self) -> None:
        await asyncio.sleep(0)


@pytest.mark.parametrize(
    ("failure", "retriable"),
    [(RequestTimeout("read entry 1: no answer"), True), (MalformedFrame("not a frame"), False)],
)
def test_a_bookie_request_is_retriable_for_a_timeout_not_for_a_malformed_answer(
    failure: WireError, retriable: bool
) -> None:
    target = Offline(Store())
    target._connections[(0, 0, 0)] = _Connection(failure)  # type: ignore[assignment]
    read = SimpleNamespace(cid=0, bookie=0, entry_id=1, fence=False)
    try:
        with pytest.raises(TargetError, match="bookie b1: ") as raised:
            target._run(target._deliver(read))  # type: ignore[arg-type]
    finally:
        target.close()
    assert raised.value.retriable is retriable and raised.value.cause is failure


class _Provider:
    """A cluster provider that fails the chosen calls; its bookie b1 listens nowhere."""

    def __init__(self, **fail: Exception) -> None:
        self.fail = fail

    def endpoints(self) -> Endpoints:
        return Endpoints(
            "127.0.0.1:1", "/ledgers", "zk://127.0.0.1:1/ledgers", {"b1": ("127.0.0.1", 1)}
        )

    def restart_with_data_loss(self, *args: Any) -> None:
        raise self.fail["restart_with_data_loss"]

    def stop(self) -> None:
        pass


def test_a_bookie_that_refuses_the_connection_is_retriable() -> None:
    target = Offline(Store())
    target.cluster = _Provider()  # type: ignore[assignment]
    read = SimpleNamespace(cid=0, bookie=0, entry_id=1, fence=False)
    try:
        with pytest.raises(TargetError, match="cannot connect to bookie b1") as raised:
            target._run(target._deliver(read))  # type: ignore[arg-type]
    finally:
        target.close()
    assert raised.value.retriable is True
    assert isinstance(raised.value.cause, (OSError, WireError))


@pytest.mark.parametrize(
    ("failure", "retriable"),
    [(ProcessExited("b1 exited (code 1)"), True), (FaultNotSupported("no data loss"), False)],
)
def test_a_failed_crash_is_retriable_as_its_cluster_error_says(
    failure: ClusterError, retriable: bool
) -> None:
    target = Offline(Store())
    target.cluster = _Provider(restart_with_data_loss=failure)  # type: ignore[assignment]
    try:
        with pytest.raises(TargetError, match="crash of bookie b1 failed") as raised:
            target.invoke(Crash(0))
    finally:
        target.close()
    assert raised.value.retriable is retriable


class _Unstartable(Offline):
    def __init__(self, failure: Exception) -> None:
        super().__init__(Store())
        self.failure = failure

    def _start_cluster(self, cfg: ModelConfig) -> ClusterProvider:
        raise self.failure


@pytest.mark.parametrize(
    ("failure", "retriable"),
    [
        (ClusterStartTimeout("bookie b1 did not register"), True),
        (ClusterError("ZooKeeper started but does not accept sessions"), True),
        (InvalidClusterOptions("zero ZooKeeper servers"), False),
        (UnsupportedConfiguration("limbo without fencing"), False),
    ],
)
def test_a_cluster_that_does_not_start_is_retriable_unless_it_never_could(
    failure: Exception, retriable: bool
) -> None:
    target = _Unstartable(failure)
    with pytest.raises(TargetError) as raised:
        target.open(CFG)
    assert raised.value.retriable is retriable


class _Agent:
    def __init__(self, failure: AgentError) -> None:
        self.failure = failure

    def status(self) -> None:
        raise self.failure

    def close(self) -> None:
        pass


@pytest.mark.parametrize(
    ("failure", "retriable"),
    [(AgentUnreachable("no answer within 5 s"), True), (AgentRefused("wrong token"), False)],
)
def test_an_agent_that_does_not_answer_is_retriable_one_that_refuses_is_not(
    failure: AgentError, retriable: bool
) -> None:
    target = ExternalTarget(
        "127.0.0.1:1",
        agents={"b1": _Agent(failure)},  # type: ignore[dict-item]
        destroy_data=True,
    )
    try:
        with pytest.raises(TargetError, match="the agent of bookie b1") as raised:
            target.open(ModelConfig(max_crashes=1))
    finally:
        target.close()
    assert raised.value.retriable is retriable
