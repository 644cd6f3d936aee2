"""BookKeeper metadata service URIs: ``zk[+layout]://h1:2181;h2:2181/ledgers``.

Follows ``meta/zk/ZKMetadataDriverBase.java``: the scheme is ``zk`` optionally followed by
``+hierarchical``, ``+longhierarchical``, ``+flat`` or ``+null``; the authority is the ZooKeeper
connect string with ``;`` standing for ``,``; the path is the ledgers root.

``zk://`` and ``zk+null://`` leave the ledger manager open: BookKeeper then uses whatever the
cluster's ``LAYOUT`` znode records, and the default (hierarchical) for a new cluster. This parser
reports ``"hierarchical"`` for them; read the real layout with
:func:`adapters.zookeeper.layout.read_layout` when it matters.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from adapters.zookeeper.errors import InvalidMetadataServiceUri
from adapters.zookeeper.paths import LAYOUTS, check_ledgers_root

DEFAULT_LAYOUT = "hierarchical"

_URI = re.compile(
    r"(?P<scheme>[A-Za-z][A-Za-z0-9+.\-]*)://(?P<authority>[^/?#]*)(?P<rest>.*)", re.DOTALL
)
_HOST_PORT = re.compile(r"(?P<host>[A-Za-z0-9.\-_]+|\[[0-9A-Fa-f:.]+\])(?::(?P<port>[0-9]+))?")
_UNSUPPORTED_MANAGERS = {"ms": "the MetaStore (ms) ledger manager is not stored in ZooKeeper"}


@dataclass(frozen=True)
class MetadataServiceUri:
    """A parsed metadata service URI.

    ``connect_string`` is in ZooKeeper/kazoo form (comma separated), ready for
    :func:`adapters.zookeeper.client.connect_zookeeper`.
    """

    connect_string: str
    ledgers_root: str
    layout: str

    def __post_init__(self) -> None:
        if self.layout not in LAYOUTS:
            raise InvalidMetadataServiceUri(
                f"layout must be one of {', '.join(LAYOUTS)}, not {self.layout!r}"
            )
        for server in self.connect_string.split(","):
            if not _port_ok(server):
                raise InvalidMetadataServiceUri(
                    f"bad ZooKeeper server {server!r} in connect string {self.connect_string!r}"
                )
        try:
            check_ledgers_root(self.ledgers_root)
        except ValueError as exc:
            raise InvalidMetadataServiceUri(str(exc)) from exc

    def __str__(self) -> str:
        return format_metadata_service_uri(self)


def parse_metadata_service_uri(uri: str) -> MetadataServiceUri:
    """Parse ``zk[+hierarchical|+longhierarchical|+flat|+null]://h1:p1;h2:p2/ledgers``.

    :raises InvalidMetadataServiceUri: with the offending part of ``uri`` in the message.
    """
    if not isinstance(uri, str):
        raise InvalidMetadataServiceUri(f"a metadata service URI is a str, not {type(uri)}")
    match = _URI.fullmatch(uri)
    if match is None:
        raise InvalidMetadataServiceUri(f"not a URI of the form scheme://servers/root: {uri!r}")
    scheme_parts = match["scheme"].lower().split("+")
    if scheme_parts[0] != "zk":
        raise InvalidMetadataServiceUri(
            f"unknown metadata service scheme {scheme_parts[0]!r} in {uri!r} (expected 'zk')"
        )
    if len(scheme_parts) > 2:
        raise InvalidMetadataServiceUri(f"scheme has more than one '+' part: {uri!r}")
    manager = scheme_parts[1] if len(scheme_parts) == 2 else "null"
    if manager in _UNSUPPORTED_MANAGERS:
        raise InvalidMetadataServiceUri(f"{_UNSUPPORTED_MANAGERS[manager]}: {uri!r}")
    if manager != "null" and manager not in LAYOUTS:
        raise InvalidMetadataServiceUri(f"unknown ledger manager type {manager!r} in {uri!r}")
    layout = DEFAULT_LAYOUT if manager == "null" else manager

    authority = match["authority"]
    if not authority:
        raise InvalidMetadataServiceUri(f"no ZooKeeper servers in {uri!r}")
    if "@" in authority:
        raise InvalidMetadataServiceUri(f"user info is not allowed in {uri!r}")
    servers = re.split(r"[;,]", authority)
    if any(not server for server in servers):
        raise InvalidMetadataServiceUri(f"empty ZooKeeper server entry in {uri!r}")

    path = match["rest"]
    if "?" in path or "#" in path:
        raise InvalidMetadataServiceUri(f"query or fragment not allowed in {uri!r}")
    if not path:
        raise InvalidMetadataServiceUri(f"no ledgers root path in {uri!r}")

    return MetadataServiceUri(connect_string=",".join(servers), ledgers_root=path, layout=layout)


def format_metadata_service_uri(uri: MetadataServiceUri) -> str:
    """The inverse of :func:`parse_metadata_service_uri`: ``zk+<layout>://h1:p1;h2:p2/root``.

    The layout is always written explicitly, so the text means the same thing to BookKeeper
    whatever the cluster's ``LAYOUT`` znode says.
    """
    return f"zk+{uri.layout}://{uri.connect_string.replace(',', ';')}{uri.ledgers_root}"


def _port_ok(server: str) -> bool:
    match = _HOST_PORT.fullmatch(server)
    if match is None:
        return False
    port = match["port"]
    return port is None or 0 < int(port) < 65536
