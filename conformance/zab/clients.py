"""Clients that carry out a program's operations on kazoo sessions and record what happened.

Each client runs its operations one at a time on its own thread and session (ZooKeeper's
ordering guarantees are per session). Every request is bounded by ``op_timeout``. Outcomes:
``ok``; ``fail`` for ZooKeeper's definite refusals (no node, node exists, bad version, not
empty, a multi that rolled back), which change nothing; ``unknown`` for a write whose fate the
client cannot know (timeout, connection or session lost). A read or sync that gets no answer
changed nothing, so it is a ``fail``.

The :class:`Recorder` keeps every completed operation and, when given callbacks, hands each
invocation and completion on as it happens (the run directory streams them to disk).
"""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Callable
from typing import Any

from kazoo.exceptions import (
    BadVersionError,
    KazooException,
    NodeExistsError,
    NoNodeError,
    NotEmptyError,
    RolledBackError,
)

from adapters.zookeeper.client import connect_zookeeper, wait
from adapters.zookeeper.errors import MetadataError
from conformance.zab.program import PlannedOp
from model.zab.history import ClientOp, OpKind, Outcome

_DEFINITE = (NoNodeError, NodeExistsError, BadVersionError, NotEmptyError, RolledBackError)


OpCallback = Callable[[ClientOp], None]


class Recorder:
    """The client operations of a run, appended from many threads. ``on_invoke`` gets each
    operation as it is invoked (its outcome still unknown), ``on_complete`` as it completes;
    both are called on the client's thread."""

    def __init__(
        self, *, on_invoke: OpCallback | None = None, on_complete: OpCallback | None = None
    ) -> None:
        self._lock = threading.Lock()
        self.ops: list[ClientOp] = []
        self._on_invoke = on_invoke
        self._on_complete = on_complete

    def invoked(self, op: ClientOp) -> None:
        if self._on_invoke is not None:
            self._on_invoke(op)

    def record(self, op: ClientOp) -> None:
        with self._lock:
            self.ops.append(op)
        if self._on_complete is not None:
            self._on_complete(op)

    @property
    def completed(self) -> int:
        with self._lock:
            return len(self.ops)

    def snapshot(self) -> list[ClientOp]:
        with self._lock:
            return sorted(self.ops, key=lambda o: o.invoke_time)


class Client:
    """One session and the versions it has seen (for conditional writes)."""

    def __init__(self, process: int, connect_string: str, op_timeout: float) -> None:
        self.process = process
        self.op_timeout = op_timeout
        self.zk = connect_zookeeper(connect_string, timeout=30.0, session_timeout=10.0)
        self.versions: dict[str, int] = {}

    def close(self) -> None:
        try:
            self.zk.stop()
        finally:
            self.zk.close()

    def session(self) -> int:
        client_id = self.zk.client_id
        return int(client_id[0]) if client_id else 0

    def _wait(self, result: Any, what: str) -> Any:
        return wait(result, timeout=self.op_timeout, operation=what)

    def execute(self, op: PlannedOp, on_invoke: OpCallback | None = None) -> ClientOp:
        """Run one operation and describe what the client observed. ``on_invoke`` is told of
        the operation as invoked, before the request goes out: what is known then, with the
        outcome ``unknown``."""
        invoked = time.monotonic()
        kind: OpKind = op.kind
        expected = self.versions.get(op.path, -1) if op.conditional else -1
        base: dict[str, Any] = {}
        if op.kind in ("set", "delete"):
            base["expected_version"] = expected
        if op.kind in ("create", "set", "multi"):
            base.update(tag=op.tag, data=op.tag.encode())
        if op.kind == "multi":
            base["sub_ops"] = self._multi_plan(op)
        pending = ClientOp(
            index=op.index,
            process=self.process,
            kind=kind,
            path=op.path,
            outcome="unknown",
            invoke_time=invoked,
            complete_time=invoked,
            session=self.session(),
            **base,
        )
        if on_invoke is not None:
            on_invoke(pending)
        outcome: Outcome
        fields: dict[str, Any]
        try:
            outcome, fields = self._perform(op, expected)
        except _DEFINITE as exc:
            outcome, fields = "fail", {"error": type(exc).__name__}
            if isinstance(exc, BadVersionError):
                self.versions.pop(op.path, None)
        except (MetadataError, KazooException) as exc:
            outcome = "unknown" if op.kind in ("create", "set", "delete", "multi") else "fail"
            fields = {"error": f"{type(exc).__name__}: {exc}"[:200]}
        return dataclasses.replace(
            pending,
            outcome=outcome,
            complete_time=time.monotonic(),
            session=self.session(),
            **fields,
        )

    def _perform(self, op: PlannedOp, expected: int) -> tuple[Outcome, dict[str, Any]]:
        data = op.tag.encode()
        zk = self.zk
        if op.kind == "create":
            _path, stat = self._wait(
                zk.create_async(op.path, data, include_data=True), f"create {op.path}"
            )
            self.versions[op.path] = stat.version
            return "ok", {"zxid": stat.czxid, "version": 0}
        if op.kind == "set":
            stat = self._wait(zk.set_async(op.path, data, expected), f"set {op.path}")
            self.versions[op.path] = stat.version
            return "ok", {"zxid": stat.mzxid, "version": stat.version}
        if op.kind == "delete":
            self._wait(zk.delete_async(op.path, expected), f"delete {op.path}")
            self.versions.pop(op.path, None)
            return "ok", {}
        if op.kind == "multi":
            return self._multi(op)
        if op.kind == "sync":
            self._wait(zk.sync_async(op.path), f"sync {op.path}")
        try:
            value, stat = self._wait(zk.get_async(op.path), f"get {op.path}")
        except NoNodeError:
            self.versions.pop(op.path, None)
            return "ok", {"found": False}
        self.versions[op.path] = stat.version
        return "ok", {"value": value, "mzxid": stat.mzxid, "version": stat.version}

    def _multi_plan(self, op: PlannedOp) -> tuple[tuple[str, str, bytes | None, int], ...]:
        data = op.tag.encode()
        if op.key2 == op.key:
            # check-and-set: the version check and the write commit together or not at all.
            expected = self.versions.get(op.path, 0)
            return (("check", op.path, None, expected), ("set", op.path, data, -1))
        return (("create", op.path, data, -1), ("delete", op.path2, None, -1))

    def _multi(self, op: PlannedOp) -> tuple[Outcome, dict[str, Any]]:
        plan = self._multi_plan(op)
        transaction = self.zk.transaction()
        for kind, path, data, version in plan:
            if kind == "check":
                transaction.check(path, version)
            elif kind == "set":
                transaction.set_data(path, data)
            elif kind == "create":
                transaction.create(path, data)
            else:
                transaction.delete(path)
        results = self._wait(transaction.commit_async(), f"multi {op.path}")
        errors = [r for r in results if isinstance(r, Exception)]
        if errors:
            self.versions.pop(op.path, None)
            first = next((e for e in errors if not isinstance(e, RolledBackError)), errors[0])
            return "fail", {"error": type(first).__name__}
        if plan[0][0] == "check":
            self.versions[op.path] = results[1].version
        else:
            self.versions[op.path] = 0
            self.versions.pop(op.path2, None)
        return "ok", {}


def run_client(
    client: Client,
    ops: list[PlannedOp],
    recorder: Recorder,
    stop: threading.Event,
    on_error: Callable[[BaseException], None],
    interval: float = 0.0,
) -> None:
    """A client thread's body: every op in order, at most one per ``interval`` seconds,
    until done or stopped."""
    try:
        next_start = time.monotonic()
        for op in ops:
            if stop.is_set():
                return
            if interval > 0:
                # Paced, so that the fault schedule overlaps the workload.
                delay = next_start - time.monotonic()
                if delay > 0 and stop.wait(delay):
                    return
                next_start = max(next_start + interval, time.monotonic() - interval)
            recorder.record(client.execute(op, recorder.invoked))
    except BaseException as exc:  # reported to the runner, which decides the verdict
        on_error(exc)
