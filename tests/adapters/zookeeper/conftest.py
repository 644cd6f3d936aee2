"""A real standalone ZooKeeper for the ``cluster`` tests of this package.

The server is the cluster provider's (``adapters.cluster.zookeeper``), found
(``adapters.installations.zookeeper``) via
``ZOOKEEPER_HOME``, else Debian's ``/usr/share/zookeeper``, else the ZooKeeper jars shipped in
the installed ``pyspark`` wheel, on free loopback ports, in its own process group, stopped on
teardown and at interpreter exit. Each test gets a kazoo client chrooted to a fresh znode, so
tests never see each other's ``/ledgers``.
"""

from __future__ import annotations

import shutil
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from kazoo.client import KazooClient

from adapters.cluster.zookeeper import ZooKeeperEnsemble
from adapters.installations.errors import ZooKeeperNotFound
from adapters.installations.zookeeper import locate_zookeeper
from adapters.zookeeper.client import connect_zookeeper, wait, zookeeper_session


@pytest.fixture(scope="session")
def zookeeper_server() -> Iterator[ZooKeeperEnsemble]:
    try:
        install = locate_zookeeper()
    except ZooKeeperNotFound as exc:
        pytest.fail(f"cannot start ZooKeeper for the cluster tests: {exc}")
    work_dir = Path(tempfile.mkdtemp(prefix="bkconform-zk-"))
    server = ZooKeeperEnsemble(install, work_dir, size=1)
    try:
        server.start()
        yield server
    finally:
        server.stop()
        shutil.rmtree(work_dir, ignore_errors=True)


@pytest.fixture
def zk_connect_string(zookeeper_server: ZooKeeperEnsemble) -> str:
    """A connect string chrooted to a fresh, empty znode."""
    # Left in place afterwards: the whole data dir goes when the server stops.
    chroot = f"/test-{uuid.uuid4().hex[:12]}"
    with zookeeper_session(zookeeper_server.connect_string, timeout=10) as admin:
        wait(admin.create_async(chroot, b""), timeout=10, operation=f"create {chroot}")
    return f"{zookeeper_server.connect_string}{chroot}"


@pytest.fixture
def zk(zk_connect_string: str) -> Iterator[KazooClient]:
    """A connected kazoo client whose ``/`` is this test's private chroot."""
    client = connect_zookeeper(zk_connect_string, timeout=10)
    try:
        yield client
    finally:
        client.stop()
        client.close()
