"""The Zab checkers: a correct history passes every one; each mutation is flagged by the
checker that owns it (and the report's validity turns False)."""

from __future__ import annotations

import dataclasses
import hashlib

from model.zab.checkers import CheckResult, check
from model.zab.history import Change, ClientOp, History, LeaderSample, ServerLog, Txn

E1, E2 = 1 << 32, 2 << 32


def txn(zxid: int, *changes: Change) -> Txn:
    digest = hashlib.sha1(repr((zxid, changes)).encode()).hexdigest()
    return Txn(zxid, digest, "multi" if len(changes) > 1 else changes[0].kind, 7, changes)


CREATE_A = txn(E1 | 1, Change("create", "/a", b"w0", 0))
SET_A1 = txn(E1 | 2, Change("set", "/a", b"w1", 1))
SET_A2 = txn(E2 | 1, Change("set", "/a", b"w3", 2))
CREATE_B = txn(E2 | 2, Change("create", "/b", b"w4", 0))
DELETE_B = txn(E2 | 3, Change("delete", "/b"))
LOG = (CREATE_A, SET_A1, SET_A2, CREATE_B, DELETE_B)


def op(index: int, process: int, kind: str, path: str, **kw: object) -> ClientOp:
    fields = {"outcome": "ok", "invoke_time": float(index), "complete_time": index + 0.5}
    fields.update(kw)
    return ClientOp(index, process, kind, path, **fields)  # type: ignore[arg-type]


OPS = (
    op(0, 0, "create", "/a", tag="w0", data=b"w0", zxid=E1 | 1),
    op(1, 0, "set", "/a", tag="w1", data=b"w1", expected_version=0, version=1, zxid=E1 | 2),
    op(2, 1, "read", "/a", value=b"w1", mzxid=E1 | 2),
    op(3, 1, "set", "/a", tag="w2", data=b"w2", expected_version=0, outcome="fail"),
    op(4, 1, "set", "/a", tag="w3", data=b"w3", expected_version=1, version=2, zxid=E2 | 1),
    op(5, 0, "read", "/a", value=b"w3", mzxid=E2 | 1),
    op(6, 2, "create", "/b", tag="w4", data=b"w4", zxid=E2 | 2),
    op(7, 2, "delete", "/b"),
    op(8, 2, "read", "/b", found=False),
    op(9, 0, "set", "/c", tag="w5", data=b"w5", outcome="unknown"),
)
LEADERS = (LeaderSample(1.0, "zk1", E1 | 1), LeaderSample(5.0, "zk2", E2))


def correct() -> History:
    servers = tuple(ServerLog(f"zk{i}", LOG) for i in (1, 2, 3))
    return History(servers, LEADERS, OPS)


def results(history: History) -> dict[str, CheckResult]:
    return {r.name: r for r in check(history).results}


def flagged(history: History) -> set[str]:
    return {name for name, r in results(history).items() if r.valid is False}


def anomalies(history: History, checker: str) -> list[str]:
    return [e["anomaly"] for e in results(history)[checker].evidence]


def test_correct_history_passes_every_checker() -> None:
    report = check(correct())
    assert report.valid is True
    assert {r.name: r.valid for r in report.results} == {r.name: True for r in report.results}
    assert len(report.results) == 12


def test_lost_acknowledged_write_is_flagged() -> None:
    lost = (*OPS, op(10, 2, "create", "/d", tag="w6", data=b"w6"))
    history = dataclasses.replace(correct(), ops=lost)
    assert flagged(history) == {"AcknowledgedWritesDurable"}
    assert anomalies(history, "AcknowledgedWritesDurable") == ["acknowledged-write-lost"]
    assert check(history).valid is False


def test_acknowledged_write_on_a_minority_only_is_flagged() -> None:
    servers = (
        ServerLog("zk1", LOG),
        ServerLog("zk2", LOG[:-1]),
        ServerLog("zk3", LOG[:-1]),
    )
    history = dataclasses.replace(correct(), servers=servers)
    assert "acknowledged-delete-lost" in anomalies(history, "AcknowledgedWritesDurable")


def test_reordered_commit_is_flagged() -> None:
    swapped = (SET_A1, CREATE_A, *LOG[2:])
    servers = (ServerLog("zk1", LOG), ServerLog("zk2", swapped), ServerLog("zk3", LOG))
    history = dataclasses.replace(correct(), servers=servers)
    assert "TotalOrder" in flagged(history)
    assert "out-of-order" in anomalies(history, "TotalOrder")


def test_reordered_epochs_are_flagged_by_global_primary_order() -> None:
    swapped = (CREATE_A, SET_A2, SET_A1, *LOG[3:])
    servers = (ServerLog("zk1", LOG), ServerLog("zk2", LOG), ServerLog("zk3", swapped))
    assert {"TotalOrder", "GlobalPrimaryOrder"} <= flagged(
        dataclasses.replace(correct(), servers=servers)
    )


def test_two_leaders_in_one_epoch_are_flagged() -> None:
    leaders = (*LEADERS, LeaderSample(6.0, "zk3", E2 | 2))
    history = dataclasses.replace(correct(), leaders=leaders)
    assert flagged(history) == {"Leadership"}
    assert results(history)["Leadership"].evidence[0]["leaders"] == ["zk2", "zk3"]


def test_same_zxid_different_transaction_is_flagged() -> None:
    other = txn(E1 | 2, Change("set", "/a", b"w2", 1))
    servers = (
        ServerLog("zk1", LOG),
        ServerLog("zk2", LOG),
        ServerLog("zk3", (CREATE_A, other, *LOG[2:])),
    )
    history = dataclasses.replace(correct(), servers=servers)
    assert "PrefixConsistency" in flagged(history)
    # The failed set w2 took effect on zk3.
    assert "failed-op-took-effect" in anomalies(history, "Integrity")


def test_server_missing_a_committed_txn_is_flagged() -> None:
    holey = (CREATE_A, *LOG[2:])
    servers = (ServerLog("zk1", LOG), ServerLog("zk2", LOG), ServerLog("zk3", holey))
    found = flagged(dataclasses.replace(correct(), servers=servers))
    assert "TotalOrder" in found


def test_diverged_servers_break_agreement() -> None:
    # zk1 and zk2 each delivered a committed txn the other lacks.
    servers = (
        ServerLog("zk1", (CREATE_A, SET_A1, SET_A2)),
        ServerLog("zk2", (CREATE_A, SET_A2, CREATE_B)),
        ServerLog("zk3", LOG),
    )
    assert "Agreement" in flagged(dataclasses.replace(correct(), servers=servers))


def test_gap_within_an_epoch_breaks_local_primary_order() -> None:
    log = (CREATE_A, SET_A1, SET_A2, DELETE_B)
    servers = tuple(ServerLog(f"zk{i}", log) for i in (1, 2, 3))
    history = dataclasses.replace(correct(), servers=servers)
    assert "LocalPrimaryOrder" in flagged(history)


def test_new_primary_missing_older_txn_breaks_primary_integrity() -> None:
    servers = (
        ServerLog("zk1", LOG),
        ServerLog("zk2", (CREATE_A, *LOG[2:])),
        ServerLog("zk3", LOG),
    )
    assert "PrimaryIntegrity" in flagged(dataclasses.replace(correct(), servers=servers))


def test_unrequested_change_breaks_integrity() -> None:
    stray = txn(E2 | 4, Change("create", "/x", b"w99", 0))
    servers = tuple(ServerLog(f"zk{i}", (*LOG, stray)) for i in (1, 2, 3))
    history = dataclasses.replace(correct(), servers=servers)
    assert anomalies(history, "Integrity") == ["unrequested-change"]


def test_two_sets_at_one_version_break_compare_and_set() -> None:
    double = txn(E1 | 2, Change("set", "/a", b"w1", 2))
    log = (CREATE_A, double, *LOG[2:])
    servers = tuple(ServerLog(f"zk{i}", log) for i in (1, 2, 3))
    found = anomalies(dataclasses.replace(correct(), servers=servers), "VersionsCompareAndSet")
    assert "version-skipped" in found
    assert "conditional-set-at-wrong-version" in found


def test_stale_read_after_newer_read_breaks_sequential_reads() -> None:
    ops = (*OPS, op(11, 0, "read", "/a", value=b"w1", mzxid=E1 | 2))
    history = dataclasses.replace(correct(), ops=ops)
    assert anomalies(history, "SequentialReads") == ["stale-read"]


def test_read_of_a_value_never_written_is_flagged() -> None:
    ops = (*OPS, op(11, 3, "read", "/a", value=b"bogus", mzxid=E1 | 2))
    history = dataclasses.replace(correct(), ops=ops)
    assert anomalies(history, "SequentialReads") == ["read-uncommitted-or-wrong-value"]


def test_own_write_not_read_breaks_session_order() -> None:
    ops = (*OPS, op(11, 1, "read", "/a", value=b"w1", mzxid=E1 | 2))
    history = dataclasses.replace(correct(), ops=ops)
    assert "own-write-not-read" in anomalies(history, "SessionOrder")


def test_snapshot_covered_prefix_counts_as_delivered() -> None:
    servers = (
        ServerLog("zk1", LOG),
        ServerLog("zk2", LOG),
        ServerLog("zk3", LOG[2:], snapshot_zxid=E1 | 2),
    )
    assert check(dataclasses.replace(correct(), servers=servers)).valid is True


def test_nothing_to_judge_is_unknown_not_valid() -> None:
    empty = History(tuple(ServerLog(f"zk{i}", ()) for i in (1, 2, 3)))
    assert check(empty).valid == "unknown"


def test_logged_changes_without_client_ops_are_unrequested() -> None:
    history = dataclasses.replace(correct(), ops=())
    assert "Integrity" in flagged(history)


def test_changes_outside_the_scope_are_not_judged_by_integrity() -> None:
    setup = txn(E1 | 9, Change("create", "/zab", b"", 0))
    servers = tuple(ServerLog(f"zk{i}", (*LOG, setup)) for i in (1, 2, 3))
    history = dataclasses.replace(correct(), servers=servers)
    assert "Integrity" in flagged(history)
    assert "Integrity" not in flagged(dataclasses.replace(history, scope="/a"))
