"""The bookie host: real bookies restarted inside their JVM (``in_jvm_restarts``).

The cluster tests run the default BookKeeper version (with data-integrity checking, the limbo
configuration) and 4.11.1 (no data-integrity service); the rest are fast checks of compiling
and of the errors.
"""

from __future__ import annotations

import dataclasses
import os
import re
import time
from pathlib import Path

import pytest

from adapters.bookkeeper.probe import bookie_answers
from adapters.cluster import (
    BookieSettings,
    DataLoss,
    LedgerStorage,
    LocalCluster,
    LocalClusterOptions,
    Node,
    bookie_host,
)
from adapters.cluster.bookies import BookieConfig, BookieProcess
from adapters.cluster.errors import BookieHostUnavailable, InvalidClusterOptions, NodeStateError
from adapters.cluster.network import LOOPBACK
from tests.bookkeeper_fixtures import installed_home

LIMBO = BookieSettings(
    ledger_storage=LedgerStorage.DB,
    data_integrity_checking=True,
    stamp_missing_cookies=True,
    in_jvm_restarts=True,
)


def hosted_options(work_dir: Path, home: Path, settings: BookieSettings) -> LocalClusterOptions:
    return LocalClusterOptions(
        bookies=2,
        work_dir=work_dir,
        bookkeeper_home=home,
        bookie_settings=settings,
        start_timeout=120.0,
    )


def _restart_in_jvm_and_check(cluster: LocalCluster) -> None:
    node = Node.bookie(sorted(cluster.endpoints().bookies)[0])
    bookie = cluster.bookie(node.id)
    assert bookie.hosted
    pid = bookie.process.pid
    marker = bookie.config.ledger_dir / "written-before-the-crash"
    marker.write_text("lost in the crash")
    owner = cluster.zookeeper_client.exists(bookie.registration_path()).ephemeralOwner

    cluster.restart_with_data_loss(node, DataLoss.WIPE)

    assert bookie.process.pid == pid, "the JVM was restarted, not the bookie inside it"
    # The JVM runs a test bookie's flags (the serial collector, the client compiler only).
    argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    assert b"-XX:+UseSerialGC" in argv and b"-XX:TieredStopAtLevel=1" in argv
    assert b"-XX:CompileThresholdScaling=0.05" in argv
    assert not marker.exists(), "the disks were not wiped"
    assert bookie.config.ledger_dir.is_dir() and bookie.config.journal_dir.is_dir()
    registration = cluster.zookeeper_client.exists(bookie.registration_path())
    assert registration is not None and registration.ephemeralOwner != owner
    assert bookie_answers(LOOPBACK, bookie.config.port)
    # The bookie serves before its last components (data integrity) have started.
    assert _log_says(bookie.process.log_path, "bookie generation 2 started")
    # The old generation's ZooKeeper clients did not sleep on their way out (the host cut
    # ZooKeeper's 100 ms after-close sleep: a crash never closes them at all).
    assert _log_says(bookie.process.log_path, "generation 1 closed (")
    (cut,) = re.findall(
        r"generation 1 closed \((\d+) ZooKeeper", bookie.process.log_path.read_text()
    )
    assert int(cut) >= 1


def _log_says(log: Path, text: str, timeout: float = 30.0) -> bool:
    deadline = time.monotonic() + timeout
    while text not in log.read_text():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


@pytest.mark.cluster
def test_a_hosted_bookie_loses_its_disks_and_restarts_inside_its_jvm(
    work_dir: Path, bookkeeper_home: Path
) -> None:
    with LocalCluster(hosted_options(work_dir, bookkeeper_home, LIMBO)) as cluster:
        _restart_in_jvm_and_check(cluster)
        # Again, right away: the host takes its next command once the last restart is done.
        node = Node.bookie(sorted(cluster.endpoints().bookies)[0])
        cluster.restart_with_data_loss(node, DataLoss.WIPE)
        log = cluster.bookie(node.id).process.log_path
        assert _log_says(log, "bookie generation 3 started")
        assert bookie_answers(LOOPBACK, cluster.bookie(node.id).config.port)


@pytest.mark.cluster
def test_a_hosted_4_17_bookie_restarted_during_its_start_sleep_skips_its_later_components(
    work_dir: Path,
) -> None:
    # BookieServer.start's closing 250 ms sleep (4.17.x; removed in 4.18.0 by
    # apache/bookkeeper#4336) is cut short and the generation's later components never start,
    # as when a real bookie is killed then; the next generation serves. A race window, no
    # margin: the second command must reach the host within what is left of those 250 ms
    # after the first restart saw generation 3 registered and answering.
    with LocalCluster(hosted_options(work_dir, installed_home("4.17.3"), LIMBO)) as cluster:
        _restart_in_jvm_and_check(cluster)
        node = Node.bookie(sorted(cluster.endpoints().bookies)[0])
        log = cluster.bookie(node.id).process.log_path
        cluster.restart_with_data_loss(node, DataLoss.WIPE)
        cluster.restart_with_data_loss(node, DataLoss.WIPE)
        assert _log_says(log, "generation 3 closed before its start ended")
        assert bookie_answers(LOOPBACK, cluster.bookie(node.id).config.port)
        assert _log_says(log, "bookie generation 4 started")


@pytest.mark.cluster
def test_a_hosted_bookie_of_4_11_1_restarts_inside_its_jvm(work_dir: Path) -> None:
    # 4.11.1 has no data-integrity service; without it a wipe removes the cookie first.
    settings = BookieSettings(in_jvm_restarts=True)
    with LocalCluster(hosted_options(work_dir, installed_home("4.11.1"), settings)) as cluster:
        _restart_in_jvm_and_check(cluster)


@pytest.mark.cluster
def test_a_killed_hosted_bookie_restarts_as_a_new_process(
    work_dir: Path, bookkeeper_home: Path
) -> None:
    with LocalCluster(hosted_options(work_dir, bookkeeper_home, LIMBO)) as cluster:
        node = Node.bookie(sorted(cluster.endpoints().bookies)[0])
        bookie = cluster.bookie(node.id)
        pid = bookie.process.pid
        cluster.crash(node)  # SIGKILL: the whole JVM
        assert not cluster.is_running(node)
        with pytest.raises(NodeStateError, match="not a running hosted bookie"):
            bookie.restart_empty(cluster.zookeeper_client)
        cluster.restart_with_data_loss(node, DataLoss.WIPE)
        assert bookie.process.pid != pid
        assert bookie_answers(LOOPBACK, bookie.config.port)


STANDBY = BookieSettings(in_jvm_restarts=True, standby_jvms=True)


@pytest.mark.cluster
def test_a_restarted_bookie_gets_a_standby_jvm_that_takes_its_next_start(
    work_dir: Path, bookkeeper_home: Path
) -> None:
    """The first restart after a crash is a new process, which boots the standby of the next
    start once the bookie is ready; the next crash's restart hands the bookie to that JVM (its
    pid) and boots another; stopping the cluster stops the standby too."""
    with LocalCluster(hosted_options(work_dir, bookkeeper_home, STANDBY)) as cluster:
        node = Node.bookie(sorted(cluster.endpoints().bookies)[0])
        bookie = cluster.bookie(node.id)
        assert bookie.standby is None  # none as the cluster starts
        cluster.crash(node)
        cluster.restart(node)
        first = bookie.process.pid
        standby = bookie.standby
        assert standby is not None and standby.is_running() and standby.pid != first
        assert _log_says(bookie.process.log_path, "standby ready after")
        cluster.crash(node)
        started = time.monotonic()
        cluster.restart(node)
        took = time.monotonic() - started
        assert bookie.process is standby and bookie.process.pid == standby.pid
        assert bookie_answers(LOOPBACK, bookie.config.port)
        registration = cluster.zookeeper_client.exists(bookie.registration_path())
        assert registration is not None
        following = bookie.standby
        assert following is not None and following is not standby and following.is_running()
        # A plain stop and start (the operator's restart) takes the standby too.
        cluster.restart(node)
        assert bookie.process is following
        assert bookie_answers(LOOPBACK, bookie.config.port)
        print(f"\nrestart after a crash into the standby JVM: {took:.2f} s")
        last = bookie.standby
        assert last is not None and last.is_running()
    assert not last.is_running() and not bookie.process.is_running()


def test_standby_jvms_need_the_host_and_no_gates() -> None:
    with pytest.raises(InvalidClusterOptions, match="standby_jvms needs in_jvm_restarts"):
        BookieSettings(standby_jvms=True)
    with pytest.raises(InvalidClusterOptions, match="no gates"):
        BookieSettings(in_jvm_restarts=True, standby_jvms=True, gates=True)
    assert STANDBY.standby_jvms


@pytest.mark.cluster
def test_a_paused_hosted_bookie_is_killed_and_restarted_as_a_new_process(
    work_dir: Path, bookkeeper_home: Path
) -> None:
    # A stopped JVM would never read the command; the provider kills it instead.
    with LocalCluster(hosted_options(work_dir, bookkeeper_home, LIMBO)) as cluster:
        node = Node.bookie(sorted(cluster.endpoints().bookies)[0])
        bookie = cluster.bookie(node.id)
        pid = bookie.process.pid
        cluster.pause(node)
        cluster.restart_with_data_loss(node, DataLoss.WIPE)
        assert bookie.process.pid != pid and not bookie.process.paused
        assert bookie_answers(LOOPBACK, bookie.config.port)


@pytest.mark.cluster
def test_a_cluster_of_hosted_bookies_cannot_be_detached(
    work_dir: Path, bookkeeper_home: Path
) -> None:
    # Still owned after the refusal, so the context manager stops it (work_dir checks).
    with (
        LocalCluster(hosted_options(work_dir, bookkeeper_home, LIMBO)) as cluster,
        pytest.raises(NodeStateError, match="cannot be detached"),
    ):
        cluster.detach()


def test_compiling_needs_javac(tmp_path: Path) -> None:
    environ = {"PATH": str(tmp_path)}  # no javac there, no JAVA_HOME
    with pytest.raises(BookieHostUnavailable, match="openjdk-17-jdk-headless"):
        bookie_host.find_javac(environ)


def test_javac_comes_from_java_home_first(tmp_path: Path) -> None:
    javac = tmp_path / "jdk" / "bin" / "javac"
    javac.parent.mkdir(parents=True)
    javac.write_text("#!/bin/sh\n")
    javac.chmod(0o755)
    assert bookie_host.find_javac({"JAVA_HOME": str(tmp_path / "jdk"), "PATH": ""}) == str(javac)


def test_a_home_without_a_bookkeeper_server_jar_is_refused(tmp_path: Path) -> None:
    (tmp_path / "home" / "lib").mkdir(parents=True)
    javac = tmp_path / "javac"
    javac.write_text("#!/bin/sh\nexit 1\n")
    javac.chmod(0o755)
    with pytest.raises(BookieHostUnavailable, match="no bookkeeper-server jar"):
        bookie_host.host_classes(
            tmp_path / "home", root=tmp_path / "cache", environ={"PATH": str(tmp_path)}
        )


def test_a_failed_compilation_says_what_javac_said(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / "lib").mkdir(parents=True)
    (home / "lib" / "org.apache.bookkeeper-bookkeeper-server-9.9.9.jar").write_bytes(b"")
    javac = tmp_path / "javac"
    javac.write_text("#!/bin/sh\necho 'error: cannot find symbol Main.buildBookieServer'\nexit 1\n")
    javac.chmod(0o755)
    with pytest.raises(BookieHostUnavailable, match="cannot find symbol"):
        bookie_host.host_classes(home, root=tmp_path / "cache", environ={"PATH": str(tmp_path)})
    # Nothing half-made is left to be taken for a compiled host.
    assert not [p for p in (tmp_path / "cache").iterdir() if not p.name.startswith(".")]


def test_the_compiled_host_is_cached_per_source_and_jars(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / "lib").mkdir(parents=True)
    jar = home / "lib" / "org.apache.bookkeeper-bookkeeper-server-9.9.9.jar"
    jar.write_bytes(b"one")
    calls = tmp_path / "calls"
    javac = tmp_path / "javac"
    # A stand-in compiler: notes the call and writes the class where -d says.
    javac.write_text(
        "#!/bin/sh\n"
        f"echo called >> {calls}\n"
        'while [ "$1" != "-d" ]; do shift; done\n'
        'mkdir -p "$2/bkconform" && touch "$2/bkconform/BookieHost.class"\n'
    )
    javac.chmod(0o755)
    environ = {"PATH": str(tmp_path)}
    first = bookie_host.host_classes(home, root=tmp_path / "cache", environ=environ)
    assert (first / "bkconform" / "BookieHost.class").is_file()
    assert bookie_host.host_classes(home, root=tmp_path / "cache", environ=environ) == first
    assert calls.read_text().count("called") == 1
    jar.write_bytes(b"another build")
    assert bookie_host.host_classes(home, root=tmp_path / "cache", environ=environ) != first
    assert calls.read_text().count("called") == 2


def test_the_host_source_ships_with_the_package() -> None:
    text = bookie_host.source_text()
    assert "class BookieHost" in text and bookie_host.RESTART_EMPTY in text
    assert os.path.basename(bookie_host.SOURCE[-1]) == "BookieHost.java"


def _hosted_bookie(
    tmp_path: Path, settings: BookieSettings, monkeypatch: pytest.MonkeyPatch
) -> str:
    # A hosted bookie of a stand-in home: nothing is compiled or started.
    monkeypatch.setattr(bookie_host, "host_classes", lambda home, **_: tmp_path / "classes")
    config = BookieConfig(
        name="bookie1",
        port=3181,
        directory=tmp_path / "bookie1",
        zookeeper_connect="127.0.0.1:2181",
        ledgers_root="/ledgers",
        metadata_service_uri="zk+hierarchical://127.0.0.1:2181/ledgers",
        settings=settings,
    )
    bookie = BookieProcess(config, tmp_path / "home", tmp_path / "logs")
    assert bookie.hosted
    argv = bookie.process.argv
    assert argv[1] == bookie_host.MAIN_CLASS
    assert argv[argv.index("--conf") + 1] == str(config.config_path)
    bookie.prepare()
    return config.config_path.read_text()


def test_the_integrity_quiesce_switch_reaches_the_hosts_configuration(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The shutdown crash's reproducer turns the workaround off through the configuration
    file named on the host's command line (docs/findings/bookie-shutdown-sigsegv-4.17.3.md)."""
    settings = dataclasses.replace(LIMBO, extra=bookie_host.host_entries(integrity_quiesce=False))
    conf = _hosted_bookie(tmp_path, settings, monkeypatch)
    assert f"{bookie_host.INTEGRITY_QUIESCE_KEY}=false\n" in conf.splitlines(keepends=True)
    # The host reads that very key, and quiesces unless it says false.
    source = bookie_host.source_text()
    assert f'INTEGRITY_QUIESCE_KEY = "{bookie_host.INTEGRITY_QUIESCE_KEY}"' in source
    assert "conf.getBoolean(INTEGRITY_QUIESCE_KEY, true)" in source


def test_the_workaround_is_on_unless_turned_off(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert bookie_host.host_entries() == {}
    assert bookie_host.host_entries(integrity_quiesce=True) == {}
    conf = _hosted_bookie(tmp_path, LIMBO, monkeypatch)
    assert bookie_host.INTEGRITY_QUIESCE_KEY not in conf
