"""Cookies, bookie service info and LAYOUT: exact encodings and typed errors on bad input."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from adapters.zookeeper.bookie_id import check_bookie_id, is_valid_bookie_id
from adapters.zookeeper.cookie import (
    Cookie,
    decode_dirs,
    encode_dirs,
    java_text_escape,
    new_cookie,
    parse_cookie,
    serialize_cookie,
)
from adapters.zookeeper.errors import (
    InvalidBookieAddress,
    InvalidBookieId,
    MalformedCookie,
    MalformedLayout,
    MalformedRegistration,
)
from adapters.zookeeper.layout import (
    MANAGER_FACTORY_CLASSES,
    LedgerLayout,
    parse_layout,
    serialize_layout,
)
from adapters.zookeeper.paths import LAYOUTS
from adapters.zookeeper.service_info import (
    BookieServiceInfo,
    Endpoint,
    parse_bookie_service_info,
    parse_legacy_bookie_id,
    serialize_bookie_service_info,
)
from tests.adapters.zookeeper.strategies import bookie_ids, cookies

# --- cookies -------------------------------------------------------------------------------


def test_new_cookie_matches_a_real_417_cookie() -> None:
    cookie = new_cookie(
        bookie_host="127.0.0.1:3181",
        journal_dirs="/tmp/realbk/data/4.17/sorted/bk1/journal",
        ledger_dirs=["/tmp/realbk/data/4.17/sorted/bk1/ledgers"],
        instance_id="01e25702-ff88-4363-996c-fd7137773ea1",
    )
    assert serialize_cookie(cookie) == (
        b'5\nbookieHost: "127.0.0.1:3181"\n'
        b'journalDir: "/tmp/realbk/data/4.17/sorted/bk1/journal"\n'
        b'ledgerDirs: "1\\t/tmp/realbk/data/4.17/sorted/bk1/ledgers"\n'
        b'instanceId: "01e25702-ff88-4363-996c-fd7137773ea1"\n'
        b'indexDirs: "1\\t/tmp/realbk/data/4.17/sorted/bk1/ledgers"\n'
    )
    version_4 = new_cookie(
        bookie_host="h:1",
        journal_dirs=["/j1", "/j2"],
        ledger_dirs=["/a", "/b"],
        instance_id=None,
        layout_version=4,
    )
    assert serialize_cookie(version_4) == (
        b'4\nbookieHost: "h:1"\njournalDir: "/j1,/j2"\nledgerDirs: "2\\t/a\\t/b"\n'
    )


@given(cookies())
def test_cookie_round_trip(cookie: Cookie) -> None:
    assert parse_cookie(serialize_cookie(cookie)) == cookie
    assert cookie.mismatches(parse_cookie(serialize_cookie(cookie))) == []


def test_version_3_cookie() -> None:
    cookie = parse_cookie(b"3\nh:1\n/j\n1\t/l\n")
    assert cookie == Cookie("h:1", "/j", ("/l",), layout_version=3)
    assert serialize_cookie(cookie) == b"3\nh:1\n/j\n1\t/l\n"


def test_java_escaping() -> None:
    assert java_text_escape("a\tb\"c'\\\x07\x08\x0b\x0c\r\n\x7fé") == (
        "a\\tb\\\"c\\'\\\\\\a\\b\\v\\f\\r\\n\\177\\303\\251"
    )


def test_mismatches_name_the_fields() -> None:
    stored = new_cookie(bookie_host="h:1", journal_dirs="/j", ledger_dirs=["/l"], instance_id="i")
    other = new_cookie(bookie_host="h:2", journal_dirs="/j", ledger_dirs=["/m"], instance_id="i")
    assert [m.split(":")[0] for m in stored.mismatches(other)] == [
        "bookieHost",
        "ledgerDirs",
        "indexDirs",
    ]


def test_dir_lists() -> None:
    assert encode_dirs(["/a", "/b"]) == "2\t/a\t/b"
    assert decode_dirs("2\t/a\t/b") == ("/a", "/b")
    for bad in ["", "2\t/a", "x\t/a", "1"]:
        with pytest.raises(MalformedCookie):
            decode_dirs(bad)


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"x\n",
        b"5",
        b"\xff\n",
        b"2\nold",
        b"5\nbookieHost: 1",
        b'5\nbookieHost: "h"\n',
        b'5\nbookieHost: "h" journalDir: "j" ledgerDirs: "2\\t/a"\n',
        b"3\nonly-one-line",
    ],
)
def test_malformed_cookies(data: bytes) -> None:
    with pytest.raises(MalformedCookie):
        parse_cookie(data)


@given(st.binary(max_size=120))
def test_cookie_parser_fuzz(data: bytes) -> None:
    try:
        cookie = parse_cookie(data)
    except MalformedCookie:
        return
    assert isinstance(cookie, Cookie)


# --- bookie service info ---------------------------------------------------------------------


def test_service_info_with_everything_round_trips() -> None:
    info = BookieServiceInfo(
        (
            Endpoint("bookie", "10.0.0.1", 3181, "bookie-rpc", ("tls",), ("x",)),
            Endpoint("http", "10.0.0.1", 8080, "http"),
        ),
        (("autorecovery", "true"),),
    )
    assert parse_bookie_service_info(serialize_bookie_service_info(info)) == info
    assert info.rpc_endpoint() == info.endpoints[0]


@given(st.binary(max_size=120))
def test_service_info_parser_fuzz(data: bytes) -> None:
    try:
        info = parse_bookie_service_info(data)
    except MalformedRegistration:
        return
    assert parse_bookie_service_info(serialize_bookie_service_info(info)) == info


def test_service_info_missing_required_fields() -> None:
    with pytest.raises(MalformedRegistration, match="required"):
        parse_bookie_service_info(bytes.fromhex("3208 0a06") + b"bookie")


@pytest.mark.parametrize(("host", "port"), [("", 1), ("h", 0), ("h", 65536), ("h", True)])
def test_bad_bookie_addresses(host: str, port: int) -> None:
    with pytest.raises(InvalidBookieAddress):
        BookieServiceInfo.for_bookie(host, port)


def test_legacy_bookie_ids() -> None:
    assert parse_legacy_bookie_id("127.0.0.1:3181") == ("127.0.0.1", 3181)
    assert parse_legacy_bookie_id("bookie-1") is None
    assert parse_legacy_bookie_id("h:0") is None
    assert parse_legacy_bookie_id(":1") is None


@given(bookie_ids)
def test_generated_bookie_ids_are_valid(bookie_id: str) -> None:
    assert check_bookie_id(bookie_id) == bookie_id


@pytest.mark.parametrize("bad", ["", "readonly", "a b", "a/b", "a\n", "é"])
def test_invalid_bookie_ids(bad: str) -> None:
    assert not is_valid_bookie_id(bad)
    with pytest.raises(InvalidBookieId):
        check_bookie_id(bad)


# --- LAYOUT --------------------------------------------------------------------------------


@pytest.mark.parametrize("layout", LAYOUTS)
def test_layout_text(layout: str) -> None:
    data = serialize_layout(LedgerLayout.for_layout(layout))
    assert data == f"2\n{MANAGER_FACTORY_CLASSES[layout]}:1".encode()
    assert parse_layout(data).layout == layout


def test_version_1_layout_and_unknown_factories_parse() -> None:
    parsed = parse_layout(b"1\norg.example.Custom:7")
    assert (parsed.layout_format_version, parsed.manager_version, parsed.layout) == (1, 7, None)


@pytest.mark.parametrize(
    "data",
    [b"", b"2", b"3\na:1", b"0\na:1", b"x\na:1", b"2\nnoversion", b"2\na:b:1", b"2\na:x", b"\xff"],
)
def test_malformed_layouts(data: bytes) -> None:
    with pytest.raises(MalformedLayout):
        parse_layout(data)
