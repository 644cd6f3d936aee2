"""The suite's mark on its ledgers, BookKeeper's delete, and the clean-up of dead runs' ledgers
(``adapters/zookeeper/ledger_marks.py``, ``LedgerStore.remove``), on an in-memory ZooKeeper."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import pytest
from kazoo.exceptions import ConnectionLoss

from adapters.zookeeper.errors import MetadataVersionMismatch, ZooKeeperError
from adapters.zookeeper.layout import init_new_cluster
from adapters.zookeeper.ledger_marks import (
    APPLICATION_KEY,
    RUN_KEY,
    SuiteRun,
    clean,
    list_runs,
    mark,
    mark_of,
    remove_marked,
)
from adapters.zookeeper.ledger_store import LedgerStore
from adapters.zookeeper.metadata import (
    DigestType,
    LedgerMetadata,
    Segment,
    parse_ledger_metadata,
    serialize_ledger_metadata,
)
from tests.adapters.zookeeper.fake_kazoo import FakeEnsemble, FakeKazoo

ROOT = "/ledgers"


def metadata(custom: tuple[tuple[str, bytes], ...] = ()) -> LedgerMetadata:
    return LedgerMetadata(
        ensemble_size=3,
        write_quorum_size=3,
        ack_quorum_size=2,
        segments=(Segment(0, ("127.0.0.1:3181", "127.0.0.1:3182", "127.0.0.1:3183")),),
        digest_type=DigestType.CRC32,
        password=b"bkconform",
        custom_metadata=custom,
    )


@pytest.fixture
def ensemble() -> FakeEnsemble:
    ensemble = FakeEnsemble()
    init_new_cluster(ensemble.client(), ROOT)  # type: ignore[arg-type]
    return ensemble


def store_of(client: FakeKazoo, layout: str = "hierarchical") -> LedgerStore:
    return LedgerStore(client, ROOT, layout)  # type: ignore[arg-type]


def unknown(_process: Mapping[str, Any]) -> str:
    """Process liveness as another host's process reads: only the session can tell."""
    return "unknown"


def create(store: LedgerStore, custom: tuple[tuple[str, bytes], ...] = ()) -> int:
    ledger_id = store.allocate_ledger_id()
    store.create(ledger_id, metadata(custom))
    return ledger_id


def run_ledgers(store: LedgerStore, run: SuiteRun, count: int) -> list[int]:
    """What the external target does per ledger: journal it, then create it marked."""
    ids = []
    for _ in range(count):
        ledger_id = store.allocate_ledger_id()
        run.journal(ledger_id)
        store.create(ledger_id, metadata(run.custom_metadata))
        ids.append(ledger_id)
    return ids


# The mark --------------------------------------------------------------------------------------


def test_the_mark_names_the_run_in_custom_metadata_and_survives_the_znode_bytes() -> None:
    marked = metadata((("other", b"x"), *mark("20261127T101500Z-abc")))
    assert marked.custom_metadata_dict()[APPLICATION_KEY] == b"bkconform"
    assert marked.custom_metadata_dict()[RUN_KEY] == b"20261127T101500Z-abc"
    again = parse_ledger_metadata(serialize_ledger_metadata(marked))
    assert mark_of(again) == "20261127T101500Z-abc"
    assert again.custom_metadata_dict()["other"] == b"x"
    assert mark_of(metadata()) is None
    assert mark_of(metadata((("Bookie", b"simpletest"),))) is None
    assert mark_of(metadata(((RUN_KEY, b"\xff"),))) is None


# BookKeeper's delete -----------------------------------------------------------------------------


def test_remove_deletes_the_ledger_and_its_emptied_parents_as_bookkeeper_does(
    ensemble: FakeEnsemble,
) -> None:
    store = store_of(ensemble.client())
    first, second = create(store), create(store)
    far = 12_345_678  # another 0000 directory: /ledgers/00/1234/L5678
    store.create(far, metadata())
    assert store.path(far) == "/ledgers/00/1234/L5678"
    assert store.remove(first) is True
    assert "/ledgers/00/0000" in ensemble.nodes, "a parent with a ledger left stays"
    assert store.remove(far) is True
    assert "/ledgers/00/1234" not in ensemble.nodes
    assert "/ledgers/00" in ensemble.nodes
    with pytest.raises(MetadataVersionMismatch):
        store.remove(second, expected_version=3)
    assert store.remove(second, expected_version=0) is True
    assert "/ledgers/00" not in ensemble.nodes
    assert {"/ledgers", "/ledgers/LAYOUT", "/ledgers/available"} <= set(ensemble.nodes)
    assert store.remove(second) is False, "a missing ledger is deleted already"


def test_remove_on_the_flat_layout_deletes_only_the_ledger(ensemble: FakeEnsemble) -> None:
    store = store_of(ensemble.client(), "flat")
    ledger_id = create(store)
    assert store.remove(ledger_id)
    assert store.list_ledgers() == [] and ROOT in ensemble.nodes


def test_read_many_and_remove_many_take_many_ledgers_at_once(ensemble: FakeEnsemble) -> None:
    client = ensemble.client()
    store = store_of(client)
    ids = [create(store) for _ in range(300)]
    (ensemble.nodes[store.path(ids[5])]).data = b"not metadata"
    reads = store.read_many([*ids, 999_999])
    assert [i for i, r in reads.items() if isinstance(r, tuple)] == [i for i in ids if i != ids[5]]
    assert type(reads[ids[5]]).__name__ == "MalformedMetadata"
    assert type(reads[999_999]).__name__ == "NoSuchLedger"
    done = store.remove_many({i: 0 for i in ids})
    assert all(done[i] is True for i in ids)
    assert store.list_ledgers() == []
    assert "/ledgers/00" not in ensemble.nodes


# remove_marked ---------------------------------------------------------------------------------


def test_only_the_runs_own_marked_ledgers_are_deleted(ensemble: FakeEnsemble) -> None:
    store = store_of(ensemble.client())
    ours = [create(store, mark("run-a")) for _ in range(3)]
    other_run = create(store, mark("run-b"))
    unmarked = create(store)
    simpletest = create(store, (("Bookie", b"simpletest"),))
    broken = create(store, mark("run-a"))
    ensemble.nodes[store.path(broken)].data = b"garbage"
    removal = remove_marked(
        store, "run-a", [*ours, other_run, unmarked, simpletest, broken, 424242]
    )
    assert removal.deleted == ours
    assert sorted(removal.foreign) == sorted([other_run, unmarked, simpletest, broken])
    assert removal.absent == [424242]
    assert removal.failed == {}
    assert store.list_ledgers() == sorted([other_run, unmarked, simpletest, broken])


def test_a_ledger_changed_after_its_mark_was_read_is_read_again(ensemble: FakeEnsemble) -> None:
    client = ensemble.client()
    store = store_of(client)
    ledger_id = create(store, mark("run-a"))
    real_remove_many = store.remove_many
    changed = []

    def remove_many(versions: Mapping[int, int]) -> Any:
        if not changed:  # someone rewrites it between our read and our delete
            changed.append(store.write(ledger_id, metadata(mark("run-a")).to_in_recovery(), 0))
        return real_remove_many(versions)

    store.remove_many = remove_many  # type: ignore[method-assign]
    assert remove_marked(store, "run-a", [ledger_id]).deleted == [ledger_id]
    assert changed == [1]


# A run's life ----------------------------------------------------------------------------------


def test_a_run_registers_marks_journals_and_deletes_its_ledgers_at_the_end(
    ensemble: FakeEnsemble,
) -> None:
    client = ensemble.client()
    store = store_of(client)
    foreign = create(store)
    run = SuiteRun.register(client, ROOT, about={"bkconform": "test"})  # type: ignore[arg-type]
    about = json.loads(ensemble.nodes[run.path].data)
    assert about["ledgers_root"] == ROOT and about["state"] == "running"
    assert about["process"]["pid"] > 0 and about["bkconform"] == "test"
    assert ensemble.nodes[f"{run.path}/alive"].owner == client.session
    ids = run_ledgers(store, run, 5)
    assert {f"{run.path}/L{i}" for i in ids} <= set(ensemble.nodes)
    assert [mark_of(store.read(i)[0]) for i in ids] == [run.run_id] * 5
    removal = run.finish(store)
    assert removal.deleted == ids
    assert store.list_ledgers() == [foreign]
    assert ensemble.paths("/bkconform") == [], "nothing of the run is left"


def test_kept_ledgers_stay_journaled_and_flagged(ensemble: FakeEnsemble) -> None:
    client = ensemble.client()
    store = store_of(client)
    run = SuiteRun.register(client, ROOT)  # type: ignore[arg-type]
    ids = run_ledgers(store, run, 4)
    removal = run.finish(store, keep=[ids[2]])
    assert removal.deleted == [ids[0], ids[1], ids[3]]
    assert store.list_ledgers() == [ids[2]]
    assert ensemble.nodes[f"{run.path}/L{ids[2]}"].data == b"kept"
    assert json.loads(ensemble.nodes[run.path].data)["state"] == "ended"
    assert f"{run.path}/alive" not in ensemble.nodes
    (listed,) = list_runs(client)  # type: ignore[arg-type]
    assert listed.journal == {ids[2]: True} and listed.status() == "dead"


def test_a_journal_entry_goes_out_before_its_ledger_and_unanswered(
    ensemble: FakeEnsemble,
) -> None:
    client = ensemble.client()
    store = store_of(client)
    run = SuiteRun.register(client, ROOT)  # type: ignore[arg-type]
    before = client.calls["create"]
    run.journal(7)
    assert client.calls["create"] == before + 1
    run.journal(7)  # a second create of the same ledger: one entry
    store.create(7, metadata(run.custom_metadata))
    assert run.finish(store).deleted == [7]
    assert run.journal_errors == {}


# Clean-up after runs that died -----------------------------------------------------------------


def test_clean_deletes_a_dead_runs_ledgers_and_leaves_live_runs_and_everything_unmarked(
    ensemble: FakeEnsemble,
) -> None:
    killed, live, admin = ensemble.client(), ensemble.client(), ensemble.client()
    admin_store = store_of(admin)
    unmarked = create(admin_store)
    simpletest = create(admin_store, (("Bookie", b"simpletest"),))
    dead_run = SuiteRun.register(killed, ROOT)  # type: ignore[arg-type]
    dead_ids = run_ledgers(store_of(killed), dead_run, 3)
    live_run = SuiteRun.register(live, ROOT)  # type: ignore[arg-type]
    live_ids = run_ledgers(store_of(live), live_run, 2)
    killed.stop()  # kill -9: the session ends (a session timeout later), the node stays
    assert f"{dead_run.path}/alive" not in ensemble.nodes

    report = clean(admin_store, process_liveness=unknown)
    assert report.dead_runs == [dead_run.run_id]
    assert report.removal.deleted == dead_ids
    assert report.live_runs == {live_run.run_id: 2}
    assert admin_store.list_ledgers() == sorted([unmarked, simpletest, *live_ids])
    assert dead_run.path not in ensemble.nodes
    assert "deleted 3 ledgers of 1 run" in report.describe()[0]
    assert "left alone 2 ledgers of 1 live run" in "\n".join(report.describe())

    assert live_run.finish(store_of(live)).deleted == live_ids
    assert admin_store.list_ledgers() == sorted([unmarked, simpletest])
    assert ensemble.paths("/bkconform") == []


def test_a_run_whose_process_is_gone_is_dead_while_its_session_lingers(
    ensemble: FakeEnsemble,
) -> None:
    client = ensemble.client()
    run = SuiteRun.register(client, ROOT)  # type: ignore[arg-type]
    ids = run_ledgers(store_of(client), run, 2)
    admin = store_of(ensemble.client())
    assert clean(admin, process_liveness=lambda _: "alive").removal.deleted == []
    report = clean(admin, process_liveness=lambda _: "dead")
    assert report.removal.deleted == ids and admin.list_ledgers() == []
    # This machine's own reading: the test process is alive, so its run is.
    again = SuiteRun.register(client, ROOT)  # type: ignore[arg-type]
    run_ledgers(store_of(client), again, 1)
    client.stop()
    assert clean(admin).live_runs == {again.run_id: 1}


def test_kept_ledgers_stay_unless_asked_and_other_clusters_runs_are_not_touched(
    ensemble: FakeEnsemble,
) -> None:
    client = ensemble.client()
    store = store_of(client)
    init_new_cluster(client, "/other")  # type: ignore[arg-type]
    other = LedgerStore(client, "/other")  # type: ignore[arg-type]
    elsewhere = SuiteRun.register(client, "/other")  # type: ignore[arg-type]
    other_ids = run_ledgers(other, elsewhere, 1)
    run = SuiteRun.register(client, ROOT)  # type: ignore[arg-type]
    ids = run_ledgers(store, run, 3)
    run.finish(store, keep=ids[:2])
    client.stop()

    report = clean(store, process_liveness=unknown, scan=True)
    assert report.removal.deleted == [] and sorted(report.kept) == ids[:2]
    assert store.list_ledgers() == ids[:2]
    assert "--include-kept deletes them" in "\n".join(report.describe())
    assert other.list_ledgers() == other_ids
    report = clean(store, process_liveness=unknown, include_kept=True)
    assert report.removal.deleted == ids[:2] and store.list_ledgers() == []
    assert run.path not in ensemble.nodes and elsewhere.path in ensemble.nodes


def test_the_scan_finds_marked_ledgers_no_journal_lists(ensemble: FakeEnsemble) -> None:
    admin = store_of(ensemble.client())
    orphan = create(admin, mark("a-run-that-never-registered"))
    client = ensemble.client()
    live = SuiteRun.register(client, ROOT)  # type: ignore[arg-type]
    live_unjournaled = create(store_of(client), live.custom_metadata)
    unmarked = create(admin)
    assert clean(admin, process_liveness=unknown).removal.deleted == []
    report = clean(admin, process_liveness=unknown, scan=True)
    assert report.removal.deleted == [orphan] and report.found_by_scan == 1
    assert report.scanned == 3
    assert admin.list_ledgers() == [live_unjournaled, unmarked]


def test_a_lost_connection_is_an_error_not_a_clean_run(ensemble: FakeEnsemble) -> None:
    client = ensemble.client()
    run = SuiteRun.register(client, ROOT)  # type: ignore[arg-type]
    store = store_of(client)
    run_ledgers(store, run, 2)
    client.failure = ConnectionLoss()
    with pytest.raises(ZooKeeperError):
        run.finish(store)
    client.failure = None
    assert run.path in ensemble.nodes, "the run's journal stays for clean to finish the job"


def test_a_kept_ledger_whose_journal_entry_was_lost_is_journaled_kept(
    ensemble: FakeEnsemble,
) -> None:
    client = ensemble.client()
    store = store_of(client)
    run = SuiteRun.register(client, ROOT)  # type: ignore[arg-type]
    ids = run_ledgers(store, run, 2)
    ensemble.delete(f"{run.path}/L{ids[0]}")
    assert run.finish(store, keep=[ids[0]]).deleted == [ids[1]]
    assert ensemble.nodes[f"{run.path}/L{ids[0]}"].data == b"kept"
    client.stop()
    admin = store_of(ensemble.client())
    assert clean(admin, scan=True, process_liveness=unknown).kept == [ids[0]]
    assert admin.list_ledgers() == [ids[0]]
