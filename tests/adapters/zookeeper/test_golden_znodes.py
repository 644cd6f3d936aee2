"""Every znode captured from real BookKeeper 4.17.4 and 4.11.1 parses and re-serializes exactly."""

from __future__ import annotations

import re
import uuid
from dataclasses import replace

import pytest

from adapters.zookeeper.cookie import parse_cookie, serialize_cookie
from adapters.zookeeper.layout import LedgerLayout, parse_layout, serialize_layout
from adapters.zookeeper.metadata import (
    DigestType,
    LedgerMetadata,
    LedgerState,
    Segment,
    parse_ledger_metadata,
    serialize_ledger_metadata,
)
from adapters.zookeeper.paths import ledger_id_from_path, ledger_path
from adapters.zookeeper.service_info import (
    BookieServiceInfo,
    parse_bookie_service_info,
    serialize_bookie_service_info,
)
from tests.adapters.zookeeper.golden import GoldenZnode, golden_ledger_znodes, load_golden_znodes

ZNODES = load_golden_znodes()
CAPTURE_FILES = sorted({znode.file for znode in ZNODES})
GOLDEN_ENSEMBLE = ("127.0.0.1:3182", "127.0.0.1:3183", "127.0.0.1:3181")


def _kind(znode: GoldenZnode) -> str:
    if znode.path == "/ledgers/LAYOUT":
        return "layout"
    if znode.path == "/ledgers/INSTANCEID":
        return "instanceid"
    if znode.path.startswith("/ledgers/available/"):
        return "available"
    if znode.path.startswith("/ledgers/cookies/"):
        return "cookie"
    if re.fullmatch(r"/ledgers/\d{2}/\d{4}/L\d{4}", znode.path):
        return "ledger"
    raise AssertionError(f"{znode.label}: a golden znode kind this test does not know")


def test_the_captures_cover_every_kind_of_znode() -> None:
    assert CAPTURE_FILES == ["zk_4.11.1.json", "zk_4.17.4.json"]
    for file in CAPTURE_FILES:
        kinds = [_kind(z) for z in ZNODES if z.file == file]
        assert sorted(set(kinds)) == ["available", "cookie", "instanceid", "layout", "ledger"]


@pytest.mark.parametrize("znode", ZNODES, ids=lambda z: z.label)
def test_golden_znode_round_trips_byte_for_byte(znode: GoldenZnode) -> None:
    kind = _kind(znode)
    if kind == "layout":
        assert serialize_layout(parse_layout(znode.data)) == znode.data
    elif kind == "instanceid":
        text = znode.data.decode("utf-8")
        assert str(uuid.UUID(text)) == text
    elif kind == "available":
        info = parse_bookie_service_info(znode.data)
        assert serialize_bookie_service_info(info) == znode.data
    elif kind == "cookie":
        assert serialize_cookie(parse_cookie(znode.data)) == znode.data
    else:
        metadata = parse_ledger_metadata(znode.data, path=znode.path)
        assert serialize_ledger_metadata(metadata) == znode.data


@pytest.mark.parametrize("file", CAPTURE_FILES)
def test_layout_is_what_init_new_cluster_writes(file: str) -> None:
    (layout,) = [z for z in ZNODES if z.file == file and _kind(z) == "layout"]
    assert layout.data == serialize_layout(LedgerLayout.for_layout("hierarchical"))
    assert parse_layout(layout.data).layout == "hierarchical"


@pytest.mark.parametrize("file", CAPTURE_FILES)
def test_registrations_equal_what_register_bookie_would_write(file: str) -> None:
    for znode in (z for z in ZNODES if z.file == file and _kind(z) == "available"):
        bookie_id = znode.path.rsplit("/", 1)[1]
        host, port = bookie_id.rsplit(":", 1)
        assert serialize_bookie_service_info(BookieServiceInfo.for_bookie(host, int(port))) == (
            znode.data
        )


@pytest.mark.parametrize("file", CAPTURE_FILES)
def test_cookies_carry_the_cluster_instance_id(file: str) -> None:
    (instance,) = [z for z in ZNODES if z.file == file and _kind(z) == "instanceid"]
    cookies = [z for z in ZNODES if z.file == file and _kind(z) == "cookie"]
    assert len(cookies) == 3
    for znode in cookies:
        cookie = parse_cookie(znode.data)
        assert cookie.instance_id == instance.data.decode()
        assert cookie.bookie_host == znode.path.rsplit("/", 1)[1]
        # 4.17 writes layout 5 with indexDirs (= ledger dirs); 4.11 writes layout 4 without.
        assert cookie.layout_version == (5 if "4.17" in file else 4)
        assert (cookie.index_dirs is not None) == (cookie.layout_version == 5)


@pytest.mark.parametrize("file", CAPTURE_FILES)
def test_ledger_path_functions_agree_with_the_golden_paths(file: str) -> None:
    for znode in golden_ledger_znodes(file):
        assert ledger_id_from_path(znode.path, "/ledgers", "hierarchical") == 150
        assert ledger_path(150, "/ledgers", "hierarchical") == znode.path


@pytest.mark.parametrize("file", CAPTURE_FILES)
def test_golden_ledger_history_decodes_to_the_documented_values(file: str) -> None:
    opened, after_adds, in_recovery, closed = (
        parse_ledger_metadata(z.data) for z in golden_ledger_znodes(file)
    )
    documented = LedgerMetadata(
        ensemble_size=3,
        write_quorum_size=3,
        ack_quorum_size=2,
        segments=(Segment(0, GOLDEN_ENSEMBLE),),
        digest_type=DigestType.CRC32,
        password=b"golden",
    )
    assert opened == after_adds
    assert opened.ctoken != 0
    assert opened == replace(documented, ctoken=opened.ctoken)
    assert in_recovery == replace(documented, state=LedgerState.IN_RECOVERY)
    assert closed == replace(documented, state=LedgerState.CLOSED, last_entry_id=4, length=35)


@pytest.mark.parametrize("file", CAPTURE_FILES)
def test_state_changes_reproduce_the_java_clients_rewrites(file: str) -> None:
    """OPEN -> IN_RECOVERY -> CLOSED gives the recovery client's bytes (cToken reset to 0)."""
    opened, _after_adds, in_recovery, closed = golden_ledger_znodes(file)
    recovering = parse_ledger_metadata(opened.data).to_in_recovery()
    assert serialize_ledger_metadata(recovering) == in_recovery.data
    assert serialize_ledger_metadata(recovering.to_closed(4, 35)) == closed.data
    assert [opened.stat_version, in_recovery.stat_version, closed.stat_version] == [0, 1, 2]
