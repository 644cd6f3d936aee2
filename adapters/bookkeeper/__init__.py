"""BookKeeper's bookie wire protocol (v3 protobuf and v2 binary), entry digests, and clients.

Modules, lowest layer first: ``errors``, ``status``, ``framing`` (length prefix), ``v3`` / ``v2``
(message codecs), ``codec`` (protocol detection), ``entry`` (bodies and digests), ``connection``
and ``client`` (asyncio clients for one bookie).
"""

from adapters.bookkeeper.client import (
    LAST_ADD_CONFIRMED,
    AddResult,
    AuthResult,
    BookieClient,
    BookieInfoResult,
    LedgerStatusResult,
    ReadLacResult,
    ReadResult,
    V2BookieClient,
)
from adapters.bookkeeper.entry import (
    DigestType,
    Entry,
    master_key,
    package_entry,
    package_lac,
    verify_entry,
    verify_lac,
)
from adapters.bookkeeper.errors import (
    CloseReason,
    ConnectionClosed,
    ConnectTimeout,
    DigestMismatch,
    FrameTooLarge,
    MalformedEntry,
    MalformedFrame,
    RequestTimeout,
    WireError,
)
from adapters.bookkeeper.status import StatusCode, V2ReturnCode

__all__ = [
    "LAST_ADD_CONFIRMED",
    "AddResult",
    "AuthResult",
    "BookieClient",
    "BookieInfoResult",
    "CloseReason",
    "ConnectTimeout",
    "ConnectionClosed",
    "DigestMismatch",
    "DigestType",
    "Entry",
    "FrameTooLarge",
    "LedgerStatusResult",
    "MalformedEntry",
    "MalformedFrame",
    "ReadLacResult",
    "ReadResult",
    "RequestTimeout",
    "StatusCode",
    "V2BookieClient",
    "V2ReturnCode",
    "WireError",
    "master_key",
    "package_entry",
    "package_lac",
    "verify_entry",
    "verify_lac",
]
