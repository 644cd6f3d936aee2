"""The Zab checkers one at a time, on small hand-built histories: the exact verdict, the count
of what was judged and the evidence each reports, and the boundaries of their comparisons
(quorum size, snapshot cover, equal zxids, the evidence cap)."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import Any

from model.zab.checkers import (
    MAX_EVIDENCE,
    CheckResult,
    Index,
    agreement,
    check,
    compare_and_set,
    durability,
    global_primary_order,
    integrity,
    leadership,
    local_primary_order,
    prefix_consistency,
    primary_integrity,
    sequential_reads,
    session_order,
    tag_of,
    total_order,
)
from model.zab.history import Change, ClientOp, History, LeaderSample, ServerLog, Txn

E1, E2 = 1 << 32, 2 << 32


def txn(zxid: int, *changes: Change) -> Txn:
    kind = "multi" if len(changes) > 1 else changes[0].kind
    digest = hashlib.sha1(repr((zxid, changes)).encode()).hexdigest()
    return Txn(zxid, digest, kind, 7, changes)


def create(zxid: int, path: str, data: bytes | None = None) -> Txn:
    return txn(zxid, Change("create", path, data, 0))


def set_(zxid: int, path: str, version: int, data: bytes | None = None) -> Txn:
    return txn(zxid, Change("set", path, data, version))


def delete(zxid: int, path: str) -> Txn:
    return txn(zxid, Change("delete", path))


def servers(*logs: tuple[Txn, ...]) -> tuple[ServerLog, ...]:
    return tuple(ServerLog(f"zk{i}", log) for i, log in enumerate(logs, start=1))


def everywhere(*log: Txn) -> tuple[ServerLog, ...]:
    """Three servers that all delivered ``log``."""
    return servers(log, log, log)


def op(index: int, process: int, kind: str, path: str, **kw: Any) -> ClientOp:
    fields: dict[str, Any] = {
        "outcome": "ok",
        "invoke_time": float(index),
        "complete_time": index + 0.5,
    }
    fields.update(kw)
    return ClientOp(index, process, kind, path, **fields)  # type: ignore[arg-type]


def history(
    logs: tuple[ServerLog, ...],
    *ops: ClientOp,
    leaders: tuple[LeaderSample, ...] = (),
    scope: str = "/",
) -> History:
    return History(logs, leaders, ops, scope=scope)


def judged(checker: Callable[[Index], CheckResult], observed: History) -> CheckResult:
    return checker(Index(observed))


# Results and the report --------------------------------------------------------------------


def test_check_result_to_json_carries_validity_counts_and_evidence() -> None:
    evidence = ({"anomaly": "a", "zxid": "0x1"}, {"anomaly": "b"})
    result = CheckResult("X", False, 3, 2, evidence)
    assert result.to_json() == {
        "valid": False,
        "checked": 3,
        "anomalies": 2,
        "evidence": [{"anomaly": "a", "zxid": "0x1"}, {"anomaly": "b"}],
    }


def test_check_report_to_json_names_every_checker_and_the_overall_validity() -> None:
    observed = history(
        everywhere(create(E1 | 1, "/a", b"w1")),
        op(0, 0, "create", "/a", tag="w1", data=b"w1", zxid=E1 | 1),
    )
    data = check(observed).to_json()
    assert data["valid"] is True
    assert len(data["checkers"]) == 12
    assert data["checkers"]["Leadership"] == {
        "valid": "unknown",
        "checked": 0,
        "anomalies": 0,
        "evidence": [],
    }
    assert data["checkers"]["AcknowledgedWritesDurable"] == {
        "valid": True,
        "checked": 1,
        "anomalies": 0,
        "evidence": [],
    }


def test_evidence_is_capped_but_every_anomaly_is_counted() -> None:
    leaders = tuple(
        LeaderSample(float(epoch), server, epoch << 32)
        for epoch in range(1, MAX_EVIDENCE + 2)
        for server in ("zk1", "zk2")
    )
    result = judged(leadership, history(everywhere(), leaders=leaders))
    assert result.valid is False
    assert result.checked == 2 * (MAX_EVIDENCE + 1)
    assert result.anomalies == MAX_EVIDENCE + 1
    assert len(result.evidence) == MAX_EVIDENCE
    assert result.evidence[-1] == {
        "anomaly": "two-leaders-one-epoch",
        "epoch": MAX_EVIDENCE,
        "leaders": ["zk1", "zk2"],
    }


def test_no_servers_at_all_is_unknown_for_local_primary_order() -> None:
    assert judged(local_primary_order, History(())) == CheckResult(
        "LocalPrimaryOrder", "unknown", 0
    )


# Index and tags ----------------------------------------------------------------------------


def test_tag_is_the_data_before_the_first_separator() -> None:
    assert tag_of(b"w7") == "w7"
    assert tag_of(b"w12|payload") == "w12"
    assert tag_of(b"w3|x|y") == "w3"


def test_data_that_does_not_start_with_a_write_tag_has_no_tag() -> None:
    for data in (None, b"", b"hello", b"wx", b"12", b"w", b"\xff|w1"):
        assert tag_of(data) is None, data


def test_a_txn_on_exactly_a_quorum_is_committed() -> None:
    index = Index(history(servers((create(E1 | 1, "/a"),), (create(E1 | 1, "/a"),), ())))
    assert index.committed == [E1 | 1]


def test_an_acknowledged_write_on_a_minority_counts_as_committed() -> None:
    logs = servers((create(E1 | 1, "/a", b"w1"),), (), ())
    acked = history(logs, op(0, 0, "create", "/a", tag="w1", data=b"w1"))
    assert Index(acked).committed == [E1 | 1]


def test_a_write_of_unknown_outcome_on_a_minority_is_not_committed() -> None:
    logs = servers((create(E1 | 1, "/a", b"w1"),), (), ())
    maybe = history(logs, op(0, 0, "create", "/a", tag="w1", data=b"w1", outcome="unknown"))
    assert Index(maybe).committed == []


def test_check_changes_are_not_znode_events() -> None:
    multi = txn(E1 | 1, Change("check", "/a", None, 0), Change("create", "/b", b"w1", 0))
    index = Index(history(everywhere(multi)))
    assert dict(index.path_events) == {"/b": [(E1 | 1, multi.changes[1])]}


# Server-side checkers ----------------------------------------------------------------------


def test_leadership_reports_the_epoch_and_its_leaders_sorted() -> None:
    leaders = (
        LeaderSample(1.0, "zk1", E1 | 1),
        LeaderSample(2.0, "zk3", E2),
        LeaderSample(3.0, "zk2", E2 | 5),
    )
    assert judged(leadership, history(everywhere(), leaders=leaders)) == CheckResult(
        "Leadership",
        False,
        3,
        1,
        ({"anomaly": "two-leaders-one-epoch", "epoch": 2, "leaders": ["zk2", "zk3"]},),
    )


def test_prefix_consistency_names_the_server_that_disagrees_and_the_first_digest() -> None:
    first, second, other = create(E1 | 1, "/a"), set_(E1 | 2, "/a", 1), set_(E1 | 2, "/b", 1)
    logs = servers((first, second), (first, other), (first, second))
    assert judged(prefix_consistency, history(logs)) == CheckResult(
        "PrefixConsistency",
        False,
        6,
        1,
        (
            {
                "anomaly": "different-txn-same-zxid",
                "zxid": "0x100000002",
                "server": "zk2",
                "other_digest": second.digest,
            },
        ),
    )


def test_integrity_skips_check_changes_and_changes_outside_the_scope() -> None:
    multi = txn(
        E1 | 1,
        Change("create", "/setup", b"", 0),
        Change("check", "/w/a", None, 0),
        Change("create", "/w/b", b"w1", 0),
    )
    observed = history(everywhere(multi), op(0, 0, "multi", "/w", tag="w1", data=b"w1"), scope="/w")
    assert judged(integrity, observed) == CheckResult("Integrity", True, 1)


def test_integrity_reports_an_unrequested_change_after_a_requested_delete() -> None:
    multi = txn(E1 | 2, Change("delete", "/a"), Change("create", "/b", b"w9", 0))
    observed = history(everywhere(multi), op(0, 0, "delete", "/a"))
    assert judged(integrity, observed) == CheckResult(
        "Integrity",
        False,
        2,
        1,
        ({"anomaly": "unrequested-change", "zxid": "0x100000002", "path": "/b", "kind": "create"},),
    )


def test_integrity_reports_an_unrequested_delete_with_its_zxid_and_path() -> None:
    assert judged(integrity, history(everywhere(delete(E1 | 3, "/a")))) == CheckResult(
        "Integrity",
        False,
        1,
        1,
        ({"anomaly": "unrequested-delete", "zxid": "0x100000003", "path": "/a"},),
    )


def test_integrity_reports_the_failed_op_that_took_effect_and_its_error() -> None:
    observed = history(
        everywhere(set_(E1 | 2, "/a", 1, b"w4")),
        op(4, 0, "set", "/a", tag="w4", data=b"w4", outcome="fail", error="BadVersionError"),
    )
    assert judged(integrity, observed) == CheckResult(
        "Integrity",
        False,
        1,
        1,
        (
            {
                "anomaly": "failed-op-took-effect",
                "zxid": "0x100000002",
                "op": 4,
                "error": "BadVersionError",
            },
        ),
    )


def test_a_client_delete_requests_the_logged_delete_of_its_path() -> None:
    observed = history(everywhere(delete(E1 | 1, "/a")), op(0, 0, "delete", "/a"))
    assert judged(integrity, observed) == CheckResult("Integrity", True, 1)


def test_a_delete_inside_a_multi_requests_the_logged_delete() -> None:
    multi = op(0, 0, "multi", "/", sub_ops=(("delete", "/a", None, -1),))
    observed = history(everywhere(delete(E1 | 1, "/a")), multi)
    assert judged(integrity, observed) == CheckResult("Integrity", True, 1)


def test_creating_a_path_does_not_request_its_deletion() -> None:
    log = (
        create(E1 | 1, "/c", b"w1"),
        txn(E1 | 2, Change("create", "/d", b"w2", 0)),
        delete(E1 | 3, "/c"),
        delete(E1 | 4, "/d"),
    )
    observed = history(
        everywhere(*log),
        op(0, 0, "create", "/c", tag="w1", data=b"w1"),
        op(1, 0, "multi", "/", tag="w2", sub_ops=(("create", "/d", b"w2", -1),)),
    )
    result = judged(integrity, observed)
    assert [(e["anomaly"], e["path"]) for e in result.evidence] == [
        ("unrequested-delete", "/c"),
        ("unrequested-delete", "/d"),
    ]


def test_a_minority_lagging_behind_does_not_break_agreement() -> None:
    a, b = create(E1 | 1, "/a"), create(E1 | 2, "/b")
    result = judged(agreement, history(servers((a, b), (a, b), (a,))))
    assert result == CheckResult("Agreement", True, 2)


def test_agreement_reports_the_diverged_pair_and_a_txn_only_each_has() -> None:
    a, b, c = create(E1 | 1, "/a"), create(E1 | 2, "/b"), create(E1 | 3, "/c")
    result = judged(agreement, history(servers((a, b), (a, c), (a, b, c))))
    assert result == CheckResult(
        "Agreement",
        False,
        3,
        1,
        (
            {
                "anomaly": "diverged",
                "servers": ["zk1", "zk2"],
                "only_first": "0x100000002",
                "only_second": "0x100000003",
            },
        ),
    )


def test_delivering_the_same_zxid_twice_is_out_of_order() -> None:
    a, b = create(E1 | 1, "/a"), create(E1 | 2, "/b")
    result = judged(total_order, history(servers((a, b, b), (a, b), (a, b))))
    assert result == CheckResult(
        "TotalOrder",
        False,
        7,
        1,
        (
            {
                "anomaly": "out-of-order",
                "server": "zk1",
                "zxid": "0x100000002",
                "after": "0x100000002",
            },
        ),
    )


def test_a_server_behind_the_others_is_not_missing_what_it_has_not_reached() -> None:
    a, b, c = create(E1 | 1, "/a"), create(E1 | 2, "/b"), create(E1 | 3, "/c")
    result = judged(total_order, history(servers((a, b, c), (a, b, c), (a,))))
    assert result == CheckResult("TotalOrder", True, 7)


def test_total_order_reports_a_committed_txn_skipped_and_how_far_the_server_got() -> None:
    a, b, c = create(E1 | 1, "/a"), create(E1 | 2, "/b"), create(E1 | 3, "/c")
    result = judged(total_order, history(servers((a, b, c), (a, b, c), (a, c))))
    assert result == CheckResult(
        "TotalOrder",
        False,
        8,
        1,
        (
            {
                "anomaly": "missing-committed",
                "server": "zk3",
                "zxid": "0x100000002",
                "delivered_up_to": "0x100000003",
            },
        ),
    )


def test_local_primary_order_reports_the_first_missing_counter_of_a_gap() -> None:
    log = (
        create(E1 | 1, "/a"),
        create(E1 | 4, "/b"),
        create(E2 | 1, "/c"),
        create(E2 | 2, "/d"),
        create(E2 | 3, "/e"),
    )
    assert judged(local_primary_order, history(everywhere(*log))) == CheckResult(
        "LocalPrimaryOrder",
        False,
        3,
        1,
        (
            {
                "anomaly": "gap-in-epoch",
                "epoch": 1,
                "committed": "0x100000004",
                "missing": "0x100000002",
            },
        ),
    )


def test_a_snapshot_reaching_the_last_missing_counter_excuses_the_gap() -> None:
    a, c = create(E1 | 1, "/a"), create(E1 | 3, "/c")
    logs = (ServerLog("zk1", (a, c)), ServerLog("zk2", (a, c)), ServerLog("zk3", (c,), E1 | 2))
    assert judged(local_primary_order, history(logs)) == CheckResult("LocalPrimaryOrder", True, 1)


def test_a_snapshot_stopping_before_the_gap_does_not_excuse_it() -> None:
    a, c = create(E1 | 1, "/a"), create(E1 | 3, "/c")
    logs = (ServerLog("zk1", (a, c)), ServerLog("zk2", (a, c)), ServerLog("zk3", (c,), E1 | 1))
    assert judged(local_primary_order, history(logs)).valid is False


def test_a_snapshot_of_an_older_epoch_does_not_excuse_a_gap_in_a_newer_one() -> None:
    a, c = create(E2 | 1, "/a"), create(E2 | 3, "/c")
    logs = (ServerLog("zk1", (a, c)), ServerLog("zk2", (a, c)), ServerLog("zk3", (a, c), E1 | 5))
    assert judged(local_primary_order, history(logs)).valid is False


def test_global_primary_order_reports_the_older_epoch_txn_and_the_epoch_it_followed() -> None:
    a, b, c = create(E1 | 1, "/a"), create(E1 | 2, "/b"), create(E2 | 1, "/c")
    result = judged(global_primary_order, history(servers((a, c, b), (a, b, c))))
    assert result == CheckResult(
        "GlobalPrimaryOrder",
        False,
        6,
        1,
        (
            {
                "anomaly": "older-epoch-after-newer",
                "server": "zk1",
                "zxid": "0x100000002",
                "after_epoch": 2,
            },
        ),
    )


# Epoch 1 committed A1 and B1; the primary of epoch 2 first broadcast C2.
A1, B1, C2 = create(E1 | 1, "/a"), create(E1 | 2, "/b"), create(E2 | 1, "/c")


def test_primary_integrity_reports_the_older_txn_the_new_primary_lacks() -> None:
    leaders = (LeaderSample(1.0, "zk1", E1 | 1), LeaderSample(5.0, "zk2", E2))
    logs = servers((A1, B1, C2), (A1, C2), (A1, B1, C2))
    assert judged(primary_integrity, history(logs, leaders=leaders)) == CheckResult(
        "PrimaryIntegrity",
        False,
        2,
        1,
        (
            {
                "anomaly": "primary-missing-older-txn",
                "primary": "zk2",
                "epoch": 2,
                "missing": "0x100000002",
                "first_broadcast": "0x200000001",
            },
        ),
    )


def test_a_leader_with_no_log_is_skipped_and_later_epochs_are_still_judged() -> None:
    leaders = (LeaderSample(1.0, "zk9", E1 | 1), LeaderSample(5.0, "zk2", E2))
    logs = servers((A1, B1, C2), (A1, C2), (A1, B1, C2))
    result = judged(primary_integrity, history(logs, leaders=leaders))
    assert (result.valid, result.checked, result.anomalies) == (False, 1, 1)


def test_a_leader_that_broadcast_nothing_is_skipped_and_later_epochs_are_still_judged() -> None:
    leaders = (LeaderSample(1.0, "zk3", E1 | 1), LeaderSample(5.0, "zk2", E2))
    logs = (
        ServerLog("zk1", (A1, B1, C2)),
        ServerLog("zk2", (A1, C2)),
        ServerLog("zk3", (C2,), snapshot_zxid=B1.zxid),
    )
    result = judged(primary_integrity, history(logs, leaders=leaders))
    assert (result.valid, result.checked, result.anomalies) == (False, 1, 1)


def test_a_primary_lacking_a_txn_of_its_own_epoch_is_not_a_primary_integrity_failure() -> None:
    leaders = (LeaderSample(1.0, "zk1", E1 | 1),)
    logs = servers((A1,), (A1, B1), (A1, B1))
    result = judged(primary_integrity, history(logs, leaders=leaders))
    assert result == CheckResult("PrimaryIntegrity", True, 1)


# Client-visible checkers -------------------------------------------------------------------


def test_every_lost_acknowledged_write_is_reported() -> None:
    observed = history(
        everywhere(),
        op(0, 0, "create", "/a", tag="w1", data=b"w1"),
        op(1, 0, "set", "/b", tag="w2", data=b"w2"),
    )
    assert judged(durability, observed) == CheckResult(
        "AcknowledgedWritesDurable",
        False,
        2,
        2,
        (
            {"anomaly": "acknowledged-write-lost", "op": 0, "kind": "create", "path": "/a"},
            {"anomaly": "acknowledged-write-lost", "op": 1, "kind": "set", "path": "/b"},
        ),
    )


def test_an_acknowledged_write_on_exactly_a_quorum_is_durable() -> None:
    a = create(E1 | 1, "/a", b"w1")
    observed = history(servers((a,), (a,), ()), op(0, 0, "create", "/a", tag="w1", zxid=E1 | 1))
    assert judged(durability, observed) == CheckResult("AcknowledgedWritesDurable", True, 1)


def test_durability_reports_how_many_servers_have_a_minority_write() -> None:
    a = create(E1 | 1, "/a", b"w1")
    observed = history(servers((a,), (), ()), op(3, 0, "create", "/a", tag="w1", zxid=E1 | 1))
    assert judged(durability, observed) == CheckResult(
        "AcknowledgedWritesDurable",
        False,
        1,
        1,
        (
            {
                "anomaly": "acknowledged-write-not-on-quorum",
                "op": 3,
                "zxid": "0x100000001",
                "servers": 1,
            },
        ),
    )


def test_an_acknowledged_write_without_a_returned_zxid_is_durable() -> None:
    observed = history(everywhere(create(E1 | 1, "/a", b"w1")), op(0, 0, "create", "/a", tag="w1"))
    assert judged(durability, observed) == CheckResult("AcknowledgedWritesDurable", True, 1)


def test_durability_reports_the_zxid_told_and_the_zxid_logged_when_they_differ() -> None:
    observed = history(
        everywhere(create(E1 | 1, "/a", b"w1")),
        op(2, 0, "create", "/a", tag="w1", zxid=E1 | 5),
    )
    assert judged(durability, observed) == CheckResult(
        "AcknowledgedWritesDurable",
        False,
        1,
        1,
        (
            {
                "anomaly": "acknowledged-at-other-zxid",
                "op": 2,
                "told": "0x100000005",
                "logged": "0x100000001",
            },
        ),
    )


def test_two_acknowledged_deletes_need_two_committed_deletes() -> None:
    log = (create(E1 | 1, "/a"), delete(E1 | 2, "/a"))
    observed = history(everywhere(*log), op(0, 0, "delete", "/a"), op(1, 1, "delete", "/a"))
    assert judged(durability, observed) == CheckResult(
        "AcknowledgedWritesDurable",
        False,
        2,
        1,
        (
            {
                "anomaly": "acknowledged-delete-lost",
                "path": "/a",
                "acknowledged": 2,
                "committed": 1,
            },
        ),
    )


def test_a_znode_first_seen_through_a_set_has_no_known_version_before_it() -> None:
    log = (set_(E1 | 1, "/a", 5), set_(E1 | 2, "/a", 6))
    assert judged(compare_and_set, history(everywhere(*log))) == CheckResult(
        "VersionsCompareAndSet", True, 2
    )


def test_uncommitted_changes_are_skipped_and_later_ones_still_judged() -> None:
    a, stray, b = create(E1 | 1, "/a"), set_(E1 | 2, "/a", 1), set_(E2 | 1, "/a", 1)
    logs = servers((a, stray, b), (a, b), (a, b))
    assert judged(compare_and_set, history(logs)) == CheckResult("VersionsCompareAndSet", True, 2)


def test_compare_and_set_reports_a_create_over_an_existing_znode() -> None:
    log = (create(E1 | 1, "/a"), create(E1 | 2, "/a"))
    assert judged(compare_and_set, history(everywhere(*log))) == CheckResult(
        "VersionsCompareAndSet",
        False,
        2,
        1,
        ({"anomaly": "create-over-existing", "path": "/a", "zxid": "0x100000002"},),
    )


def test_compare_and_set_reports_a_delete_of_a_deleted_znode() -> None:
    log = (create(E1 | 1, "/a"), delete(E1 | 2, "/a"), delete(E1 | 3, "/a"))
    assert judged(compare_and_set, history(everywhere(*log))) == CheckResult(
        "VersionsCompareAndSet",
        False,
        3,
        1,
        ({"anomaly": "delete-of-missing", "path": "/a", "zxid": "0x100000003"},),
    )


def test_compare_and_set_reports_a_set_of_a_deleted_znode() -> None:
    log = (create(E1 | 1, "/a"), delete(E1 | 2, "/a"), set_(E1 | 3, "/a", 1))
    assert judged(compare_and_set, history(everywhere(*log))) == CheckResult(
        "VersionsCompareAndSet",
        False,
        3,
        1,
        ({"anomaly": "set-of-missing", "path": "/a", "zxid": "0x100000003"},),
    )


def test_a_znode_may_be_created_again_after_its_delete() -> None:
    log = (create(E1 | 1, "/a"), delete(E1 | 2, "/a"), create(E1 | 3, "/a"))
    assert judged(compare_and_set, history(everywhere(*log))) == CheckResult(
        "VersionsCompareAndSet", True, 3
    )


def test_compare_and_set_reports_the_previous_and_logged_version_of_a_skip() -> None:
    log = (create(E1 | 1, "/a"), set_(E1 | 2, "/a", 2))
    assert judged(compare_and_set, history(everywhere(*log))) == CheckResult(
        "VersionsCompareAndSet",
        False,
        2,
        1,
        (
            {
                "anomaly": "version-skipped",
                "previous": 0,
                "logged": 2,
                "path": "/a",
                "zxid": "0x100000002",
            },
        ),
    )


def test_a_failed_conditional_set_is_not_judged_as_compare_and_set() -> None:
    log = (create(E1 | 1, "/a"), set_(E1 | 2, "/a", 1, b"w2"))
    failed = op(0, 0, "set", "/a", tag="w2", expected_version=3, outcome="fail")
    assert judged(compare_and_set, history(everywhere(*log), failed)) == CheckResult(
        "VersionsCompareAndSet", True, 2
    )


def test_a_set_never_logged_does_not_stop_later_sets_being_judged() -> None:
    observed = history(
        everywhere(set_(E1 | 1, "/a", 5, b"w2")),
        op(0, 0, "set", "/b", tag="w1", outcome="unknown"),
        op(1, 0, "set", "/a", tag="w2", expected_version=0),
    )
    assert judged(compare_and_set, observed) == CheckResult(
        "VersionsCompareAndSet",
        False,
        2,
        1,
        ({"anomaly": "conditional-set-at-wrong-version", "op": 1, "expected": 0, "logged": 5},),
    )


def test_compare_and_set_reports_every_set_logged_as_another_change() -> None:
    log = (create(E1 | 1, "/a", b"w1"), create(E1 | 2, "/b", b"w2"))
    observed = history(
        everywhere(*log),
        op(0, 0, "set", "/a", tag="w1"),
        op(1, 0, "set", "/b", tag="w2"),
    )
    assert judged(compare_and_set, observed) == CheckResult(
        "VersionsCompareAndSet",
        False,
        4,
        2,
        (
            {"anomaly": "set-logged-as-other-change", "op": 0, "zxid": "0x100000001"},
            {"anomaly": "set-logged-as-other-change", "op": 1, "zxid": "0x100000002"},
        ),
    )


def test_compare_and_set_reports_the_version_told_and_logged_when_they_differ() -> None:
    log = (create(E1 | 1, "/a"), set_(E1 | 2, "/a", 1, b"w2"))
    told = op(0, 0, "set", "/a", tag="w2", version=2)
    assert judged(compare_and_set, history(everywhere(*log), told)) == CheckResult(
        "VersionsCompareAndSet",
        False,
        3,
        1,
        ({"anomaly": "acknowledged-version-differs", "op": 0, "told": 2, "logged": 1},),
    )


def test_an_acknowledged_set_without_a_returned_version_is_not_flagged() -> None:
    log = (create(E1 | 1, "/a"), set_(E1 | 2, "/a", 1, b"w2"))
    untold = op(0, 0, "set", "/a", tag="w2", expected_version=0)
    assert judged(compare_and_set, history(everywhere(*log), untold)) == CheckResult(
        "VersionsCompareAndSet", True, 3
    )


def test_session_order_reports_a_write_acknowledged_before_an_earlier_one() -> None:
    observed = history(
        everywhere(),
        op(0, 3, "create", "/a", session=5, tag="w1", zxid=E1 | 2),
        op(1, 3, "set", "/b", session=5, tag="w2", zxid=E1 | 1),
    )
    assert judged(session_order, observed) == CheckResult(
        "SessionOrder",
        False,
        2,
        1,
        (
            {
                "anomaly": "session-writes-reordered",
                "process": 3,
                "session": 5,
                "op": 1,
                "zxid": "0x100000001",
                "after": "0x100000002",
            },
        ),
    )


def test_two_writes_of_a_session_at_one_zxid_are_reordered() -> None:
    observed = history(
        everywhere(),
        op(0, 0, "create", "/a", tag="w1", zxid=E1 | 2),
        op(1, 0, "set", "/b", tag="w2", zxid=E1 | 2),
    )
    assert judged(session_order, observed).anomalies == 1


def test_session_order_reports_a_read_older_than_the_sessions_write() -> None:
    observed = history(
        everywhere(),
        op(0, 2, "set", "/a", session=1, tag="w1", zxid=E1 | 3),
        op(1, 2, "read", "/a", session=1, value=b"w0", mzxid=E1 | 2),
    )
    assert judged(session_order, observed) == CheckResult(
        "SessionOrder",
        False,
        2,
        1,
        (
            {
                "anomaly": "own-write-not-read",
                "process": 2,
                "session": 1,
                "op": 1,
                "read_mzxid": "0x100000002",
                "written": "0x100000003",
            },
        ),
    )


def test_session_order_reports_no_node_after_the_sessions_unlogged_create() -> None:
    observed = history(
        everywhere(),
        op(0, 2, "create", "/a", session=1, tag="w1", zxid=E1 | 3),
        op(1, 2, "read", "/a", session=1, found=False),
    )
    assert judged(session_order, observed) == CheckResult(
        "SessionOrder",
        False,
        2,
        1,
        (
            {
                "anomaly": "own-write-not-read",
                "process": 2,
                "session": 1,
                "op": 1,
                "read": "no node",
                "written": "0x100000003",
            },
        ),
    )


def test_a_delete_before_the_sessions_create_does_not_excuse_no_node() -> None:
    log = (create(E1 | 1, "/a", b"w0"), delete(E1 | 2, "/a"), create(E1 | 3, "/a", b"w1"))
    observed = history(
        everywhere(*log),
        op(0, 0, "create", "/a", tag="w1", zxid=E1 | 3),
        op(1, 0, "read", "/a", found=False),
    )
    assert judged(session_order, observed).anomalies == 1


def test_a_write_of_unknown_outcome_is_not_a_session_write() -> None:
    observed = history(
        everywhere(create(E1 | 1, "/a", b"w1")),
        op(0, 0, "create", "/a", tag="w1", outcome="unknown"),
        op(1, 0, "read", "/a", found=False),
    )
    assert judged(session_order, observed) == CheckResult("SessionOrder", "unknown", 0)


def test_a_write_without_a_returned_zxid_is_found_through_its_tag() -> None:
    log = (create(E1 | 1, "/a", b"w0"), set_(E1 | 2, "/a", 1, b"w1"))
    observed = history(
        everywhere(*log),
        op(0, 0, "set", "/a", tag="w1"),
        op(1, 0, "read", "/a", value=b"w0", mzxid=E1 | 1),
    )
    result = judged(session_order, observed)
    assert [e["written"] for e in result.evidence] == ["0x100000002"]


def test_every_create_and_set_of_a_multi_must_be_read_back() -> None:
    subs = (
        ("create", "/m", b"w1", -1),
        ("set", "/n", b"w1", -1),
        ("delete", "/o", None, -1),
    )
    observed = history(
        everywhere(),
        op(0, 0, "multi", "/", tag="w1", zxid=E1 | 5, sub_ops=subs),
        op(1, 0, "read", "/m", found=False),
        op(2, 0, "read", "/n", value=b"w0", mzxid=E1 | 1),
        op(3, 0, "read", "/o", found=False),
    )
    result = judged(session_order, observed)
    assert result.checked == 3
    assert [e["op"] for e in result.evidence] == [1, 2]


def test_no_node_for_a_path_never_logged_is_a_judged_read() -> None:
    observed = history(everywhere(), op(0, 0, "read", "/x", found=False))
    assert judged(sequential_reads, observed) == CheckResult("SequentialReads", True, 1)


def test_a_value_read_from_before_the_logs_is_not_judged() -> None:
    observed = history(everywhere(), op(0, 0, "read", "/x", value=b"w0", mzxid=E1 | 1))
    assert judged(sequential_reads, observed) == CheckResult("SequentialReads", "unknown", 0)


def test_sequential_reads_reports_no_node_after_the_session_saw_the_znode() -> None:
    log = (create(E1 | 1, "/a", b"w1"), set_(E1 | 2, "/a", 1, b"w2"))
    observed = history(
        everywhere(*log),
        op(0, 4, "read", "/a", session=2, value=b"w2", mzxid=E1 | 2),
        op(1, 4, "read", "/a", session=2, found=False),
    )
    assert judged(sequential_reads, observed) == CheckResult(
        "SequentialReads",
        False,
        2,
        1,
        (
            {
                "anomaly": "stale-no-node",
                "created_at": "0x100000001",
                "session_saw": "0x100000002",
                "process": 4,
                "session": 2,
                "op": 1,
                "path": "/a",
            },
        ),
    )


def test_no_node_right_after_the_sessions_own_create_is_stale() -> None:
    observed = history(
        everywhere(create(E1 | 1, "/a", b"w1")),
        op(0, 0, "create", "/a", tag="w1", zxid=E1 | 1),
        op(1, 0, "read", "/a", found=False),
    )
    assert judged(sequential_reads, observed).anomalies == 1


def test_sequential_reads_reports_a_value_overwritten_before_the_sessions_write() -> None:
    log = (
        create(E1 | 1, "/a", b"w1"),
        set_(E1 | 2, "/a", 1, b"w2"),
        set_(E1 | 3, "/a", 2, b"w3"),
    )
    observed = history(
        everywhere(*log),
        op(0, 1, "set", "/a", session=3, tag="w3", zxid=E1 | 3),
        op(1, 1, "read", "/a", session=3, value=b"w2", mzxid=E1 | 2),
    )
    assert judged(sequential_reads, observed) == CheckResult(
        "SequentialReads",
        False,
        1,
        1,
        (
            {
                "anomaly": "stale-read",
                "mzxid": "0x100000002",
                "overwritten_at": "0x100000003",
                "session_saw": "0x100000003",
                "process": 1,
                "session": 3,
                "op": 1,
                "path": "/a",
            },
        ),
    )


def test_rereading_the_latest_value_is_never_stale() -> None:
    log = (
        create(E1 | 1, "/a", b"w1"),
        set_(E1 | 2, "/a", 1, b"w2"),
        set_(E1 | 3, "/a", 2, b"w3"),
    )
    observed = history(
        everywhere(*log),
        op(0, 0, "set", "/a", tag="w3", zxid=E1 | 3),
        op(1, 0, "read", "/a", value=b"w3", mzxid=E1 | 3),
        op(2, 0, "read", "/a", value=b"w3", mzxid=E1 | 3),
    )
    assert judged(sequential_reads, observed) == CheckResult("SequentialReads", True, 2)


def test_a_read_that_did_not_complete_is_not_judged() -> None:
    observed = history(
        everywhere(create(E1 | 1, "/a", b"w1")),
        op(0, 0, "create", "/a", tag="w1", zxid=E1 | 1),
        op(1, 0, "read", "/a", found=False, outcome="unknown"),
    )
    assert judged(sequential_reads, observed) == CheckResult("SequentialReads", "unknown", 0)


def test_a_read_without_mzxid_does_not_stop_the_session_being_judged() -> None:
    log = (create(E1 | 1, "/a", b"w1"), set_(E1 | 2, "/a", 1, b"w2"))
    observed = history(
        everywhere(*log),
        op(0, 0, "set", "/a", tag="w2", zxid=E1 | 2),
        op(1, 0, "read", "/a", value=b"w2"),
        op(2, 0, "read", "/a", value=b"w1", mzxid=E1 | 1),
    )
    assert [e["anomaly"] for e in judged(sequential_reads, observed).evidence] == ["stale-read"]


def test_reads_outside_the_logs_are_skipped_and_later_reads_still_judged() -> None:
    log = (set_(E1 | 2, "/a", 2, b"w2"), set_(E1 | 3, "/a", 3, b"w3"))
    observed = history(
        everywhere(*log),
        op(0, 0, "set", "/a", tag="w3", zxid=E1 | 3),
        op(1, 0, "read", "/a", value=b"w1", mzxid=E1 | 1),
        op(2, 0, "read", "/a", value=b"w9", mzxid=E1 | 9),
        op(3, 0, "read", "/a", value=b"w2", mzxid=E1 | 2),
    )
    result = judged(sequential_reads, observed)
    assert (result.checked, [e["op"] for e in result.evidence]) == (1, [3])


def test_sequential_reads_reports_a_value_no_quorum_delivered() -> None:
    a = create(E1 | 1, "/a", b"w1")
    observed = history(
        servers((a,), (), ()), op(0, 2, "read", "/a", session=6, value=b"w1", mzxid=E1 | 1)
    )
    assert judged(sequential_reads, observed) == CheckResult(
        "SequentialReads",
        False,
        1,
        1,
        (
            {
                "anomaly": "read-uncommitted-or-wrong-value",
                "mzxid": "0x100000001",
                "process": 2,
                "session": 6,
                "op": 0,
                "path": "/a",
            },
        ),
    )


def test_a_sessions_first_write_is_in_order_even_at_the_lowest_zxid() -> None:
    observed = history(everywhere(), op(0, 0, "create", "/a", tag="w1", zxid=0x1))
    assert judged(session_order, observed) == CheckResult("SessionOrder", True, 1)


def test_a_session_that_saw_nothing_may_read_no_node_even_after_the_first_zxid() -> None:
    observed = history(everywhere(create(0x1, "/a", b"w1")), op(0, 0, "read", "/a", found=False))
    assert judged(sequential_reads, observed) == CheckResult("SequentialReads", True, 1)
