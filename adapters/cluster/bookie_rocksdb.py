"""The RocksDB options files of a test bookie's ``DbLedgerStorage``: BookKeeper's own options,
without preallocation.

Why: a local cluster's bookies keep their disks on tmpfs (:mod:`adapters.cluster.scratch`),
where ``fallocate`` does not reserve blocks but allocates and zeroes memory. RocksDB
preallocates each write-ahead log it opens (about 1.1 times the write buffer, 64 MiB) and
truncates it again when it closes, and ``DbLedgerStorage`` has two databases (entry locations,
ledger metadata). A bookie that restarts empty opens both, writes to both and closes both: on
4.17.3, about a third of its CPU per restart went to those ``fallocate`` and ``ftruncate``
calls (measured with ``perf`` in ``benchmarks/profiles/real-bookie-steps-2026-11-27.md``, fifth
increment). ``allow_fallocate=false`` makes RocksDB append instead; what it writes and syncs,
and so what a crash loses, is unchanged.

BookKeeper (4.15 and later: apache/bookkeeper#3056, #3523) reads a database's options from
the file named by ``entryLocationRocksdbConf`` / ``ledgerMetadataRocksdbConf`` when it exists,
instead of from its own code. The files below restate what 4.17.3's code sets
(``KeyValueStorageRocksDB.initializeRocksDBWithBookieConf``), plus ``allow_fallocate=false``:
``tests/adapters/cluster/test_bookie_rocksdb_cluster.py`` compares the OPTIONS files RocksDB
writes with and without them on the default release. Older releases do not know the keys and
keep their own options (and their preallocation).
"""

from __future__ import annotations

from collections.abc import Mapping

#: The bookie JVM's direct memory (``-XX:MaxDirectMemorySize``), from which BookKeeper sizes
#: the entry-location database's block cache.
BOOKIE_MAX_DIRECT_MEMORY_MB = 256

#: BookKeeper's configuration keys, and the files' names beside ``bk_server.conf``.
ENTRY_LOCATION_KEY = "entryLocationRocksdbConf"
LEDGER_METADATA_KEY = "ledgerMetadataRocksdbConf"
ENTRY_LOCATION_FILE = "entry_location_rocksdb.conf"
LEDGER_METADATA_FILE = "ledger_metadata_rocksdb.conf"

#: What every database of BookKeeper's gets (its log, and the table format and checksum).
_COMMON_DB = {
    "create_if_missing": "true",
    "info_log_level": "INFO_LEVEL",
    "keep_log_file_num": "30",
    "log_file_time_to_roll": "86400",
    "allow_fallocate": "false",
}
_COMMON_TABLE = {"format_version": "5", "checksum": "kxxHash"}


def _section(header: str, options: Mapping[str, str]) -> str:
    return f"[{header}]\n" + "".join(f"  {key}={value}\n" for key, value in options.items())


def _options_file(db: Mapping[str, str], cf: Mapping[str, str], table: Mapping[str, str]) -> str:
    return (
        "# Written by bkconform (adapters/cluster/bookie_rocksdb.py): BookKeeper's own options\n"
        "# for this database, without preallocation (allow_fallocate=false).\n"
        + _section("DBOptions", db)
        + _section('CFOptions "default"', cf)
        + _section('TableOptions/BlockBasedTable "default"', table)
    )


def entry_location_options() -> str:
    """The entry-location index's options: BookKeeper's defaults for it (LZ4, 64 MiB write
    buffers, bloom filters, a block cache of a tenth of the direct memory per ledger dir; a
    test bookie has one)."""
    block_cache = BOOKIE_MAX_DIRECT_MEMORY_MB * 1024 * 1024 // 10
    return _options_file(
        {
            **_COMMON_DB,
            "max_background_jobs": "32",
            "max_subcompactions": "1",
            "max_total_wal_size": str(512 * 1024 * 1024),
            "max_open_files": "-1",
            "delete_obsolete_files_period_micros": str(3_600 * 1_000_000),
        },
        {
            "compression": "kLZ4Compression",
            "write_buffer_size": str(64 * 1024 * 1024),
            "max_write_buffer_number": "4",
            "level0_file_num_compaction_trigger": "4",
            "max_bytes_for_level_base": str(256 * 1024 * 1024),
            "target_file_size_base": str(64 * 1024 * 1024),
            "level_compaction_dynamic_level_bytes": "true",
        },
        {
            "block_size": str(64 * 1024),
            "block_cache": str(block_cache),
            **_COMMON_TABLE,
            "filter_policy": "rocksdb.BloomFilter:10:false",
            "cache_index_and_filter_blocks": "true",
        },
    )


def ledger_metadata_options() -> str:
    """The ledger-metadata index's options: RocksDB's defaults, as BookKeeper leaves them."""
    return _options_file(_COMMON_DB, {}, _COMMON_TABLE)


def option_files() -> dict[str, tuple[str, str]]:
    """Configuration key -> (file name, content) for a bookie with one ledger directory."""
    return {
        ENTRY_LOCATION_KEY: (ENTRY_LOCATION_FILE, entry_location_options()),
        LEDGER_METADATA_KEY: (LEDGER_METADATA_FILE, ledger_metadata_options()),
    }
