"""A Java-client run's :class:`~.story.RecoveryRecord` as JSON, and back.

The search keeps the record of every example that was not clean (``frames/example-N.json`` in
the run directory) and of its finding (``record.json``), so that a run can be judged again
offline (``judge(load_record(path))``): when the judge changes, or to turn a real run into a
regression test.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, TypeVar

from adapters.bookkeeper.status import StatusCode
from adapters.javaclient.pipelined_adds import AddOutcome
from adapters.netproxy import DeliveryRecord, Direction, FrameFlag, FrameRecord, Operation
from adapters.netproxy.frames import FrameInfo, Protocol
from conformance.errors import ConformanceError
from conformance.javaclient.metadata_writes import writes_from_json, writes_to_json
from conformance.javaclient.plans import WriterPlan
from conformance.javaclient.story import RecoveryRecord
from conformance.javaclient.writer_plans import WriterShape
from conformance.javaclient.writer_story import Takeover, WriterRecord
from conformance.live.faults import FaultEvent

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
        **({"lac": info.lac} if info.lac is not None else {}),
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
        # Recordings before the LAC was decoded have none.
        lac=data.get("lac"),
    )


def frames_to_json(frames: Sequence[FrameRecord]) -> list[dict[str, Any]]:
    return [
        {
            "id": f.frame_id,
            "proxy": f.proxy,
            "connection": f.connection_id,
            "at": f.at,
            "info": _info(f.info),
            "size": f.size,
            "decision": f.decision,
            "rule": f.rule_id,
            **({"forged_from": f.forged_from} if f.forged_from is not None else {}),
        }
        for f in frames
    ]


def deliveries_to_json(deliveries: Mapping[int, DeliveryRecord]) -> list[dict[str, Any]]:
    return [
        {"id": d.frame_id, "at": d.at, "delivered": d.delivered, "reason": d.reason}
        for d in deliveries.values()
    ]


def frames_from_json(data: Iterable[Mapping[str, Any]]) -> list[FrameRecord]:
    """The frame log back (KeyError, TypeError or ValueError if it is not one)."""
    return [
        FrameRecord(
            f["id"],
            f["proxy"],
            f["connection"],
            f["at"],
            _frame_info(f["info"]),
            f["size"],
            f["decision"],
            f["rule"],
            f.get("forged_from"),
        )
        for f in data
    ]


def deliveries_from_json(data: Iterable[Mapping[str, Any]]) -> dict[int, DeliveryRecord]:
    return {d["id"]: DeliveryRecord(d["id"], d["at"], d["delivered"], d["reason"]) for d in data}


def faults_to_json(faults: Sequence[FaultEvent]) -> dict[str, Any]:
    """A record's ``faults`` key: every fault the run injected and healed (none: no key, as
    the records written before faults were kept)."""
    return {"faults": [event.to_json() for event in faults]} if faults else {}


def faults_from_json(data: Mapping[str, Any]) -> tuple[FaultEvent, ...]:
    """A record's faults back (none in a record written before faults were kept)."""
    return tuple(FaultEvent.from_json(item) for item in data.get("faults", ()))


def record_to_json(record: RecoveryRecord) -> dict[str, Any]:
    return {
        "format": FORMAT,
        "ledger_id": record.ledger_id,
        "bookie_of_proxy": dict(record.bookie_of_proxy),
        "frames": frames_to_json(record.frames),
        "deliveries": deliveries_to_json(record.deliveries),
        "writer": record.writer.to_json(),
        "writer_answers": [
            [entry, bookie, status.name]
            for (entry, bookie), status in record.writer_answers.items()
        ],
        "closed_last_entry": record.closed_last_entry,
        "java_error": record.java_error,
        "recovered_at": record.recovered_at,
        **faults_to_json(record.faults),
        **writes_to_json(record.metadata_writes),
    }


def record_from_json(data: dict[str, Any]) -> RecoveryRecord:
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise RecordingError(f"not a recorded Java-client run (format {FORMAT})")
    try:
        frames = frames_from_json(data["frames"])
        deliveries = deliveries_from_json(data["deliveries"])
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
            faults=faults_from_json(data),
            metadata_writes=writes_from_json(data),
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


__all__ = [
    "RECOVERY_RECORDS",
    "WRITER_RECORDS",
    "RecordFormat",
    "RecordingError",
    "deliveries_from_json",
    "deliveries_to_json",
    "frames_from_json",
    "frames_to_json",
    "load_record",
    "record_from_json",
    "record_to_json",
    "save_record",
    "writer_record_from_json",
    "writer_record_to_json",
]


WRITER_FORMAT = "writer-1"


def writer_record_to_json(record: WriterRecord) -> dict[str, Any]:
    return {
        "format": WRITER_FORMAT,
        "ledger_id": record.ledger_id,
        "shape": record.shape.key(),
        "entries": record.entries,
        "bookie_of_proxy": dict(record.bookie_of_proxy),
        "frames": frames_to_json(record.frames),
        "deliveries": deliveries_to_json(record.deliveries),
        "outcomes": [[o.index, o.code, o.entry_id, o.at] for o in record.outcomes],
        "segments": [[first, list(bookies)] for first, bookies in record.segments],
        "closed_last_entry": record.closed_last_entry,
        "closed_at": record.closed_at,
        "close_error": record.close_error,
        "stored": [[entry, list(bookies)] for entry, bookies in sorted(record.stored.items())],
        **({"unreachable": list(record.unreachable)} if record.unreachable else {}),
        "add_timeout_s": record.add_timeout_s,
        "timeout_check_s": record.timeout_check_s,
        **(
            {"client_reads": [[e, r] for e, r in sorted(record.client_reads.items())]}
            if record.client_reads
            else {}
        ),
        **({"wiped": [[b, at] for b, at in sorted(record.wiped.items())]} if record.wiped else {}),
        **(
            {
                "stalled": [
                    [b, start, end]
                    for b, windows in sorted(record.stalled.items())
                    for start, end in windows
                ]
            }
            if record.stalled
            else {}
        ),
        **(
            {"resets": [[b, at] for b, ats in sorted(record.resets.items()) for at in ats]}
            if record.resets
            else {}
        ),
        **(
            {"restarts": [[b, at] for b, ats in sorted(record.restarts.items()) for at in ats]}
            if record.restarts
            else {}
        ),
        **(
            {"takeover": dataclasses.asdict(record.takeover)} if record.takeover is not None else {}
        ),
        **faults_to_json(record.faults),
        **writes_to_json(record.metadata_writes),
        # The other ledgers of the run: their own records, the frames (shared) left out.
        **(
            {"others": [_without_frames(writer_record_to_json(o)) for o in record.others]}
            if record.others
            else {}
        ),
    }


def _stall_windows(rows: Any) -> dict[int, tuple[tuple[float, float], ...]]:
    windows: dict[int, tuple[tuple[float, float], ...]] = {}
    for bookie, start, end in rows:
        windows[int(bookie)] = (*windows.get(int(bookie), ()), (float(start), float(end)))
    return windows


def _resets(rows: Any) -> dict[int, tuple[float, ...]]:
    """``[[bookie, at], ...]`` as bookie -> the moments, in order."""
    moments: dict[int, tuple[float, ...]] = {}
    for bookie, at in rows:
        moments[int(bookie)] = (*moments.get(int(bookie), ()), float(at))
    return moments


def _without_frames(data: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in data.items() if k not in ("frames", "deliveries")}


def writer_record_from_json(
    data: dict[str, Any], *, add_timeout_s: float = 1.0, timeout_check_s: float = 1.0
) -> WriterRecord:
    """A recorded writer run back; one recorded before its client's timeouts were takes
    ``add_timeout_s`` and ``timeout_check_s`` (its role's: :meth:`.WriterRole.record_from_json`)."""
    if not isinstance(data, dict) or data.get("format") != WRITER_FORMAT:
        raise RecordingError(f"not a recorded Java-client writer run (format {WRITER_FORMAT})")
    try:
        return WriterRecord(
            ledger_id=data["ledger_id"],
            shape=WriterShape.parse(data["shape"]),
            entries=data["entries"],
            bookie_of_proxy=data["bookie_of_proxy"],
            frames=frames_from_json(data["frames"]),
            deliveries=deliveries_from_json(data["deliveries"]),
            outcomes=[AddOutcome(i, code, entry, at) for i, code, entry, at in data["outcomes"]],
            segments=[(int(first), tuple(bookies)) for first, bookies in data["segments"]],
            closed_last_entry=data["closed_last_entry"],
            closed_at=data["closed_at"],
            close_error=data["close_error"],
            stored={int(entry): tuple(bookies) for entry, bookies in data["stored"]},
            unreachable=tuple(int(b) for b in data.get("unreachable", ())),
            add_timeout_s=float(data.get("add_timeout_s", add_timeout_s)),
            timeout_check_s=float(data.get("timeout_check_s", timeout_check_s)),
            client_reads={int(e): str(r) for e, r in data.get("client_reads", ())},
            wiped={int(b): float(at) for b, at in data.get("wiped", ())},
            stalled=_stall_windows(data.get("stalled", ())),
            resets=_resets(data.get("resets", ())),
            restarts=_resets(data.get("restarts", ())),
            takeover=_takeover(data.get("takeover")),
            faults=faults_from_json(data),
            metadata_writes=writes_from_json(data),
            others=tuple(
                writer_record_from_json(
                    {**other, "frames": data["frames"], "deliveries": data["deliveries"]},
                    add_timeout_s=add_timeout_s,
                    timeout_check_s=timeout_check_s,
                )
                for other in data.get("others", ())
            ),
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise RecordingError(f"not a recorded Java-client writer run: {exc!r}") from exc


def _takeover(data: Any) -> Takeover | None:
    if data is None:
        return None
    last = data["last_entry"]
    error = data.get("error")
    return Takeover(
        after_adds=int(data["after_adds"]),
        started_at=float(data["started_at"]),
        returned_at=float(data["returned_at"]),
        last_entry=None if last is None else int(last),
        error=None if error is None else str(error),
    )


R = TypeVar("R")


@dataclass(frozen=True)
class RecordFormat(Generic[R]):
    """How one role's records are written as JSON and read back."""

    to_json: Callable[[R], dict[str, Any]]
    from_json: Callable[[dict[str, Any]], R]


RECOVERY_RECORDS = RecordFormat(record_to_json, record_from_json)
WRITER_RECORDS = RecordFormat(writer_record_to_json, writer_record_from_json)
