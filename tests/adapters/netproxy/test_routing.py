"""Routing clients through the proxies: version choice, and the ZooKeeper-side methods on a
real ZooKeeper with reference bookies (which register ``BookieServiceInfoFormat`` like a 4.17
bookie, ``adapters/zookeeper/registration.py``)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest

from adapters.bookkeeper.client import BookieClient
from adapters.bookkeeper.entry import DigestType, master_key, package_entry
from adapters.bookkeeper.status import StatusCode
from adapters.cluster import LocalCluster, LocalClusterOptions
from adapters.cluster.bookies import reference_bookie_available
from adapters.javaclient.distribution import BookKeeperVersion, distribution_version
from adapters.netproxy import BookieProxy, FrameMatch, Operation, ProxyGroup, RoutingError
from adapters.netproxy.errors import UnknownBookKeeperVersion
from adapters.netproxy.routing import (
    RegistrationReplace,
    RoutingMethod,
    ServiceInfoRewrite,
    proxied_ensemble,
    route_through_proxies,
    routing_method_for_distribution,
    routing_method_for_version,
)
from adapters.zookeeper.client import connect_zookeeper, wait
from adapters.zookeeper.registration import available_path, list_bookies
from adapters.zookeeper.service_info import parse_bookie_service_info

ROOT = "/ledgers"


@pytest.mark.parametrize(
    ("version", "method"),
    [
        ("4.11.1", RoutingMethod.REPLACE_REGISTRATIONS),
        ("4.11.0", RoutingMethod.REPLACE_REGISTRATIONS),
        ("4.12.0", RoutingMethod.REWRITE_SERVICE_INFO),
        ("4.14.0", RoutingMethod.REWRITE_SERVICE_INFO),
        ("4.17.4", RoutingMethod.REWRITE_SERVICE_INFO),
        ("4.18.0-SNAPSHOT", RoutingMethod.REWRITE_SERVICE_INFO),
    ],
)
def test_method_follows_the_client_version(version: str, method: RoutingMethod) -> None:
    assert routing_method_for_version(version) is method


@pytest.mark.parametrize("text", ["4.17", "latest", "5.0.0", ""])
def test_unknown_versions_are_refused(text: str) -> None:
    with pytest.raises(UnknownBookKeeperVersion):
        routing_method_for_version(text)


def make_distribution(home: Path, *jar_names: str) -> Path:
    (home / "lib").mkdir(parents=True)
    for name in jar_names:
        (home / "lib" / name).write_bytes(b"")
    return home


def test_version_from_the_distribution_jar_name(tmp_path: Path) -> None:
    home = make_distribution(
        tmp_path / "bk",
        "org.apache.bookkeeper-bookkeeper-server-4.11.1.jar",
        "org.apache.bookkeeper-bookkeeper-common-4.11.1.jar",
        "io.netty-netty-all-4.1.50.Final.jar",
    )
    assert distribution_version(home) == BookKeeperVersion(4, 11, 1)
    assert routing_method_for_distribution(home) is RoutingMethod.REPLACE_REGISTRATIONS
    assert str(BookKeeperVersion.parse("4.17.0-SNAPSHOT")) == "4.17.0-SNAPSHOT"


def test_distribution_without_or_with_several_server_jars(tmp_path: Path) -> None:
    empty = make_distribution(tmp_path / "empty", "other.jar")
    with pytest.raises(UnknownBookKeeperVersion, match="no bookkeeper-server jar"):
        routing_method_for_distribution(empty)
    mixed = make_distribution(
        tmp_path / "mixed",
        "org.apache.bookkeeper-bookkeeper-server-4.11.1.jar",
        "org.apache.bookkeeper-bookkeeper-server-4.17.4.jar",
    )
    with pytest.raises(UnknownBookKeeperVersion, match="several versions"):
        routing_method_for_distribution(mixed)


@pytest.mark.cluster  # may install BookKeeper from Maven Central first
def test_real_distribution_version(java_client_home: Path) -> None:
    home = java_client_home
    version = distribution_version(home)
    assert version.major == 4
    assert routing_method_for_distribution(home) is routing_method_for_version(version)


class _Address:
    def __init__(self, host: str, port: int) -> None:
        self.host = host
        self.port = port


def test_proxied_ensemble_maps_ids_to_proxy_addresses() -> None:
    proxies = {"127.0.0.1:3181": _Address("127.0.0.1", 40001), "bk2": _Address("127.0.0.1", 2)}
    assert proxied_ensemble(["bk2", "127.0.0.1:3181"], proxies) == (
        "127.0.0.1:2",
        "127.0.0.1:40001",
    )
    with pytest.raises(RoutingError, match="bk9"):
        proxied_ensemble(["bk9"], proxies)
    with pytest.raises(RoutingError, match="ledger metadata"):
        route_through_proxies(None, ROOT, proxies, RoutingMethod.PROXY_ENSEMBLE)


# -- on a real ZooKeeper ----------------------------------------------------------------------


@pytest.fixture
def cluster(work_dir: Path) -> Iterator[LocalCluster]:
    options = LocalClusterOptions(bookies=2, work_dir=work_dir, use_bookkeeper_home_env=False)
    with LocalCluster(options) as running:
        yield running


@pytest.fixture
def proxies(cluster: LocalCluster) -> Iterator[dict[str, BookieProxy]]:
    with ProxyGroup() as group:
        yield {
            bookie_id: group.add(bookie_id, host, port)
            for bookie_id, (host, port) in cluster.endpoints().bookies.items()
        }


def reregister(cluster: LocalCluster, bookie_id: str, data: bytes) -> object:
    """What a bookie does after losing its session: its znode goes, then comes back."""
    session = connect_zookeeper(cluster.endpoints().zookeeper_connect)
    path = available_path(ROOT, bookie_id)
    try:
        wait(session.delete_async(path), timeout=10, operation=f"delete {path}")
    except Exception as exc:  # already gone (replaced by the routing): fine
        assert type(exc).__name__ == "NoNodeError"
    wait(session.create_async(path, data, ephemeral=True), timeout=10, operation=f"create {path}")
    return session


async def add_through(host: str, port: int) -> StatusCode:
    async with await BookieClient.connect(host, port, request_timeout=5) as client:
        body = package_entry(DigestType.CRC32, b"pw", 1, 0, -1, 1, b"x")
        return (await client.add(1, 0, master_key(b"pw"), body)).status


@pytest.mark.cluster
@pytest.mark.skipif(not reference_bookie_available(), reason="adapters.refbookie is absent")
def test_service_info_rewrite_survives_reregistration(
    cluster: LocalCluster, proxies: dict[str, BookieProxy]
) -> None:
    zk = cluster.zookeeper_client
    originals = {
        bookie_id: bytes(zk.get(available_path(ROOT, bookie_id))[0]) for bookie_id in proxies
    }
    with ServiceInfoRewrite(zk, ROOT, proxies) as routing:
        routing.wait_routed(5)
        resolved = list_bookies(zk, ROOT)
        assert {b: (a.host, a.port) for b, a in resolved.items()} == {
            b: (p.host, p.port) for b, p in proxies.items()
        }
        bookie_id, proxy = next(iter(proxies.items()))
        address = resolved[bookie_id]
        assert asyncio.run(add_through(address.host, address.port)) is StatusCode.EOK
        assert proxy.frames(FrameMatch.request(Operation.ADD_ENTRY))

        # A bookie that is down (its registration gone) is not routed, and a wait for the
        # others leaves it out; a bookie the routing does not know is an error.
        zk.delete(available_path(ROOT, bookie_id))
        others = [b for b in proxies if b != bookie_id]
        assert not routing.routed() and routing.routed(others)
        routing.wait_routed(1, bookies=others)
        with pytest.raises(ValueError, match="not routed here"):
            routing.routed(["nobody:1"])

        session = reregister(cluster, bookie_id, originals[bookie_id])
        try:
            # A poll, done once the watch has fired and one write is made on a local
            # ZooKeeper: 5 s only caps a watch that never fires.
            routing.wait_routed(5)
            assert routing.reapplied[bookie_id] == 1 and routing.errors == []
            assert list_bookies(zk, ROOT)[bookie_id].port == proxy.port
        finally:
            session.stop()  # type: ignore[attr-defined]
            session.close()  # type: ignore[attr-defined]
    # Restored where the bookie's own registration is still there.
    for bookie_id, data in originals.items():
        stat = zk.exists(available_path(ROOT, bookie_id))
        if stat is not None:
            current = bytes(zk.get(available_path(ROOT, bookie_id))[0])
            assert current == data
            endpoint = parse_bookie_service_info(current).rpc_endpoint()
            assert (
                endpoint is not None and endpoint.port == cluster.endpoints().bookies[bookie_id][1]
            )


@pytest.mark.cluster
@pytest.mark.skipif(not reference_bookie_available(), reason="adapters.refbookie is absent")
def test_registration_replace_survives_reregistration(
    cluster: LocalCluster, proxies: dict[str, BookieProxy]
) -> None:
    zk = cluster.zookeeper_client
    bookie_ids = sorted(proxies)
    originals = {b: bytes(zk.get(available_path(ROOT, b))[0]) for b in bookie_ids}
    routing = route_through_proxies(zk, ROOT, proxies, RoutingMethod.REPLACE_REGISTRATIONS)
    assert isinstance(routing, RegistrationReplace)
    with routing:
        routing.wait_routed(5)
        registered = list_bookies(zk, ROOT)
        assert sorted(registered) == sorted(p.address for p in proxies.values())
        first = proxies[bookie_ids[0]]
        assert asyncio.run(add_through(first.host, first.port)) is StatusCode.EOK

        session = reregister(cluster, bookie_ids[0], originals[bookie_ids[0]])
        try:
            routing.wait_routed(5)
            assert routing.reapplied[bookie_ids[0]] == 1 and routing.errors == []
        finally:
            session.stop()  # type: ignore[attr-defined]
            session.close()  # type: ignore[attr-defined]
    assert sorted(list_bookies(zk, ROOT)) == bookie_ids


@pytest.mark.cluster
@pytest.mark.skipif(not reference_bookie_available(), reason="adapters.refbookie is absent")
def test_routing_an_unregistered_bookie_is_an_error(cluster: LocalCluster) -> None:
    ghost = {"127.0.0.1:1": _Address("127.0.0.1", 2)}
    with pytest.raises(RoutingError, match="not registered"):
        ServiceInfoRewrite(cluster.zookeeper_client, ROOT, ghost).start()
    with pytest.raises(RoutingError, match="not registered"):
        RegistrationReplace(cluster.zookeeper_client, ROOT, ghost).start()
