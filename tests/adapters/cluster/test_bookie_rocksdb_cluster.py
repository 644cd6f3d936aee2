"""The RocksDB options files of test bookies (``adapters.cluster.bookie_rocksdb``) on the
default BookKeeper release: BookKeeper reads them, and the options RocksDB then runs with are
BookKeeper's own but for ``allow_fallocate``. Fails when a release changes its in-code options
and the files no longer restate them."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from adapters.cluster import BookieSettings, LedgerStorage, LocalCluster, LocalClusterOptions

#: Where DbLedgerStorage keeps its two databases, under a ledger directory.
DATABASES = ("locations", "ledgers")


def _options_in_use(
    settings: BookieSettings, work_dir: Path, home: Path
) -> tuple[dict[str, dict[str, dict[str, str]]], str]:
    """Each database's options as RocksDB recorded them (its newest OPTIONS file), by section,
    and the bookie's log."""
    options = LocalClusterOptions(
        bookies=1, work_dir=work_dir, bookkeeper_home=home, bookie_settings=settings
    )
    found: dict[str, dict[str, dict[str, str]]] = {}
    with LocalCluster(options) as cluster:
        bookie = cluster.bookie(sorted(cluster.endpoints().bookies)[0])
        current = bookie.config.ledger_dir / "current"
        for database in DATABASES:
            newest = max((current / database).glob("OPTIONS-*"), key=lambda p: p.name)
            found[database] = _parse(newest.read_text())
        return found, bookie.process.log_path.read_text()


def _parse(text: str) -> dict[str, dict[str, str]]:
    sections: dict[str, dict[str, str]] = {}
    section = ""
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("["):
            section = line
            sections.setdefault(section, {})
        elif "=" in line:
            key, value = line.split("=", 1)
            sections[section][key.strip()] = value.strip()
    # Which RocksDB wrote the file, not an option.
    sections.pop("[Version]", None)
    return sections


@pytest.mark.cluster
def test_rocksdb_runs_bookkeepers_options_without_preallocation(
    work_dir: Path, bookkeeper_home: Path
) -> None:
    limbo = BookieSettings(ledger_storage=LedgerStorage.DB, data_integrity_checking=True)
    ours, our_log = _options_in_use(limbo, work_dir / "files", bookkeeper_home)
    theirs, their_log = _options_in_use(
        dataclasses.replace(limbo, rocksdb_preallocation=True), work_dir / "code", bookkeeper_home
    )
    assert our_log.count("Found a RocksDB configuration file") >= 2, "BookKeeper ignored them"
    assert "Found a RocksDB configuration file" not in their_log
    for database in DATABASES:
        differences = {
            (section, key): (theirs[database].get(section, {}).get(key), value)
            for section, options in ours[database].items()
            for key, value in options.items()
            if theirs[database].get(section, {}).get(key) != value
        }
        missing = {
            (section, key)
            for section, options in theirs[database].items()
            for key in options
            if key not in ours[database].get(section, {})
        }
        assert differences == {("[DBOptions]", "allow_fallocate"): ("true", "false")}, database
        assert not missing, database
