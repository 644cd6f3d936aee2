"""The external target leaves a cluster as it found it: its ledgers marked, deleted when the run
ends (or kept, and named), a dead run's deleted by the next run or ``cluster clean``, nothing
else touched. On an in-memory ZooKeeper (``tests/adapters/zookeeper/fake_kazoo.py``); the real
thing, with BookKeeper's own shell counting, is ``test_external_ledgers_cluster.py``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import adapters.cluster.external as external_module
from adapters.zookeeper.layout import init_new_cluster
from adapters.zookeeper.ledger_marks import RUN_KEY, SuiteRun, mark_of
from adapters.zookeeper.ledger_store import LedgerStore
from adapters.zookeeper.metadata import DigestType, LedgerMetadata, Segment
from adapters.zookeeper.registration import register_bookie
from conformance.cli import main
from conformance.operations import CreateLedger, FreshLedger, LedgerView
from conformance.targets.external_target import ExternalTarget
from model.bookkeeper.config import ModelConfig
from model.bookkeeper.records import STATUS_OPEN, Fragment
from tests.adapters.zookeeper.fake_kazoo import FakeEnsemble

ROOT = "/ledgers"
CFG = ModelConfig()
CREATE = CreateLedger(0, LedgerView(STATUS_OPEN, (Fragment(1, 0b111, 1),), 0))
#: The command line's target: the fake ensemble's cluster.
EXTERNAL = ["--target", "external", "--zk", "127.0.0.1:2181"]


@pytest.fixture
def ensemble(monkeypatch: pytest.MonkeyPatch) -> FakeEnsemble:
    """A formatted cluster with three bookies (on ports nobody listens on), reached by every
    ExternalCluster through its own session."""
    ensemble = FakeEnsemble()
    admin = ensemble.client()
    init_new_cluster(admin, ROOT)  # type: ignore[arg-type]
    for n in range(3):
        register_bookie(admin, ROOT, f"127.0.0.1:{n + 1}", "127.0.0.1", n + 1)  # type: ignore[arg-type]
    monkeypatch.setattr(external_module, "connect_zookeeper", lambda *a, **k: ensemble.client())
    return ensemble


def admin_store(ensemble: FakeEnsemble) -> LedgerStore:
    return LedgerStore(ensemble.client(), ROOT)  # type: ignore[arg-type]


def foreign_ledger(ensemble: FakeEnsemble) -> int:
    """A ledger someone else created (as BookKeeper's simpletest marks its own)."""
    store = admin_store(ensemble)
    ledger_id = store.allocate_ledger_id()
    store.create(
        ledger_id,
        LedgerMetadata(
            3,
            2,
            2,
            (Segment(0, ("127.0.0.1:1", "127.0.0.1:2", "127.0.0.1:3")),),
            DigestType.CRC32C,
            b"",
            custom_metadata=(("Bookie", b"simpletest"),),
        ),
    )
    return ledger_id


def run_examples(target: ExternalTarget, count: int) -> list[int]:
    """Each example: a fresh ledger, created by the model's client."""
    ids = []
    for _ in range(count):
        target.invoke(FreshLedger())
        assert target.invoke(CREATE).status == "OK"
        ids.append(target.ledger_id)
    return ids


def test_a_run_marks_its_ledgers_and_deletes_them_when_it_closes(ensemble: FakeEnsemble) -> None:
    foreign = foreign_ledger(ensemble)
    lines: list[str] = []
    target = ExternalTarget("127.0.0.1:2181", notify=lines.append)
    target.open(CFG)
    run_id = target.run_id
    assert run_id is not None and target.describe()["bkconform_run"] == run_id
    ids = run_examples(target, 5)
    store = admin_store(ensemble)
    assert store.list_ledgers() == sorted([foreign, *ids])
    created = store.read(ids[0])[0]
    assert mark_of(created) == run_id
    assert created.custom_metadata_dict()["application"] == b"bkconform"
    target.close()
    assert store.list_ledgers() == [foreign]
    assert mark_of(store.read(foreign)[0]) is None
    assert ensemble.paths("/bkconform") == []
    assert target.ledger_record == {
        "run_id": run_id,
        "created": 5,
        "deleted": 5,
        "kept": [],
        "kept_because": None,
        "finding_ledgers": [],
        "not_deleted": {},
        "left_alone": [],
        "earlier_runs": {"runs": [], "deleted": 0},
    }
    assert lines == [
        f"Ledgers: this run ({run_id}) created 5 on the cluster and deleted 5 (their metadata, "
        "as BookKeeper deletes a ledger; the bookies' garbage collection frees their entries)"
    ]
    target.close()  # a second close changes nothing
    assert len(lines) == 1


def test_keep_ledgers_keeps_them_all_and_says_which(ensemble: FakeEnsemble) -> None:
    lines: list[str] = []
    target = ExternalTarget("127.0.0.1:2181", keep_ledgers=True, notify=lines.append)
    target.open(CFG)
    ids = run_examples(target, 3)
    target.close()
    assert admin_store(ensemble).list_ledgers() == ids
    assert target.ledger_record is not None
    assert target.ledger_record["kept"] == ids
    assert target.ledger_record["kept_because"] == "--keep-ledgers"
    assert target.ledger_record["deleted"] == 0
    assert f"kept 3 (--keep-ledgers): {', '.join(map(str, ids))}" in lines[0]
    assert "cluster clean --zk 127.0.0.1:2181 --include-kept" in lines[0]
    # The next run leaves them: they were kept on purpose.
    again = ExternalTarget("127.0.0.1:2181", notify=lines.append)
    again.open(CFG)
    again.close()
    assert admin_store(ensemble).list_ledgers() == ids


def test_a_findings_ledger_is_kept_and_the_rest_deleted(ensemble: FakeEnsemble) -> None:
    lines: list[str] = []
    target = ExternalTarget("127.0.0.1:2181", notify=lines.append)
    target.open(CFG)
    ids = run_examples(target, 4)
    target.keep_finding_ledgers([ids[2]])
    target.close()
    assert admin_store(ensemble).list_ledgers() == [ids[2]]
    assert target.ledger_record is not None
    assert target.ledger_record["finding_ledgers"] == [ids[2]]
    assert target.ledger_record["kept"] == [ids[2]]
    assert target.ledger_record["kept_because"] == "finding"
    assert target.ledger_record["deleted"] == 3
    assert f"kept the finding's: {ids[2]}" in lines[0]


def test_the_next_run_deletes_what_a_killed_run_left(
    ensemble: FakeEnsemble, monkeypatch: pytest.MonkeyPatch
) -> None:
    foreign = foreign_ledger(ensemble)
    killed = ExternalTarget("127.0.0.1:2181", notify=lambda _: None)
    killed.open(CFG)
    left = run_examples(killed, 3)
    dead_run = killed.run_id
    # kill -9: nothing of close() runs; the session ends a session timeout later, and the
    # process is gone (seen from this machine).
    assert killed._external is not None
    killed._external.zookeeper_client.stop()
    monkeypatch.setattr("adapters.zookeeper.ledger_marks.liveness", lambda _: "dead")
    lines: list[str] = []
    target = ExternalTarget("127.0.0.1:2181", notify=lines.append)
    target.open(CFG)
    assert admin_store(ensemble).list_ledgers() == [foreign]
    assert lines == ["Ledgers of earlier runs: deleted 3 ledgers of 1 run that died or ended"]
    ids = run_examples(target, 1)
    target.close()
    assert target.ledger_record is not None
    assert target.ledger_record["earlier_runs"] == {"runs": [dead_run], "deleted": 3}
    assert admin_store(ensemble).list_ledgers() == [foreign]
    assert set(left).isdisjoint(ids)


def test_a_live_runs_ledgers_are_left_to_it(ensemble: FakeEnsemble) -> None:
    first = ExternalTarget("127.0.0.1:2181", notify=lambda _: None)
    first.open(CFG)
    theirs = run_examples(first, 2)
    second = ExternalTarget("127.0.0.1:2181", notify=lambda _: None)
    second.open(CFG)
    ours = run_examples(second, 1)
    second.close()
    assert admin_store(ensemble).list_ledgers() == theirs
    first.close()
    assert admin_store(ensemble).list_ledgers() == []
    assert ours


def test_a_ledger_whose_create_never_happened_is_not_counted(ensemble: FakeEnsemble) -> None:
    lines: list[str] = []
    target = ExternalTarget("127.0.0.1:2181", notify=lines.append)
    target.open(CFG)
    run_examples(target, 1)
    target.invoke(FreshLedger())
    assert target._suite_run is not None
    target._suite_run.journal(target.ledger_id)  # journaled, then the create was lost
    target.close()
    assert target.ledger_record is not None
    assert (target.ledger_record["created"], target.ledger_record["deleted"]) == (1, 1)


def test_cluster_clean_deletes_a_killed_runs_ledgers_and_nothing_else(
    ensemble: FakeEnsemble, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    foreign = foreign_ledger(ensemble)
    killed = ExternalTarget("127.0.0.1:2181", notify=lambda _: None)
    killed.open(CFG)
    run_examples(killed, 4)
    assert killed._external is not None
    killed._external.zookeeper_client.stop()
    kept = ExternalTarget("127.0.0.1:2181", keep_ledgers=True, notify=lambda _: None)
    kept.open(CFG)
    kept_ids = run_examples(kept, 1)
    kept.close()
    # An orphan no journal lists (its run node gone): only the scan finds it.
    store = admin_store(ensemble)
    orphan = store.allocate_ledger_id()
    store.create(
        orphan,
        LedgerMetadata(
            3,
            2,
            2,
            (Segment(0, ("127.0.0.1:1", "127.0.0.1:2", "127.0.0.1:3")),),
            DigestType.CRC32,
            b"x",
            custom_metadata=((RUN_KEY, b"gone"),),
        ),
    )
    monkeypatch.setattr("adapters.zookeeper.ledger_marks.liveness", lambda _: "dead")

    assert main(["cluster", "clean", "--zk", "127.0.0.1:2181", "--no-scan"]) == 0
    out = capsys.readouterr().out
    assert "deleted 4 ledgers of 1 run that died or ended" in out
    assert f"left 1 ledger kept on purpose (--include-kept deletes them): {kept_ids[0]}" in out
    assert store.list_ledgers() == sorted([foreign, orphan, *kept_ids])

    assert main(["cluster", "clean", "--zk", "127.0.0.1:2181"]) == 0
    out = capsys.readouterr().out
    assert "scanned 3 ledgers: 1 marked ledger no journal listed" in out
    assert store.list_ledgers() == sorted([foreign, *kept_ids])

    assert main(["cluster", "clean", "--zk", "127.0.0.1:2181", "--include-kept"]) == 0
    assert store.list_ledgers() == [foreign]
    assert ensemble.paths("/bkconform") == []


def test_cluster_clean_refuses_a_remote_zookeeper_without_allow_remote(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["cluster", "clean", "--zk", "zk1.example:2181"]) == 1
    assert "allow_remote" in capsys.readouterr().err


def test_run_records_its_ledgers_in_the_run_directory_on_every_exit(
    ensemble: FakeEnsemble, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """No bookie listens: the first example creates its ledger, then cannot reach a bookie.
    The run is undecided, and its ledger deleted and recorded all the same."""
    code = main(
        [
            "run",
            *EXTERNAL,
            "--runs-dir",
            str(tmp_path),
            "--fresh",
            "--quiet",
            "--max-examples",
            "3",
            "--seconds",
            "20",
            "--no-explore",
        ]
    )
    assert code == 2
    (run_dir,) = [p for p in tmp_path.iterdir() if p.name.endswith("external-run")]
    results = json.loads((run_dir / "results.json").read_text())
    ledgers = results["ledgers"]
    assert ledgers["created"] >= 1 and ledgers["deleted"] == ledgers["created"]
    assert results["target"]["target"] == "external"
    assert f"Ledgers: this run ({ledgers['run_id']}) created" in capsys.readouterr().out
    assert admin_store(ensemble).list_ledgers() == []


def test_keep_ledgers_is_the_external_targets_option(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "--target", "local", "--keep-ledgers", "--bookie-kind", "reference"]) == 2
    assert "--keep-ledgers: only --target external" in capsys.readouterr().err


def test_a_registration_the_cluster_refuses_is_a_target_error(
    ensemble: FakeEnsemble, monkeypatch: pytest.MonkeyPatch
) -> None:
    from kazoo.exceptions import NoAuthError

    from conformance.targets.base import TargetError

    def refuse(*args: Any, **kwargs: Any) -> SuiteRun:
        raise NoAuthError()

    monkeypatch.setattr(SuiteRun, "register", refuse)
    target = ExternalTarget("127.0.0.1:2181", notify=lambda _: None)
    with pytest.raises(TargetError, match="refused to register the run"):
        target.open(CFG)
    target.close()
    assert target._external is not None
    with pytest.raises(Exception, match="not started"):
        _ = target._external.zookeeper_client


def test_a_scenario_records_its_ledger_in_the_run_directory(
    ensemble: FakeEnsemble, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """No bookie listens: the scenario creates its ledger, then cannot reach a bookie. It is
    undecided, and its ledger deleted, said and recorded all the same."""
    code = main(
        [
            "scenario",
            "defect1-fencing",
            *EXTERNAL,
            "--runs-dir",
            str(tmp_path),
        ]
    )
    assert code == 2
    (run_dir,) = tmp_path.iterdir()
    ledgers = json.loads((run_dir / "results.json").read_text())["ledgers"]
    assert (ledgers["created"], ledgers["deleted"], ledgers["kept"]) == (1, 1, [])
    assert f"Ledgers: this run ({ledgers['run_id']}) created" in capsys.readouterr().out
    assert admin_store(ensemble).list_ledgers() == []


def test_a_scenario_keeps_its_ledger_with_keep_ledgers(
    ensemble: FakeEnsemble, tmp_path: Path
) -> None:
    args = ["scenario", "defect1-fencing", *EXTERNAL]
    assert main([*args, "--runs-dir", str(tmp_path), "--keep-ledgers"]) == 2
    (run_dir,) = tmp_path.iterdir()
    ledgers = json.loads((run_dir / "results.json").read_text())["ledgers"]
    assert ledgers["kept_because"] == "--keep-ledgers"
    assert admin_store(ensemble).list_ledgers() == ledgers["kept"] != []


def test_qualify_shards_record_their_ledgers_and_the_run_sums_them(
    ensemble: FakeEnsemble, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    foreign = foreign_ledger(ensemble)
    code = main(
        [
            "qualify",
            "--master",
            "none",
            "--shards",
            "2",
            "--configs",
            "fenced-recovery",
            *EXTERNAL,
            "--runs-dir",
            str(tmp_path),
            "--seconds",
            "5",
            "--max-examples",
            "2",
            "--no-explore",
            "--quiet",
        ]
    )
    assert code == 2  # no bookie answers: undecided
    (run_dir,) = tmp_path.iterdir()
    ledgers = json.loads((run_dir / "results.json").read_text())["ledgers"]
    assert ledgers["shards"] == 2 and ledgers["attempts"] >= 2  # a retried shard: each attempt
    assert ledgers["created"] >= 2 and ledgers["deleted"] == ledgers["created"]
    assert ledgers["kept"] == {} and ledgers["errors"] == {}
    out = capsys.readouterr().out
    assert f"Ledgers on the cluster: {ledgers['created']} created by" in out
    assert admin_store(ensemble).list_ledgers() == [foreign]


def test_qualify_keep_ledgers_is_the_external_targets_option(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["qualify", "--master", "none", "--target", "model", "--keep-ledgers"]) == 2
    assert "--keep-ledgers: only --target external" in capsys.readouterr().err
