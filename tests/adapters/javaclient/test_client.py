"""``BookKeeperJavaClient``: against the compiled stand-in API here, and against real BookKeeper
4.11.1 and the default version (installed from Maven Central; real bookies, through proxies)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from adapters.javaclient import (
    BKLedgerClosed,
    BKLedgerFenced,
    BKNoSuchLedger,
    BookKeeperJavaClient,
    ClientOptions,
    JavaClientError,
    JavaDigestType,
    JvmGone,
    JvmOptions,
)
from adapters.javaclient.errors import BKReadError, BKUnauthorizedAccess
from tests.adapters.javaclient.test_gateway import processes_with

URI = "zk+hierarchical://127.0.0.1:2181/ledgers"
PW = b"java-pw"


def test_options_are_checked() -> None:
    with pytest.raises(JavaClientError, match="not a ZooKeeper one"):
        ClientOptions("http://nowhere")
    with pytest.raises(JavaClientError, match="speculative_read_timeout_ms"):
        ClientOptions(URI, speculative_read_timeout_ms=-1)
    with pytest.raises(JavaClientError, match="bad ZooKeeper location"):
        ClientOptions.for_zookeeper("127.0.0.1:2181", "ledgers")
    zk = ClientOptions.for_zookeeper("127.0.0.1:2181,127.0.0.1:2182", speculative_read_timeout_ms=9)
    assert zk.metadata_service_uri == "zk+hierarchical://127.0.0.1:2181;127.0.0.1:2182/ledgers"
    assert zk.speculative_read_timeout_ms == 9
    with pytest.raises(JavaClientError, match="no classpath"):
        BookKeeperJavaClient.launch(ClientOptions(URI))


@pytest.fixture
def client(java_classes: Path, tmp_path: Path) -> Iterator[BookKeeperJavaClient]:
    options = ClientOptions(
        URI,
        speculative_read_timeout_ms=300,
        bookie_address_resolver_enabled=False,
        add_entry_timeout_s=5,
        properties={"custom": "yes"},
    )
    jvm = JvmOptions(log_path=tmp_path / "jvm.log", call_timeout=10)
    with BookKeeperJavaClient.launch(options, jars=[java_classes], jvm_options=jvm) as launched:
        yield launched


@pytest.mark.cluster
def test_configuration_reaches_the_java_client(client: BookKeeperJavaClient) -> None:
    bookkeeper_class = client.gateway.jvm.org.apache.bookkeeper.client.BookKeeper
    conf = client.gateway.call(lambda: bookkeeper_class.lastConfiguration)
    expected = {
        "metadataServiceUri": URI,
        "speculativeReadTimeout": 300,
        "bookieAddressResolverEnabled": False,
        "addEntryTimeout": 5,
        "custom": "yes",
    }
    settings = client.gateway.call(
        lambda: {key: conf.get(key) for key in [*expected, "readEntryTimeout", "zkTimeout"]}
    )
    assert settings == {**expected, "readEntryTimeout": None, "zkTimeout": None}


@pytest.mark.cluster
def test_ledger_operations_and_fencing(client: BookKeeperJavaClient) -> None:
    writer = client.create_ledger(3, 3, 2, JavaDigestType.CRC32, PW)
    assert [writer.add_entry(b"e0"), writer.add_entry(b"e1")] == [0, 1]
    assert writer.last_add_confirmed() == 1
    reader = client.open_ledger(writer.ledger_id, JavaDigestType.CRC32, PW, recovery=False)
    assert [(e.entry_id, e.data) for e in reader.read_entries(0, 1)] == [(0, b"e0"), (1, b"e1")]
    assert reader.read_last_add_confirmed() == 1
    with pytest.raises(BKReadError):
        reader.read_entries(0, 5)
    writer.add_entry(b"e2")  # no recovery open yet: the writer goes on
    recovered = client.open_ledger(writer.ledger_id, JavaDigestType.CRC32, PW, recovery=True)
    assert recovered.is_closed()
    with pytest.raises(BKLedgerFenced) as fenced:
        writer.add_entry(b"e3")
    assert fenced.value.code == -101
    with pytest.raises(BKUnauthorizedAccess):
        client.open_ledger(writer.ledger_id, JavaDigestType.CRC32, b"wrong", recovery=False)
    with pytest.raises(BKNoSuchLedger):
        client.open_ledger(10**9, JavaDigestType.CRC32, PW, recovery=True)


@pytest.mark.cluster
def test_closing_the_ledger_and_the_client(client: BookKeeperJavaClient) -> None:
    ledger = client.create_ledger(1, 1, 1, JavaDigestType.CRC32C, PW)
    ledger.close()
    with pytest.raises(BKLedgerClosed):
        ledger.add_entry(b"late")
    with pytest.raises(JavaClientError, match="ensemble >= write quorum"):
        client.create_ledger(2, 3, 1, JavaDigestType.CRC32, PW)
    pid = client.gateway.pid
    client.close()
    assert pid is not None and not Path(f"/proc/{pid}/cmdline").exists()
    with pytest.raises(JvmGone):
        ledger.add_entry(b"after close")


# -- a real BookKeeper distribution -------------------------------------------------------------


@pytest.mark.cluster
def test_real_client_recovery_fences_the_writer_through_proxies(
    tmp_path: Path, java_client_home: Path
) -> None:
    """On 4.11.1 and on the default version (``java_client_home``, tests/bookkeeper_fixtures.py)."""
    from adapters.cluster import LocalCluster, LocalClusterOptions
    from adapters.netproxy import FrameFlag, FrameMatch, Operation, ProxyGroup
    from adapters.netproxy.routing import route_through_proxies, routing_method_for_distribution

    home = java_client_home
    cluster_options = LocalClusterOptions(
        bookies=3, work_dir=tmp_path / "cluster", bookkeeper_home=home
    )
    with LocalCluster(cluster_options) as cluster, ProxyGroup() as group:
        endpoints = cluster.endpoints()
        proxies = {
            bookie_id: group.add(bookie_id, host, port)
            for bookie_id, (host, port) in endpoints.bookies.items()
        }
        method = routing_method_for_distribution(home)
        routing = route_through_proxies(
            cluster.zookeeper_client, endpoints.ledgers_root, proxies, method
        )
        options = ClientOptions(endpoints.metadata_service_uri, speculative_read_timeout_ms=300)
        jvm = JvmOptions(log_path=tmp_path / "jvm.log")
        with routing:
            # Routed before the client starts, so that it never caches a bookie's own address.
            routing.wait_routed(10)
            with BookKeeperJavaClient.launch(
                options, bookkeeper_home=home, jvm_options=jvm
            ) as client:
                writer = client.create_ledger(3, 3, 2, JavaDigestType.CRC32, PW)
                assert writer.add_entry(b"e0") == 0
                recovered = client.open_ledger(
                    writer.ledger_id, JavaDigestType.CRC32, PW, recovery=True
                )
                assert recovered.is_closed()
                assert [e.data for e in recovered.read_entries(0, 0)] == [b"e0"]
                with pytest.raises(BKLedgerFenced):
                    writer.add_entry(b"e1")
        fence_reads = group.frames(
            FrameMatch.request(
                Operation.READ_ENTRY, ledger_id=writer.ledger_id, flags={FrameFlag.FENCE_LEDGER}
            )
        )
        assert len({frame.proxy for frame in fence_reads}) == 3


@pytest.mark.cluster
def test_failed_connect_kills_the_launched_jvm(tmp_path: Path) -> None:
    marker = f"bkconform.test.{uuid.uuid4().hex}"
    empty = tmp_path / "no-classes"
    empty.mkdir()
    jvm = JvmOptions(log_path=tmp_path / "jvm.log", system_properties={marker: "1"})
    with pytest.raises(JavaClientError, match="ClientConfiguration is not on the JVM's classpath"):
        BookKeeperJavaClient.launch(ClientOptions(URI), jars=[empty], jvm_options=jvm)
    assert processes_with(f"-D{marker}=1") == []
