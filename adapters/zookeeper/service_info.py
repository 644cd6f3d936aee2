"""``BookieServiceInfoFormat``: what a bookie publishes in its ``available/`` znode (BP-38, 4.11+).

A bookie registers one endpoint, ``id="bookie"``, ``protocol="bookie-rpc"``, with its host and
port, and no properties; the znode holds the binary (not length-delimited) message. Clients find
a bookie's address through the ``bookie-rpc`` endpoint and fall back to reading the bookie id as
``host:port`` when the znode is empty (bookies before 4.11) or has no such endpoint
(``client/DefaultBookieAddressResolver.java``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final

from google.protobuf.message import DecodeError

from adapters.zookeeper._protobuf import missing_required_fields
from adapters.zookeeper.errors import InvalidBookieAddress, MalformedRegistration
from adapters.zookeeper.proto.bookkeeper_data_formats_pb2 import BookieServiceInfoFormat

BOOKIE_ENDPOINT_ID: Final = "bookie"
BOOKIE_RPC_PROTOCOL: Final = "bookie-rpc"


@dataclass(frozen=True)
class Endpoint:
    """One service a bookie exposes."""

    id: str
    host: str
    port: int
    protocol: str
    auth: tuple[str, ...] = ()
    extensions: tuple[str, ...] = ()


@dataclass(frozen=True)
class BookieServiceInfo:
    """A parsed ``BookieServiceInfoFormat``; ``properties`` keeps the order read."""

    endpoints: tuple[Endpoint, ...]
    properties: tuple[tuple[str, str], ...] = field(default=())

    @classmethod
    def for_bookie(cls, host: str, port: int) -> BookieServiceInfo:
        """What a BookKeeper bookie listening on ``host:port`` publishes."""
        check_host_port(host, port)
        return cls((Endpoint(BOOKIE_ENDPOINT_ID, host, port, BOOKIE_RPC_PROTOCOL),))

    def rpc_endpoint(self) -> Endpoint | None:
        """The first ``bookie-rpc`` endpoint, the one clients connect to."""
        for endpoint in self.endpoints:
            if endpoint.protocol == BOOKIE_RPC_PROTOCOL:
                return endpoint
        return None


def serialize_bookie_service_info(info: BookieServiceInfo) -> bytes:
    """The ``available/`` znode bytes (byte-identical to a real bookie's for the same info)."""
    fmt = BookieServiceInfoFormat()
    for endpoint in info.endpoints:
        fmt.endpoints.add(
            id=endpoint.id,
            port=endpoint.port,
            host=endpoint.host,
            protocol=endpoint.protocol,
            auth=endpoint.auth,
            extensions=endpoint.extensions,
        )
    for key, value in info.properties:
        fmt.properties[key] = value
    return fmt.SerializeToString()


def parse_bookie_service_info(data: bytes, *, path: str | None = None) -> BookieServiceInfo:
    """Decode ``available/`` znode data.

    :raises MalformedRegistration: not a complete ``BookieServiceInfoFormat``.
    """
    fmt = BookieServiceInfoFormat()
    try:
        fmt.ParseFromString(bytes(data))
    except (DecodeError, ValueError, RecursionError) as exc:
        raise MalformedRegistration(f"bad BookieServiceInfoFormat: {exc}", path=path) from exc
    missing = missing_required_fields(fmt)
    if missing:
        raise MalformedRegistration(
            f"BookieServiceInfoFormat lacks required fields {', '.join(missing)}", path=path
        )
    endpoints = []
    for endpoint in fmt.endpoints:
        texts = [
            endpoint.id,
            endpoint.host,
            endpoint.protocol,
            *endpoint.auth,
            *endpoint.extensions,
        ]
        if not all(isinstance(text, str) for text in texts):
            raise MalformedRegistration("an endpoint string is not valid UTF-8", path=path)
        endpoints.append(
            Endpoint(
                id=endpoint.id,
                host=endpoint.host,
                port=endpoint.port,
                protocol=endpoint.protocol,
                auth=tuple(endpoint.auth),
                extensions=tuple(endpoint.extensions),
            )
        )
    properties = tuple(fmt.properties.items())
    if not all(isinstance(text, str) for pair in properties for text in pair):
        raise MalformedRegistration("a property is not valid UTF-8", path=path)
    return BookieServiceInfo(tuple(endpoints), properties)


def parse_legacy_bookie_id(bookie_id: str) -> tuple[str, int] | None:
    """``"host:port"`` -> ``(host, port)``; None if the id is not of that form."""
    host, separator, port = bookie_id.rpartition(":")
    if not separator or not host or not port.isascii() or not port.isdigit():
        return None
    if not 0 < int(port) < 65536:
        return None
    return host, int(port)


def check_host_port(host: str, port: int) -> None:
    """Raise :class:`InvalidBookieAddress` unless ``host`` is non-empty and ``port`` in 1..65535."""
    if not isinstance(host, str) or not host:
        raise InvalidBookieAddress(f"bookie host must be a non-empty string, not {host!r}")
    if isinstance(port, bool) or not isinstance(port, int) or not 0 < port < 65536:
        raise InvalidBookieAddress(f"bookie port must be in 1..65535, not {port!r}")
