"""A Java-client run's :class:`~.story.RecoveryRecord` as JSON, and back.

The search keeps the record of every example that was not clean (``frames/example-N.json`` in
the run directory) and of its finding (``record.json``), so that a run can be judged again
offline (``judge(load_record(path))``): when the judge changes, or to turn a real run into a
regression test.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from adapters.bookkeeper.status import StatusCode
from adapters.netproxy import DeliveryRecord, Direction, FrameFlag, FrameRecord, Operation
from adapters.netproxy.frames import FrameInfo, Protocol
from conformance.errors import ConformanceError
from conformance.javaclient.plans import WriterPlan
from conformance.javaclient.story import RecoveryRecord

FORMAT = 1


class RecordingError(ConformanceError, ValueError):
    """A file that is not a recorded Java-client run."""


def _info(info: FrameInfo) -> dict[str, Any]:
    return {
        "direction": info.direction.value,
        "operation": info.operation.value,
        "protocol": None if info.protocol is None else info.protocol.value,
        "ledger": info.ledger_id,
        "entry": info.entry_id,
        "flags": sorted(flag.value for flag in info.flags),
        "txn": info.txn_id,
        "status": None if info.status is None else info.status.name,
        "error": info.error,
    }


def _frame_info(data: dict[str, Any]) -> FrameInfo:
    return FrameInfo(
        direction=Direction(data["direction"]),
        operation=Operation(data["operation"]),
        protocol=None if data["protocol"] is None else Protocol(data["protocol"]),
        ledger_id=data["ledger"],
        entry_id=data["entry"],
        flags=frozenset(FrameFlag(flag) for flag in data["flags"]),
        txn_id=data["txn"],
        status=None if data["status"] is None else StatusCode[data["status"]],
        error=data["error"],
    )


def record_to_json(record: RecoveryRecord) -> dict[str, Any]:
    return {
        "format": FORMAT,
        "ledger_id": record.ledger_id,
        "bookie_of_proxy": dict(record.bookie_of_proxy),
        "frames": [
            {
                "id": f.frame_id,
                "proxy": f.proxy,
                "connection": f.connection_id,
                "at": f.at,
                "info": _info(f.info),
                "size": f.size,
                "decision": f.decision,
                "rule": f.rule_id,
            }
            for f in record.frames
        ],
        "deliveries": [
            {"id": d.frame_id, "at": d.at, "delivered": d.delivered, "reason": d.reason}
            for d in record.deliveries.values()
        ],
        "writer": record.writer.to_json(),
        "writer_answers": [
            [entry, bookie, status.name]
            for (entry, bookie), status in record.writer_answers.items()
        ],
        "closed_last_entry": record.closed_last_entry,
        "java_error": record.java_error,
        "recovered_at": record.recovered_at,
    }


def record_from_json(data: dict[str, Any]) -> RecoveryRecord:
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise RecordingError(f"not a recorded Java-client run (format {FORMAT})")
    try:
        frames = [
            FrameRecord(
                f["id"],
                f["proxy"],
                f["connection"],
                f["at"],
                _frame_info(f["info"]),
                f["size"],
                f["decision"],
                f["rule"],
            )
            for f in data["frames"]
        ]
        deliveries = {
            d["id"]: DeliveryRecord(d["id"], d["at"], d["delivered"], d["reason"])
            for d in data["deliveries"]
        }
        return RecoveryRecord(
            ledger_id=data["ledger_id"],
            bookie_of_proxy=data["bookie_of_proxy"],
            frames=frames,
            deliveries=deliveries,
            writer=WriterPlan.from_json(data["writer"]),
            writer_answers={
                (int(entry), str(bookie)): StatusCode[status]
                for entry, bookie, status in data["writer_answers"]
            },
            closed_last_entry=data["closed_last_entry"],
            java_error=data["java_error"],
            recovered_at=data["recovered_at"],
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise RecordingError(f"not a recorded Java-client run: {exc!r}") from exc


def save_record(record: RecoveryRecord, path: Path) -> None:
    path.write_text(json.dumps(record_to_json(record)) + "\n")


def load_record(path: Path) -> RecoveryRecord:
    try:
        return record_from_json(json.loads(path.read_text()))
    except (OSError, json.JSONDecodeError) as exc:
        raise RecordingError(f"{path}: {exc}") from exc


__all__ = ["RecordingError", "load_record", "record_from_json", "record_to_json", "save_record"]
