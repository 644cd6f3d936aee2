"""Named settings profiles of a bookie, each named after who runs it, and the ledger storages.

A profile is the values of the settings the replication protocol's behaviour depends on (the
journal's grouping, syncing and flushing, the storage's flush interval, the ZooKeeper session,
the request threads, ...), each with where it comes from: a file at a release or commit.

- ``suite`` (the default): what the suite's clusters have always run (a short ZooKeeper
  session, a journal that writes a lone request at once, small ``DbLedgerStorage`` caches);
  every other setting is the release's own default.
- ``bookkeeper``: BookKeeper's own defaults (``ServerConfiguration`` and
  ``AbstractConfiguration`` at ``release-4.18.0``; 4.17.3 has the same values), written out,
  so that an older release runs them too.
- ``pulsar``: Pulsar's ``conf/bookkeeper.conf`` (apache/pulsar at
  0364110cfd05ee1b9308ff5d361d626cd6647e90), the configuration BookKeeper's main user ships.

What a profile cannot change is the harness's (:data:`HARNESS_KEYS`, each with why): the
bookie's addresses and directories, the metadata service, the ledger storage (a dimension of
its own, :class:`LedgerStorage`, chosen per run; a profile only says which one its operator
runs), data integrity checking (the model's limbo switch), the RocksDB options files, the HTTP
server and the auto-recovery daemon; and ``gcWaitTime`` may not be shorter than
:data:`MIN_GC_WAIT_MS`. Anything else a profile leaves out is the release's own default.
docs/bookie-settings.md lists every value with its source.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass

from adapters.cluster.errors import InvalidClusterOptions


class LedgerStorage(enum.Enum):
    """``ledgerStorageClass`` values. Limbo (data integrity checking) needs ``DB``."""

    SORTED = "org.apache.bookkeeper.bookie.SortedLedgerStorage"
    INTERLEAVED = "org.apache.bookkeeper.bookie.InterleavedLedgerStorage"
    DB = "org.apache.bookkeeper.bookie.storage.ldb.DbLedgerStorage"

    @property
    def short_name(self) -> str:
        """``sorted``, ``interleaved``, ``db``: the word the command line takes."""
        return self.name.lower()

    @property
    def class_name(self) -> str:
        """``SortedLedgerStorage``: the class's simple name, as a person says it."""
        return self.value.rsplit(".", 1)[1]


#: The storages a run may choose (``--ledger-storage``): BookKeeper's default and the one
#: Pulsar runs. (``InterleavedLedgerStorage``, the pre-4.5 default, stays reachable through
#: :class:`~adapters.cluster.bookies.BookieSettings` for the adapters' own tests.)
STORAGE_CHOICES: tuple[str, ...] = (LedgerStorage.SORTED.short_name, LedgerStorage.DB.short_name)


def storage_named(name: str) -> LedgerStorage:
    """``sorted`` or ``db`` -> the storage (InvalidClusterOptions for anything else)."""
    for storage in LedgerStorage:
        if storage.short_name == name and name in STORAGE_CHOICES:
            return storage
    raise InvalidClusterOptions(
        f"ledger storage {name!r}: one of {', '.join(STORAGE_CHOICES)} (sorted: "
        "SortedLedgerStorage, BookKeeper's default; db: DbLedgerStorage, Pulsar's)"
    )


#: The keys the harness writes and no profile may: key -> why.
HARNESS_KEYS: Mapping[str, str] = {
    "bookiePort": "a free port of this machine, chosen per bookie",
    "bookieId": "the bookie's loopback address and port, which the model's bookies map to",
    "advertisedAddress": "loopback (local) or what the container network needs",
    "listeningInterface": "loopback only: the suite's bookies are never reachable from outside",
    "allowLoopback": "the bookies run on loopback",
    "metadataServiceUri": "the cluster's own ZooKeeper, started for the run",
    "zkServers": "the cluster's own ZooKeeper (pre-4.7 key)",
    "zkLedgersRootPath": "the cluster's ledgers root (pre-4.7 key)",
    "journalDirectories": "the bookie's scratch directory (tmpfs when there is room)",
    "ledgerDirectories": "the bookie's scratch directory (tmpfs when there is room)",
    "indexDirectories": "the ledger directories",
    "ledgerStorageClass": "a dimension of its own (--ledger-storage), with limbo's constraint",
    "dataIntegrityChecking": "the model's limbo switch (limbo_on_unclean_shutdown)",
    "dataIntegrityStampMissingCookies": "the model's limbo switch (a wiped bookie restarts)",
    "entryLocationRocksdbConf": "the harness's RocksDB options files (no preallocation on tmpfs)",
    "ledgerMetadataRocksdbConf": "the harness's RocksDB options files (no preallocation on tmpfs)",
    "defaultRocksdbConf": "the harness's RocksDB options files",
    "httpServerEnabled": "off: nothing of the suite uses it, and it would need a port",
    "autoRecoveryDaemonEnabled": (
        "off: auto-recovery would re-replicate and rewrite ledger metadata behind the model"
    ),
}

#: The shortest ``gcWaitTime`` a profile may set: the garbage collector deletes every ledger
#: whose metadata znode it does not find, and a test writes entries before (or without)
#: creating the metadata. BookKeeper's own default, 10 minutes.
MIN_GC_WAIT_MS = 600_000

_BK_TAG = "release-4.18.0"
_SERVER_CONF = "bookkeeper-server/src/main/java/org/apache/bookkeeper/conf/ServerConfiguration.java"
_ABSTRACT_CONF = (
    "bookkeeper-server/src/main/java/org/apache/bookkeeper/conf/AbstractConfiguration.java"
)
PULSAR_COMMIT = "0364110cfd05ee1b9308ff5d361d626cd6647e90"
_PULSAR_CONF = f"apache/pulsar conf/bookkeeper.conf @ {PULSAR_COMMIT[:12]}"


@dataclass(frozen=True)
class Setting:
    """One configuration key's value and where it comes from."""

    key: str
    value: str
    source: str


@dataclass(frozen=True)
class SettingsProfile:
    """A named set of bookie settings; see the module docstring."""

    name: str
    #: Who runs these settings, in words.
    who: str
    #: The ledger storage its operator runs (a run's storage unless ``--ledger-storage``
    #: names another) and where that comes from.
    ledger_storage: LedgerStorage
    ledger_storage_source: str
    settings: tuple[Setting, ...]

    def __post_init__(self) -> None:
        keys = [setting.key for setting in self.settings]
        if len(keys) != len(set(keys)):
            raise InvalidClusterOptions(f"profile {self.name}: a key is set twice")
        harness = sorted(set(keys) & set(HARNESS_KEYS))
        if harness:
            raise InvalidClusterOptions(
                f"profile {self.name} sets {', '.join(harness)}: the harness's "
                f"({'; '.join(HARNESS_KEYS[key] for key in harness)})"
            )
        if "zkTimeout" not in keys:
            raise InvalidClusterOptions(f"profile {self.name} must say its zkTimeout")
        gc = self.value("gcWaitTime")
        if gc is None or int(gc) < MIN_GC_WAIT_MS:
            raise InvalidClusterOptions(
                f"profile {self.name}: gcWaitTime {gc} is shorter than {MIN_GC_WAIT_MS} ms; the "
                "garbage collector would delete ledgers a test wrote before their metadata"
            )

    def value(self, key: str) -> str | None:
        for setting in self.settings:
            if setting.key == key:
                return setting.value
        return None

    def entries(self) -> dict[str, str]:
        """The profile's ``bk_server.conf`` entries (the ledger storage is not one of them)."""
        return {setting.key: setting.value for setting in self.settings}

    @property
    def zk_timeout_ms(self) -> int:
        value = self.value("zkTimeout")
        assert value is not None  # checked when the profile was made
        return int(value)

    def describe(self) -> str:
        """``pulsar (Pulsar's conf/bookkeeper.conf @ 0364110cfd05)``."""
        return f"{self.name} ({self.who})"


def _bk(key: str, value: str, file: str, line: int, *, differs_in_4_17_3: str = "") -> Setting:
    """A default read from BookKeeper's code at release-4.18.0 (4.17.3: the same value, unless
    ``differs_in_4_17_3`` says otherwise)."""
    same = differs_in_4_17_3 or "4.17.3: the same"
    return Setting(key, value, f"{file.rsplit('/', 1)[1]}:{line} @ {_BK_TAG} ({same})")


def _pulsar(key: str, value: str) -> Setting:
    return Setting(key, value, _PULSAR_CONF)


#: The journal's settings for a client that waits for each answer (the suite's, one request
#: at a time: the ``suite`` profile's).
#: BookKeeper's journal waits up to ``journalMaxGroupWaitMSec`` (2 ms) for more entries before
#: it writes and syncs a group, so every add and fence of a lone request waited those 2 ms
#: (issue 32's profile: an add 3.2 ms, 1.7 ms without the wait). Flushing when the queue is
#: empty writes and syncs at once: the same write, the same fsync before the answer; requests
#: that arrive together (races) are still grouped. The ``bookkeeper`` and ``pulsar`` profiles
#: keep their own (false: the group wait).
JOURNAL_FOR_WAITING_CLIENTS: Mapping[str, str] = {"journalFlushWhenQueueEmpty": "true"}

_SUITE_SOURCE = "the suite's test settings (adapters/cluster/bookie_profiles.py SUITE)"

#: What the suite's clusters have always run: the default profile.
SUITE = SettingsProfile(
    name="suite",
    who="the suite's test settings",
    # Limbo configurations run DbLedgerStorage (data integrity checking needs it).
    ledger_storage=LedgerStorage.SORTED,
    ledger_storage_source=_SUITE_SOURCE + "; DbLedgerStorage where a configuration has limbo",
    settings=(
        Setting(
            "zkTimeout",
            "4000",
            _SUITE_SOURCE + ": a crashed bookie's registration lingers this long at most",
        ),
        Setting("journalWriteData", "true", "BookKeeper's default, unchanged"),
        Setting(
            "gcWaitTime",
            "600000",
            "BookKeeper's default (10 min), explicit: a shorter one would delete ledgers a test "
            "wrote before their metadata",
        ),
        *(
            Setting(
                key,
                value,
                "adapters/cluster/bookie_profiles.py JOURNAL_FOR_WAITING_CLIENTS: a client that "
                "waits for each answer is not made to wait journalMaxGroupWaitMSec (2 ms) for a "
                "group; the same write and fsync before the answer (issue 32)",
            )
            for key, value in JOURNAL_FOR_WAITING_CLIENTS.items()
        ),
        Setting(
            "dbStorage_writeCacheMaxSizeMb",
            "32",
            _SUITE_SOURCE + ": small caches (BookKeeper sizes them from direct memory)",
        ),
        Setting(
            "dbStorage_readAheadCacheMaxSizeMb",
            "16",
            _SUITE_SOURCE + ": small caches (BookKeeper sizes them from direct memory)",
        ),
    ),
)

#: BookKeeper's own defaults, read from release-4.18.0's code (and checked against 4.17.3's:
#: every value is the same, only the line numbers differ).
BOOKKEEPER = SettingsProfile(
    name="bookkeeper",
    who=f"BookKeeper's own defaults, ServerConfiguration @ {_BK_TAG}",
    ledger_storage=LedgerStorage.SORTED,
    ledger_storage_source=(
        f"ServerConfiguration.java:64-67 @ {_BK_TAG} (LEDGER_STORAGE_CLASS_KEY defaultValue "
        "SortedLedgerStorage; 4.17.3: the same)"
    ),
    settings=(
        _bk("zkTimeout", "10000", _ABSTRACT_CONF, 339),
        _bk("journalWriteData", "true", _SERVER_CONF, 2395),
        _bk("journalSyncData", "true", _SERVER_CONF, 2384),
        _bk("journalAdaptiveGroupWrites", "true", _SERVER_CONF, 2435),
        _bk("journalMaxGroupWaitMSec", "2", _SERVER_CONF, 2454),
        _bk("journalBufferedWritesThreshold", "524288", _SERVER_CONF, 2475),
        _bk("journalFlushWhenQueueEmpty", "false", _SERVER_CONF, 2528),
        _bk("journalFormatVersionToWrite", "6", _SERVER_CONF, 938),
        _bk("fileInfoFormatVersionToWrite", "1", _SERVER_CONF, 824),
        _bk("flushInterval", "10000", _SERVER_CONF, 652),
        _bk("gcWaitTime", "600000", _SERVER_CONF, 424),
        _bk("numAddWorkerThreads", "1", _SERVER_CONF, 2067),
        _bk("numReadWorkerThreads", "8", _SERVER_CONF, 2157),
        _bk("numHighPriorityWorkerThreads", "8", _SERVER_CONF, 2114),
        _bk("readOnlyModeEnabled", "true", _SERVER_CONF, 2551),
    ),
)

#: Pulsar's conf/bookkeeper.conf (apache/pulsar at PULSAR_COMMIT), for the same settings.
PULSAR = SettingsProfile(
    name="pulsar",
    who=f"Pulsar's conf/bookkeeper.conf @ {PULSAR_COMMIT[:12]}",
    ledger_storage=LedgerStorage.DB,
    ledger_storage_source=_PULSAR_CONF
    + " (ledgerStorageClass=org.apache.bookkeeper.bookie.storage.ldb.DbLedgerStorage)",
    settings=(
        _pulsar("zkTimeout", "30000"),
        _pulsar("journalWriteData", "true"),
        _pulsar("journalSyncData", "true"),
        _pulsar("journalAdaptiveGroupWrites", "true"),
        _pulsar("journalMaxGroupWaitMSec", "1"),
        _pulsar("journalBufferedWritesThreshold", "524288"),
        _pulsar("journalFlushWhenQueueEmpty", "false"),
        _pulsar("journalFormatVersionToWrite", "5"),
        _pulsar("fileInfoFormatVersionToWrite", "0"),
        _pulsar("flushInterval", "60000"),
        _pulsar("gcWaitTime", "900000"),
        _pulsar("numAddWorkerThreads", "0"),
        _pulsar("numReadWorkerThreads", "8"),
        _pulsar("numHighPriorityWorkerThreads", "8"),
        _pulsar("readOnlyModeEnabled", "true"),
    ),
)

PROFILES: Mapping[str, SettingsProfile] = {p.name: p for p in (SUITE, BOOKKEEPER, PULSAR)}
DEFAULT_PROFILE = SUITE.name


def profile_named(name: str) -> SettingsProfile:
    """The profile of that name (InvalidClusterOptions for an unknown one)."""
    try:
        return PROFILES[name]
    except KeyError:
        raise InvalidClusterOptions(
            f"settings profile {name!r}: one of {', '.join(PROFILES)}"
        ) from None


__all__ = [
    "BOOKKEEPER",
    "DEFAULT_PROFILE",
    "HARNESS_KEYS",
    "JOURNAL_FOR_WAITING_CLIENTS",
    "MIN_GC_WAIT_MS",
    "PROFILES",
    "PULSAR",
    "PULSAR_COMMIT",
    "STORAGE_CHOICES",
    "SUITE",
    "LedgerStorage",
    "Setting",
    "SettingsProfile",
    "profile_named",
    "storage_named",
]
