"""Hand-made result rows for the diff tests: divergent and agreeing steps, errors, findings.

Typed as the code makes them (verdicts and statuses as enums); ``write_part`` stores them as
words."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from conformance.distributed.schema import RowStatus
from conformance.distributed.store import write_part
from conformance.verdict import Verdict


def observation(**fields: Any) -> str:
    return json.dumps(fields, sort_keys=True)


def step(shard: int, number: int, action: str, **fields: Any) -> dict[str, Any]:
    row: dict[str, Any] = {
        "shard": shard,
        "configuration": "fenced-recovery" if shard % 2 == 0 else "no-limbo",
        "target": "local" if shard < 2 else "external",
        "example": 0,
        "phase": "hypothesis",
        "step": number,
        "action": action,
        "description": f"{action} #{number}",
        "request": None,
        "predicted": None,
        "observed": None,
        "response": None,
        "engine_divergence": [],
        "violations": [],
        "error": None,
    }
    row.update(fields)
    return row


def shard_row(
    shard: int, verdict: Verdict, status: RowStatus = RowStatus.DONE, findings: int = 0
) -> dict[str, Any]:
    return {
        "shard": shard,
        "configuration": "fenced-recovery" if shard % 2 == 0 else "no-limbo",
        "config_summary": f"summary {shard % 2}",
        "target": "local" if shard < 2 else "external",
        "seed": shard,
        "max_examples": 1,
        "max_steps": 1,
        "time_budget": 1.0,
        "explore": False,
        "status": status,
        "verdict": verdict,
        "findings": findings,
        "examples": 1,
        "steps": 3,
        "explorer_steps": 0,
        "target_steps": 3,
        "elapsed": 1.0,
        "wall": 1.5,
        "steps_per_second": 3.0,
        "time_to_first_finding": 0.5 if findings else None,
        "attempts": 1 if status is RowStatus.DONE else 2,
        "error": None if status is RowStatus.DONE else "InjectedCrash: boom",
        "error_retriable": None if status is RowStatus.DONE else True,
        "log": "log\n",
        "ledgers": [shard],
        "ledger_records": None,
        "restarts": 0,
        "restart_seconds": 0.0,
        "bookies_own": None,
        "versions": "{}",
        "target_description": "{}",
        "bookies": "model (no bookies)",
        "client": "model client (bkconform)",
        "zookeeper": "model (no ZooKeeper)",
        "bookie_settings": None,
        "ledger_storage": None,
        "settings_profile": None,
        "worker": "here:1",
        "finished_at": "2026-01-01T00:00:00Z",
    }


def finding_row(shard: int, key: str) -> dict[str, Any]:
    return {
        "shard": shard,
        "configuration": "fenced-recovery" if shard % 2 == 0 else "no-limbo",
        "target": "local" if shard < 2 else "external",
        "seed": shard,
        "verdict": Verdict.VIOLATION,
        "violations": ["NoDivergenceBetweenClientAndMetaData"],
        "divergences": [],
        "found_by": "explorer",
        "found_after": 2.0 + shard,
        "found_steps": 30,
        "shrunk_steps": 12,
        "trace_key": key,
        "trace_text": "1. ...",
        "sequence_text": "title x",
        "sequence_svg": "<svg></svg>",
        "blob": f"blob{shard}",
    }


ADD_OK = observation(kind="add", status="EOK", success=True)
ADD_FENCED = observation(kind="add", status="EFENCED", success=False)
READ_ABSENT = observation(kind="read", status="ENOENTRY", code="NoSuchEntry")
READ_ABSENT_OTHER_WORDING = observation(kind="read", status="ENOLEDGER", code="NoSuchEntry")
FENCE_OK = observation(kind="fence", status="OK", code="OK", lac=0)
FENCE_LAC_1 = observation(kind="fence", status="OK", code="OK", lac=1)
META_OK = observation(kind="metadata", status="OK", success=True)
META_LOST_CAS = observation(kind="metadata", status="MetadataVersionMismatch", success=False)
META_NO_LEDGER = observation(kind="metadata", status="NoSuchLedger", success=False)


def write_sample_run(run_dir: Path) -> None:
    """Four shards on two targets and two configurations, with divergent steps among them."""
    steps = {
        0: [
            step(
                0,
                1,
                "BookieSendsAddConfirmedResponse",
                predicted=ADD_OK,
                observed=ADD_OK,
                response="EOK",
            ),
            step(
                0,
                2,
                "BookieSendsAddFencedResponse",
                predicted=ADD_FENCED,
                observed=ADD_OK,
                response="EOK",
                engine_divergence=["success: predicted False, observed True"],
            ),
            step(0, 3, "ClientSendsAddEntryRequests"),
        ],
        1: [
            step(
                1,
                1,
                "BookieSendsReadResponse",
                predicted=READ_ABSENT,
                observed=READ_ABSENT_OTHER_WORDING,
                response="ENOLEDGER",
            ),
            step(
                1,
                2,
                "BookieSendsFencingLacResponse",
                predicted=FENCE_OK,
                observed=FENCE_LAC_1,
                response="OK",
                violations=["NoDivergenceBetweenClientAndMetaData"],
            ),
        ],
        2: [step(2, 1, "ClientCreatesLedger", error="connection refused")],
        3: [
            step(3, 1, "ClientCreatesLedger", predicted=META_OK, observed=META_OK, response="OK"),
            # The close was to fail, and failed, but not for the model's reason: divergent.
            step(
                3,
                2,
                "ClientClosesLedgerFail",
                predicted=META_LOST_CAS,
                observed=META_NO_LEDGER,
                response="NoSuchLedger",
            ),
        ],
    }
    for shard, rows in steps.items():
        write_part(run_dir, "steps", shard, rows)
    write_part(run_dir, "shards", 0, [shard_row(0, Verdict.DIVERGENCE, findings=1)])
    write_part(run_dir, "shards", 1, [shard_row(1, Verdict.VIOLATION, findings=1)])
    write_part(run_dir, "shards", 2, [shard_row(2, Verdict.UNDECIDED, status=RowStatus.ERROR)])
    write_part(run_dir, "shards", 3, [shard_row(3, Verdict.VIOLATION, findings=1)])
    write_part(run_dir, "findings", 0, [finding_row(0, "k-divergence")])
    write_part(run_dir, "findings", 1, [finding_row(1, "k-same")])
    write_part(run_dir, "findings", 2, [])
    write_part(run_dir, "findings", 3, [finding_row(3, "k-same")])
