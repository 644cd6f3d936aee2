"""ZooKeeper duties of the reference bookie, through the sibling ``adapters.zookeeper`` package:
cookie check/write, registration under ``<root>/available/<bookieId>`` (waiting, bounded, for
an old ephemeral node of the same id to expire), and ledger metadata for the pre-boot check.

All kazoo calls are synchronous with timeouts; the server runs them in a worker thread.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

from adapters.refbookie.config import BookieConfig
from adapters.refbookie.errors import ConfigError, StartupError
from adapters.refbookie.integrity import LedgerSummary
from adapters.zookeeper.client import connect_zookeeper
from adapters.zookeeper.errors import (
    InvalidMetadataServiceUri,
    MetadataError,
    NoSuchCookie,
    NoSuchLedger,
)
from adapters.zookeeper.layout import read_instance_id
from adapters.zookeeper.ledger_store import LedgerStore
from adapters.zookeeper.registration import ensure_cookie, read_cookie, register_bookie
from adapters.zookeeper.uri import MetadataServiceUri, parse_metadata_service_uri

log = logging.getLogger(__name__)


class ZkLedgerMetadata:
    """:class:`~adapters.refbookie.integrity.MetadataSource` over a :class:`LedgerStore`."""

    def __init__(self, store: LedgerStore) -> None:
        self._store = store

    def ledgers(self) -> Iterator[LedgerSummary]:
        for ledger_id in self._store.list_ledgers():
            try:
                metadata, _version = self._store.read(ledger_id)
            except NoSuchLedger:
                continue  # deleted between listing and reading
            yield LedgerSummary(ledger_id, metadata.is_closed, tuple(metadata.current_ensemble))


class ZooKeeperSession:
    """One kazoo session for the bookie's lifetime; its end removes the registration."""

    def __init__(self, zk: Any, uri: MetadataServiceUri, timeout: float) -> None:
        self.zk = zk
        self.uri = uri
        self.timeout = timeout

    @classmethod
    def open(cls, config: BookieConfig) -> ZooKeeperSession:
        assert config.metadata_service_uri is not None
        try:
            uri = parse_metadata_service_uri(config.metadata_service_uri)
        except InvalidMetadataServiceUri as exc:
            raise ConfigError(f"metadataServiceUri: {exc}") from exc
        timeout = config.zk_timeout_ms / 1000
        try:
            zk = connect_zookeeper(uri.connect_string, timeout=timeout, session_timeout=timeout)
        except MetadataError as exc:
            raise StartupError(f"ZooKeeper: {exc}") from exc
        return cls(zk, uri, timeout)

    def check_missing_cookie(self, bookie_id: str, config: BookieConfig) -> None:
        """Local cookies are missing: like a real bookie, refuse to start if ZooKeeper still has
        one, unless ``dataIntegrityStampMissingCookies`` (then the pre-boot check runs)."""
        try:
            read_cookie(self.zk, self.uri.ledgers_root, bookie_id, timeout=self.timeout)
        except NoSuchCookie:
            return
        except MetadataError as exc:
            raise StartupError(f"reading cookie of {bookie_id}: {exc}") from exc
        if not config.data_integrity_stamp_missing_cookies:
            raise StartupError(
                f"cookie of {bookie_id} is in ZooKeeper but missing from the data directories"
                " (set dataIntegrityStampMissingCookies=true, or delete the ZooKeeper cookie)"
            )

    def metadata_source(self) -> ZkLedgerMetadata:
        return ZkLedgerMetadata(
            LedgerStore(self.zk, self.uri.ledgers_root, self.uri.layout, timeout=self.timeout)
        )

    def register(self, bookie_id: str, host: str, port: int, config: BookieConfig) -> None:
        root = self.uri.ledgers_root
        try:
            instance_id = read_instance_id(self.zk, root, timeout=self.timeout)
            ensure_cookie(
                self.zk, root, bookie_id, bookie_host=f"{host}:{port}",
                journal_dir=str(config.journal_dirs[0]),
                ledger_dirs=[str(d) for d in config.ledger_dirs],
                instance_id=instance_id, timeout=self.timeout,
            )  # fmt: skip
            # An old session of this bookie (before a crash) keeps the node until it expires:
            # wait up to twice the session timeout, as a restarting bookie does.
            register_bookie(self.zk, root, bookie_id, host, port, timeout=2 * self.timeout + 5)
        except MetadataError as exc:
            raise StartupError(f"registering {bookie_id}: {exc}") from exc
        log.info("registered %s under %s/available", bookie_id, root)

    def close(self) -> None:
        try:
            self.zk.stop()
        finally:
            self.zk.close()
