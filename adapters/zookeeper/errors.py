"""Every error the ZooKeeper adapter raises, under one root: :class:`MetadataError`.

Errors that describe bad *input values* also subclass :class:`ValueError`, so callers that only
care about "the argument was wrong" can catch that. Errors carry the znode path or value that
caused them, so a failing conformance run says which znode was wrong, not just that one was.
"""

from __future__ import annotations

from adapters.errors import AdapterError


class MetadataError(AdapterError):
    """Root of the adapter's errors: something about BookKeeper metadata in ZooKeeper failed."""


# --- bad values handed to the adapter ------------------------------------------------------


class InvalidMetadataServiceUri(MetadataError, ValueError):
    """A metadata service URI is not ``zk[+layout]://host:port[;host:port...]/ledgers/root``."""


class InvalidConnectString(MetadataError, ValueError):
    """A ZooKeeper connect string kazoo cannot use (empty host, non-numeric port...)."""


class InvalidLedgerId(MetadataError, ValueError):
    """A ledger id is negative, above 2**63-1, or too large for the chosen path layout."""


class InvalidLedgerPath(MetadataError, ValueError):
    """A znode path is not the canonical path of any ledger id under the given layout."""


class InvalidBookieId(MetadataError, ValueError):
    """A bookie id does not match BookKeeper's ``BookieId`` rule (``[a-zA-Z0-9:-_.\\-]+``)."""


class InvalidBookieAddress(MetadataError, ValueError):
    """A host or port handed to bookie registration is not usable (port outside 1..65535)."""


class InvalidExpectedVersion(MetadataError, ValueError):
    """A compare-and-set was asked for with a negative or non-int znode version."""


class InvalidLedgerMetadata(MetadataError, ValueError):
    """A :class:`LedgerMetadata` value breaks one of BookKeeper's ledger metadata invariants."""


class InvalidMetadataTransition(MetadataError):
    """A state or ensemble change BookKeeper never makes (for example reopening a CLOSED ledger)."""


# --- bytes in a znode that do not parse ----------------------------------------------------


class MalformedMetadata(MetadataError):
    """Znode data cannot be decoded (bad header, bad protobuf, or an invariant broken on read)."""

    def __init__(self, message: str, *, path: str | None = None) -> None:
        super().__init__(f"{message} (znode {path})" if path else message)
        self.path = path


class UnsupportedMetadataFormat(MalformedMetadata):
    """Ledger metadata uses a format version this adapter does not read (1, or above 3)."""


class MalformedLayout(MalformedMetadata):
    """The ``LAYOUT`` znode is not ``"<formatVersion>\\n<factoryClass>:<managerVersion>"``."""


class MalformedCookie(MalformedMetadata):
    """A cookie znode is not ``"<version>\\n"`` followed by a TextFormat ``CookieFormat``."""


class MalformedRegistration(MalformedMetadata):
    """An ``available/`` znode holds neither an empty value nor a ``BookieServiceInfoFormat``."""


# --- ZooKeeper state that contradicts the request ------------------------------------------


class MetadataVersionMismatch(MetadataError):
    """A compare-and-set lost: the znode's version is no longer the expected one.

    BookKeeper's name for this is ``MetadataVersionException``.
    """

    def __init__(self, path: str, expected_version: int) -> None:
        super().__init__(f"znode {path} is no longer at version {expected_version}")
        self.path = path
        self.expected_version = expected_version


class LedgerExists(MetadataError):
    """A ledger znode already exists (BookKeeper: ``LedgerExistException``)."""

    def __init__(self, ledger_id: int, path: str) -> None:
        super().__init__(f"ledger {ledger_id} already exists at {path}")
        self.ledger_id = ledger_id
        self.path = path


class NoSuchLedger(MetadataError):
    """A ledger znode does not exist (``NoSuchLedgerExistsOnMetadataServerException``)."""

    def __init__(self, ledger_id: int, path: str) -> None:
        super().__init__(f"ledger {ledger_id} does not exist at {path}")
        self.ledger_id = ledger_id
        self.path = path


class ClusterNotFormatted(MetadataError):
    """The ledgers root, ``LAYOUT`` or ``INSTANCEID`` is missing: run ``init_new_cluster``."""


class ClusterAlreadyFormatted(MetadataError):
    """``init_new_cluster`` found the ledgers root already present (BookKeeper refuses too)."""


class NoSuchCookie(MetadataError):
    """No cookie znode exists for the bookie (BookKeeper: ``CookieNotFoundException``)."""


class CookieMismatch(MetadataError):
    """The stored cookie differs from the bookie's configuration (``InvalidCookieException``)."""


class BookieAlreadyRegistered(MetadataError):
    """Another ZooKeeper session still owns the bookie's ephemeral registration znode."""


class LedgerIdAllocationFailed(MetadataError):
    """The ``idgen`` sequential znode did not yield a usable ledger id."""


# --- talking to ZooKeeper ------------------------------------------------------------------


class ZooKeeperError(MetadataError):
    """A ZooKeeper request failed for a reason unrelated to the data (connection, session).
    Retriable: the session or connection may be back on another attempt."""

    retriable = True


class ZooKeeperUnreachable(ZooKeeperError):
    """No ZooKeeper session could be established within the timeout."""

    def __init__(self, connect_string: str, timeout: float) -> None:
        super().__init__(f"could not connect to ZooKeeper at {connect_string!r} within {timeout}s")
        self.connect_string = connect_string
        self.timeout = timeout


class ZooKeeperTimeout(ZooKeeperError):
    """A ZooKeeper request got no answer within the timeout."""
