"""Metadata service URIs: parsing, formatting, and clear errors."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from adapters.zookeeper.errors import InvalidMetadataServiceUri
from adapters.zookeeper.paths import LAYOUTS
from adapters.zookeeper.uri import (
    MetadataServiceUri,
    format_metadata_service_uri,
    parse_metadata_service_uri,
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "zk+hierarchical://127.0.0.1:2181/ledgers",
            MetadataServiceUri("127.0.0.1:2181", "/ledgers", "hierarchical"),
        ),
        (
            "zk+longhierarchical://h1:2181;h2:2182;h3:2183/bk/ledgers",
            MetadataServiceUri("h1:2181,h2:2182,h3:2183", "/bk/ledgers", "longhierarchical"),
        ),
        ("zk+flat://zk/ledgers", MetadataServiceUri("zk", "/ledgers", "flat")),
        ("zk://h:1/ledgers", MetadataServiceUri("h:1", "/ledgers", "hierarchical")),
        ("ZK+NULL://h:1/ledgers", MetadataServiceUri("h:1", "/ledgers", "hierarchical")),
        ("zk://h1:1,h2:2/ledgers", MetadataServiceUri("h1:1,h2:2", "/ledgers", "hierarchical")),
        ("zk://[::1]:2181/ledgers", MetadataServiceUri("[::1]:2181", "/ledgers", "hierarchical")),
    ],
)
def test_parse(text: str, expected: MetadataServiceUri) -> None:
    assert parse_metadata_service_uri(text) == expected


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("", "not a URI"),
        ("127.0.0.1:2181/ledgers", "not a URI"),
        ("etcd://h:1/ledgers", "unknown metadata service scheme 'etcd'"),
        ("zk+ms://h:1/ledgers", "MetaStore"),
        ("zk+bogus://h:1/ledgers", "unknown ledger manager type 'bogus'"),
        ("zk+flat+x://h:1/ledgers", "more than one"),
        ("zk:///ledgers", "no ZooKeeper servers"),
        ("zk://h:1;;h:2/ledgers", "empty ZooKeeper server"),
        ("zk://h:99999/ledgers", "bad ZooKeeper server 'h:99999'"),
        ("zk://h:0/ledgers", "bad ZooKeeper server"),
        ("zk://h:x/ledgers", "bad ZooKeeper server"),
        ("zk://user@h:1/ledgers", "user info"),
        ("zk://h:1", "no ledgers root"),
        ("zk://h:1/", "ledgers root"),
        ("zk://h:1/ledgers/", "ledgers root"),
        ("zk://h:1/ledgers?x=1", "query"),
        ("zk://h:1/led\ngers", "ledgers root"),
    ],
)
def test_bad_uris_say_what_is_wrong(text: str, reason: str) -> None:
    with pytest.raises(InvalidMetadataServiceUri, match=reason.replace("+", r"\+")):
        parse_metadata_service_uri(text)


def test_format_writes_semicolons_and_an_explicit_layout() -> None:
    uri = MetadataServiceUri("h1:2181,h2:2182", "/ledgers", "hierarchical")
    assert format_metadata_service_uri(uri) == "zk+hierarchical://h1:2181;h2:2182/ledgers"
    assert str(uri) == "zk+hierarchical://h1:2181;h2:2182/ledgers"


def test_invalid_values_cannot_be_constructed() -> None:
    with pytest.raises(InvalidMetadataServiceUri):
        MetadataServiceUri("h:1", "/ledgers", "ms")
    with pytest.raises(InvalidMetadataServiceUri):
        MetadataServiceUri("h:1", "ledgers", "flat")
    with pytest.raises(InvalidMetadataServiceUri):
        MetadataServiceUri("", "/ledgers", "flat")


hosts = st.from_regex(r"[a-z0-9][a-z0-9.\-]{0,15}", fullmatch=True)
servers = st.builds(lambda h, p: f"{h}:{p}", hosts, st.integers(1, 65535))
roots = st.lists(st.from_regex(r"[A-Za-z0-9_\-]{1,8}", fullmatch=True), min_size=1, max_size=3)


@given(st.lists(servers, min_size=1, max_size=4), roots, st.sampled_from(LAYOUTS))
def test_format_then_parse_is_identity(servers: list[str], root: list[str], layout: str) -> None:
    uri = MetadataServiceUri(",".join(servers), "/" + "/".join(root), layout)
    assert parse_metadata_service_uri(format_metadata_service_uri(uri)) == uri


@given(st.text(max_size=60))
def test_arbitrary_text_parses_or_raises_the_typed_error(text: str) -> None:
    try:
        uri = parse_metadata_service_uri(text)
    except InvalidMetadataServiceUri:
        return
    assert parse_metadata_service_uri(format_metadata_service_uri(uri)) == uri
