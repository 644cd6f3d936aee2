"""Gates in a real bookie's JVM: a local cluster of one bookie host (``in_jvm_restarts``) with
the gate agent loaded, driven over the wire by the project's own bookie client.

An add held at its write to the ledger storage: the thread is held, the add's answer does not
come, and after the release it does. A fencing read held at the fence itself (``setFenced``,
inside the handle's ``synchronized fenceAndLogInJournal``): its answer does not come, and an add
sent meanwhile waits on the handle and is refused EFENCED once the fence goes on. Requests for
another ledger pass a gate armed for this one. The agent lives as long as its JVM: through an
in-JVM restart, and loaded again by a new JVM. On 4.17.3 and 4.18.0."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from adapters.bookkeeper.client import LAST_ADD_CONFIRMED, BookieClient
from adapters.bookkeeper.entry import DigestType as WireDigestType
from adapters.bookkeeper.entry import master_key, package_entry
from adapters.bookkeeper.status import StatusCode
from adapters.bookkeeper.v3 import HIGH_PRIORITY
from adapters.cluster import BookieSettings, DataLoss, LocalCluster, LocalClusterOptions, Node
from adapters.cluster.gates import At, GateClient, GateConnectionLost, GatePoint
from adapters.zookeeper.ledger_store import LedgerStore
from adapters.zookeeper.metadata import DigestType, LedgerMetadata, Segment
from tests.bookkeeper_fixtures import installed_home

pytestmark = pytest.mark.cluster

PASSWORD = b"gates"
KEY = master_key(PASSWORD)
#: How long an answer must stay away while its thread is held to count as withheld.
WITHHELD_FOR = 1.0


@pytest.fixture(params=["4.17.3", "4.18.0"])
def cluster(work_dir: Path, request: pytest.FixtureRequest) -> Iterator[LocalCluster]:
    options = LocalClusterOptions(
        bookies=1,
        work_dir=work_dir,
        bookkeeper_home=installed_home(str(request.param)),
        use_bookkeeper_home_env=False,
        bookie_settings=BookieSettings(gates=True, in_jvm_restarts=True),
        start_timeout=120.0,
    )
    with LocalCluster(options) as running:
        yield running


def new_ledger(cluster: LocalCluster, bookie_id: str) -> int:
    """A ledger's metadata first, as the Java client writes it."""
    store = LedgerStore(cluster.zookeeper_client, "/ledgers")
    ledger_id = store.allocate_ledger_id()
    metadata = LedgerMetadata(
        ensemble_size=1,
        write_quorum_size=1,
        ack_quorum_size=1,
        segments=(Segment(0, (bookie_id,)),),
        digest_type=DigestType.CRC32,
        password=PASSWORD,
    )
    store.create(ledger_id, metadata)
    return ledger_id


def body(ledger_id: int, entry_id: int) -> bytes:
    payload = f"entry-{entry_id}".encode()
    return package_entry(
        WireDigestType.CRC32,
        PASSWORD,
        ledger_id,
        entry_id,
        entry_id - 1,
        len(payload) * (entry_id + 1),
        payload,
    )


def log(message: str) -> None:
    print(f"{time.strftime('%H:%M:%S')} {message}", flush=True)


def test_an_add_held_at_the_ledger_storage_is_answered_only_once_released(
    cluster: LocalCluster,
) -> None:
    bookie_id = next(iter(cluster.endpoints().bookies))
    host, port = cluster.endpoints().bookies[bookie_id]
    ledger, other = new_ledger(cluster, bookie_id), new_ledger(cluster, bookie_id)

    async def scenario(gates: GateClient) -> None:
        async with await BookieClient.connect(host, port, request_timeout=20.0) as client:
            gate = await asyncio.to_thread(
                gates.arm, GatePoint.STORAGE_ADD, At.ENTRY, ledger=ledger
            )
            # Another ledger's add passes the gate.
            passed = await client.add(other, 0, KEY, body(other, 0), timeout=10.0)
            assert passed.status is StatusCode.EOK
            add = asyncio.create_task(client.add(ledger, 0, KEY, body(ledger, 0), timeout=20.0))
            hold = await asyncio.to_thread(gates.wait_held, gate, timeout=10.0)
            log(f"held: {hold}")
            assert (hold.point, hold.at, hold.ledger, hold.entry) == (
                GatePoint.STORAGE_ADD,
                At.ENTRY,
                ledger,
                0,
            )
            done, _ = await asyncio.wait({add}, timeout=WITHHELD_FOR)
            assert not done, "the add was answered while its thread was held"
            log(f"no answer to the add of {ledger}:0 for {WITHHELD_FOR} s while held")
            released = time.monotonic()
            await asyncio.to_thread(gates.release, hold)
            answer = await asyncio.wait_for(add, 10.0)
            log(f"released; answer {answer} after {time.monotonic() - released:.3f} s")
            assert answer.status is StatusCode.EOK
            read = await client.read(ledger, 0, timeout=10.0)
            assert read.status is StatusCode.EOK and read.body == body(ledger, 0)

    with GateClient.connect(*cluster.gate_address(bookie_id)) as gates:
        asyncio.run(scenario(gates))
        # Every point's method is in this release (its classes have all loaded by now).
        points = gates.points()
        log(f"points: {points}")
        assert points == {point.value: "installed" for point in GatePoint}


def test_a_fencing_read_held_at_the_fence_holds_its_answer_and_a_racing_add(
    cluster: LocalCluster,
) -> None:
    bookie_id = next(iter(cluster.endpoints().bookies))
    host, port = cluster.endpoints().bookies[bookie_id]
    ledger = new_ledger(cluster, bookie_id)

    async def scenario(gates: GateClient) -> None:
        async with (
            await BookieClient.connect(host, port, request_timeout=20.0) as writer,
            await BookieClient.connect(host, port, request_timeout=20.0) as recovery,
        ):
            first = await writer.add(ledger, 0, KEY, body(ledger, 0), timeout=10.0)
            assert first.status is StatusCode.EOK
            gate = await asyncio.to_thread(gates.arm, GatePoint.SET_FENCED, At.ENTRY, ledger=ledger)
            fence = asyncio.create_task(
                recovery.read(
                    ledger,
                    LAST_ADD_CONFIRMED,
                    fence=True,
                    master_key=KEY,
                    priority=HIGH_PRIORITY,
                    timeout=20.0,
                )
            )
            hold = await asyncio.to_thread(gates.wait_held, gate, timeout=10.0)
            log(f"held: {hold}")
            assert (hold.point, hold.ledger) == (GatePoint.SET_FENCED, ledger)
            # The held thread is inside the handle's synchronized fenceAndLogInJournal: an add
            # of this ledger waits on the handle for the fence, whose result it then sees.
            add = asyncio.create_task(writer.add(ledger, 1, KEY, body(ledger, 1), timeout=20.0))
            done, _ = await asyncio.wait({fence, add}, timeout=WITHHELD_FOR)
            assert not done, f"answered while the fence was held: {done}"
            log(f"no answer to the fence nor the add for {WITHHELD_FOR} s while held")
            await asyncio.to_thread(gates.release, hold)
            fenced = await asyncio.wait_for(fence, 10.0)
            refused = await asyncio.wait_for(add, 10.0)
            log(f"released; the fence answered {fenced.status.name}, the add {refused.status.name}")
            assert fenced.status is StatusCode.EOK and fenced.body == body(ledger, 0)
            assert refused.status is StatusCode.EFENCED

    with GateClient.connect(*cluster.gate_address(bookie_id)) as gates:
        asyncio.run(scenario(gates))


def test_the_agent_lives_with_the_jvm_across_restarts(cluster: LocalCluster) -> None:
    """An in-JVM restart (the bookie host) keeps the agent and the harness's connection; a
    restart in a new JVM loads the agent again on the same port, for a new connection."""
    bookie_id = next(iter(cluster.endpoints().bookies))
    node = Node.bookie(bookie_id)

    def held_add_is_released(gates: GateClient) -> None:
        host, port = cluster.endpoints().bookies[bookie_id]
        ledger = new_ledger(cluster, bookie_id)

        async def scenario() -> None:
            async with await BookieClient.connect(host, port, request_timeout=20.0) as client:
                gate = await asyncio.to_thread(
                    gates.arm, GatePoint.JOURNAL_ADD, ledger=ledger, count=2
                )
                add = asyncio.create_task(client.add(ledger, 0, KEY, body(ledger, 0)))
                # A ledger's first add journals its master key first (METAENTRY_ID_LEDGER_KEY,
                # -0x1000), then the entry: the same thread, held twice.
                entries = []
                for _ in range(2):
                    hold = await asyncio.to_thread(gates.wait_held, gate, timeout=10.0)
                    entries.append(hold.entry)
                    await asyncio.to_thread(gates.release, hold)
                assert entries == [-0x1000, 0]
                assert (await asyncio.wait_for(add, 10.0)).status is StatusCode.EOK

        asyncio.run(scenario())

    gates = GateClient.connect(*cluster.gate_address(bookie_id))
    try:
        cluster.restart_with_data_loss(node, DataLoss.WIPE)  # inside the JVM
        held_add_is_released(gates)
        cluster.restart(node)  # a new JVM
        with pytest.raises(GateConnectionLost):
            gates.release_all()
    finally:
        gates.close()
    with GateClient.connect(*cluster.gate_address(bookie_id)) as again:
        held_add_is_released(again)
