"""The run directory: ``runs/<UTC time>-zab/``, written *as the run goes*, as a BookKeeper
run's is (``conformance/rundir.py``), so that a Zab run that dies midway (``kill -9``, the OOM
killer, a CI timeout) still leaves its history:

- ``results.json``, written when the run starts with ``"state": "running"``, an undecided
  verdict and what is known then (configuration, seed, versions, ``started``, and under
  ``process`` what tells a reader whether that process still runs); replaced atomically when
  the run ends by the final one: ``"state": "finished"``, the verdict (clean, violation or
  undecided), each checker's result, history sizes, timings, notes. A run stopped by an
  exception it did not handle ends ``"state": "interrupted"``, undecided;
- ``history.jsonl``, one JSON object a line, appended and flushed as each thing happens: every
  client invoke and completion, leader sample and fault event (in the order they were written,
  which is their time order up to the threads' races); then, once the servers are stopped and
  their logs read, every logged server transaction.

Readers take a Zab run directory as any other, through :func:`conformance.rundir.read_results`
and :func:`conformance.rundir.read_history`: a run whose ``results.json`` still says running but
whose process is gone reads ``"state": "died"`` and undecided.

The ensemble's own directories (data, logs, configuration) stay beside them under ``cluster/``.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any, Self

from adapters.process_records import describe_self
from conformance.live.faults import FaultEvent
from conformance.rundir import (
    FINISHED,
    HISTORY,
    RESULTS,
    RUNNING,
    RunDirectoryWriter,
    utc_now,
    versions,
    write_json_atomically,
)
from conformance.verdict import Verdict
from conformance.zab.quorum_trace import QuorumTraceReport
from conformance.zab.runner import RunOutcome
from model.zab.history import ClientOp, History, LeaderSample, zxid_hex

#: ``results.json``'s ``valid`` for an undecided run (Jepsen's ``:unknown``).
UNKNOWN = "unknown"


def verdict_name(valid: object) -> Verdict:
    """A checkers' valid? (True, False, "unknown") in the one vocabulary: clean, violation or
    undecided (``conformance.verdict``)."""
    return Verdict.of_validity(valid)


def exit_code(valid: object) -> int:
    return Verdict.of_validity(valid).exit_code


def jepsen_valid(verdict: Verdict) -> bool | str:
    """``results.json``'s ``valid``: the verdict's valid?, "unknown" for undecided."""
    return UNKNOWN if verdict.valid is None else verdict.valid


def _text(data: bytes | None) -> str | None:
    return None if data is None else data.decode("utf-8", errors="backslashreplace")


def _common(op: ClientOp) -> dict[str, Any]:
    return {"process": op.process, "index": op.index, "f": op.kind, "path": op.path}


def invoke_row(op: ClientOp) -> dict[str, Any]:
    """The line of ``op``'s invocation: only what is known before its answer."""
    invoke: dict[str, Any] = {"type": "invoke", "time": op.invoke_time, **_common(op)}
    if op.tag is not None:
        invoke["value"] = _text(op.data)
    if op.expected_version >= 0:
        invoke["expected_version"] = op.expected_version
    if op.sub_ops:
        invoke["sub_ops"] = [[k, p, _text(d), v] for k, p, d, v in op.sub_ops]
    return invoke


def completion_row(op: ClientOp) -> dict[str, Any]:
    """The line of ``op``'s completion: its outcome (the ``type``) and what came back."""
    done: dict[str, Any] = {"type": op.outcome, "time": op.complete_time, **_common(op)}
    done["session"] = f"0x{op.session:x}"
    if op.zxid is not None:
        done["zxid"] = zxid_hex(op.zxid)
    if op.version is not None:
        done["version"] = op.version
    if op.kind in ("read", "sync") and op.outcome == "ok":
        done["found"] = op.found
        done["value"] = _text(op.value)
        if op.mzxid is not None:
            done["mzxid"] = zxid_hex(op.mzxid)
    if op.error:
        done["error"] = op.error
    return done


def leader_row(sample: LeaderSample) -> dict[str, Any]:
    return {
        "type": "leader",
        "time": sample.time,
        "server": sample.server,
        "zxid": zxid_hex(sample.zxid),
    }


def txn_rows(history: History) -> Iterator[dict[str, Any]]:
    """Every logged transaction, server by server, in each server's log order."""
    for server in history.servers:
        for txn in server.txns:
            yield {
                "type": "txn",
                "server": server.server,
                "zxid": zxid_hex(txn.zxid),
                "txn": txn.type_name,
                "session": f"0x{txn.session:x}",
                "digest": txn.digest,
                "changes": [[c.kind, c.path, _text(c.data), c.version] for c in txn.changes],
            }


def timed_rows(outcome: RunOutcome) -> list[dict[str, Any]]:
    """A finished run's invokes, completions, leader samples and fault events, by time."""
    history = outcome.history
    timed = [row for op in history.ops for row in (invoke_row(op), completion_row(op))]
    timed += [leader_row(sample) for sample in history.leaders]
    timed += [event.to_json() for event in outcome.fault_events]
    timed.sort(key=lambda row: float(row["time"]))
    return timed


def history_rows(outcome: RunOutcome) -> list[dict[str, Any]]:
    """The whole ``history.jsonl`` of a finished run, as :func:`write_run` writes it."""
    return [*timed_rows(outcome), *txn_rows(outcome.history)]


class ZabRunWriter(RunDirectoryWriter):
    """Writes one Zab run directory as the run goes (see the module docstring)::

        with ZabRunWriter(path, config) as writer:
            writer.start()
            outcome = run_program(..., stream=writer)
            writer.finish(outcome)

    It is the runner's :class:`~conformance.zab.runner.HistoryStream`: its methods may be
    called from any thread, and each line is flushed as it is written. Leaving the ``with``
    block by an exception before :meth:`finish` ends the run ``interrupted`` (undecided); a
    process killed outright leaves ``running``, which readers see as died
    (:class:`~conformance.rundir.RunDirectoryWriter`).
    """

    def __init__(self, path: Path, config: dict[str, Any]) -> None:
        self.path = path
        self.config = dict(config)
        self.started = ""
        self.lines = 0
        self.state: str | None = None
        self._lock = threading.Lock()
        self._history: IO[str] | None = None

    # The run's results ---------------------------------------------------------------------

    def start(self) -> Self:
        """Write ``results.json`` as running (undecided) and open ``history.jsonl``."""
        self.started = utc_now()
        self._history = (self.path / HISTORY).open("w", encoding="utf-8")
        self.state = RUNNING
        self._write_results(Verdict.UNDECIDED, {"versions": versions()})
        return self

    def finish(self, outcome: RunOutcome) -> None:
        """Append the servers' logged transactions and write the final ``results.json``."""
        for row in txn_rows(outcome.history):
            self.append(row)
        self._close_history()
        self.state = FINISHED
        self._write_results(
            outcome.verdict,
            {
                "checkers": outcome.report.to_json()["checkers"],
                "quorum_trace": quorum_trace_json(outcome.quorum_trace),
                "versions": versions(zookeeper=outcome.zookeeper),
                "history": {**outcome.sizes(), "rows": self.lines},
                "timings": outcome.timings,
                "notes": outcome.notes,
                "skipped": outcome.skipped,
                "finished": utc_now(),
            },
        )

    def fail(self, error: str) -> None:
        """The run could not be carried out (ZooKeeper missing or not starting): it ends,
        undecided, saying why."""
        self._close_history()
        self.state = FINISHED
        self._write_undecided_results(error)

    # The history, as it happens (HistoryStream) --------------------------------------------

    def invoked(self, op: ClientOp) -> None:
        self.append(invoke_row(op))

    def completed(self, op: ClientOp) -> None:
        self.append(completion_row(op))

    def leader(self, sample: LeaderSample) -> None:
        self.append(leader_row(sample))

    def fault(self, event: FaultEvent) -> None:
        self.append(event.to_json())

    def append(self, row: dict[str, Any]) -> None:
        """One line of ``history.jsonl``, flushed at once (a kill loses no written line)."""
        line = json.dumps(row, sort_keys=True) + "\n"
        with self._lock:
            if self._history is None:
                raise RuntimeError("ZabRunWriter: start() first, and no lines after finish()")
            self._history.write(line)
            self._history.flush()
            self.lines += 1

    # Internals ----------------------------------------------------------------------------

    def _close_history(self) -> None:
        with self._lock:
            if self._history is not None:
                self._history.flush()
                os.fsync(self._history.fileno())
                self._history.close()
                self._history = None

    def _write_undecided_results(self, error: str) -> None:
        self._write_results(
            Verdict.UNDECIDED,
            {"error": error, "versions": versions(), "finished": utc_now()},
        )

    def _write_results(self, verdict: Verdict, more: dict[str, Any]) -> None:
        results = {
            "name": "zab",
            "state": self.state,
            "verdict": verdict,
            "exit_code": verdict.exit_code,
            "valid": jepsen_valid(verdict),
            "error": None,
            "config": self.config,
            "seed": self.config.get("seed"),
            "started": self.started,
            "process": describe_self(),
            **more,
        }
        write_json_atomically(self.path / RESULTS, results, sort_keys=True)


def write_run(run_dir: Path, outcome: RunOutcome, config: dict[str, Any]) -> None:
    """The whole run directory at once, for a run judged after the fact (its timed lines in
    time order). A command should rather start a :class:`ZabRunWriter` when its run starts
    and stream the run into it, so that a kill leaves the history up to then."""
    with ZabRunWriter(run_dir, config) as writer:
        writer.start()
        for row in timed_rows(outcome):
            writer.append(row)
        writer.finish(outcome)


def quorum_trace_json(trace: QuorumTraceReport | None) -> dict[str, object] | None:
    """The quorum traffic's validation as ``results.json`` keeps it (None: not asked)."""
    if trace is None:
        return None
    return {
        "verdict": str(trace.verdict),
        "packets": trace.packets,
        "outside_spec": trace.outside_spec,
        "connections": trace.connections,
        "syncs": trace.syncs,
        "proposals": trace.proposals,
        "commits": trace.commits,
        "quorum_checked": trace.quorum_checked,
        "divergences": trace.divergences[:20],
        "violations": trace.violations[:20],
        "note": trace.note,
    }
