"""A real standalone ZooKeeper for the ``cluster`` tests of this package.

The server is found via ``ZOOKEEPER_HOME``, else Debian's ``/usr/share/zookeeper``, else the
ZooKeeper jars shipped inside the installed ``pyspark`` wheel; it runs
``org.apache.zookeeper.server.quorum.QuorumPeerMain`` on a free 127.0.0.1 port with a temporary
data dir and the admin server disabled, in its own process group, which is killed on teardown
(and at interpreter exit, should teardown not run). Each test gets a kazoo client chrooted to a
fresh znode, so tests never see each other's ``/ledgers``.

Deliberately small and self-contained; the full cluster provider lives in ``adapters/cluster``.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from kazoo.client import KazooClient

from adapters.zookeeper.client import connect_zookeeper, wait, zookeeper_session

STARTUP_TIMEOUT = 60.0
STOP_TIMEOUT = 10.0
MAIN_CLASS = "org.apache.zookeeper.server.quorum.QuorumPeerMain"


@dataclass(frozen=True)
class ZooKeeperServer:
    connect_string: str
    log_file: Path


def _classpath() -> tuple[str | None, str]:
    """(classpath, where it came from), or (None, why none was found)."""
    home = os.environ.get("ZOOKEEPER_HOME")
    if home:
        return f"{home}/lib/*{os.pathsep}{home}/*", f"ZOOKEEPER_HOME={home}"
    debian = Path("/usr/share/zookeeper")
    if debian.is_dir():
        return f"{debian}/lib/*{os.pathsep}/usr/share/java/*", str(debian)
    try:
        import pyspark
    except ImportError:
        return None, "no ZOOKEEPER_HOME, no /usr/share/zookeeper and no pyspark installed"
    jars = Path(pyspark.__file__).resolve().parent / "jars"
    if not any(jars.glob("zookeeper-*.jar")):
        return None, f"no zookeeper jar in {jars}"
    return f"{jars}/*", f"pyspark jars in {jars}"


def _free_loopback_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _answers_ruok(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1.0) as sock:
            sock.sendall(b"ruok")
            sock.settimeout(1.0)
            return sock.recv(16) == b"imok"
    except OSError:
        return False


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=STOP_TIMEOUT)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=STOP_TIMEOUT)


@contextlib.contextmanager
def standalone_zookeeper() -> Iterator[ZooKeeperServer]:
    """Run one standalone ZooKeeper for the duration of the ``with`` block."""
    java = shutil.which("java")
    classpath, origin = _classpath()
    if java is None or classpath is None:
        pytest.skip(f"cannot start ZooKeeper: {'no java on PATH' if java is None else origin}")
    workdir = Path(tempfile.mkdtemp(prefix="bkconform-zk-"))
    port = _free_loopback_port()
    config = workdir / "zoo.cfg"
    config.write_text(
        "\n".join(
            [
                "tickTime=500",
                "initLimit=10",
                "syncLimit=5",
                f"dataDir={workdir / 'data'}",
                f"clientPort={port}",
                "clientPortAddress=127.0.0.1",
                "admin.enableServer=false",
                "4lw.commands.whitelist=ruok,srvr",
                "maxClientCnxns=0",
                "",
            ]
        )
    )
    log_file = workdir / "zookeeper.log"
    with log_file.open("wb") as log:
        process = subprocess.Popen(
            [java, "-Xmx256m", "-cp", classpath, MAIN_CLASS, str(config)],
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
    atexit.register(_stop, process)
    try:
        deadline = time.monotonic() + STARTUP_TIMEOUT
        while not _answers_ruok(port):
            if process.poll() is not None or time.monotonic() > deadline:
                tail = log_file.read_text(errors="replace")[-3000:]
                pytest.fail(
                    f"ZooKeeper ({origin}) did not come up on 127.0.0.1:{port} "
                    f"(exit status {process.poll()}); log tail:\n{tail}"
                )
            time.sleep(0.2)
        yield ZooKeeperServer(f"127.0.0.1:{port}", log_file)
    finally:
        _stop(process)
        atexit.unregister(_stop)
        shutil.rmtree(workdir, ignore_errors=True)


@pytest.fixture(scope="session")
def zookeeper_server() -> Iterator[ZooKeeperServer]:
    with standalone_zookeeper() as server:
        yield server


@pytest.fixture
def zk_connect_string(zookeeper_server: ZooKeeperServer) -> str:
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
