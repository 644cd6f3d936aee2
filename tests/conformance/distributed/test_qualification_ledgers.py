"""A qualification on an external cluster sums what its shards did with their ledgers
(``results.json``'s ``ledgers``) and says it on the console."""

from __future__ import annotations

import json
from typing import Any

from conformance.commands.qualify import ledgers_text
from conformance.distributed.qualification import ledger_summary


def _row(shard: int, records: list[dict[str, Any]] | None) -> Any:
    return {"shard": shard, "ledger_records": json.dumps(records) if records is not None else None}


def test_no_shard_on_a_cluster_that_outlives_it_means_no_summary() -> None:
    assert ledger_summary([_row(0, None), _row(1, None)]) is None
    assert ledger_summary([]) is None


def test_the_shards_records_are_summed_and_the_kept_named_by_why() -> None:
    rows = [
        _row(0, [{"created": 3, "deleted": 3, "kept": [], "finding_ledgers": []}]),
        _row(
            1,
            [
                {"created": 2, "deleted": 1, "kept": [7], "kept_because": "finding",
                 "finding_ledgers": [7], "not_deleted": {}},
                {"created": 2, "deleted": 0, "error": "connection lost", "kept": []},
            ],
        ),
        _row(2, None),
        _row(3, [{"created": 4, "deleted": 1, "kept": [9, 8], "kept_because": "--keep-ledgers",
                  "not_deleted": {"5": "BadVersion"}}]),
    ]  # fmt: skip
    summary = ledger_summary(rows)
    assert summary == {
        "shards": 3,
        "attempts": 4,
        "created": 11,
        "deleted": 5,
        "kept": {"--keep-ledgers": [8, 9], "finding": [7]},
        "finding_ledgers": [7],
        "not_deleted": {"5": "BadVersion"},
        "errors": {"1": "connection lost"},
    }
    assert ledgers_text(summary) == (
        "Ledgers on the cluster: 11 created by 3 shards, 5 deleted; kept (--keep-ledgers): 8, 9; "
        "kept (finding): 7; 1 could not be deleted; shards 1 could not delete theirs "
        "(`bkconform cluster clean --zk ...` deletes what is left)"
    )


def test_a_clean_sweep_reads_as_one_short_line() -> None:
    summary = ledger_summary([_row(0, [{"created": 5, "deleted": 5, "kept": []}])])
    assert summary is not None
    assert ledgers_text(summary) == "Ledgers on the cluster: 5 created by 1 shard, 5 deleted"
