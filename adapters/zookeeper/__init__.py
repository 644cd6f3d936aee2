"""BookKeeper's metadata and cluster layout in ZooKeeper, byte-exact with real BookKeeper.

Modules, one concept each:

* :mod:`.uri` - metadata service URIs (``zk+hierarchical://h:2181/ledgers``);
* :mod:`.paths` - ledger id <-> znode path for each layout, reserved znode names;
* :mod:`.metadata` - :class:`LedgerMetadata`, its invariants and state changes, and the
  format-3 (and format-2) znode encoding;
* :mod:`.ledger_store` - :class:`LedgerStore`: create / read / compare-and-set / list / delete;
* :mod:`.idgen` - ledger id allocation through ``idgen`` / ``idgen-long`` sequential znodes;
* :mod:`.layout` - ``init_new_cluster``, ``LAYOUT`` and ``INSTANCEID``;
* :mod:`.registration` - bookie registration, discovery and cookies;
* :mod:`.cookie`, :mod:`.service_info`, :mod:`.bookie_id` - the encodings those use;
* :mod:`.client` - kazoo connections and waits with timeouts;
* :mod:`.errors` - every error, under :class:`MetadataError`.
"""

from adapters.zookeeper.client import DEFAULT_TIMEOUT, connect_zookeeper, zookeeper_session
from adapters.zookeeper.errors import (
    BookieAlreadyRegistered,
    ClusterAlreadyFormatted,
    ClusterNotFormatted,
    CookieMismatch,
    InvalidLedgerMetadata,
    InvalidMetadataServiceUri,
    InvalidMetadataTransition,
    LedgerExists,
    MalformedMetadata,
    MetadataError,
    MetadataVersionMismatch,
    NoSuchCookie,
    NoSuchLedger,
    ZooKeeperError,
    ZooKeeperTimeout,
    ZooKeeperUnreachable,
)
from adapters.zookeeper.layout import (
    init_new_cluster,
    is_formatted,
    read_instance_id,
    read_layout,
)
from adapters.zookeeper.ledger_store import LedgerStore
from adapters.zookeeper.metadata import (
    DigestType,
    LedgerMetadata,
    LedgerState,
    Segment,
    parse_ledger_metadata,
    serialize_ledger_metadata,
)
from adapters.zookeeper.paths import LAYOUTS, ledger_id_from_path, ledger_path
from adapters.zookeeper.registration import (
    BookieAddress,
    ensure_cookie,
    list_bookies,
    read_cookie,
    register_bookie,
    unregister_bookie,
)
from adapters.zookeeper.uri import (
    MetadataServiceUri,
    format_metadata_service_uri,
    parse_metadata_service_uri,
)

__all__ = [
    "DEFAULT_TIMEOUT",
    "LAYOUTS",
    "BookieAddress",
    "BookieAlreadyRegistered",
    "ClusterAlreadyFormatted",
    "ClusterNotFormatted",
    "CookieMismatch",
    "DigestType",
    "InvalidLedgerMetadata",
    "InvalidMetadataServiceUri",
    "InvalidMetadataTransition",
    "LedgerExists",
    "LedgerMetadata",
    "LedgerState",
    "LedgerStore",
    "MalformedMetadata",
    "MetadataError",
    "MetadataServiceUri",
    "MetadataVersionMismatch",
    "NoSuchCookie",
    "NoSuchLedger",
    "Segment",
    "ZooKeeperError",
    "ZooKeeperTimeout",
    "ZooKeeperUnreachable",
    "connect_zookeeper",
    "ensure_cookie",
    "format_metadata_service_uri",
    "init_new_cluster",
    "is_formatted",
    "ledger_id_from_path",
    "ledger_path",
    "list_bookies",
    "parse_ledger_metadata",
    "parse_metadata_service_uri",
    "read_cookie",
    "read_instance_id",
    "read_layout",
    "register_bookie",
    "serialize_ledger_metadata",
    "unregister_bookie",
    "zookeeper_session",
]
