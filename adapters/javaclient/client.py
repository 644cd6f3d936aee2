"""The real BookKeeper Java client (``org.apache.bookkeeper.client.BookKeeper``) through py4j.

::

    with BookKeeperJavaClient.launch(
        ClientOptions("zk+hierarchical://127.0.0.1:2181/ledgers", speculative_read_timeout_ms=300),
        bookkeeper_home=Path(os.environ["BOOKKEEPER_HOME"]),
    ) as client:
        ledger = client.create_ledger(3, 3, 2, JavaDigestType.CRC32, b"pw")
        ledger.add_entry(b"e0")
        recovered = client.open_ledger(ledger.ledger_id, JavaDigestType.CRC32, b"pw", recovery=True)
        ledger.add_entry(b"e1")     # raises BKLedgerFenced: the recovery open fenced the writer

Only the synchronous ``LedgerHandle`` API is used, each call under a deadline. Results are
plain Python values; BookKeeper's exceptions are :class:`~adapters.javaclient.errors.BKError`
subclasses. Closing the client closes the Java ``BookKeeper`` object (bounded) and, when the
client launched its JVM, kills the JVM.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import TracebackType
from typing import Any

from py4j.java_gateway import JavaClass

from adapters.javaclient.distribution import distribution_classpath
from adapters.javaclient.errors import JavaClientError, JvmGone
from adapters.javaclient.gateway import JvmGateway, JvmOptions
from adapters.zookeeper.errors import InvalidMetadataServiceUri
from adapters.zookeeper.uri import (
    MetadataServiceUri,
    format_metadata_service_uri,
    parse_metadata_service_uri,
)

_CLIENT_CLOSE_TIMEOUT = 10.0


def java_class(gateway: JvmGateway, name: str) -> Any:
    """The py4j ``JavaClass`` for ``name``; JavaClientError if the JVM does not have it.

    py4j turns an unknown name into a ``JavaPackage`` silently; calling it fails later with an
    unhelpful TypeError, so check here.
    """
    found = gateway.jvm
    for part in name.split("."):
        found = getattr(found, part)
    if not isinstance(found, JavaClass):
        raise JavaClientError(
            f"{name} is not on the JVM's classpath: launch with bookkeeper_home set to a "
            "BookKeeper binary distribution (its lib/*.jar), or pass the client jars"
        )
    return found


class JavaDigestType(enum.Enum):
    """``BookKeeper.DigestType`` constants."""

    MAC = "MAC"
    CRC32 = "CRC32"
    CRC32C = "CRC32C"
    DUMMY = "DUMMY"


@dataclass(frozen=True)
class ClientOptions:
    """``ClientConfiguration`` settings; ``None`` leaves the client's default.

    ``bookie_address_resolver_enabled`` exists from 4.12 on (setting it on an older client is
    an error). ``properties`` are passed to ``setProperty`` as they are.
    """

    metadata_service_uri: str
    speculative_read_timeout_ms: int | None = None
    bookie_address_resolver_enabled: bool | None = None
    add_entry_timeout_s: int | None = None
    read_entry_timeout_s: int | None = None
    zk_timeout_ms: int | None = None
    properties: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        try:
            parse_metadata_service_uri(self.metadata_service_uri)
        except InvalidMetadataServiceUri as exc:
            raise JavaClientError(
                f"metadata service URI {self.metadata_service_uri!r} is not a ZooKeeper one "
                f"(expected e.g. zk+hierarchical://127.0.0.1:2181/ledgers): {exc}"
            ) from exc
        for name in (
            "speculative_read_timeout_ms",
            "add_entry_timeout_s",
            "read_entry_timeout_s",
            "zk_timeout_ms",
        ):
            value = getattr(self, name)
            if value is not None and value < 0:
                raise JavaClientError(f"ClientOptions.{name} must be >= 0, got {value}")

    @classmethod
    def for_zookeeper(
        cls,
        connect_string: str,
        ledgers_root: str = "/ledgers",
        *,
        layout: str = "hierarchical",
        **settings: Any,
    ) -> ClientOptions:
        """Options for a ZooKeeper connect string (``"h1:2181,h2:2181"``) and ledgers root."""
        try:
            uri = MetadataServiceUri(connect_string, ledgers_root, layout)
        except InvalidMetadataServiceUri as exc:
            raise JavaClientError(f"bad ZooKeeper location: {exc}") from exc
        return cls(format_metadata_service_uri(uri), **settings)


@dataclass(frozen=True, slots=True)
class JavaLedgerEntry:
    entry_id: int
    data: bytes


class JavaLedger:
    """A ``LedgerHandle`` of the Java client (writer or reader)."""

    def __init__(self, client: BookKeeperJavaClient, handle: Any, ledger_id: int) -> None:
        self._client = client
        self._handle = handle
        self.ledger_id = ledger_id

    def __repr__(self) -> str:
        return f"JavaLedger({self.ledger_id})"

    @property
    def client(self) -> BookKeeperJavaClient:
        return self._client

    @property
    def handle(self) -> Any:
        """The py4j ``LedgerHandle`` (for helpers that call it in the client's JVM)."""
        return self._handle

    def add_entry(self, data: bytes, *, timeout: float | None = None) -> int:
        """``addEntry(data)``; the entry id assigned."""
        payload = bytearray(data)
        return int(
            self._client._call(
                lambda: self._handle.addEntry(payload), timeout, f"addEntry {self.ledger_id}"
            )
        )

    def read_entries(
        self, first: int, last: int, *, timeout: float | None = None
    ) -> list[JavaLedgerEntry]:
        """``readEntries(first, last)`` (inclusive)."""

        def read() -> list[JavaLedgerEntry]:
            entries = self._handle.readEntries(first, last)
            found = []
            while entries.hasMoreElements():
                entry = entries.nextElement()
                found.append(JavaLedgerEntry(int(entry.getEntryId()), bytes(entry.getEntry())))
            return found

        entries: list[JavaLedgerEntry] = self._client._call(
            read, timeout, f"readEntries {self.ledger_id} {first}..{last}"
        )
        return entries

    def read_last_add_confirmed(self, *, timeout: float | None = None) -> int:
        """``readLastConfirmed()``: asks the bookies (the handle's cached LAC may lag)."""
        return int(
            self._client._call(
                self._handle.readLastConfirmed, timeout, f"readLastConfirmed {self.ledger_id}"
            )
        )

    def last_add_confirmed(self, *, timeout: float | None = None) -> int:
        """``getLastAddConfirmed()``: the handle's own view, no request sent."""
        return int(
            self._client._call(
                self._handle.getLastAddConfirmed, timeout, f"getLastAddConfirmed {self.ledger_id}"
            )
        )

    def is_closed(self, *, timeout: float | None = None) -> bool:
        return bool(self._client._call(self._handle.isClosed, timeout, "isClosed"))

    def close(self, *, timeout: float | None = None) -> None:
        """``close()``: for a writer, seals the ledger at its LAC in the metadata."""
        self._client._call(self._handle.close, timeout, f"close ledger {self.ledger_id}")


class BookKeeperJavaClient:
    """``new BookKeeper(ClientConfiguration)`` in a JVM; see the module docstring."""

    def __init__(self, gateway: JvmGateway, bookkeeper: Any, *, owns_gateway: bool = False) -> None:
        self.gateway = gateway
        self._bookkeeper = bookkeeper
        self._owns_gateway = owns_gateway
        self._closed = False

    @classmethod
    def connect(
        cls,
        gateway: JvmGateway,
        options: ClientOptions,
        *,
        timeout: float | None = None,
        owns_gateway: bool = False,
    ) -> BookKeeperJavaClient:
        """Build the configuration and the client in ``gateway``'s JVM (bounded)."""

        def build() -> Any:
            conf = java_class(gateway, "org.apache.bookkeeper.conf.ClientConfiguration")()
            conf.setMetadataServiceUri(options.metadata_service_uri)
            if options.speculative_read_timeout_ms is not None:
                conf.setSpeculativeReadTimeout(options.speculative_read_timeout_ms)
            if options.add_entry_timeout_s is not None:
                conf.setAddEntryTimeout(options.add_entry_timeout_s)
            if options.read_entry_timeout_s is not None:
                conf.setReadEntryTimeout(options.read_entry_timeout_s)
            if options.zk_timeout_ms is not None:
                conf.setZkTimeout(options.zk_timeout_ms)
            if options.bookie_address_resolver_enabled is not None:
                conf.setBookieAddressResolverEnabled(options.bookie_address_resolver_enabled)
            for key, value in options.properties.items():
                conf.setProperty(key, value)
            return java_class(gateway, "org.apache.bookkeeper.client.BookKeeper")(conf)

        try:
            bookkeeper = gateway.call(build, timeout=timeout, what="new BookKeeper(conf)")
        except BaseException:
            if owns_gateway:
                gateway.close()
            raise
        return cls(gateway, bookkeeper, owns_gateway=owns_gateway)

    @classmethod
    def launch(
        cls,
        options: ClientOptions,
        *,
        bookkeeper_home: Path | None = None,
        jars: Sequence[Path] = (),
        jvm_options: JvmOptions | None = None,
        timeout: float | None = None,
    ) -> BookKeeperJavaClient:
        """Start a JVM with the distribution's ``lib/*`` (or ``jars``) and connect; the client
        owns that JVM and kills it on :meth:`close`."""
        if bookkeeper_home is None and not jars:
            raise JavaClientError(
                "no classpath: pass bookkeeper_home (a BookKeeper binary distribution, e.g. "
                "$BOOKKEEPER_HOME) or the client jars"
            )
        classpath = [*(distribution_classpath(bookkeeper_home) if bookkeeper_home else []), *jars]
        base = jvm_options or JvmOptions()
        gateway = JvmGateway(replace(base, classpath=[*classpath, *base.classpath]))
        gateway.start()
        return cls.connect(gateway, options, timeout=timeout, owns_gateway=True)

    def __enter__(self) -> BookKeeperJavaClient:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def _call(self, function: Any, timeout: float | None, what: str) -> Any:
        if self._closed:
            raise JvmGone(f"{what}: the Java client is closed")
        return self.gateway.call(function, timeout=timeout, what=what)

    def _digest(self, digest: JavaDigestType) -> Any:
        if not isinstance(digest, JavaDigestType):
            raise JavaClientError(f"digest must be a JavaDigestType, not {digest!r}")
        digest_class = getattr(
            self.gateway.jvm.org.apache.bookkeeper.client, "BookKeeper$DigestType"
        )
        return digest_class.valueOf(digest.value)

    def create_ledger(
        self,
        ensemble: int,
        write_quorum: int,
        ack_quorum: int,
        digest: JavaDigestType,
        password: bytes,
        *,
        timeout: float | None = None,
    ) -> JavaLedger:
        """``createLedger(ensemble, writeQuorum, ackQuorum, digest, password)``."""
        if not ensemble >= write_quorum >= ack_quorum >= 1:
            raise JavaClientError(
                f"need ensemble >= write quorum >= ack quorum >= 1, got "
                f"{ensemble}/{write_quorum}/{ack_quorum}"
            )
        secret = bytearray(password)

        def create() -> tuple[Any, int]:
            handle = self._bookkeeper.createLedger(
                ensemble, write_quorum, ack_quorum, self._digest(digest), secret
            )
            return handle, int(handle.getId())

        handle, ledger_id = self._call(create, timeout, "createLedger")
        return JavaLedger(self, handle, ledger_id)

    def open_ledger(
        self,
        ledger_id: int,
        digest: JavaDigestType,
        password: bytes,
        *,
        recovery: bool,
        timeout: float | None = None,
    ) -> JavaLedger:
        """``openLedger`` (``recovery=True``: fences and recovers, then closes the ledger) or
        ``openLedgerNoRecovery``."""
        secret = bytearray(password)
        name = "openLedger" if recovery else "openLedgerNoRecovery"

        def open_() -> Any:
            method = getattr(self._bookkeeper, name)
            return method(ledger_id, self._digest(digest), secret)

        return JavaLedger(self, self._call(open_, timeout, f"{name} {ledger_id}"), ledger_id)

    def close(self, *, timeout: float = _CLIENT_CLOSE_TIMEOUT) -> None:
        """Close the Java client (bounded); kill the JVM if this client launched it."""
        if self._closed:
            return
        try:
            if self.gateway.is_alive():
                self.gateway.call(self._bookkeeper.close, timeout=timeout, what="BookKeeper.close")
        finally:
            self._closed = True
            if self._owns_gateway:
                self.gateway.close()


__all__ = [
    "BookKeeperJavaClient",
    "ClientOptions",
    "JavaDigestType",
    "JavaLedger",
    "JavaLedgerEntry",
]
