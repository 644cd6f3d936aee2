"""ZooKeeper transaction logs read in Python: hand-built files for the format's edge cases,
and logs written by a real ZooKeeper for fidelity."""

from __future__ import annotations

import struct
import zlib
from pathlib import Path

import pytest
from kazoo.client import KazooClient

from adapters.cluster.zookeeper import ZooKeeperEnsemble
from adapters.zookeeper.txnlog import (
    LoggedChange,
    TxnLogError,
    latest_snapshot_zxid,
    log_files,
    parse_entry,
    read_log_file,
    read_server,
)


def ustring(text: str) -> bytes:
    raw = text.encode()
    return struct.pack(">i", len(raw)) + raw


def buffer(data: bytes | None) -> bytes:
    return struct.pack(">i", -1) if data is None else struct.pack(">i", len(data)) + data


def header(zxid: int, type_code: int, session: int = 5, cxid: int = 1) -> bytes:
    return struct.pack(">qiqqi", session, cxid, zxid, 1_700_000_000_000, type_code)


def create_record(path: str, data: bytes) -> bytes:
    acl = struct.pack(">i", 1) + struct.pack(">i", 31) + ustring("world") + ustring("anyone")
    return ustring(path) + buffer(data) + acl + b"\0" + struct.pack(">i", 3)


def set_record(path: str, data: bytes, version: int) -> bytes:
    return ustring(path) + buffer(data) + struct.pack(">i", version)


def frame(entry: bytes) -> bytes:
    return struct.pack(">qi", zlib.adler32(entry), len(entry)) + entry + b"B"


def log_bytes(*entries: bytes, padding: int = 64) -> bytes:
    return (
        b"ZKLG" + struct.pack(">iq", 2, 0) + b"".join(frame(e) for e in entries) + (b"\0" * padding)
    )


def multi_record(*subs: tuple[int, bytes]) -> bytes:
    return struct.pack(">i", len(subs)) + b"".join(
        struct.pack(">i", t) + buffer(body) for t, body in subs
    )


def test_entries_decode_to_changes(tmp_path: Path) -> None:
    path = tmp_path / "log.100000001"
    path.write_bytes(
        log_bytes(
            header(0x100000001, -10) + struct.pack(">i", 30000),
            header(0x100000002, 15) + create_record("/a", b"w0"),
            header(0x100000003, 5) + set_record("/a", b"w1", 1),
            header(0x100000004, 2) + ustring("/a"),
            header(0x100000005, -1) + struct.pack(">i", -101),
        )
    )
    txns = read_log_file(path)
    assert [t.type_name for t in txns] == [
        "createSession",
        "create2",
        "setData",
        "delete",
        "error",
    ]
    assert [t.zxid for t in txns] == [0x100000001 + i for i in range(5)]
    assert txns[1].changes == (LoggedChange("create", "/a", b"w0", 0),)
    assert txns[2].changes == (LoggedChange("set", "/a", b"w1", 1),)
    assert txns[3].changes == (LoggedChange("delete", "/a", None, -1),)
    assert txns[4].failed and not txns[4].changes
    assert txns[1].session == 5


def test_multi_and_failed_multi() -> None:
    ok = parse_entry(
        header(0x200000001, 14)
        + multi_record((13, ustring("/a") + struct.pack(">i", 1)), (5, set_record("/a", b"x", 2)))
    )
    assert ok.changes == (LoggedChange("check", "/a", None, 1), LoggedChange("set", "/a", b"x", 2))
    failed = parse_entry(
        header(0x200000002, 14)
        + multi_record((1, create_record("/b", b"y")), (-1, struct.pack(">i", -101)))
    )
    assert failed.failed and failed.changes == ()


def test_same_meaning_different_bytes_share_the_digest() -> None:
    # A failed multi's first sub-record logged as create on one server, error on another.
    create = create_record("/b", b"y")
    one = parse_entry(header(0x2, 14) + multi_record((1, create), (-1, struct.pack(">i", -101))))
    two = parse_entry(header(0x2, 14) + multi_record((-1, create), (-1, struct.pack(">i", -101))))
    assert one.digest == two.digest
    assert one.raw_digest != two.raw_digest


def test_torn_final_entry_ends_the_log(tmp_path: Path) -> None:
    good = header(0x1, 2) + ustring("/a")
    data = log_bytes(good, padding=0) + frame(header(0x2, 2) + ustring("/b"))[:-6]
    path = tmp_path / "log.1"
    path.write_bytes(data)
    assert [t.zxid for t in read_log_file(path)] == [1]


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda b: b"XXXX" + b[4:], "no ZKLG header"),
        (lambda b: b[:4] + struct.pack(">i", 3) + b[8:], "version 3"),
        (lambda b: b[:30] + bytes([b[30] ^ 0xFF]) + b[31:], "checksum mismatch"),
        (lambda b: b[:5], "no ZKLG header"),
    ],
)
def test_malformed_logs_raise_typed_errors(tmp_path: Path, mutate: object, message: str) -> None:
    path = tmp_path / "log.1"
    path.write_bytes(mutate(log_bytes(header(0x1, 2) + ustring("/a"))))  # type: ignore[operator]
    with pytest.raises(TxnLogError, match=message):
        read_log_file(path)


def test_missing_end_of_record_marker_is_an_error(tmp_path: Path) -> None:
    data = bytearray(log_bytes(header(0x1, 2) + ustring("/a")))
    entry_end = 16 + 12 + len(header(0x1, 2) + ustring("/a"))
    data[entry_end] = 0x41
    path = tmp_path / "log.1"
    path.write_bytes(bytes(data))
    with pytest.raises(TxnLogError, match="end-of-record"):
        read_log_file(path)


def test_truncated_record_inside_an_entry_is_an_error() -> None:
    with pytest.raises(TxnLogError, match="ends early"):
        parse_entry(header(0x1, 5) + ustring("/a"))


def test_server_restore_skips_what_the_snapshot_covers(tmp_path: Path) -> None:
    version2 = tmp_path / "version-2"
    version2.mkdir()
    (version2 / "log.1").write_bytes(
        log_bytes(*(header(z, 2) + ustring(f"/k{z}") for z in (1, 2, 3)))
    )
    (version2 / "log.4").write_bytes(log_bytes(header(4, 2) + ustring("/k4")))
    (version2 / "snapshot.2").write_bytes(b"not read")
    (version2 / "snapshot.3").write_bytes(b"")  # empty: an interrupted snapshot
    assert [p.name for p in log_files(tmp_path)] == ["log.1", "log.4"]
    assert latest_snapshot_zxid(tmp_path) == 2
    restored = read_server(tmp_path)
    assert restored.snapshot_zxid == 2
    assert [t.zxid for t in restored.txns] == [3, 4]


@pytest.mark.cluster
def test_logs_written_by_real_zookeeper(
    zookeeper_server: ZooKeeperEnsemble, zk: KazooClient
) -> None:
    path = "/txnlog-probe"
    zk.create(path, b"hello", makepath=True)
    stat = zk.set(path, b"again", version=0)
    transaction = zk.transaction()
    transaction.check(path, 1)
    transaction.set_data(path, b"multi")
    transaction.commit()
    zk.delete(path)
    data_dir = zookeeper_server.servers["zk1"].data_dir
    restored = read_server(data_dir)
    assert restored.txns, f"no transactions read from {log_files(data_dir)}"
    # The chroot prefixes every path; match on the suffix.
    mine = [t for t in restored.txns if any(c.path.endswith(path) for c in t.changes)]
    kinds = [[c.kind for c in t.changes] for t in mine]
    assert kinds[-4:] == [["create"], ["set"], ["check", "set"], ["delete"]]
    create, set_data, multi, _delete = mine[-4:]
    assert create.changes[0].data == b"hello"
    assert set_data.zxid == stat.mzxid and set_data.changes[0].version == 1
    assert multi.changes[1].data == b"multi" and multi.changes[1].version == 2
    zxids = [t.zxid for t in restored.txns]
    assert zxids == sorted(zxids)
