"""The diff and aggregates in plain Python, against an independent recount."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

from conformance.distributed.diff import aggregate, configuration_verdict, is_divergent
from conformance.distributed.store import read_dataset
from tests.conformance.distributed import rows


def recount(steps: list[dict[str, Any]]) -> dict[str, Counter[str]]:
    """The divergence rule written out again, field by field, without the diff module."""
    counts: dict[str, Counter[str]] = {
        "action": Counter(),
        "target": Counter(),
        "config": Counter(),
    }
    for row in steps:
        if row["predicted"] is None or row["observed"] is None:
            continue
        want, got = json.loads(row["predicted"]), json.loads(row["observed"])
        if "metadata" not in (want.get("kind"), got.get("kind")):  # a metadata status counts
            want.pop("status", None)
            got.pop("status", None)
        if want != got:
            counts["action"][row["action"]] += 1
            counts["target"][row["target"]] += 1
            counts["config"][row["configuration"]] += 1
    return counts


def test_a_divergence_is_a_difference_in_what_the_model_decides() -> None:
    assert not is_divergent(rows.ADD_OK, rows.ADD_OK)
    assert is_divergent(rows.ADD_FENCED, rows.ADD_OK)
    assert is_divergent(rows.FENCE_OK, rows.FENCE_LAC_1)
    # The wire's own word differs, the model's terms agree: not a divergence.
    assert not is_divergent(rows.READ_ABSENT, rows.READ_ABSENT_OTHER_WORDING)
    assert not is_divergent(None, rows.ADD_OK)
    # A metadata write's status is the model's word: only a lost compare-and-set matches.
    assert not is_divergent(rows.META_LOST_CAS, rows.META_LOST_CAS)
    assert is_divergent(rows.META_LOST_CAS, rows.META_NO_LEDGER)


def test_a_configuration_takes_its_worst_verdict() -> None:
    assert configuration_verdict(["clean", "violation", "divergence"]) == "violation"
    assert configuration_verdict(["clean", "error"]) == "undecided"
    assert configuration_verdict(["clean", "clean"]) == "clean"
    assert configuration_verdict([]) == "undecided"


def test_aggregates_match_a_plain_recount(tmp_path: Path) -> None:
    rows.write_sample_run(tmp_path)
    steps = read_dataset(tmp_path, "steps").to_pylist()
    result = aggregate(
        steps,
        read_dataset(tmp_path, "shards").to_pylist(),
        read_dataset(tmp_path, "findings").to_pylist(),
    )
    expected = recount(steps)
    assert {r["action"]: r["divergences"] for r in result["by_action"] if r["divergences"]} == (
        dict(expected["action"])
    )
    assert {r["target"]: r["divergences"] for r in result["by_target"]} == {
        "local": expected["target"]["local"],
        "external": expected["target"]["external"],
    }
    assert {r["configuration"]: r["divergences"] for r in result["by_configuration"]} == {
        "fenced-recovery": expected["config"]["fenced-recovery"],
        "no-limbo": expected["config"]["no-limbo"],
    }
    # Divergences: the add answered EOK where the model said EFENCED, the wrong LAC, and the
    # close that failed for another reason than the model's.
    assert sum(expected["action"].values()) == 3
    assert expected["action"]["ClientClosesLedgerFail"] == 1
    by_action = {r["action"]: r for r in result["by_action"]}
    assert by_action["BookieSendsFencingLacResponse"]["violations"] == 1
    assert by_action["ClientCreatesLedger"]["errors"] == 1
    assert sum(r["steps"] for r in result["by_action"]) == len(steps) == 8
    assert {(r["action"], r["response"]): r["count"] for r in result["responses"]} == {
        ("BookieSendsAddConfirmedResponse", "EOK"): 1,
        ("BookieSendsAddFencedResponse", "EOK"): 1,
        ("BookieSendsReadResponse", "ENOLEDGER"): 1,
        ("BookieSendsFencingLacResponse", "OK"): 1,
        ("ClientCreatesLedger", "OK"): 1,
        ("ClientClosesLedgerFail", "NoSuchLedger"): 1,
    }
    configs = {r["configuration"]: r for r in result["by_configuration"]}
    assert configs["fenced-recovery"]["verdict"] == "divergence"  # shards 0 and 2 (error)
    assert configs["fenced-recovery"]["errors"] == 1
    assert configs["no-limbo"]["verdict"] == "violation"
    assert {r["target"]: r["shards"] for r in result["by_target"]} == {"local": 2, "external": 2}


def test_findings_are_deduplicated_by_their_shrunk_trace(tmp_path: Path) -> None:
    rows.write_sample_run(tmp_path)
    result = aggregate([], [], read_dataset(tmp_path, "findings").to_pylist())
    unique = {f["trace_key"]: f for f in result["findings"]}
    assert set(unique) == {"k-divergence", "k-same"}
    assert unique["k-same"]["occurrences"] == 2
    assert unique["k-same"]["shards"] == [1, 3]
    assert unique["k-same"]["shard"] == 1  # details from the lowest shard
    assert unique["k-divergence"]["shards"] == [0]
