"""Jute bytes built by hand with :mod:`struct`, from ``zookeeper.jute``'s definitions (not
with the adapter's own writer, so that the codec is checked against the format, not against
itself)."""

from __future__ import annotations

import struct


def i32(value: int) -> bytes:
    return struct.pack(">i", value)


def i64(value: int) -> bytes:
    return struct.pack(">q", value)


def boolean(value: bool) -> bytes:
    return b"\x01" if value else b"\x00"


def buffer(value: bytes | None) -> bytes:
    return i32(-1) if value is None else i32(len(value)) + value


def ustring(value: str | None) -> bytes:
    return buffer(None if value is None else value.encode("utf-8"))


def framed(payload: bytes) -> bytes:
    return i32(len(payload)) + payload


def request_header(xid: int, op_code: int) -> bytes:
    return i32(xid) + i32(op_code)


def reply_header(xid: int, zxid: int, err: int) -> bytes:
    return i32(xid) + i64(zxid) + i32(err)


def acl_open() -> bytes:
    """``vector<ACL>`` with one ``ACL {perms ALL; Id {world, anyone}}``."""
    return i32(1) + i32(31) + ustring("world") + ustring("anyone")


def stat(version: int, mzxid: int = 7) -> bytes:
    """``Stat``: czxid, mzxid, ctime, mtime, version, cversion, aversion, ephemeralOwner,
    dataLength, numChildren, pzxid."""
    return (
        i64(5) + i64(mzxid) + i64(1000) + i64(2000) + i32(version) + i32(0) + i32(0)
        + i64(0) + i32(3) + i32(0) + i64(5)
    )  # fmt: skip


def multi_header(op_code: int, done: bool, err: int = -1) -> bytes:
    return i32(op_code) + boolean(done) + i32(err)
