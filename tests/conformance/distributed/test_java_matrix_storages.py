"""The Java-client matrix over ledger storages: a shard per storage, a row per (release,
ZooKeeper, storage), changes compared on the same storage, and the bookies' settings each
shard runs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from adapters.cluster.bookie_profiles import PULSAR, SUITE, LedgerStorage
from conformance.distributed.java_matrix import (
    JavaShard,
    MatrixError,
    matrix,
    plan_matrix,
    render_matrix_report,
)
from conformance.distributed.schema import RowStatus
from conformance.verdict import Verdict

RELEASES = {"4.17.3": Path("/a"), "4.18.0": Path("/b")}


def test_a_shard_per_storage_on_the_profile_asked() -> None:
    shards = plan_matrix(
        RELEASES,
        seeds_per_release=1,
        seed=3,
        seconds=10,
        ledger_storages=("sorted", "db"),
        settings_profile="pulsar",
    )
    assert [(s.version, s.ledger_storage, s.seed) for s in shards] == [
        ("4.17.3", "sorted", 3),
        ("4.17.3", "db", 3),
        ("4.18.0", "sorted", 3),
        ("4.18.0", "db", 3),
    ]
    settings = shards[0].bookie_settings()
    assert (settings.ledger_storage, settings.profile) == (LedgerStorage.SORTED, PULSAR)
    # None asked: the profile's storage (the suite's: sorted), as before storages existed.
    (plain,) = plan_matrix({"4.18.0": Path("/b")}, seeds_per_release=1, seed=0, seconds=1)
    assert (plain.ledger_storage, plain.settings_profile) == ("", "")
    assert plain.bookie_settings().ledger_storage is LedgerStorage.SORTED
    assert plain.bookie_settings().profile is SUITE
    assert plain.bookie_settings().standby_jvms  # a crash's restart takes a JVM booted ahead
    with pytest.raises(MatrixError, match="one of sorted, db"):
        plan_matrix(RELEASES, seeds_per_release=1, seed=0, seconds=1, ledger_storages=("lsm",))
    with pytest.raises(MatrixError, match="one of suite, bookkeeper, pulsar"):
        plan_matrix(RELEASES, seeds_per_release=1, seed=0, seconds=1, settings_profile="kafka")


def _row(shard: JavaShard, verdict: Verdict) -> dict[str, Any]:
    return {
        **shard.__dict__,
        "ledger_storage": shard.ledger_storage,
        "status": RowStatus.DONE,
        "verdict": verdict,
        "examples": 2,
        "system": "s",
    }


def test_a_row_per_storage_and_changes_along_the_same_storage() -> None:
    shards = plan_matrix(
        RELEASES, seeds_per_release=1, seed=0, seconds=1, ledger_storages=("sorted", "db")
    )
    # 4.18.0 breaks on db only.
    rows = [
        _row(
            s,
            Verdict.VIOLATION
            if (s.version, s.ledger_storage) == ("4.18.0", "db")
            else Verdict.CLEAN,
        )
        for s in shards
    ]
    cells = {(c["version"], c["ledger_storage"]): c for c in matrix(rows)}
    assert {k: c["verdict"] for k, c in cells.items()} == {
        ("4.17.3", "sorted"): Verdict.CLEAN,
        ("4.17.3", "db"): Verdict.CLEAN,
        ("4.18.0", "sorted"): Verdict.CLEAN,
        ("4.18.0", "db"): Verdict.VIOLATION,
    }
    assert cells[("4.18.0", "db")]["change"] == "regression"
    assert cells[("4.18.0", "sorted")]["change"] is None
    page = render_matrix_report(
        list(cells.values()), rows, master="none", elapsed=1.0, systems=["x"]
    )
    assert "<th>4.18.0<br>ledger storage db</th>" in page
    assert "<th>4.18.0<br>ledger storage sorted</th>" in page
    assert "<th>ledger storage</th>" in page
