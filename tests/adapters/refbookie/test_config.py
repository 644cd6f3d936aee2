"""Configuration parsing with real BookKeeper key names."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from adapters.refbookie.config import config_from_properties, load_config, parse_properties
from adapters.refbookie.errors import ConfigError

BASE = {"journalDirectories": "/tmp/j", "ledgerDirectories": "/tmp/l1,/tmp/l2"}


def test_defaults_and_bookie_id() -> None:
    config = config_from_properties(dict(BASE))
    assert (config.port, config.advertised_address) == (3181, "127.0.0.1")
    assert config.journal_write_data and not config.data_integrity_checking
    assert config.ledger_dirs == (Path("/tmp/l1"), Path("/tmp/l2"))
    assert config.bookie_id() == "127.0.0.1:3181"
    named = config_from_properties({**BASE, "bookieId": "bookie-1", "bookiePort": "3182"})
    assert named.bookie_id() == "bookie-1"


def test_real_bk_server_conf_keys(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    conf = tmp_path / "bk_server.conf"
    conf.write_text(
        "# a real bk_server.conf excerpt\n"
        "bookiePort=3183\n"
        "advertisedAddress=127.0.0.1\n"
        "metadataServiceUri=zk+hierarchical://127.0.0.1:2181/ledgers\n"
        "journalDirectories=/data/j\n"
        "ledgerDirectories=/data/l\n"
        "journalWriteData=false\n"
        "dataIntegrityChecking=true\n"
        "dataIntegrityStampMissingCookies=true\n"
        "ledgerStorageClass=org.apache.bookkeeper.bookie.storage.ldb.DbLedgerStorage\n"
        "gcWaitTime=1000\n"
    )
    with caplog.at_level(logging.DEBUG, logger="adapters.refbookie.config"):
        config = load_config(conf)
    assert config.port == 3183 and not config.journal_write_data
    assert config.data_integrity_checking and config.data_integrity_stamp_missing_cookies
    assert config.metadata_service_uri == "zk+hierarchical://127.0.0.1:2181/ledgers"
    assert (
        config.ledger_storage_class is not None and "DbLedgerStorage" in config.ledger_storage_class
    )
    assert config.ignored_keys == ("gcWaitTime",)
    assert "gcWaitTime" in caplog.text


@pytest.mark.parametrize(
    "overrides",
    [
        {"bookiePort": "x"},
        {"bookiePort": "70000"},
        {"journalWriteData": "maybe"},
        {"flushInterval": "0"},
        {"bookieId": "bad id!"},
        {"ledgerDirectories": ""},
    ],
)
def test_malformed_values_raise_config_error(overrides: dict[str, str]) -> None:
    with pytest.raises(ConfigError):
        config_from_properties({**BASE, **overrides})


def test_properties_syntax() -> None:
    assert parse_properties("a=1\n  # c\n! d\nb : 2\n\nc=x=y\n") == {"a": "1", "b": "2", "c": "x=y"}
    with pytest.raises(ConfigError):
        parse_properties("no separator here\n")
    with pytest.raises(ConfigError):
        load_config(Path("/nonexistent/bk_server.conf"))


def test_faulty_mode_is_off_unless_asked_and_checked() -> None:
    base = dict(BASE)
    assert config_from_properties(base).faulty_mode == "none"
    chosen = config_from_properties({**base, "refbookie.faultyMode": "no-limbo-unknown"})
    assert chosen.faulty_mode == "no-limbo-unknown"
    with pytest.raises(ConfigError, match=r"refbookie\.faultyMode"):
        config_from_properties({**base, "refbookie.faultyMode": "sometimes"})
