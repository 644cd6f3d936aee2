"""The adapter against a real standalone ZooKeeper (started by ``conftest.py``)."""

from __future__ import annotations

import threading
import uuid

import pytest
from kazoo.client import KazooClient

from adapters.zookeeper.client import connect_zookeeper, wait
from adapters.zookeeper.cookie import parse_cookie
from adapters.zookeeper.errors import (
    BookieAlreadyRegistered,
    ClusterAlreadyFormatted,
    ClusterNotFormatted,
    CookieMismatch,
    InvalidExpectedVersion,
    InvalidMetadataTransition,
    LedgerExists,
    MetadataVersionMismatch,
    NoSuchCookie,
    NoSuchLedger,
)
from adapters.zookeeper.idgen import allocate_ledger_ids
from adapters.zookeeper.layout import (
    LedgerLayout,
    init_new_cluster,
    is_formatted,
    read_instance_id,
    read_layout,
    serialize_layout,
)
from adapters.zookeeper.ledger_store import LedgerStore
from adapters.zookeeper.metadata import (
    DigestType,
    LedgerMetadata,
    LedgerState,
    Segment,
    parse_ledger_metadata,
    serialize_ledger_metadata,
)
from adapters.zookeeper.paths import LAYOUTS
from adapters.zookeeper.registration import (
    BookieAddress,
    ensure_cookie,
    list_bookies,
    read_cookie,
    register_bookie,
    unregister_bookie,
)
from tests.adapters.zookeeper.golden import golden_ledger_znodes, load_golden_znodes

pytestmark = pytest.mark.cluster

ROOT = "/ledgers"
ENSEMBLE = ("127.0.0.1:3181", "127.0.0.1:3182", "127.0.0.1:3183")
GOLDEN_417 = {z.path: z for z in load_golden_znodes() if z.file == "zk_4.17.4.json"}


def get(zk: KazooClient, path: str) -> bytes:
    data, _stat = wait(zk.get_async(path), timeout=10, operation=f"get {path}")
    return bytes(data)


def children(zk: KazooClient, path: str) -> list[str]:
    names: list[str] = wait(zk.get_children_async(path), timeout=10, operation=path)
    return sorted(names)


def metadata() -> LedgerMetadata:
    return LedgerMetadata(
        ensemble_size=3,
        write_quorum_size=3,
        ack_quorum_size=2,
        segments=(Segment(0, ENSEMBLE),),
        digest_type=DigestType.CRC32C,
        password=b"secret",
        ctoken=42,
    )


@pytest.fixture
def formatted(zk: KazooClient) -> KazooClient:
    init_new_cluster(zk, ROOT)
    return zk


# --- formatting ------------------------------------------------------------------------------


def test_init_new_cluster_writes_what_bookkeeper_writes(zk: KazooClient) -> None:
    assert not is_formatted(zk, ROOT)
    with pytest.raises(ClusterNotFormatted):
        read_layout(zk, ROOT)
    with pytest.raises(ClusterNotFormatted):
        read_instance_id(zk, ROOT)

    instance_id = init_new_cluster(zk, ROOT)

    assert str(uuid.UUID(instance_id)) == instance_id
    assert children(zk, ROOT) == ["INSTANCEID", "LAYOUT", "available"]
    assert children(zk, f"{ROOT}/available") == ["readonly"]
    assert get(zk, f"{ROOT}/LAYOUT") == GOLDEN_417["/ledgers/LAYOUT"].data
    assert get(zk, f"{ROOT}/INSTANCEID") == instance_id.encode()
    for empty in (ROOT, f"{ROOT}/available", f"{ROOT}/available/readonly"):
        assert get(zk, empty) == b""
    assert is_formatted(zk, ROOT)
    assert read_instance_id(zk, ROOT) == instance_id
    assert read_layout(zk, ROOT).layout == "hierarchical"
    with pytest.raises(ClusterAlreadyFormatted):
        init_new_cluster(zk, ROOT)
    assert read_instance_id(zk, ROOT) == instance_id


@pytest.mark.parametrize("layout", LAYOUTS)
def test_init_new_cluster_layouts_and_nested_roots(zk: KazooClient, layout: str) -> None:
    root = f"/bk/{layout}/ledgers"
    first = init_new_cluster(zk, root, layout)
    assert get(zk, f"{root}/LAYOUT") == serialize_layout(LedgerLayout.for_layout(layout))
    assert read_layout(zk, root).layout == layout
    assert init_new_cluster(zk, "/other", layout) != first


# --- ledger ids ------------------------------------------------------------------------------


@pytest.mark.parametrize("layout", LAYOUTS)
def test_ids_are_sequential_and_leave_no_znodes(zk: KazooClient, layout: str) -> None:
    init_new_cluster(zk, ROOT, layout)
    store = LedgerStore(zk, ROOT, layout)
    # ZooKeeper numbers sequential children with the parent's child version: 0 for the fresh
    # idgen node, but the flat layout allocates directly under the root, whose formatting
    # already created children, so its first id is not 0 (in real BookKeeper either).
    _data, root_stat = wait(zk.get_async(ROOT), timeout=10, operation="get")
    first = root_stat.cversion if layout == "flat" else 0
    assert [store.allocate_ledger_id() for _ in range(5)] == list(range(first, first + 5))
    if layout == "flat":
        assert not [name for name in children(zk, ROOT) if name.startswith("ID-")]
    else:
        assert children(zk, f"{ROOT}/idgen") == []


def test_a_batch_of_ids_is_one_transaction_of_sequential_znodes(formatted: KazooClient) -> None:
    store = LedgerStore(formatted, ROOT)
    assert store.allocate_ledger_id() == 0
    assert allocate_ledger_ids(formatted, ROOT, count=8) == list(range(1, 9))
    assert store.allocate_ledger_id() == 9
    assert children(formatted, f"{ROOT}/idgen") == []


def test_long_ids_once_idgen_long_exists(formatted: KazooClient) -> None:
    store = LedgerStore(formatted, ROOT)
    assert store.allocate_ledger_id() == 0
    wait(formatted.create_async(f"{ROOT}/idgen-long"), timeout=10, operation="create")
    assert store.allocate_ledger_id() == 1 << 32
    assert store.allocate_ledger_id() == (1 << 32) + 1
    assert children(formatted, f"{ROOT}/idgen-long") == ["HOB-0000000001"]
    for high in (2, 3, 4, 7):
        wait(
            formatted.create_async(f"{ROOT}/idgen-long/HOB-{high:010d}"),
            timeout=10,
            operation="create",
        )
    assert store.allocate_ledger_id() == 7 << 32
    # Only the newest three high-order directories are kept.
    assert children(formatted, f"{ROOT}/idgen-long") == [
        "HOB-0000000003",
        "HOB-0000000004",
        "HOB-0000000007",
    ]


def test_concurrent_allocations_are_distinct(formatted: KazooClient) -> None:
    store = LedgerStore(formatted, ROOT)
    allocated: list[int] = []
    lock = threading.Lock()

    def allocate() -> None:
        for _ in range(10):
            ledger_id = store.allocate_ledger_id()
            with lock:
                allocated.append(ledger_id)

    threads = [threading.Thread(target=allocate) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert sorted(allocated) == list(range(40))


# --- metadata znodes ---------------------------------------------------------------------------


def test_create_read_and_compare_and_set(formatted: KazooClient) -> None:
    store = LedgerStore(formatted, ROOT)
    ledger_id = store.allocate_ledger_id()
    original = metadata()
    assert store.create(ledger_id, original) == 0
    assert get(formatted, store.path(ledger_id)) == serialize_ledger_metadata(original)
    assert store.read(ledger_id) == (original, 0)
    assert store.exists(ledger_id)
    with pytest.raises(LedgerExists):
        store.create(ledger_id, original)

    recovering = original.to_in_recovery()
    assert store.write(ledger_id, recovering, expected_version=0) == 1
    with pytest.raises(MetadataVersionMismatch) as stale:
        store.write(ledger_id, original, expected_version=0)
    assert stale.value.expected_version == 0
    assert store.read(ledger_id) == (recovering, 1)
    with pytest.raises(InvalidExpectedVersion):
        store.write(ledger_id, original, expected_version=-1)

    with pytest.raises(MetadataVersionMismatch):
        store.delete(ledger_id, expected_version=0)
    store.delete(ledger_id, expected_version=1)
    with pytest.raises(NoSuchLedger):
        store.read(ledger_id)
    with pytest.raises(NoSuchLedger):
        store.write(ledger_id, original, expected_version=1)
    with pytest.raises(NoSuchLedger):
        store.delete(ledger_id)
    assert not store.exists(ledger_id)


def test_the_golden_ledger_history_replayed_gives_the_golden_znodes(
    formatted: KazooClient,
) -> None:
    opened, _after_adds, in_recovery, closed = golden_ledger_znodes("zk_4.17.4.json")
    store = LedgerStore(formatted, ROOT)
    created = parse_ledger_metadata(opened.data)
    assert store.create(150, created) == opened.stat_version
    assert get(formatted, opened.path) == opened.data

    recovering, version = store.mark_in_recovery(150, created, 0)
    assert version == in_recovery.stat_version
    assert get(formatted, in_recovery.path) == in_recovery.data

    _closed, version = store.close_ledger(150, recovering, version, last_entry_id=4, length=35)
    assert version == closed.stat_version
    assert get(formatted, closed.path) == closed.data


def test_racing_recoveries_one_wins_the_other_sees_a_version_mismatch(
    formatted: KazooClient,
) -> None:
    store = LedgerStore(formatted, ROOT)
    store.create(7, metadata())
    seen_by_a, version_a = store.read(7)
    seen_by_b, version_b = store.read(7)
    _recovering, version = store.mark_in_recovery(7, seen_by_a, version_a)
    with pytest.raises(MetadataVersionMismatch):
        store.mark_in_recovery(7, seen_by_b, version_b)
    with pytest.raises(MetadataVersionMismatch):
        store.close_ledger(7, seen_by_b, version_b, last_entry_id=3, length=10)
    current, version = store.read(7)
    assert current.state is LedgerState.IN_RECOVERY and version == 1
    closed, version = store.close_ledger(7, current, version, last_entry_id=3, length=10)
    assert store.read(7) == (closed, 2)
    with pytest.raises(InvalidMetadataTransition):
        store.mark_in_recovery(7, closed, version)
    assert store.read(7) == (closed, 2)


def test_ensemble_changes_are_compare_and_set(formatted: KazooClient) -> None:
    store = LedgerStore(formatted, ROOT)
    store.create(3, metadata())
    current, version = store.read(3)
    replacement = ("127.0.0.1:3181", "127.0.0.1:3184", "127.0.0.1:3183")
    changed, version = store.append_segment(
        3, current, version, first_entry_id=5, bookies=replacement
    )
    assert store.read(3) == (changed, 1)
    assert changed.segments == (Segment(0, ENSEMBLE), Segment(5, replacement))
    with pytest.raises(MetadataVersionMismatch):
        store.replace_segment(3, current, 0, first_entry_id=0, bookies=replacement)
    replaced, version = store.replace_segment(
        3, changed, version, first_entry_id=5, bookies=ENSEMBLE
    )
    assert store.read(3) == (replaced, 2)


@pytest.mark.parametrize("layout", LAYOUTS)
def test_list_ledgers_finds_every_ledger_and_ignores_strays(zk: KazooClient, layout: str) -> None:
    init_new_cluster(zk, ROOT, layout)
    store = LedgerStore(zk, ROOT, layout)
    ids = [0, 1, 150, 9999, 2**31 - 2, 2**31 - 1, 5_000_000_000]
    if layout != "flat":
        ids += [10**12, 2**63 - 1]
    for ledger_id in ids:
        store.create(ledger_id, metadata())
    store.allocate_ledger_id()
    for stray in (f"{ROOT}/foo", f"{ROOT}/00/0000/xyz", f"{ROOT}/99", f"{ROOT}/L12"):
        wait(zk.create_async(stray, b"", makepath=True), timeout=10, operation="create")
    assert store.list_ledgers() == sorted(ids)
    assert LedgerStore(zk, "/absent", layout).list_ledgers() == []


# --- bookies -----------------------------------------------------------------------------------


def test_registration_is_ephemeral_and_byte_identical(
    formatted: KazooClient, zk_connect_string: str
) -> None:
    bookie = connect_zookeeper(zk_connect_string, timeout=10)
    try:
        path = register_bookie(bookie, ROOT, "127.0.0.1:3181", "127.0.0.1", 3181)
        assert path == f"{ROOT}/available/127.0.0.1:3181"
        data, stat = wait(formatted.get_async(path), timeout=10, operation="get")
        assert data == GOLDEN_417["/ledgers/available/127.0.0.1:3181"].data
        assert stat.ephemeralOwner == bookie.client_id[0]
        # Registering again from the owning session changes nothing.
        assert register_bookie(bookie, ROOT, "127.0.0.1:3181", "127.0.0.1", 3181) == path
        assert list_bookies(formatted, ROOT) == {
            "127.0.0.1:3181": BookieAddress("127.0.0.1", 3181, readonly=False)
        }
    finally:
        bookie.stop()
        bookie.close()
    assert list_bookies(formatted, ROOT) == {}


def test_discovery_of_readonly_custom_and_legacy_bookies(formatted: KazooClient) -> None:
    register_bookie(formatted, ROOT, "bookie-a", "10.1.2.3", 4181)
    register_bookie(formatted, ROOT, "127.0.0.1:3182", "127.0.0.1", 3182)
    register_bookie(formatted, ROOT, "127.0.0.1:3182", "127.0.0.1", 3182, readonly=True)
    # A pre-4.11 bookie: empty data, the address is the id.
    wait(
        formatted.create_async(f"{ROOT}/available/127.0.0.1:3183", b"", ephemeral=True),
        timeout=10,
        operation="create",
    )
    assert list_bookies(formatted, ROOT) == {
        "127.0.0.1:3182": BookieAddress("127.0.0.1", 3182, readonly=True),
        "127.0.0.1:3183": BookieAddress("127.0.0.1", 3183),
        "bookie-a": BookieAddress("10.1.2.3", 4181),
    }
    assert children(formatted, f"{ROOT}/available") == ["127.0.0.1:3183", "bookie-a", "readonly"]
    assert set(list_bookies(formatted, ROOT, include_readonly=False)) == {
        "127.0.0.1:3183",
        "bookie-a",
    }
    unregister_bookie(formatted, ROOT, "bookie-a")
    unregister_bookie(formatted, ROOT, "bookie-a")
    assert "bookie-a" not in list_bookies(formatted, ROOT)


def test_a_registration_held_by_another_session(
    formatted: KazooClient, zk_connect_string: str
) -> None:
    other = connect_zookeeper(zk_connect_string, timeout=10)
    try:
        register_bookie(other, ROOT, "127.0.0.1:3181", "127.0.0.1", 3181)
        # The other session lives on, so its znode stays however long the wait: refused on any
        # machine. 0.5 s is also the limit of each ZooKeeper call here (local ones).
        with pytest.raises(BookieAlreadyRegistered):
            register_bookie(formatted, ROOT, "127.0.0.1:3181", "127.0.0.1", 3181, timeout=0.5)
    finally:
        other.stop()
        other.close()
    # other.close() ended its session and ZooKeeper deleted the ephemeral then; the wait is a
    # watch, and 5 s only caps it.
    path = register_bookie(formatted, ROOT, "127.0.0.1:3181", "127.0.0.1", 3181, timeout=5)
    _data, stat = wait(formatted.get_async(path), timeout=10, operation="get")
    assert stat.ephemeralOwner == formatted.client_id[0]


def test_unformatted_cluster(zk: KazooClient) -> None:
    with pytest.raises(ClusterNotFormatted):
        register_bookie(zk, ROOT, "127.0.0.1:3181", "127.0.0.1", 3181)
    with pytest.raises(ClusterNotFormatted):
        list_bookies(zk, ROOT)


def test_cookies_are_byte_identical_and_checked(formatted: KazooClient) -> None:
    golden = GOLDEN_417["/ledgers/cookies/127.0.0.1:3181"]
    expected = parse_cookie(golden.data)
    assert expected.instance_id is not None

    def ensure(ledger_dirs: tuple[str, ...], instance_id: str) -> None:
        ensure_cookie(
            formatted,
            ROOT,
            "127.0.0.1:3181",
            bookie_host="127.0.0.1:3181",
            journal_dir=expected.journal_dirs,
            ledger_dirs=ledger_dirs,
            instance_id=instance_id,
        )

    with pytest.raises(NoSuchCookie):
        read_cookie(formatted, ROOT, "127.0.0.1:3181")
    ensure(expected.ledger_dirs, expected.instance_id)
    assert get(formatted, f"{ROOT}/cookies/127.0.0.1:3181") == golden.data
    assert read_cookie(formatted, ROOT, "127.0.0.1:3181") == expected
    ensure(expected.ledger_dirs, expected.instance_id)
    with pytest.raises(CookieMismatch, match="ledgerDirs"):
        ensure(("/elsewhere",), expected.instance_id)
    with pytest.raises(CookieMismatch, match="instanceId"):
        ensure(expected.ledger_dirs, "another-cluster")
    assert get(formatted, f"{ROOT}/cookies/127.0.0.1:3181") == golden.data
