"""Reference bookies in this process, for fast tests of what runs on the wire (races above all).

:class:`InProcessReferenceTarget` is the cluster target's wire path (its connections, its
races, its observer reads) against reference bookies (the test double,
:mod:`adapters.refbookie`) served on the target's own event loop, with the model target's
metadata register in place of ZooKeeper: no JVM, no process, a few milliseconds a step. A
bookie serves requests only while the target awaits an answer, which is when they are in
flight. It cannot crash bookies (no configuration with crashes).
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from adapters.cluster.provider import Endpoints
from adapters.refbookie.server import BookieServer
from conformance.observations import Observation
from conformance.operations import CreateLedger, FreshLedger, Operation, WriteMetadata
from conformance.targets.base import TargetSnapshot, UnsupportedConfiguration
from conformance.targets.cluster_target import ClusterTarget
from conformance.targets.model_target import ModelTarget
from model.bookkeeper.config import ModelConfig
from tests.adapters.refbookie.harness import make_server


class _Bookies:
    """The in-process bookies, as much of a cluster provider as the target uses."""

    def __init__(self, target: InProcessReferenceTarget, servers: list[BookieServer]) -> None:
        self._target = target
        self.servers = servers

    def endpoints(self) -> Endpoints:
        return Endpoints(
            zookeeper_connect="",
            ledgers_root="/ledgers",
            metadata_service_uri="",
            bookies={f"b{i + 1}": ("127.0.0.1", s.port) for i, s in enumerate(self.servers)},
        )

    def stop(self) -> None:
        for server in self.servers:
            self._target._run_quietly(server.stop())
        self.servers = []


class InProcessReferenceTarget(ClusterTarget):
    name = "inprocess-reference"

    def __init__(self, *, faulty_mode: str = "none", request_timeout: float = 5.0) -> None:
        super().__init__(request_timeout=request_timeout)
        self.faulty_mode = faulty_mode
        self._metadata = ModelTarget()
        self._dir: tempfile.TemporaryDirectory[str] | None = None
        self._next_ledger = 1

    def _start_cluster(self, cfg: ModelConfig) -> Any:
        raise AssertionError("open() starts the bookies itself")

    def _zookeeper_client(self) -> Any:
        raise AssertionError("no ZooKeeper: the metadata is the model target's register")

    def open(self, cfg: ModelConfig) -> None:
        if cfg.max_crashes:
            raise UnsupportedConfiguration("in-process reference bookies cannot crash")
        self._cfg = cfg
        self._dir = tempfile.TemporaryDirectory(prefix="bkconform-inprocess-")
        servers = []
        for i in range(cfg.bookies):
            server = make_server(
                Path(self._dir.name) / f"b{i + 1}",
                # No fsync: nothing here survives a crash anyway, and it is the time a step takes.
                journalSyncData="false",
                **{"refbookie.faultyMode": self.faulty_mode},
            )
            self._run(server.start())
            servers.append(server)
        self.cluster = _Bookies(self, servers)  # type: ignore[assignment]
        self.bookie_ids = [f"b{i + 1}" for i in range(cfg.bookies)]
        self._metadata.open(cfg)
        self.ledger_id = self._next_ledger

    def invoke(self, op: Operation) -> Observation:
        if isinstance(op, FreshLedger):
            self._next_ledger += 1
            self.ledger_id = self._next_ledger
            self._metadata.invoke(op)
            return Observation("ledger", "OK", success=True, ledger=self.ledger_id)
        if isinstance(op, (CreateLedger, WriteMetadata)):
            return self._metadata.invoke(op)
        return super().invoke(op)

    def snapshot(self, cfg: ModelConfig) -> TargetSnapshot:
        metadata = self._metadata.snapshot(cfg)
        entries = {b: self._run(self._entries_held(b, cfg.send_limit)) for b in range(cfg.bookies)}
        return TargetSnapshot(
            entries, metadata.meta_status, metadata.meta_last_entry, metadata.meta_fragments
        )

    def close(self) -> None:
        super().close()
        if self._dir is not None:
            self._dir.cleanup()
            self._dir = None

    def system_under_test(self) -> Any:
        return self._metadata.system_under_test()
