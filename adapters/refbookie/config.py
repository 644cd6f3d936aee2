"""``bk_server.conf``-style configuration of the reference bookie, with real BookKeeper key names.

Only the keys below have an effect; any other key is ignored (logged at debug level), so a real
``bk_server.conf`` loads. A malformed value raises :class:`ConfigError`.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path

from adapters.refbookie.errors import ConfigError

log = logging.getLogger(__name__)

DEFAULT_PORT = 3181
DEFAULT_FLUSH_INTERVAL_MS = 10_000


@dataclass(frozen=True)
class BookieConfig:
    """Settings of one reference bookie (names in comments are the ``bk_server.conf`` keys)."""

    journal_dirs: tuple[Path, ...]  # journalDirectories (or journalDirectory)
    ledger_dirs: tuple[Path, ...]  # ledgerDirectories
    port: int = DEFAULT_PORT  # bookiePort; 0 = any free port (in-process tests)
    advertised_address: str = "127.0.0.1"  # advertisedAddress
    bookie_id_override: str | None = None  # bookieId
    metadata_service_uri: str | None = None  # metadataServiceUri; None = no ZooKeeper
    journal_write_data: bool = True  # journalWriteData
    journal_sync_data: bool = True  # journalSyncData
    data_integrity_checking: bool = False  # dataIntegrityChecking
    data_integrity_stamp_missing_cookies: bool = False  # dataIntegrityStampMissingCookies
    ledger_storage_class: str | None = None  # ledgerStorageClass: recorded, no behaviour
    flush_interval_ms: int = DEFAULT_FLUSH_INTERVAL_MS  # flushInterval
    zk_timeout_ms: int = 10_000  # zkTimeout
    max_frame_size: int = 5 * 1024 * 1024  # nettyMaxFrameSizeBytes
    # refbookie.faultyMode: a deliberately WRONG behaviour, only for proving that the
    # conformance engine reports divergences. Not a BookKeeper key; never set it otherwise.
    faulty_mode: str = "none"
    ignored_keys: tuple[str, ...] = field(default=())

    def bookie_id(self, port: int | None = None) -> str:
        """``bookieId`` if set, else ``advertisedAddress:bookiePort`` (``BookieImpl``)."""
        if self.bookie_id_override:
            return self.bookie_id_override
        return f"{self.advertised_address}:{self.port if port is None else port}"


def parse_properties(text: str) -> dict[str, str]:
    """``key=value`` lines (also ``key: value``); ``#``/``!`` comments and blank lines skipped."""
    properties: dict[str, str] = {}
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith(("#", "!")):
            continue
        separators = [i for i in (line.find("="), line.find(":")) if i > 0]
        if not separators:
            raise ConfigError(f"line {number}: expected key=value, got {raw!r}")
        cut = min(separators)
        properties[line[:cut].strip()] = line[cut + 1 :].strip()
    return properties


def _bool(key: str, value: str) -> bool:
    lowered = value.lower()
    if lowered in ("true", "yes", "1"):
        return True
    if lowered in ("false", "no", "0"):
        return False
    raise ConfigError(f"{key}={value!r}: expected true or false")


def _int(key: str, value: str, minimum: int, maximum: int) -> int:
    try:
        number = int(value)
    except ValueError:
        raise ConfigError(f"{key}={value!r}: expected an integer") from None
    if not minimum <= number <= maximum:
        raise ConfigError(f"{key}={number}: expected {minimum}..{maximum}")
    return number


def _dirs(key: str, value: str) -> tuple[Path, ...]:
    dirs = tuple(Path(part.strip()) for part in value.split(",") if part.strip())
    if not dirs:
        raise ConfigError(f"{key} is empty")
    return dirs


_KNOWN = {
    "bookiePort",
    "advertisedAddress",
    "bookieId",
    "metadataServiceUri",
    "journalDirectories",
    "journalDirectory",
    "ledgerDirectories",
    "journalWriteData",
    "journalSyncData",
    "dataIntegrityChecking",
    "dataIntegrityStampMissingCookies",
    "ledgerStorageClass",
    "flushInterval",
    "zkTimeout",
    "nettyMaxFrameSizeBytes",
    "refbookie.faultyMode",
}

#: Deliberately wrong behaviours (see ``BookieConfig.faulty_mode``).
FAULTY_MODES = ("none", "ignore-recovery-read-fence", "no-limbo-unknown", "racy-fence-add")


def config_from_properties(properties: dict[str, str]) -> BookieConfig:
    """Build a :class:`BookieConfig`; raises :class:`ConfigError` on a missing or bad value."""
    get = properties.get
    journal = get("journalDirectories") or get("journalDirectory")
    if not journal:
        raise ConfigError("journalDirectories is required")
    ledgers = get("ledgerDirectories")
    if not ledgers:
        raise ConfigError("ledgerDirectories is required")
    ignored = tuple(sorted(set(properties) - _KNOWN))
    for key in ignored:
        log.debug("ignoring configuration key %s", key)
    advertised = get("advertisedAddress") or "127.0.0.1"
    bookie_id = get("bookieId") or None
    if bookie_id is not None and not all(c.isalnum() or c in ":-_." for c in bookie_id):
        raise ConfigError(f"bookieId={bookie_id!r}: allowed characters are [a-zA-Z0-9:-_.]")
    return BookieConfig(
        journal_dirs=_dirs("journalDirectories", journal),
        ledger_dirs=_dirs("ledgerDirectories", ledgers),
        port=_int("bookiePort", get("bookiePort", str(DEFAULT_PORT)), 0, 65535),
        advertised_address=advertised,
        bookie_id_override=bookie_id,
        metadata_service_uri=get("metadataServiceUri") or None,
        journal_write_data=_bool("journalWriteData", get("journalWriteData", "true")),
        journal_sync_data=_bool("journalSyncData", get("journalSyncData", "true")),
        data_integrity_checking=_bool(
            "dataIntegrityChecking", get("dataIntegrityChecking", "false")
        ),
        data_integrity_stamp_missing_cookies=_bool(
            "dataIntegrityStampMissingCookies", get("dataIntegrityStampMissingCookies", "false")
        ),
        ledger_storage_class=get("ledgerStorageClass") or None,
        flush_interval_ms=_int(
            "flushInterval", get("flushInterval", str(DEFAULT_FLUSH_INTERVAL_MS)), 1, 2**31 - 1
        ),
        zk_timeout_ms=_int("zkTimeout", get("zkTimeout", "10000"), 1, 2**31 - 1),
        max_frame_size=_int(
            "nettyMaxFrameSizeBytes",
            get("nettyMaxFrameSizeBytes", str(5 * 1024 * 1024)),
            1024,
            2**31 - 1,
        ),
        faulty_mode=_choice(
            "refbookie.faultyMode", get("refbookie.faultyMode", "none"), FAULTY_MODES
        ),
        ignored_keys=ignored,
    )


def _choice(key: str, value: str, allowed: tuple[str, ...]) -> str:
    if value not in allowed:
        raise ConfigError(f"{key}={value!r}: expected one of {', '.join(allowed)}")
    return value


def load_config(path: Path) -> BookieConfig:
    """Read and parse a configuration file."""
    try:
        text = path.read_text()
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc}") from exc
    return config_from_properties(parse_properties(text))
