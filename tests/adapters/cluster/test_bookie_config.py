"""Bookie configuration files and finding a BookKeeper distribution."""

from __future__ import annotations

from pathlib import Path

import pytest

from adapters.cluster.bookies import (
    TEST_BOOKIE_JVM_FLAGS,
    BookieConfig,
    BookieProcess,
    BookieSettings,
    LedgerStorage,
)
from adapters.cluster.errors import InvalidClusterOptions
from adapters.installations.bookkeeper import find_bookkeeper_home
from adapters.installations.errors import BookKeeperNotFound


def config(tmp_path: Path, settings: BookieSettings | None = None) -> BookieConfig:
    return BookieConfig(
        name="bookie1",
        port=40001,
        directory=tmp_path / "bookie1",
        zookeeper_connect="127.0.0.1:2181,127.0.0.1:2182",
        ledgers_root="/ledgers",
        metadata_service_uri="zk+hierarchical://127.0.0.1:2181;127.0.0.1:2182/ledgers",
        settings=settings or BookieSettings(),
    )


def parse(text: str) -> dict[str, str]:
    pairs = (line.split("=", 1) for line in text.splitlines() if line)
    return {key: value for key, value in pairs}


def test_defaults_are_loopback_journaled_sorted_storage(tmp_path: Path) -> None:
    entries = parse(config(tmp_path).render())
    assert entries["bookiePort"] == "40001"
    assert entries["advertisedAddress"] == "127.0.0.1"
    assert entries["bookieId"] == "127.0.0.1:40001"
    assert entries["metadataServiceUri"].endswith("/ledgers")
    assert entries["journalDirectories"] == str(tmp_path / "bookie1" / "journal")
    assert entries["ledgerDirectories"] == str(tmp_path / "bookie1" / "ledgers")
    assert entries["ledgerStorageClass"] == "org.apache.bookkeeper.bookie.SortedLedgerStorage"
    assert entries["journalWriteData"] == "true"
    assert entries["dataIntegrityChecking"] == "false"
    assert entries["dataIntegrityStampMissingCookies"] == "false"
    assert entries["httpServerEnabled"] == "false"
    # A short GC interval would delete ledgers whose metadata a test has not written yet.
    assert int(entries["gcWaitTime"]) >= 600000
    # A lone request's add or fence is written and synced at once, not after the group wait.
    assert entries["journalFlushWhenQueueEmpty"] == "true"


def test_limbo_settings_and_overrides(tmp_path: Path) -> None:
    settings = BookieSettings(
        ledger_storage=LedgerStorage.DB,
        journal_write_data=False,
        data_integrity_checking=True,
        stamp_missing_cookies=True,
        extra={"flushInterval": "3600000", "httpServerEnabled": "true"},
    )
    entries = parse(config(tmp_path, settings).render())
    assert entries["ledgerStorageClass"] == (
        "org.apache.bookkeeper.bookie.storage.ldb.DbLedgerStorage"
    )
    assert entries["journalWriteData"] == "false"
    assert entries["dataIntegrityChecking"] == "true"
    assert entries["dataIntegrityStampMissingCookies"] == "true"
    assert entries["flushInterval"] == "3600000"
    assert entries["httpServerEnabled"] == "true"  # extra wins


def test_db_storage_gets_rocksdb_options_without_preallocation(tmp_path: Path) -> None:
    limbo = config(tmp_path, BookieSettings(ledger_storage=LedgerStorage.DB))
    entries = parse(limbo.render())
    directory = tmp_path / "bookie1"
    assert entries["entryLocationRocksdbConf"] == str(directory / "entry_location_rocksdb.conf")
    assert entries["ledgerMetadataRocksdbConf"] == str(directory / "ledger_metadata_rocksdb.conf")
    BookieProcess(limbo, tmp_path / "home", tmp_path / "logs").prepare()
    for key in ("entryLocationRocksdbConf", "ledgerMetadataRocksdbConf"):
        written = Path(entries[key]).read_text()
        assert "[DBOptions]\n" in written and "  allow_fallocate=false\n" in written
        assert '[CFOptions "default"]\n' in written
        assert '[TableOptions/BlockBasedTable "default"]\n' in written
        assert "  checksum=kxxHash\n" in written
    # BookKeeper's block cache for the entry locations: a tenth of the direct memory (256m).
    assert "  block_cache=26843545\n" in Path(entries["entryLocationRocksdbConf"]).read_text()
    env = _launcher_environment(tmp_path, BookieSettings(ledger_storage=LedgerStorage.DB))
    assert env["BOOKIE_MAX_DIRECT_MEMORY"] == "256m"


@pytest.mark.parametrize(
    "settings",
    [
        BookieSettings(),  # no RocksDB in the sorted storage
        BookieSettings(ledger_storage=LedgerStorage.INTERLEAVED),
        BookieSettings(ledger_storage=LedgerStorage.DB, rocksdb_preallocation=True),
    ],
)
def test_rocksdb_options_files_only_where_they_change_something(
    tmp_path: Path, settings: BookieSettings
) -> None:
    bookie = config(tmp_path, settings)
    entries = parse(bookie.render())
    assert "entryLocationRocksdbConf" not in entries
    assert "ledgerMetadataRocksdbConf" not in entries
    BookieProcess(bookie, tmp_path / "home", tmp_path / "logs").prepare()
    assert not list((tmp_path / "bookie1").glob("*rocksdb.conf"))


def test_extra_entries_override_the_rocksdb_options_files(tmp_path: Path) -> None:
    settings = BookieSettings(
        ledger_storage=LedgerStorage.DB, extra={"entryLocationRocksdbConf": "/etc/mine.conf"}
    )
    entries = parse(config(tmp_path, settings).render())
    assert entries["entryLocationRocksdbConf"] == "/etc/mine.conf"
    assert entries["ledgerMetadataRocksdbConf"].endswith("ledger_metadata_rocksdb.conf")


def _launcher_environment(tmp_path: Path, settings: BookieSettings) -> dict[str, str]:
    home = tmp_path / "home"
    (home / "bin").mkdir(parents=True, exist_ok=True)
    bookie = BookieProcess(config(tmp_path, settings), home, tmp_path / "logs")
    return bookie.process.env or {}


def test_real_bookies_run_the_serial_collector_and_the_client_compiler(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("BOOKIE_GC_OPTS", raising=False)
    assert TEST_BOOKIE_JVM_FLAGS == (
        "-XX:+UseSerialGC",
        "-XX:TieredStopAtLevel=1",
        "-XX:CompileThresholdScaling=0.05",
    )
    env = _launcher_environment(tmp_path, BookieSettings())
    assert env["BOOKIE_GC_OPTS"] == (
        "-XX:+UseSerialGC -XX:TieredStopAtLevel=1 -XX:CompileThresholdScaling=0.05"
    )
    # No flags: the launcher's own (G1 and both compilers) decide.
    assert "BOOKIE_GC_OPTS" not in _launcher_environment(tmp_path, BookieSettings(jvm_flags=()))


@pytest.mark.parametrize("flags", [("-Xss1m -Xmx1g",), ("UseSerialGC",), ("-Xss1m", "")])
def test_bookie_jvm_flags_the_launcher_would_split_are_refused(flags: tuple[str, ...]) -> None:
    with pytest.raises(InvalidClusterOptions, match="white space"):
        BookieSettings(jvm_flags=flags)


def test_bookkeeper_home_unset_means_reference_bookie() -> None:
    assert find_bookkeeper_home(None, {}) is None


def test_bookkeeper_home_must_hold_a_binary_distribution(tmp_path: Path) -> None:
    with pytest.raises(BookKeeperNotFound, match="bin/bookkeeper"):
        find_bookkeeper_home(None, {"BOOKKEEPER_HOME": str(tmp_path)})
    script = tmp_path / "bin" / "bookkeeper"
    script.parent.mkdir()
    script.write_text("#!/bin/sh\n")
    script.chmod(0o755)
    with pytest.raises(BookKeeperNotFound, match="bookkeeper-server jar"):
        find_bookkeeper_home(tmp_path, {})
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "org.apache.bookkeeper-bookkeeper-server-4.17.4.jar").write_bytes(b"")
    assert find_bookkeeper_home(tmp_path, {}) == tmp_path
    assert find_bookkeeper_home(None, {"BOOKKEEPER_HOME": str(tmp_path)}) == tmp_path
