"""The run directory: ``runs/<UTC time>-zab/`` with ``results.json`` (verdict, each checker's
result, configuration, seed, versions, history sizes, timings) and ``history.jsonl`` (every
client invoke and completion, leader sample, fault event and logged server transaction, one
JSON object a line, in time order where they have a time). The ensemble's own directories
(data, logs, configuration) stay beside them under ``cluster/``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from conformance.rundir import versions
from conformance.verdict import Verdict
from conformance.zab.runner import RunOutcome
from model.zab.history import ClientOp, History, zxid_hex


def verdict_name(valid: object) -> str:
    """A Zab run's valid? (its checkers' together) in the one vocabulary: clean, violation
    or undecided (``conformance.verdict``)."""
    return Verdict.of_validity(valid).value


def exit_code(valid: object) -> int:
    return Verdict.of_validity(valid).exit_code


def _text(data: bytes | None) -> str | None:
    return None if data is None else data.decode("utf-8", errors="backslashreplace")


def _op_rows(op: ClientOp) -> Iterator[dict[str, Any]]:
    common = {"process": op.process, "index": op.index, "f": op.kind, "path": op.path}
    invoke: dict[str, Any] = {"type": "invoke", "time": op.invoke_time, **common}
    if op.tag is not None:
        invoke["value"] = _text(op.data)
    if op.expected_version >= 0:
        invoke["expected_version"] = op.expected_version
    if op.sub_ops:
        invoke["sub_ops"] = [[k, p, _text(d), v] for k, p, d, v in op.sub_ops]
    yield invoke
    done: dict[str, Any] = {"type": op.outcome, "time": op.complete_time, **common}
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
    yield done


def history_rows(history: History, outcome: RunOutcome) -> list[dict[str, Any]]:
    timed: list[dict[str, Any]] = [row for op in history.ops for row in _op_rows(op)]
    timed += [
        {"type": "leader", "time": s.time, "server": s.server, "zxid": zxid_hex(s.zxid)}
        for s in history.leaders
    ]
    timed += [event.to_json() for event in outcome.fault_events]
    timed.sort(key=lambda row: float(row["time"]))
    logged = [
        {
            "type": "txn",
            "server": server.server,
            "zxid": zxid_hex(txn.zxid),
            "txn": txn.type_name,
            "session": f"0x{txn.session:x}",
            "digest": txn.digest,
            "changes": [[c.kind, c.path, _text(c.data), c.version] for c in txn.changes],
        }
        for server in history.servers
        for txn in server.txns
    ]
    return timed + logged


def write_run(run_dir: Path, outcome: RunOutcome, config: dict[str, Any]) -> None:
    rows = history_rows(outcome.history, outcome)
    with (run_dir / "history.jsonl").open("w") as out:
        for row in rows:
            out.write(json.dumps(row, sort_keys=True) + "\n")
    results = {
        "verdict": verdict_name(outcome.verdict.valid),
        "exit_code": exit_code(outcome.verdict.valid),
        "valid": outcome.verdict.valid,
        "checkers": outcome.verdict.to_json()["checkers"],
        "config": config,
        "seed": config.get("seed"),
        "versions": versions(zookeeper=outcome.zookeeper),
        "history": {**outcome.sizes(), "rows": len(rows)},
        "timings": outcome.timings,
        "notes": outcome.notes,
        "skipped": outcome.skipped,
    }
    (run_dir / "results.json").write_text(json.dumps(results, indent=2, sort_keys=True) + "\n")
